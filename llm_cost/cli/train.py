"""``llm-cost train``: training FLOPs, time, energy, cost and memory; with neither --mfu nor
--gpu-hours, the training planner (predicted MFU and the best layout)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Optional

import typer

from llm_cost.cli.options import (
    MODEL_HELP,
    Dp,
    Gpu,
    Json,
    Pp,
    Tp,
    efficiency,
    integer,
    large_count,
    non_negative,
    option,
    positive,
    tokens,
    within,
)
from llm_cost.cli.program import app, emit
from llm_cost.cli.step_options import NetworkGbS, TrainProfileOpt
from llm_cost.core.choices import Fp8Recipe, Framework, MoeDispatcher, Recompute
from llm_cost.core.limits import MAX_GRID_KG_PER_KWH, MOE_CAPACITY_FACTOR_RANGE, POWER_W_RANGE, PUE_RANGE
from llm_cost.core.types import TrainingDtype


class Zero(str, Enum):
    """ZeRO stages."""

    zero0 = "0"
    zero1 = "1"
    zero2 = "2"
    zero3 = "3"


Tokens = Annotated[
    int,
    option(
        "--tokens",
        parse=large_count("--tokens"),
        metavar="COUNT",
        help="Training tokens D; decimal suffixes: 15T = 15 x 10^12.",
    ),
]
TrainGpus = Annotated[
    Optional[int],
    option(
        "--gpus",
        parse=large_count("--gpus"),
        metavar="COUNT",
        help="GPUs training together; without --mfu and --gpu-hours: plan the best layout for them.",
    ),
]
TrainMfu = Annotated[
    Optional[float],
    option(
        "--mfu",
        parse=efficiency("--mfu"),
        metavar="FRACTION",
        help="MFU to get the time (0-1 or 40%); or give --gpu-hours; neither: the MFU is predicted.",
    ),
]
GpuHours = Annotated[
    Optional[float],
    option(
        "--gpu-hours",
        parse=positive("--gpu-hours"),
        metavar="NUMBER",
        help="A GPU-hour budget (1.3M) to get the implied MFU.",
    ),
]
RecomputeOpt = Annotated[
    Optional[Recompute],
    typer.Option("--recompute", case_sensitive=False, help="Activation recompute (default none; planned: searched)."),
]
TrainDtype = Annotated[
    Optional[TrainingDtype],
    typer.Option(
        "--dtype",
        case_sensitive=False,
        help="Compute dtype for the peak: bf16 (default), fp16, fp8, tf32 or fp32.",
    ),
]
FrameworkOpt = Annotated[
    Optional[Framework],
    typer.Option(
        "--framework",
        case_sensitive=False,
        help="Training framework: megatron (Megatron-Core, the default) or fsdp2 (PyTorch FSDP2/HSDP, as torchtitan).",
    ),
]
Fp8RecipeOpt = Annotated[
    Optional[Fp8Recipe],
    typer.Option(
        "--fp8-recipe",
        case_sensitive=False,
        help="FP8 scaling with --dtype fp8: delayed (default before Blackwell), current, block, mxfp8 (Blackwell).",
    ),
]
FsdpShard = Annotated[
    Optional[int],
    option(
        "--fsdp-shard",
        parse=integer("--fsdp-shard"),
        metavar="INTEGER",
        help="FSDP2: data-parallel ranks per FSDP group (HSDP replicates across the rest; default all of DP).",
    ),
]
DispatcherOpt = Annotated[
    Optional[MoeDispatcher],
    typer.Option(
        "--moe-dispatcher",
        case_sensitive=False,
        help="MoE tokens to experts: alltoall (each copy to its expert's GPU, the default) or deepep (once per node).",
    ),
]
PowerW = Annotated[
    Optional[float],
    option(
        "--power-w",
        parse=within("--power-w", POWER_W_RANGE),
        metavar="NUMBER",
        help="Power per GPU, W, from 1 to 10,000 (default: the GPU's TDP).",
    ),
]
Pue = Annotated[
    float,
    option(
        "--pue",
        parse=within("--pue", PUE_RANGE),
        metavar="NUMBER",
        help="Data-centre power usage effectiveness (>= 1).",
    ),
]
Grid = Annotated[
    Optional[float],
    option(
        "--grid-kg-per-kwh",
        parse=non_negative("--grid-kg-per-kwh", maximum=MAX_GRID_KG_PER_KWH),
        metavar="NUMBER",
        help="Grid carbon intensity, kg CO2e/kWh, from 0 to 2.",
    ),
]
TrainPrice = Annotated[
    Optional[float],
    option(
        "--usd-per-gpu-hour",
        parse=non_negative("--usd-per-gpu-hour", maximum=1e6),
        metavar="NUMBER",
        help="Price of one GPU-hour, USD.",
    ),
]
TrainSeq = Annotated[
    int,
    option(
        "--seq",
        parse=tokens("--seq"),
        metavar="TOKENS",
        help="Sequence length (8K = 8,192) for activation memory and the FLOPs with attention.",
    ),
]
MicroBatch = Annotated[
    Optional[int],
    option(
        "--micro-batch",
        parse=integer("--micro-batch"),
        metavar="INTEGER",
        help="Sequences per micro-batch (default 1; planned: searched).",
    ),
]
ZeroOpt = Annotated[
    Optional[Zero],
    typer.Option(
        "--zero",
        help="ZeRO stage over the data-parallel GPUs: megatron 0 (DDP) or 1 (distributed optimizer, the default); "
        "fsdp2 2 or 3 (FSDP; 2 or 3 alone selects fsdp2).",
    ),
]
GlobalBatch = Annotated[
    Optional[int],
    option(
        "--global-batch",
        parse=tokens("--global-batch"),
        metavar="TOKENS",
        help="Tokens per training step, whole sequences (16M = 16,777,216; default 4M).",
    ),
]
Cp = Annotated[
    Optional[int],
    option("--cp", parse=integer("--cp"), metavar="INTEGER", help="Context-parallel GPUs (ring attention)."),
]
Vp = Annotated[
    Optional[int],
    option(
        "--vp", parse=integer("--vp"), metavar="INTEGER", help="Virtual stages per pipeline stage (interleaved 1F1B)."
    ),
]
TrainEp = Annotated[
    Optional[int],
    option("--ep", parse=integer("--ep"), metavar="INTEGER", help="Expert-parallel GPUs among DP x CP (MoE)."),
]
CapacityFactor = Annotated[
    Optional[float],
    option(
        "--moe-capacity-factor",
        parse=within("--moe-capacity-factor", MOE_CAPACITY_FACTOR_RANGE),
        metavar="NUMBER",
        help="MoE: pad each expert to this x its fair share of tokens, dropping the rest (default: dropless).",
    ),
]
EpOverlap = Annotated[
    bool,
    typer.Option(
        "--ep-comm-overlap",
        help="MoE all-to-all hidden behind another micro-batch's compute (Megatron's --overlap-moe-expert-parallel-comm).",
    ),
]
TpOverlap = Annotated[
    Optional[bool],
    typer.Option(
        "--tp-comm-overlap/--no-tp-comm-overlap",
        help="TP collectives overlap the GEMMs (Megatron's --tp-comm-overlap; default: on under megatron, off under fsdp2).",
    ),
]
Top = Annotated[
    Optional[int],
    option("--top", parse=integer("--top", 1, 100), metavar="INTEGER", help="Layouts listed (default 5)."),
]
SequenceParallel = Annotated[bool, typer.Option("--sequence-parallel", help="Megatron sequence parallelism.")]


@app.command()
def train(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    tokens_: Tokens,
    gpu: Gpu = "h100",
    gpus: TrainGpus = None,
    mfu: TrainMfu = None,
    gpu_hours: GpuHours = None,
    global_batch: GlobalBatch = None,
    seq: TrainSeq = 8192,
    tp: Tp = None,
    cp: Cp = None,
    pp: Pp = None,
    vp: Vp = None,
    dp: Dp = None,
    ep: TrainEp = None,
    zero: ZeroOpt = None,
    recompute: RecomputeOpt = None,
    micro_batch: MicroBatch = None,
    sequence_parallel: SequenceParallel = False,
    dtype: TrainDtype = None,
    framework: FrameworkOpt = None,
    fp8_recipe: Fp8RecipeOpt = None,
    fsdp_shard: FsdpShard = None,
    moe_dispatcher: DispatcherOpt = None,
    moe_capacity_factor: CapacityFactor = None,
    ep_comm_overlap: EpOverlap = False,
    profile: TrainProfileOpt = None,
    network_gb_s: NetworkGbS = None,
    tp_comm_overlap: TpOverlap = None,
    power_w: PowerW = None,
    pue: Pue = 1.0,
    grid_kg_per_kwh: Grid = None,
    usd_per_gpu_hour: TrainPrice = None,
    top: Top = None,
    as_json: Json = False,
) -> None:
    """Training: FLOPs, time, energy, CO2, cost and memory; the MFU given (--mfu), implied by a budget
    (--gpu-hours), or predicted with the best parallel layout for --gpus (neither given).

    Planned: searches TP, CP, PP (and virtual stages), DP, EP, ZeRO, recompute and micro-batch for the
    highest predicted MFU that fits in memory, among the layouts --framework runs; every knob given is
    fixed (all of --tp --cp --pp --dp: that one layout). Examples: llm-cost train llama3.1-405b --tokens 15T --gpu h100 --gpus 16384
    --global-batch 16M --seq 8K; llm-cost train llama3-8b --tokens 15T --gpu-hours 1.3M;
    llm-cost train llama3-70b --tokens 15T --gpus 2048 --mfu 0.4 --grid-kg-per-kwh 0.4
    """
    from llm_cost import api
    from llm_cost.report import training as view

    result = api.train(
        model,
        tokens_,
        gpu,
        gpus=gpus,
        mfu=mfu,
        gpu_hours=gpu_hours,
        global_batch=global_batch,
        seq=seq,
        tp=tp,
        cp=cp,
        pp=pp,
        vp=vp,
        dp=dp,
        ep=ep,
        zero=None if zero is None else int(zero.value),
        recompute=recompute,
        micro_batch=micro_batch,
        sequence_parallel=sequence_parallel,
        dtype=dtype,
        framework=framework,
        fp8_recipe=fp8_recipe,
        fsdp_shard=fsdp_shard,
        moe_dispatcher=moe_dispatcher,
        moe_capacity_factor=moe_capacity_factor,
        ep_comm_overlap=ep_comm_overlap or None,
        profile=profile,
        network_gb_s=network_gb_s,
        tp_comm_overlap=tp_comm_overlap,
        power_w=power_w,
        pue=pue,
        grid_kg_per_kwh=grid_kg_per_kwh,
        usd_per_gpu_hour=usd_per_gpu_hour,
        top=top,
    )
    emit(result, as_json, view.render, api.load_model(model).display_name, api.load_gpu(gpu).display_name)
