"""What a simulation returns: each request's times and the distributions over them.

Per request (:class:`RequestTimes`), in seconds from its arrival:

* ``queue_s``: until the engine first scheduled it;
* ``ttft_s``: until its first output token (the end of the step that finished its prompt);
* ``e2e_s``: until its last output token;
* ``tpot_s``: (E2E - TTFT) / (output tokens - 1), the mean gap between its output tokens (None
  for a one-token output); ``itl_max_s``: its longest gap.

Distributions (:class:`Distribution`): mean, P50, P90, P99 and max, percentiles interpolated
linearly between order statistics (numpy's default, which inference-perf and vLLM's benchmark
use). ITL is over every gap between consecutive output tokens of every request (each gap once),
the way vLLM's ``benchmark_serving`` reports it; TPOT over requests.

Service targets (:class:`Target`) bound one statistic of a distribution (its mean or a
percentile); :func:`goodput_rps` counts the requests that meet every target on their own, as
DistServe (Zhong et al. 2024, section 2.2) and vLLM's ``benchmark_serving --goodput`` define
goodput: a request is good when its TTFT, its TPOT and its E2E are each within their targets'
values (an ITL target: its longest gap), whatever statistic the target bounds.

Throughput (:class:`Steady`, :func:`steady_window`) is measured over the run's steady window, not
over the whole finite run: a run starts with an empty engine (warm-up: nothing completes at
first, a closed loop's users all start together) and ends with a drain (after the last arrival
the load falls to nothing), and both lower the whole-run rate N / (last completion) below what
the engine sustains (a closed loop of U users with no think time serves U / mean E2E by Little's
law). The window runs from the completion that ends the warm-up (the first completion of an open
loop; the U-th of a closed loop of U users: every user's first round) to the last completion at
or before the last request is issued (an open loop's last arrival; when a closed loop stops
sending). An open loop's rate is the completions after the opening instant up to the closing one
over the time between the two: an inter-completion rate with no partial interval at either end (a
batch of completions in one step counts once, at the end it closes); what an overloaded open loop
completes is what it serves, its queue or its batch growing with the rest. A closed loop cannot be
overloaded (each user waits for its answer), but its users, started together, complete in bursts,
and a window from one burst's last completion to another burst's first misses a burst (a new
user's 40 users, 100 requests: 3.02 requests/s counted where Little's law's U / mean E2E gives
5.38; 21% under it at 110 requests, 0.5% over at 120). Its rate is each request's share of the
window instead: the fraction of its output (first token to last, taken as evenly spaced)
produced inside the window (:func:`window_share`), 1 when it lies wholly inside; each request
counts 1 over the whole of time, so the shares of a window estimate a steady rate however
completions bunch (within 2% of U / mean E2E at 100, 110 and 120 requests). vLLM's
``benchmark_serving`` instead divides all completions by the whole benchmark's duration
(``benchmarks/benchmark_serving.py`` ``calculate_metrics``: ``request_throughput = completed /
dur_s``, ``dur_s`` from the first request sent until every one returned; vllm-project/vllm @
8668d7c05027b98ac66bd5540955dd2ce3a0f318), which counts the warm-up and the drain; the whole-run figure stays in ``Summary.throughput_rps``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import field
from typing import Any

from llm_cost.core.choices import Statistic
from llm_cost.core.records import record
from llm_cost.core.serialize import Result, plain
from llm_cost.core.types import Engine
from llm_cost.core.units import fmt_seconds

__all__ = [
    "Distribution",
    "RequestTimes",
    "Summary",
    "SimResult",
    "distribution",
    "weighted_distribution",
    "window_share",
    "percentile",
    "summarize",
    "Target",
    "METRICS",
    "goodput_rps",
    "Steady",
    "steady_window",
    "STEADY_LEAST_REQUESTS",
    "STEADY_LEAST_SHARE",
    "steady_least",
]


@record
class Distribution:
    """Mean, median, P90, P99 and maximum of a quantity (seconds); None where there is no sample.
    ``samples``: the sorted values with their multiplicities, for any other percentile
    (:meth:`at`); left out of JSON."""

    mean: float | None
    p50: float | None
    p90: float | None
    p99: float | None
    max: float | None
    samples: tuple[tuple[float, int], ...] = field(default=(), repr=False)

    JSON_OMITS = ("samples",)

    def at(self, p: float) -> float | None:
        """The ``p``-th percentile (0 < p < 100), linear between order statistics as P50/P90/P99
        are (None without samples)."""
        if not self.samples:
            return None
        return _weighted_percentile(self.samples, sum(c for _, c in self.samples), p)


_EMPTY = Distribution(None, None, None, None, None)


def percentile(ordered: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (0-100) of a sorted non-empty sequence, linear between order
    statistics (numpy's ``linear`` method): position p / 100 x (n - 1)."""
    pos = p / 100 * (len(ordered) - 1)
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def _weighted_percentile(items: Sequence[tuple[float, int]], n: int, p: float) -> float:
    """:func:`percentile` of sorted (value, multiplicity) pairs holding ``n`` values."""

    def at(rank: int) -> float:  # the rank-th smallest value, 0-based
        seen = 0
        for v, c in items:
            seen += c
            if rank < seen:
                return v
        return items[-1][0]

    pos = p / 100 * (n - 1)
    lo = math.floor(pos)
    a, b = at(lo), at(min(lo + 1, n - 1))
    return a + (b - a) * (pos - lo)


def distribution(values: Iterable[float]) -> Distribution:
    """The distribution of ``values`` (None entries skipped)."""
    ordered = sorted(v for v in values if v is not None)
    if not ordered:
        return _EMPTY
    samples: list[tuple[float, int]] = []
    for v in ordered:
        if samples and samples[-1][0] == v:
            samples[-1] = (v, samples[-1][1] + 1)
        else:
            samples.append((v, 1))
    return Distribution(
        sum(ordered) / len(ordered),
        percentile(ordered, 50),
        percentile(ordered, 90),
        percentile(ordered, 99),
        ordered[-1],
        tuple(samples),
    )


def weighted_distribution(counts: Mapping[float, int]) -> Distribution:
    """The distribution of a multiset given as value -> multiplicity (the percentiles of the
    values repeated that many times)."""
    items = sorted((v, c) for v, c in counts.items() if c > 0)
    n = sum(c for _, c in items)
    if not n:
        return _EMPTY

    def pct(p: float) -> float:
        return _weighted_percentile(items, n, p)

    return Distribution(sum(v * c for v, c in items) / n, pct(50), pct(90), pct(99), items[-1][0], tuple(items))


@record
class RequestTimes:
    """One completed request's lengths and times (seconds from its arrival; see the module
    docstring). ``cached_tokens``: prompt tokens found in the prefix cache when it was admitted."""

    index: int
    arrival_s: float
    input_tokens: int
    output_tokens: int
    cached_tokens: int
    queue_s: float
    ttft_s: float
    tpot_s: float | None
    e2e_s: float
    itl_max_s: float
    preemptions: int


@record
class Summary:
    """The requests that arrived in ``start_s`` .. ``end_s`` (a stage, or the whole run): how many
    completed and were rejected, their rates over the window, and the distributions of their times
    (seconds)."""

    start_s: float
    end_s: float
    requests: int
    rejected: int
    throughput_rps: float
    input_tokens_per_s: float
    output_tokens_per_s: float
    queue_s: Distribution
    ttft_s: Distribution
    tpot_s: Distribution
    itl_s: Distribution
    e2e_s: Distribution


def summarize(
    done: Sequence[RequestTimes], rejected: int, start_s: float, end_s: float, gaps: Mapping[float, int]
) -> Summary:
    """The summary of ``done`` (requests that arrived in the window), ``gaps`` their inter-token
    gaps as value -> count; rates over the window's length."""
    span = end_s - start_s
    rate = (lambda x: x / span) if span > 0 else (lambda x: 0.0)
    return Summary(
        start_s,
        end_s,
        len(done),
        rejected,
        rate(len(done)),
        rate(sum(r.input_tokens for r in done)),
        rate(sum(r.output_tokens for r in done)),
        distribution(r.queue_s for r in done),
        distribution(r.ttft_s for r in done),
        distribution(r.tpot_s for r in done if r.tpot_s is not None),
        weighted_distribution(gaps),
        distribution(r.e2e_s for r in done),
    )


#: Completions a steady window needs (after the one that opens it) to stand for the run's rate,
#: at least, and as a share of the run's completions (:func:`steady_least`); with fewer the
#: whole-run figures are reported.
STEADY_LEAST_REQUESTS = 10
STEADY_LEAST_SHARE = 0.1


def steady_least(completed: int) -> int:
    """The completions a steady window of a run of ``completed`` requests needs: at least
    :data:`STEADY_LEAST_REQUESTS` and a tenth of the run (:data:`STEADY_LEAST_SHARE`). A window
    of a few completions out of hundreds is not a steady state: a run whose every request is
    admitted at once and slows every step (llama3.1-70b on one TP8 H200 at 10 req/s, 400
    requests) completes its first at 29 s and only 13 before the last arrival, a 'rate' of
    1.37 req/s against 8.5 over the run."""
    return max(STEADY_LEAST_REQUESTS, math.ceil(STEADY_LEAST_SHARE * completed))


@record
class Steady:
    """The run's rates over its steady window (module docstring): ``start_s`` .. ``end_s`` the
    completions that open and close it, ``requests`` completed after the opening one up to the
    closing one, and the rates over the window's length (per second: of a closed loop,
    ``by_output``, every request's :func:`window_share`, its tokens weighted by it; of an open loop
    the requests counted and their tokens); ``running_mean`` and
    ``waiting_mean`` the requests in the engine over the window, from each request's times (running
    from its first scheduling to its last token, waiting before: a preempted request counts as
    running)."""

    start_s: float
    end_s: float
    requests: int
    throughput_rps: float
    input_tokens_per_s: float
    output_tokens_per_s: float
    running_mean: float
    waiting_mean: float
    by_output: bool = False


def steady_window(done: Sequence[RequestTimes], warmup: int = 1, closed_loop: bool = False) -> Steady | None:
    """The steady window of a run's completed requests ``done`` (module docstring): opened by the
    ``warmup``-th completion (1 for an open loop, a closed loop's users), closed by the last
    completion at or before the last arrival; the requests completing after the opening instant
    up to the closing one count (several completing at the instant that opens it, in one step,
    all belong to the warm-up), and give an open loop's rates; a ``closed_loop``'s are every
    request's :func:`window_share`. None when fewer than :func:`steady_least` of them count."""
    if not done:
        return None
    last_arrival = max(r.arrival_s for r in done)
    ends = sorted(r.arrival_s + r.e2e_s for r in done)
    start = ends[min(max(1, warmup), len(ends)) - 1]
    closing = [t for t in ends if t <= last_arrival]
    if not closing or closing[-1] <= start:
        return None
    end = closing[-1]
    counted = [r for r in done if start < r.arrival_s + r.e2e_s <= end]
    if len(counted) < steady_least(len(done)):
        return None
    span = end - start

    def overlap(a: float, b: float) -> float:
        return max(0.0, min(b, end) - max(a, start))

    running = sum(overlap(r.arrival_s + r.queue_s, r.arrival_s + r.e2e_s) for r in done)
    waiting = sum(overlap(r.arrival_s, r.arrival_s + r.queue_s) for r in done)
    shares = [(r, window_share(r, start, end)) for r in done] if closed_loop else [(r, 1.0) for r in counted]
    return Steady(
        start,
        end,
        len(counted),
        sum(w for _, w in shares) / span,
        sum(r.input_tokens * w for r, w in shares) / span,
        sum(r.output_tokens * w for r, w in shares) / span,
        running / span,
        waiting / span,
        closed_loop,
    )


def window_share(r: RequestTimes, start_s: float, end_s: float) -> float:
    """The share of request ``r``'s output (its first token to its last, taken as evenly spaced)
    produced in the window ``start_s`` .. ``end_s`` (module docstring): 0 to 1; a request of one
    token counts 1 when it completes inside the window (after ``start_s``, up to ``end_s``). Its
    queueing and its prompt count for nothing: a queue that grows (an overloaded open loop) or a
    batch that grows (every arrival admitted, each step slower) adds requests waiting or in
    flight, not output, so the rate is the tokens the engine produced, not the requests it holds."""
    a, b = r.arrival_s + r.ttft_s, r.arrival_s + r.e2e_s
    if b <= a:
        return 1.0 if start_s < b <= end_s else 0.0
    return max(0.0, min(b, end_s) - max(a, start_s)) / (b - a)


@record
class SimResult(Result):
    """A simulated run of one engine replica.

    ``summary`` covers every request (its window from the first arrival to the last completion);
    ``stages`` each open-loop stage's arrivals over the stage's duration (empty for one stage).
    Engine figures are time averages over the run: ``running_mean`` sequences scheduled (the
    occupancy), ``waiting_mean`` requests queued, ``kv_use_mean`` / ``kv_use_max`` the fraction of
    KV blocks held (a hybrid model's per-sequence state blocks included); ``preemptions`` (recomputations), ``prefix_hit_rate`` (prompt tokens found in
    the prefix cache over prompt tokens admitted), ``steps`` and ``step_shapes`` (the distinct step
    buckets the run timed or found memoised: its own, whatever other runs shared its step timer)."""

    model: str
    gpu: str
    engine: Engine
    time_model: str
    kv_blocks: int
    block_tokens: int
    summary: Summary
    stages: tuple[Summary, ...]
    running_mean: float
    waiting_mean: float
    kv_use_mean: float
    kv_use_max: float
    preemptions: int
    prefix_hit_rate: float
    steps: int
    step_shapes: int
    requests: tuple[RequestTimes, ...]
    #: Blocks of ``kv_blocks`` each running request's fixed state holds (linear-attention and
    #: Mamba layers' recurrent and convolution state; 0 for a model without one).
    state_blocks_per_sequence: int = 0
    #: The rates over the run's steady window (:func:`steady_window`; None: too few requests
    #: completed in it, the whole run's ``summary`` rates stand).
    steady: Steady | None = None
    #: The deployment's replicas, the router that spread the requests over them (None: one
    #: replica), and those simulated: all side by side (the engine figures above are then one
    #: replica's mean, the rest the deployment's), or one standing for all (its own figures).
    replicas: int = 1
    router: str | None = None
    simulated_replicas: int = 1

    JSON_OMITS = ("requests",)

    @property
    def kv_tokens(self) -> int:
        """Tokens of attention KV the cache holds (``kv_blocks`` x ``block_tokens``), before any
        request's fixed state takes its blocks."""
        return self.kv_blocks * self.block_tokens

    def max_sequences(self, tokens: int) -> int:
        """Requests of ``tokens`` tokens each that the cache holds at once: ``kv_blocks`` //
        (ceil(tokens / block_tokens) + ``state_blocks_per_sequence``)."""
        return self.kv_blocks // (-(-tokens // self.block_tokens) + self.state_blocks_per_sequence)

    def to_dict(self, requests: bool = False) -> dict[str, Any]:
        """The result as plain data; each request's times only with ``requests``."""
        data = plain(self)
        if requests:
            data["requests"] = plain(self.requests)
        return data


#: The latency metrics a target can bound: the :class:`Summary` distribution of each, and the
#: per-request figure goodput compares (:class:`RequestTimes` field).
METRICS = {"ttft_s": "ttft_s", "tpot_s": "tpot_s", "itl_s": "itl_max_s", "e2e_s": "e2e_s"}


@record
class Target:
    """A service target: ``statistic`` (the mean or a percentile) of a latency distribution at
    most ``seconds``; ``Statistic.PERCENTILE`` bounds the ``percentile``-th (0 < p < 100: P95,
    P99.9), the named ones (P50, P90, P99) their own."""

    statistic: Statistic
    seconds: float
    percentile: float | None = None

    @property
    def name(self) -> str:
        """``mean``, ``p99``, ``p95`` or ``p99.9``."""
        if self.statistic == Statistic.PERCENTILE:
            return f"p{self.percentile:g}"
        return self.statistic.value

    def value(self, d: Distribution) -> float | None:
        """The bounded statistic of ``d`` (None without samples)."""
        if self.statistic == Statistic.PERCENTILE:
            assert self.percentile is not None
            return d.at(self.percentile)
        return getattr(d, self.statistic.value)

    def met(self, d: Distribution) -> bool:
        """Whether ``d`` meets the target (no samples: met, nothing was late)."""
        v = self.value(d)
        return v is None or v <= self.seconds

    def label(self) -> str:
        """``p99 2.00 s`` or ``mean 50.0 ms``."""
        return f"{self.name} {fmt_seconds(self.seconds)}"


def goodput_rps(
    done: Sequence[RequestTimes], targets: Mapping[str, Target], span_s: float, window: Steady | None = None
) -> float:
    """Requests per second meeting every target of ``targets`` (metric name of :data:`METRICS` ->
    target) on their own (module docstring), over ``span_s`` seconds; every completed request
    counts without targets. With ``window`` (a run's steady window): the requests as the window's
    throughput counts them (an open loop's completing in it, a closed loop's
    :func:`window_share` of it), over its length (``span_s`` unused)."""
    shares = [1.0] * len(done)
    if window is not None:
        a, b = window.start_s, window.end_s
        shares = [window_share(r, a, b) if window.by_output else float(a < r.arrival_s + r.e2e_s <= b) for r in done]
        span_s = b - a
    if span_s <= 0:
        return 0.0

    def good(r: RequestTimes) -> bool:
        for metric, target in targets.items():
            v = getattr(r, METRICS[metric])
            if v is not None and v > target.seconds:
                return False
        return True

    return sum(w for r, w in zip(done, shares) if w and good(r)) / span_s
