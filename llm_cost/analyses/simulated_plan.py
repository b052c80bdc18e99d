"""Serving plans by simulation: the planner's promising candidates simulated (each run by
:func:`llm_cost.analyses.simulated_serving.run_configuration`) and ranked on percentiles against
the targets; GPUs side by side.

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
looser target never stops the descent lower), then sidesteps (:meth:`_Search.sidestep`) to the
steps above the cap that met them at another chunk, which no run that missed says must miss (the
descent's order by cap holds at one chunk: a larger chunk lowers TTFT and raises TPOT); with a
TTFT target, when one at the group's best concurrency meets them, the plan ascends
(:meth:`_Search.ascend`) through its layout's own frontier points of more sequences, which the
frontier over every layout dropped (TTFT is on neither of its axes); with a rate, each layout's
:data:`PER_LAYOUT` fewest replica counts, at the rate per replica (``max_num_seqs`` the
engine's). ``max_num_batched_tokens`` is the candidate's chunk (unchunked: vLLM's default without
chunked prefill, ``max(max_model_len, 2048)``). A candidate meets the targets when every target
holds on its simulated distribution and no request is refused; the plan is, of those meeting them, with a rate the
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
from llm_cost.analyses.launch import Launch, router_for
from llm_cost.analyses.serving import COST_ALL_OUTPUT, SANE_TTFT_S, Candidate, ServePlan
from llm_cost.analyses.serving.moe_layouts import replica_engine
from llm_cost.analyses.serving.replicas import node_gpus
from llm_cost.analyses.serving_runs import ServingBand
from llm_cost.analyses.simulated_serving import (
    STATISTICS,
    Percentiles,
    ServeRun,
    band_ends,
    mean_lengths,
    run_configuration,
    upper_end,
    with_band,
)
from llm_cost.core.choices import Router, ServingMode
from llm_cost.core.errors import InputError
from llm_cost.core.limits import MAX_PLAN_GPUS
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Dtype
from llm_cost.core.units import fmt_given, fmt_seconds
from llm_cost.model.layout import Layout, layout_label
from llm_cost.perf.timemodel import TimeModel
from llm_cost.simulate import (
    ClosedLoop,
    EngineConfig,
    OpenLoop,
    ScaledTimer,
    StepTimer,
    Target,
    Trace,
    Workload,
    exchangeable,
)
from llm_cost.simulate.workload import MAX_REQUESTS
from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = [
    "SimulatedPlan",
    "GpuPlan",
    "ServeComparison",
    "plan_on_simulation",
    "compare_gpus",
    "ladder",
    "PER_LAYOUT",
    "PLAN_REQUESTS",
    "holds",
    "STEADY_ROUNDS",
]

#: Candidates simulated per replica layout and count.
PER_LAYOUT = 3
#: Requests each planner candidate's simulation runs (one configuration runs the caller's count):
#: per replica saturated (one replica simulated); in all at a rate, at least
#: :data:`PLAN_REQUESTS_PER_REPLICA` per replica (every replica simulated).
PLAN_REQUESTS = 400
PLAN_REQUESTS_PER_REPLICA = 100
#: Rounds of its users a saturated candidate runs at least (its requests raised to this many
#: times its concurrency): the warm-up, a steady round its throughput is measured over
#: (:func:`llm_cost.simulate.results.steady_window`), the drain.
STEADY_ROUNDS = 3


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
    violates_pessimistic: tuple[str, ...] | None = None
    #: At a rate, the fewest GPUs of the chosen layout that meet the targets at nominal step times
    #: (None: the band's slow end is nominal, or no rate): the plan is sized at the slow end, and
    #: at one rate the band moves the GPUs a plan needs, not its cost (a new user: "12 GPUs on every
    #: GPU" hid that a B200's nominal steps need 4).
    gpus_at_nominal: int | None = None


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
    """Every run tried while finding the fewest replicas in 1 .. ``hi`` whose simulated run is
    ``good``, starting from the screen's ``lo``: when ``lo`` is good, down one replica at a time
    until one is not (the plan is then the smallest good count, whatever the screen said); else
    doubling until one is good (or ``hi`` is not, or doubling no longer brings the run 1% nearer
    its targets by ``distance``: the latencies of an unloaded replica are reached, and no count
    meets them), then bisection between the last bad and the first good count. More replicas share
    the same traffic, so each sees a lower rate and its latencies do not rise: goodness is
    monotone in the count, which is what bisection needs."""
    tried: dict[int, ServeRun] = {}

    def ok(n: int) -> bool:
        if n not in tried:
            tried[n] = run_at(n)
        return bool(good(tried[n]))

    if ok(lo):
        n = lo
        while n > 1 and ok(n - 1):
            n -= 1
        return list(tried.values())
    if lo >= hi:
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
    """How candidates rank, best first: those holding the targets (:func:`holds`; at a rate
    without a TTFT target, also the P99 TTFT bound :func:`_good` keeps); at a rate, the fewest GPUs, then the screen's headroom to the targets (:func:`_screen_distance`: between
    configurations of as many GPUs that both hold the targets on the pessimistic side, the
    simulated goodput and headroom differ by sampling noise, so a seed would flip the choice; the
    screen's figures come from the traffic's mean lengths, the same at every seed), then goodput;
    saturated, the most output tokens/s per GPU, then the fewest GPUs."""
    if qps is not None:
        return (not _good(run, _implicit_ttft(run.targets)), run.gpus, _screen_distance(run), -run.goodput_rps)
    return (not holds(run), -run.output_tokens_per_s_per_gpu, run.gpus)


def _screen_distance(run: ServeRun) -> float:
    """How far the screen put ``run``'s configuration from its targets: the largest of its TTFT
    and TPOT over their targets' bounds (a TTFT or TPOT target of any statistic, ITL's against
    TPOT; 0 without a screen's candidate or such a target)."""
    c = run.candidate
    if c is None:
        return 0.0
    figures = {"ttft_s": c.ttft_s, "tpot_s": c.tpot_s, "itl_s": c.tpot_s}
    ratios = [figures[m] / t.seconds for m, t in run.targets.items() if m in figures]
    return round(max(ratios, default=0.0), 6)


def _nothing_meets(
    runs: Sequence[ServeRun], targets: Mapping[str, Target], search: _Search | None = None
) -> InputError:
    """The one-line error when no simulated candidate meets the targets, with the nearest each
    target came; where the candidates ran at the band's slow end (``search``), says so with that
    end's step factor and the nominal figure (a new user read an MI300X's 55.5 ms TPOT, x3.96 of its
    nominal 14 ms, as what the GPU reaches)."""
    parts, fields_ = [], []
    for metric, target in targets.items():
        best = min(runs, key=lambda r: target.value(getattr(r.simulation.summary, metric)) or 0.0)
        reached = target.value(getattr(best.simulation.summary, metric))
        if reached is not None and reached > target.seconds:
            parts.append(
                f"{metric} {fmt_seconds(target.seconds)} ({target.name}): the fastest configuration "
                f"simulated reaches {fmt_seconds(reached)} ({best.describe()}, at most {best.max_num_seqs:,} sequence{'s' if best.max_num_seqs > 1 else ''} each)"
                + (search.slow_end_words(best, metric, target) if search is not None else "")
            )
            fields_.append(metric)
    if not parts:
        refused = [r for r in runs if r.rejected]
        context = search.spec.max_position_embeddings if search is not None else None
        if refused and len(refused) == len(runs) and context and (search and search.base.max_model_len) == context:
            return InputError(  # an attacker was told to raise a max_model_len already at the model's context
                f"input_tokens: every configuration simulated refuses requests ({refused[0].rejected:,} refused) longer "
                f"than the model's context of {context:,} tokens, which max_model_len cannot pass; give lengths of at "
                "most that (a distribution's high), or a model of a longer context",
                fields=("input_tokens", "workload", "max_model_len"),
            )
        if refused and len(refused) == len(runs):
            return InputError(
                f"max_model_len: every configuration simulated refuses requests ({refused[0].rejected:,} refused): "
                "longer than max_model_len or than an empty KV cache; give a larger max_model_len, more GPUs or "
                "shorter input_tokens",
                fields=("max_model_len", "input_tokens"),
            )
        most = max(runs, key=lambda r: r.gpus)
        if not targets or "overloaded" in most.violates_upper:  # an attacker's 250,000 requests/s, no targets
            fix = "a lower rate" if most.gpus >= MAX_PLAN_GPUS else "more gpus or a lower rate"
            return InputError(
                f"gpus: the most GPUs simulated ({most.describe()}) fall behind the rate offered, their queue "
                f"growing through the run; give {fix}",
                fields=("gpus", "qps"),
            )
        parts.append("no configuration simulated meets every target at once")
        fields_ = list(targets)
        return InputError("; ".join(parts), fields=tuple(fields_), advice="relax one of them")
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
    router: Router | None = None,
    rescreen: Callable[[int], ServePlan] | None = None,
) -> SimulatedPlan:
    """Simulate the promising candidates of ``screen`` (module docstring) and choose among them.
    ``traffic`` with a rate is simulated as it is, every replica behind ``router`` (None: the
    engine's own, :func:`~llm_cost.analyses.launch.router_for`); without a rate (``qps`` None) each
    candidate runs its concurrency as closed-loop users. Candidates are simulated at the slow end
    of the band and judged at the upper end of their sampling intervals (the pessimistic side of
    both); the chosen one is simulated again at nominal step times and at the fast end
    (:func:`with_band`; ``serving_band``: the measured serving runs' band rather than the
    profile's). ``rescreen``: the screen again with a prompt's cached tokens as a simulation
    measured them, asked at a rate when the first layout simulated finds the prefix cache holding
    another share than the screen priced (:data:`RESCREEN_TOKENS`). InputError when the screen
    holds no aggregated candidate, or when none simulated meets the targets (naming the nearest)."""
    groups = _groups(screen)
    if not groups:
        raise InputError(
            "modes: the simulator runs aggregated replicas, and the screen found no aggregated configuration; "
            "search aggregated serving",
            fields=("modes",),
        )
    formats = dict(weight_bits=Fraction(weight_bits), kv_bits=kv_bits, compute_dtype=compute_dtype)
    search = _Search(
        spec, gpu, traffic, base, time_model, policy, dict(targets), qps, usd_per_gpu_hour, formats, seed,
        requests, serving_band, router,
    )  # fmt: skip
    runs = (
        search.saturated(groups, screen.frontier_by_layout) if qps is None else search.at_rate(groups, screen, rescreen)
    )
    ranked = tuple(sorted(runs, key=lambda r: _rank_key(r, qps)))
    best = ranked[0]
    if not holds(best):
        raise _nothing_meets(ranked, targets, search)
    if qps is not None and not _good(best, _implicit_ttft(targets)):
        raise _nothing_keeps_up(ranked, qps, screen.gpu_budget, gpu.name)
    plan = _simulated_plan(spec.name, gpu.name, qps, targets, screen, search.banded(best), ranked, requests, notes)
    fewest = search.fewest_at_nominal(best) if qps is not None else None
    if fewest is None or fewest == best.gpus:
        return plan
    said = note("serve.gpus_at_nominal", gpus=fewest, planned=best.gpus, layout=layout_label(best.layout))
    return dataclasses.replace(plan, gpus_at_nominal=fewest, conventions=[*plan.conventions, said])


#: Prompt tokens by which the prefix-cache hits a simulation measures may differ from those the
#: screen priced before the screen is asked again (two blocks: LRU eviction, replicas warming
#: each prefix apart).
RESCREEN_TOKENS = 32


def _groups(screen: ServePlan) -> dict[tuple[Layout, int], list[Candidate]]:
    """The screen's aggregated frontier (and its chosen configuration), by replica layout and count."""
    frontier = list(screen.frontier_by_mode.get(ServingMode.AGGREGATED, []))
    if screen.chosen.mode == ServingMode.AGGREGATED and screen.chosen not in frontier:
        frontier.append(screen.chosen)
    groups: dict[tuple[Layout, int], list[Candidate]] = {}
    for c in frontier:
        groups.setdefault((c.layout, c.replicas), []).append(c)
    return groups


def _simulated_plan(
    model: str,
    gpu: str,
    qps: float | None,
    targets: Mapping[str, Target],
    screen: ServePlan,
    best: ServeRun,
    ranked: tuple[ServeRun, ...],
    requests: int,
    notes: Sequence[Note],
) -> SimulatedPlan:
    """The plan around its chosen run ``best`` (nominal, banded) and the candidates simulated."""
    return SimulatedPlan(
        model,
        gpu,
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
            note(
                "serve.simulated_plan",
                simulated=len(ranked),
                per_layout=PER_LAYOUT,
                requests=requests,
                qps=qps,
                timed_at=ranked[0].timed_at,
            ),
            *best.conventions,
            *(n for n in notes if n not in best.conventions),
            *(n for n in screen.conventions if n.code == "serve.cached_prompt"),
            *_plan_warnings(best, qps, targets),
        ],
        **{name: getattr(best, name) for name in _PLAN_BAND},
    )


#: The banded figures of the chosen run a plan repeats at its top.
_PLAN_BAND = (
    "ttft_low_s", "ttft_high_s", "tpot_low_s", "tpot_high_s", "itl_low_s", "itl_high_s", "e2e_low_s",
    "e2e_high_s", "goodput_rps_low", "goodput_rps_high", "output_tokens_per_s_per_gpu_low",
    "output_tokens_per_s_per_gpu_high", "usd_per_million_output_tokens_low", "usd_per_million_output_tokens_high",
    "violates_at_slow_end", "violates_pessimistic",
)  # fmt: skip


#: How far above its screen's output tokens/s per GPU a simulated run may come: an ascent
#: (:meth:`_Search.ascend`) leaves out a point whose screen's figure times this is under the
#: most of a run holding the targets. Measured: in 196 runs of 18 saturated plans (llama3-8b,
#: llama3-70b, qwen3-32b, qwen3-30b-a3b; A100, H100, H200, B200, MI300X; 2K/256, 8K/512,
#: 512/1K; P99 or P90 TTFT), a run at the band's slow end reached at most 1.052x its screen's
#: figure (median 0.99x).
SCREEN_SLACK = 1.1


#: A descent step's short run (:meth:`_Search.trial`): rounds of its users and the fewest requests
#: per replica (two sampling batches at the least: the verdict needs an interval).
TRIAL_ROUNDS, TRIAL_REQUESTS = 1.5, 100


def _clearly_misses(run: ServeRun, bound: float | None = None) -> bool:
    """Whether a run misses a target (or keeps its P99 TTFT over ``bound``) even at the lower end
    of its statistic's sampling interval, or refused a request: a longer run would not bring it
    within."""
    if run.rejected:
        return True
    s = run.simulation.summary
    for m, t in run.targets.items():
        ci = run.percentiles[m].ci.get(t.name)
        low = ci[0] if ci is not None else None
        if low is not None and low > t.seconds:
            return True
    p99 = run.percentiles["ttft_s"].ci.get("p99")
    if bound is not None and p99 is not None and p99[0] > bound:
        return True
    return s.requests == 0


def holds(run: ServeRun) -> bool:
    """Whether a candidate meets every target on the pessimistic side of its simulation: at the
    upper end of each target statistic's sampling interval (a candidate is simulated at the band's
    slow end), nothing refused."""
    return not run.violates_upper


def _chunk_of(run: ServeRun) -> float:
    """The prompt tokens a step of ``run``'s engine prefills at most: its chunk
    (``max_num_batched_tokens``), or without chunked prefill a whole prompt (unbounded)."""
    return run.max_num_batched_tokens if run.chunked_prefill else math.inf


def _misses_too(missed: ServeRun, cap: int, chunk: float) -> bool:
    """Whether ``missed``, a run that misses its targets, says that a run of the same layout at
    ``cap`` sequences and a ``chunk`` of prompt tokens a step misses them too: at as many
    sequences or more, for one target it missed that this chunk cannot bring back. A larger chunk
    prefills a prompt in fewer steps (TTFT falls) and lengthens every step it joins (TPOT and ITL
    rise): a TTFT missed says nothing of a larger chunk, a TPOT or ITL missed nothing of a smaller
    one; E2E (both), a refused request and an overload say it of every chunk."""
    if cap < missed.max_num_seqs:
        return False
    mine = _chunk_of(missed)
    for miss in missed.violates_upper:
        metric = miss.split()[0]
        if metric == "ttft_s" and chunk > mine or metric in ("tpot_s", "itl_s") and chunk < mine:
            continue
        return True
    return False


class _Search:
    """The candidates' simulations of one plan (:func:`plan_on_simulation`): their settings, one
    step timer per replica layout shared by every run of the layout (a step's time depends only on
    its bucket, so sharing the memo changes no figure), the band's slow end each candidate runs at."""

    def __init__(
        self,
        spec: ModelSpec,
        gpu: HardwareSpec,
        traffic: Workload | Trace,
        base: EngineConfig,
        time_model: TimeModel,
        policy: MemoryPolicy,
        targets: dict[str, Target],
        qps: float | None,
        price: float | None,
        formats: dict[str, Any],
        seed: int | str,
        requests: int,
        serving_band: ServingBand | None,
        router: Router | None,
    ) -> None:
        self.spec, self.gpu, self.traffic, self.base = spec, gpu, traffic, base
        self.time_model, self.policy, self.targets, self.qps = time_model, policy, targets, qps
        self.price, self.formats, self.seed, self.requests = price, formats, seed, requests
        self.serving_band, self.router = serving_band, router
        self.ends = band_ends(time_model, serving_band)
        self.timers: dict[Layout, tuple[StepTimer, StepTimer]] = {}
        self.reruns: dict[int, Callable[[StepTimer], ServeRun]] = {}
        self.slow_keys: dict[int, frozenset[tuple[int, int, int, int, int]]] = {}  # each run's buckets

    def timer(self, layout: Layout) -> tuple[StepTimer, StepTimer]:
        """The layout's (nominal, slow end) step timers, shared by its runs."""
        if layout not in self.timers:
            nominal = StepTimer(self.spec, self.gpu, self.time_model, layout, **self.formats)
            slow = ScaledTimer(nominal, self.ends[1]) if self.ends is not None else nominal
            self.timers[layout] = (nominal, slow)
        return self.timers[layout]

    def run(
        self, layout: Layout, replicas: int, c: Candidate, load: Workload | Trace, cap: int | None = None
    ) -> ServeRun:
        """Candidate ``c`` as ``replicas`` x ``layout`` serving ``load``, at the band's slow end."""
        engine = _engine_for(c, self.base, self.qps is None, cap)
        router = self.router_of(layout, replicas)

        def again(t: StepTimer) -> ServeRun:
            return run_configuration(
                self.spec, self.gpu, layout, load, engine, self.time_model, self.policy, replicas=replicas,
                targets=self.targets, usd_per_gpu_hour=self.price, seed=self.seed, timer=t, candidate=c,
                router=router, **self.formats,
            )  # fmt: skip

        slow = self.timer(layout)[1]
        result = again(slow)
        if self.ends is not None:
            result = dataclasses.replace(result, timed_at="slow end")
        self.reruns[id(result)], self.slow_keys[id(result)] = again, slow.last_met
        return result

    def slow_end_words(self, run: ServeRun, metric: str, target: Target) -> str:
        """What a refusal adds of ``run``'s ``metric``: the band's slow end it was judged at (its
        step factor where the serving runs give one) and the figure at nominal step times."""
        if run.timed_at != "slow end" or id(run) not in self.reruns:
            return ""
        nominal = target.value(getattr(self.reruns[id(run)](self.timer(run.layout)[0]).simulation.summary, metric))
        band = self.serving_band
        factor = (
            ""
            if band is None
            else f", every step's time x{band.high:.2f}"
            + ("" if band.measured else f" (widened: the measured runs used no {self.gpu.name})")
        )
        return f" at the band's slow end, where plans are chosen{factor}" + (
            f"; {fmt_seconds(nominal)} at nominal step times" if nominal is not None else ""
        )

    def fewest_at_nominal(self, best: ServeRun) -> int | None:
        """The fewest GPUs of ``best``'s layout whose run at the rate holds the targets at nominal
        step times (bisected over the replicas below ``best``'s, each run the rate's whole load),
        or None where the band's slow end is nominal (x1)."""
        if self.ends is None or (self.serving_band is not None and self.serving_band.high == 1.0):
            return None
        bound, layout, nominal = _implicit_ttft(self.targets), best.layout, self.timer(best.layout)[0]
        engine = _engine_for(best.candidate, self.base, False, None) if best.candidate is not None else self.base
        low, high = 0, best.replicas  # low fails (none), high holds (the slow end's count)
        while high - low > 1:
            mid = (low + high) // 2
            router = self.router_of(layout, mid)
            run = run_configuration(
                self.spec, self.gpu, layout, self.rate_load(mid, router, best.candidate), engine, self.time_model,
                self.policy, replicas=mid, targets=self.targets, usd_per_gpu_hour=self.price, seed=self.seed,
                timer=nominal, candidate=best.candidate, router=router, **self.formats,
            )  # fmt: skip
            low, high = (low, mid) if holds(run) and _good(run, bound) else (mid, high)
        return high * layout.gpus

    def router_of(self, layout: Layout, replicas: int) -> Router:
        """The router of ``replicas`` x ``layout``: the one asked for, else the engine's own as the
        launch runs them (:func:`~llm_cost.analyses.launch.router_for`)."""
        return self.router or router_for(self.base.engine, layout, replicas, node_gpus(self.gpu))

    def banded(self, best: ServeRun) -> ServeRun:
        """The chosen candidate simulated at nominal step times, with its band (the slow end is
        the candidate's own run, and is the nominal run where the serving band's slow end is x1:
        :class:`~llm_cost.simulate.ScaledTimer` by 1 gives its base's times exactly)."""
        again = self.reruns[id(best)]
        nominal = self.timer(best.layout)[0]
        if self.ends is None:
            return with_band(best, again, nominal, self.time_model, self.serving_band)
        if self.serving_band is not None and self.serving_band.high == 1.0:
            run = dataclasses.replace(best, timed_at="nominal")  # a slow end of x1 times every step as nominal
        else:
            run = again(nominal)
        slow = (best, self.slow_keys[id(best)])
        return with_band(run, again, nominal, self.time_model, self.serving_band, slow=slow)

    def saturated(
        self,
        groups: Mapping[tuple[Layout, int], list[Candidate]],
        by_layout: Mapping[tuple[Layout, int], list[Candidate]] | None = None,
    ) -> list[ServeRun]:
        """Without a rate: each group's picks as closed loops, then each group's descent where
        none at its best concurrency holds the targets (module docstring), both group by group,
        the groups whose screen holds the most throughput per GPU within the targets first
        (:func:`_promise`), then each group's ascent where one at its best concurrency holds them
        (:meth:`ascend`, over its layout's own frontier ``by_layout``). A pick or a step is run
        only if it could beat the most output tokens/s per GPU of a run holding the targets so far
        (:meth:`most_per_gpu`), so the order and the bound leave out only runs that could not be
        chosen."""
        order = sorted(groups, key=lambda k: _promise(groups[k], self.targets))
        runs: list[ServeRun] = []
        picked: dict[tuple[Layout, int], list[ServeRun]] = {}
        for layout, replicas in order:
            best = max((r.output_tokens_per_s_per_gpu for r in runs if holds(r)), default=0.0)
            picked[(layout, replicas)] = [
                self.run(layout, replicas, c, self.closed(c, c.concurrency, replicas))
                for c in _picks(groups[(layout, replicas)])
                if self.most_per_gpu(layout, c.concurrency) >= best
            ]
            runs += picked[(layout, replicas)]
        for layout, replicas in order:
            group, mine = groups[(layout, replicas)], picked[(layout, replicas)]
            top = max(group, key=lambda c: c.output_tokens_per_s_per_gpu)
            if self.targets and not any(holds(r) and r.max_num_seqs >= top.concurrency for r in mine):
                best = max((r.output_tokens_per_s_per_gpu for r in runs if holds(r)), default=0.0)
                runs += self.descend(layout, replicas, group, top, mine, best)
                runs += self.sidestep(layout, replicas, group, top, runs)
        if by_layout and "ttft_s" in self.targets:
            for layout, replicas in order:
                runs += self.ascend(layout, replicas, groups[(layout, replicas)], by_layout, runs)
        return runs

    def ascend(
        self,
        layout: Layout,
        replicas: int,
        group: list[Candidate],
        by_layout: Mapping[tuple[Layout, int], list[Candidate]],
        runs: Sequence[ServeRun],
    ) -> list[ServeRun]:
        """Above a group that holds every target at its best concurrency: its layout's own frontier
        points of more sequences (``by_layout``), bisected for the last that holds (about log2 of
        them run). The screen's frontier over every layout drops a point another layout beats on
        both tokens/s per user and per GPU; TTFT is on neither axis, so the point that beat it
        may miss a TTFT target in simulation that it meets (8 x H200, llama3-70b, P99 TTFT 2 s:
        2 x TP4 held at 84 sequences, the frontier's last, and holds at 400). Not run: a point
        whose cap bounds its tokens/s per GPU under the most of a run holding the targets
        (:meth:`most_per_gpu`), or whose screen's figure does by :data:`SCREEN_SLACK`."""
        mine = [r for r in runs if r.layout == layout and r.replicas == replicas and holds(r)]
        if not mine:
            return []
        held = max(r.max_num_seqs for r in mine)
        if held < max(c.concurrency for c in group):
            return []  # it holds below its own best: the descent found its edge
        best = max(r.output_tokens_per_s_per_gpu for r in runs if holds(r))
        above = sorted(
            (c for c in by_layout.get((layout, replicas), []) if c.concurrency > held),
            key=lambda c: (c.concurrency, c.output_tokens_per_s_per_gpu),
        )
        above = [
            c
            for c in above
            if min(self.most_per_gpu(layout, c.concurrency), c.output_tokens_per_s_per_gpu * SCREEN_SLACK) >= best
        ]
        more: list[ServeRun] = []
        lo, hi = -1, len(above)  # above[lo] holds (or is the run below them all), above[hi] does not
        while hi - lo > 1:
            mid = (lo + hi) // 2
            c = above[mid]
            more.append(self.trial(layout, replicas, c, c.concurrency))
            lo, hi = (mid, hi) if holds(more[-1]) else (lo, mid)
        return more

    def least_step(self, layout: Layout) -> float:
        """The shortest step a run of ``layout`` takes at the band's slow end (the step timer a
        candidate runs with): one sequence decoding after the mean prompt. No step of more
        sequences, prompt tokens or context is shorter, so every gap between a request's tokens is
        at least this long."""
        prompt = round(mean_lengths(self.traffic)[0])
        return self.timer(layout)[1].seconds(1, prompt)

    def most_per_gpu(self, layout: Layout, cap: int) -> float:
        """An upper bound of the output tokens/s per GPU of a run of ``layout`` capped at ``cap``
        sequences (at the band's slow end): a step of n <= cap running sequences emits at most n
        tokens and takes at least the step of n decodes after the mean prompt (a prompt chunk or a
        longer context only lengthens it), and n over that step's time grows with n (the weights
        are read once per step), so it is at most cap over the step of cap decodes, per GPU."""
        prompt = round(mean_lengths(self.traffic)[0])
        return cap / (self.timer(layout)[1].seconds(cap, prompt) * layout.gpus)

    def hopeless(self, layout: Layout) -> bool:
        """Whether no configuration of ``layout`` can meet the TPOT or ITL target, whatever its
        cap: the target is below the shortest step (:meth:`least_step`)."""
        least = self.least_step(layout)
        return any(t.seconds < least for m, t in self.targets.items() if m in ("tpot_s", "itl_s"))

    def descend(
        self,
        layout: Layout,
        replicas: int,
        group: list[Candidate],
        top: Candidate,
        mine: list[ServeRun],
        best: float = 0.0,
    ) -> list[ServeRun]:
        """Descend from the analytic best until a configuration holds every target (module
        docstring): first the ladder's caps alone, by falling cap, to the first that holds; then the
        other steps between it and the ladder cap above it (the group's frontier points by falling
        cap, the higher throughput first at one cap; all the steps below when no ladder cap holds)
        bisected for the first that holds: the middle step run, then the half above it if it holds,
        else the half below (a lower cap holds when a higher one does, but for sampling noise:
        about log2 of the steps' runs instead of all of them). The steps and their order depend on
        the targets only through the verdicts, and a verdict that holds under a target holds under
        a looser one, so a looser target stops no lower: where their verdicts first differ, the
        looser goes on above a step that holds, the tighter below it. Not run, as no run of them
        could be chosen: any step when the layout cannot meet the TPOT or ITL target at all
        (:meth:`hopeless`); a step whose cap bounds its output tokens/s per GPU under ``best``, the
        most of a run already holding the targets (:meth:`most_per_gpu`)."""
        if self.hopeless(layout):
            return []
        steps = [(cap, c) for cap, c in _descent(group, top) if self.most_per_gpu(layout, cap) >= best]
        rungs = set(ladder(top.concurrency))
        more: list[ServeRun] = []
        done = {(r.max_num_seqs, r.max_num_batched_tokens, r.chunked_prefill) for r in mine}
        above, below = top.concurrency + 1, 0  # the interval refined: between the failing rung and the holding one
        for cap, c in steps:
            if cap in rungs:
                held = self.step(layout, replicas, c, cap, (*mine, *more), done, more)
                if held is None or held:
                    below = max(r.max_num_seqs for r in (*mine, *more) if holds(r))
                    break
                above = cap
        between = [(cap, c) for cap, c in steps if below < cap < above]
        lo, hi = 0, len(between)  # bisected: the first step that holds lies in between[lo:hi + 1]
        while lo < hi:
            mid = (lo + hi) // 2
            cap, c = between[mid]
            held = self.step(layout, replicas, c, cap, (*mine, *more), done, more)
            lo, hi = (lo, mid) if held is None or held else (mid + 1, hi)
        return more

    def sidestep(
        self, layout: Layout, replicas: int, group: list[Candidate], top: Candidate, runs: Sequence[ServeRun]
    ) -> list[ServeRun]:
        """After a descent that holds: every step above its highest holding cap that no run of the
        layout says must miss (:func:`_misses_too`: in practice those at another chunk than the
        runs that missed above it), by rising cap. The descent
        orders its steps by cap alone, as if a run that misses at one cap said so of every cap
        above it; that holds at one chunk, not across chunks (8 x H100, llama3-70b, P90 TPOT
        60 ms, P90 TTFT 1.2 s: 2 x TP4 missed the TTFT at 52 sequences with a 512-token chunk, so
        64 with 1,024, which meets it at 310 ms, was never run, and a looser TTFT of 2 s planned
        more than this one). Every such step is run, not a bisection of them: a closed loop's
        throughput is not monotone in its cap within a few percent (2 x TP4 at 1,024: 304, 284 and
        288 output tokens/s per GPU at 64, 68 and 72 sequences), and a step skipped on that
        assumption made a looser target plan less. Not run: a step whose cap bounds its output
        tokens/s per GPU under the most of a run holding the targets (:meth:`most_per_gpu`), one
        a missed run rules out, or one tried already."""
        mine = [r for r in runs if r.layout == layout and r.replicas == replicas]
        held = [r.max_num_seqs for r in mine if holds(r)]
        if not held:
            return []
        floor, best = max(held), max(r.output_tokens_per_s_per_gpu for r in runs if holds(r))
        more: list[ServeRun] = []
        for cap, c in sorted(_descent(group, top), key=lambda s: s[0]):
            engine = _engine_for(c, self.base, True, cap)
            chunk = engine.max_num_batched_tokens if engine.chunked_prefill else math.inf
            done = (*mine, *more)
            if cap <= floor or (cap, chunk) in {(r.max_num_seqs, _chunk_of(r)) for r in done}:
                continue
            if self.most_per_gpu(layout, cap) < best or any(_misses_too(r, cap, chunk) for r in done if not holds(r)):
                continue
            more.append(self.trial(layout, replicas, c, cap))
            if holds(more[-1]):
                best = max(best, more[-1].output_tokens_per_s_per_gpu)
        return more

    def step(
        self,
        layout: Layout,
        replicas: int,
        c: Candidate,
        cap: int,
        tried: Sequence[ServeRun],
        done: set[tuple[int, int, bool]],
        more: list[ServeRun],
    ) -> bool | None:
        """One step of a descent: None when a run at ``cap`` or above already holds the targets
        (the descent ends), else whether the step's run holds them (run unless tried already)."""
        if any(holds(r) and r.max_num_seqs >= cap for r in tried):
            return None
        engine = _engine_for(c, self.base, True, cap)
        key = (cap, engine.max_num_batched_tokens, engine.chunked_prefill)
        if key in done:
            return False
        done.add(key)
        more.append(self.trial(layout, replicas, c, cap))
        return holds(more[-1])

    def trial(self, layout: Layout, replicas: int, c: Candidate, cap: int) -> ServeRun:
        """A descent step, its simulated requests bounded by the precision its verdict needs: a
        short run first (:data:`TRIAL_ROUNDS` rounds of the users, at least :data:`TRIAL_REQUESTS`),
        which settles a target missed even at the lower end of its sampling interval (the run is
        then the candidate's); else the full run."""
        full = self.closed(c, cap, replicas)
        short = self.closed(c, cap, replicas, TRIAL_ROUNDS, TRIAL_REQUESTS)
        if short.requests is not None and full.requests is not None and short.requests < full.requests:
            first = self.run(layout, replicas, c, short, cap)
            if _clearly_misses(first):
                return first
        return self.run(layout, replicas, c, full, cap)

    def closed(
        self, c: Candidate, cap: int, replicas: int, rounds: float = STEADY_ROUNDS, least: int | None = None
    ) -> Workload:
        """The closed loop a saturated candidate runs: ``cap`` users per replica, their first
        requests spread over the screen's E2E, at least ``rounds`` rounds of them
        (:data:`STEADY_ROUNDS`) and ``least`` requests per replica (default the plan's)."""
        e2e = c.ttft_s + c.tpot_s * (c.output_tokens_per_s / max(c.requests_per_s, 1e-9) - 1)
        each = max(self.requests if least is None else least, math.ceil(rounds * cap))
        return _closed_loop(self.traffic, cap * replicas, each * replicas, e2e)

    def at_rate(
        self,
        groups: Mapping[tuple[Layout, int], list[Candidate]],
        screen: ServePlan,
        rescreen: Callable[[int], ServePlan] | None = None,
    ) -> list[ServeRun]:
        """With a rate: each layout's fewest replicas whose simulation is good (:func:`_fewest_replicas`),
        from the screen's count, within the budget and the fewest GPUs found good so far; the
        screen's counts asked again (``rescreen``) at the prefix-cache hits the first layout's
        simulation measured when they differ from those the screen priced."""
        budget = screen.gpu_budget
        bound = _implicit_ttft(self.targets)
        fewest_gpus = budget  # of a layout found good so far: no other needs to try more
        runs: list[ServeRun] = []
        starts = dict(_at_a_rate(groups))
        done: set[Layout] = set()
        while True:
            left = sorted(
                ((lay, v) for lay, v in starts.items() if lay not in done),
                key=lambda kv: (kv[1][0] * kv[0].gpus, kv[0].gpus),
            )
            if not left:
                return runs
            layout, (lo, c) = left[0]
            done.add(layout)
            hi = min(budget, fewest_gpus) // layout.gpus
            if hi < 1:
                continue

            def at(n: int, layout: Layout = layout, c: Candidate = c) -> ServeRun:
                return self.decided(layout, n, c, bound)

            tried = _fewest_replicas(
                min(lo, hi), hi, at, lambda r: _good(r, bound), lambda r: _distance(r, self.targets, bound)
            )
            runs += tried
            fewest_gpus = min([fewest_gpus, *(r.gpus for r in tried if _good(r, bound))])
            measured = round(tried[0].prefix_hit_rate * screen.input_tokens)
            if rescreen is not None and len(done) == 1 and abs(measured - screen.cached_tokens) > RESCREEN_TOKENS:
                again = rescreen(measured)
                starts = dict(_at_a_rate(_groups(again)))

    def decided(self, layout: Layout, replicas: int, c: Candidate, bound: float | None) -> ServeRun:
        """Candidate ``c`` as ``replicas`` x ``layout`` at the rate, its simulated requests those its
        verdict needs (:meth:`rate_load`, or the count asked for): a short run first where that is
        shorter (:meth:`short_load`), which settles a target it misses (a short run reads better
        than a long one, its warm-up and drain weighing more, and the verdict is at the upper end
        of the interval, above the figure); else the whole run. The counts do not depend on the
        seed, so neither does the chosen plan's run."""
        router = self.router_of(layout, replicas)
        full = self.rate_load(replicas, router, c)
        short = self.short_load(full, replicas, router)
        if short is not None:
            first = self.run(layout, replicas, c, short)
            if first.violates or _clearly_misses(first, bound):
                return first
        return self.run(layout, replicas, c, full)

    def short_load(self, full: Workload | Trace, replicas: int, router: Router) -> Workload | None:
        """``full``'s traffic cut to :data:`PLAN_REQUESTS` (of one replica standing for all; in all,
        at least :data:`PLAN_REQUESTS_PER_REPLICA` per replica, where every replica is simulated),
        or None where that is no shorter or the traffic is not one steady stream: a trace, or
        stages of different rates, whose first requests are not the rest's. A count asked for
        (``requests`` 20,000 at a rate no layout meets) had run in whole for every candidate, each
        a clear miss: 25 s to an error (an attack)."""
        if not isinstance(full, Workload) or full.requests is None:
            return None
        if not isinstance(full.arrivals, OpenLoop) or len(full.arrivals.stages) != 1:
            return None
        one = exchangeable(full, router)
        n = PLAN_REQUESTS * replicas if one else max(PLAN_REQUESTS, PLAN_REQUESTS_PER_REPLICA * replicas)
        return dataclasses.replace(full, requests=n) if n < full.requests else None

    def rate_load(self, replicas: int, router: Router, c: Candidate | None = None) -> Workload | Trace:
        """The traffic a candidate of ``replicas`` replicas runs at a rate, a workload of ours
        bounded: where one replica stands for all (:func:`~llm_cost.simulate.exchangeable`),
        :data:`PLAN_REQUESTS` for it (``replicas`` times as many arrivals, every R-th its own);
        else :data:`PLAN_REQUESTS` in all, at least :data:`PLAN_REQUESTS_PER_REPLICA` per replica
        (every replica simulated; the deployment's percentiles are over them all). With the
        screen's candidate ``c``, raised to the precision its intervals need
        (:func:`_requests_needed`); at most :data:`MAX_REQUESTS` simulated (of one replica standing
        for all: its own, however many replicas; it draws only its share of the arrivals,
        :func:`~llm_cost.simulate.workload.requests`). The requests in flight are sized from the
        screen's E2E without its queueing (:func:`_unqueued_e2e_s`): a run that holds its targets
        at a rate queues little, and one that does not keep up is overloaded however long it runs."""
        t = self.traffic
        if not isinstance(t, Workload) or t.requests is not None:
            return t
        one = exchangeable(t, router)
        n = self.requests if one else max(self.requests, PLAN_REQUESTS_PER_REPLICA * replicas)
        if c is not None and self.qps is not None:
            n = max(n, _requests_needed(self.qps / replicas if one else self.qps, _unqueued_e2e_s(c), self.targets))
        n = min(n, MAX_REQUESTS)  # the simulated requests: one replica's, or all of them side by side
        return Workload(t.arrivals, t.input_tokens, t.output_tokens, t.prefix, n * replicas if one else n)


def _unqueued_e2e_s(c: Candidate) -> float:
    """The screen's E2E of candidate ``c`` without its wait for a slot or a prefill server
    (``queue_s``): its prompt's time to first token and its other tokens each at the screen's TPOT,
    which is at the candidate's full concurrency, so no shorter at a lighter load. The screen's
    saturated TTFT is mostly that wait (llama3-8b on H100 at 3,000 requests/s, 2K/256: E2E 31 s
    with it, 16 s simulated, 15 s without it), which sized runs twice as long as their precision
    needs."""
    return c.ttft_s - c.queue_s + c.tpot_s * (c.output_tokens_per_s / max(c.requests_per_s, 1e-9) - 1)


#: At a rate, the sampling batches of a run (each at least the requests in flight at once: the
#: requests whose latencies a burst touches together) and the requests beyond the highest
#: percentile a target bounds (P99: 1,000 requests) its precision needs (:func:`_requests_needed`).
RATE_BATCHES, TAIL_REQUESTS = 10, 10
#: The most requests a plan's run takes for its tail (:func:`_requests_needed`): a P99.9 has its
#: 10 beyond it in 10,000, a P99.99 would need 100,000, and three GPUs of such runs took a minute
#: (an attack: P99.99 TTFT and TPOT at 20 requests/s on H100, H200 and A100, 58 s). A target past
#: what the run resolves is said (:func:`_plan_warnings`: ``warning.serve_tail``).
TAIL_MAX = 5_000


def _requests_needed(rate: float, e2e_s: float, targets: Mapping[str, Target]) -> int:
    """The requests a run at ``rate`` (one simulated stream's requests/s) needs for its sampling
    intervals: :data:`RATE_BATCHES` times those in flight at once (Little: rate x the screen's
    E2E), and :data:`TAIL_REQUESTS` beyond the highest percentile a target bounds (the P99 of TTFT
    without a TTFT target: the plan's :data:`SANE_TTFT_S` bound), at most :data:`TAIL_MAX` for
    the tail. Set by the traffic and the screen, not by a seed."""
    top = max([p for t in targets.values() if (p := STATISTICS.get(t.name, t.percentile)) is not None] or [0.0])
    if "ttft_s" not in targets:
        top = max(top, 99.0)
    tail = min(math.ceil(TAIL_REQUESTS / (1 - top / 100)), TAIL_MAX) if top else 0
    return max(math.ceil(RATE_BATCHES * rate * e2e_s), tail)


def _promise(group: Sequence[Candidate], targets: Mapping[str, Target]) -> tuple[float, float]:
    """How early a saturated group is simulated (:meth:`_Search.saturated`), the smaller first:
    the most output tokens/s per GPU among its screen's candidates whose analytic TTFT and TPOT
    are within the targets' bounds (:func:`_screen_distance`'s figures), then among all of them
    (both negated)."""

    def within(c: Candidate) -> bool:
        figures = {"ttft_s": c.ttft_s, "tpot_s": c.tpot_s, "itl_s": c.tpot_s}
        return all(figures[m] <= t.seconds for m, t in targets.items() if m in figures)

    meeting = [c.output_tokens_per_s_per_gpu for c in group if within(c)]
    return (-max(meeting, default=0.0), -max(c.output_tokens_per_s_per_gpu for c in group))


def _implicit_ttft(targets: Mapping[str, Target]) -> float | None:
    """The P99 TTFT bound a plan at a rate keeps without a TTFT target (:data:`SANE_TTFT_S`)."""
    return None if "ttft_s" in targets else SANE_TTFT_S


def _good(run: ServeRun, bound: float | None) -> bool:
    """Whether ``run`` holds its targets (:func:`holds`), refuses nothing and, without a TTFT
    target, keeps its P99 TTFT within ``bound`` (at the upper end of its sampling interval)."""
    p = run.percentiles["ttft_s"]
    ci = p.ci.get("p99")
    p99 = ci[1] if ci is not None else p.p99
    return holds(run) and (bound is None or (p99 is not None and p99 <= bound))


def _distance(run: ServeRun, targets: Mapping[str, Target], bound: float | None) -> float:
    """How far ``run`` is from its targets: the largest of each target's statistic, at the upper
    end of its sampling interval, over its bound (and the P99 TTFT's over ``bound``); at most 1
    when it holds them."""
    s = run.simulation.summary
    ratios = [(upper_end(run.percentiles[m], t, t.value(getattr(s, m))) or 0.0) / t.seconds for m, t in targets.items()]
    p = run.percentiles["ttft_s"]
    ci = p.ci.get("p99")
    p99 = ci[1] if ci is not None else p.p99
    if bound is not None and p99 is not None:
        ratios.append(p99 / bound)
    return max(ratios, default=0.0)


def _nothing_keeps_up(runs: Sequence[ServeRun], qps: float, budget: int, gpu: str) -> InputError:
    """The one-line error when, at ``qps``, no replica count within the budget keeps the P99 TTFT
    within :data:`SANE_TTFT_S` (no TTFT target given)."""
    most = max(runs, key=lambda r: (r.gpus, -(r.percentiles["ttft_s"].p99 or 0.0)))
    reached = most.percentiles["ttft_s"].p99
    return InputError(
        f"qps {fmt_given(qps)}: no configuration within {budget:,} x {gpu} keeps the P99 TTFT within "
        f"{fmt_seconds(SANE_TTFT_S)} (the most simulated, {most.describe()}, reaches {fmt_seconds(reached or 0.0)})",
        fields=("qps", "gpus"),
        advice="raise gpus, lower qps or give a ttft_s target",
    )


def _plan_warnings(best: ServeRun, qps: float | None, targets: Mapping[str, Target]) -> list[Note]:
    """What a user must be told about the chosen plan: at a rate without a TTFT target, the bound
    it was held to; without a rate, that its requests/s is a closed loop's, not a Poisson rate's
    (a MoE user sized a rate on it: 6.5 requests/s on 8 B200s, where --qps 6 needed 24); a P99 TTFT past :data:`SANE_TTFT_S` (saturated: requests waiting for a slot);
    a percentile target past what :data:`TAIL_MAX` requests resolve (past P99.8) with fewer than
    :data:`TAIL_REQUESTS` of the run's requests beyond it: its estimate stands on the run's few
    slowest requests and can read low."""
    out = []
    done = len(best.simulation.requests)
    for m, t in targets.items():
        p = STATISTICS.get(t.name, t.percentile)
        if p is not None and TAIL_REQUESTS / (1 - p / 100) > TAIL_MAX and done * (1 - p / 100) < TAIL_REQUESTS:
            beyond = done * (1 - p / 100)
            out.append(
                note("warning.serve_tail", metric=m, statistic=t.name, requests=done, beyond=beyond, most=TAIL_MAX)
            )
    if qps is not None and "ttft_s" not in targets:
        out.append(note("serve.implicit_ttft", bound=SANE_TTFT_S))
    if qps is None:
        out.append(note("serve.closed_loop_rate"))
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
    """One GPU's answer in a comparison: its price, its plan (None when it has none) or why not
    (``error``, the argument names it uses in ``error_fields``, as an InputError's ``fields``)."""

    gpu: str
    usd_per_gpu_hour: float | None
    plan: SimulatedPlan | None
    error: str | None
    cheapest: bool
    error_fields: tuple[str, ...] = ()


@record
class ServeComparison(Result):
    """The plan on each GPU for the same traffic and targets (``llm-cost serve --gpu a,b,c``);
    ``cheapest`` the GPU whose plan costs least per million output tokens (None without prices or
    plans; on a tie the first given, each tied plan marked and a note naming them)."""

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
    answers: Sequence[tuple[str, float | None, SimulatedPlan | None, tuple[str, tuple[str, ...]] | None]],
) -> ServeComparison:
    """The side-by-side result of each GPU's (name, price, plan, error: its message and the
    argument names it uses), the cheapest marked: the least $ per million output tokens at the slow
    end of each plan's band (:func:`pessimistic_usd`), the side each plan is chosen on. A GPU no
    measured run used has a band widened about its nominal figure, so its nominal is not its
    pessimistic figure, where a measured GPU's nearly is: ranked at nominal, a B200 at $2.37
    (slow end $4.50) was marked beside an H100 at $2.64 (a new user)."""
    priced = [(usd, g) for g, _, p, _ in answers if p is not None and (usd := pessimistic_usd(p)) is not None]
    least = min((usd for usd, _ in priced), default=None)
    tied = [g for usd, g in priced if usd == least]  # in the order given
    plans = tuple(
        GpuPlan(g, price, plan, error[0] if error else None, g in tied, error[1] if error else ())
        for g, price, plan, error in answers
    )
    bands = [n for _, _, p, _ in answers if p is not None for n in p.conventions if n.code in _BAND_NOTES]
    said = [n for i, n in enumerate(bands) if n not in bands[:i]]  # each GPU's band, said once
    if len(tied) > 1:  # the same GPUs at the same price carrying one rate cost the same (a new user)
        said.append(note("serve.compare_tie", gpus=tied, usd=least, rate=qps is not None))
    cheapest = tied[0] if tied else None
    return ServeComparison(model, workload, qps, dict(targets), plans, cheapest, [note("serve.compare"), *said])


def pessimistic_usd(plan: SimulatedPlan) -> float | None:
    """A plan's $ per million output tokens at the slow end of its band (its nominal figure where
    it has no band or no price)."""
    figures = [
        x for x in (plan.usd_per_million_output_tokens, plan.usd_per_million_output_tokens_high) if x is not None
    ]
    return max(figures) if figures else None


#: The notes that say how a plan's band was drawn (:func:`with_band`), repeated in a comparison.
_BAND_NOTES = ("serve.band", "serve.no_band")
