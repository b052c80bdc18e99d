"""The API's serving question: the plan that serves a traffic best under latency targets, or one
configuration evaluated (``llm-cost serve``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Optional

from llm_cost.api import checks, choices
from llm_cost.api.model import GpuLike, ModelLike, load_gpu, load_model
from llm_cost.core.choices import MemoryConvention, ServingMode
from llm_cost.core.errors import InputError

if TYPE_CHECKING:
    from llm_cost.analyses.serving import ServePlan
    from llm_cost.model.layout import Layout

__all__ = ["serve", "MAX_CHUNK_TOKENS", "MAX_CONCURRENCY"]

#: The largest token budget per step (``chunk_tokens``).
MAX_CHUNK_TOKENS = 1 << 20
#: The largest concurrency per replica.
MAX_CONCURRENCY = 1 << 20
#: Both serving modes, the default search.
BOTH_MODES = (ServingMode.AGGREGATED, ServingMode.DISAGGREGATED)


def serve(
    model: ModelLike,
    gpu: GpuLike = "h100",
    input_tokens: int = 2048,
    output_tokens: int = 256,
    *,
    ttft_s: Optional[float] = None,
    tpot_s: Optional[float] = None,
    qps: Optional[float] = None,
    gpus: Optional[int] = None,
    usd_per_gpu_hour: Optional[float] = None,
    modes: Sequence[Any] = BOTH_MODES,
    layout: Optional[Layout] = None,
    concurrency: Optional[int] = None,
    chunk_tokens: Optional[int] = None,
    chunked_prefill: bool = True,
    dtype: Any = None,
    weights_dtype: Any = None,
    bits_per_weight: Any = None,
    group_size: Any = None,
    kv_dtype: Any = None,
    profile: Any = None,
    memory: Any = MemoryConvention.PHYSICAL,
    gpu_memory_utilization: Any = None,
    reserve_bytes: Any = None,
    network_gb_s: Any = None,
) -> ServePlan:
    """The serving plan (``llm-cost serve``): searches TP/PP/EP layouts and replicas, concurrency,
    chunked-prefill budgets (vLLM's ``max_num_batched_tokens``) and prefill/decode splits in
    ``modes`` for the configuration meeting ``ttft_s`` and ``tpot_s`` (means) with the most output
    tokens/s per GPU, or, with ``qps``, the fewest GPUs (up to ``gpus``). Every step is timed from
    its operators by the GPU's calibrated profile (else the MFU/MBU estimate).
    ``layout`` narrows the search to that layout; ``concurrency`` and ``chunk_tokens`` to those
    values; ``chunked_prefill=False`` runs prompts whole in steps of their own. With ``layout`` and
    ``concurrency`` it evaluates that one configuration, saturated, at ``chunk_tokens`` (default
    8K). InputError naming the argument for anything out of range or contradictory."""
    from llm_cost.analyses.serving import MAX_PLAN_GPUS, Targets, Traffic

    traffic = Traffic(
        checks.count(input_tokens, "input_tokens"),
        checks.count(output_tokens, "output_tokens", 2),
        checks.optional(qps, checks.number, "qps", minimum=1e-3, maximum=1e6, open_min=False),
    )
    targets = Targets(
        checks.optional(ttft_s, checks.number, "ttft_s", maximum=86400),
        checks.optional(tpot_s, checks.number, "tpot_s", maximum=86400),
    )
    budget = checks.optional(gpus, checks.count, "gpus", 1, MAX_PLAN_GPUS)
    chunk = _chunk(chunk_tokens, chunked_prefill)
    batch = checks.optional(concurrency, checks.count, "concurrency", 1, MAX_CONCURRENCY)
    if chunk is not None and batch is not None and batch >= chunk:
        raise InputError(
            f"concurrency {batch:,} leaves no prompt tokens in a step of chunk_tokens {chunk:,}; give a larger "
            "chunk_tokens",
            fields=("concurrency", "chunk_tokens"),
        )
    spec, g = load_model(model), load_gpu(gpu)
    chosen = choices.profile_of(g, profile)
    network = choices.network_gb_s_of(network_gb_s)
    common = dict(
        weight_bits=choices.weight_bits(spec, weights_dtype, bits_per_weight, group_size),
        kv_bits=choices.kv_dtype_of(kv_dtype).bits,
        compute_dtype=choices.compute_dtype(spec, g, dtype, weights_dtype),
        usd_per_gpu_hour=checks.optional(
            usd_per_gpu_hour, checks.number, "usd_per_gpu_hour", maximum=1e6, open_min=False
        ),
        policy=choices.memory_policy(memory, gpu_memory_utilization, reserve_bytes),
        network_gb_s=network,
        extra_notes=_profile_notes(chosen, g.name),
    )
    time_model = choices.time_model(g, chosen, network)
    searched = _modes(modes)
    one = choices.layout_of(layout)
    if one is not None and batch is not None:
        return _one_configuration(
            spec, g, traffic, targets, time_model, one, batch, chunk, chunked_prefill, budget, searched, common
        )
    from llm_cost.analyses.serving import plan
    from llm_cost.model.layout import Layout

    search: dict[str, Any] = {}
    if one is not None:
        search["layouts"] = [Layout(one.tp, one.pp, one.ep, 1)]
    if batch is not None:
        search["concurrency"] = [batch]
    if chunk is not None or not chunked_prefill:
        search["chunks"] = [chunk]
    return plan(spec, g, traffic, targets, time_model, gpus=budget, modes=searched, **search, **common)


def _one_configuration(
    spec: Any,
    g: Any,
    traffic: Any,
    targets: Any,
    time_model: Any,
    layout: Any,
    batch: int,
    chunk: Optional[int],
    chunked_prefill: bool,
    budget: Optional[int],
    modes: tuple[ServingMode, ...],
    common: dict[str, Any],
) -> ServePlan:
    """One configuration (a layout and a concurrency), evaluated saturated."""
    from llm_cost.analyses.serving import DEFAULT_CHUNK_TOKENS, evaluate

    if ServingMode.AGGREGATED not in modes:
        raise InputError(
            "modes: disaggregated alone: one configuration (layout with concurrency) is aggregated; leave out "
            "concurrency to search disaggregated splits of that layout",
            fields=("modes", "layout", "concurrency"),
        )
    if budget is not None and budget % layout.gpus:
        raise InputError(
            f"gpus {budget} is not a whole number of TP {layout.tp} x PP {layout.pp} replicas", fields=("gpus",)
        )
    if traffic.qps is not None:
        raise InputError(
            "qps: one configuration (layout with concurrency) is evaluated saturated; leave out qps, or "
            "concurrency to let the plan size the deployment",
            fields=("qps", "layout", "concurrency"),
        )
    tokens = chunk if chunk is not None or not chunked_prefill else DEFAULT_CHUNK_TOKENS
    replicas = (budget or layout.gpus) // layout.gpus
    return evaluate(
        spec, g, traffic, targets, time_model, layout, batch, chunk_tokens=tokens, replicas=replicas, **common
    )


def _chunk(chunk_tokens: Any, chunked_prefill: Any) -> Optional[int]:
    """The token budget per step, or None (searched, or no chunking)."""
    if not isinstance(chunked_prefill, bool):
        raise InputError(f"chunked_prefill: {chunked_prefill!r} must be True or False", fields=("chunked_prefill",))
    if not chunked_prefill and chunk_tokens is not None:
        raise InputError(
            "chunk_tokens: give a budget or chunked_prefill=False, not both", fields=("chunk_tokens", "chunked_prefill")
        )
    return checks.optional(chunk_tokens, checks.count, "chunk_tokens", 2, MAX_CHUNK_TOKENS)


def _modes(modes: Any) -> tuple[ServingMode, ...]:
    """The serving modes to search, checked."""
    if isinstance(modes, (str, ServingMode)):
        modes = [modes]
    if not isinstance(modes, Sequence) or not modes:
        raise InputError(f"modes: {modes!r} must list aggregated and/or disaggregated", fields=("modes",))
    return tuple(dict.fromkeys(checks.choice(m, ServingMode, "modes") for m in modes))


def _profile_notes(profile: Any, gpu_name: str) -> list[Any]:
    """The note saying what a prediction under ``profile`` rests on."""
    from llm_cost.perf.profile import profile_note

    return [profile_note(profile, gpu_name)] if profile is not None else []
