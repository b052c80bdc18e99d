"""Issue 23: the error band of ``serve``'s predictions. The chosen plan (and one configuration
simulated) is re-simulated with every step's time at the fast and at the slow end of its profile's
band (``llm_cost.perf.calibrated.band_factors``); the analytic forms scale linearly.

Checked through ``llm_cost.api.serve``: every figure lies within its band; a zero-width band gives
the figure itself; the slow end is slower; for requests that never overlap (no queueing, no
batching) the band is exactly the figure times the band factors, which the test computes by hand
from the profile's leave-one-out residuals; $/M and tokens/s come from the same (fast) end."""

from __future__ import annotations

import dataclasses

import pytest

from llm_cost import api
from llm_cost.analyses.serving_runs import vllm_time_model
from llm_cost.perf import calibrated
from llm_cost.perf.calibrated import band_factors
from llm_cost.perf.profile import load_profile
from llm_cost.specs.load import load_gpu

ONE = api.Layout(tp=1)
METRICS = ("ttft_s", "tpot_s", "itl_s", "e2e_s")


def _vllm_profile():
    """The profile the simulated vLLM path times steps by on an H100 (a transferred fit)."""
    return vllm_time_model(load_gpu("h100")).profile


def _wide(profile):
    """``profile`` claiming fitted rows at every batch and context: no range widening, so every
    step of a run has the same band factors."""
    return dataclasses.replace(profile, fitted_batch=(1, 1 << 20), fitted_context=(1, 1 << 24))


def _triples(d: dict, path: str = ""):
    """(name, low, value, high) of every banded figure of a result's JSON, nested dicts included:
    ``x_low_s`` / ``x_high_s`` beside ``x_s``; ``pNN_low_s`` beside ``pNN``; ``x_low`` beside ``x``."""
    for key, v in d.items():
        if isinstance(v, dict):
            if not key.endswith(("_low_s", "_high_s")):  # more_low_s: read beside more, below
                yield from _triples(v, f"{path}{key}.")
        elif key.endswith("_low_s"):
            stem = key[: -len("_low_s")]
            value = d[stem + "_s"] if stem + "_s" in d else d.get(stem)
            yield path + stem, v, value, d[stem + "_high_s"]
        elif key.endswith("_low") and key[: -len("_low")] in d:
            stem = key[: -len("_low")]
            yield path + stem, v, d[stem], d[stem + "_high"]
    more = d.get("more")
    if isinstance(more, dict):
        for name, value in more.items():
            yield f"{path}more.{name}", d["more_low_s"][name], value, d["more_high_s"][name]


@pytest.fixture(scope="module")
def plan():
    """A saturated plan on one H100 (the README's form, small)."""
    return api.serve(
        "llama3-8b", "h100", 2048, 256, gpus=1, ttft_s="p99:2s", tpot_s="p90:50ms", usd_per_gpu_hour=2.5, requests=120
    )


@pytest.fixture(scope="module")
def one():
    """One configuration at a rate, with a percentile target the JSON keeps under ``more``."""
    return api.serve("llama3-8b", "h100", 1024, 128, layout=ONE, qps=8.0, requests=200, ttft_s="p95:1s", seed=2)


def test_every_figure_lies_within_its_band(plan, one):
    for result in (plan, one):
        # the analytic screen behind a simulated plan is not printed, and carries no band
        triples = [t for t in _triples(result.to_dict()) if not t[0].startswith("screen.")]
        names = {t[0] for t in triples}
        for m in METRICS:
            stem = m[:-2]
            assert stem in names and f"percentiles.{m}.p99" in names, (stem, names)
        assert "output_tokens_per_s_per_gpu" in names and "goodput_rps" in names
        for name, low, value, high in triples:
            if value is None:  # no price: no dollar figure, and no band of one
                assert low is None and high is None, name
                continue
            assert 0 <= low <= value <= high, (name, low, value, high)
    assert "percentiles.ttft_s.more.p95" in {t[0] for t in _triples(one.to_dict())}
    d = plan.to_dict()
    assert d["usd_per_million_output_tokens_low"] <= d["usd_per_million_output_tokens"]
    assert d["usd_per_million_output_tokens"] <= d["usd_per_million_output_tokens_high"]


def test_the_slow_end_is_slower(plan, one):
    """A nonzero band: the slow end's TTFT P99 is above the nominal, the fast end's below."""
    for result in (plan, one):
        p = result.percentiles["ttft_s"]
        assert p.p99_high_s > p.p99 > p.p99_low_s
        assert result.tpot_high_s > result.tpot_s > result.tpot_low_s


def test_low_cost_goes_with_the_fast_end(plan):
    """$/M output = price x GPUs / 3,600 / output tokens/s x 10^6, so the cheapest end is the one
    with the most tokens/s: low $/M x high tokens/s = that price per second x 10^6, and likewise high
    $/M x low tokens/s (the deployment's tokens/s is the per-GPU figure x GPUs)."""
    run = plan.chosen
    usd_per_s = 2.5 * run.gpus / 3600
    assert run.usd_per_million_output_tokens_low * run.output_tokens_per_s_high == pytest.approx(usd_per_s * 1e6)
    assert run.usd_per_million_output_tokens_high * run.output_tokens_per_s_low == pytest.approx(usd_per_s * 1e6)
    assert plan.output_tokens_per_s_per_gpu_high == pytest.approx(run.output_tokens_per_s_high / run.gpus)


def test_the_slow_end_verdict_reads_the_slow_end(plan, one):
    """A target is listed as missed at the slow end exactly when the slow end's value of its
    statistic is past it."""
    for result in (plan, one):
        run = getattr(result, "chosen", result)
        for metric, target in run.targets.items():
            p = run.percentiles[metric]
            if target.name == "mean":
                high = getattr(run, f"{metric[:-2]}_high_s")
            elif target.name in ("p50", "p90", "p99"):
                high = getattr(p, f"{target.name}_high_s")
            else:
                high = p.more_high_s[target.name]
            assert (f"{metric} {target.name}" in run.violates_at_slow_end) == (high > target.seconds), metric
        assert result.violates_at_slow_end == run.violates_at_slow_end


def test_a_zero_width_band_gives_the_figure_itself(monkeypatch):
    """A profile whose held-out residuals are all zero, with no floor: band factors 1 at both ends,
    and the re-simulations repeat the nominal run exactly."""
    monkeypatch.setattr(calibrated, "BAND_FLOOR", 0.0)
    base = _vllm_profile()
    exact = dataclasses.replace(base, source_error=dataclasses.replace(base.source_error, loo_low=0.0, loo_high=0.0))
    b = band_factors(exact, 64, 2048)
    assert (b.low, b.high) == (1.0, 1.0)
    run = api.serve("llama3-8b", "h100", 1024, 128, layout=ONE, qps=8.0, requests=150, profile=exact, seed=1)
    triples = list(_triples(run.to_dict()))
    assert len(triples) >= 20  # 4 latencies x (mean, P50, P90, P99), tokens/s, goodput
    for name, low, value, high in triples:
        assert low == value == high, name
    assert run.violates_at_slow_end == run.violates


def test_isolated_requests_scale_by_the_band_factors_exactly():
    """Requests about 1,000 s apart at 0.001/s never share a step: each runs alone, one prefill step of
    its 2,048-token prompt then decode steps of one sequence, so every time it sees is a sum of its
    own steps' times. With a profile whose fitted rows span every shape, each step's factor is the
    same, the band's own, which is (hand arithmetic from the profile's residuals, band_factors'
    definition): fast end 1 / (1 + r_high x 2.5), slow end 1 / (1 + r_low x 2.5) with r the source's
    leave-one-out p90 and p10 residuals and 2.5 the transfer widening. TTFT, TPOT and E2E at the
    band's ends are then the nominal ones times those factors."""
    profile = _wide(_vllm_profile())
    error = profile.source_error
    fast = 1 / (1 + error.loo_high * profile.transfer_widen)
    slow = 1 / (1 + error.loo_low * profile.transfer_widen)
    b = band_factors(profile, 1, 2048)
    assert (b.low, b.high) == pytest.approx((fast, slow))
    assert band_factors(profile, 1, 2304) == b  # the last decode step's shape: the same band
    run = api.serve("llama3-8b", "h100", 2048, 256, layout=ONE, qps=0.001, requests=3, profile=profile, seed=0)
    assert run.simulation.summary.requests == 3 and run.running_mean < 0.01  # alone, mostly idle
    for m in ("ttft_s", "tpot_s", "e2e_s"):
        value = getattr(run, m)
        assert getattr(run, f"{m[:-2]}_low_s") == pytest.approx(value * fast, rel=1e-9), m
        assert getattr(run, f"{m[:-2]}_high_s") == pytest.approx(value * slow, rel=1e-9), m
        p = run.percentiles[m]
        assert p.p99_low_s == pytest.approx(p.p99 * fast, rel=1e-9) and p.p99_high_s == pytest.approx(p.p99 * slow)
    assert run.band.fast_low == pytest.approx(fast) and run.band.slow_high == pytest.approx(slow)


def test_the_band_widens_outside_the_fitted_shapes(one):
    """The shipped transferred profile was fitted at one batch and context (gpt-fast's decode):
    steps of larger batches and longer contexts take wider factors, up to the range cap x the
    transfer widening: the slow-end factors seen lie between the in-range band's and that cap's."""
    profile = _vllm_profile()
    inside = band_factors(profile, profile.fitted_batch[0], profile.fitted_context[0])
    r_low = profile.source_error.loo_low * profile.transfer_widen * calibrated.RANGE_WIDEN_MAX
    cap = 1 / (1 + max(r_low, -0.9))
    assert inside.high <= one.band.slow_low <= one.band.slow_high <= cap + 1e-12
    assert one.band.slow_high > inside.high
    assert one.band.kind == "transferred" and one.band.profile == profile.name


def test_the_analytic_form_scales_by_its_decode_step_band():
    """``--batch``: TTFT and TPOT x the band factors of the configuration's typical decode step (64
    sequences at 2,048 + 1,024 tokens), computed here; tokens/s divided by them."""
    profile = load_profile("h100-vllm")
    r = api.serve("llama3-8b", "h100", 2048, 2048, layout=ONE, concurrency=64, profile=profile, tpot_s=0.0185)
    b = band_factors(profile, 64, 2048 + 1024)
    assert r.tpot_low_s == pytest.approx(r.tpot_s * b.low) and r.tpot_high_s == pytest.approx(r.tpot_s * b.high)
    assert r.ttft_low_s == pytest.approx(r.ttft_s * b.low) and r.ttft_high_s == pytest.approx(r.ttft_s * b.high)
    assert r.output_tokens_per_s_per_gpu_low == pytest.approx(r.output_tokens_per_s_per_gpu / b.high)
    assert r.violates_at_slow_end == (("tpot_s mean",) if r.tpot_s * b.high > 0.0185 else ())
    assert any(n.code == "serve.analytic_band" for n in r.conventions)


def test_the_text_shows_the_band_and_the_slow_end(cli):
    out = cli(
        "serve", "llama3-8b", "--gpu", "h100", "--tp", "1", "--qps", "8", "--input", "1024", "--output", "128",
        "--requests", "150", "--tpot", "p90:12ms",
    ).out  # fmt: skip
    assert "  band " in out and "slow end:" in out
    assert "leave-one-out p10/p90" in out and "a100-torch-compile-on-h100" in out and "transferred" in out


def test_csv_carries_the_band(cli):
    out = cli(
        "serve", "llama3-8b", "--gpu", "h100", "--tp", "1", "--qps", "8", "--input", "1024", "--output", "128",
        "--requests", "150", "--csv",
    ).out  # fmt: skip
    header = out.splitlines()[0].split(",")
    for column in ("ttft_low_s", "ttft_high_s", "tpot_p99_low_s", "tpot_p99_high_s", "output_tokens_per_s_per_gpu_low"):
        assert column in header, column


def test_a_profile_without_residuals_gets_no_band_and_says_so():
    """No held-out residuals, no band: the figures' low and high stay empty and a note says why,
    rather than a band of width zero passed off as certainty."""
    bare = dataclasses.replace(_vllm_profile(), source_error=None)
    run = api.serve("llama3-8b", "h100", 1024, 128, layout=ONE, qps=4.0, requests=60, profile=bare)
    assert run.band is None and run.ttft_low_s is None and run.percentiles["ttft_s"].p99_high_s is None
    assert run.violates_at_slow_end is None
    assert any(n.code == "serve.no_band" for n in run.conventions)
