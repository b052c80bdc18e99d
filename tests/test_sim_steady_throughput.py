"""Simulated throughput over the run's steady window (llm_cost.simulate.results.steady_window): the
warm-up (an empty engine, a closed loop's users all starting at once) and the drain (after the
last request is sent) are left out, so a saturated closed loop serves what Little's law says and a
stable open loop serves what is offered. The whole-run figures (vLLM benchmark_serving's
completed / duration) stay in ``simulation.summary``."""

from __future__ import annotations

import math

import pytest

import llm_cost
from llm_cost.model.layout import ONE_GPU
from llm_cost.simulate import ClosedLoop, Fixed, OpenLoop, Stage, Workload


def test_a_saturated_closed_loop_serves_users_over_mean_e2e():
    """Little's law, N = X x W: 64 users with no think time are always in the system, so the
    replica serves 64 / mean E2E requests/s. A 512-token chunk makes the first round's burst of 64
    prompts slow and 4 rounds (256 requests) make the drain a quarter of the run: the whole-run
    rate falls short of Little's law by more than 3%. The steady window is held to 5% of it: the
    mean E2E counts that slow first round too (7.9 s a request, 6.2 s in the rounds after it), so
    users / mean E2E is itself ~2% under the steady rounds' rate."""
    users = 64
    w = Workload(ClosedLoop(users), Fixed(2048), Fixed(256), requests=4 * users)
    run = llm_cost.serve("llama3-8b", "h100", workload=w, layout=ONE_GPU, max_num_seqs=users, chunk_tokens=512)
    little = users / run.e2e_s
    assert run.throughput_rps == pytest.approx(little, rel=0.05)
    steady = run.simulation.steady
    assert steady is not None and run.throughput_rps == steady.throughput_rps
    assert steady.requests >= 2 * users  # the rounds between the first and the drain
    # occupancy over the window: the users, running or waiting
    assert run.running_mean + run.waiting_mean == pytest.approx(users, rel=0.03)
    # the whole run's figure is kept, and is the one that counts the warm-up and the drain
    whole = run.simulation.summary
    assert whole.throughput_rps == pytest.approx(whole.requests / (whole.end_s - whole.start_s))
    assert whole.throughput_rps < little * 0.97
    # output tokens/s are the requests' 256 tokens at the served rate
    assert run.output_tokens_per_s == pytest.approx(run.throughput_rps * 256, rel=1e-9)


@pytest.mark.parametrize("requests", [100, 110, 120])
def test_a_short_closed_loop_is_not_a_burst_short(requests):
    """A new user's trial: a closed loop's users, started together, complete in bursts, and
    counting the completions inside the window (from one burst's last completion to another's
    first) missed a burst: 40 users, 100 requests served 3.02 requests/s where Little's law gives
    5.38 (-44%; -21% at 110 requests, +0.5% at 120), and a plan's candidates of a few rounds were
    ranked on it. Each request's share of the window counts instead (results.window_share): within
    3% of users / mean E2E at every request count (the mean E2E includes the drain's lighter
    requests, so the two differ by about 1%)."""
    users = 40
    w = Workload(ClosedLoop(users), Fixed(2048), Fixed(512), requests=requests)
    run = llm_cost.serve("llama3-8b", "h100", workload=w, layout=ONE_GPU, max_num_seqs=users, chunk_tokens=2048)
    assert run.simulation.steady is not None
    assert run.throughput_rps == pytest.approx(users / run.e2e_s, rel=0.03)
    assert run.output_tokens_per_s == pytest.approx(run.throughput_rps * 512, rel=1e-9)


def test_a_stable_open_loop_serves_the_offered_rate():
    """5 requests/s of 2,048 + 256 tokens on one H100 (half what it serves saturated) arriving
    evenly (constant gaps): every request is served as it comes, so the window's rate is the offered
    one to within one gap over the window (~1/80 here, held to 2%); the whole run, 100 / (last
    completion), is ~10% lower (its drain: one E2E of ~2.5 s over ~20 s)."""
    w = Workload(OpenLoop((Stage(math.inf, 5.0),), "constant"), Fixed(2048), Fixed(256), requests=100)
    run = llm_cost.serve("llama3-8b", "h100", workload=w, layout=ONE_GPU)
    assert run.throughput_rps == pytest.approx(5.0, rel=0.02)
    assert run.simulation.summary.throughput_rps < 5.0 * 0.95


def test_poisson_arrivals_are_served_within_sampling_error():
    """Poisson arrivals at 5/s, 1,000 requests: the completions in the window are a Poisson count
    whose relative standard deviation is 1 / sqrt(n) (n ~ 970, ~3.2%); the served rate is held to
    three of them of the offered rate."""
    run = llm_cost.serve("llama3-8b", "h100", qps=5.0, layout=ONE_GPU, requests=1000)
    n = run.simulation.steady.requests
    assert n > 900
    assert abs(run.throughput_rps - 5.0) <= 3 * 5.0 / math.sqrt(n)


def test_a_run_too_short_for_a_window_reports_the_whole_run():
    """With fewer than 10 completions in the window (8 users, 8 requests: no second round) the
    whole run's rates stand."""
    w = Workload(ClosedLoop(8), Fixed(512), Fixed(64), requests=8)
    run = llm_cost.serve("llama3-8b", "h100", workload=w, layout=ONE_GPU, max_num_seqs=8)
    assert run.simulation.steady is None
    assert run.throughput_rps == run.simulation.summary.throughput_rps


def _times(i: int, arrival_s: float, e2e_s: float):
    from llm_cost.simulate.results import RequestTimes

    return RequestTimes(i, arrival_s, 1024, 256, 0, 0.0, 0.5, (e2e_s - 0.5) / 255, e2e_s, 0.2, 0)


def test_a_window_of_a_few_completions_out_of_hundreds_is_no_steady_state():
    """400 requests at 10 req/s, all admitted at once and slowing every step: the first completes
    at 29 s and only 13 before the last arrival (a helper's trial: llama3.1-70b on one TP8 H200).
    Those 12 completions after the opening one are 3% of the run, not its rate: no window."""
    from llm_cost.simulate import steady_window

    done = [_times(i, 0.1 * i, 29.0 + 0.84 * i - 0.1 * i) for i in range(400)]
    assert sum(1 for r in done if r.arrival_s + r.e2e_s <= done[-1].arrival_s) == 13
    assert steady_window(done) is None


def test_a_run_that_turns_over_keeps_its_steady_rate():
    """The same 400 arrivals each served in 2 s: the window holds most of the run and its rate is
    the offered 10 req/s (one completion every 0.1 s)."""
    from llm_cost.simulate import steady_window

    steady = steady_window([_times(i, 0.1 * i, 2.0) for i in range(400)])
    assert steady is not None and steady.throughput_rps == pytest.approx(10.0, rel=1e-9)
