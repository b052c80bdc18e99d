"""Workloads: each arrival process and length distribution against its defining moments, the
shared-prefix profile against inference-perf's rules, traces read back as written."""

from __future__ import annotations

import math
import statistics

import pytest

from llm_cost.core.errors import InputError
from llm_cost.simulate.workload import (
    ClosedLoop,
    Empirical,
    Fixed,
    LogNormal,
    Normal,
    OpenLoop,
    SharedPrefix,
    Stage,
    Uniform,
    Workload,
    drawn_mean,
    parse_lengths,
    poisson,
    read_trace,
    requests,
    trace_requests,
)


def _gaps(workload: Workload, seed: int = 1) -> list[float]:
    times = [r.arrival_s for r in requests(workload, seed)]
    return [b - a for a, b in zip([0.0, *times], times)]


def _cv(values: list[float]) -> float:
    return statistics.pstdev(values) / statistics.fmean(values)


def test_poisson_gaps_are_exponential():
    """Exponential gaps: mean 1/rate and coefficient of variation 1 (20,000 draws: the mean's
    standard error is 0.7%)."""
    gaps = _gaps(poisson(5.0, Fixed(10), Fixed(10), requests=20_000))
    assert statistics.fmean(gaps) == pytest.approx(0.2, rel=0.03)
    assert _cv(gaps) == pytest.approx(1.0, rel=0.03)
    # P(gap > mean) = e^-1 for an exponential
    assert sum(g > 0.2 for g in gaps) / len(gaps) == pytest.approx(math.exp(-1), abs=0.01)


@pytest.mark.parametrize("cv", [0.5, 2.0, 4.0])
def test_gamma_gaps_have_the_asked_burstiness(cv):
    w = Workload(OpenLoop((Stage(math.inf, 10.0),), "gamma", cv), Fixed(10), Fixed(10), requests=40_000)
    gaps = _gaps(w)
    assert statistics.fmean(gaps) == pytest.approx(0.1, rel=0.04)
    assert _cv(gaps) == pytest.approx(cv, rel=0.06)


def test_constant_gaps_are_exact():
    w = Workload(OpenLoop((Stage(10.0, 4.0),), "constant"), Fixed(10), Fixed(10))
    times = [r.arrival_s for r in requests(w)]
    assert len(times) == 40
    assert times[:3] == pytest.approx([0.25, 0.5, 0.75])


def test_fixed_count_is_inference_perfs_constant_load():
    """int(rate x duration) arrivals whose exponential gaps are rescaled to fill the duration."""
    w = Workload(OpenLoop((Stage(600, 8.0), Stage(600, 20.0)), "fixed_count"), Fixed(10), Fixed(10))
    times = [r.arrival_s for r in requests(w, seed=3)]
    assert len(times) == 8 * 600 + 20 * 600
    assert sum(t <= 600 for t in times) == 4800
    assert times[4799] == pytest.approx(600.0) and times[-1] == pytest.approx(1200.0)
    assert times == sorted(times)


def test_stages_follow_each_other_at_their_rates():
    w = Workload(OpenLoop((Stage(500, 2.0), Stage(500, 10.0))), Fixed(10), Fixed(10))
    times = [r.arrival_s for r in requests(w)]
    first = sum(t <= 500 for t in times)
    # Poisson counts: 1,000 +- 32 and 5,000 +- 71 (one standard deviation)
    assert abs(first - 1000) < 4 * 32
    assert abs(len(times) - first - 5000) < 4 * 71
    assert max(times) <= 1000


def test_requests_cap_an_open_ended_stage():
    assert len(requests(poisson(3.0, Fixed(10), Fixed(10), requests=123))) == 123


@pytest.mark.parametrize(
    ("lengths", "mean", "sd"),
    [
        (LogNormal(800, 400), 800, 400),
        (Normal(500, 50), 500, 50),
        (Uniform(100, 300), 200, math.sqrt((201**2 - 1) / 12)),  # discrete uniform on 201 values
    ],
)
def test_length_distributions_have_their_moments(lengths, mean, sd):
    w = poisson(1.0, lengths, Fixed(1), requests=30_000)
    values = [r.input_tokens for r in requests(w, seed=5)]
    assert statistics.fmean(values) == pytest.approx(mean, rel=0.02)
    assert statistics.pstdev(values) == pytest.approx(sd, rel=0.04)
    assert min(values) >= 1


def test_clipping_and_empirical_weights():
    clipped = [r.input_tokens for r in requests(poisson(1.0, Normal(10, 50, 4, 20), Fixed(1), requests=5000))]
    assert min(clipped) == 4 and max(clipped) == 20
    drawn = [r.output_tokens for r in requests(poisson(1.0, Fixed(5), Empirical((10, 20), (3, 1)), requests=8000))]
    assert drawn.count(10) / len(drawn) == pytest.approx(0.75, abs=0.02)


def test_parse_lengths():
    assert parse_lengths("2K") == Fixed(2048)
    assert parse_lengths(300) == Fixed(300)
    assert parse_lengths("lognormal:mean=800,sd=400") == LogNormal(800.0, 400.0)
    assert parse_lengths("normal:mean=100,sd=10,low=50,high=150") == Normal(100.0, 10.0, 50, 150)
    assert parse_lengths("uniform:low=1,high=1K") == Uniform(1, 1024)
    assert parse_lengths("empirical:100,200,4K") == Empirical((100, 200, 4096))
    for bad in ("gauss:mean=1", "uniform:low=9,high=3", "lognormal:mean=800", "normal:mean=1,sigma=2", "0"):
        with pytest.raises(InputError, match="output_tokens"):
            parse_lengths(bad, "output_tokens")


def test_shared_prefix_follows_inference_perf():
    """Each of the groups x users users in turn (a seeded shuffle); the group's system prompt is
    the first ``tokens`` of the prompt; with repeated questions the whole prompt repeats."""
    prefix = SharedPrefix(groups=9, tokens=100, users_per_group=5)
    reqs = requests(poisson(8.0, Fixed(547), Fixed(248), requests=450, prefix=prefix), seed=2)
    groups = [r.shared[0][0] for r in reqs]
    assert all(r.shared[0][1] == 100 and r.input_tokens == 547 for r in reqs)
    for start in range(0, 450, 45):  # every user once per round: each group 5 times
        round_ = groups[start : start + 45]
        assert sorted(round_.count(g) for g in set(round_)) == [5] * 9
    repeat = SharedPrefix(groups=2, tokens=50, users_per_group=3, repeat_questions=True)
    reqs = requests(poisson(8.0, Uniform(60, 900), Fixed(5), requests=60, prefix=repeat), seed=2)
    by_user: dict = {}
    for r in reqs:
        by_user.setdefault(r.shared[1][0], set()).add(r.input_tokens)
        assert r.shared[1][1] == r.input_tokens  # the whole prompt is the user's
    assert len(by_user) == 6 and all(len(v) == 1 for v in by_user.values())
    # a prefix no shorter than the prompt is refused (it used to lengthen every prompt to 65 tokens)
    with pytest.raises(InputError, match="prefix_tokens: 64 shared tokens must be fewer than the prompt's 20"):
        requests(poisson(8.0, Fixed(20), Fixed(5), requests=5, prefix=SharedPrefix(1, 64)))
    # a distribution's draws below the prefix are raised to it + 1: only its mean must be longer
    spread = requests(poisson(8.0, LogNormal(100, 80), Fixed(5), requests=200, prefix=SharedPrefix(1, 64)))
    assert min(r.input_tokens for r in spread) == 65


def test_requests_are_deterministic_for_a_seed():
    w = poisson(8.0, LogNormal(500, 300), LogNormal(200, 100), requests=200, prefix=SharedPrefix(3, 64, 2))
    assert requests(w, 7) == requests(w, 7)
    assert requests(w, 7) != requests(w, 8)
    faster = poisson(16.0, LogNormal(500, 300), LogNormal(200, 100), requests=200, prefix=SharedPrefix(3, 64, 2))
    # separate streams: another rate keeps every request's lengths
    assert [r.input_tokens for r in requests(faster, 7)] == [r.input_tokens for r in requests(w, 7)]


def test_invalid_workloads_are_refused():
    with pytest.raises(InputError, match="requests"):
        requests(poisson(1.0, Fixed(1), Fixed(1)))
    with pytest.raises(InputError, match="process"):
        requests(Workload(OpenLoop((Stage(1, 1),), "weibull"), Fixed(1), Fixed(1)))
    with pytest.raises(InputError, match="closed loop"):
        requests(Workload(ClosedLoop(4, 0.5), Fixed(1), Fixed(1), requests=10))


def test_traces_read_back(tmp_path):
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_text(
        '{"arrival_s": 10.5, "input_tokens": 300, "output_tokens": 20, "prefix_id": "sys", "prefix_tokens": 128}\n'
        '{"arrival_s": 10.0, "input_tokens": 100, "output_tokens": 5}\n'
    )
    trace = read_trace(jsonl)
    assert [r.arrival_s for r in trace.rows] == [10.0, 10.5]
    reqs = trace_requests(trace)
    assert [r.arrival_s for r in reqs] == [0.0, 0.5]
    assert reqs[1].shared == ((("trace", "sys"), 128),) and reqs[0].shared == ()
    csv = tmp_path / "t.csv"
    csv.write_text("arrival_s,input_tokens,output_tokens,prefix_id,prefix_tokens\n0,50,4,,\n1.5,70,8,a,32\n")
    assert [(r.input_tokens, r.prefix_id) for r in read_trace(csv).rows] == [(50, None), (70, "a")]
    bad = tmp_path / "bad.csv"
    bad.write_text("arrival_s,input_tokens,output_tokens,prefix_tokens\n0,50,4,60\n")
    with pytest.raises(InputError, match="bad.csv:2"):
        read_trace(bad)
    with pytest.raises(InputError, match="jsonl or .csv"):
        read_trace(tmp_path / "t.txt")


def test_a_trace_field_given_twice_is_refused_not_overwritten(tmp_path):
    """An attack: a row naming input_tokens twice (100, then 5,000) replayed as 5,000 tokens, in
    JSONL and in a CSV header alike; workload YAML and config.json already refuse a repeated key."""
    jsonl = tmp_path / "twice.jsonl"
    jsonl.write_text('{"arrival_s": 0, "input_tokens": 100, "output_tokens": 10, "input_tokens": 5000}\n')
    with pytest.raises(InputError, match=r"twice.jsonl:1: input_tokens given twice; give each field once"):
        read_trace(jsonl)
    csv = tmp_path / "twice.csv"
    csv.write_text("arrival_s,input_tokens,output_tokens,input_tokens\n0,100,10,5000\n")
    with pytest.raises(InputError, match=r"the header names input_tokens twice; name each column once"):
        read_trace(csv)
    misnamed = tmp_path / "json.csv"  # it had read "has no rows"
    misnamed.write_text('{"arrival_s": 0, "input_tokens": 100, "output_tokens": 10}\n')
    with pytest.raises(InputError, match=r"json.csv: holds JSON, not CSV; name a JSON-lines trace .jsonl"):
        read_trace(misnamed)


@pytest.mark.parametrize(
    "process, cv",
    [("poisson", 1.0), ("gamma", 2.0), ("gamma", 0.5), ("constant", 1.0)],
)
def test_every_rth_request_is_a_replicas_round_robin_share(process, cv):
    """One of R replicas behind a round-robin router sees every R-th arrival: R gaps of the stream
    between its requests, so mean gap R / rate and, for gamma gaps of CV c, CV c / sqrt(R) (a sum
    of R independent gaps; Poisson: c = 1, an Erlang-R stream; constant: 0). Drawn directly (one
    draw a request) for one endless stage; checked here against those moments over 20,000 of the
    replica's requests, and the indices keep their place in the whole stream."""
    rate, r = 50.0, 8
    arrivals = OpenLoop((Stage(math.inf, rate),), process, cv)
    share = requests(Workload(arrivals, Fixed(100), Fixed(10), requests=20_000 * r), seed=3, every=r)
    assert [q.index for q in share[:3]] == [0, r, 2 * r] and len(share) == 20_000
    times = [q.arrival_s for q in share]
    gaps = [b - a for a, b in zip(times, times[1:])]
    assert statistics.fmean(gaps) == pytest.approx(r / rate, rel=0.02)
    expected_cv = 0.0 if process == "constant" else cv / math.sqrt(r)
    assert _cv(gaps) == pytest.approx(expected_cv, abs=0.02)


def test_a_strided_stage_sequence_keeps_the_whole_streams_times():
    """Stages in turn (or a finite stage) are not summed in one draw: every R-th time of the whole
    stream is kept, the same times as the stream's own."""
    arrivals = OpenLoop((Stage(20.0, 5.0), Stage(20.0, 20.0)))
    whole = requests(Workload(arrivals, Fixed(100), Fixed(10)), seed=1)
    share = requests(Workload(arrivals, Fixed(100), Fixed(10)), seed=1, every=3)
    assert [q.arrival_s for q in share] == [q.arrival_s for q in whole[::3]]
    assert [q.index for q in share] == [q.index for q in whole[::3]]


@pytest.mark.parametrize(
    "lengths",
    [
        LogNormal(800, 400, 1, 100),
        Normal(10, 1000),
        Normal(2048, 512, 1, 3000),
        LogNormal(800, 400, 500, 1200),
        LogNormal(800, 400),
    ],
)
def test_the_mean_a_clipped_distribution_draws_is_its_samples_mean(lengths):
    """An attack: ``lognormal:mean=800,sd=400,high=100`` was reported and planned at a mean of 800
    while every prompt drawn was 100 tokens. ``drawn_mean`` is the clipped distribution's mean;
    checked against the mean of 200,000 draws (within 3 standard errors and the rounding's half
    token)."""
    import random
    import statistics

    rng = random.Random(7)
    draws = [lengths.sample(rng) for _ in range(200_000)]
    error = 3 * statistics.pstdev(draws) / math.sqrt(len(draws)) + 0.5
    assert drawn_mean(lengths) == pytest.approx(statistics.mean(draws), abs=error)


def test_a_clipped_distribution_says_what_it_draws(cli):
    r = cli("serve", "llama3-8b", "--tp", "1", "--qps", "2", "--input", "lognormal:mean=800,sd=400,high=100",
            "--output", "16")  # fmt: skip
    assert r.code == 0 and "lognormal (mean 800, sd 400; clipped to 1-100: mean 100 drawn)" in r.out


def test_a_distributions_mean_and_sd_take_the_count_suffixes():
    """An attack: 'lognormal:mean=8K,sd=4K' was refused with Python's 'could not convert string to
    float', where 8K means 8,192 tokens in every other length."""
    assert parse_lengths("lognormal:mean=8K,sd=4K") == LogNormal(8192.0, 4096.0, 1, None)
    assert parse_lengths("normal:mean=812.5,sd=1K,high=16K") == Normal(812.5, 1024.0, 1, 16384)
