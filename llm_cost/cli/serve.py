"""``llm-cost serve``: the serving planner (TTFT, TPOT, throughput, GPUs, dollars)."""

from __future__ import annotations

import os
from enum import Enum
from typing import Annotated, Any, Optional

import typer

from llm_cost.cli.flags import errors_as_flags
from llm_cost.cli.options import (
    GPU_HELP,
    MODEL_HELP,
    Csv,
    Dp,
    Ep,
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
    within,
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
    QuantizeEmbeddings,
    ReserveGb,
    WeightsDtype,
)
from llm_cost.core.choices import MemoryConvention, Router, ServingMode
from llm_cost.core.errors import InputError
from llm_cost.core.limits import MAX_REQUESTS, MIN_STEP_TOKENS, QPS_RANGE
from llm_cost.core.types import ServingEngine, StorageDtype
from llm_cost.core.units import parse_context


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


def _target(text: str) -> str:
    """A latency target as written (``2s``, ``p99:2s``): the API reads it and names the flag."""
    return str(text)


def _lengths(flag: str):  # noqa: ANN202 - a parser
    """A token count (2K = 2,048) or a distribution's text (``lognormal:mean=800,sd=400``), which
    the API reads."""

    def parse(text: str) -> Any:
        return str(text).strip() if ":" in str(text) else parse_context(text, flag)

    return parse


def _items(text: str, flag: str) -> list[str]:
    """The comma-separated items of ``flag``'s value, refused with an empty one (``h100,``)."""
    items = [part.strip() for part in str(text).split(",")]
    if len(items) > 1 and not all(items):
        raise InputError(f"{flag}: {text!r} has an empty item; separate values with single commas")
    return items


def _prices(text: str) -> Any:
    """One price, or one per GPU of a comparison (``2.5,3.5``)."""
    parse = non_negative("--usd-per-gpu-hour", maximum=1e6)
    values = [parse(part) for part in _items(text, "--usd-per-gpu-hour")]
    return values[0] if len(values) == 1 else values


#: The value of ``--chunk off``.
NO_CHUNKING = "off"


def _chunk(text: str) -> Any:
    """--chunk: a token budget, or ``off`` (no chunked prefill)."""
    if str(text).strip().lower() == NO_CHUNKING:
        return NO_CHUNKING
    try:
        return parse_context(text, "--chunk", MIN_STEP_TOKENS)  # the API's least budget: one wording for 0 and 1
    except InputError as e:
        raise InputError(f"{e}; or off (prompts not chunked)") from None


Input = Annotated[
    Optional[Any],
    option(
        "--input",
        parse=_lengths("--input"),
        metavar="TOKENS|DIST",
        help="Prompt tokens per request (2K = 2,048; default 2K), or a distribution: "
        "lognormal:mean=800,sd=400, normal:mean=800,sd=200, uniform:low=100,high=900, empirical:100,200,400.",
    ),
]
Output = Annotated[
    Optional[Any],
    option(
        "--output",
        parse=_lengths("--output"),
        metavar="TOKENS|DIST",
        help="Output tokens per request (default 256), or a distribution as --input.",
    ),
]


def _target_option(flag: str, what: str) -> Any:
    return option(
        flag,
        parse=_target,
        metavar="[STAT:]DURATION",
        help=f"Target {what}: 2s or 50ms bounds the mean; p50:, p90:, p99: a percentile (p99:2s).",
    )


Ttft = Annotated[Optional[str], _target_option("--ttft", "time to first token, queueing included")]
Tpot = Annotated[Optional[str], _target_option("--tpot", "time per output token (a request's mean gap)")]
Itl = Annotated[Optional[str], _target_option("--itl", "inter-token latency (each gap; per request, its longest)")]
E2e = Annotated[Optional[str], _target_option("--e2e", "end-to-end latency of a request")]
Qps = Annotated[
    Optional[float],
    option(
        "--qps",
        parse=within("--qps", QPS_RANGE),
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
        help="GPUs the deployment may use (default: one node, a host of 8 for cards with no NVLink, over PCIe; "
        "with --qps, up to 4,096).",
    ),
]
Price = Annotated[
    Optional[Any],
    option(
        "--usd-per-gpu-hour",
        parse=_prices,
        metavar="NUMBER[,NUMBER...]",
        help="Price of one GPU-hour, USD: gives $ per million tokens and per request; one per GPU of --gpu a,b.",
    ),
]
Workload = Annotated[
    Optional[str],
    typer.Option(
        "--workload",
        metavar="FILE|PRESET",
        help="Traffic from a YAML workload file (arrivals, stages, closed-loop users, lengths, prefixes; see the "
        "README) or a preset: chat, code, rag, agentic-long-context (their lengths and prefixes at --qps).",
    ),
]
TraceFile = Annotated[
    Optional[str],
    typer.Option(
        "--trace",
        metavar="FILE",
        help="Replay a JSONL or CSV trace of arrival_s, input_tokens, output_tokens (optional prefix_id, prefix_tokens).",
    ),
]
Prefix = Annotated[
    Optional[int],
    option("--prefix", parse=tokens("--prefix"), metavar="TOKENS", help="Shared system-prompt tokens of each prompt."),
]
PrefixGroups = Annotated[
    int, option("--prefix-groups", parse=integer("--prefix-groups"), metavar="INTEGER", help="Distinct shared prompts.")
]
UsersPerPrefix = Annotated[
    int,
    option(
        "--users-per-prefix",
        parse=integer("--users-per-prefix"),
        metavar="INTEGER",
        help="Users of each shared prompt.",
    ),
]
Requests = Annotated[
    Optional[int],
    option(
        "--requests",
        parse=integer("--requests", maximum=MAX_REQUESTS),
        metavar="INTEGER",
        help="Requests to simulate (default 1,000; a plan: 400 per replica and candidate).",
    ),
]
Seed = Annotated[
    int, option("--seed", parse=integer("--seed", 0), metavar="INTEGER", help="Random seed of the traffic.")
]


RouterOpt = Annotated[
    Optional[Router],
    typer.Option(
        "--router",
        case_sensitive=False,
        help="How requests are spread over the replicas, all simulated side by side: round-robin, least-loaded "
        "(vLLM's data-parallel balancer) or prefix-aware (SGLang's gateway, cache-aware); default the "
        "engine's own as the launch runs it.",
    ),
]


EngineOpt = Annotated[
    Optional[ServingEngine],
    typer.Option(
        "--engine",
        case_sensitive=False,
        help="Scheduler simulated: vllm (V1), sglang (admits by its new-token estimate) or trtllm "
        "(GUARANTEED_NO_EVICT: whole requests reserved). Default: the --profile's engine if it is one "
        "of these, else vllm.",
        show_default=False,
    ),
]
MaxNumSeqs = Annotated[
    Optional[int],
    option(
        "--max-num-seqs",
        parse=integer("--max-num-seqs"),
        metavar="INTEGER",
        help="Sequences an engine replica runs at once (vLLM's --max-num-seqs; default vLLM's for the GPU).",
    ),
]
MaxModelLen = Annotated[
    Optional[int],
    option(
        "--max-model-len",
        parse=tokens("--max-model-len", 2),
        metavar="TOKENS",
        help="Longest request (prompt + output) the engine accepts (default: the model's context).",
    ),
]
Analytic = Annotated[
    bool,
    typer.Option(
        "--analytic",
        help="The analytic planner alone: means from its queueing formulas and its frontier, no simulation.",
    ),
]
NoPrefixCaching = Annotated[
    bool, typer.Option("--no-prefix-caching", help="Turn prefix caching off (vLLM's --no-enable-prefix-caching).")
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
        "max_num_batched_tokens; at least --max-num-seqs, as vLLM requires), or off: prompts run whole in steps "
        "of their own; default searched, 8K for one configuration.",
    ),
]
ServeGpu = Annotated[str, typer.Option("--gpu", "-g", help=GPU_HELP)]
Emit = Annotated[
    Optional[ServingEngine],
    typer.Option(
        "--emit",
        case_sensitive=False,
        help="Print the launch command of the chosen plan for vllm (vllm serve), sglang "
        "(python -m sglang.launch_server) or trtllm (trtllm-serve), naming the engine version its flags were "
        "checked against; with --json, the result's launch object.",
    ),
]


@app.command()
def serve(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    gpu: ServeGpu = "h100",
    input_tokens: Input = None,
    output_tokens: Output = None,
    ttft: Ttft = None,
    tpot: Tpot = None,
    itl: Itl = None,
    e2e: E2e = None,
    qps: Qps = None,
    workload: Workload = None,
    trace: TraceFile = None,
    prefix: Prefix = None,
    prefix_groups: PrefixGroups = 1,
    users_per_prefix: UsersPerPrefix = 1,
    requests: Requests = None,
    seed: Seed = 0,
    router: RouterOpt = None,
    gpus: Gpus = None,
    usd_per_gpu_hour: Price = None,
    mode: Mode = ModeChoice.both,
    tp: Tp = None,
    pp: Pp = None,
    ep: Ep = None,
    dp: Dp = None,
    redundant_experts: RedundantExperts = None,
    batch: Concurrency = None,
    engine: EngineOpt = None,
    max_num_seqs: MaxNumSeqs = None,
    chunk: Chunk = None,
    max_model_len: MaxModelLen = None,
    no_prefix_caching: NoPrefixCaching = False,
    analytic: Analytic = False,
    dtype: ComputeDtype = None,
    weights_dtype: WeightsDtype = None,
    quantize_embeddings: QuantizeEmbeddings = False,
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
    force: PlotForce = False,
    emit_engine: Emit = None,
) -> None:
    """Serving: one configuration simulated under a traffic (TTFT, TPOT, ITL, E2E: means, P50/P90/P99,
    goodput), or the plan that serves it best under targets (--ttft p99:2s --tpot p90:50ms), or GPUs side
    by side (--gpu h100,h200 --usd-per-gpu-hour 2.5,3.5).

    The plan screens TP/PP/EP layouts, replicas, concurrency and chunked-prefill budgets analytically,
    then simulates the promising configurations of each layout under the engine's scheduler (vLLM V1:
    continuous batching, chunked prefill, prefix caching, preemption) and ranks them on their simulated
    percentiles. With --tp/--pp and --qps (or --workload, --trace): that one configuration simulated; with
    --tp/--pp and --batch: one configuration, saturated, analytic.
    Examples: llm-cost serve llama3-70b --gpu h100 --gpus 8 --input 2K --output 256 --ttft p99:2s --tpot p90:50ms
    --usd-per-gpu-hour 2.5; llm-cost serve llama3-8b --tp 1 --qps 10 --input lognormal:mean=800,sd=400
    --prefix 200 --prefix-groups 4; llm-cost serve llama3-70b --gpu h100,h200,b200,mi300x --gpus 8
    --usd-per-gpu-hour 2.5,3.5,5.5,2.5 --ttft p99:2s --tpot p90:50ms
    """
    from llm_cost import api

    gpu_names = [gpu] if os.path.isfile(gpu) else _items(gpu, "--gpu")  # a spec file's name may hold a comma
    if emit_engine is not None and (len(gpu_names) > 1 or as_csv):
        fix = "give one --gpu" if len(gpu_names) > 1 else "leave out --csv"
        raise InputError(f"--emit: prints one plan's command; {fix}")
    out = plot_file(plot, force)
    request = api.ServeRequest(
        model, gpu_names if len(gpu_names) > 1 else gpu, input_tokens, output_tokens,
        ttft_s=ttft, tpot_s=tpot, itl_s=itl, e2e_s=e2e,
        qps=qps, workload=workload, trace=trace, requests=requests, seed=seed, router=router,
        prefix_tokens=prefix, prefix_groups=prefix_groups, users_per_prefix=users_per_prefix,
        gpus=gpus, usd_per_gpu_hour=usd_per_gpu_hour, modes=MODES[mode], analytic=analytic,
        layout=layout_of(tp, pp, ep, dp, redundant_experts), concurrency=batch,
        chunk_tokens=None if chunk == NO_CHUNKING else chunk, chunked_prefill=chunk != NO_CHUNKING,
        engine=engine, max_num_seqs=max_num_seqs, max_model_len=max_model_len, prefix_caching=not no_prefix_caching,
        dtype=dtype, weights_dtype=weights_dtype, bits_per_weight=bits_per_weight, group_size=group_size,
        kv_dtype=kv_dtype, quantize_embeddings=quantize_embeddings, profile=profile,
        memory=memory, gpu_memory_utilization=gpu_memory_utilization, reserve_bytes=reserve_gb,
        network_gb_s=network_gb_s, emit=emit_engine,
    )  # fmt: skip
    if len(gpu_names) > 1:
        compared = api.compare_request(request)  # its JSON is the API's, argument names and all
        result: Any = compared if as_json else errors_as_flags(compared)
    else:
        result = api.serve_request(request)
    _show(result, gpu_names, api.load_model(model).display_name, out, as_json, as_csv, emit_engine is not None)


def _show(result: Any, gpu_names: list[str], title: str, out: Any, as_json: bool, as_csv: bool, launch: bool) -> None:
    """Print a serve result: its plot to ``out`` (if any), then its CSV, its launch command, or its
    table or JSON."""
    from llm_cost import api
    from llm_cost.report import serve as view

    gpu_title = api.load_gpu(gpu_names[0]).display_name if len(gpu_names) == 1 else ", ".join(gpu_names)
    if out is not None:
        from llm_cost.report import plots

        plots.serve(result, title, gpu_title, out)
    if as_csv:
        rows, extra = view.csv_rows(result)
        emit_csv(rows, extra)
        return
    if launch and not as_json:
        from llm_cost.report.base import write_out

        write_out(view.launch_text(result.launch))
        return
    emit(result, as_json, view.render, title, gpu_title)
