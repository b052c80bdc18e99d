"""Commands about memory: fit, activations."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from llm_cost.cli.options import (
    MODEL_HELP,
    Csv,
    Dp,
    Ep,
    Gpu,
    Json,
    KvDtype,
    Plot,
    PlotForce,
    Pp,
    RedundantExperts,
    Tp,
    integer,
    non_negative,
    option,
    plot_file,
    tokens,
)
from llm_cost.cli.program import app, emit, emit_csv, layout_of
from llm_cost.cli.step_options import (
    BitsPerWeight,
    GpuMemoryUtilization,
    MemoryOpt,
    PredictionEngine,
    ProfileOpt,
    QuantizeEmbeddings,
    ReserveGb,
    WeightsDtype,
)
from llm_cost.core.choices import ActivationFormula, MemoryConvention
from llm_cost.core.errors import InputError
from llm_cost.core.types import StorageDtype

FitContext = Annotated[
    int,
    option("--context", "-c", parse=tokens("--context"), metavar="TOKENS", help="Tokens per sequence (8K = 8,192)."),
]
FitBatch = Annotated[
    int, option("--batch", "-b", parse=integer("--batch"), metavar="INTEGER", help="Sequences held at once.")
]
MemoryGb = Annotated[
    Optional[float],
    option(
        "--memory-gb",
        parse=non_negative("--memory-gb"),
        metavar="GB",
        help="Memory per GPU, GB (10^9 B), instead of the GPU spec's capacity.",
    ),
]
MaxGpus = Annotated[
    int,
    option(
        "--max-gpus",
        parse=integer("--max-gpus"),
        metavar="INTEGER",
        help="Largest layout to search for the smallest that fits.",
    ),
]


@app.command()
def fit(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    gpu: Gpu = "h100",
    context: FitContext = 8192,
    batch: FitBatch = 1,
    weights_dtype: WeightsDtype = None,
    quantize_embeddings: QuantizeEmbeddings = False,
    bits_per_weight: BitsPerWeight = None,
    kv_dtype: KvDtype = StorageDtype.BF16,
    memory: MemoryOpt = MemoryConvention.PHYSICAL,
    gpu_memory_utilization: GpuMemoryUtilization = None,
    reserve_gb: ReserveGb = None,
    memory_gb: MemoryGb = None,
    max_gpus: MaxGpus = 64,
    tp: Tp = None,
    pp: Pp = None,
    ep: Ep = None,
    dp: Dp = None,
    redundant_experts: RedundantExperts = None,
    engine: PredictionEngine = None,
    profile: ProfileOpt = None,
    as_json: Json = False,
    as_csv: Csv = False,
    plot: Plot = None,
    force: PlotForce = False,
) -> None:
    """What fits: one GPU's capacity (largest batch/context, KV budget) and the smallest multi-GPU layouts.

    With --tp/--pp/--ep/--dp: that layout's per-GPU weights, KV, headroom and decode step.
    --csv: one row per layout listed (or the one given).
    Examples: llm-cost fit llama3-8b --gpu h100; llm-cost fit llama3-70b --gpu h100 --context 8K;
    llm-cost fit deepseek-v3 --gpu h200 --weights-dtype fp8; llm-cost fit llama3-70b --tp 2
    """
    from llm_cost import api
    from llm_cost.report import fit as view

    layout = layout_of(tp, pp, ep, dp, redundant_experts)
    if plot is not None and layout is not None:
        raise InputError("--plot: the memory picture is of one GPU; leave out --tp/--pp/--ep/--dp")
    out = plot_file(plot, force)
    result = api.fit(
        model,
        gpu,
        context,
        batch,
        weights_dtype=weights_dtype,
        bits_per_weight=bits_per_weight,
        kv_dtype=kv_dtype,
        memory=memory,
        gpu_memory_utilization=gpu_memory_utilization,
        reserve_bytes=reserve_gb,
        memory_gb=memory_gb,
        max_gpus=max_gpus,
        layout=layout,
        engine=engine,
        profile=profile,
        quantize_embeddings=quantize_embeddings,
    )
    title, gpu_title = api.load_model(model).display_name, api.load_gpu(gpu).display_name
    if out is not None:
        from llm_cost.report import plots

        sweep = api.kv(model, [2**k for k in range(10, 21)], batch, kv_dtype)
        plots.fit(result, sweep, title, gpu_title, out)
    if as_csv:
        _fit_csv(result, gpu_title)
        return
    emit(result, as_json, view.render, title, gpu_title)


def _fit_csv(result, gpu_title: str) -> None:  # noqa: ANN001 - api.fit's FitReport
    """fit --csv: one row per layout listed (or the one given); InputError when none fits."""
    rows = [result.deployment] if result.deployment is not None else result.smallest_layouts
    if not rows:
        raise InputError(
            f"--csv: no layout of up to {result.max_gpus} x {gpu_title} holds the model at this batch and "
            "context, so there are no rows (raise --max-gpus, lower the bits per weight or the context)"
        )
    emit_csv(rows)


@app.command()
def activations(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    seq: Annotated[
        int,
        option("--seq", "-s", parse=tokens("--seq"), metavar="TOKENS", help="Training sequence length (8K = 8,192)."),
    ] = 8192,
    micro_batch: Annotated[
        int,
        option("--micro-batch", parse=integer("--micro-batch"), metavar="INTEGER", help="Sequences per micro-batch."),
    ] = 1,
    formula: Annotated[
        ActivationFormula,
        typer.Option(
            "--formula",
            case_sensitive=False,
            help="model (the model's own block, no dropout) or gpt (Korthikanti "
            "et al.'s GPT block, sbh(34 + 5as/h), as the source documents).",
        ),
    ] = ActivationFormula.MODEL,
    as_json: Json = False,
    as_csv: Csv = False,
) -> None:
    """Training activation memory per layer (Korthikanti et al.), without and with recompute.

    Example: llm-cost activations llama3-8b --seq 8K
    """
    from llm_cost import api
    from llm_cost.report import fit as view

    result = api.activations(model, seq, micro_batch, formula)
    if as_csv:
        emit_csv(result)
        return
    emit(result, as_json, view.render_activations, api.load_model(model).display_name)
