"""How far a finite simulated run's statistics may be from the long-run ones: a sampling interval
on the mean and on each percentile of a latency, from the run's own requests.

A run of N requests estimates each statistic with an error that another seed (other arrival
times, other lengths) would draw differently. The requests of one run are not independent draws:
a request queued behind a burst waits, and so does the next one. The interval is therefore
computed by batch means (sectioning; Law, "Simulation Modeling and Analysis", 5th ed., section
9.5.3; for quantiles, Seila, "A batching approach to quantile estimation in regenerative
simulations", Management Science 28, 1982), which keeps that correlation inside each batch:

* the requests, in arrival order, are cut into ``k`` contiguous batches of equal size (at most
  :data:`BATCHES`, at least :data:`LEAST_PER_BATCH` requests each, and at least
  :data:`SPANS_PER_BATCH` times the requests in flight at once, ``span``: the requests a burst
  holds up together, whose latencies rise and fall together; batches shorter than that leave
  the correlation between them and understate the spread);
* the mean: the batches' means m_j, whose spread s gives the standard error s / sqrt(k);
* a percentile p (0 < p < 100) estimated by the run's q = P_p(x): the share of each batch's values
  at or below q, whose spread s gives the standard error of the share below q, s / sqrt(k) (at least
  the independent draws' sqrt(p(1 - p) / N)); the share's interval p +- t s / sqrt(k), read back
  through the run's own percentiles, is the interval of q;
* ``t`` is Student's t at :data:`CONFIDENCE` (two-sided) with k - 1 degrees of freedom.

The interval is for the statistic of the long run (the run's expectation under other seeds); a
second run's own estimate is itself off by as much, so two runs' estimates differ by up to sqrt 2
times the half-width (:data:`RERUN`): an interval that is to hold another seed's figure, as a plan
needs for its choice not to flip with the seed, is widened by that factor (:func:`interval`'s
``rerun``). Fewer than :data:`LEAST_REQUESTS` values give no interval (None).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from llm_cost.simulate.results import percentile

__all__ = [
    "interval", "CONFIDENCE", "BATCHES", "LEAST_PER_BATCH", "LEAST_REQUESTS", "RERUN", "SPANS_PER_BATCH", "t_quantile",
]  # fmt: skip

#: Two-sided confidence of the intervals.
CONFIDENCE = 0.99
#: The most batches a run's requests are cut into, and the fewest requests a batch holds.
BATCHES, LEAST_PER_BATCH = 20, 10
#: The fewest values an interval is drawn from (two batches).
LEAST_REQUESTS = 2 * LEAST_PER_BATCH
#: The widening that makes an interval hold another run's estimate rather than the long-run value:
#: the difference of two independent estimates has sqrt 2 times one's standard error.
RERUN = math.sqrt(2)

#: Student's t at 99.5% (two-sided 99%) for 1 .. 30 degrees of freedom (Abramowitz and Stegun,
#: table 26.10).
_T995 = (
    63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169,
    3.106, 3.055, 3.012, 2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845,
    2.831, 2.819, 2.807, 2.797, 2.787, 2.779, 2.771, 2.763, 2.756, 2.750,
)  # fmt: skip


def t_quantile(df: int) -> float:
    """Student's t at 99.5% with ``df`` degrees of freedom (2.576 beyond 30)."""
    return _T995[df - 1] if 1 <= df <= len(_T995) else 2.576


#: A batch holds at least this many times the requests in flight at once (``span``).
SPANS_PER_BATCH = 1.0


def _batches(values: Sequence[float], span: float = 0.0) -> list[Sequence[float]]:
    """``values`` cut into k contiguous batches of (nearly) equal size, each of at least
    :data:`LEAST_PER_BATCH` and :data:`SPANS_PER_BATCH` x ``span`` values."""
    n = len(values)
    least = max(LEAST_PER_BATCH, math.ceil(SPANS_PER_BATCH * span))
    k = max(2, min(BATCHES, n // least))
    return [values[j * n // k : (j + 1) * n // k] for j in range(k)]


def _spread(shares: Sequence[float]) -> float:
    """The standard error of the mean of ``shares`` (sample standard deviation / sqrt k)."""
    k = len(shares)
    mean = sum(shares) / k
    return math.sqrt(sum((s - mean) ** 2 for s in shares) / (k - 1) / k)


def interval(
    values: Sequence[float | None], statistic: float | None = None, rerun: bool = False, span: float = 0.0
) -> tuple[float, float] | None:
    """The sampling interval (module docstring) of the mean (``statistic`` None) or of the
    ``statistic``-th percentile (0 < p < 100, linear between order statistics as the run's own
    percentiles) of ``values``, seconds, in the order the requests arrived (None entries, such
    as a one-token request's TPOT, skipped). ``rerun``: widened by :data:`RERUN` to hold
    another seed's estimate. ``span``: the requests in flight at once (each batch holds at least
    :data:`SPANS_PER_BATCH` times as many). None with fewer than :data:`LEAST_REQUESTS` values.
    The mean's interval starts no lower than the least value of the run (no request is faster
    than the fastest the run saw, so neither is their mean): a run whose queue grows through it
    (a few batches, far apart) had printed a TTFT mean of 143 s within '-7.87e+07 µs-366 s', and
    then, floored at 0, a TTFT mean within '0-72.6 s'); and it ends no higher than the run's
    slowest value, as a percentile's interval does (an attacker's SGLang run past its capacity
    printed a TTFT mean within '47.4 ms-2.64 h', its slowest request about 418 s)."""
    x = [v for v in values if v is not None]
    if len(x) < LEAST_REQUESTS:
        return None
    batches = _batches(x, span)
    t = t_quantile(len(batches) - 1) * (RERUN if rerun else 1.0)
    if statistic is None:
        mean = sum(x) / len(x)
        half = t * _spread([sum(b) / len(b) for b in batches])
        return max(min(x), mean - half), min(max(x), mean + half)
    ordered = sorted(x)
    p = statistic / 100
    q = percentile(ordered, statistic)
    shares = [sum(1 for v in b if v <= q) / len(b) for b in batches]
    se = max(_spread(shares), math.sqrt(p * (1 - p) / len(x)))
    low, high = max(0.0, p - t * se), min(1.0, p + t * se)
    return percentile(ordered, 100 * low), percentile(ordered, 100 * high)
