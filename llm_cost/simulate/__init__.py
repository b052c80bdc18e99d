"""Serving under load, simulated: one engine replica's scheduler step by step, driven by a workload.

* :mod:`~llm_cost.simulate.workload`: arrivals (Poisson, gamma, constant, inference-perf's fixed
  count, stages, closed-loop users), length distributions, shared prefixes, traces;
* :mod:`~llm_cost.simulate.kvcache`: vLLM's paged KV cache with prefix caching and LRU eviction;
* :mod:`~llm_cost.simulate.engine`: vLLM V1's scheduler (TensorRT-LLM's admission as a variant);
* :mod:`~llm_cost.simulate.steptime`: each step's operators timed by a time model, memoised;
* :mod:`~llm_cost.simulate.results`: per-request times and their distributions.

The layer sits between ``perf`` and ``analyses``: it builds steps (``workload.step``) and times them
with any :class:`~llm_cost.perf.timemodel.TimeModel`; the KV capacity comes from the caller
(``analyses.capacity`` computes it).

Python use::

    from llm_cost.simulate import simulate, EngineConfig, poisson, Fixed
    result = simulate(spec, gpu, poisson(8.0, Fixed(547), Fixed(248), duration_s=600),
                      EngineConfig(max_num_seqs=128, max_num_batched_tokens=2048),
                      time_model_for(gpu, Engine.VLLM), kv_capacity_tokens=400_000)
    result.summary.ttft_s.p99, result.to_dict()

``llm_cost.perf.choose.time_model_for`` is the one rule every command times steps by; the shipped
vLLM serving runs check it (``llm_cost.analyses.serving_runs``).
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from llm_cost.core.choices import Router
from llm_cost.core.errors import InputError
from llm_cost.core.types import Dtype
from llm_cost.model.layout import ONE_GPU, Layout
from llm_cost.perf.timemodel import TimeModel
from llm_cost.simulate.engine import EngineConfig, Run, run_engine, run_replicas, vllm_defaults
from llm_cost.simulate.results import (
    Distribution,
    RequestTimes,
    SimResult,
    Steady,
    Summary,
    Target,
    goodput_rps,
    steady_window,
    summarize,
)
from llm_cost.simulate.steptime import ScaledTimer, StepTimer
from llm_cost.simulate.workload import (
    ClosedLoop,
    Empirical,
    Fixed,
    LogNormal,
    Normal,
    OpenLoop,
    Request,
    SharedPrefix,
    Stage,
    Trace,
    TraceRow,
    Uniform,
    Workload,
    check_workload,
    parse_lengths,
    poisson,
    read_trace,
    requests,
    stage_bounds,
    trace_requests,
)
from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = [
    "simulate",
    "merged",
    "exchangeable",
    "summaries",
    "EngineConfig",
    "vllm_defaults",
    "SimResult",
    "Summary",
    "Steady",
    "Distribution",
    "RequestTimes",
    "Target",
    "goodput_rps",
    "Workload",
    "OpenLoop",
    "ClosedLoop",
    "Stage",
    "SharedPrefix",
    "Fixed",
    "Uniform",
    "Normal",
    "LogNormal",
    "Empirical",
    "parse_lengths",
    "poisson",
    "Trace",
    "TraceRow",
    "read_trace",
    "Request",
    "StepTimer",
    "ScaledTimer",
]


def summaries(run: Run, bounds: Sequence[float]) -> tuple[Summary, tuple[Summary, ...]]:
    """The whole run's summary (from 0 to its last completion) and, with more than one stage,
    each stage's (its arrivals, rates over the stage's duration)."""
    done = [t for _, t in run.done]
    gaps: dict[float, int] = {}
    for stage_gaps in run.gaps:
        for v, c in stage_gaps.items():
            gaps[v] = gaps.get(v, 0) + c
    whole = summarize(done, sum(run.rejected), 0.0, run.end_s, gaps)
    if len(bounds) < 2:
        return whole, ()
    stages = []
    start = 0.0
    for i, end in enumerate(bounds):
        mine = [t for s, t in run.done if s == i]
        stages.append(summarize(mine, run.rejected[i], start, end, run.gaps[i]))
        start = end
    return whole, tuple(stages)


def merged(runs: Sequence[Run]) -> Run:
    """The runs of a deployment's replicas as one: every completion, rejections, gaps, prefix-cache
    hits, preemptions and steps summed; the time integrals (running, waiting, KV blocks) averaged
    over the replicas (one replica's mean); the most KV blocks any replica held; the last end."""
    if len(runs) == 1:
        return runs[0]
    n = len(runs)
    gaps: list[dict[float, int]] = []
    for stage in range(len(runs[0].gaps)):
        counts: dict[float, int] = {}
        for run in runs:
            for v, c in run.gaps[stage].items():
                counts[v] = counts.get(v, 0) + c
        gaps.append(counts)
    return Run(
        tuple(d for run in runs for d in run.done),
        tuple(sum(col) for col in zip(*(run.rejected for run in runs))),
        tuple(gaps),
        sum(run.running_integral for run in runs) / n,
        sum(run.waiting_integral for run in runs) / n,
        sum(run.kv_integral for run in runs) / n,
        max(run.kv_max for run in runs),
        sum(run.preemptions for run in runs),
        sum(run.steps for run in runs),
        max(run.end_s for run in runs),
        sum(run.hit_tokens for run in runs),
        sum(run.queried_tokens for run in runs),
        runs[0].kv_blocks,
    )


def exchangeable(workload: Workload | Trace | Sequence[Request], router: Router) -> bool:
    """Whether one replica stands for all of a deployment behind ``router``: round robin over an
    open-loop workload with no shared prefix sends each replica every R-th arrival of one stream
    whose lengths are drawn independently, so the replicas' requests are alike in distribution and
    never interact, and the run of one is a run of any (:func:`simulate` with ``replicas`` then
    runs one, on every R-th arrival). Traces (rows need not be alike: a trace of alternating
    prefixes would give one replica every prefixed row), shared prefixes (users visited in a cycle
    that every R-th request samples unevenly) and routers that read the replicas' state are not."""
    return (
        router == Router.ROUND_ROBIN
        and isinstance(workload, Workload)
        and isinstance(workload.arrivals, OpenLoop)
        and workload.prefix is None
    )


def _check_counts(**given: tuple[object, int]) -> None:
    """InputError naming the first argument (name: (value, least)) that is not a whole number of
    at least its least."""
    units = {"kv_capacity_tokens": " of tokens", "sequence_state_blocks": " of blocks"}
    for name, (value, least) in given.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < least:
            raise InputError(
                f"{name}: {value!r} must be a whole number{units.get(name, '')}, at least {least}", fields=(name,)
            )


#: The refusal of a run to which no request arrives.
NO_ARRIVALS = (
    "workload: no request arrives in the simulated run (rate_rps x duration_s under one request, or fewer requests "
    "than replicas); give a higher rate or a longer duration"
)


def simulate(
    spec: ModelSpec,
    gpu: HardwareSpec,
    workload: Workload | Trace | Sequence[Request],
    engine: EngineConfig,
    time_model: TimeModel,
    layout: Layout = ONE_GPU,
    *,
    kv_capacity_tokens: int,
    sequence_state_blocks: int = 0,
    weight_bits: int | Fraction = 16,
    kv_bits: int = 16,
    compute_dtype: Dtype = Dtype.BF16,
    seed: int | str = 0,
    timer: StepTimer | None = None,
    replicas: int = 1,
    router: Router = Router.ROUND_ROBIN,
) -> SimResult:
    """Simulate ``replicas`` replicas of ``spec``, each on ``layout`` GPUs of ``gpu``, serving
    ``workload`` (a workload drawn from ``seed``, a trace, or requests) under ``engine``'s
    scheduler, each step timed by ``time_model`` with these formats. With more than one replica
    the requests are spread by ``router`` (:func:`~llm_cost.simulate.routers.router_of`) and the
    replicas run side by side (:func:`~llm_cost.simulate.engine.run_replicas`); the result is the
    deployment's (every request; engine figures one replica's mean, :func:`merged`), or, where one
    replica stands for all (:func:`exchangeable`), one replica's on every R-th arrival (the
    result's ``simulated_replicas`` 1: its rates are one replica's). A closed loop runs one replica
    (InputError for more: its users are split over replicas by the caller).

    ``kv_capacity_tokens``: tokens the replica's KV cache holds (whole blocks of
    ``engine.block_tokens`` are used), e.g. vLLM's "GPU KV cache size" or the KV budget of
    ``analyses.capacity.kv_room`` divided by the attention KV bytes per token.
    ``sequence_state_blocks``: blocks of that cache each running request's fixed state (a hybrid
    model's linear-attention or Mamba layers' recurrent and convolution state) holds, once per
    request, however long it grows (``analyses.serving_runs.replica_kv_pool`` computes both).
    Deterministic for a seed.
    InputError for an invalid workload, engine setting or capacity. ``timer``: a step timer of
    the same model, GPU, layout and formats to reuse (its memo is shared between runs). The result's
    ``steady`` holds the rates over the run's steady window (:func:`~llm_cost.simulate.results.steady_window`:
    warm-up and drain left out), its ``summary`` the whole run's."""
    _check_counts(kv_capacity_tokens=(kv_capacity_tokens, 1), sequence_state_blocks=(sequence_state_blocks, 0))
    _check_counts(replicas=(replicas, 1))
    blocks = kv_capacity_tokens // engine.block_tokens
    state = sequence_state_blocks
    timer = timer or StepTimer(spec, gpu, time_model, layout, weight_bits, kv_bits, compute_dtype)
    timer.count_shapes()  # this run's step shapes, not those of earlier runs sharing the timer
    if isinstance(workload, Workload) and isinstance(workload.arrivals, ClosedLoop):
        if replicas > 1:
            raise InputError(
                "replicas: a closed loop runs one replica; split its users over the replicas", fields=("replicas",)
            )
        check_workload(workload, limit=None)  # a closed loop with no end would never stop
        bounds, simulated = stage_bounds(workload)[:1], 1
        run = run_engine(timer, engine, blocks, workload=workload, seed=seed, bounds=bounds, state_blocks=state)
    else:
        one = replicas == 1 or exchangeable(workload, router)
        if isinstance(workload, Workload):  # one replica standing for all: its share alone is drawn
            reqs, bounds = requests(workload, seed, every=replicas if one else 1), stage_bounds(workload)
        else:
            reqs, bounds = (trace_requests(workload) if isinstance(workload, Trace) else list(workload)), []
            reqs = reqs[::replicas] if one else reqs
        if not reqs:
            raise InputError(NO_ARRIVALS, fields=("workload",))
        if one:
            run = run_engine(timer, engine, blocks, reqs, bounds=bounds, state_blocks=state)
            simulated = 1
        else:
            run = merged(run_replicas(timer, engine, blocks, reqs, replicas, router, bounds=bounds, state_blocks=state))
            simulated = replicas
    whole, stages = summaries(run, bounds)
    # an open loop's warm-up ends at its first completion, a closed loop's at the users'-th
    loop = workload.arrivals if isinstance(workload, Workload) else None
    closed = isinstance(loop, ClosedLoop)
    warmup = loop.users if isinstance(loop, ClosedLoop) else 1
    steady = steady_window([t for _, t in run.done], warmup, closed)
    span = run.end_s or 1.0
    return SimResult(
        spec.name,
        gpu.name,
        engine.engine,
        time_model.label,
        blocks,
        engine.block_tokens,
        whole,
        stages,
        run.running_integral / span,
        run.waiting_integral / span,
        run.kv_integral / span / blocks,
        run.kv_max / blocks,
        run.preemptions,
        run.hit_tokens / run.queried_tokens if run.queried_tokens else 0.0,
        run.steps,
        timer.shapes_met(),
        tuple(sorted((t for _, t in run.done), key=lambda t: t.index)),
        state,
        steady,
        replicas,
        str(router) if replicas > 1 else None,
        simulated,
    )
