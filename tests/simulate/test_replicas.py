"""A deployment's replicas simulated side by side behind a router (llm_cost.simulate.engine
run_replicas, llm_cost.simulate.routers router_of), the sampling intervals of a finite run (llm_cost.simulate.intervals) and
the prefix-cache hits a workload implies (llm_cost.simulate.workload.expected_cached_tokens), each
against arithmetic written out here or a property that cannot hold by accident."""

from __future__ import annotations

import math
import random
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.api.model import load_gpu, load_model
from llm_cost.core.choices import Router
from llm_cost.core.types import Engine
from llm_cost.perf.choose import time_model_for
from llm_cost.simulate import EngineConfig, Fixed, SharedPrefix, StepTimer, Trace, TraceRow, merged, poisson
from llm_cost.simulate.engine import run_engine, run_replicas
from llm_cost.simulate.intervals import interval
from llm_cost.simulate.results import percentile
from llm_cost.simulate.workload import expected_cached_tokens, requests, trace_requests


@pytest.fixture(scope="module")
def timer():
    """Llama-3-8B steps on one H100 under the shipped profile (any time model does)."""
    g = load_gpu("h100")
    return StepTimer(load_model("llama3-8b"), g, time_model_for(g, Engine.VLLM))


CONFIG = EngineConfig(max_num_seqs=64, max_num_batched_tokens=2048)


def _times(run):
    return sorted((t.index, t.ttft_s, t.e2e_s) for _, t in run.done)


def test_round_robin_replicas_are_one_replica_on_every_rth_arrival(timer):
    """Round robin sends replica k the arrivals k, k + R, ...; replicas never interact, so each
    replica of the side-by-side run is exactly the run of one engine on that subsequence: the same
    requests, TTFTs and E2Es (to rounding of the clock's sums), the same steps and cache hits. This
    is why one replica stands for all under round robin over an exchangeable open loop
    (llm_cost.simulate.exchangeable)."""
    reqs = requests(poisson(40.0, Fixed(1500), Fixed(80), requests=150, prefix=SharedPrefix(3, 512)), seed=1)
    side_by_side = run_replicas(timer, CONFIG, 30_000, reqs, 3, Router.ROUND_ROBIN)
    for k in range(3):
        alone = run_engine(timer, CONFIG, 30_000, reqs[k::3])
        a, b = _times(side_by_side[k]), _times(alone)
        assert [x[0] for x in a] == [x[0] for x in b] == [r.index for r in reqs[k::3]]
        assert [v for x in a for v in x[1:]] == pytest.approx([v for x in b for v in x[1:]], rel=1e-12)
        assert side_by_side[k].steps == alone.steps and side_by_side[k].hit_tokens == alone.hit_tokens


def test_least_loaded_routing_balances_by_requests_in_flight(timer):
    """vLLM's data-parallel balancer (scan from a start that turns each request, least waiting +
    running): three requests at once on two idle replicas go 0, 1, 0 (the first scan from 0 takes
    replica 0; the second, from 1, finds it one request ahead; the third, from 0 again, finds a tie
    and keeps its first), then a fourth, once one replica holds two, goes to the other."""
    reqs = [r for r in requests(poisson(1e6, Fixed(1000), Fixed(400), requests=4), seed=0)]
    runs = run_replicas(timer, CONFIG, 30_000, reqs, 2, Router.LEAST_LOADED)
    by_replica = [sorted(t.index for _, t in run.done) for run in runs]
    assert by_replica == [[0, 2], [1, 3]]


def test_prefix_aware_routing_keeps_each_prefix_on_one_replica(timer):
    """SGLang's gateway's cache-aware policy: a request whose prompt matches more than 30% of a
    replica's cache goes there, so two system prompts of 1,024 of 1,536 tokens over three replicas
    stay each on one replica (the loads never differ by the 64 requests that would rebalance)."""
    reqs = requests(poisson(20.0, Fixed(1536), Fixed(32), requests=90, prefix=SharedPrefix(2, 1024)), seed=3)
    runs = run_replicas(timer, CONFIG, 30_000, reqs, 3, Router.PREFIX_AWARE)
    group = {r.index: r.shared[0][0] for r in reqs}
    groups = [{group[t.index] for _, t in run.done} for run in runs]
    assert sorted(len(g) for g in groups) == [0, 1, 1]
    total = merged(runs)
    assert total.hit_tokens == (90 - 2) * 1024  # every request but each group's first: 64 whole blocks


def test_a_trace_of_alternating_prefixes_keeps_its_own_hit_rate(timer):
    """A trace whose even rows share a 1,008-token prefix and odd rows share none: behind round
    robin on two replicas every prefixed row lands on replica 0. The deployment's hit rate is the
    trace's own, (prefixed rows - 1) x 1,008 (63 whole blocks) over all prompt tokens, not twice
    it, as one replica taking every other row would report."""
    rows = tuple(
        TraceRow(i * 0.5, 1200, 16, "system" if i % 2 == 0 else None, 1008 if i % 2 == 0 else 0) for i in range(40)
    )
    runs = run_replicas(timer, CONFIG, 30_000, trace_requests(Trace(rows)), 2, Router.ROUND_ROBIN)
    total = merged(runs)
    own = (20 - 1) * 1008 / (40 * 1200)
    assert total.hit_tokens / total.queried_tokens == pytest.approx(own)
    one = runs[0]
    assert one.hit_tokens / one.queried_tokens == pytest.approx(2 * own)  # the one-replica view doubles it


def test_expected_cached_tokens_is_what_a_sparse_run_finds():
    """A shared prefix of 1,000 tokens (62 whole blocks, 992 tokens) in 4 groups over 200 requests:
    every request but each group's first finds 992 tokens cached, 992 x (1 - 4 / 200) per request;
    a trace's rows count the same way, its first row of each prefix_id missing."""
    w = poisson(2.0, Fixed(1500), Fixed(50), requests=200, prefix=SharedPrefix(4, 1000))
    assert expected_cached_tokens(w, 200) == pytest.approx(992 * (1 - 4 / 200))
    assert expected_cached_tokens(w) == 992  # a long run: every prefix warm
    rows = (TraceRow(0, 500, 5, "a", 40), TraceRow(1, 500, 5, "a", 40), TraceRow(2, 500, 5, None, 0))
    assert expected_cached_tokens(Trace(rows)) == pytest.approx(32 / 3)


# -- sampling intervals --------------------------------------------------------------------------


def _coverage(draw, truth, statistic, runs=200, n=400) -> float:
    rng = random.Random(7)
    hits = 0
    for _ in range(runs):
        values = [draw(rng) for _ in range(n)]
        low, high = interval(values, statistic)
        hits += low <= truth <= high
    return hits / runs


def test_a_mean_interval_covers_the_true_mean_about_95_percent_of_the_time():
    """Independent normal draws of mean 10 and sd 2: the batch-means 95% interval of the mean holds
    10 in between 90% and 99% of 200 runs of 400 (the binomial spread of 95% over 200 runs)."""
    assert 0.90 <= _coverage(lambda r: r.gauss(10.0, 2.0), 10.0, None) <= 0.99


def test_a_percentile_interval_covers_the_true_percentile():
    """Exponential draws of rate 1: the true P90 is ln 10; the interval of the run's P90 holds it
    in 90% to 100% of 200 runs of 400 (its floor of the independent draws' binomial error makes it
    at least as wide as theirs)."""
    assert 0.90 <= _coverage(lambda r: r.expovariate(1.0), math.log(10), 90.0) <= 1.0


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.floats(min_value=0.0, max_value=100.0, allow_nan=False), min_size=20, max_size=300),
    st.sampled_from([None, 50.0, 90.0, 99.0]),
)
def test_an_interval_holds_its_own_estimate_and_rerun_only_widens_it(values, statistic):
    """Whatever the draws: the interval holds the statistic it is drawn for, and widened to hold
    another run's estimate it holds the narrower one."""
    low, high = interval(values, statistic)
    est = statistics.fmean(values) if statistic is None else percentile(sorted(values), statistic)
    assert low - 1e-9 <= est <= high + 1e-9
    wide_low, wide_high = interval(values, statistic, rerun=True)
    assert wide_low <= low + 1e-12 and wide_high >= high - 1e-12
