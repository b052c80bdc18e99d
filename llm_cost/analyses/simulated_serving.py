"""Serving answered by simulation (``llm-cost serve`` with a rate, a workload or a trace): one
configuration's distribution of TTFT, TPOT, ITL and E2E, its checks, notes and error band.

**One configuration.** ``replicas`` replicas of one layout share the traffic evenly (a router
sending each request to the replicas in turn: an open loop's rate and a closed loop's users are
divided among them, a trace's rows dealt out in turn); one replica is simulated
(:func:`llm_cost.simulate.simulate`) and the deployment's rates are ``replicas`` times its own.

The plan over candidates and the GPUs side by side: :mod:`llm_cost.analyses.simulated_plan`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from fractions import Fraction
from typing import Any

from llm_cost.analyses.capacity import DEFAULT_RUNTIME_RESERVE_BYTES, MemoryPolicy
from llm_cost.analyses.launch import Launch
from llm_cost.analyses.serving import COST_ALL_OUTPUT, Candidate, StepBand
from llm_cost.analyses.serving.search import longer_than_context, pcie_note
from llm_cost.analyses.serving_runs import ServingBand, replica_kv_pool
from llm_cost.core.choices import BandSource, Router
from llm_cost.core.errors import InputError
from llm_cost.core.limits import MAX_DECODE_STEPS, MAX_PLAN_GPUS
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Dtype
from llm_cost.core.units import fmt_rate, fmt_seconds
from llm_cost.model.layout import Layout, layout_label
from llm_cost.perf.calibrated import CalibratedModel, band_for
from llm_cost.perf.profile import Profile
from llm_cost.perf.timemodel import TimeModel
from llm_cost.simulate import (
    ClosedLoop,
    EngineConfig,
    ScaledTimer,
    SimResult,
    StepTimer,
    Target,
    Trace,
    Workload,
    goodput_rps,
    simulate,
)
from llm_cost.simulate.intervals import interval
from llm_cost.simulate.results import METRICS, Distribution, RequestTimes, Summary, steady_least
from llm_cost.simulate.workload import drawn_mean, shortest
from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = [
    "Percentiles",
    "ServeRun",
    "StepBand",
    "run_configuration",
    "check_decode_steps",
    "with_band",
    "step_shape",
    "step_band_factor",
    "per_replica",
    "offered_rps",
    "describe",
    "mean_lengths",
    "upper_end",
    "STATISTICS",
]


@record
class Percentiles:
    """P50, P90 and P99 of a latency, seconds (None without samples); ``more``: any other
    percentile a target bounds (``{"p95": 1.2}``).

    ``ci``: the sampling interval of each statistic (``mean``, ``p50``, ``p90``, ``p99`` and those
    of ``more``) in this run, [low, high] seconds, widened to hold another seed's estimate
    (:func:`llm_cost.simulate.intervals.interval` with ``rerun``; None: too few samples, and for
    ITL, whose gaps within a step are not independent draws). ``interval``: the figure's whole
    uncertainty, the step-time band and the sampling together: from the least to the greatest of
    the band's runs' ``ci`` ends (only with a band). ``*_low_s`` / ``*_high_s``: the figure in the
    band's run that gives the lower and the higher value (:func:`with_band`: each a single run's)."""

    p50: float | None
    p90: float | None
    p99: float | None
    more: dict[str, float | None] = field(default_factory=dict)
    # the error band of each (the chosen plan, one configuration: :func:`with_band`), seconds
    p50_low_s: float | None = None
    p50_high_s: float | None = None
    p90_low_s: float | None = None
    p90_high_s: float | None = None
    p99_low_s: float | None = None
    p99_high_s: float | None = None
    more_low_s: dict[str, float | None] = field(default_factory=dict)
    more_high_s: dict[str, float | None] = field(default_factory=dict)
    ci: dict[str, tuple[float, float] | None] = field(default_factory=dict)
    interval: dict[str, tuple[float, float] | None] = field(default_factory=dict)


#: The per-request figure of each latency whose sampling interval is drawn (ITL has none).
_PER_REQUEST = {"ttft_s": "ttft_s", "tpot_s": "tpot_s", "e2e_s": "e2e_s"}
#: The statistics a latency's interval is drawn for, with the percentile of each (None: the mean).
STATISTICS = {"mean": None, "p50": 50.0, "p90": 90.0, "p99": 99.0}


def _percentiles(
    d: Distribution, target: Target | None = None, values: Sequence[float | None] | None = None, span: float = 0.0
) -> Percentiles:
    """P50, P90, P99 of ``d``, and the percentile ``target`` bounds when it is another; with the
    per-request ``values`` in arrival order, each statistic's sampling interval."""
    more = {target.name: target.value(d)} if target is not None and target.percentile is not None else {}
    wanted = dict(STATISTICS)
    if target is not None and target.percentile is not None:
        wanted[target.name] = target.percentile
    ci = {name: interval(values, p, rerun=True, span=span) for name, p in wanted.items()} if values is not None else {}
    return Percentiles(d.p50, d.p90, d.p99, more, ci=ci)


def upper_end(p: Percentiles, target: Target, reached: float | None) -> float | None:
    """The upper end of the sampling interval of the statistic ``target`` bounds (``reached`` when
    there is none)."""
    ci = p.ci.get(target.name)
    return reached if ci is None else max(ci[1], reached or 0.0)


@record
class ServeRun(Result):
    """One configuration simulated: ``replicas`` x ``layout`` under ``engine`` serving the traffic
    described by ``workload`` (``qps``: the rate offered to the deployment, None for a closed loop).

    Means and ``percentiles`` (``ttft_s``, ``tpot_s``, ``itl_s``, ``e2e_s``, each P50/P90/P99) are
    over every completed request (ITL: over every gap between output tokens); ``goodput_rps``
    the deployment's requests/s that meet every target (DistServe); rates are the deployment's
    (``replicas`` x one replica's), measured over the run's steady window (from the completion that
    ends the warm-up to the last completion at or before the last request is issued:
    :func:`llm_cost.simulate.results.steady_window`; the whole run's in
    ``simulation.summary``, which counts the warm-up and the drain), as are ``goodput_rps``,
    ``throughput_rps``, ``output_tokens_per_s``, the dollar figures and ``running_mean`` /
    ``waiting_mean``; a run too short for the window (fewer than 10 completions in it) reports
    the whole run's. ``violates`` lists each target missed (``ttft_s p99``) and
    ``rejected`` when a request was refused. ``usd_per_million_output_tokens``: the deployment's
    GPU time over the output tokens served, all of it charged to output tokens (prompts are not
    priced apart: ``cost_convention``). Engine figures are one replica's time averages:
    ``running_mean`` (the occupancy), ``waiting_mean``, ``kv_use_mean`` / ``kv_use_max``
    (fraction of KV blocks, over the whole run), ``preemptions``. ``candidate`` is the analytic screen's configuration
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
    cost_convention: str = COST_ALL_OUTPUT
    # the error band (:func:`with_band`; None: not drawn, as for a candidate not chosen, or no
    # profile band): each figure re-simulated at the fast and the slow end of the step times
    ttft_low_s: float | None = None
    ttft_high_s: float | None = None
    tpot_low_s: float | None = None
    tpot_high_s: float | None = None
    itl_low_s: float | None = None
    itl_high_s: float | None = None
    e2e_low_s: float | None = None
    e2e_high_s: float | None = None
    goodput_rps_low: float | None = None
    goodput_rps_high: float | None = None
    output_tokens_per_s_low: float | None = None
    output_tokens_per_s_high: float | None = None
    output_tokens_per_s_per_gpu_low: float | None = None
    output_tokens_per_s_per_gpu_high: float | None = None
    usd_per_million_output_tokens_low: float | None = None
    usd_per_million_output_tokens_high: float | None = None
    violates_at_slow_end: tuple[str, ...] | None = None  # the targets missed at the band's slow end
    band: StepBand | None = None
    simulated_requests: int = 0  # the requests completed in the simulation (every replica simulated)
    router: str | None = None  # how the requests were spread over the replicas simulated side by side
    violates_upper: tuple[str, ...] = ()  # the targets missed at the upper end of the sampling interval
    # the targets missed on the pessimistic side of both uncertainties: the band's slow end, at the
    # upper end of its sampling interval (None without a band)
    violates_pessimistic: tuple[str, ...] | None = None
    timed_at: str = "nominal"  # the step times simulated: "nominal", or the band's "slow end"
    # the share of requests whose own figure meets each target (TTFT, TPOT, E2E; ITL: its longest gap),
    # the per-request view beside a target on the mean or a percentile
    within: dict[str, float] = field(default_factory=dict)

    @property
    def meets(self) -> bool:
        """Whether every target holds and no request was refused."""
        return not self.violates

    def describe(self) -> str:
        """``2 x TP4`` (replicas x layout: :func:`~llm_cost.model.layout.layout_label`)."""
        return f"{self.replicas:,} x {layout_label(self.layout)}"


def describe(traffic: Workload | Trace) -> str:
    """The traffic in a few words: arrivals, lengths, shared prefix."""
    if isinstance(traffic, Trace):
        return f"trace of {len(traffic.rows):,} requests over {fmt_seconds(traffic.span_s)}"  # not "over 0 s"
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
        each = f"{p.users_per_group:,} prefix user{'s' if p.users_per_group > 1 else ''} each"
        dealt = f"requests dealt to the {p.groups * p.users_per_group:,} in turn"
        text += f"; {p.groups:,} shared prefixes of {p.tokens:,} tokens ({each}, {dealt})"
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
    drawn = drawn_mean(lengths)
    clipped = (
        f"; clipped to {lengths.low:,}-{lengths.high:,}" if lengths.high is not None else f"; at least {lengths.low:,}"
    )
    moved = f"{clipped}: mean {drawn:,.0f} drawn" if drawn != lengths.mean else ""
    return f"{name} (mean {lengths.mean:,.0f}, sd {lengths.sd:,.0f}{moved})"


def offered_rps(traffic: Workload | Trace) -> float | None:
    """The mean arrival rate of an open loop or a trace, requests/s (None for a closed loop)."""
    if isinstance(traffic, Trace):
        return len(traffic.rows) / traffic.span_s if traffic.span_s > 0 else None
    a = traffic.arrivals
    if isinstance(a, ClosedLoop):
        return None
    finite = [s for s in a.stages if not math.isinf(s.duration_s)]
    if len(finite) < len(a.stages):
        return a.stages[-1].rate_rps if not finite else max(s.rate_rps for s in a.stages)
    return sum(s.rate_rps * s.duration_s for s in finite) / sum(s.duration_s for s in finite)


def per_replica(traffic: Workload, replicas: int) -> Workload:
    """A closed loop's share of one of ``replicas`` replicas: its users split evenly, each user
    kept to one replica (module docstring)."""
    a = traffic.arrivals
    if replicas == 1 or not isinstance(a, ClosedLoop):
        return traffic
    requests = -(-traffic.requests // replicas) if traffic.requests is not None else None
    users = ClosedLoop(-(-a.users // replicas), a.think_s, a.think, a.duration_s, a.ramp_s)
    return Workload(users, traffic.input_tokens, traffic.output_tokens, traffic.prefix, requests)


def _violations(result: SimResult, targets: Mapping[str, Target], overloaded: bool = False) -> tuple[str, ...]:
    """The targets missed by the point values, ``rejected`` when a request was refused and
    ``overloaded`` when the rate outgrows the deployment (:func:`_overloaded`)."""
    s = result.summary
    missed = tuple(f"{m} {t.name}" for m, t in targets.items() if not t.met(getattr(s, m)))
    return missed + (("rejected",) if s.rejected else ()) + (("overloaded",) if overloaded else ())


def _violations_upper(
    result: SimResult, targets: Mapping[str, Target], percentiles: Mapping[str, Percentiles], overloaded: bool = False
) -> tuple[str, ...]:
    """The targets missed at the upper end of their statistic's sampling interval (the point value
    where there is none), ``rejected`` when a request was refused, ``overloaded`` as
    :func:`_violations`."""
    s = result.summary
    missed = []
    for m, t in targets.items():
        upper = upper_end(percentiles[m], t, t.value(getattr(s, m)))
        if upper is not None and upper > t.seconds:
            missed.append(f"{m} {t.name}")
    return tuple(missed) + (("rejected",) if s.rejected else ()) + (("overloaded",) if overloaded else ())


def _within(result: SimResult, targets: Mapping[str, Target]) -> dict[str, float]:
    """The share of completed requests whose own figure meets each target (:data:`METRICS`'s
    per-request field: ITL's longest gap); a request without one (TPOT of one token) meets it."""
    done = result.requests
    if not done:
        return {}
    out = {}
    for m, t in targets.items():
        field_ = METRICS[m]
        out[m] = sum(1 for r in done if (v := getattr(r, field_)) is None or v <= t.seconds) / len(done)
    return out


#: Goodput below this share of the throughput is flagged (:func:`_goodput_note`).
GOODPUT_SHARE = 0.5


def _goodput_note(
    goodput: float, served: float, within: Mapping[str, float], targets: Mapping[str, Target]
) -> list[Note]:
    """A warning when fewer than :data:`GOODPUT_SHARE` of the requests served meet every target on
    their own: the targets bound a statistic (the mean, a percentile) that can hold while most
    requests miss them, or each target holds for most requests but few meet all at once."""
    if not targets or served <= 0 or goodput >= GOODPUT_SHARE * served:
        return []
    worst = min(within, key=lambda m: within[m])
    t = targets[worst]
    return [
        note(
            "warning.serve_goodput",
            goodput=goodput,
            served=served,
            metric=worst,
            statistic=t.name,
            seconds=t.seconds,
            missed=1 - within[worst],
            shares={m: 1 - v for m, v in within.items()},
        )
    ]


#: A served rate below this share of a steady offered rate is flagged (:func:`_overload_note`): a
#: Poisson run of 1,000 requests serves within a few percent of its rate when it keeps up.
SERVED_SHARE = 0.9
#: ... with at least this many requests waiting on average: a short run's served rate is its few
#: arrivals' (30 requests at 1/s served at 0.8/s with none waiting) ...
WAITING_LEAST = 1.0
#: ... or, below :data:`KEEPS_UP_SHARE` of it, with a backlog that grows: the mean E2E of the last
#: quarter of its requests (by arrival) this many times that of the second (the first is the
#: warm-up). A backlog the engine admits (``max_num_seqs`` 1,024) runs rather than waits, every
#: step slower than the last, and a short run's served rate reads low while its sequences in flight
#: still grow to their number (one H100 at 11.4 requests/s of 2K prompts: 88% over 400 requests,
#: 97% over 2,455), so neither the waiting nor the served rate alone tells; a growing E2E does.
BACKLOG_GROWTH = 1.5
#: The served share at which a run keeps up whatever its E2E does (:data:`BACKLOG_GROWTH`).
KEEPS_UP_SHARE = 0.97
#: The fewest requests a quarter of the run needs for :data:`BACKLOG_GROWTH` to be read.
BACKLOG_LEAST = 25
#: A served rate below this share of the offered one is overloaded whatever the queue and the E2E
#: do (with at least 4 x :data:`BACKLOG_LEAST` requests done: a Poisson count of 100 strays 10%, and
#: a run that keeps up read 88% at the least above, its window still filling): a run shorter than a
#: few of its E2Es admits every arrival (``max_num_seqs`` 1,024) and its drain serves the last
#: arrivals fastest, so its E2E falls by arrival while its steady window serves 41% of the rate (2 x
#: TP4 of Llama-3.1-70B on H200 at 10 requests/s of 2K/512, 400 requests: E2E 31.8 s in the first
#: quarter, 16.4 s in the last; 4 x TP2: 64%).
SERVED_AT_LEAST = 0.75


def _backlog_grows(done: Sequence[RequestTimes]) -> bool:
    """Whether the mean E2E of the last quarter of the completed requests, by arrival, is
    :data:`BACKLOG_GROWTH` times that of the second (each at least :data:`BACKLOG_LEAST`)."""
    ordered = sorted(done, key=lambda r: r.arrival_s)
    n = len(ordered) // 4
    if n < BACKLOG_LEAST:
        return False
    second = sum(r.e2e_s for r in ordered[n : 2 * n]) / n
    last = ordered[3 * n :]
    return sum(r.e2e_s for r in last) / len(last) > BACKLOG_GROWTH * second


def _overloaded(
    traffic: Workload | Trace, served: float, waiting: float, done: Sequence[RequestTimes], admitted: float = 1.0
) -> bool:
    """Whether an open loop at one rate outgrows its deployment: served at under
    :data:`SERVED_SHARE` of it with requests queueing (:data:`WAITING_LEAST`), under
    :data:`KEEPS_UP_SHARE` of it with a growing backlog (:func:`_backlog_grows`, over the ``done``
    requests), or under :data:`SERVED_AT_LEAST` of it at all. Its latencies then grow with the run's length (llama3-8b on one H100 at 15
    requests/s of 2K prompts: 10.8 served, 87 waiting, P99 TTFT 14.9 s over 1,000 requests and
    51.6 s over 3,000), and it meets no target however its percentiles read (:func:`_violations`:
    ``overloaded``): a plan of llama3-8b chose 67 x TP1 at 1,000 requests/s (299 requests per
    replica, serving 408, none waiting). Not overloaded: a run whose E2E is high but flat (8 x TP1 at
    100 requests/s: continuous batching settles at a large batch, E2E 14.6 s in both quarters,
    served 90.6 of 100 over a window its batch was still filling). ``admitted``: the share of the
    requests the engine admitted, the rest refused as too long, which no rate or GPU count serves (an
    attacker's lengths up to 15,000 on an 8,192 context were told the rate was too high)."""
    if isinstance(traffic, Trace) or isinstance(traffic.arrivals, ClosedLoop) or len(traffic.arrivals.stages) != 1:
        return False
    offered = offered_rps(traffic)
    offered = None if offered is None else offered * admitted
    if offered is None or served >= KEEPS_UP_SHARE * offered:
        return False
    if served < SERVED_AT_LEAST * offered and len(done) >= 4 * BACKLOG_LEAST:
        return True
    return (served < SERVED_SHARE * offered and waiting >= WAITING_LEAST) or _backlog_grows(done)


def _overload_note(traffic: Workload | Trace, served: float, waiting: float, overloaded: bool) -> list[Note]:
    """A warning when the run is ``overloaded`` (:func:`_overloaded`)."""
    if not overloaded:
        return []
    offered = offered_rps(traffic)
    return [note("warning.serve_overloaded", offered=offered, served=served, waiting=waiting)]


#: An ITL P90 this many times a met TPOT target's value is flagged (:func:`_stall_note`).
STALL_RATIO = 2.0


def _stall_note(summary: Summary, goals: Mapping[str, Target], chunk_tokens: int | None) -> list[Note]:
    """A warning when a TPOT target holds, no ITL target is set, and the run's ITL P90 (over every
    gap between output tokens) is at least :data:`STALL_RATIO` x the TPOT target: TPOT is each
    request's mean gap, so the steps that also run other requests' prompt chunks (chunked
    prefill: up to ``chunk_tokens`` tokens a step, vLLM's max_num_batched_tokens; None: whole
    prompts, without chunked prefill) stall its decodes unseen. llama3-8b on one H100 at 6 req/s
    of 6K-token prompts: TPOT 64.6 ms under a 70 ms target, ITL P90 207 ms."""
    tpot = goals.get("tpot_s")
    p90 = summary.itl_s.p90
    if tpot is None or "itl_s" in goals or p90 is None or not tpot.met(summary.tpot_s):
        return []
    if p90 < STALL_RATIO * tpot.seconds:
        return []
    return [note("warning.itl_stalls", itl_p90_s=p90, tpot=tpot.label(), ratio=p90 / tpot.seconds, chunk=chunk_tokens)]


def _simulate_deployment(
    spec: ModelSpec,
    gpu: HardwareSpec,
    layout: Layout,
    traffic: Workload | Trace,
    engine: EngineConfig,
    time_model: TimeModel,
    tokens: int,
    state_blocks: int,
    replicas: int,
    router: Router,
    formats: dict[str, Any],
    seed: int | str,
    timer: StepTimer | None,
) -> tuple[SimResult, int]:
    """The simulation of ``replicas`` x ``layout`` serving ``traffic`` (module docstring) and the
    factor its rates are multiplied by to be the deployment's: an open loop or a trace runs every
    replica behind ``router`` (1), or one standing for all (``replicas``:
    :func:`~llm_cost.simulate.exchangeable`); a closed loop one replica with its share of the
    users (``replicas``)."""
    closed = isinstance(traffic, Workload) and isinstance(traffic.arrivals, ClosedLoop)
    result = simulate(
        spec,
        gpu,
        per_replica(traffic, replicas) if closed else traffic,  # type: ignore[arg-type]
        engine,
        time_model,
        layout,
        kv_capacity_tokens=tokens,
        sequence_state_blocks=state_blocks,
        seed=seed,
        timer=timer,
        replicas=1 if closed else replicas,
        router=router,
        **formats,
    )
    return result, replicas if closed else replicas // result.simulated_replicas


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
    band: bool = False,
    serving_band: ServingBand | None = None,
    router: Router = Router.ROUND_ROBIN,
) -> ServeRun:
    """Simulate ``replicas`` x ``layout`` serving ``traffic`` (module docstring; ``router`` spreads
    an open loop's requests over the replicas, all simulated); the KV cache holds
    what ``policy`` leaves after the weights, a hybrid model's per-sequence state held once per running
    request (:func:`~llm_cost.analyses.serving_runs.replica_kv_pool`).
    ``band``: with its error band (:func:`with_band`, two more simulations; ``serving_band``: drawn
    from the measured serving runs rather than from the profile). InputError when no KV block fits,
    or for an invalid workload or engine setting."""
    if band:
        timer = timer or StepTimer(spec, gpu, time_model, layout, weight_bits, kv_bits, compute_dtype)

        def again(t: StepTimer) -> ServeRun:
            return run_configuration(
                spec, gpu, layout, traffic, engine, time_model, policy, replicas=replicas, targets=targets,
                usd_per_gpu_hour=usd_per_gpu_hour, weight_bits=weight_bits, kv_bits=kv_bits,
                compute_dtype=compute_dtype, seed=seed, timer=t, candidate=candidate, notes=notes, router=router,
            )  # fmt: skip

        return with_band(again(timer), again, timer, time_model, serving_band)
    goals = dict(targets or {})
    pool = replica_kv_pool(spec, gpu, layout, engine, policy, weight_bits, kv_bits)
    tokens = pool.tokens
    if tokens < engine.block_tokens * (1 + pool.state_blocks):
        raise _chunk_too_large(spec, gpu, layout, engine, policy, weight_bits, kv_bits) or no_kv_room(
            spec, gpu, layout.gpus, policy, "layout"
        )
    formats = dict(weight_bits=weight_bits, kv_bits=kv_bits, compute_dtype=compute_dtype)
    if candidate is None:
        timer = timer or StepTimer(spec, gpu, time_model, layout, weight_bits, kv_bits, compute_dtype)
        too_long = _all_refused(traffic, engine, tokens, True, spec.max_position_embeddings)
        if too_long is not None and (_every_request_too_long(traffic, engine) or _never_fits(traffic, tokens)):
            raise too_long  # before the load's checks (an attacker's 120K prompts on an L4 were told
            # --gpus 21 by the prefill check, then refused there on the KV cache)
        _check_prefill_keeps_up(traffic, engine, timer, replicas, layout)
        check_decode_steps(traffic, timer)
    result, scale = _simulate_deployment(
        spec, gpu, layout, traffic, engine, time_model, tokens, pool.state_blocks, replicas, router, formats, seed,
        timer,
    )  # fmt: skip
    s = result.summary
    if s.rejected and not s.requests:
        too_long = _all_refused(traffic, engine, tokens, candidate is None, spec.max_position_embeddings)
        if too_long is not None:
            raise too_long
    return _serve_run(
        spec.name, gpu, layout, traffic, engine, time_model, replicas, goals, usd_per_gpu_hour, result, scale,
        tokens, candidate, [*_refused_rows(traffic, engine), *notes],
    )  # fmt: skip


def _chunk_too_large(
    spec: ModelSpec,
    gpu: HardwareSpec,
    layout: Layout,
    engine: EngineConfig,
    policy: MemoryPolicy,
    weight_bits: int | Fraction,
    kv_bits: int,
) -> InputError | None:
    """The refusal naming ``max_num_batched_tokens`` when it is the step's activation workspace, not
    the weights, that leaves no KV block: the largest budget (halving, down to the engine's default
    budget, :class:`~llm_cost.simulate.EngineConfig`'s) that leaves one (an attack: a
    1,048,576-token chunk was refused as "more GPUs (--tp/--pp)"); None when no smaller budget helps."""
    budget, least = engine.max_num_batched_tokens, EngineConfig().max_num_batched_tokens
    while budget > least:
        budget //= 2
        smaller = dataclasses.replace(engine, max_num_batched_tokens=budget)
        pool = replica_kv_pool(spec, gpu, layout, smaller, policy, weight_bits, kv_bits)
        if pool.tokens >= engine.block_tokens * (1 + pool.state_blocks):
            return InputError(
                f"max_num_batched_tokens: the activation workspace of a {engine.max_num_batched_tokens:,}-token step "
                f"leaves {gpu.name} x {layout.gpus} no room for a KV block after {spec.name}'s weights; give "
                f"max_num_batched_tokens {budget:,} or fewer",
                fields=("max_num_batched_tokens",),
            )
    return None


def no_kv_room(spec: ModelSpec, gpu: HardwareSpec, gpus: int, policy: MemoryPolicy, where: str) -> InputError:
    """The refusal of a layout whose memory share holds no KV block after the weights: it names the
    share of memory the engine may use (``gpu_memory_utilization``, the user's own when it is small)
    and a reserve other than the default (``reserve_bytes``: an attack gave 80 GB and was told to
    raise the share) beside the GPUs (``where``: the argument that chose them) and the weights'
    format."""
    share = f"{float(policy.utilization):g}"
    reserve = policy.reserve_bytes != DEFAULT_RUNTIME_RESERVE_BYTES
    less = f" less reserve_bytes {policy.reserve_bytes / 1e9:,.3g} GB" if reserve else ""
    return InputError(
        f"{where}: {gpu.name} x {gpus} with gpu_memory_utilization {share}{less} leaves no room for a KV block "
        f"after {spec.name}'s weights; give {'a smaller reserve_bytes, ' if reserve else ''}a larger "
        f"gpu_memory_utilization (at most 1), more GPUs ({where}) or a smaller weights_dtype",
        fields=(where, "gpu_memory_utilization", "weights_dtype", *(("reserve_bytes",) if reserve else ())),
    )


def _prefill_rate(engine: EngineConfig, timer: StepTimer, budget: int, ranks: int = 1, prompt: float = 0.0) -> float:
    """Prompt tokens/s a replica prefills at most with ``budget`` tokens a step: a step of nothing
    but prompt chunks filling the budget, back to back (decodes only take budget from it), as many
    prompts of ``prompt`` tokens as the budget holds (0: one chunk); an attention data-parallel
    replica's ``ranks`` each prefill their own chunk of their share of the budget."""
    prompts = max(ranks, int(budget // prompt) if prompt >= 1 else 1)
    return budget / timer.seconds(0, 0, budget, 0, min(prompts, budget))


def check_decode_steps(traffic: Workload | Trace, timer: StepTimer) -> None:
    """InputError when ``traffic``'s requests would decode nearly alone for more than
    :data:`MAX_DECODE_STEPS` engine steps: at a low rate each request's output tokens take a step
    each, shared with the few sequences in flight, about rate x output x the one-sequence step time
    of them (Little's law at light load); the token cap of a simulation assumes steps shared by many.
    The error names the most requests that stay within it."""
    from llm_cost.simulate import Trace as _Trace
    from llm_cost.simulate.workload import request_bound

    rate = offered_rps(traffic)
    if rate is None:
        return
    count = float(len(traffic.rows)) if isinstance(traffic, _Trace) else request_bound(traffic)
    prompt, output = mean_lengths(traffic)
    if not math.isfinite(count) or output < 1:
        return
    alone = timer.time_of((1, int(prompt + output / 2), 0, 0, 0))  # timed, not met: the run's shapes stay its own
    in_flight = max(1.0, rate * output * alone)
    steps = count * output / in_flight
    if steps <= MAX_DECODE_STEPS:
        return
    most = max(1, int(MAX_DECODE_STEPS * in_flight / output))
    raise InputError(
        f"requests: {count:,.0f} arrivals of {output:,.0f} output tokens at {rate:,.3g}/s decode about "
        f"{in_flight:,.2g} at a time: about {steps:,.0f} engine steps, more than the {MAX_DECODE_STEPS:,} one "
        f"simulation takes (about 2 s); give at most {most:,} of them, or a higher rate",
        fields=("requests",),
    )


def _check_prefill_keeps_up(
    traffic: Workload | Trace, engine: EngineConfig, timer: StepTimer, replicas: int, layout: Layout
) -> None:
    """InputError when the prompt tokens offered to each replica (the traffic's rate and mean
    prompt less what the prefix cache holds) outrun what its token budget can prefill at all
    (:func:`_prefill_rate`): the queue would grow as long as the run, its latencies measuring the
    run's length. The error names the least budget that keeps up (doubled, then bisected); without chunked prefill
    (whole prompts, the budget no knob), the GPUs that do (an attack: ``--chunk off`` ran 30
    requests/s of 8K prompts on one H100, which serves 4.35). Judged on nominal step
    times (a band's end, :class:`~llm_cost.simulate.ScaledTimer`, is the prediction's error, not
    the input's). A trace is replayed as given, not refused: its arrivals are finite, so a burst
    faster than the replica prefills is a backlog that drains, which the run measures and its notes
    flag (an attacker's two requests 1 ms apart were refused as a queue growing without end)."""
    from llm_cost.simulate.workload import expected_cached_tokens

    rate = offered_rps(traffic)
    if rate is None or isinstance(traffic, Trace):
        return
    while isinstance(timer, ScaledTimer):  # the budget's own rate: nominal steps, not a band's end
        timer = timer.base
    prompt = mean_lengths(traffic)[0] - (expected_cached_tokens(traffic) if engine.prefix_caching else 0.0)
    offered = rate / replicas * max(prompt, 1.0)
    ranks = layout.dp
    most = _prefill_rate(engine, timer, engine.max_num_batched_tokens, ranks, prompt)
    if offered <= most:
        return
    budget, best = engine.max_num_batched_tokens, most
    while engine.chunked_prefill and budget < 1 << 20 and best < offered:  # a larger chunk: fewer steps
        budget *= 2
        best = max(best, _prefill_rate(engine, timer, budget, ranks, prompt))
    if best >= offered:  # the least budget that keeps up, between the last two doublings (an attacker:
        # --chunk 80 was told 160 or more, and 81 runs)
        low = budget // 2  # falls short
        while budget - low > 1:
            mid = (low + budget) // 2
            low, budget = (low, mid) if _prefill_rate(engine, timer, mid, ranks, prompt) >= offered else (mid, budget)
    head = (
        f"max_num_batched_tokens: {engine.max_num_batched_tokens:,} tokens a step prefill at most {most:,.0f} "
        f"prompt tokens/s on each {layout.gpus}-GPU replica, fewer than the {offered:,.0f} offered to it "
        f"({fmt_rate(rate / replicas)} requests/s of {prompt:,.0f} uncached prompt tokens): its queue would grow "
        "without end; "
    )
    if best < offered:  # no budget keeps up: the replica's compute does not
        needed = rate * max(prompt, 1.0) / best
        # a trace's rate is its own arrivals', not an argument's
        source, lower = ("trace", "a sparser trace") if isinstance(traffic, Trace) else ("qps", "a lower qps")
        gpus = math.ceil(needed) * layout.gpus if needed * layout.gpus <= MAX_PLAN_GPUS else None
        remedy = (
            f"give gpus {gpus:,} ({math.ceil(needed):,} replicas) or more, or {lower}"
            if gpus is not None
            else f"more than the {MAX_PLAN_GPUS:,} GPUs a plan takes would; give {lower}"
        )
        raise InputError(
            f"{source}: {fmt_rate(rate)} requests/s of {fmt_rate(prompt)} uncached prompt tokens offer {fmt_rate(offered)} "
            f"prompt tokens/s to each {layout.gpus}-GPU replica{f' (of {replicas:,})' if replicas > 1 else ''}, "
            f"which prefills at most {fmt_rate(best)}"
            f"{' at any token budget' if engine.chunked_prefill else ', a whole prompt a step'}: its queue would grow "
            "without end",
            fields=(source, "gpus"),
            advice=remedy,
        )
    raise InputError(
        head + f"give max_num_batched_tokens {budget:,} or more, more replicas, or a lower rate",
        fields=("max_num_batched_tokens", "qps"),
    )


def _refused_rows(traffic: Workload | Trace, engine: EngineConfig) -> list[Note]:
    """A warning when rows of a trace are longer than ``max_model_len`` (the engine refuses them),
    naming the setting that replays them all."""
    limit = engine.max_model_len
    if limit is None or not isinstance(traffic, Trace):
        return []
    long = [r.input_tokens + r.output_tokens for r in traffic.rows if r.input_tokens + r.output_tokens > limit]
    if not long or len(long) == len(traffic.rows):
        return []
    return [note("warning.refused_rows", rows=len(long), of=len(traffic.rows), limit=limit, longest=max(long))]


def _sampled_percentiles(
    result: SimResult, traffic: Workload | Trace, goals: Mapping[str, Target]
) -> dict[str, Percentiles]:
    """Each latency's percentiles (:data:`METRICS`) with the sampling intervals of its statistics,
    from the requests in arrival order. An open loop's batches hold at least the requests in
    flight at once (Little: completed requests x mean E2E over the run's span): a burst of
    arrivals holds them up together. A closed loop's users arrive as others finish, no burst;
    its batches stay the fixed count (a round of a closed loop of fixed lengths repeats the last,
    and its warm-up is a transient, not a seed's noise)."""
    s = result.summary
    order = sorted(result.requests, key=lambda r: r.arrival_s)
    span = s.end_s - s.start_s
    open_loop = offered_rps(traffic) is not None
    in_flight = len(order) * (s.e2e_s.mean or 0.0) / span if open_loop and span > 0 else 0.0
    return {
        m: _percentiles(
            getattr(s, m),
            goals.get(m),
            [getattr(r, _PER_REQUEST[m]) for r in order] if m in _PER_REQUEST else None,
            in_flight,
        )
        for m in METRICS
    }


def _run_notes(
    gpu: HardwareSpec,
    layout: Layout,
    engine: EngineConfig,
    time_model: TimeModel,
    replicas: int,
    result: SimResult,
    usd_per_gpu_hour: float | None,
    traffic: Workload | Trace,
) -> list[Note]:
    """What a simulated run says of itself: how it was simulated (the scheduler, the time model,
    the replicas simulated behind their router, the requests), its cost convention, TP over PCIe
    where the GPU has no GPU-to-GPU link, and stages its requests cut short."""
    return [
        note(
            "serve.simulated",
            label=time_model.label,
            engine=engine.engine,
            replicas=replicas,
            simulated=result.simulated_replicas,
            router=result.router,
            requests=result.summary.requests,
        ),
        note("serve.cost_simulated", price=usd_per_gpu_hour),
        *pcie_note(gpu, layout, time_model),
        *cut_stages_note(traffic),
        *_foreign_kernels_note(time_model, engine),
    ]


def _foreign_kernels_note(time_model: TimeModel, engine: EngineConfig) -> list[Note]:
    """A warning when the steps are timed by a profile fitted under another engine than the one
    scheduled (a profile of an engine the simulator does not schedule, as llama.cpp's, under
    vLLM's scheduler: an attacker's --profile ampere-llamacpp planned max_num_seqs 1 without a word,
    while --engine vllm beside it is refused as a contradiction)."""
    profile = time_model.profile if isinstance(time_model, CalibratedModel) else None
    if profile is None or profile.engine.value == engine.engine:
        return []
    return [note("serve.foreign_kernels", profile=profile.name, kernels=profile.engine.value, engine=engine.engine)]


def cut_stages_note(traffic: Workload | Trace) -> list[Note]:
    """A warning when an open loop's ``requests`` end it well before its stages do (a workload
    file's ``requests: 2000`` under 4 + 12 requests/s for 300 s each: 4,800 arrivals expected, the
    second stage cut after about 67 s): the stage the cap falls in and when, by the expected
    arrivals (rate x duration) of each stage in turn. Nothing within 1% of the stages' count."""
    if not isinstance(traffic, Workload) or traffic.requests is None or isinstance(traffic.arrivals, ClosedLoop):
        return []
    stages = traffic.arrivals.stages
    expected = math.fsum(s.rate_rps * s.duration_s for s in stages)
    if not math.isfinite(expected) or traffic.requests >= 0.99 * expected:
        return []
    before = 0.0
    for index, s in enumerate(stages):
        if before + s.rate_rps * s.duration_s >= traffic.requests:
            return [
                note(
                    "serve.stages_cut",
                    requests=traffic.requests,
                    expected=expected,
                    stage=index + 1,
                    stages=len(stages),
                    after_s=(traffic.requests - before) / s.rate_rps,
                    duration_s=s.duration_s,
                )
            ]
        before += s.rate_rps * s.duration_s
    return []


def _serve_run(
    model: str,
    gpu: HardwareSpec,
    layout: Layout,
    traffic: Workload | Trace,
    engine: EngineConfig,
    time_model: TimeModel,
    replicas: int,
    goals: dict[str, Target],
    usd_per_gpu_hour: float | None,
    result: SimResult,
    scale: int,
    tokens: int,
    candidate: Candidate | None,
    notes: Sequence[Note],
) -> ServeRun:
    """The deployment's figures of a simulation (:class:`ServeRun`): rates over the steady window
    (warm-up and drain left out; the run's when it has none) times ``scale`` (the replicas a
    simulated closed-loop replica stands for); engine figures one replica's."""
    s = result.summary
    span = s.end_s - s.start_s
    gpus = replicas * layout.gpus
    steady = result.steady
    served_rps = (steady.throughput_rps if steady else s.throughput_rps) * scale
    out_per_s = (steady.output_tokens_per_s if steady else s.output_tokens_per_s) * scale
    # the steady window sums the replicas simulated side by side; one standing for all is its own
    running = steady.running_mean / result.simulated_replicas if steady else result.running_mean
    waiting = steady.waiting_mean / result.simulated_replicas if steady else result.waiting_mean
    admitted = s.requests / (s.requests + s.rejected) if s.requests + s.rejected else 1.0
    overloaded = _overloaded(traffic, served_rps, waiting, result.requests, admitted)
    usd_m = usd_req = None
    paid_rps, paid_out_per_s = _paid_rates(traffic, served_rps, out_per_s, overloaded or s.rejected > 0)
    if usd_per_gpu_hour is not None and paid_out_per_s > 0:
        usd_per_s = usd_per_gpu_hour * gpus / 3600
        usd_m = usd_per_s / paid_out_per_s * 1e6
        usd_req = usd_per_s / paid_rps
    percentiles = _sampled_percentiles(result, traffic, goals)
    within = _within(result, goals)
    goodput = goodput_rps(result.requests, goals, span, steady) * scale
    return ServeRun(
        model,
        gpu.name,
        engine.engine,
        layout,
        replicas,
        gpus,
        describe(traffic),
        offered_rps(traffic),
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
        percentiles,
        goals,
        _violations(result, goals, overloaded),
        goodput,
        served_rps,
        out_per_s,
        out_per_s / gpus,
        s.requests * scale,
        s.rejected * scale,
        running,
        waiting,
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
            *_run_notes(gpu, layout, engine, time_model, replicas, result, usd_per_gpu_hour, traffic),
            *_overload_note(traffic, served_rps, waiting, overloaded),
            *_goodput_note(goodput, served_rps, within, goals),
            *_stall_note(s, goals, engine.max_num_batched_tokens if engine.chunked_prefill else None),
            *_steady_note(steady, s.requests, span),
            *notes,
        ],
        simulated_requests=s.requests,
        within=within,
        router=result.router,
        violates_upper=_violations_upper(result, goals, percentiles, overloaded),
    )


def _paid_rates(traffic: Workload | Trace, served_rps: float, out_per_s: float, short: bool) -> tuple[float, float]:
    """(requests/s, output tokens/s) a deployment's price is spread over: at one Poisson rate it
    keeps up with (not ``short``: overloaded, or refusing requests), the rate offered to all its
    replicas (an open loop is the deployment's whole traffic, however many replicas are simulated) and its mean
    output (:func:`~llm_cost.simulate.workload.drawn_mean`), which is what it serves in the long
    run; the steady window's own figures are a sample of them, so three GPUs of one price planned
    at 12 each for the same rate cost $3.262, $3.271 and $3.279 per million tokens, and the
    cheapest went to whichever seed's sample was largest (a new user; the offered basis:
    12 x $2.50/h over 10 x 256 tokens/s, $3.255). Otherwise (a closed loop, stages, a trace, a
    deployment falling behind) what the run served."""
    if short or isinstance(traffic, Trace) or isinstance(traffic.arrivals, ClosedLoop):
        return served_rps, out_per_s
    offered = offered_rps(traffic)
    if offered is None or len(traffic.arrivals.stages) != 1:
        return served_rps, out_per_s
    return offered, offered * drawn_mean(traffic.output_tokens)  # the whole deployment's rate


def _steady_note(steady: object, requests: int, span_s: float) -> list[Note]:
    """A warning when a run has no steady window: its rates are the whole run's, a burst's."""
    if steady is not None:
        return []
    return [note("warning.no_steady_window", requests=requests, span_s=span_s, least=steady_least(requests))]


def step_shape(
    decodes: int, decode_context: int, prefill_tokens: int, prefill_cached: int, prefills: int
) -> tuple[int, int]:
    """(batch, context) of a simulator step bucket (:class:`~llm_cost.simulate.StepTimer`'s key)
    as :func:`~llm_cost.perf.calibrated.band_for` reads a step's shape: its sequences (decodes
    and prompt chunks), and the longest per-sequence context among the decodes' mean cached
    context and the chunks' prompt length so far (cached + the chunk's share). A mixed step takes
    the longer, the one that widens a band the more beyond the fitted rows."""
    prompt = prefill_cached + -(-prefill_tokens // prefills) if prefills else 0
    return decodes + prefills, max(decode_context if decodes else 0, prompt)


def step_band_factor(profile: Profile, slow: bool) -> Callable[[int, int, int, int, int], float]:
    """The step-time factor of one end of the error band for a step bucket: ``band_for(profile,
    *step_shape(bucket), prefill=no decodes)``'s ``high`` (``slow``: the measured time may be this much longer) or
    ``low`` (the fast end), memoised by shape."""
    cache: dict[tuple[int, int, bool], float] = {}

    def factor(decodes: int, decode_context: int, prefill_tokens: int, prefill_cached: int, prefills: int) -> float:
        shape = step_shape(decodes, decode_context, prefill_tokens, prefill_cached, prefills)
        key = (*shape, decodes == 0)
        hit = cache.get(key)
        if hit is None:
            b = band_for(profile, *shape, prefill=decodes == 0)
            assert b is not None  # with_band draws a band only for a profile with residuals
            hit = cache[key] = b.high if slow else b.low
        return hit

    return factor


def _constant_factor(value: float) -> Callable[[int, int, int, int, int], float]:
    """The step-time factor ``value`` for every step bucket (the serving band's: one factor per end)."""

    def factor(decodes: int, decode_context: int, prefill_tokens: int, prefill_cached: int, prefills: int) -> float:
        return value

    return factor


def _combined(*cis: tuple[float, float] | None) -> tuple[float, float] | None:
    """The interval from the least to the greatest end of the runs' sampling intervals (None when
    the nominal run has none)."""
    if cis[0] is None:
        return None
    known = [c for c in cis if c is not None]
    return min(c[0] for c in known), max(c[1] for c in known)


def _banded_percentiles(p: Percentiles, fast: Percentiles, slow: Percentiles) -> Percentiles:
    """``p`` with each percentile's value at the band's fast end (``*_low_s``) and slow end
    (``*_high_s``), each one run's, and each statistic's whole interval (:class:`Percentiles`)."""
    return dataclasses.replace(
        p,
        p50_low_s=fast.p50,
        p50_high_s=slow.p50,
        p90_low_s=fast.p90,
        p90_high_s=slow.p90,
        p99_low_s=fast.p99,
        p99_high_s=slow.p99,
        more_low_s=dict(fast.more),
        more_high_s=dict(slow.more),
        interval={k: _combined(v, fast.ci.get(k), slow.ci.get(k)) for k, v in p.ci.items()},
    )


#: Each banded figure of a run, and whether its ``_low`` is the fast end's (latencies, dollars) or
#: the slow end's (rates: a slower step serves fewer tokens).
_BANDED = {
    "ttft_s": True,
    "tpot_s": True,
    "itl_s": True,
    "e2e_s": True,
    "goodput_rps": False,
    "output_tokens_per_s": False,
    "output_tokens_per_s_per_gpu": False,
    "usd_per_million_output_tokens": True,
}


def _band_fields(fast: ServeRun, slow: ServeRun) -> dict[str, Any]:
    """The ``*_low`` / ``*_high`` fields of a banded run: each figure at the band's end that gives
    the lower and the higher value, one run each (:data:`_BANDED`)."""
    fields_: dict[str, Any] = {}
    for name, fast_is_low in _BANDED.items():
        seconds = name.endswith("_s") and name != "output_tokens_per_s"  # ttft_low_s; output_tokens_per_s_low
        stem, suffix = (name[:-2], "_s") if seconds else (name, "")
        low, high = (fast, slow) if fast_is_low else (slow, fast)
        fields_.update({f"{stem}_low{suffix}": getattr(low, name), f"{stem}_high{suffix}": getattr(high, name)})
    return fields_


def with_band(
    nominal: ServeRun,
    rerun: Callable[[StepTimer], ServeRun],
    timer: StepTimer,
    time_model: TimeModel,
    serving: ServingBand | None = None,
    slow: tuple[ServeRun, frozenset[tuple[int, int, int, int, int]]] | None = None,
) -> ServeRun:
    """``nominal`` with its error band: the same configuration, traffic and seed re-simulated
    (``rerun``) twice, every step's time multiplied by the fast-end and then the slow-end factor
    of the band (:class:`~llm_cost.simulate.ScaledTimer` over the nominal run's ``timer``).

    Convention, ``serving`` given (the default simulated vLLM path, whose prediction was checked
    on the shipped vLLM serving runs): every step x ``serving.low`` at the fast end and x
    ``serving.high`` at the slow end, the 10th and 90th percentiles of that prediction's mean ITL
    measured / predicted over the 18 measured vLLM v0.15.1 runs
    (:func:`~llm_cost.analyses.serving_runs.vllm_serving_band`; widened on a GPU the runs did not
    use): a calibration at serving shapes, on the prediction itself.

    Convention, otherwise (another engine, an explicit profile): per step, the factors are
    :func:`~llm_cost.perf.calibrated.band_for` of the time model's profile at the step's (batch,
    context) (:func:`step_shape`): measured / predicted of held-out rows (leave-one-source-out) in
    the profile's situation and the step's regime at their 10th and 90th percentiles, widened for
    shapes outside the fitted rows.

    Either way, one end is every step at its fast factor, the other every step at its slow factor:
    the errors of one prediction on one GPU are systematic (the same kernels, the same peaks), not
    independent per step. Queueing is not linear in step time (a slower step lengthens every later
    request's wait), so the percentiles are re-simulated rather than scaled. Each figure's
    ``*_low*`` / ``*_high*`` is its value at one end, one run each (:func:`_band_fields`: latencies
    and $/M low at the fast end, rates low at the slow end; a discrete-event schedule is monotone
    in step time only nearly, so an end may lie beyond the nominal value the other way); each
    statistic's ``interval`` joins the three runs' sampling intervals. ``violates_at_slow_end``:
    the targets the slow end misses; ``violates_pessimistic``: those missed at the upper end of
    the slow end's sampling intervals. ``slow``: the slow end's run and the step buckets it asked for
    (:attr:`~llm_cost.simulate.StepTimer.last_met`), already simulated (a plan's candidates are, on
    a timer their layout's other candidates share: the band's factors are over this run's buckets
    alone). A time model without held-out
    residuals (the MFU/MBU estimate, a profile without an error) gets no band and a note saying
    so."""
    ends = band_ends(time_model, serving)
    if ends is None:
        return dataclasses.replace(
            nominal, conventions=[*nominal.conventions, note("serve.no_band", label=time_model.label)]
        )
    fast_factor, slow_factor = ends
    fast_timer = ScaledTimer(timer, fast_factor)
    fast = rerun(fast_timer)
    if slow is None:
        slow_timer = ScaledTimer(timer, slow_factor)
        slow_run = rerun(slow_timer)
        slow_keys = slow_timer.last_met
    else:
        slow_run, slow_keys = slow
    fast_keys = fast_timer.last_met
    info, band_note = _band_info(
        time_model,
        serving,
        [fast_factor(*k) for k in fast_keys],
        [slow_factor(*k) for k in slow_keys],
        len(fast_keys | slow_keys),
    )
    return dataclasses.replace(
        nominal,
        percentiles={
            m: _banded_percentiles(p, fast.percentiles[m], slow_run.percentiles[m])
            for m, p in nominal.percentiles.items()
        },
        violates_at_slow_end=slow_run.violates,
        violates_pessimistic=slow_run.violates_upper,
        band=info,
        conventions=[*nominal.conventions, band_note],
        **_band_fields(fast, slow_run),
    )


Factor = Callable[[int, int, int, int, int], float]


def band_ends(time_model: TimeModel, serving: ServingBand | None = None) -> tuple[Factor, Factor] | None:
    """The step-time factors of the band's fast and slow ends (:func:`with_band`'s conventions:
    the serving runs' constant factors, else the profile's per shape); None for a time model with
    no held-out residuals."""
    profile = time_model.profile if isinstance(time_model, CalibratedModel) else None
    if profile is None or (serving is None and band_for(profile) is None):
        return None
    if serving is not None:
        return _constant_factor(serving.low), _constant_factor(serving.high)
    return step_band_factor(profile, False), step_band_factor(profile, True)


def _band_info(
    time_model: TimeModel,
    serving: ServingBand | None,
    fast_seen: Sequence[float],
    slow_seen: Sequence[float],
    shapes: int,
) -> tuple[StepBand, Note]:
    """How a run's band was drawn, and the note that says so (:func:`with_band`)."""
    profile = time_model.profile  # type: ignore[attr-defined]
    if serving is not None:
        info = StepBand(
            profile.name, str(profile.engine), str(profile.situation), serving.runs, serving.widen, serving.low,
            serving.low, serving.high, serving.high, shapes, BandSource.SERVING_RUNS, serving.p_low, serving.p_high,
            serving.closed_loop,
        )  # fmt: skip
        band_note = note(
            "serve.band",
            source=str(info.source),
            profile=info.profile,
            runs=serving.runs,
            engine=serving.engine,
            gpu=serving.gpu,
            percentiles=list(serving.percentiles),
            p_low=serving.p_low,
            p_high=serving.p_high,
            transfer=serving.widen,
            measured=serving.measured,
            fast=serving.low,
            slow=serving.high,
            closed_loop=serving.closed_loop,
        )
    else:
        overall = band_for(profile)
        assert overall is not None  # checked above
        info = StepBand(
            profile.name,
            str(profile.engine),
            str(profile.situation),
            overall.rows,
            1.0,
            min(fast_seen, default=1.0),
            max(fast_seen, default=1.0),
            min(slow_seen, default=1.0),
            max(slow_seen, default=1.0),
            shapes,
        )
        band_note = note(
            "serve.band",
            source=str(info.source),
            profile=info.profile,
            engine=info.engine,
            kind=info.kind,
            rows=info.rows,
            transfer=info.transfer,
            fast_low=info.fast_low,
            fast_high=info.fast_high,
            slow_low=info.slow_low,
            slow_high=info.slow_high,
        )
    return info, band_note


def mean_lengths(traffic: Workload | Trace) -> tuple[float, float]:
    """Mean prompt and output tokens of ``traffic``."""
    if isinstance(traffic, Trace):
        rows = traffic.rows
        return sum(r.input_tokens for r in rows) / len(rows), sum(r.output_tokens for r in rows) / len(rows)
    return drawn_mean(traffic.input_tokens), drawn_mean(traffic.output_tokens)


def _every_request_too_long(traffic: Workload | Trace, engine: EngineConfig) -> bool:
    """Whether every request ``traffic`` can draw is longer, prompt and output, than
    ``max_model_len`` (vLLM refuses each): a workload whose shortest prompt and output exceed it."""
    limit = engine.max_model_len
    if limit is None or not isinstance(traffic, Workload):
        return False
    return shortest(traffic.input_tokens) + shortest(traffic.output_tokens) > limit


def _never_fits(traffic: Workload | Trace, kv_tokens: int) -> bool:
    """Whether every request ``traffic`` can draw holds more tokens, prompt and output, than a
    replica's empty KV cache of ``kv_tokens`` (the engine refuses each whatever the load)."""
    return (
        isinstance(traffic, Workload) and shortest(traffic.input_tokens) + shortest(traffic.output_tokens) > kv_tokens
    )


def _all_refused(
    traffic: Workload | Trace, engine: EngineConfig, kv_tokens: int, alone: bool, context: int
) -> InputError | None:
    """The one-line error when a run refused every request: its requests are longer than
    ``max_model_len`` (vLLM refuses a prompt plus its output past it: any configuration would), or,
    for one configuration given (``alone``), they do not fit its empty KV cache. None otherwise
    (a plan's candidate that refuses all is ranked out)."""
    mean_in, mean_out = mean_lengths(traffic)
    limit = engine.max_model_len
    if limit is not None and isinstance(traffic, Trace):
        shortest = min(r.input_tokens + r.output_tokens for r in traffic.rows)
        fix = (
            f"give max_model_len {shortest:,} or more"
            if shortest <= context
            else f"the model takes at most {context:,}: replay rows of at most that"
        )
        return InputError(
            f"max_model_len: every row of the trace was refused: the shortest, prompt and output, holds "
            f"{shortest:,} tokens, more than max_model_len {limit:,}; {fix}",
            fields=("max_model_len", "trace"),
        )
    if limit is not None and mean_in + mean_out > limit:
        head = (
            f"every request was refused: prompts of {mean_in:,.0f} + {mean_out:,.0f} output tokens (mean) are "
            f"longer than max_model_len {limit:,}"
        )
        if mean_in + mean_out > context:  # no max_model_len can take them: the model's context cannot
            return longer_than_context(mean_in, mean_out, context, head="every request was refused: ")
        return InputError(
            f"max_model_len: {head}; give max_model_len {math.ceil(mean_in + mean_out):,} or more (the model's "
            f"context of {context:,} at most) or shorter input_tokens",
            fields=("max_model_len", "input_tokens"),
        )
    if alone:
        return InputError(
            f"layout: every request was refused: {mean_in + mean_out:,.0f} tokens (mean) do not fit the replica's "
            f"empty KV cache of {kv_tokens:,} tokens; give a larger layout or shorter input_tokens",
            fields=("layout", "input_tokens"),
        )
    return None
