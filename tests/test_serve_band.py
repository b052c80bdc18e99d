"""Issue 23: the error band of ``serve``'s predictions. The chosen plan (and one configuration
simulated) is re-simulated with every step's time at the fast and at the slow end of its band; the
analytic forms scale linearly. On the default simulated vLLM path the band is the serving
prediction's spread on the 18 measured vLLM v0.15.1 runs (the p10 and p90 of mean ITL measured /
predicted, llm_cost/data/serving-band.json); with another engine or an explicit profile, the
profile's (``llm_cost.perf.calibrated.band_for``).

Checked through ``llm_cost.api.serve``: every figure lies within its band; a zero-width band gives
the figure itself; the slow end is slower; for requests that never overlap (no queueing, no
batching) the band is exactly the figure times the band factors, which the test computes by hand
(from the profile's held-out bands, or from the runs' ratios with numpy.percentile and the
interpolation written out); the serving band's coverage of the 18 runs, in-sample and
leave-one-out; $/M and tokens/s come from the same (fast) end."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import numpy
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost import api
from llm_cost.analyses.serving_runs import transfer_widening, vllm_model
from llm_cost.perf import calibrated
from llm_cost.perf.calibrated import band_for
from llm_cost.perf.choose import load_profile
from llm_cost.report.notes import sentence
from llm_cost.specs.load import load_gpu

ONE = api.Layout(tp=1)
METRICS = ("ttft_s", "tpot_s", "itl_s", "e2e_s")


def _vllm_profile():
    """The profile the simulated vLLM path times steps by on an H100."""
    return vllm_model(load_gpu("h100")).profile


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


#: How far a band's end may lie beyond its nominal figure the other way (module docstring of
#: llm_cost.analyses.simulated_serving.with_band: the ends are one run each).
NEARLY = 0.01


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
            # each end is one run: a discrete-event schedule is monotone in step time only nearly, and
            # an open loop's rates are its arrivals' (the ends differ from the nominal run by noise)
            assert 0 <= low <= value * (1 + NEARLY) and value <= high * (1 + NEARLY), (name, low, value, high)
    assert "percentiles.ttft_s.more.p95" in {t[0] for t in _triples(one.to_dict())}
    d = plan.to_dict()
    assert d["usd_per_million_output_tokens_low"] <= d["usd_per_million_output_tokens"]
    assert d["usd_per_million_output_tokens"] <= d["usd_per_million_output_tokens_high"]


def test_the_slow_end_is_slower(plan, one):
    """A nonzero band: the fast end's TPOT and TTFT P99 are below the nominal; the slow end's TPOT
    is above it exactly when the runs' p90 of measured / predicted is above 1 (else the band's slow
    end is the prediction itself: 9 of 10 runs ran no slower than predicted), TTFT P99 no lower (a
    percentile of a discrete-event run moves by whole steps)."""
    for result in (plan, one):
        p = result.percentiles["ttft_s"]
        assert p.p99_high_s >= p.p99 > p.p99_low_s
        assert result.tpot_high_s >= result.tpot_s > result.tpot_low_s
        # the slow end is the runs' p90 of measured / predicted, clamped at 1 (the prediction itself)
        band = result.band if hasattr(result, "band") else result.chosen.band
        assert (result.tpot_high_s > result.tpot_s) == (band.p_high > 1)


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
    exact = dataclasses.replace(base, bands=tuple(dataclasses.replace(b, low=1.0, high=1.0) for b in base.bands))
    b = band_for(exact, 64, 2048)
    assert (b.low, b.high) == (1.0, 1.0)
    run = api.serve("llama3-8b", "h100", 1024, 128, layout=ONE, qps=8.0, requests=150, profile=exact, seed=1)
    triples = list(_triples(run.to_dict()))
    assert len(triples) >= 20  # 4 latencies x (mean, P50, P90, P99), tokens/s, goodput
    for name, low, value, high in triples:
        assert low == value == high, name
    assert run.violates_at_slow_end == run.violates


def _floors(gpu: str) -> dict[str, float]:
    """The Roofline bounds a fast-end step never goes under (ScaledTimer): the 2,048-token prompt's
    prefill step, and a decode step of one sequence at the decodes' middle context (the contexts of
    2,048 to 2,304 tokens move Llama-3-8B's bound by 0.2%: its KV reads next to 16 GB of weights)."""
    return {
        "ttft_s": api.prefill("llama3-8b", gpu, seq=2048, layout=ONE).bound_s,
        "tpot_s": api.decode("llama3-8b", gpu, batch=1, context=2176, layout=ONE).bound_s,
    }


def _fast_end(value: float, factor: float, floor: float) -> float:
    """A run of steps alone at the fast end: each step ``factor`` x its time, never under its bound."""
    return max(value * factor, floor)


def test_isolated_requests_scale_by_the_band_factors_exactly():
    """Requests about 1,000 s apart at 0.001/s never share a step: each runs alone, one prefill step of
    its 2,048-token prompt then decode steps of one sequence, so every time it sees is a sum of its
    own steps' times. With a profile whose fitted rows span every shape, each step's factor is the
    same, the band's own, which is (band_for's definition) the profile's held-out band of its
    situation in the step's regime, read here from the profile itself: the prefill step's (TTFT) and
    the decode steps' at batch 1 (TPOT). TTFT and TPOT at the band's ends are the nominal ones times
    those factors, and E2E the prefill's and the decodes' parts times theirs."""
    profile = _wide(_vllm_profile())
    own = {(b.situation, b.regime): b for b in profile.bands}

    def ends(regime):
        chosen = own.get((profile.situation, regime)) or own[(profile.situation, calibrated.Regime.ALL)]
        return chosen.low, chosen.high

    decode, prefill = ends(calibrated.Regime.DECODE_SMALL), ends(calibrated.Regime.PREFILL)
    b = band_for(profile, 1, 2048)
    assert (b.low, b.high) == pytest.approx(decode)
    assert band_for(profile, 1, 2304) == b  # the last decode step's shape: the same band
    assert (band_for(profile, 1, 2048, prefill=True).low, band_for(profile, 1, 2048, prefill=True).high) == prefill
    run = api.serve("llama3-8b", "h100", 2048, 256, layout=ONE, qps=0.001, requests=3, profile=profile, seed=0)
    assert run.simulation.summary.requests == 3 and run.running_mean < 0.01  # alone, mostly idle
    floors = _floors("h100")
    for m, (fast, slow) in (("ttft_s", prefill), ("tpot_s", decode)):
        value = getattr(run, m)
        assert getattr(run, f"{m[:-2]}_low_s") == pytest.approx(_fast_end(value, fast, floors[m]), rel=3e-3), m
        assert getattr(run, f"{m[:-2]}_high_s") == pytest.approx(value * slow, rel=1e-9), m
        p = run.percentiles[m]
        assert p.p99_low_s == pytest.approx(_fast_end(p.p99, fast, floors[m]), rel=3e-3)
        assert p.p99_high_s == pytest.approx(p.p99 * slow)
    decoding = run.e2e_s - run.ttft_s  # E2E = the prefill step, then the decode steps
    steps = 255  # the decode steps of 256 output tokens
    expected_low = _fast_end(run.ttft_s, prefill[0], floors["ttft_s"]) + steps * _fast_end(
        decoding / steps, decode[0], floors["tpot_s"]
    )
    assert run.e2e_low_s == pytest.approx(expected_low, rel=3e-3)
    assert run.e2e_high_s == pytest.approx(run.ttft_s * prefill[1] + decoding * decode[1], rel=1e-9)
    assert run.band.fast_low == pytest.approx(min(decode[0], prefill[0]))
    assert run.band.slow_high == pytest.approx(max(decode[1], prefill[1]))


def test_the_profile_band_widens_outside_the_fitted_shapes():
    """A profile's band (here the vLLM path's profile given explicitly, which keeps the
    profile-based band), narrowed to one fitted batch and context: steps of larger batches and
    longer contexts take wider factors, up to the range cap: the slow-end factors seen lie between
    the in-range band's and that cap's."""
    profile = dataclasses.replace(_vllm_profile(), fitted_batch=(1, 1), fitted_context=(512, 512))
    run = api.serve(
        "llama3-8b", "h100", 1024, 128, layout=ONE, qps=8.0, requests=200, ttft_s="p95:1s", seed=2, profile=profile
    )
    inside = [b.high for b in profile.bands if b.situation == profile.situation]
    cap = max(b.high for b in profile.bands) ** calibrated.RANGE_WIDEN_MAX
    assert min(inside) <= run.band.slow_low <= run.band.slow_high <= cap + 1e-12
    assert run.band.slow_high > band_for(profile, 1, 512).high
    assert run.band.kind == str(profile.situation) and run.band.profile == profile.name
    assert run.band.source == "profile"


def test_the_analytic_form_scales_by_its_decode_step_band():
    """``--batch``: TTFT and TPOT x the band factors of the configuration's typical decode step (16
    sequences at 2,048 + 1,024 tokens), computed here; tokens/s divided by them; the fast end no
    faster than the Roofline bound."""
    profile = load_profile("hopper-vllm")
    r = api.serve("llama3-8b", "h100", 2048, 2048, layout=ONE, concurrency=16, profile=profile, tpot_s=0.0185)
    b = band_for(profile, 16, 2048 + 1024)
    assert r.tpot_high_s == pytest.approx(r.tpot_s * b.high) and r.ttft_high_s == pytest.approx(r.ttft_s * b.high)
    assert r.output_tokens_per_s_per_gpu_low == pytest.approx(r.output_tokens_per_s_per_gpu / b.high)
    # The fast end x b.low (6.1 ms with the shipped fit) is under the configuration's own bound (6.6
    # ms: its decode steps also carry the prompts' chunks), so it is held there: above the scaled
    # value, never under the 5.8 ms bound of a bare decode step of these 16 sequences at 2,048 tokens.
    decode_bound_s = api.decode("llama3-8b", "h100", 16, 2048, layout=ONE).bound_s
    assert r.tpot_s * b.low < r.tpot_low_s < r.tpot_s and decode_bound_s <= r.tpot_low_s
    assert r.ttft_s * b.low <= r.ttft_low_s <= r.ttft_s
    assert r.violates_at_slow_end == (("tpot_s mean",) if r.tpot_s * b.high > 0.0185 else ())
    assert any(n.code == "serve.analytic_band" for n in r.conventions)


def test_the_text_shows_the_band_and_the_slow_end(cli):
    out = cli(
        "serve", "llama3-8b", "--gpu", "h100", "--tp", "1", "--qps", "8", "--input", "1024", "--output", "128",
        "--requests", "150", "--tpot", "p90:12ms",
    ).out  # fmt: skip
    assert "  fast end" in out and "  slow end" in out and "slow end:" in out and "  interval" in out
    assert "18 measured vLLM v0.15.1 runs" in out and "mean ITL measured/predicted p10..p90 = " in out
    band = next(line for line in out.splitlines() if line.startswith("· band:"))
    assert "hopper-vllm" in band and "p10/p90 factor for its shape" not in band
    out = cli(
        "serve", "llama3-8b", "--gpu", "h100", "--tp", "1", "--qps", "8", "--input", "1024", "--output", "128",
        "--requests", "150", "--tpot", "p90:12ms", "--profile", "hopper-vllm",
    ).out  # fmt: skip
    assert "  fast end" in out and "p10/p90" in out and "hopper-vllm" in out and "leave-one-source-out" in out
    assert "measured vLLM v0.15.1 runs" not in out


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
    bare = dataclasses.replace(_vllm_profile(), bands=())
    run = api.serve("llama3-8b", "h100", 1024, 128, layout=ONE, qps=4.0, requests=60, profile=bare)
    assert run.band is None and run.ttft_low_s is None and run.percentiles["ttft_s"].p99_high_s is None
    assert run.violates_at_slow_end is None
    assert any(n.code == "serve.no_band" for n in run.conventions)


# -- the default simulated vLLM path: the band of the serving runs --------------------------------

#: The shipped calibration of the vLLM path's band (``scripts/check_serving_runs.py --write-band``;
#: tests/test_api_serve.py checks it against the replay of the 18 runs through ``serve``).
BAND_FILE = Path(__file__).resolve().parents[1] / "llm_cost" / "data" / "serving-band.json"


def _shipped_runs() -> list[dict]:
    return json.loads(BAND_FILE.read_text())["runs"]


def _p10_p90(ratios) -> tuple[float, float]:
    """numpy.percentile's default (linear) p10 and p90, and the same written out for n values:
    sorted x, h = (n - 1) q, x[floor h] + frac(h) (x[floor h + 1] - x[floor h])."""
    x = sorted(ratios)
    n = len(x)
    by_hand = []
    for q in (0.10, 0.90):
        h = (n - 1) * q
        i = math.floor(h)
        by_hand.append(x[i] + (h - i) * (x[i + 1] - x[i]))
    p10, p90 = numpy.percentile(ratios, [10, 90])
    assert by_hand == pytest.approx([p10, p90], rel=1e-12)
    return float(p10), float(p90)


def test_the_shipped_ratios_are_measured_over_predicted_of_18_runs():
    """18 runs (16 H100, 1 A100-80GB, 1 L40S), each ratio its measured mean ITL over the predicted;
    with 18, p10 is x[1] + 0.7 (x[2] - x[1]) and p90 x[15] + 0.3 (x[16] - x[15]) of the sorted
    ratios, which the file states."""
    data = json.loads(BAND_FILE.read_text())
    runs = data["runs"]
    assert len(runs) == 18 and len({r["id"] for r in runs}) == 18
    assert sorted(r["hardware"] for r in runs).count("H100") == 16
    assert {r["hardware"] for r in runs} == {"H100", "A100-80GB", "L40S"}
    for r in runs:
        assert r["ratio"] == pytest.approx(r["measured_ms"] / r["predicted_ms"], abs=1e-6), r["id"]
    x = sorted(r["ratio"] for r in runs)
    assert _p10_p90(x) == pytest.approx((x[1] + 0.7 * (x[2] - x[1]), x[15] + 0.3 * (x[16] - x[15])))
    assert (data["p10"], data["p90"]) == pytest.approx(_p10_p90(x), abs=1e-6)
    assert data["source"]["engine"] == "vLLM v0.15.1" and data["source"]["harness"] == "inference-perf"
    assert data["source"]["script"] == "scripts/check_serving_runs.py --write-band"
    assert data["source"]["runs_file"].endswith("measurements/serving/vllm-serving-under-load.yaml")


def test_the_vllm_path_band_is_the_serving_runs_percentiles(plan, one):
    """The plan and one configuration on the default path (vLLM, no profile, an H100: a GPU of the
    runs) multiply every step by the runs' low percentile (fast end) and high one (slow end),
    clamped around 1; the footnote says so with those figures. A run at a rate takes the runs under
    Poisson load at p10..p90; a plan without a rate (its users a closed loop at the engine's cap) the
    runs at saturation, at the percentiles their file states (held out by source, p10..p90 held 71%
    of them): a new user read "met at the band's slow end" (x1.00, from the runs under load) as a
    guarantee beside a saturation check 30.7% off."""
    saturation = json.loads(SATURATION_BAND_FILE.read_text())["percentiles"]
    for result, runs, closed in ((plan, _saturation_runs(), True), (one, _shipped_runs(), False)):
        lo, hi = saturation if closed else (10, 90)
        p_lo, p_hi = numpy.percentile([r["ratio"] for r in runs], [lo, hi])
        low, high = min(p_lo, 1.0), max(p_hi, 1.0)
        b = getattr(result, "chosen", result).band
        assert b.source == "serving-runs" and b.rows == len(runs) and b.transfer == 1.0 and b.closed_loop == closed
        assert (b.fast_low, b.fast_high) == pytest.approx((low, low), rel=1e-12)
        assert (b.slow_low, b.slow_high) == pytest.approx((high, high), rel=1e-12)
        assert (b.p_low, b.p_high) == pytest.approx((p_lo, p_hi), rel=1e-12)
        band_notes = [n for n in result.conventions if n.code == "serve.band"]
        assert len(band_notes) == 1
        text = sentence(band_notes[0])
        if closed:
            assert f"{len(runs)} published vLLM 0.10.2, 0.11.0 runs at saturation" in text, text
            assert f"ITL P50 measured/predicted p{lo}..p{hi} = {p_lo:.2f}..{p_hi:.2f}" in text, text
        else:
            assert "18 measured vLLM v0.15.1 runs" in text, text
            assert f"mean ITL measured/predicted p10..p90 = {p_lo:.2f}..{p_hi:.2f}" in text, text
        assert "h100 is one of their GPUs" in text and "widened" not in text, text


#: The band's calibration for a plan without a rate (``scripts/check_saturation_runs.py --write-band``).
SATURATION_BAND_FILE = BAND_FILE.parent / "saturation-band.json"


def _saturation_runs() -> list[dict]:
    return json.loads(SATURATION_BAND_FILE.read_text())["runs"]


def test_the_saturation_band_is_measured_over_replayed_itl_p50_of_the_published_vllm_runs():
    """Every vLLM run of the saturation files with a measured ITL P50, each ratio its measured
    over the replay's, the file's p10/p90 those of numpy; the runs and their engine versions are
    the saturation files' own (check_saturation_runs.py, nothing fitted on them)."""
    from llm_cost.analyses.saturation_runs import load_runs

    data = json.loads(SATURATION_BAND_FILE.read_text())
    runs = data["runs"]
    published = {r.id: r for r in load_runs() if r.engine.value == "vllm" and r.measured.get("itl_p50_ms")}
    assert {r["id"] for r in runs} == set(published) and len(runs) >= 60
    for r in runs:
        assert r["measured_ms"] == published[r["id"]].measured["itl_p50_ms"]
        assert r["engine_version"] == published[r["id"]].engine_version
        assert r["ratio"] == pytest.approx(r["measured_ms"] / r["predicted_ms"], abs=1e-6), r["id"]
    lo, hi = data["percentiles"]
    expected = numpy.percentile([r["ratio"] for r in runs], [lo, hi])
    assert (data[f"p{lo}"], data[f"p{hi}"]) == pytest.approx(tuple(expected), abs=1e-6)
    assert data["source"]["script"] == "scripts/check_saturation_runs.py --write-band"


def test_the_serving_band_covers_the_runs_in_sample_and_leave_one_out():
    """Coverage of the 18 runs by [predicted x low, predicted x high]. In-sample (the band drawn
    from all 18, each run among them: the only sample there is) it is about 80% by construction
    of p10/p90: 14 of 18. Leave-one-out (each run's band from the other 17, its own ratio then
    held out): at least 60%; on the shipped file 14 of 18 (78%): runs 2 and 3 (CodeLlama-34B TP2,
    over-predicted) fall below, 22 and 38 above."""
    ratios = [r["ratio"] for r in _shipped_runs()]
    p10, p90 = _p10_p90(ratios)
    inside = sum(min(p10, 1.0) <= x <= max(p90, 1.0) for x in ratios)
    assert 0.7 <= inside / len(ratios) <= 0.9, inside
    held_out = 0
    for i, x in enumerate(ratios):
        lo, hi = _p10_p90(ratios[:i] + ratios[i + 1 :])
        held_out += min(lo, 1.0) <= x <= max(hi, 1.0)
    assert held_out / len(ratios) >= 0.6, held_out


def test_isolated_requests_scale_by_the_serving_band_exactly():
    """As with a profile's band, requests that never share a step see only their own steps' times,
    so on the default vLLM path TTFT, TPOT and E2E at the band's ends are the nominal ones x the
    runs' clamped p10 and p90 (every step the same factor)."""
    p10, p90 = _p10_p90([r["ratio"] for r in _shipped_runs()])
    low, high = min(p10, 1.0), max(p90, 1.0)
    run = api.serve("llama3-8b", "h100", 2048, 256, layout=ONE, qps=0.001, requests=3, seed=0)
    assert run.simulation.summary.requests == 3 and run.running_mean < 0.01
    floors = _floors("h100")
    for m in ("ttft_s", "tpot_s"):
        value = getattr(run, m)
        assert getattr(run, f"{m[:-2]}_low_s") == pytest.approx(_fast_end(value, low, floors[m]), rel=3e-3), m
    for m in ("ttft_s", "tpot_s", "e2e_s"):
        value = getattr(run, m)
        assert getattr(run, f"{m[:-2]}_high_s") == pytest.approx(value * high, rel=1e-9), m


def test_a_gpu_of_a_family_the_runs_did_not_use_gets_the_band_widened():
    """A B200 (Blackwell: no run measured one of its family): the runs' spread widened in log
    ratio about its geometric centre c = sqrt(p10 p90) by how much wider the step-time fit's
    held-out band is for transferred predictions than for fitted ones (w, read from the fit): fast
    end c (p10 / c) ^ w, slow end c (p90 / c) ^ w, each clamped to its side of 1. The runs' p90
    under 1 (the simulator slower than measured on their GPUs) says nothing of another family: a
    new user read "pessimistic side: met" on a B200 whose slow end was the nominal, as it was when
    the ends were widened about x1. The footnote names the widening."""
    p10, p90 = _p10_p90([r["ratio"] for r in _shipped_runs()])
    w = transfer_widening()
    centre = math.sqrt(p10 * p90)
    fast, slow = min(centre * (p10 / centre) ** w, 1.0), max(centre * (p90 / centre) ** w, 1.0)
    assert slow > 1.0  # the slow end leaves the nominal
    run = api.serve("llama3-8b", "b200", 2048, 256, layout=ONE, qps=0.001, requests=3, seed=0)
    assert run.band.source == "serving-runs" and run.band.transfer == pytest.approx(w)
    assert (run.band.fast_low, run.band.slow_high) == pytest.approx((fast, slow), rel=1e-12)
    assert run.tpot_low_s == pytest.approx(_fast_end(run.tpot_s, fast, _floors("b200")["tpot_s"]), rel=3e-3)
    assert run.tpot_high_s == pytest.approx(run.tpot_s * slow, rel=1e-9)
    text = sentence(next(n for n in run.conventions if n.code == "serve.band"))
    assert f"b200 was not among their GPUs, so the spread is widened {w:.3g}x about its centre" in text, text


def test_a_gpu_of_a_family_the_runs_used_keeps_their_band():
    """An H200 is timed by the Hopper parameters the runs' H100 is (``roofline`` labels its
    prediction fitted), so it takes the runs' p10/p90 as they are, and says why; it had been widened
    4.13x as a transfer (a new user's trial: an H200 plan's fast-end TPOT at 0.56x the H100's)."""
    p10, p90 = _p10_p90([r["ratio"] for r in _shipped_runs()])
    run = api.serve("llama3-8b", "h200", 2048, 256, layout=ONE, qps=0.001, requests=3, seed=0)
    assert run.band.transfer == 1
    assert (run.band.fast_low, run.band.slow_high) == pytest.approx((min(p10, 1.0), max(p90, 1.0)), rel=1e-12)
    text = sentence(next(n for n in run.conventions if n.code == "serve.band"))
    assert "h200 was not among their GPUs but is of a kernel family one of them is" in text, text
    assert api.decode("llama3-8b", "h200", 8, 1024).profile_kind == "fitted"


@pytest.mark.parametrize("engine", ["trtllm", "sglang"])
def test_other_engines_keep_the_profile_band(engine):
    """The serving runs calibrate vLLM's time model only: another engine keeps its profile's band."""
    run = api.serve("llama3-8b", "h100", 1024, 128, layout=ONE, qps=2.0, requests=40, engine=engine, seed=0)
    assert run.band is not None and run.band.source == "profile"
    assert any(n.code == "serve.band" and n.params["source"] == "profile" for n in run.conventions)


def test_a_band_whose_runs_all_ran_faster_says_the_nominal_is_its_slow_end():
    """When the runs' p90 of measured / predicted is under 1 (the simulator slower than every run but
    a tenth), the slow end is the nominal figure itself: the note says so, so that a reader does not
    take the first figure for the central one (a new user's trial)."""
    _, p90 = _p10_p90([r["ratio"] for r in _shipped_runs()])
    run = api.serve("llama3-8b", "h100", 1024, 64, layout=ONE, qps=2.0, requests=40, seed=0)
    text = sentence(next(n for n in run.conventions if n.code == "serve.band"))
    assert ("the nominal figure is the band's slow end" in text) == (p90 < 1), text


@settings(max_examples=12, deadline=None)
@given(
    model=st.sampled_from(["llama3-8b", "qwen2.5-7b", "llama3-70b"]),
    tp=st.sampled_from([1, 2, 4]),
    concurrency=st.sampled_from([1, 2, 4, 16]),
    input_tokens=st.sampled_from([128, 2048, 8192]),
)
def test_the_analytic_fast_end_is_never_under_the_roofline_bound(model, tp, concurrency, input_tokens):
    """No shipped measurement beats its step's Roofline bound (tests/perf/test_measurement_files.py),
    so neither may a band's fast end: an analytic plan's TPOT fast end is at least the bound of a
    decode step of its ``concurrency`` sequences at the prompt's length (``api.decode``, the lightest
    step a token can wait for), and its tokens/s fast end at most the concurrency over that bound.
    Before the floor, one llama3-8b sequence at 2K on an H100 printed a fast end of about 4.1 ms
    under a 4.5 ms bound."""
    layout = api.Layout(tp=tp)
    try:
        r = api.serve(model, "h100", input_tokens, 256, layout=layout, concurrency=concurrency)
    except api.LlmCostError:  # the model does not fit this layout
        return
    bound_s = api.decode(model, "h100", concurrency, input_tokens, layout=layout).bound_s
    assert r.tpot_low_s >= bound_s * (1 - 1e-9) or r.tpot_low_s == r.tpot_s
    assert r.tpot_low_s <= r.tpot_s <= r.tpot_high_s
    # tokens/s and $/M at the fast end come from that same (held) fast end
    assert r.output_tokens_per_s_high == pytest.approx(r.output_tokens_per_s * r.tpot_s / r.tpot_low_s)


def test_the_saturation_band_is_the_current_replay_of_its_runs():
    """The shipped ratios are today's replays (a sample of six, one in eleven: the whole file is
    ``scripts/check_saturation_runs.py --write-band``, about ten seconds): a time-model change
    that moves them fails here until the file is rewritten."""
    from llm_cost.analyses.saturation_runs import check_run, load_runs
    from llm_cost.api.choices import saturation_formats

    by_id = {r.id: r for r in load_runs()}
    for row in _saturation_runs()[::11]:
        run = by_id[row["id"]]
        replayed = check_run(run, saturation_formats(run)).predicted["itl_p50_ms"]
        assert row["predicted_ms"] == pytest.approx(replayed, rel=1e-6), row["id"]


def _held_out_inside(runs: list[dict], q: float) -> int:
    """Runs inside numpy's p``q``..p``100 - q`` of the ratios of the runs of the other sources."""
    inside = 0
    for source in {r["source"] for r in runs}:
        low, high = numpy.percentile([r["ratio"] for r in runs if r["source"] != source], [q, 100 - q])
        inside += sum(low <= r["ratio"] <= high for r in runs if r["source"] == source)
    return inside


def test_the_saturation_band_holds_what_it_claims_held_out_by_source_as_the_readme_says():
    """Leave one source of the saturation runs out: its runs against the band of the others'. A band
    claims 80% (p10..p90); at p10..p90 it held 46 of 65 (71%), so the file draws it at the narrowest
    whole percentiles that hold at least 80% (issue 32: a band must hold about as often as it claims):
    those are its percentiles, one percent narrower holds less, and the README states both counts."""
    data = json.loads(SATURATION_BAND_FILE.read_text())
    runs, (lo, hi) = data["runs"], data["percentiles"]
    assert hi == 100 - lo and 1 <= lo <= 10
    inside = _held_out_inside(runs, lo)
    assert inside >= 0.8 * len(runs)
    assert lo == 10 or _held_out_inside(runs, lo + 1) < 0.8 * len(runs)
    at_p10 = _held_out_inside(runs, 10)
    assert data["held_out"] == {
        "sources": len({r["source"] for r in runs}), "runs": len(runs), "inside": inside, "inside_at_p10_p90": at_p10
    }  # fmt: skip
    readme = " ".join((BAND_FILE.parents[2] / "README.md").read_text(encoding="utf-8").split())
    assert f"{at_p10} of the {len(runs)} fall inside a p10-p90 band drawn from the others" in readme
    assert f"p{lo}-p{hi}, the narrowest that holds at least 80% held out: {inside} of {len(runs)}" in readme
