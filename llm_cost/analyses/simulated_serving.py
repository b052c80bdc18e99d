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
most :data:`PER_LAYOUT` are simulated (the fastest per user, the most throughput per GPU, and one
between: chosen without the targets) as a closed loop of ``concurrency`` users per replica with
no think time (the saturated benchmark the analytic search assumes; ``max_num_seqs`` the
concurrency); when none at the group's best concurrency meets the targets, the plan descends
(:func:`_descent`) through the group's frontier points and the caps of a :func:`ladder` falling by
sqrt 2 below its best down to 1, by falling cap, until one meets them (the same steps in the same
order whatever the targets, so a configuration is found whenever one on the way meets them, and a
looser target never stops the descent lower); with a rate, each layout's :data:`PER_LAYOUT` fewest replica counts, at the rate per
replica (``max_num_seqs`` the engine's). ``max_num_batched_tokens`` is the candidate's chunk
(unchunked: vLLM's default without chunked prefill, ``max(max_model_len, 2048)``). A candidate meets the targets when every target holds on its simulated
distribution and no request is refused; the plan is, of those meeting them, with a rate the
fewest GPUs (then the most goodput), without one the most output tokens/s per GPU. Disaggregated
candidates stay analytic (the simulator runs one engine replica), and are not chosen.

**Side by side.** The plan on each GPU for the same traffic and targets, each at its price; the
cheapest per million output tokens is marked.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import field
from fractions import Fraction
from typing import Any

from llm_cost.analyses.capacity import MemoryPolicy
from llm_cost.analyses.launch import Launch
from llm_cost.analyses.serving import COST_ALL_OUTPUT, SANE_TTFT_S, Candidate, ServePlan, StepBand
from llm_cost.analyses.serving.moe_layouts import replica_engine
from llm_cost.analyses.serving.search import pcie_note
from llm_cost.analyses.serving_runs import ServingBand, replica_kv_pool
from llm_cost.core.choices import BandSource, ServingMode
from llm_cost.core.errors import InputError
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Dtype
from llm_cost.core.units import fmt_seconds
from llm_cost.model.layout import Layout, layout_label
from llm_cost.perf.calibrated import CalibratedModel, band_for
from llm_cost.perf.profile import Profile
from llm_cost.perf.timemodel import TimeModel
from llm_cost.simulate import (
    ClosedLoop,
    EngineConfig,
    OpenLoop,
    ScaledTimer,
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
    "StepBand",
    "run_configuration",
    "with_band",
    "step_shape",
    "step_band_factor",
    "plan_on_simulation",
    "compare_gpus",
    "per_replica",
    "offered_rps",
    "describe",
    "PER_LAYOUT",
    "PLAN_REQUESTS",
    "STEADY_ROUNDS",
]

#: Candidates simulated per replica layout and count.
PER_LAYOUT = 3
#: Requests each planner candidate's simulation runs (one configuration runs the caller's count).
PLAN_REQUESTS = 400
#: Rounds of its users a saturated candidate runs at least (its requests raised to this many
#: times its concurrency): the warm-up, a steady round its throughput is measured over
#: (:func:`llm_cost.simulate.results.steady_window`), the drain.
STEADY_ROUNDS = 3


@record
class Percentiles:
    """P50, P90 and P99 of a latency, seconds (None without samples); ``more``: any other
    percentile a target bounds (``{"p95": 1.2}``)."""

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


def _percentiles(d: Distribution, target: Target | None = None) -> Percentiles:
    """P50, P90, P99 of ``d``, and the percentile ``target`` bounds when it is another."""
    more = {target.name: target.value(d)} if target is not None and target.percentile is not None else {}
    return Percentiles(d.p50, d.p90, d.p99, more)


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

    @property
    def meets(self) -> bool:
        """Whether every target holds and no request was refused."""
        return not self.violates

    def describe(self) -> str:
        """``2 x TP4`` (replicas x layout: :func:`~llm_cost.model.layout.layout_label`)."""
        return f"{self.replicas} x {layout_label(self.layout)}"


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
    missed = tuple(f"{m} {t.name}" for m, t in targets.items() if not t.met(getattr(s, m)))
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
    band: bool = False,
    serving_band: ServingBand | None = None,
) -> ServeRun:
    """Simulate ``replicas`` x ``layout`` serving ``traffic`` (module docstring); the KV cache holds
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
                compute_dtype=compute_dtype, seed=seed, timer=t, candidate=candidate, notes=notes,
            )  # fmt: skip

        return with_band(again(timer), again, timer, time_model, serving_band)
    goals = dict(targets or {})
    pool = replica_kv_pool(spec, gpu, layout, engine, policy, weight_bits, kv_bits)
    tokens = pool.tokens
    if tokens < engine.block_tokens * (1 + pool.state_blocks):
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
        sequence_state_blocks=pool.state_blocks,
        weight_bits=weight_bits,
        kv_bits=kv_bits,
        compute_dtype=compute_dtype,
        seed=seed,
        timer=timer,
    )
    s = result.summary
    if s.rejected and not s.requests:
        too_long = _all_refused(traffic, engine, tokens, candidate is None)
        if too_long is not None:
            raise too_long
    span = s.end_s - s.start_s
    gpus = replicas * layout.gpus
    steady = result.steady  # rates over the steady window (warm-up and drain left out), else the run's
    served_rps = steady.throughput_rps if steady else s.throughput_rps
    out_per_s = (steady.output_tokens_per_s if steady else s.output_tokens_per_s) * replicas
    running = steady.running_mean if steady else result.running_mean
    waiting = steady.waiting_mean if steady else result.waiting_mean
    usd_m = usd_req = None
    if usd_per_gpu_hour is not None and out_per_s > 0:
        usd_per_s = usd_per_gpu_hour * gpus / 3600
        usd_m = usd_per_s / out_per_s * 1e6
        usd_req = usd_per_s / (served_rps * replicas)
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
        {m: _percentiles(getattr(s, m), goals.get(m)) for m in METRICS},
        goals,
        _violations(result, goals),
        goodput_rps(result.requests, goals, span, steady) * replicas,
        served_rps * replicas,
        out_per_s,
        out_per_s / gpus,
        s.requests * replicas,
        s.rejected * replicas,
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
            note("serve.simulated", label=time_model.label, engine=engine.engine, replicas=replicas),
            note("serve.cost_simulated", price=usd_per_gpu_hour),
            *pcie_note(gpu, layout, time_model),
            *notes,
        ],
    )


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


def _ends(*values: float | None) -> tuple[float | None, float | None]:
    """(least, greatest) of the runs' values of a figure; (None, None) when the nominal run has none."""
    if values[0] is None:
        return None, None
    known = [v for v in values if v is not None]
    return min(known), max(known)


def _banded_percentiles(p: Percentiles, fast: Percentiles, slow: Percentiles) -> Percentiles:
    ends = {name: _ends(getattr(p, name), getattr(fast, name), getattr(slow, name)) for name in ("p50", "p90", "p99")}
    more = {k: _ends(v, fast.more.get(k), slow.more.get(k)) for k, v in p.more.items()}
    return dataclasses.replace(
        p,
        p50_low_s=ends["p50"][0],
        p50_high_s=ends["p50"][1],
        p90_low_s=ends["p90"][0],
        p90_high_s=ends["p90"][1],
        p99_low_s=ends["p99"][0],
        p99_high_s=ends["p99"][1],
        more_low_s={k: v[0] for k, v in more.items()},
        more_high_s={k: v[1] for k, v in more.items()},
    )


def with_band(
    nominal: ServeRun,
    rerun: Callable[[StepTimer], ServeRun],
    timer: StepTimer,
    time_model: TimeModel,
    serving: ServingBand | None = None,
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
    ``*_low*`` / ``*_high*`` is the least / greatest of the three runs (a discrete-event schedule
    is monotone in step time only nearly: a step ending before or after an arrival batches
    differently); tokens/s and goodput are highest, and $/M lowest, at the fast end.
    ``violates_at_slow_end``: the targets the slow end misses. A time model without held-out
    residuals (the MFU/MBU estimate, a profile without an error) gets no band and a note saying
    so."""
    profile = time_model.profile if isinstance(time_model, CalibratedModel) else None
    if profile is None or (serving is None and band_for(profile) is None):
        return dataclasses.replace(
            nominal, conventions=[*nominal.conventions, note("serve.no_band", label=time_model.label)]
        )
    if serving is not None:
        fast_factor, slow_factor = _constant_factor(serving.low), _constant_factor(serving.high)
    else:
        fast_factor, slow_factor = step_band_factor(profile, False), step_band_factor(profile, True)
    fast_timer, slow_timer = ScaledTimer(timer, fast_factor), ScaledTimer(timer, slow_factor)
    fast, slow = rerun(fast_timer), rerun(slow_timer)
    fast_seen = [fast_factor(*k) for k in fast_timer.cache]
    slow_seen = [slow_factor(*k) for k in slow_timer.cache]
    shapes = len(set(fast_timer.cache) | set(slow_timer.cache))
    if serving is not None:
        info = StepBand(
            profile.name,
            str(profile.engine),
            str(profile.situation),
            serving.runs,
            serving.widen,
            serving.low,
            serving.low,
            serving.high,
            serving.high,
            shapes,
            BandSource.SERVING_RUNS,
            serving.p_low,
            serving.p_high,
        )
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
    ends = {
        name: _ends(getattr(nominal, name), getattr(fast, name), getattr(slow, name))
        for name in (
            "ttft_s", "tpot_s", "itl_s", "e2e_s", "goodput_rps", "output_tokens_per_s",
            "output_tokens_per_s_per_gpu", "usd_per_million_output_tokens",
        )
    }  # fmt: skip

    fields_: dict[str, Any] = {}
    for name, (low, high) in ends.items():
        seconds = name in ("ttft_s", "tpot_s", "itl_s", "e2e_s")  # ttft_low_s; output_tokens_per_s_low
        stem, suffix = (name[:-2], "_s") if seconds else (name, "")
        fields_.update({f"{stem}_low{suffix}": low, f"{stem}_high{suffix}": high})
    return dataclasses.replace(
        nominal,
        percentiles={
            m: _banded_percentiles(p, fast.percentiles[m], slow.percentiles[m]) for m, p in nominal.percentiles.items()
        },
        violates_at_slow_end=slow.violates,
        band=info,
        conventions=[*nominal.conventions, band_note],
        **fields_,
    )


def _mean_lengths(traffic: Workload | Trace) -> tuple[float, float]:
    """Mean prompt and output tokens of ``traffic``."""
    if isinstance(traffic, Trace):
        rows = traffic.rows
        return sum(r.input_tokens for r in rows) / len(rows), sum(r.output_tokens for r in rows) / len(rows)
    return traffic.input_tokens.mean, traffic.output_tokens.mean


def _all_refused(traffic: Workload | Trace, engine: EngineConfig, kv_tokens: int, alone: bool) -> InputError | None:
    """The one-line error when a run refused every request: its requests are longer than
    ``max_model_len`` (vLLM refuses a prompt plus its output past it: any configuration would), or,
    for one configuration given (``alone``), they do not fit its empty KV cache. None otherwise
    (a plan's candidate that refuses all is ranked out)."""
    mean_in, mean_out = _mean_lengths(traffic)
    limit = engine.max_model_len
    if limit is not None and mean_in + mean_out > limit:
        return InputError(
            f"max_model_len: every request was refused: prompts of {mean_in:,.0f} + {mean_out:,.0f} output tokens "
            f"(mean) are longer than max_model_len {limit:,}; give a larger max_model_len (the model's context "
            "at most) or shorter input_tokens",
            fields=("max_model_len", "input_tokens"),
        )
    if alone:
        return InputError(
            f"layout: every request was refused: {mean_in + mean_out:,.0f} tokens (mean) do not fit the replica's "
            f"empty KV cache of {kv_tokens:,} tokens; give a larger layout or shorter input_tokens",
            fields=("layout", "input_tokens"),
        )
    return None


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
    cost_convention: str = COST_ALL_OUTPUT
    # the chosen configuration's error band, repeated from ``chosen`` (:func:`with_band`)
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
    output_tokens_per_s_per_gpu_low: float | None = None
    output_tokens_per_s_per_gpu_high: float | None = None
    usd_per_million_output_tokens_low: float | None = None
    usd_per_million_output_tokens_high: float | None = None
    violates_at_slow_end: tuple[str, ...] | None = None


def _picks(group: list[Candidate]) -> list[Candidate]:
    """At most :data:`PER_LAYOUT` of one layout's frontier points (module docstring), by rising
    throughput per GPU: the fastest per user, the most throughput per GPU and one between. The
    picks do not depend on the targets, so that a looser target never simulates fewer of them."""
    ordered = sorted(group, key=lambda c: c.output_tokens_per_s_per_gpu)
    last = len(ordered) - 1
    chosen = sorted({0, last // 2, last})
    return [ordered[i] for i in chosen][-PER_LAYOUT:]


#: The ratio between successive concurrency caps of a layout's ladder (saturated plans).
LADDER_RATIO = 2**0.5


def ladder(top: int) -> list[int]:
    """The concurrency caps a saturated plan simulates below a layout's analytic best ``top``,
    falling: ``top / r**k`` rounded half up for k = 1, 2, ... with r = :data:`LADDER_RATIO` (sqrt 2), distinct,
    down to 1 (``ladder(88)`` is 62, 44, 31, 22, 16, 11, 8, 6, 4, 3, 2, 1). The analytic screen's
    means put its best concurrency where percentiles may miss the targets (a P99 TTFT is met at
    fewer sequences than its mean suggests, or not at all): descending the ladder finds the largest
    cap whose simulated percentiles meet them, within a factor sqrt 2."""
    out: list[int] = []
    k = 1
    while top > 1 and (not out or out[-1] > 1):
        cap = max(1, math.floor(top / 2 ** (k / 2) + 0.5))  # r**k, exact at even k
        if cap < top and (not out or cap < out[-1]):
            out.append(cap)
        k += 1
    return out


def _descent(group: list[Candidate], top: Candidate) -> list[tuple[int, Candidate]]:
    """The (cap, candidate) steps a saturated plan descends in one layout (module docstring): its
    frontier points at their own concurrency and each cap of :func:`ladder` below ``top`` with
    the chunk of the frontier point nearest it (``top``'s when that chunk would not hold the cap's
    sequences), by falling cap, then falling analytic throughput per GPU."""
    steps = [(c.concurrency, c) for c in group if c.concurrency <= top.concurrency]
    for cap in ladder(top.concurrency):
        c = _nearest(group, cap)
        steps.append((cap, top if c.chunk_tokens is not None and c.chunk_tokens <= cap else c))
    return sorted(steps, key=lambda s: (-s[0], -s[1].output_tokens_per_s_per_gpu))


def _nearest(group: list[Candidate], cap: int) -> Candidate:
    """The frontier point of a layout whose concurrency is nearest ``cap`` (the lower on a tie),
    whose chunk a ladder rung at ``cap`` runs with."""
    return min(group, key=lambda c: (abs(c.concurrency - cap), c.concurrency))


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


def _engine_for(c: Candidate, base: EngineConfig, saturated: bool, cap: int | None = None) -> EngineConfig:
    """The engine settings that run candidate ``c`` (module docstring): saturated, its chunk and
    ``cap`` (default its concurrency) as ``max_num_seqs``; at a rate the engine's own settings (its
    cap on sequences, its ``max_num_batched_tokens``: the default a user runs, or the one given)."""
    if not saturated:
        return replica_engine(base, c.layout)  # an attention-DP replica's ranks each take the engine's settings
    chunk = c.chunk_tokens
    budget = chunk if chunk is not None else max(base.max_model_len or 2048, 2048)
    return EngineConfig(
        **{
            **base.__dict__,
            "max_num_seqs": cap or c.concurrency,
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
                f"{metric} {fmt_seconds(target.seconds)} ({target.name}): the fastest configuration "
                f"simulated reaches {fmt_seconds(reached)} ({best.describe()}, at most {best.max_num_seqs:,} sequence{'s' if best.max_num_seqs > 1 else ''} each)"
            )
            fields_.append(metric)
    if not parts:
        refused = [r for r in runs if r.rejected]
        if refused and len(refused) == len(runs):
            return InputError(
                f"max_model_len: every configuration simulated refuses requests ({refused[0].rejected:,} refused): "
                "longer than max_model_len or than an empty KV cache; give a larger max_model_len, more GPUs or "
                "shorter input_tokens",
                fields=("max_model_len", "input_tokens"),
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
    serving_band: ServingBand | None = None,
) -> SimulatedPlan:
    """Simulate the promising candidates of ``screen`` (module docstring) and choose among them.
    ``traffic`` with a rate is simulated per replica as it is; without a rate (``qps`` None) each
    candidate runs its concurrency as closed-loop users. The chosen one gets its error band
    (:func:`with_band`; ``serving_band``: the measured serving runs' rather than the profile's).
    InputError when the screen holds no aggregated candidate, or when none simulated meets the
    targets (naming the nearest)."""
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
    reruns: dict[int, tuple[Callable[[StepTimer], ServeRun], StepTimer]] = {}

    def run(layout: Layout, replicas: int, c: Candidate, load: Workload | Trace, cap: int | None = None) -> ServeRun:
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
        engine = _engine_for(c, base, qps is None, cap)

        def again(t: StepTimer) -> ServeRun:
            return run_configuration(
                spec,
                gpu,
                layout,
                load,
                engine,
                time_model,
                policy,
                replicas=replicas,
                targets=targets,
                usd_per_gpu_hour=usd_per_gpu_hour,
                weight_bits=weight_bits,
                kv_bits=kv_bits,
                compute_dtype=compute_dtype,
                seed=seed,
                timer=t,
                candidate=c,
            )

        result = again(timer)
        reruns[id(result)] = (again, timer)  # the chosen run's band re-simulates it (with_band)
        return result

    if qps is None:
        for (layout, replicas), group in groups.items():

            def closed(c: Candidate, cap: int, replicas: int = replicas) -> Workload:
                e2e = c.ttft_s + c.tpot_s * (c.output_tokens_per_s / max(c.requests_per_s, 1e-9) - 1)
                # at least STEADY_ROUNDS rounds of the users, so the steady window holds one
                each = max(requests, STEADY_ROUNDS * cap)
                return _closed_loop(traffic, cap * replicas, each * replicas, e2e)

            mine = [run(layout, replicas, c, closed(c, c.concurrency)) for c in _picks(group)]
            runs += mine
            top = max(group, key=lambda c: c.output_tokens_per_s_per_gpu)
            if not targets or any(r.meets and r.max_num_seqs >= top.concurrency for r in mine):
                continue
            # descend from the analytic best until a configuration meets every target: the
            # group's frontier points and the ladder's caps below its best, by falling cap (the
            # frontier's higher throughput first at one cap); the same steps in the same order
            # whatever the targets, so a looser target stops no lower
            done = {(r.max_num_seqs, r.max_num_batched_tokens, r.chunked_prefill) for r in mine}
            for cap, c in _descent(group, top):
                if any(r.meets and r.max_num_seqs >= cap for r in mine):
                    break  # a configuration at this cap or above already meets them
                engine = _engine_for(c, base, True, cap)
                key = (cap, engine.max_num_batched_tokens, engine.chunked_prefill)
                if key in done:
                    continue
                done.add(key)
                mine.append(run(layout, replicas, c, closed(c, cap), cap))
                runs.append(mine[-1])
                if mine[-1].meets:
                    break
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
    again, timer = reruns[id(best)]
    best = with_band(best, again, timer, time_model, serving_band)
    ranked = (best, *ranked[1:])
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
        ttft_low_s=best.ttft_low_s,
        ttft_high_s=best.ttft_high_s,
        tpot_low_s=best.tpot_low_s,
        tpot_high_s=best.tpot_high_s,
        itl_low_s=best.itl_low_s,
        itl_high_s=best.itl_high_s,
        e2e_low_s=best.e2e_low_s,
        e2e_high_s=best.e2e_high_s,
        goodput_rps_low=best.goodput_rps_low,
        goodput_rps_high=best.goodput_rps_high,
        output_tokens_per_s_per_gpu_low=best.output_tokens_per_s_per_gpu_low,
        output_tokens_per_s_per_gpu_high=best.output_tokens_per_s_per_gpu_high,
        usd_per_million_output_tokens_low=best.usd_per_million_output_tokens_low,
        usd_per_million_output_tokens_high=best.usd_per_million_output_tokens_high,
        violates_at_slow_end=best.violates_at_slow_end,
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
    bands = [n for _, _, p, _ in answers if p is not None for n in p.conventions if n.code in _BAND_NOTES]
    said = [n for i, n in enumerate(bands) if n not in bands[:i]]  # each GPU's band, said once
    return ServeComparison(model, workload, qps, dict(targets), plans, cheapest, [note("serve.compare"), *said])


#: The notes that say how a plan's band was drawn (:func:`with_band`), repeated in a comparison.
_BAND_NOTES = ("serve.band", "serve.no_band")
