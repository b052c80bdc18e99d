"""Commands about mixture-of-experts and speculative decoding: moe, spec."""

from __future__ import annotations

from typing import Annotated, Any, Optional

import typer

from llm_cost.cli.options import (
    GPU_HELP,
    MODEL_HELP,
    AllRows,
    Csv,
    Dp,
    Ep,
    Json,
    OptionalGpu,
    Plot,
    PlotForce,
    Pp,
    RedundantExperts,
    Tp,
    acceptance,
    integer,
    integer_grid,
    non_negative,
    option,
    plot_file,
    tokens,
)
from llm_cost.cli.program import app, emit, emit_csv, layout_of
from llm_cost.cli.step_options import (
    ComputeDtype,
    Mbu,
    Mfu,
    NetworkGbS,
    PredictionEngine,
    ProfileOpt,
    WeightBytesOpt,
    WeightsDtype,
)
from llm_cost.core.choices import WeightBytes
from llm_cost.core.errors import InputError
from llm_cost.core.limits import DRAFT_COST_RANGE
from llm_cost.core.types import StorageDtype

MoeBatches = Annotated[
    Any,
    option(
        "--batch",
        "-b",
        parse=integer_grid("--batch"),
        metavar="LIST",
        help="Decode batches (tokens per step): a list 1,32,128 or a range 1..256.",
    ),
]
EpDegree = Annotated[
    int,
    option(
        "--ep",
        parse=integer("--ep"),
        metavar="INTEGER",
        help="Expert-parallel GPUs (must divide experts + redundant experts).",
    ),
]
Redundant = Annotated[
    int,
    option(
        "--redundant-experts",
        parse=integer("--redundant-experts", 0),
        metavar="INTEGER",
        help="Extra expert copies spread over the EP GPUs.",
    ),
]
Dispatch = Annotated[
    Optional[StorageDtype],
    typer.Option(
        "--dispatch-dtype",
        case_sensitive=False,
        help="All-to-all dispatch dtype (default: fp8 for FP8 or FP4 activations, else bf16).",
    ),
]
Combine = Annotated[
    StorageDtype, typer.Option("--combine-dtype", case_sensitive=False, help="All-to-all combine dtype.")
]
TpDegree = Annotated[
    Optional[int],
    option(
        "--tp",
        parse=integer("--tp"),
        metavar="INTEGER",
        help="Tensor-parallel degree of the all-reduce comparison (default: the largest of 8, 4, 2, 1 dividing the heads).",
    ),
]
Prompt = Annotated[
    int,
    option(
        "--prompt",
        parse=tokens("--prompt"),
        metavar="TOKENS",
        help="Prompt tokens for the all-to-all volume of one prefill.",
    ),
]
MoeGpu = Annotated[Optional[str], typer.Option("--gpu", "-g", help=GPU_HELP + " Adds the expert GEMM ridge analysis.")]


@app.command()
def moe(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    batch: MoeBatches = "1,32,128",
    weights_dtype: WeightsDtype = None,
    ep: EpDegree = 1,
    redundant_experts: Redundant = 0,
    dispatch_dtype: Dispatch = None,
    combine_dtype: Combine = StorageDtype.BF16,
    tp: TpDegree = None,
    prompt: Prompt = 4096,
    gpu: MoeGpu = None,
    dtype: ComputeDtype = None,
    as_json: Json = False,
    as_csv: Csv = False,
    all_rows: AllRows = False,
    plot: Plot = None,
    force: PlotForce = False,
) -> None:
    """MoE: total / active / read-per-step parameters, expected experts per batch, EP memory, all-to-all.

    Example: llm-cost moe deepseek-v3 --batch 1,32,128 --weights-dtype fp8 --ep 32 --gpu h100
    """
    from llm_cost import api
    from llm_cost.report import moe as view

    out = plot_file(plot, force)
    result = api.moe(
        model,
        batch,
        weights_dtype=weights_dtype,
        ep=ep,
        redundant_experts=redundant_experts,
        dispatch_dtype=dispatch_dtype,
        combine_dtype=combine_dtype,
        tp=tp,
        prompt_tokens=prompt,
        gpu=gpu,
        dtype=dtype,
    )
    title = api.load_model(model).display_name
    if out is not None:
        from llm_cost.report import plots

        plots.moe(result, title, out)
    if as_csv:
        emit_csv(result.rows)
        return
    emit(result, as_json, view.render, title, all_rows)


Alpha = Annotated[
    float,
    option(
        "--alpha",
        parse=acceptance("--alpha"),
        metavar="FRACTION",
        help="Acceptance rate per drafted token, from 0 to below 1 (0.8 or 80%).",
    ),
]
Gamma = Annotated[
    int, option("--gamma", parse=integer("--gamma"), metavar="INTEGER", help="Tokens drafted per round (>= 1).")
]
DraftCost = Annotated[
    Optional[float],
    option(
        "--c",
        parse=non_negative("--c", percent=True, maximum=DRAFT_COST_RANGE[1]),
        metavar="NUMBER",
        help="Cost of one draft step as a fraction of a target step (0 to 100).",
    ),
]
Mtp = Annotated[bool, typer.Option("--mtp", help="Use the model's MTP module as the draft (c from its weights).")]
SpecBatches = Annotated[
    Any,
    option(
        "--batch",
        "-b",
        parse=integer_grid("--batch"),
        metavar="LIST",
        help="Step model: batches (default 1,8,32,64,128,256); needs MODEL and --gpu.",
    ),
]
SpecContext = Annotated[
    int,
    option(
        "--context",
        parse=tokens("--context", 0),
        metavar="TOKENS",
        help="Cached tokens per sequence in the step model (8K = 8,192).",
    ),
]


@app.command("spec")
def spec_(
    alpha: Alpha,
    gamma: Gamma,
    model: Annotated[Optional[str], typer.Argument(help=MODEL_HELP + " With --gpu: the step model.")] = None,
    c: DraftCost = None,
    mtp: Mtp = False,
    gpu: OptionalGpu = None,
    batch: SpecBatches = None,
    context: SpecContext = 0,
    mfu: Mfu = None,
    mbu: Mbu = None,
    dtype: ComputeDtype = None,
    weight_bytes: WeightBytesOpt = WeightBytes.READ,
    tp: Tp = None,
    pp: Pp = None,
    ep: Ep = None,
    dp: Dp = None,
    redundant_experts: RedundantExperts = None,
    network_gb_s: NetworkGbS = None,
    profile: ProfileOpt = None,
    engine: PredictionEngine = None,
    as_json: Json = False,
    as_csv: Csv = False,
    all_rows: AllRows = False,
    plot: Plot = None,
    force: PlotForce = False,
) -> None:
    """Speculative decoding: expected tokens per round, speedup, the knee and break-even batches, the step model
    (its steps timed as roofline predicts them, on one GPU or a layout: --tp/--pp/--ep/--dp).

    Examples: llm-cost spec --alpha 0.8 --gamma 4 --c 0.1;
    llm-cost spec llama3-8b --gpu h100 --alpha 0.8 --gamma 4 --c 0.1 --batch 64,128 --context 2K;
    llm-cost spec llama3-70b --gpu h100 --tp 4 --alpha 0.8 --gamma 4 --c 0.05;
    llm-cost spec deepseek-v3 --mtp --alpha 0.85 --gamma 1
    """
    from llm_cost import api
    from llm_cost.report import speculative as view

    if as_csv and gpu is None:
        raise InputError("--csv: the rows are the step model's, one per batch; give a MODEL and --gpu too")
    out = plot_file(plot, force)
    result = api.spec(
        model,
        gpu,
        alpha=alpha,
        gamma=gamma,
        c=c,
        batches=batch,
        context=context,
        mtp=mtp,
        mfu=mfu,
        mbu=mbu,
        dtype=dtype,
        weight_bytes=weight_bytes,
        layout=layout_of(tp, pp, ep, dp, redundant_experts),
        profile=profile,
        engine=engine,
        network_gb_s=network_gb_s,
    )
    if out is not None:
        from llm_cost.report import plots

        plots.speculative(result, out)
    if as_csv:
        emit_csv(result.rows)
        return
    emit(result, as_json, view.render, all_rows)
