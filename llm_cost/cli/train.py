"""``llm-cost train``: training FLOPs, time, energy, cost and memory."""

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
)
from llm_cost.cli.program import app, emit
from llm_cost.core.choices import Recompute
from llm_cost.core.types import Dtype


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
        help="GPUs training together, for the wall-clock time and ZeRO (default: none given; or --tp x --pp x --dp).",
    ),
]
TrainMfu = Annotated[
    Optional[float],
    option(
        "--mfu",
        parse=efficiency("--mfu"),
        metavar="FRACTION",
        help="MFU to get the time (0-1 or 40%); or give --gpu-hours.",
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
RecomputeOpt = Annotated[Recompute, typer.Option("--recompute", case_sensitive=False, help="Activation recompute.")]
TrainDtype = Annotated[
    Dtype,
    typer.Option("--dtype", case_sensitive=False, help="Compute dtype for the peak: bf16, fp16, fp8, tf32 or fp32."),
]
PowerW = Annotated[
    Optional[float],
    option(
        "--power-w", parse=positive("--power-w"), metavar="NUMBER", help="Power per GPU, W (default: the GPU's TDP)."
    ),
]
Pue = Annotated[
    float,
    option("--pue", parse=positive("--pue"), metavar="NUMBER", help="Data-centre power usage effectiveness (>= 1)."),
]
Grid = Annotated[
    Optional[float],
    option(
        "--grid-kg-per-kwh",
        parse=non_negative("--grid-kg-per-kwh"),
        metavar="NUMBER",
        help="Grid carbon intensity, kg CO2e/kWh.",
    ),
]
TrainPrice = Annotated[
    Optional[float],
    option(
        "--usd-per-gpu-hour",
        parse=non_negative("--usd-per-gpu-hour"),
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
    int,
    option(
        "--micro-batch",
        parse=integer("--micro-batch"),
        metavar="INTEGER",
        help="Sequences per micro-batch for activation memory.",
    ),
]
ZeroOpt = Annotated[Zero, typer.Option("--zero", help="ZeRO stage over the data-parallel GPUs (3 ~ FSDP).")]
SequenceParallel = Annotated[bool, typer.Option("--sequence-parallel", help="Megatron sequence parallelism.")]


@app.command()
def train(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    tokens_: Tokens,
    gpu: Gpu = "h100",
    gpus: TrainGpus = None,
    mfu: TrainMfu = None,
    gpu_hours: GpuHours = None,
    recompute: RecomputeOpt = Recompute.NONE,
    dtype: TrainDtype = Dtype.BF16,
    power_w: PowerW = None,
    pue: Pue = 1.0,
    grid_kg_per_kwh: Grid = None,
    usd_per_gpu_hour: TrainPrice = None,
    seq: TrainSeq = 8192,
    micro_batch: MicroBatch = 1,
    tp: Tp = None,
    pp: Pp = None,
    dp: Dp = None,
    zero: ZeroOpt = Zero.zero1,
    sequence_parallel: SequenceParallel = False,
    as_json: Json = False,
) -> None:
    """Training: 6ND FLOPs, time at an MFU (or the MFU a GPU-hour budget implies), energy, CO2, cost, memory.

    Examples: llm-cost train llama3-8b --tokens 15T --gpu-hours 1.3M;
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
        recompute=recompute,
        dtype=dtype,
        power_w=power_w,
        pue=pue,
        grid_kg_per_kwh=grid_kg_per_kwh,
        usd_per_gpu_hour=usd_per_gpu_hour,
        seq=seq,
        micro_batch=micro_batch,
        tp=tp,
        pp=pp,
        dp=dp,
        zero=int(zero.value),
        sequence_parallel=sequence_parallel,
    )
    emit(result, as_json, view.render, api.load_model(model).display_name, api.load_gpu(gpu).display_name)
