"""Serving answered by simulation (``llm-cost serve`` with a rate, a workload or a trace): one
configuration's distribution of TTFT, TPOT, ITL and E2E; the planner's promising candidates
simulated and ranked on percentiles against the targets; GPUs side by side.

**One configuration.** ``replicas`` replicas of one layout share the traffic evenly (a router
sending each request to the replicas in turn: an open loop's rate and a closed loop's users are
divided among them, a trace's rows dealt out in turn); one replica is simulated
(:func:`llm_cost.simulate.simulate`) and the deployment's rates are ``replicas`` times its own.

**The plan.** The analytic search (:func:`llm_cost.analyses.serving.plan`, without targets: its
frontier of output tokens/s per GPU against tokens/s per user) is the fast screen. Its aggregated
frontier points are grouped by replica layout and replica count; Without a rate, of each group at
most :data:`PER_LAYOUT` are simulated (the fastest whose analytic means meet the targets, the most
throughput per GPU, and one between) as a closed loop of ``concurrency`` users per replica with
no think time (the saturated benchmark the analytic search assumes; ``max_num_seqs`` the
concurrency); with a rate, each layout's :data:`PER_LAYOUT` fewest replica counts, at the rate per
replica (``max_num_seqs`` the engine's). ``max_num_batched_tokens`` is the candidate's chunk
(unchunked: vLLM's default without chunked prefill, ``max(max_model_len, 2048)``). A candidate meets the targets when every target holds on its simulated
distribution and no request is refused; the plan is, of those meeting them, with a rate the
fewest GPUs (then the most goodput), without one the most output tokens/s per GPU. Disaggregated
candidates stay analytic (the simulator runs one engine replica), and are not chosen.

**Side by side.** The plan on each GPU for the same traffic and targets, each at its price; the
cheapest per million output tokens is marked.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import field
from fractions import Fraction
from typing import Any

from llm_cost.analyses.capacity import MemoryPolicy
from llm_cost.analyses.launch import Launch
from llm_cost.analyses.serving import SANE_TTFT_S, Candidate, ServePlan
from llm_cost.analyses.serving.search import pcie_note
from llm_cost.analyses.serving_runs import replica_kv_tokens
from llm_cost.core.choices import ServingMode
from llm_cost.core.errors import InputError
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Dtype
from llm_cost.core.units import fmt_seconds
from llm_cost.model.layout import Layout
from llm_cost.perf.timemodel import TimeModel
from llm_cost.simulate import (
    ClosedLoop,
    EngineConfig,
    OpenLoop,
    SimResult,
    Stage,
    StepTimer,
    Target,
    Trace,
    Workload,
    goodput_rps,
    simulate,
)
from llm_cost.simulate.results import METRICS, Distribution
from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = [
    "Percentiles",
    "ServeRun",
    "SimulatedPlan",
    "GpuPlan",
    "ServeComparison",
    "run_configuration",
    "plan_on_simulation",
    "compare_gpus",
    "per_replica",
    "offered_rps",
    "describe",
    "PER_LAYOUT",
    "PLAN_REQUESTS",
]

#: Candidates simulated per replica layout and count.
PER_LAYOUT = 3
#: Requests each planner candidate's simulation runs (one configuration runs the caller's count).
PLAN_REQUESTS = 400


@record
class Percentiles:
    """P50, P90 and P99 of a latency, seconds (None without samples)."""

    p50: float | None
    p90: float | None
    p99: float | None


def _percentiles(d: Distribution) -> Percentiles:
    return Percentiles(d.p50, d.p90, d.p99)


@record
class ServeRun(Result):
    """One configuration simulated: ``replicas`` x ``layout`` under ``engine`` serving the traffic
    described by ``workload`` (``qps``: the rate offered to the deployment, None for a closed loop).

    Means and ``percentiles`` (``ttft_s``, ``tpot_s``, ``itl_s``, ``e2e_s``, each P50/P90/P99) are
    over every completed request (ITL: over every gap between output tokens); ``goodput_rps``
    the deployment's requests/s that meet every target (DistServe); rates are the deployment's
    (``replicas`` x one replica's). ``violates`` lists each target missed (``ttft_s p99``) and
    ``rejected`` when a request was refused. Engine figures are one replica's time averages:
    ``running_mean`` (the occupancy), ``waiting_mean``, ``kv_use_mean`` / ``kv_use_max``
    (fraction of KV blocks), ``preemptions``. ``candidate`` is the analytic screen's configuration
    it simulates (None for one configuration given)."""

    model: str
    gpu: str
    engine: str
    layout: Layout
    replicas: int
    gpus: int
    workload: str
    qps: float | None
    max_num_seqs: int
    max_num_batched_tokens: int
    chunked_prefill: bool
    prefix_caching: bool
    kv_capacity_tokens: int
    time_model: str
    ttft_s: float | None
    tpot_s: float | None
    itl_s: float | None
    e2e_s: float | None
    percentiles: dict[str, Percentiles]
    targets: dict[str, Target]
    violates: tuple[str, ...]
    goodput_rps: float
    throughput_rps: float
    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    requests: int
    rejected: int
    running_mean: float
    waiting_mean: float
    kv_use_mean: float
    kv_use_max: float
    preemptions: int
    prefix_hit_rate: float
    usd_per_gpu_hour: float | None
    usd_per_million_output_tokens: float | None
    usd_per_request: float | None
    simulation: SimResult
    candidate: Candidate | None
    conventions: list[Note] = field(default_factory=list)
    launch: Launch | None = None  # the engine command that runs it (``emit``)

    @property
    def meets(self) -> bool:
        """Whether every target holds and no request was refused."""
        return not self.violates

    def describe(self) -> str:
        """``2 x TP4`` (replicas x layout)."""
        parts = [f"TP{self.layout.tp}"] + ([f"PP{self.layout.pp}"] if self.layout.pp > 1 else [])
        parts += [f"EP{self.layout.ep}"] if self.layout.ep > 1 else []
        return f"{self.replicas} x " + " ".join(parts)


def describe(traffic: Workload | Trace) -> str:
    """The traffic in a few words: arrivals, lengths, shared prefix."""
    if isinstance(traffic, Trace):
        rows = traffic.rows
        span = rows[-1].arrival_s - rows[0].arrival_s
        return f"trace of {len(rows):,} requests over {span:,.0f} s"
    a = traffic.arrivals
    if isinstance(a, ClosedLoop):
        when = f"{a.users:,} users in a closed loop" + (f", {a.think_s:g} s {a.think} think time" if a.think_s else "")
    else:
        rates = ", then ".join(
            f"{s.rate_rps:g}/s" + ("" if math.isinf(s.duration_s) else f" for {s.duration_s:g} s") for s in a.stages
        )
        process = {"gamma": f"gamma (cv {a.cv:g})", "fixed_count": "Poisson, fixed count"}.get(a.process, a.process)
        when = f"{process} {rates}"
    text = f"{when}; prompts {_lengths(traffic.input_tokens)}, outputs {_lengths(traffic.output_tokens)}"
    if traffic.prefix is not None:
        p = traffic.prefix
        users = f"{p.users_per_group:,} user{'s' if p.users_per_group > 1 else ''}"
        text += f"; {p.groups:,} shared prefixes of {p.tokens:,} tokens ({users} each)"
    if traffic.requests is not None:
        text += f"; {traffic.requests:,} requests"
    return text


def _lengths(lengths: Any) -> str:
    name = type(lengths).__name__.lower()
    if name == "fixed":
        return f"{lengths.tokens:,}"
    if name == "uniform":
        return f"uniform {lengths.low:,}-{lengths.high:,}"
    if name == "empirical":
        return f"empirical (mean {lengths.mean:,.0f})"
    return f"{name} (mean {lengths.mean:,.0f}, sd {lengths.sd:,.0f})"


def offered_rps(traffic: Workload | Trace) -> float | None:
    """The mean arrival rate of an open loop or a trace, requests/s (None for a closed loop)."""
    if isinstance(traffic, Trace):
        rows = traffic.rows
        span = rows[-1].arrival_s - rows[0].arrival_s
        return len(rows) / span if span > 0 else None
    a = traffic.arrivals
    if isinstance(a, ClosedLoop):
        return None
    finite = [s for s in a.stages if not math.isinf(s.duration_s)]
    if len(finite) < len(a.stages):
        return a.stages[-1].rate_rps if not finite else max(s.rate_rps for s in a.stages)
    return sum(s.rate_rps * s.duration_s for s in finite) / sum(s.duration_s for s in finite)


def per_replica(traffic: Workload | Trace, replicas: int) -> Workload | Trace:
    """The traffic one of ``replicas`` replicas sees (module docstring)."""
    if replicas == 1:
        return traffic
    if isinstance(traffic, Trace):
        return Trace(traffic.rows[::replicas])
    a = traffic.arrivals
    requests = -(-traffic.requests // replicas) if traffic.requests is not None else None
    if isinstance(a, ClosedLoop):
        arrivals: OpenLoop | ClosedLoop = ClosedLoop(
            -(-a.users // replicas), a.think_s, a.think, a.duration_s, a.ramp_s
        )
    else:
        arrivals = OpenLoop(tuple(Stage(s.duration_s, s.rate_rps / replicas) for s in a.stages), a.process, a.cv)
    return Workload(arrivals, traffic.input_tokens, traffic.output_tokens, traffic.prefix, requests)


def _violations(result: SimResult, targets: Mapping[str, Target]) -> tuple[str, ...]:
    s = result.summary
    missed = tuple(f"{m} {t.statistic.value}" for m, t in targets.items() if not t.met(getattr(s, m)))
    return missed + (("rejected",) if s.rejected else ())


def run_configuration(
    spec: ModelSpec,
    gpu: HardwareSpec,
    layout: Layout,
    traffic: Workload | Trace,
    engine: EngineConfig,
    time_model: TimeModel,
    policy: MemoryPolicy,
    *,
    replicas: int = 1,
    targets: Mapping[str, Target] | None = None,
    usd_per_gpu_hour: float | None = None,
    weight_bits: int | Fraction = 16,
    kv_bits: int = 16,
    compute_dtype: Dtype = Dtype.BF16,
    seed: int | str = 0,
    timer: StepTimer | None = None,
    candidate: Candidate | None = None,
    notes: Sequence[Note] = (),
) -> ServeRun:
    """Simulate ``replicas`` x ``layout`` serving ``traffic`` (module docstring); the KV cache holds
    what ``policy`` leaves after the weights (:func:`~llm_cost.analyses.serving_runs.replica_kv_tokens`).
    InputError when no KV block fits, or for an invalid workload or engine setting."""
    goals = dict(targets or {})
    tokens = replica_kv_tokens(spec, gpu, layout, engine, policy, weight_bits, kv_bits)
    if tokens < engine.block_tokens:
        raise InputError(
            f"layout: {gpu.name} x {layout.gpus} leaves no room for a KV block after {spec.name}'s weights; give "
            "more GPUs (layout) or a smaller weights_dtype",
            fields=("layout",),
        )
    result = simulate(
        spec,
        gpu,
        per_replica(traffic, replicas),
        engine,
        time_model,
        layout,
        kv_capacity_tokens=tokens,
        weight_bits=weight_bits,
        kv_bits=kv_bits,
        compute_dtype=compute_dtype,
        seed=seed,
        timer=timer,
    )
    s = result.summary
    span = s.end_s - s.start_s
    gpus = replicas * layout.gpus
    out_per_s = s.output_tokens_per_s * replicas
    usd_m = usd_req = None
    if usd_per_gpu_hour is not None and out_per_s > 0:
        usd_per_s = usd_per_gpu_hour * gpus / 3600
        usd_m = usd_per_s / out_per_s * 1e6
        usd_req = usd_per_s / (s.throughput_rps * replicas)
    rate = offered_rps(traffic)
    return ServeRun(
        spec.name,
        gpu.name,
        engine.engine,
        layout,
        replicas,
        gpus,
        describe(traffic),
        rate,
        engine.max_num_seqs,
        engine.max_num_batched_tokens,
        engine.chunked_prefill,
        engine.prefix_caching,
        tokens,
        time_model.label,
        s.ttft_s.mean,
        s.tpot_s.mean,
        s.itl_s.mean,
        s.e2e_s.mean,
        {m: _percentiles(getattr(s, m)) for m in METRICS},
        goals,
        _violations(result, goals),
        goodput_rps(result.requests, goals, span) * replicas,
        s.throughput_rps * replicas,
        out_per_s,
        out_per_s / gpus,
        s.requests * replicas,
        s.rejected * replicas,
        result.running_mean,
        result.waiting_mean,
        result.kv_use_mean,
        result.kv_use_max,
        result.preemptions,
        result.prefix_hit_rate,
        usd_per_gpu_hour,
        usd_m,
        usd_req,
        result,
        candidate,
        [
            note("serve.simulated", label=time_model.label, engine=engine.engine, replicas=replicas),
            *pcie_note(gpu, layout, time_model),
            *notes,
        ],
    )


@record
class SimulatedPlan(Result):
    """``llm-cost serve``'s plan on the simulator: the chosen configuration's simulated figures
    (its means, percentiles and goodput repeated at the top), every candidate simulated (best
    first) and the analytic screen they came from (``screen``: the search's frontier and
    counts)."""

    model: str
    gpu: str
    workload: str
    qps: float | None
    targets: dict[str, Target]
    gpu_budget: int
    chosen: ServeRun
    ttft_s: float | None
    tpot_s: float | None
    itl_s: float | None
    e2e_s: float | None
    percentiles: dict[str, Percentiles]
    goodput_rps: float
    gpus: int
    output_tokens_per_s_per_gpu: float
    usd_per_million_output_tokens: float | None
    simulated: tuple[ServeRun, ...]
    screen: ServePlan
    conventions: list[Note] = field(default_factory=list)
    launch: Launch | None = None  # the engine command that runs it (``emit``)


def _picks(group: list[Candidate], targets: Mapping[str, Target]) -> list[Candidate]:
    """At most :data:`PER_LAYOUT` of one layout's frontier points (module docstring), by rising
    throughput per GPU."""
    ordered = sorted(group, key=lambda c: c.output_tokens_per_s_per_gpu)
    limits = {m: t.seconds for m, t in targets.items() if m in ("ttft_s", "tpot_s")}
    meeting = [i for i, c in enumerate(ordered) if all(getattr(c, m) <= v for m, v in limits.items())]
    low = meeting[-1] if meeting else 0
    last = len(ordered) - 1
    chosen = sorted({low, (low + last) // 2, last})
    return [ordered[i] for i in chosen][-PER_LAYOUT:]


def _at_a_rate(groups: Mapping[tuple[Layout, int], list[Candidate]]) -> dict[Layout, tuple[int, Candidate]]:
    """With a rate: of each layout, the fewest replicas the analytic screen says carry the rate,
    and its candidate there with the lowest analytic TTFT (at a rate the engine runs as many
    sequences as come, so a layout's candidates differ only by their chunk)."""
    out: dict[Layout, tuple[int, Candidate]] = {}
    for layout, replicas in sorted(groups, key=lambda k: k[1]):
        if layout not in out:
            out[layout] = (replicas, min(groups[(layout, replicas)], key=lambda c: c.ttft_s))
    return out


def _fewest_replicas(lo: int, hi: int, run_at: Any, good: Any, distance: Any) -> list[ServeRun]:
    """Every run tried while finding the fewest replicas in ``lo`` .. ``hi`` whose simulated run
    is ``good``: ``lo`` first, then doubling until one is good (or ``hi`` is not, or doubling no
    longer brings the run 1% nearer its targets by ``distance``: the latencies of an unloaded
    replica are reached, and no count meets them), then bisection between the last bad and the
    first good count. More replicas share the same traffic, so each sees a lower rate and its
    latencies do not rise: goodness is monotone in the count, which is what bisection needs;
    about 2 log2(answer / lo) simulations per layout."""
    tried: dict[int, ServeRun] = {}

    def ok(n: int) -> bool:
        if n not in tried:
            tried[n] = run_at(n)
        return bool(good(tried[n]))

    if ok(lo) or lo >= hi:
        return list(tried.values())
    bad, n = lo, lo
    while True:
        n = min(hi, 2 * n)
        if ok(n):
            break
        if n >= hi or distance(tried[n]) > 0.99 * distance(tried[bad]):
            return list(tried.values())
        bad = n
    first_good = n
    while first_good - bad > 1:
        mid = (first_good + bad) // 2
        if ok(mid):
            first_good = mid
        else:
            bad = mid
    return list(tried.values())


def _engine_for(c: Candidate, base: EngineConfig, saturated: bool) -> EngineConfig:
    """The engine settings that run candidate ``c`` (module docstring): saturated, its chunk and
    its concurrency as ``max_num_seqs``; at a rate the engine's own settings (its cap on
    sequences, its ``max_num_batched_tokens``: the default a user runs, or the one given)."""
    if not saturated:
        return base
    chunk = c.chunk_tokens
    budget = chunk if chunk is not None else max(base.max_model_len or 2048, 2048)
    return EngineConfig(
        **{
            **base.__dict__,
            "max_num_seqs": c.concurrency if saturated else base.max_num_seqs,
            "max_num_batched_tokens": budget,
            "chunked_prefill": chunk is not None,
        }
    )


def _rank_key(run: ServeRun, qps: float | None) -> tuple:
    if qps is not None:
        return (not run.meets, run.gpus, -run.goodput_rps, run.e2e_s or 0.0)
    return (not run.meets, -run.output_tokens_per_s_per_gpu, run.gpus)


def _nothing_meets(runs: Sequence[ServeRun], targets: Mapping[str, Target]) -> InputError:
    """The one-line error when no simulated candidate meets the targets, with the nearest each
    target came."""
    parts, fields_ = [], []
    for metric, target in targets.items():
        best = min(runs, key=lambda r: target.value(getattr(r.simulation.summary, metric)) or 0.0)
        reached = target.value(getattr(best.simulation.summary, metric))
        if reached is not None and reached > target.seconds:
            parts.append(
                f"{metric} {fmt_seconds(target.seconds)} ({target.statistic.value}): the fastest configuration "
                f"simulated reaches {fmt_seconds(reached)} ({best.describe()}, at most {best.max_num_seqs:,} sequence{'s' if best.max_num_seqs > 1 else ''} each)"
            )
            fields_.append(metric)
    if not parts:
        refused = [r for r in runs if r.rejected]
        if refused and len(refused) == len(runs):
            return InputError(
                f"input_tokens: every configuration simulated refuses requests longer than max_model_len "
                f"({refused[0].rejected:,} refused)",
                fields=("input_tokens",),
            )
        parts.append("no configuration simulated meets every target at once; relax one of them")
        fields_ = list(targets)
    return InputError("; ".join(parts), fields=tuple(fields_))


def plan_on_simulation(
    screen: ServePlan,
    spec: ModelSpec,
    gpu: HardwareSpec,
    traffic: Workload | Trace,
    base: EngineConfig,
    time_model: TimeModel,
    policy: MemoryPolicy,
    *,
    targets: Mapping[str, Target],
    qps: float | None,
    usd_per_gpu_hour: float | None = None,
    weight_bits: int | Fraction = 16,
    kv_bits: int = 16,
    compute_dtype: Dtype = Dtype.BF16,
    seed: int | str = 0,
    requests: int = PLAN_REQUESTS,
    notes: Sequence[Note] = (),
) -> SimulatedPlan:
    """Simulate the promising candidates of ``screen`` (module docstring) and choose among them.
    ``traffic`` with a rate is simulated per replica as it is; without a rate (``qps`` None) each
    candidate runs its concurrency as closed-loop users. InputError when the screen holds no
    aggregated candidate, or when none simulated meets the targets (naming the nearest)."""
    frontier = list(screen.frontier_by_mode.get(ServingMode.AGGREGATED, []))
    if screen.chosen.mode == ServingMode.AGGREGATED and screen.chosen not in frontier:
        frontier.append(screen.chosen)
    if not frontier:
        raise InputError(
            "modes: the simulator runs aggregated replicas, and the screen found no aggregated configuration; "
            "search aggregated serving",
            fields=("modes",),
        )
    groups: dict[tuple[Layout, int], list[Candidate]] = {}
    for c in frontier:
        groups.setdefault((c.layout, c.replicas), []).append(c)
    timers: dict[Layout, StepTimer] = {}
    runs: list[ServeRun] = []

    def run(layout: Layout, replicas: int, c: Candidate, load: Workload | Trace) -> ServeRun:
        # a step timer memoises step times by bucket, the first step of a bucket timing it: a timer
        # shared between runs would make one run's figures depend on the runs before it. At a rate
        # (the replica search compares runs that differ only by their rate) each run times its own
        # steps, exactly as the configuration simulated alone; saturated, one timer per layout.
        timer = (
            StepTimer(spec, gpu, time_model, layout, Fraction(weight_bits), kv_bits, compute_dtype)
            if qps is not None or layout not in timers
            else timers[layout]
        )
        timers.setdefault(layout, timer)
        return run_configuration(
            spec,
            gpu,
            layout,
            load,
            _engine_for(c, base, qps is None),
            time_model,
            policy,
            replicas=replicas,
            targets=targets,
            usd_per_gpu_hour=usd_per_gpu_hour,
            weight_bits=weight_bits,
            kv_bits=kv_bits,
            compute_dtype=compute_dtype,
            seed=seed,
            timer=timer,
            candidate=c,
        )

    if qps is None:
        for (layout, replicas), picks in {k: _picks(g, targets) for k, g in groups.items()}.items():
            for c in picks:
                load = _closed_loop(
                    traffic,
                    c.concurrency * replicas,
                    requests * replicas,
                    c.ttft_s + c.tpot_s * (c.output_tokens_per_s / max(c.requests_per_s, 1e-9) - 1),
                )
                runs.append(run(layout, replicas, c, load))
    else:
        bound = _implicit_ttft(targets)
        fewest_gpus = screen.gpu_budget  # of a layout found good so far: no other needs to try more
        starts = sorted(_at_a_rate(groups).items(), key=lambda kv: (kv[1][0] * kv[0].gpus, kv[0].gpus))
        for layout, (lo, c) in starts:
            hi = min(screen.gpu_budget, fewest_gpus) // layout.gpus
            if hi < lo:
                continue

            def at(n: int, layout: Layout = layout, c: Candidate = c) -> ServeRun:
                load = traffic
                if isinstance(traffic, Workload) and traffic.requests is None:
                    load = Workload(
                        traffic.arrivals, traffic.input_tokens, traffic.output_tokens, traffic.prefix, requests * n
                    )
                return run(layout, n, c, load)

            tried = _fewest_replicas(lo, hi, at, lambda r: _good(r, bound), lambda r: _distance(r, targets, bound))
            runs += tried
            fewest_gpus = min([fewest_gpus, *(r.gpus for r in tried if _good(r, bound))])
    ranked = tuple(sorted(runs, key=lambda r: _rank_key(r, qps)))
    best = ranked[0]
    if not best.meets:
        raise _nothing_meets(ranked, targets)
    if qps is not None and not _good(best, _implicit_ttft(targets)):
        raise _nothing_keeps_up(ranked, qps, screen.gpu_budget, gpu.name)
    return SimulatedPlan(
        spec.name,
        gpu.name,
        best.workload,
        qps,
        dict(targets),
        screen.gpu_budget,
        best,
        best.ttft_s,
        best.tpot_s,
        best.itl_s,
        best.e2e_s,
        best.percentiles,
        best.goodput_rps,
        best.gpus,
        best.output_tokens_per_s_per_gpu,
        best.usd_per_million_output_tokens,
        ranked,
        screen,
        [
            note("serve.simulated_plan", simulated=len(ranked), per_layout=PER_LAYOUT, requests=requests, qps=qps),
            *best.conventions,
            *(n for n in notes if n not in best.conventions),
            *_plan_warnings(best, qps, targets),
        ],
    )


def _implicit_ttft(targets: Mapping[str, Target]) -> float | None:
    """The P99 TTFT bound a plan at a rate keeps without a TTFT target (:data:`SANE_TTFT_S`)."""
    return None if "ttft_s" in targets else SANE_TTFT_S


def _good(run: ServeRun, bound: float | None) -> bool:
    """Whether ``run`` meets its targets, refuses nothing and, without a TTFT target, keeps its
    P99 TTFT within ``bound``."""
    p99 = run.percentiles["ttft_s"].p99
    return run.meets and (bound is None or (p99 is not None and p99 <= bound))


def _distance(run: ServeRun, targets: Mapping[str, Target], bound: float | None) -> float:
    """How far ``run`` is from its targets: the largest of each target's reached value over its
    bound (and the P99 TTFT over ``bound``); at most 1 when it meets them."""
    s = run.simulation.summary
    ratios = [(t.value(getattr(s, m)) or 0.0) / t.seconds for m, t in targets.items()]
    p99 = run.percentiles["ttft_s"].p99
    if bound is not None and p99 is not None:
        ratios.append(p99 / bound)
    return max(ratios, default=0.0)


def _nothing_keeps_up(runs: Sequence[ServeRun], qps: float, budget: int, gpu: str) -> InputError:
    """The one-line error when, at ``qps``, no replica count within the budget keeps the P99 TTFT
    within :data:`SANE_TTFT_S` (no TTFT target given)."""
    most = max(runs, key=lambda r: (r.gpus, -(r.percentiles["ttft_s"].p99 or 0.0)))
    reached = most.percentiles["ttft_s"].p99
    return InputError(
        f"qps {qps:g}: no configuration within {budget:,} x {gpu} keeps the P99 TTFT within "
        f"{fmt_seconds(SANE_TTFT_S)} (the most simulated, {most.describe()}, reaches "
        f"{fmt_seconds(reached or 0.0)}); raise gpus, lower qps or give a ttft_s target",
        fields=("qps", "gpus"),
    )


def _plan_warnings(best: ServeRun, qps: float | None, targets: Mapping[str, Target]) -> list[Note]:
    """What a user must be told about the chosen plan: at a rate without a TTFT target, the bound
    it was held to; a P99 TTFT past :data:`SANE_TTFT_S` (saturated: requests waiting for a slot)."""
    out = []
    if qps is not None and "ttft_s" not in targets:
        out.append(note("serve.implicit_ttft", bound=SANE_TTFT_S))
    p99 = best.percentiles["ttft_s"].p99
    if p99 is not None and p99 > SANE_TTFT_S:
        queued = [r.queue_s for r in best.simulation.requests]
        out.append(
            note(
                "warning.serve_ttft",
                what="P99 TTFT",
                ttft=p99,
                bound=SANE_TTFT_S,
                queue=sum(queued) / len(queued) if queued else 0.0,
                saturated=qps is None,
            )
        )
    return out


def _closed_loop(traffic: Workload | Trace, users: int, requests: int, ramp_s: float) -> Workload:
    """``traffic``'s lengths and prefixes sent by ``users`` closed-loop users with no think time,
    their first requests spread over ``ramp_s`` (the screen's E2E: no start-up burst), ``requests``
    requests in all (a trace: its mean lengths)."""
    if isinstance(traffic, Trace):
        from llm_cost.simulate import Fixed

        rows = traffic.rows
        mean_in = round(sum(r.input_tokens for r in rows) / len(rows))
        mean_out = round(sum(r.output_tokens for r in rows) / len(rows))
        return Workload(ClosedLoop(users, ramp_s=ramp_s), Fixed(mean_in), Fixed(max(2, mean_out)), None, requests)
    return Workload(
        ClosedLoop(users, ramp_s=ramp_s), traffic.input_tokens, traffic.output_tokens, traffic.prefix, requests
    )


@record
class GpuPlan:
    """One GPU's answer in a comparison: its price, its plan (None when it has none) or why not."""

    gpu: str
    usd_per_gpu_hour: float | None
    plan: SimulatedPlan | None
    error: str | None
    cheapest: bool


@record
class ServeComparison(Result):
    """The plan on each GPU for the same traffic and targets (``llm-cost serve --gpu a,b,c``);
    ``cheapest`` the GPU whose plan costs least per million output tokens (None without prices or
    plans)."""

    model: str
    workload: str
    qps: float | None
    targets: dict[str, Target]
    plans: tuple[GpuPlan, ...]
    cheapest: str | None
    conventions: list[Note] = field(default_factory=list)


def compare_gpus(
    model: str,
    workload: str,
    qps: float | None,
    targets: Mapping[str, Target],
    answers: Sequence[tuple[str, float | None, SimulatedPlan | None, str | None]],
) -> ServeComparison:
    """The side-by-side result of each GPU's (name, price, plan, error), the cheapest marked."""
    priced = [
        (p.usd_per_million_output_tokens, g)
        for g, _, p, _ in answers
        if p is not None and p.usd_per_million_output_tokens is not None
    ]
    cheapest = min(priced)[1] if priced else None
    plans = tuple(GpuPlan(g, price, plan, error, g == cheapest) for g, price, plan, error in answers)
    return ServeComparison(model, workload, qps, dict(targets), plans, cheapest, [note("serve.compare")])
