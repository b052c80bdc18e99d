"""The API's serving question (``llm-cost serve``): one configuration simulated under a traffic,
the plan that serves it best under latency targets (screened analytically, ranked by
simulation), or GPUs side by side (:func:`serve_compare`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Optional, cast

from llm_cost.api import checks, choices, traffic
from llm_cost.api.model import GpuLike, ModelLike, load_gpu, load_model
from llm_cost.api.requests import (
    BOTH_MODES,
    DtypeArg,
    EngineArg,
    KvDtypeArg,
    LengthsArg,
    MemoryArg,
    ModesArg,
    PriceArg,
    ProfileArg,
    RouterArg,
    ServeRequest,
    TargetArg,
    TraceArg,
    WeightsDtypeArg,
    WorkloadArg,
)
from llm_cost.core.choices import MemoryConvention, Router, ServingMode
from llm_cost.core.errors import InputError
from llm_cost.core.limits import MAX_CHUNK_TOKENS, MAX_COMPARED, MAX_CONCURRENCY, MAX_REQUESTS, MAX_SEED
from llm_cost.core.types import Engine, ServingEngine

if TYPE_CHECKING:
    from fractions import Fraction

    from llm_cost.analyses.serving import ServePlan
    from llm_cost.analyses.serving_runs import ServingBand
    from llm_cost.analyses.simulated_plan import ServeComparison, SimulatedPlan
    from llm_cost.analyses.simulated_serving import ServeRun
    from llm_cost.api.requests import DtypeArg, EngineArg, KvDtypeArg, MemoryArg, ProfileArg, WeightsDtypeArg
    from llm_cost.core.notes import Note
    from llm_cost.model.layout import Layout
    from llm_cost.perf.profile import Profile
    from llm_cost.perf.timemodel import TimeModel
    from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = ["serve", "serve_request", "serve_compare", "compare_request", "MAX_CHUNK_TOKENS", "MAX_CONCURRENCY"]


def serve(
    model: ModelLike,
    gpu: GpuLike = "h100",
    input_tokens: Optional[LengthsArg] = None,
    output_tokens: Optional[LengthsArg] = None,
    *,
    ttft_s: Optional[TargetArg] = None,
    tpot_s: Optional[TargetArg] = None,
    itl_s: Optional[TargetArg] = None,
    e2e_s: Optional[TargetArg] = None,
    qps: Optional[float] = None,
    gpus: Optional[int] = None,
    usd_per_gpu_hour: Optional[PriceArg] = None,
    modes: ModesArg = BOTH_MODES,
    layout: Optional[Layout] = None,
    concurrency: Optional[int] = None,
    chunk_tokens: Optional[int] = None,
    chunked_prefill: bool = True,
    workload: Optional[WorkloadArg] = None,
    trace: Optional[TraceArg] = None,
    prefix_tokens: Optional[int] = None,
    prefix_groups: int = 1,
    users_per_prefix: int = 1,
    requests: Optional[int] = None,
    engine: Optional[EngineArg] = None,
    max_num_seqs: Optional[int] = None,
    prefix_caching: bool = True,
    max_model_len: Optional[int] = None,
    seed: int = 0,
    router: Optional[RouterArg] = None,
    analytic: bool = False,
    dtype: Optional[DtypeArg] = None,
    weights_dtype: Optional[WeightsDtypeArg] = None,
    bits_per_weight: Optional[float] = None,
    group_size: Optional[int] = None,
    kv_dtype: Optional[KvDtypeArg] = None,
    quantize_embeddings: bool = False,
    profile: Optional[ProfileArg] = None,
    memory: MemoryArg = MemoryConvention.PHYSICAL,
    gpu_memory_utilization: Optional[float] = None,
    reserve_bytes: Optional[float] = None,
    network_gb_s: Optional[float] = None,
    emit: Optional[EngineArg] = None,
) -> ServePlan | SimulatedPlan | ServeRun:
    """The serving answer (``llm-cost serve``), in one of three forms:

    - **one configuration simulated** (``layout`` with a rate ``qps``, a ``workload`` or a
      ``trace``, no ``concurrency``): a :class:`~llm_cost.analyses.simulated_serving.ServeRun`,
      ``gpus // layout.gpus`` replicas (default one) under ``engine``'s scheduler, with means,
      P50/P90/P99 of TTFT, TPOT, ITL and E2E, goodput, occupancy, KV use and preemptions;
    - **the plan** (otherwise): the analytic search over TP/PP/EP layouts, replicas, concurrency
      and chunked-prefill budgets screens the configurations, the promising aggregated ones are
      simulated and ranked on their simulated distributions against the targets (a
      :class:`~llm_cost.analyses.simulated_plan.SimulatedPlan`: with ``qps`` the fewest GPUs, up
      to ``gpus``, else the most output tokens/s per GPU); ``modes`` disaggregated alone stays
      analytic (a :class:`~llm_cost.analyses.serving.ServePlan`), as does ``analytic=True``
      (the analytic search alone: means from its queueing formulas, no simulation);
    - **one configuration, saturated, analytic** (``layout`` and ``concurrency``, no rate): a
      ``ServePlan`` whose frontier is that one row, at ``chunk_tokens`` (default 8K).

    Targets ``ttft_s``, ``tpot_s``, ``itl_s``, ``e2e_s``: seconds (the mean), a
    :class:`~llm_cost.simulate.Target` (``Target(Statistic.P99, 2.0)``) or text ``"p99:2s"``.
    Traffic: ``input_tokens`` / ``output_tokens`` (counts, default 2,048 / 256, or distributions
    such as ``"lognormal:mean=800,sd=400"``), Poisson arrivals at ``qps``, ``prefix_tokens`` of
    each prompt one of ``prefix_groups`` shared prompts used by ``users_per_prefix`` users each; or a
    ``workload`` (YAML file, preset name or Workload) or a ``trace`` (JSONL/CSV file or Trace);
    ``requests`` per simulation (default 1,000; the plan: 400 per replica and candidate). Engine:
    ``engine`` (``vllm``, ``sglang``, ``trtllm``; default the given profile's engine, else vLLM;
    one that contradicts the given profile is refused: :func:`llm_cost.api.choices.serving_engine_of`)
    with its server defaults for the GPU, ``max_num_seqs``,
    ``chunk_tokens`` (``max_num_batched_tokens``), ``chunked_prefill``, ``prefix_caching``,
    ``max_model_len`` (default the model's), ``gpu_memory_utilization``. Steps are timed, in the
    simulation and the analytic forms alike, by ``profile`` if given, else by the time model of the
    GPU under ``engine`` (:func:`llm_cost.api.choices.time_model_of`, the one rule). Error band: the
    chosen plan (and one configuration simulated) is re-simulated with every step's time at the
    fast and the slow end of its band: on vLLM's time model (no ``profile``, engine vLLM), the
    prediction's p10/p90 mean-ITL spread on the 18 measured vLLM serving runs
    (:func:`llm_cost.api.choices.serving_band_of`); otherwise the profile's band
    (:func:`llm_cost.analyses.simulated_serving.with_band`;
    ``ttft_low_s`` / ``ttft_high_s`` and the like beside each figure, ``p99_low_s`` / ``p99_high_s``
    in ``percentiles``, ``violates_at_slow_end``); the analytic forms scale linearly
    (:func:`llm_cost.analyses.serving.band.with_analytic_band`). Deterministic for ``seed``. ``emit`` (``vllm``, ``sglang``, ``trtllm``):
    the result's ``launch`` holds the engine command that runs the chosen configuration
    (:func:`llm_cost.analyses.launch.launch_command`; an aggregated plan). InputError naming the
    argument for anything out of range, contradictory, or for targets nothing meets (with the
    nearest reached)."""
    return serve_request(ServeRequest(**locals()))


def serve_request(request: ServeRequest) -> ServePlan | SimulatedPlan | ServeRun:
    """The answer of :func:`serve` to ``request`` (its arguments as one record, as the command line
    builds it from its flags)."""
    r = checks.record(request, ServeRequest, "request")
    r = dataclasses.replace(r, engine=choices.serving_engine_of(r.engine, r.profile))
    engine_for_emit = _emit_engine(r.emit)
    if engine_for_emit is not None and not isinstance(r.gpu, (list, tuple)):  # a comparison emits nothing
        choices.check_engine_runs_on(engine_for_emit, load_gpu(cast("GpuLike", r.gpu)), "emit")
    result = _serve(r, launch=engine_for_emit is not None)
    if engine_for_emit is None:
        return result
    return _with_launch(result, engine_for_emit, r)


def _serve(r: ServeRequest, launch: bool) -> ServePlan | SimulatedPlan | ServeRun:
    """:func:`serve_request` without ``emit`` (``launch``: whether it was given)."""
    spec, g = load_model(r.model), load_gpu(cast("GpuLike", r.gpu))
    goals = traffic.targets_of(ttft_s=r.ttft_s, tpot_s=r.tpot_s, itl_s=r.itl_s, e2e_s=r.e2e_s)
    load, has_arrivals = traffic.traffic_of(
        input_tokens=r.input_tokens,
        output_tokens=r.output_tokens,
        qps=r.qps,
        workload=r.workload,
        trace=r.trace,
        prefix_tokens=r.prefix_tokens,
        prefix_groups=r.prefix_groups,
        users_per_prefix=r.users_per_prefix,
        requests=r.requests,
    )
    traffic.check_token_gaps(load, goals)
    searched = _modes(r.modes)
    one = choices.layout_of(r.layout)
    from llm_cost.analyses.serving.moe_layouts import check_serving_layout

    check_serving_layout(spec, one, ServingEngine(traffic.serving_engine(r.engine).value))
    options = _plan_options(r)
    checks.flag(r.analytic, "analytic")
    form = _analytic_form(r.analytic, one is not None and r.concurrency is not None and not has_arrivals, searched)
    if form is not None:
        _unused_by_analytic({**r.given(), "searched": searched}, form, launch)
        return _analytic(
            spec, g, load, goals, r.gpus, searched, one, r.concurrency, r.chunk_tokens, r.chunked_prefill,
            r.profile, options, traffic.serving_engine(r.engine) == Engine.TRTLLM,
        )  # fmt: skip
    if r.concurrency is not None and has_arrivals:
        raise InputError(
            "concurrency: a simulated configuration's concurrency is the engine's max_num_seqs; give max_num_seqs",
            fields=("concurrency", "max_num_seqs"),
        )
    if r.concurrency is not None:  # a plan without a layout: it searches the concurrency itself (a second
        checks.count(r.concurrency, "concurrency", 1, MAX_CONCURRENCY)  # attacker: 'x' and 8 were dropped unsaid)
        raise InputError(
            "concurrency: a plan searches it itself; give a layout with it for one configuration, or max_num_seqs "
            "to cap the search",
            fields=("concurrency", "layout", "max_num_seqs"),
        )
    own_traffic = (
        r.trace is not None
        or (r.workload is not None and not isinstance(r.workload, str))
        or traffic.is_file(r.workload)
    )
    return _simulated(
        spec, g, load, has_arrivals, goals, r.gpus, searched, one, r.profile, options, _engine_options(r),
        checks.count(r.seed, "seed", 0, MAX_SEED), checks.optional(r.requests, checks.count, "requests", 1, MAX_REQUESTS),
        own_traffic,
        checks.optional(r.router, checks.choice, Router, "router"),
    )  # fmt: skip


def _check_plan_steps(
    spec: Any, g: Any, load: Any, has_arrivals: bool, requests: Any, time_model: Any, formats: dict[str, Any]
) -> None:
    """InputError naming requests (or trace) when a plan of the user's own request count (given, or a
    trace's rows; not a count the plan sizes) would decode them nearly alone for more engine steps
    than one simulation takes (:func:`~llm_cost.analyses.simulated_serving.check_decode_steps`, the
    bound one configuration meets): an attacker's 20,000 requests at 0.01/s took 30 s to plan on four
    GPUs and were refused in 0.14 s on one configuration. Timed on one GPU: at such rates each
    request decodes alone whatever the layout."""
    from llm_cost.analyses.simulated_serving import check_decode_steps
    from llm_cost.model.layout import ONE_GPU
    from llm_cost.simulate import Trace
    from llm_cost.simulate.steptime import StepTimer

    if has_arrivals and (requests is not None or isinstance(load, Trace)):
        check_decode_steps(load, StepTimer(spec, g, time_model, ONE_GPU, **formats))


def _check_plan_trace(load: Any) -> None:
    """InputError naming trace when a plan would size GPUs for a trace whose arrivals span less than
    :data:`~llm_cost.core.limits.MIN_PLAN_TRACE_SPAN_S`: a burst has no rate (n / span of two rows
    10 µs apart is 100,000 requests/s; rows all at one instant have none, and were planned as a
    closed loop, the trace ignored)."""
    from llm_cost.core.limits import MIN_PLAN_TRACE_SPAN_S
    from llm_cost.core.units import fmt_seconds
    from llm_cost.simulate import Trace

    if not isinstance(load, Trace):
        return
    span = load.span_s
    if span < MIN_PLAN_TRACE_SPAN_S:
        raise InputError(
            f"trace: its {len(load.rows):,} requests arrive within {fmt_seconds(span)}, a burst with no rate to size "
            f"GPUs for; give a trace spanning at least {MIN_PLAN_TRACE_SPAN_S:g} s, or a layout to replay it on",
            fields=("trace", "layout"),
        )


def _plan_options(r: ServeRequest) -> dict[str, Any]:
    """The arguments of ``r`` every form of a plan reads: its engine (the scheduler simulated, and
    the engine whose time profile is chosen), formats, memory, network and price."""
    return dict(
        engine=r.engine,
        dtype=r.dtype,
        weights_dtype=r.weights_dtype,
        bits_per_weight=r.bits_per_weight,
        group_size=r.group_size,
        kv_dtype=r.kv_dtype,
        quantize_embeddings=r.quantize_embeddings,
        memory=r.memory,
        gpu_memory_utilization=r.gpu_memory_utilization,
        reserve_bytes=r.reserve_bytes,
        network_gb_s=r.network_gb_s,
        usd_per_gpu_hour=r.usd_per_gpu_hour,
    )


def _engine_options(r: ServeRequest) -> dict[str, Any]:
    """The engine settings of ``r`` a simulation runs under (:func:`~llm_cost.api.traffic.engine_of`)."""
    return dict(
        engine=r.engine,
        max_num_seqs=r.max_num_seqs,
        max_num_batched_tokens=_chunk(r.chunk_tokens, r.chunked_prefill),
        chunked_prefill=r.chunked_prefill,
        prefix_caching=r.prefix_caching,
        max_model_len=r.max_model_len,
    )


#: The arguments only a simulation uses (its traffic's shared prefix, its engine's settings, its
#: requests and seed): the analytic forms of :func:`serve` refuse them.
SIMULATION_ONLY = (
    "seed",
    "requests",
    "max_num_seqs",
    "max_model_len",
    "prefix_caching",
    "prefix_tokens",
    "prefix_groups",
    "users_per_prefix",
)


def _analytic_form(analytic: bool, saturated: bool, searched: tuple[ServingMode, ...]) -> Optional[str]:
    """Which analytic form a :func:`serve` call takes (None: it simulates): ``analytic``, one
    configuration saturated (a layout and a concurrency, no rate), or a disaggregated search."""
    if analytic:
        return "the queueing formulas alone (analytic)"
    if saturated:
        return "one configuration saturated (a layout with concurrency, no qps)"
    if searched == (ServingMode.DISAGGREGATED,):
        return "the disaggregated search (modes disaggregated)"
    return None


def _unused_by_analytic(given: dict[str, Any], form: str, launch: bool) -> None:
    """InputError for the arguments :func:`serve`'s analytic ``form`` would ignore
    (:func:`~llm_cost.api.checks.unused`): a simulation's (max_model_len stays with ``launch``:
    the emitted command takes it), and a disaggregated search's chunk (its prefill runs in a pool
    of its own; aggregated serving takes the chunk)."""
    names = tuple(n for n in SIMULATION_ONLY if not (launch and n == "max_model_len"))
    mentions = ("analytic", "concurrency", "qps", "modes")
    simulation = "a simulation (a layout under qps, workload or trace; or the plan without analytic)"
    checks.unused(serve, given, names, form, simulation, (*mentions, "workload", "trace"))
    if given["searched"] == (ServingMode.DISAGGREGATED,):
        chunk = ("chunk_tokens", "chunked_prefill")
        checks.unused(serve, given, chunk, form, "aggregated serving (chunked prefill)", mentions)


def _emit_engine(emit: Any) -> Any:
    """The engine whose launch command ``emit`` asks for (None: none)."""
    from llm_cost.core.types import ServingEngine

    return checks.optional(emit, checks.choice, ServingEngine, "emit")


def _with_launch(result: Any, engine: ServingEngine, r: ServeRequest) -> Any:
    """``result`` with its ``launch``: the command of its chosen configuration on ``engine``
    (:func:`llm_cost.analyses.launch.launch_command`), under the formats and memory of ``r``.
    InputError for a disaggregated plan (two pools, no one command)."""
    from llm_cost.analyses.capacity import capacity_bytes
    from llm_cost.analyses.launch import LaunchPlan, launch_command
    from llm_cost.analyses.serving.replicas import node_gpus
    from llm_cost.analyses.simulated_plan import SimulatedPlan
    from llm_cost.core.notes import note
    from llm_cost.model.layout import per_gpu

    spec, g = load_model(r.model), load_gpu(cast("GpuLike", r.gpu))
    run = result.chosen if isinstance(result, SimulatedPlan) else result
    weight_bits, _ = served_weight_bits(spec, r.weights_dtype, r.bits_per_weight, r.group_size, r.quantize_embeddings)
    kv_bits = choices.kv_dtype_of(r.kv_dtype).bits
    policy = choices.memory_policy(r.memory, r.gpu_memory_utilization, r.reserve_bytes)
    length = choices.max_model_len_of(spec, r.max_model_len)
    layout, replicas, seqs, tokens, chunked, cached = _launched_settings(run, length)
    kv_tokens = _sequence_kv_tokens(run, spec, g, layout, seqs, tokens, policy, weight_bits, kv_bits)
    notes: list[Note] = []
    planned = getattr(run, "engine", None)
    if planned is not None and str(planned) != str(engine):
        notes.append(note("launch.other_engine", planned=str(planned), emitted=str(engine)))
    if length > kv_tokens:  # vLLM refuses to start (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory)
        notes.append(note("launch.max_model_len_capped", asked=length, tokens=kv_tokens))
        length = kv_tokens
    model_id, quantization = _launched_weights(spec, r, weight_bits, notes)
    plan = LaunchPlan(
        model_id, layout, replicas, seqs, tokens, chunked, cached, length, policy.utilization,
        capacity_bytes(g, policy.convention), per_gpu(spec, layout, weight_bits, kv_bits).max_weight_bytes, kv_bits,
        quantization, node_gpus(g), spec.model_type, str(choices.kv_dtype_of(r.kv_dtype)), spec.num_hidden_layers,
    )  # fmt: skip
    launch = launch_command(plan, engine)
    return dataclasses.replace(result, launch=dataclasses.replace(launch, conventions=[*launch.conventions, *notes]))


def _launched_settings(run: Any, length: int) -> tuple[Any, int, int, int, bool, bool]:
    """(layout, replicas, max_num_seqs, max_num_batched_tokens, chunked prefill, prefix caching) a
    launch runs: a simulated run's own, or the chosen analytic configuration's (its concurrency and
    chunk; without a chunk vLLM's budget ``max(length, 2048)``). InputError for a disaggregated plan."""
    from llm_cost.analyses.simulated_serving import ServeRun

    if isinstance(run, ServeRun):
        return (
            run.layout, run.replicas, run.max_num_seqs, run.max_num_batched_tokens, run.chunked_prefill,
            run.prefix_caching,
        )  # fmt: skip
    c = run.chosen
    if c.prefill_layout is not None:
        raise InputError(
            "emit: the chosen plan is disaggregated (a prefill and a decode pool), which no one command "
            "launches; search aggregated serving alone (modes aggregated) to emit a command",
            fields=("emit", "modes"),
        )
    chunked = c.chunk_tokens is not None
    return c.layout, c.replicas, c.concurrency, c.chunk_tokens if chunked else max(length, 2048), chunked, True


def _sequence_kv_tokens(
    run: Any, spec: ModelSpec, g: HardwareSpec, layout: Any, seqs: int, tokens: int, policy: Any, weight_bits: Any,
    kv_bits: int,
) -> int:  # fmt: skip
    """The KV-cache tokens one sequence can hold: the cache less its fixed state (a hybrid model),
    as the simulated run found it or as a replica's pool holds it."""
    from llm_cost.analyses.serving_runs import replica_kv_pool
    from llm_cost.analyses.simulated_serving import ServeRun
    from llm_cost.simulate import EngineConfig

    if isinstance(run, ServeRun):
        sim = run.simulation
        return run.kv_capacity_tokens - sim.state_blocks_per_sequence * sim.block_tokens
    pool = replica_kv_pool(spec, g, layout, EngineConfig(max_num_seqs=seqs, max_num_batched_tokens=tokens),
                           policy, weight_bits, kv_bits)  # fmt: skip
    return pool.tokens - pool.state_blocks * pool.block_tokens


#: The catalog's name suffixes of a checkpoint stored in a weight format (``qwen3-235b-a22b-fp8``:
#: Qwen's FP8 blocks; ``-nvfp4``: NVIDIA's ModelOpt NVFP4), for a launch of a plan priced in it.
_SIBLING_SUFFIXES = {"fp8_block": ("fp8",), "nvfp4": ("nvfp4",), "mxfp4": ("mxfp4",)}


def _quantized_sibling(spec: ModelSpec, r: ServeRequest) -> Optional[ModelSpec]:
    """The catalog's checkpoint of ``spec`` stored in ``r``'s weights format (its name with the
    format's suffix, its own quantization that format, its shapes the same), whose Hugging Face repo
    a launch can serve as printed: a MoE user emitted a plan priced at FP8 blocks and got the BF16
    repo's id with a note. None when the catalog holds none."""
    fmt = choices.weights_dtype_of(r.weights_dtype)
    for suffix in _SIBLING_SUFFIXES.get(str(fmt), ()) if fmt is not None else ():
        try:
            sibling = load_model(f"{spec.name}-{suffix}")
        except InputError:  # no such checkpoint in the catalog
            continue
        q = sibling.quantization
        same_shape = (sibling.hidden_size, sibling.num_hidden_layers, sibling.vocab_size) == (
            spec.hidden_size, spec.num_hidden_layers, spec.vocab_size,
        )  # fmt: skip
        if q is not None and str(q.weights_format) == str(fmt) and same_shape:
            return sibling
    return None


def _launched_weights(
    spec: ModelSpec, r: ServeRequest, weight_bits: Any, notes: list[Note]
) -> tuple[str, Optional[str]]:
    """(the model id a launch serves, the engine's ``--quantization`` or None) for the weights of
    ``r``, with a note in ``notes`` where the command cannot realise them by itself:

    * no weights format asked, or the one the checkpoint is stored in (DeepSeek-V3's FP8 blocks,
      gpt-oss's MXFP4): the checkpoint as stored, no flag (and a note where the checkpoint keeps
      groups in 16 bits that the plan priced in the format);
    * a format the catalog holds a checkpoint of the same model in (:func:`_quantized_sibling`):
      that checkpoint, whose config carries its format (a MoE user's FP8 plan printed the BF16 repo);
    * FP8 of a 16-bit checkpoint: ``--quantization fp8``, the engines' online FP8 (per-tensor);
    * otherwise the checkpoint as stored, and a note naming the format to find a checkpoint in (an
      engine refuses ``--quantization`` that disagrees with a quantized checkpoint's config: an
      attacker's gpt-oss-120b at FP8 printed ``--quantization fp8`` over its MXFP4 checkpoint)."""
    from llm_cost.core.notes import note
    from llm_cost.core.types import WeightFormat
    from llm_cost.specs.hub import hf_repo_id

    fmt = choices.weights_dtype_of(r.weights_dtype)
    stored = spec.quantization.weights_format if spec.quantization is not None else None
    asked = fmt is not None or r.bits_per_weight is not None
    sibling = _quantized_sibling(spec, r) if asked and str(fmt) != str(stored) else None
    model_id = hf_repo_id((sibling or spec).source.url)
    if model_id is None:
        model_id = spec.name
        notes.append(note("launch.model_id", name=spec.name))
    if not asked:
        return model_id, None
    if fmt is not None and str(fmt) == str(stored):
        q = spec.quantization
        if q is not None and q.kept:  # an attacker: gpt-oss-120b priced at 63.85 GB, its checkpoint 65.25 GB
            notes.append(note("launch.checkpoint_keeps", kept=", ".join(q.kept), dtype=q.kept_dtype, format=str(fmt)))
        return model_id, None
    if sibling is not None:
        q = sibling.quantization
        kept = f"{', '.join(q.kept)} in {q.kept_dtype}" if q is not None and q.kept else ""
        notes.append(note("launch.quantized_sibling", repo=model_id, name=sibling.name, model=spec.name, kept=kept))
        return model_id, None
    if fmt == WeightFormat.FP8 and stored is None:
        return model_id, "fp8"
    notes.append(
        note(
            "launch.checkpoint_quantized", bits=float(weight_bits), format=str(fmt) if fmt is not None else None,
            repo=model_id, stored=str(stored) if stored is not None else str(spec.torch_dtype),
        )
    )  # fmt: skip
    return model_id, None


def served_weight_bits(
    spec: ModelSpec,
    weights_dtype: Optional[WeightsDtypeArg],
    bits_per_weight: Optional[float],
    group_size: Optional[int],
    quantize_embeddings: bool = False,
) -> tuple[int | Fraction, list[Note]]:
    """Bits per weight a server holds (:func:`llm_cost.api.choices.weight_bits`) and the note that
    says why when it is not the checkpoint's: a checkpoint stored in float32 (Gemma-2-9B's
    ``torch_dtype: float32``) is served at 16 bits (bf16) unless ``weights_dtype`` asks for fp32, as
    servers load it (vLLM's ``dtype="auto"`` runs float32 checkpoints in 16 bits, ``_resolve_auto_dtype``
    in ``vllm/config/model.py``; SGLang and TensorRT-LLM likewise); a ``quantization_config`` not
    modelled is said (:func:`llm_cost.api.choices.unread_quantization_notes`)."""
    from llm_cost.core.notes import note
    from llm_cost.core.types import Dtype

    if (
        weights_dtype is None
        and bits_per_weight is None
        and spec.quantization is None
        and spec.torch_dtype == Dtype.FP32.value
    ):
        return 16, [note("serve.fp32_checkpoint", model=spec.name)]
    bits = choices.weight_bits(
        spec, weights_dtype, bits_per_weight, group_size, quantize_embeddings=quantize_embeddings
    )
    return bits, choices.unread_quantization_notes(spec, weights_dtype, bits_per_weight)


def _one_price(price: Any) -> Any:
    """The price of a plan of one GPU: a list of prices (one per GPU of a comparison) holds one."""
    if not isinstance(price, (list, tuple)):
        return price
    if len(price) != 1:
        raise InputError(
            f"usd_per_gpu_hour: {len(price)} prices for 1 GPU: give one price per gpu",
            fields=("usd_per_gpu_hour", "gpu"),
        )
    return price[0]


def _common(spec: Any, g: Any, chosen: Any, options: dict[str, Any]) -> dict[str, Any]:
    """The formats, price, memory policy and network of a plan, resolved."""
    bits, bits_notes = served_weight_bits(
        spec,
        options["weights_dtype"],
        options["bits_per_weight"],
        options["group_size"],
        options["quantize_embeddings"],
    )
    policy = choices.memory_policy(options["memory"], options["gpu_memory_utilization"], options["reserve_bytes"])
    choices.check_reserve(g, policy, {n for n in ("reserve_bytes", "gpu_memory_utilization") if options[n] is not None})
    return dict(
        weight_bits=bits,
        kv_bits=choices.kv_dtype_of(options["kv_dtype"]).bits,
        compute_dtype=choices.compute_dtype(spec, g, options["dtype"], options["weights_dtype"]),
        usd_per_gpu_hour=checks.optional(_one_price(options["usd_per_gpu_hour"]), checks.price, "usd_per_gpu_hour"),
        policy=policy,
        network_gb_s=choices.network_gb_s_of(options["network_gb_s"]),
        extra_notes=[*_profile_notes(chosen, g.name), *bits_notes],
    )


def _screen_traffic(
    load: Any, prefix_caching: bool = True, requests: Optional[int] = None, own_traffic: bool = False
) -> Any:
    """The analytic screen's fixed lengths and rate: the traffic's means; with ``prefix_caching``,
    the prompt tokens the prefix cache is expected to hold over a run of ``requests``
    (:func:`llm_cost.simulate.workload.expected_cached_tokens`), which prefill does not compute.
    The rate's source: the user's own traffic (``own_traffic``: a workload or a trace) names its
    file, traffic of our making ``qps``."""
    from llm_cost.analyses.serving import Traffic
    from llm_cost.analyses.simulated_serving import offered_rps
    from llm_cost.simulate import Trace
    from llm_cost.simulate.workload import drawn_mean, expected_cached_tokens

    if isinstance(load, Trace):
        rows = load.rows
        mean_in = sum(r.input_tokens for r in rows) / len(rows)
        mean_out = sum(r.output_tokens for r in rows) / len(rows)
    else:
        mean_in, mean_out = drawn_mean(load.input_tokens), drawn_mean(load.output_tokens)
    rate = offered_rps(load)
    prompt = checks.count(max(1, round(mean_in)), "input_tokens")
    cached = round(expected_cached_tokens(load, requests)) if prefix_caching else 0
    source = "trace" if isinstance(load, Trace) else "workload" if own_traffic else "qps"
    qps = None if rate is None else max(rate, 1e-3)
    return Traffic(prompt, max(1, round(mean_out)), qps, min(cached, prompt - 1), source)


def _mean_targets(goals: dict[str, Any]) -> Any:
    from llm_cost.analyses.serving import Targets

    return Targets(
        goals["ttft_s"].seconds if "ttft_s" in goals else None,
        goals["tpot_s"].seconds if "tpot_s" in goals else None,
    )


def _analytic_screen(spec: Any, load: Any) -> Any:
    """:func:`_screen_traffic` of an analytic form; InputError for requests longer than the model's
    context, which no engine admits (the simulated plan refuses them too: an attacker's analytic plan
    of 2,048 + 100,000-token requests on Llama-3-8B's 8,192)."""
    from llm_cost.analyses.serving.search import longer_than_context

    screen = _screen_traffic(load)
    if screen.input_tokens + screen.output_tokens > spec.max_position_embeddings:
        raise longer_than_context(screen.input_tokens, screen.output_tokens, spec.max_position_embeddings)
    return screen


def _check_analytic_targets(goals: dict[str, Any], searched: tuple[ServingMode, ...]) -> None:
    """InputError naming a target the analytic forms do not bound (they bound TTFT and TPOT), with
    what would simulate it: leaving out analytic, or for the disaggregated search, which has no
    simulated form, searching aggregated serving too (an attacker was told to leave out an analytic
    never given)."""
    extra = [m for m in goals if m not in ("ttft_s", "tpot_s")]
    if extra and searched == (ServingMode.DISAGGREGATED,):
        raise InputError(
            f"{extra[0]}: the disaggregated search is analytic (the simulator runs aggregated replicas) and bounds "
            "TTFT and TPOT only; search aggregated serving too (modes) to simulate",
            fields=(extra[0], "modes"),
        )
    if extra:
        raise InputError(
            f"{extra[0]}: the analytic planner bounds TTFT and TPOT only; leave out analytic to simulate",
            fields=(extra[0], "analytic"),
        )


def _analytic(
    spec: Any,
    g: Any,
    load: Any,
    goals: dict[str, Any],
    gpus: Any,
    searched: tuple[ServingMode, ...],
    one: Any,
    concurrency: Any,
    chunk_tokens: Any,
    chunked_prefill: Any,
    profile: Any,
    options: dict[str, Any],
    reserve_full: bool = False,
) -> ServePlan:
    """The analytic forms: one saturated configuration, or a disaggregated-only search (its
    targets read as bounds on the means); ``reserve_full`` (TensorRT-LLM) counts each sequence's
    KV cache at its whole length."""
    from llm_cost.analyses.serving import MAX_PLAN_GPUS, plan
    from llm_cost.analyses.serving.moe_layouts import ATTENTION_DP_ENGINES

    screen = _analytic_screen(spec, load)
    _check_fixed_lengths(load)
    _check_analytic_targets(goals, searched)
    targets = _mean_targets(goals)
    budget = checks.optional(gpus, checks.count, "gpus", 1, MAX_PLAN_GPUS)
    chunk = _chunk(chunk_tokens, chunked_prefill)
    batch = checks.optional(concurrency, checks.count, "concurrency", 1, MAX_CONCURRENCY)
    if chunk is not None and batch is not None and batch >= chunk:
        raise InputError(
            f"concurrency {batch:,} leaves no prompt tokens in a step of chunk_tokens {chunk:,}; give a larger "
            "chunk_tokens",
            fields=("concurrency", "chunk_tokens"),
        )
    network = choices.network_gb_s_of(options["network_gb_s"])
    chosen, time_model, _ = serve_time_model(g, profile, options["engine"], network, simulated=False)
    common = _common(spec, g, chosen, options)
    if any(t.statistic.value != "mean" for t in goals.values()):
        from llm_cost.core.notes import note

        alone = searched == (ServingMode.DISAGGREGATED,)
        asked = {m: t.statistic.value for m, t in goals.items() if t.statistic.value != "mean"}  # for the heading
        common["extra_notes"] = [
            *common["extra_notes"],
            note("serve.percentile_screen", disaggregated=alone, asked=asked),
        ]
    if one is not None and batch is not None:
        result = _one_configuration(
            spec, g, screen, targets, time_model, one, batch, chunk, chunked_prefill, budget, searched, common,
            reserve_full,
        )  # fmt: skip
    else:
        search = _narrowed(one, batch, chunk, chunked_prefill)

        def planned(cap: int | None) -> ServePlan:  # the fewest GPUs: _with_fewest_gpus, on the targets
            return plan(
                spec, g, screen, targets, time_model, gpus=cap, modes=searched, reserve_full=reserve_full,
                attention_dp=options["engine"] in ATTENTION_DP_ENGINES, name_fewest=False, **search, **common,
            )  # fmt: skip

        try:
            result = planned(budget)
        except InputError as missed:  # as the simulated plan: the fewest GPUs that meet the targets
            raise _with_fewest_gpus(
                missed, budget if screen.qps is not None else None, planned, doubling=True
            ) from None
    from llm_cost.analyses.serving.band import with_analytic_band
    from llm_cost.analyses.serving.moe_layouts import layout_families

    result = with_analytic_band(result, chosen, _bound_of(result, spec, g, screen, targets, common, reserve_full))
    weighed = layout_families(spec, [], [*result.frontier, result.chosen])
    return result if weighed is None else dataclasses.replace(result, conventions=[*result.conventions, weighed])


def _narrowed(one: Any, batch: Any, chunk: Any, chunked_prefill: bool) -> dict[str, Any]:
    """The search narrowed to a layout, a concurrency (or those up to a cap) and a chunk."""
    from llm_cost.model.layout import Layout

    search: dict[str, Any] = {}
    if one is not None:
        search["layouts"] = [Layout(one.tp, one.pp, one.ep, one.dp, one.redundant_experts)]
    if batch is not None:
        search["concurrency"] = [batch]
    if chunk is not None or not chunked_prefill:
        search["chunks"] = [chunk]
    return search


def _check_fixed_lengths(load: Any) -> None:
    """InputError naming where the lengths came from (a trace; else input_tokens, a workload's lengths
    drawn from a distribution included) when the analytic forms would take lengths that are not fixed
    (an attacker's --trace was told of --input)."""
    from llm_cost.simulate import Trace

    if _fixed_lengths(load):
        return
    source = "trace" if isinstance(load, Trace) else "input_tokens"
    what = "a trace's rows" if source == "trace" else "lengths drawn from a distribution"
    raise InputError(
        f"{source}: the analytic forms (concurrency with a layout, disaggregated alone) take fixed lengths, not "
        f"{what}; give fixed input_tokens and output_tokens, or leave out the analytic form to simulate",
        fields=(source, "input_tokens", "output_tokens") if source == "trace" else (source, "output_tokens"),
    )


def _fixed_lengths(load: Any) -> bool:
    from llm_cost.simulate import Fixed, Workload

    return isinstance(load, Workload) and isinstance(load.input_tokens, Fixed) and isinstance(load.output_tokens, Fixed)


def _simulated(
    spec: Any,
    g: Any,
    load: Any,
    has_arrivals: bool,
    goals: dict[str, Any],
    gpus: Any,
    searched: tuple[ServingMode, ...],
    one: Any,
    profile: Any,
    options: dict[str, Any],
    engine_options: dict[str, Any],
    seed: int,
    requests: Any,
    own_traffic: bool = False,
    router: Router | None = None,
) -> SimulatedPlan | ServeRun:
    """One configuration simulated, or the plan screened analytically and ranked by simulation.
    A plan at a rate of our making (``qps``, not a workload file or a trace: ``own_traffic``) with
    no ``requests`` given runs :data:`~llm_cost.analyses.simulated_plan.PLAN_REQUESTS` per
    replica and candidate, whatever the replicas (a fixed total would leave each of many replicas
    a handful)."""
    from llm_cost.analyses.launch import router_for
    from llm_cost.analyses.serving import CONCURRENCY_GRID, MAX_PLAN_GPUS, plan
    from llm_cost.analyses.serving.moe_layouts import ATTENTION_DP_ENGINES, replica_engine
    from llm_cost.analyses.serving.replicas import node_gpus
    from llm_cost.analyses.simulated_plan import PLAN_REQUESTS, plan_on_simulation
    from llm_cost.analyses.simulated_serving import run_configuration

    config = traffic.engine_of(spec, g, **engine_options)
    if one is not None:  # an attention-DP replica's ranks each take the engine's settings
        config = replica_engine(config, one)
    network = choices.network_gb_s_of(options["network_gb_s"])
    chosen, time_model, serving_band = serve_time_model(
        g, profile, options["engine"], network, simulated=True, closed_loop=not has_arrivals
    )
    common = _common(spec, g, chosen, options)
    budget = checks.optional(gpus, checks.count, "gpus", 1, MAX_PLAN_GPUS)
    formats = {k: common[k] for k in ("weight_bits", "kv_bits", "compute_dtype")}
    traffic.check_steps(load, config, None if one is not None and has_arrivals else requests or PLAN_REQUESTS)
    if one is not None and has_arrivals:
        replicas = _replicas_of(budget, one)
        spread = router or router_for(config.engine, one, replicas, node_gpus(g))
        return run_configuration(
            spec, g, one, load, config, time_model, common["policy"], replicas=replicas, router=spread, targets=goals,
            usd_per_gpu_hour=common["usd_per_gpu_hour"], seed=seed, notes=common["extra_notes"], band=True,
            serving_band=serving_band, **formats,
        )  # fmt: skip
    _check_plan_trace(load)
    _check_plan_steps(spec, g, load, has_arrivals, requests, time_model, formats)
    search = _narrowed(one, None, engine_options["max_num_batched_tokens"], engine_options["chunked_prefill"])
    # the engine runs at most max_num_seqs sequences (its own default, or the one given): no
    # concurrency beyond it is searched
    search["concurrency"] = [c for c in CONCURRENCY_GRID if c <= config.max_num_seqs] or [config.max_num_seqs]
    screened = _screen_traffic(load, config.prefix_caching, requests or PLAN_REQUESTS, own_traffic)

    def screen_at(cached: int, budget: int | None = budget) -> Any:  # the fewest GPUs: _with_fewest_gpus
        return plan(
            spec, g, dataclasses.replace(screened, cached_tokens=min(cached, screened.input_tokens - 1)),
            _mean_targets({}), time_model, gpus=budget, modes=(ServingMode.AGGREGATED,),
            reserve_full=config.engine == Engine.TRTLLM,
            attention_dp=ServingEngine(config.engine.value) in ATTENTION_DP_ENGINES, name_fewest=False, **search,
            **common,
        )  # fmt: skip

    load = _sized_by_plan(load, requests, own_traffic)

    def planned(budget: int | None) -> SimulatedPlan:
        return plan_on_simulation(
            screen_at(screened.cached_tokens, budget), spec, g, load, config, time_model, common["policy"],
            targets=goals, qps=_screen_traffic(load).qps if has_arrivals else None,
            usd_per_gpu_hour=common["usd_per_gpu_hour"], seed=seed, requests=requests or PLAN_REQUESTS,
            notes=common["extra_notes"], serving_band=serving_band, router=router,
            rescreen=(lambda cached: screen_at(cached, budget)) if config.prefix_caching else None, **formats,
        )  # fmt: skip

    try:
        return _with_plan_notes(spec, planned(budget), requests)
    except InputError as missed:
        raise _with_fewest_gpus(missed, budget if has_arrivals else None, planned) from None


def _sized_by_plan(load: Any, requests: Optional[int], own_traffic: bool) -> Any:
    """The traffic a plan simulates: traffic of our making (``qps``, not the user's workload or
    trace: ``own_traffic``) with no ``requests`` given is left without a count, which the plan
    sizes per candidate; any other as it is."""
    from llm_cost.simulate import Workload

    if requests is None and not own_traffic and isinstance(load, Workload):
        return Workload(load.arrivals, load.input_tokens, load.output_tokens, load.prefix, None)
    return load


def _replicas_of(budget: Optional[int], one: Layout) -> int:
    """The replicas of layout ``one`` a configuration at a rate runs on ``budget`` GPUs (one without
    a budget). InputError naming ``gpus`` when the budget is not a whole number of replicas."""
    if budget is not None and budget % one.gpus:
        raise InputError(f"gpus {budget} is not a whole number of TP {one.tp} x PP {one.pp} replicas", fields=("gpus",))
    return (budget or one.gpus) // one.gpus


def _with_plan_notes(spec: ModelSpec, result: SimulatedPlan, requests: Optional[int]) -> SimulatedPlan:
    """A simulated plan with what its search adds to its notes: the layout families a MoE model's
    search weighed (:func:`~llm_cost.analyses.serving.moe_layouts.layout_families`), and a request
    count raised past the one asked for (to the precision the targets need)."""
    from llm_cost.analyses.serving.moe_layouts import layout_families
    from llm_cost.analyses.simulated_plan import holds
    from llm_cost.core.notes import note

    added = [
        n
        for n in (layout_families(spec, result.simulated, result.screen.frontier, holds=holds, screen_judged=False),)
        if n is not None
    ]
    if requests is not None and result.chosen.simulated_requests > requests:
        added.append(note("serve.requests_raised", asked=requests, simulated=result.chosen.simulated_requests))
    if not added:
        return result
    return dataclasses.replace(result, conventions=[*result.conventions, *added])


def _with_fewest_gpus(
    missed: InputError,
    budget: int | None,
    planned: Callable[[int | None], SimulatedPlan | ServePlan],
    doubling: bool = False,
) -> InputError:
    """At a rate within a GPU ``budget`` where no configuration (simulated, or the analytic plan's)
    meets the targets: the
    refusal naming the fewest GPUs that do meet them (the plan without a budget, which adds
    replicas, each then taking a lower rate), when that is more than the budget, with ``missed``'s
    reason (without its own suggestion where it names GPUs: the screen's fewest that carry the
    rate are sized without the targets, and an attack found them failing on the retry 25 times of
    27); without a budget, ``missed`` as it is; where no count meets them, the plan's own refusal
    without a budget (a target out of reach, a prompt longer than the context).

    ``doubling`` (the analytic plan): the budget doubled while it stays within
    :data:`~llm_cost.core.limits.MAX_DOUBLED_BUDGET` until a plan holds, then no budget. The
    analytic plan at a rate chooses the fewest GPUs that meet the targets
    (:func:`~llm_cost.analyses.serving.search.plan`), so any budget at or above that count plans the
    same configuration as no budget, and a smaller one is refused; a search of a few dozen GPUs is
    several times faster than one without a budget (deepseek-v3 on H200s at 20 requests/s, 8 GPUs:
    16 found in 3.5 s instead of 12.3 s; a target no count meets, refused after them all: 13.3 s
    instead of 10.1 s)."""
    if budget is None:
        return missed
    try:
        wider = _planned_doubling(planned, budget) if doubling else planned(None)
    except InputError as anywhere:  # no count meets them: why not is the refusal (an attack: the
        return anywhere  # budget's suggested --gpus 20 then failed on --input)
    fewest = wider.chosen.gpus
    if fewest <= budget:
        return missed
    # the refusal keeps what it found, not what it suggests: more GPUs meet them all (an attacker
    # read both), and the screen's fewest that carry the rate were sized without the targets
    reason = missed.reason
    return InputError(
        f"gpus {budget:,}: no configuration within {budget:,} GPU{'s' if budget > 1 else ''} meets every target "
        f"at this rate ({reason}); {fewest:,} do (the plan without a budget: {wider.chosen.describe()}): give gpus "
        f"{fewest:,} or more",
        fields=("gpus", *missed.fields),
    )


def _planned_doubling(planned: Callable[[int | None], SimulatedPlan | ServePlan], budget: int) -> Any:
    """``planned`` at twice ``budget``, then twice that, while within
    :data:`~llm_cost.core.limits.MAX_DOUBLED_BUDGET`, until one holds; else without a budget
    (:func:`_with_fewest_gpus`). InputError: the refusal without a budget."""
    from llm_cost.core.limits import MAX_DOUBLED_BUDGET

    cap = 2 * budget
    while cap <= MAX_DOUBLED_BUDGET:
        try:
            return planned(cap)
        except InputError:
            cap *= 2
    return planned(None)


def serve_time_model(
    g: HardwareSpec,
    profile: Optional[ProfileArg],
    engine: Optional[EngineArg],
    network_gb_s: float,
    simulated: bool,
    closed_loop: bool = False,
) -> tuple[Optional[Profile], TimeModel, Optional[ServingBand]]:
    """(profile, time model, serving band) of a serve: the one place serve obtains its time model,
    by the one rule (:func:`llm_cost.api.choices.time_model_of`: ``profile`` if given, else the
    GPU's family's parameters joined with ``engine``'s). Simulated under vLLM with no profile given,
    the band is the measured serving runs' (:func:`llm_cost.api.choices.serving_band_of`: those at
    saturation for a ``closed_loop``, a plan or run without a rate); otherwise None (the profile's
    step-time band, :func:`llm_cost.perf.calibrated.band_for`)."""
    model = choices.time_model_of(g, engine, profile, network_gb_s)
    chosen = getattr(model, "profile", None)
    given = choices.profile_given(profile)
    band = choices.serving_band_of(g, given, engine, closed_loop) if simulated else None
    return chosen, model, band


def serve_compare(
    model: ModelLike,
    gpu: Sequence[GpuLike] = ("h100", "h200"),
    input_tokens: Optional[LengthsArg] = None,
    output_tokens: Optional[LengthsArg] = None,
    *,
    usd_per_gpu_hour: Optional[PriceArg] = None,
    **options: object,
) -> ServeComparison:
    """The plan of :func:`serve` on each GPU of ``gpu`` for the same traffic and targets, side by
    side (``llm-cost serve --gpu h100,h200``): ``usd_per_gpu_hour`` one price for all or one per
    GPU, in order. Every other argument is :func:`serve`'s (a plan: no ``concurrency``). A GPU
    with no plan (the model does not fit, no configuration meets the targets) keeps its reason;
    the cheapest plan per million output tokens is marked. InputError naming the argument for a
    bad list or for arguments that are bad whatever the GPU."""
    checks.known_options(options, serve)
    given = dict(model=model, gpu=gpu, input_tokens=input_tokens, output_tokens=output_tokens)
    return compare_request(ServeRequest.of({**given, "usd_per_gpu_hour": usd_per_gpu_hour, **options}))


def compare_request(request: ServeRequest) -> ServeComparison:
    """The answer of :func:`serve_compare` to ``request`` (``gpu`` the GPUs compared,
    ``usd_per_gpu_hour`` one price or one per GPU)."""
    from llm_cost.analyses.simulated_plan import compare_gpus
    from llm_cost.core.processes import map_in_processes  # lazy: multiprocessing only for a comparison

    request = checks.record(request, ServeRequest, "request")
    gpu, usd_per_gpu_hour = request.gpu, request.usd_per_gpu_hour
    names = list(gpu) if isinstance(gpu, (list, tuple)) else None
    if not names or len(names) > MAX_COMPARED:
        given = f"{gpu!r:.60} is not a list" if names is None else f"{len(names)} GPUs listed"
        raise InputError(f"gpu: {given}; a comparison takes 1 to {MAX_COMPARED} GPUs", fields=("gpu",))
    first_named: dict[str, tuple[GpuLike, HardwareSpec]] = {}
    for name in names:  # each GPU once: the same GPU twice (by name or alias) is one plan shown twice
        card = load_gpu(name)
        if card.name in first_named:
            earlier, earlier_card = first_named[card.name]
            if earlier_card != card:  # an attacker's file named h100 with other figures was called the same GPU
                raise InputError(
                    f"gpu: {name!r} is named {card.name!r}, as {earlier!r} is, with other figures; the comparison "
                    "labels each plan by its GPU's name: give one of them a name of its own (a spec file's name)",
                    fields=("gpu",),
                )
            again = "twice" if earlier == name else f"again after {earlier!r}, the same GPU"
            raise InputError(f"gpu: {name!r} is listed {again}; list each GPU once", fields=("gpu",))
        first_named[card.name] = (name, card)
    one_price = cast("Optional[float]", usd_per_gpu_hour)
    prices = list(usd_per_gpu_hour) if isinstance(usd_per_gpu_hour, (list, tuple)) else [one_price] * len(names)
    if len(prices) != len(names):
        raise InputError(
            f"usd_per_gpu_hour: {len(prices)} prices for {len(names)} GPUs; give one price, or one per GPU",
            fields=("usd_per_gpu_hour",),
        )
    if request.concurrency is not None:
        raise InputError("concurrency: a comparison plans each GPU; leave out concurrency", fields=("concurrency",))
    if request.analytic:
        raise InputError("analytic: a comparison simulates each GPU's plan; leave out analytic", fields=("analytic",))
    if ServingMode.AGGREGATED not in _modes(request.modes):
        raise InputError(
            "modes: a comparison simulates each GPU's aggregated plans; include aggregated", fields=("modes",)
        )
    spec = load_model(request.model)
    # a name as given: the shipped spec, not validated again as a spec built in Python would be
    model: ModelLike = request.model if isinstance(request.model, str) else spec
    jobs = [
        (dataclasses.replace(request, model=model, gpu=name, usd_per_gpu_hour=p), p) for name, p in zip(names, prices)
    ]
    answers = map_in_processes(_plan_on, jobs)  # each GPU's plan apart: on the machine's cores
    first = next((plan for _, _, plan, _ in answers if plan is not None), None)
    if first is None:  # every GPU refused: the comparison has nothing to show
        name, _, _, error = answers[0]
        message, fields = error or ("", ())
        listed = ", ".join(a[0] for a in answers)
        raise InputError(f"gpu: no GPU compared ({listed}) has a plan; on {name}: {message}", fields=("gpu", *fields))
    shown = first.workload if first is not None else ""
    goals = first.targets if first is not None else {}
    return compare_gpus(spec.name, shown, first.qps if first is not None else None, goals, answers)


def _plan_on(
    job: tuple[ServeRequest, Optional[float]],
) -> tuple[str, Optional[float], Optional[Any], Optional[tuple[str, tuple[str, ...]]]]:
    """One GPU's answer in a comparison (:func:`compare_request`): (the GPU's name, its price, its
    plan or None, why not or None: the message and the argument names it uses). InputError for an
    error that is not the GPU's own (:func:`_per_gpu`) or a request that is not a plan."""
    from llm_cost.analyses.simulated_plan import SimulatedPlan

    request, price = job
    g = load_gpu(cast("GpuLike", request.gpu))  # one GPU of the comparison
    try:
        result = serve_request(request)
    except InputError as e:
        if not _per_gpu(e):
            raise
        return g.name, price, None, (str(e), tuple(e.fields))
    if not isinstance(result, SimulatedPlan):
        raise InputError("layout: a comparison plans each GPU; leave out the layout", fields=("layout",))
    return g.name, price, result, None


#: Fields of an error that belongs to one GPU (its memory, its speed), not to the arguments.
_PER_GPU_FIELDS = {
    "gpus",
    "ttft_s",
    "tpot_s",
    "itl_s",
    "e2e_s",
    "qps",
    "layouts",
    "layout",
    "weights_dtype",
    "kv_dtype",
}


def _per_gpu(error: InputError) -> bool:
    """Whether ``error`` says this GPU has no plan (it is kept in the comparison) rather than that
    an argument is bad (it is raised)."""
    text = str(error)
    return bool(set(error.fields) & _PER_GPU_FIELDS) and (
        "reaches" in text or "needs" in text or "carr" in text or "fit" in text or "hold" in text
    )


def _bound_of(
    plan: ServePlan, spec: Any, g: Any, traffic: Any, targets: Any, common: dict[str, Any], reserve_full: bool
) -> Optional[tuple[float, float]]:
    """(TTFT, TPOT) of an analytic plan's chosen aggregated configuration under the Roofline
    bound (:class:`~llm_cost.perf.timemodel.RooflineBound`, the plan's network), the floor of its
    band's fast end; None for a disaggregated choice (its pools are not re-evaluated)."""
    from llm_cost.analyses.serving import evaluate
    from llm_cost.perf.timemodel import RooflineBound

    c = plan.chosen
    if c.mode != ServingMode.AGGREGATED:
        return None
    at_bound = evaluate(
        spec, g, traffic, targets, RooflineBound(common["network_gb_s"]), c.layout, c.concurrency,
        chunk_tokens=c.chunk_tokens, replicas=c.replicas, reserve_full=reserve_full, **common,
    )  # fmt: skip
    return at_bound.ttft_s, at_bound.tpot_s


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
    reserve_full: bool = False,
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
        spec,
        g,
        traffic,
        targets,
        time_model,
        layout,
        batch,
        chunk_tokens=tokens,
        replicas=replicas,
        reserve_full=reserve_full,
        **common,
    )


def _chunk(chunk_tokens: Any, chunked_prefill: Any) -> Optional[int]:
    """The token budget per step, or None (searched, or no chunking)."""
    checks.flag(chunked_prefill, "chunked_prefill")
    if not chunked_prefill and chunk_tokens is not None:
        raise InputError(
            "chunk_tokens: give a budget or chunked_prefill=False, not both", fields=("chunk_tokens", "chunked_prefill")
        )
    return checks.optional(chunk_tokens, checks.step_tokens, "chunk_tokens", MAX_CHUNK_TOKENS)


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
