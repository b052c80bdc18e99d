"""Sampling intervals of simulated latencies (llm_cost.simulate.intervals) hold what a latency can
be: never below the run's least value (so never negative) nor above its greatest, and the run's own
statistic inside its interval (properties over any non-negative latencies in any order)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.simulate.intervals import LEAST_REQUESTS, interval
from llm_cost.simulate.results import percentile

latencies = st.lists(st.floats(min_value=0.0, max_value=1e4, allow_nan=False), min_size=LEAST_REQUESTS, max_size=400)


@settings(max_examples=200, deadline=None)
@given(latencies, st.sampled_from([None, 50.0, 90.0, 99.0]), st.booleans(), st.floats(min_value=0.0, max_value=200.0))
def test_an_interval_starts_at_the_least_value_or_above_and_holds_the_runs_own_figure(values, statistic, rerun, span):
    low, high = interval(values, statistic, rerun, span)
    own = sum(values) / len(values) if statistic is None else percentile(sorted(values), statistic)
    assert min(values) <= low <= own * (1 + 1e-12) + 1e-12 and own <= high * (1 + 1e-12) + 1e-12
    assert high <= max(values)


def test_a_run_whose_queue_grows_has_a_mean_no_lower_than_its_fastest_request():
    """Latencies that grow through the run (a queue without end): a few batches far apart, a wide
    t; the mean's interval stops at the fastest request's 0.5 s (it had gone to about -79 s, then,
    floored at 0, read '0-72.6 s' for a TTFT no request had under 0.5 s)."""
    values = [0.5 + 0.1 * i for i in range(1000)]
    low, high = interval(values, None, rerun=True, span=400)
    assert low == 0.5 and sum(values) / len(values) < high == max(values)
    # the upper end stops at the slowest request (an attacker's SGLang run past its capacity had
    # printed a TTFT mean within '47.4 ms-2.64 h', its slowest request about 418 s)
