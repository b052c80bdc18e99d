"""``llm-cost serve``: the serving planner (TTFT, TPOT, throughput, GPUs, dollars)."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Optional

import typer

from llm_cost.cli.options import (
    GPU_HELP,
    MODEL_HELP,
    Csv,
    Ep,
    Json,
    KvDtype,
    Plot,
    Pp,
    Tp,
    integer,
    non_negative,
    option,
    positive,
    tokens,
)
from llm_cost.cli.program import app, emit, emit_csv, layout_of
from llm_cost.cli.step_options import (
    BitsPerWeight,
    ComputeDtype,
    GpuMemoryUtilization,
    GroupSize,
    MemoryOpt,
    NetworkGbS,
    ProfileOpt,
    ReserveGb,
    WeightsDtype,
)
from llm_cost.core.choices import MemoryConvention, ServingMode
from llm_cost.core.errors import InputError
from llm_cost.core.types import StorageDtype
from llm_cost.core.units import parse_context, parse_duration


class ModeChoice(str, Enum):
    """Which serving modes the planner searches."""

    both = "both"
    aggregated = "aggregated"
    disaggregated = "disaggregated"


#: The serving modes each --mode searches.
MODES = {
    ModeChoice.both: (ServingMode.AGGREGATED, ServingMode.DISAGGREGATED),
    ModeChoice.aggregated: (ServingMode.AGGREGATED,),
    ModeChoice.disaggregated: (ServingMode.DISAGGREGATED,),
}


def _duration(flag: str):  # noqa: ANN202 - a parser
    """A latency target with its unit (2s, 50ms): a bare number is refused, as ``--tpot 50``
    could mean 50 ms or 50 s."""

    def parse(text: str) -> float:
        raw = str(text).strip().lower()
        if raw and not raw[-1].isalpha():
            raise InputError(f"{flag}: {text!r} has no unit; give one, e.g. {raw}ms or {raw}s")
        return parse_duration(text, flag)

    return parse


#: The value of ``--chunk off``.
NO_CHUNKING = "off"


def _chunk(text: str) -> Any:
    """--chunk: a token budget, or ``off`` (no chunked prefill)."""
    if str(text).strip().lower() == NO_CHUNKING:
        return NO_CHUNKING
    try:
        return parse_context(text, "--chunk", 1)
    except InputError as e:
        raise InputError(f"{e}; or off (prompts not chunked)") from None


Input = Annotated[
    int, option("--input", parse=tokens("--input"), metavar="TOKENS", help="Prompt tokens per request (2K = 2,048).")
]
Output = Annotated[
    int, option("--output", parse=tokens("--output"), metavar="TOKENS", help="Output tokens per request (at least 2).")
]
Ttft = Annotated[
    Optional[float],
    option(
        "--ttft",
        parse=_duration("--ttft"),
        metavar="DURATION",
        help="Target time to first token (2s, 500ms), queueing included.",
    ),
]
Tpot = Annotated[
    Optional[float],
    option(
        "--tpot",
        parse=_duration("--tpot"),
        metavar="DURATION",
        help="Target time per output token (50ms), the mean between tokens.",
    ),
]
Qps = Annotated[
    Optional[float],
    option(
        "--qps",
        parse=positive("--qps"),
        metavar="NUMBER",
        help="Requests per second to serve (Poisson arrivals): the plan finds the "
        "fewest GPUs. Without it, the GPUs of --gpus serve as much as they can.",
    ),
]
Gpus = Annotated[
    Optional[int],
    option(
        "--gpus",
        parse=integer("--gpus"),
        metavar="INTEGER",
        help="GPUs the deployment may use (default: one node; with --qps, up to 4,096).",
    ),
]
Price = Annotated[
    Optional[float],
    option(
        "--usd-per-gpu-hour",
        parse=non_negative("--usd-per-gpu-hour"),
        metavar="NUMBER",
        help="Price of one GPU-hour, USD: gives $ per million tokens and per request.",
    ),
]
Mode = Annotated[
    ModeChoice,
    typer.Option(
        "--mode",
        case_sensitive=False,
        help="Search aggregated serving (chunked prefill), disaggregated (prefill and decode pools), or both.",
    ),
]
Concurrency = Annotated[
    Optional[int],
    option(
        "--batch",
        "-b",
        parse=integer("--batch"),
        metavar="INTEGER",
        help="Concurrency per replica (decoding sequences); with --tp/--pp: evaluate that one configuration.",
    ),
]
Chunk = Annotated[
    Optional[Any],
    option(
        "--chunk",
        parse=_chunk,
        metavar="TOKENS|off",
        help="Token budget per step (chunked prefill, vLLM's "
        "max_num_batched_tokens), or off: prompts run whole in steps of their own; "
        "default searched, 8K for one configuration.",
    ),
]
ServeGpu = Annotated[str, typer.Option("--gpu", "-g", help=GPU_HELP)]


@app.command()
def serve(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    gpu: ServeGpu = "h100",
    input_tokens: Input = 2048,
    output_tokens: Output = 256,
    ttft: Ttft = None,
    tpot: Tpot = None,
    qps: Qps = None,
    gpus: Gpus = None,
    usd_per_gpu_hour: Price = None,
    mode: Mode = ModeChoice.both,
    tp: Tp = None,
    pp: Pp = None,
    ep: Ep = None,
    batch: Concurrency = None,
    chunk: Chunk = None,
    dtype: ComputeDtype = None,
    weights_dtype: WeightsDtype = None,
    bits_per_weight: BitsPerWeight = None,
    group_size: GroupSize = None,
    kv_dtype: KvDtype = StorageDtype.BF16,
    profile: ProfileOpt = None,
    memory: MemoryOpt = MemoryConvention.PHYSICAL,
    gpu_memory_utilization: GpuMemoryUtilization = None,
    reserve_gb: ReserveGb = None,
    network_gb_s: NetworkGbS = None,
    as_json: Json = False,
    as_csv: Csv = False,
    plot: Plot = None,
) -> None:
    """Serving plan: the layout, concurrency and chunk size that serve a traffic best under TTFT/TPOT targets,
    with tokens/s per GPU and per user, GPUs for --qps, and $ per million tokens.

    Searches TP/PP/EP layouts and replicas, concurrency, chunked-prefill budgets and prefill/decode
    splits (aggregated and disaggregated); every step is timed from its operators by the GPU's
    calibrated profile. With --tp/--pp and --batch: that one configuration.
    Examples: llm-cost serve llama3-70b --gpu h100 --gpus 8 --input 2K --output 256 --ttft 2s --tpot 50ms
    --usd-per-gpu-hour 2.5; llm-cost serve llama3-8b --gpu h100 --qps 20 --ttft 1s --tpot 30ms;
    llm-cost serve llama3-70b --tp 2 --batch 64 --input 2048 --output 2048
    """
    from llm_cost import api
    from llm_cost.report import serve as view

    result = api.serve(
        model,
        gpu,
        input_tokens,
        output_tokens,
        ttft_s=ttft,
        tpot_s=tpot,
        qps=qps,
        gpus=gpus,
        usd_per_gpu_hour=usd_per_gpu_hour,
        modes=MODES[mode],
        layout=layout_of(tp, pp, ep, None),
        concurrency=batch,
        chunk_tokens=None if chunk == NO_CHUNKING else chunk,
        chunked_prefill=chunk != NO_CHUNKING,
        dtype=dtype,
        weights_dtype=weights_dtype,
        bits_per_weight=bits_per_weight,
        group_size=group_size,
        kv_dtype=kv_dtype,
        profile=profile,
        memory=memory,
        gpu_memory_utilization=gpu_memory_utilization,
        reserve_bytes=reserve_gb,
        network_gb_s=network_gb_s,
    )
    title, gpu_title = api.load_model(model).display_name, api.load_gpu(gpu).display_name
    if plot is not None:
        from llm_cost.report import plots

        plots.serve(result, title, gpu_title, plot)
    if as_csv:
        emit_csv(
            result.frontier, [{"chosen": f == result.chosen, "misses": " ".join(f.violates)} for f in result.frontier]
        )
        return
    emit(result, as_json, view.render, title, gpu_title)
