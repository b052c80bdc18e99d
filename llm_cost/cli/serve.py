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
from llm_cost.cli.program import app, emit, emit_csv, parse_layout, weight_bits
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
    memory_policy,
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


def _duration(flag: str):
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
#: The largest token budget per step --chunk takes.
MAX_CHUNK_TOKENS = 1 << 20


def _chunk(text: str) -> Any:
    """--chunk: a token budget (at least 2), or ``off`` (no chunked prefill)."""
    if str(text).strip().lower() == NO_CHUNKING:
        return NO_CHUNKING
    try:
        value = parse_context(text, "--chunk", 2)
    except InputError as e:
        raise InputError(f"{e}; or off (prompts not chunked)") from None
    if value > MAX_CHUNK_TOKENS:
        raise InputError(
            f"--chunk: {text!r} is more than {MAX_CHUNK_TOKENS:,} tokens per step; or off (prompts not chunked)"
        )
    return value


@app.command()
def serve(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    gpu: Annotated[str, typer.Option("--gpu", "-g", help=GPU_HELP)] = "h100",
    input_tokens: Annotated[
        int,
        option("--input", parse=tokens("--input"), metavar="TOKENS", help="Prompt tokens per request (2K = 2,048)."),
    ] = 2048,
    output_tokens: Annotated[
        int,
        option(
            "--output", parse=tokens("--output", 2), metavar="TOKENS", help="Output tokens per request (at least 2)."
        ),
    ] = 256,
    ttft: Annotated[
        Optional[float],
        option(
            "--ttft",
            parse=_duration("--ttft"),
            metavar="DURATION",
            help="Target time to first token (2s, 500ms), queueing included.",
        ),
    ] = None,
    tpot: Annotated[
        Optional[float],
        option(
            "--tpot",
            parse=_duration("--tpot"),
            metavar="DURATION",
            help="Target time per output token (50ms), the mean between tokens.",
        ),
    ] = None,
    qps: Annotated[
        Optional[float],
        option(
            "--qps",
            parse=positive("--qps", 1e6),
            metavar="NUMBER",
            help="Requests per second to serve (Poisson arrivals): the plan finds the "
            "fewest GPUs. Without it, the GPUs of --gpus serve as much as they "
            "can.",
        ),
    ] = None,
    gpus: Annotated[
        Optional[int],
        option(
            "--gpus",
            parse=integer("--gpus", 1, 4096),
            metavar="INTEGER",
            help="GPUs the deployment may use (default: one node; with --qps, up to 4,096).",
        ),
    ] = None,
    usd_per_gpu_hour: Annotated[
        Optional[float],
        option(
            "--usd-per-gpu-hour",
            parse=non_negative("--usd-per-gpu-hour", maximum=1e6),
            metavar="NUMBER",
            help="Price of one GPU-hour, USD: gives $ per million tokens and per request.",
        ),
    ] = None,
    mode: Annotated[
        ModeChoice,
        typer.Option(
            "--mode",
            case_sensitive=False,
            help="Search aggregated serving (chunked prefill), disaggregated (prefill and decode pools), or both.",
        ),
    ] = ModeChoice.both,
    tp: Tp = None,
    pp: Pp = None,
    ep: Ep = None,
    batch: Annotated[
        Optional[int],
        option(
            "--batch",
            "-b",
            parse=integer("--batch", 1, 1 << 20),
            metavar="INTEGER",
            help="Concurrency per replica (decoding sequences); with --tp/--pp: evaluate that one configuration.",
        ),
    ] = None,
    chunk: Annotated[
        Optional[Any],
        option(
            "--chunk",
            parse=_chunk,
            metavar="TOKENS|off",
            help="Token budget per step (chunked prefill, vLLM's "
            "max_num_batched_tokens), or off: prompts run whole in steps of "
            "their own; default searched, 8K for one configuration.",
        ),
    ] = None,
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
    from llm_cost.analyses.serving import DEFAULT_CHUNK_TOKENS, Targets, Traffic, evaluate, plan
    from llm_cost.model.layout import Layout
    from llm_cost.perf.calibrated import prediction_model
    from llm_cost.perf.profile import default_profile, load_profile, profile_note
    from llm_cost.perf.ridge import default_compute_dtype
    from llm_cost.perf.timemodel import DEFAULT_NETWORK_GB_S
    from llm_cost.report import serve as view
    from llm_cost.specs.load import load_gpu, load_model

    weight_bits("bf16", weights_dtype, bits_per_weight, group_size)
    budget = None if chunk == NO_CHUNKING else chunk
    if budget is not None and batch is not None and batch >= budget:
        raise InputError(
            f"--batch {batch:,} leaves no prompt tokens in a step of --chunk {chunk:,}; give a larger --chunk"
        )
    layout = parse_layout(tp, pp, ep, None)
    g = load_gpu(gpu)
    if dtype is not None:
        g.peak_flops(dtype)
    chosen_profile = load_profile(profile) if profile is not None else default_profile(g.name)
    spec = load_model(model)
    bits = weight_bits(spec.torch_dtype, weights_dtype, bits_per_weight, group_size)
    compute = dtype or default_compute_dtype((weights_dtype or spec.torch_dtype).lower(), g)
    if dtype is None and compute.value not in g.dense_tflops:
        raise InputError(
            f"--gpu {gpu}: dense_tflops has no {compute.value} peak, the dtype {spec.name}'s weights run "
            f"at; give --dtype one of {', '.join(g.dense_tflops)}"
        )
    network = network_gb_s or DEFAULT_NETWORK_GB_S
    time_model = prediction_model(g.name, chosen_profile, network)
    notes = [profile_note(chosen_profile, g.name)] if chosen_profile is not None else []
    traffic, targets = Traffic(input_tokens, output_tokens, qps), Targets(ttft, tpot)
    common = dict(
        weight_bits=bits,
        kv_bits=kv_dtype.bits,
        compute_dtype=compute,
        usd_per_gpu_hour=usd_per_gpu_hour,
        policy=memory_policy(memory, gpu_memory_utilization, reserve_gb),
        network_gb_s=network,
        extra_notes=notes,
    )
    if layout is not None and batch is not None:
        if mode == ModeChoice.disaggregated:
            raise InputError(
                "--mode disaggregated: one configuration (--tp/--pp with --batch) is aggregated; leave "
                "out --batch to search disaggregated splits of that layout"
            )
        per_replica = layout.gpus
        if gpus is not None and gpus % per_replica:
            raise InputError(f"--gpus {gpus} is not a whole number of TP {layout.tp} x PP {layout.pp} replicas")
        if qps is not None:
            raise InputError(
                "--qps: one configuration (--tp/--pp with --batch) is evaluated saturated; leave out "
                "--qps, or --batch to let the plan size the deployment"
            )
        result = evaluate(
            spec,
            g,
            traffic,
            targets,
            time_model,
            layout,
            batch,
            chunk_tokens=DEFAULT_CHUNK_TOKENS if chunk is None else budget,
            replicas=(gpus or per_replica) // per_replica,
            **common,
        )
    else:
        modes = {
            ModeChoice.both: (ServingMode.AGGREGATED, ServingMode.DISAGGREGATED),
            ModeChoice.aggregated: (ServingMode.AGGREGATED,),
            ModeChoice.disaggregated: (ServingMode.DISAGGREGATED,),
        }[mode]
        search: dict = {}
        if layout is not None:
            search["layouts"] = [Layout(layout.tp, layout.pp, layout.ep, 1)]
        if batch is not None:
            search["concurrency"] = [batch]
        if chunk is not None:
            search["chunks"] = [budget]
        result = plan(spec, g, traffic, targets, time_model, gpus=gpus, modes=modes, **search, **common)
    if plot is not None:
        from llm_cost.report import plots

        plots.serve(result, spec.display_name, g.display_name, plot)
    if as_csv:
        emit_csv(
            result.frontier, [{"chosen": f == result.chosen, "misses": " ".join(f.violates)} for f in result.frontier]
        )
        return
    emit(result, as_json, view.render, spec.display_name, g.display_name)
