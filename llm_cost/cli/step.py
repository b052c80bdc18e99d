"""Commands about one step of a model on a GPU: flops, roofline, context."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Optional

import typer

from llm_cost.cli.options import (
    MODEL_HELP,
    AllRows,
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
    given,
    ignored,
    integer,
    integer_grid,
    option,
    plot_file,
    token_grid,
)
from llm_cost.cli.program import app, emit, emit_csv, layout_of
from llm_cost.cli.step_options import (
    AttentionOpt,
    BitsPerWeight,
    ComputeDtype,
    ContextGrid,
    GroupSize,
    LogitsOpt,
    Mbu,
    Mfu,
    MlaOpt,
    NetworkGbS,
    PredictionEngine,
    ProfileOpt,
    QuantizeEmbeddings,
    SeqGrid,
    WeightFlopsOpt,
    WeightsDtype,
)
from llm_cost.core.choices import AttentionMask, Logits, MLAForm, WeightBytes, WeightFlops
from llm_cost.core.errors import InputError
from llm_cost.core.types import Phase, StorageDtype


class OnePhase(str, Enum):
    """The phases a single forward pass or step is: a prompt, or one token per sequence."""

    prefill = "prefill"
    decode = "decode"


PhaseOpt = Annotated[
    OnePhase,
    typer.Option("--phase", case_sensitive=False, help="prefill (a prompt) or decode (one token after --context)."),
]
StepPhase = Annotated[
    Optional[OnePhase],
    typer.Option(
        "--phase",
        case_sensitive=False,
        help="decode (one step at --batch/--context, the default) or prefill (--seq: the time to first token).",
    ),
]
Batches = Annotated[
    Any,
    option(
        "--batch",
        "-b",
        parse=integer_grid("--batch"),
        metavar="LIST",
        help="Sequences per step (default 1): a value, a list 1,8,64, a doubling range 1..256 or a range in steps "
        "1..1000:10; a list prints one row per point.",
    ),
]
Contexts = Annotated[
    Any,
    option(
        "--context",
        "-c",
        parse=token_grid("--context", 0),
        metavar="LIST",
        help="Decode: tokens already cached per sequence (default 0; 8K = 8,192): a value, a list, a doubling range "
        "1K..128K or a range in steps 1K..8K:1K.",
    ),
]
Seqs = Annotated[
    Any,
    option(
        "--seq",
        "-s",
        parse=token_grid("--seq"),
        metavar="LIST",
        help="Prefill: prompt length (default 8K): a value, a list or a range.",
    ),
]
StepLogits = Annotated[
    Optional[Logits],
    typer.Option(
        "--logits",
        case_sensitive=False,
        help="Prefill: LM head on the last position (default, serving) or on all (training, the documents' count).",
    ),
]
StepWeightBytes = Annotated[
    Optional[WeightBytes],
    typer.Option(
        "--weight-bytes",
        case_sensitive=False,
        help="Decode: read (matmul weights + one embedding row per sequence, the default) or resident (every "
        "stored weight, as the documents).",
    ),
]
StepKvDtype = Annotated[
    Optional[StorageDtype],
    typer.Option("--kv-dtype", case_sensitive=False, help="KV-cache element dtype (default bf16)."),
]
Ops = Annotated[
    bool,
    typer.Option(
        "--ops",
        help="Per-operator table (FLOPs, bytes, intensity, bound, estimate); with --json, a grid's rows carry "
        "their operator tables and conventions.",
    ),
]
FlopsOps = Annotated[
    bool, typer.Option("--ops", help="With --json, a grid's rows carry their FLOPs by operator group and conventions.")
]
ContextList = Annotated[
    Any,
    option(
        "--context",
        "-c",
        parse=token_grid("--context"),
        metavar="LIST",
        help="Contexts in tokens (default 8K,32K,128K,1M): a list 8K,128K or a doubling range 8K..1M.",
    ),
]
StepModel = Annotated[
    Optional[str], typer.Argument(help=MODEL_HELP + " Default when a step option is given: llama3-8b.")
]
Batch = Annotated[
    int, option("--batch", "-b", parse=integer("--batch"), metavar="INTEGER", help="Sequences per forward pass.")
]

#: The model ``roofline`` steps when a step option is given without one.
DEFAULT_STEP_MODEL = "llama3-8b"


@app.command()
def flops(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    phase: PhaseOpt = OnePhase.prefill,
    seq: SeqGrid = None,
    context: ContextGrid = None,
    batch: Batch = 1,
    attention: AttentionOpt = AttentionMask.CAUSAL,
    logits: LogitsOpt = Logits.LAST,
    mla: MlaOpt = MLAForm.PLAIN,
    ops: FlopsOps = False,
    all_rows: AllRows = False,
    as_json: Json = False,
    as_csv: Csv = False,
) -> None:
    """FLOPs of a forward pass: per-layer linear and attention FLOPs, LM head, totals, over lengths
    (default: prefill --seq 128,1024,8K; decode --context 8K).

    Examples: llm-cost flops llama3-8b --phase prefill --seq 8K;
    llm-cost flops llama3-8b --phase decode --context 8K
    """
    from llm_cost import api
    from llm_cost.report import flops as view

    prefill = phase is OnePhase.prefill
    ignored(
        given("context") if prefill else given("seq"),
        f"to --phase {phase.value}; use {'--seq' if prefill else '--context'}",
    )
    lengths = seq if prefill else context
    if lengths is None:
        from llm_cost.api.step import FLOPS_LENGTHS

        lengths = FLOPS_LENGTHS[Phase(phase.value)]  # the API's default (its size decides the JSON's detail)
    detail = not as_csv and (ops or len(lengths) == 1 or not as_json)  # a grid's JSON rows: totals
    result = api.flops(model, phase, lengths, batch, attention, logits, mla, detail)
    if as_csv:
        emit_csv(result)
        return
    emit(result, as_json, view.render, api.load_model(model).display_name, phase.value, all_rows)


def _check_phase(prefill: bool, context: Any, weight_bytes: Any, seq: Any, logits: Any) -> None:
    """InputError for a flag of the other phase (--context with --phase prefill, say)."""
    given = {"--context": context, "--weight-bytes": weight_bytes} if prefill else {"--seq": seq, "--logits": logits}
    wrong = [flag for flag, value in given.items() if value is not None]
    if wrong:
        instead = (
            "; ".join(
                hint
                for flag, hint in (
                    ("--context", "use --seq for the prompt length"),
                    ("--weight-bytes", "--weight-bytes chooses a decode step's weight convention: leave it out"),
                )
                if flag in wrong
            )
            if prefill
            else "--phase prefill for a prompt"
            + (" (--logits is where its LM head runs)" if "--logits" in wrong else "")
            + ("; --context for tokens already cached" if "--seq" in wrong else "")
        )
        verb = "do" if len(wrong) > 1 else "does"
        raise InputError(
            f"{', '.join(wrong)} {verb} not apply to --phase {'prefill' if prefill else 'decode'}; "
            + (instead if prefill else f"use {instead}")
        )


def _plot_of_one_step(plot: Optional[str], force: bool, batch: Any, lengths: Any) -> Any:
    """The checked ``--plot`` file (:func:`~llm_cost.cli.options.plot_file`), refused before
    anything is computed for more than one step (the picture is of one step; a 10,000-point sweep
    took 3 s before saying so)."""
    if plot is not None and len(batch or [1]) * len(lengths or [0]) > 1:
        raise InputError("--plot: the Roofline picture is of one step; give one --batch and --context")
    return plot_file(plot, force)


@app.command()
def roofline(
    model: StepModel = None,
    gpu: Gpu = "h100",
    dtype: ComputeDtype = None,
    weights_dtype: WeightsDtype = None,
    quantize_embeddings: QuantizeEmbeddings = False,
    bits_per_weight: BitsPerWeight = None,
    group_size: GroupSize = None,
    kv_dtype: StepKvDtype = None,
    phase: StepPhase = None,
    batch: Batches = None,
    context: Contexts = None,
    seq: Seqs = None,
    logits: StepLogits = None,
    mfu: Mfu = None,
    mbu: Mbu = None,
    weight_bytes: StepWeightBytes = None,
    ops: Ops = False,
    tp: Tp = None,
    pp: Pp = None,
    ep: Ep = None,
    dp: Dp = None,
    redundant_experts: RedundantExperts = None,
    network_gb_s: NetworkGbS = None,
    profile: ProfileOpt = None,
    engine: PredictionEngine = None,
    all_rows: AllRows = False,
    as_json: Json = False,
    as_csv: Csv = False,
    plot: Plot = None,
    force: PlotForce = False,
) -> None:
    """Roofline: ridge points of a GPU; with a model (or any step option), a decode step's or a prefill's
    bound, estimate and calibrated prediction (--profile), on one GPU or a layout (--tp/--pp/--ep/--dp).

    Examples: llm-cost roofline --gpu h100; llm-cost roofline llama3-8b --gpu h100 --batch 1 --context 2K;
    llm-cost roofline --gpu h100 --batch 1,8,64 --context 2K (model llama3-8b);
    llm-cost roofline llama3-70b --tp 4 --batch 32 --context 4K; llm-cost roofline llama3-8b --phase prefill --seq 8K;
    llm-cost roofline llama3-8b --gpu rtx-4090 --engine llamacpp --weights-dtype int4
    """
    from llm_cost import api

    out = _plot_of_one_step(plot, force, batch, context or seq)
    options = api.StepOptions(
        dtype=dtype, weights_dtype=weights_dtype, bits_per_weight=bits_per_weight, group_size=group_size,
        kv_dtype=kv_dtype, mfu=mfu, mbu=mbu, layout=layout_of(tp, pp, ep, dp, redundant_experts),
        network_gb_s=network_gb_s, profile=profile, engine=engine, quantize_embeddings=quantize_embeddings,
    )  # fmt: skip
    given = (phase, batch, context, seq, logits, weight_bytes)
    if model is None and not ops and all(v is None for v in given) and options == api.StepOptions():
        _ridges(gpu, as_json, as_csv, plot)
        return
    _check_phase(prefill := phase is OnePhase.prefill, context, weight_bytes, seq, logits)
    name = model or DEFAULT_STEP_MODEL
    grid = len(batch or [1]) * len(context or [0]) > 1  # a grid's JSON rows: figures, the rest with --ops
    request = api.StepRequest(
        name, gpu, Phase.PREFILL if prefill else Phase.DECODE, batch or [1],
        (seq or [8192]) if prefill else (context or [0]), logits=logits or Logits.LAST,
        weight_bytes=weight_bytes or WeightBytes.READ,
        detail=prefill or plot is not None or not (as_csv or (grid and as_json and not ops)),
        ops=prefill or plot is not None or not grid or ops, options=options,
    )  # fmt: skip
    result: Any = api.step_request(request)
    _render_steps(result, name, gpu, prefill, (model is not None, ops, context is None, all_rows), as_json, as_csv, out)


def _ridges(gpu: str, as_json: bool, as_csv: bool, plot: Optional[str]) -> None:
    """The ridge-point table of ``roofline --gpu`` alone."""
    from llm_cost import api
    from llm_cost.report import roofline as view

    if plot is not None:
        raise InputError("--plot: the Roofline picture is of a step; name a MODEL or give --batch/--context")
    result = api.ridges(gpu)
    if as_csv:
        emit_csv(result)
        return
    emit(result, as_json, view.render_ridges, api.load_gpu(gpu).display_name)


def _render_steps(
    result: list,
    model: str,
    gpu: str,
    prefill: bool,
    shown: tuple[bool, bool, bool, bool],
    as_json: bool,
    as_csv: bool,
    out: Any,
) -> None:
    """A roofline sweep as a picture, CSV rows, a table of rows, or one step's whole account;
    ``shown``: whether the model was named, --ops, whether no context was given, --all-rows."""
    from llm_cost import api
    from llm_cost.report import roofline as view

    model_given, ops, no_context, all_rows = shown
    title, gpu_title = api.load_model(model).display_name, api.load_gpu(gpu).display_name
    if out is not None:  # one step (_plot_of_one_step)
        from llm_cost.report import plots

        plots.roofline(result[0], title, gpu_title, out)
    if as_csv:
        emit_csv(result)
    elif len(result) > 1:
        emit(result, as_json, view.render_rows, title, gpu_title, model_given, all_rows)
    else:
        render = view.render_prefill if prefill else view.render_decode
        emit(result[0], as_json, render, title, gpu_title, model_given, ops, no_context and not prefill)


@app.command()
def context(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    contexts: ContextList = None,
    gpu: Gpu = "h100",
    mfu: Mfu = None,
    mbu: Mbu = None,
    dtype: ComputeDtype = None,
    kv_dtype: KvDtype = StorageDtype.BF16,
    weight_flops: WeightFlopsOpt = WeightFlops.GEMM,
    logits: LogitsOpt = Logits.LAST,
    as_json: Json = False,
    as_csv: Csv = False,
    all_rows: AllRows = False,
) -> None:
    """Long context: attention vs weight FLOPs, crossover, prefill (TTFT), KV per request, score-matrix size.

    Example: llm-cost context llama3-70b --context 8K,128K --weight-flops total
    """
    from llm_cost import api
    from llm_cost.report import context as view

    result = api.context(model, contexts, gpu, mfu, mbu, dtype, kv_dtype, weight_flops, logits)
    if as_csv:
        emit_csv(result.rows)
        return
    emit(result, as_json, view.render, api.load_model(model).display_name, all_rows)
