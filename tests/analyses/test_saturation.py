"""The simulator at saturation against the shipped published serving runs (issue 32 item 5, issue 38):
replayed through the public harness (llm_cost.analyses.saturation_runs, formats as serve resolves
them) and held to the benchmark blocks' own figures."""

from __future__ import annotations

import pytest

from llm_cost.analyses.saturation_runs import (
    SHAREGPT_LENGTHS,
    check_run,
    load_runs,
    sharegpt_requests,
    skipped_runs,
    summarise,
)
from llm_cost.api.choices import saturation_formats
from llm_cost.simulate.workload import read_trace


@pytest.fixture(scope="module")
def saturation():
    """Every shipped run replayed as serve would (about 10 s of CPU)."""
    runs = load_runs()
    return summarise(runs, [check_run(r, saturation_formats(r)) for r in runs], skipped_runs())


def test_the_sharegpt_table_is_drawn_as_vllm_bench_draws():
    """vLLM's ShareGPT sampler keeps prompts and outputs of at least 4 tokens, prompts of at most
    1,024 and prompt + output of at most 2,048 (vllm/benchmarks/datasets.py); 1,000 prompts."""
    rows = read_trace(SHAREGPT_LENGTHS).rows
    assert len(rows) == 1000
    assert all(4 <= r.input_tokens <= 1024 and r.output_tokens >= 4 for r in rows)
    assert all(r.input_tokens + r.output_tokens <= 2048 and r.arrival_s == 0 for r in rows)


def test_sharegpt_requests_carry_the_runs_quoted_totals():
    """GPUStack's DeepSeek-R1 H200 vLLM block: Total input tokens 219171, Total generated tokens
    200752 over 1000 requests; the replayed requests sum to them within rounding."""
    requests = sharegpt_requests(1000, 219.171, 200.752)
    assert sum(r.input_tokens for r in requests) == pytest.approx(219171, rel=0.005)
    assert sum(r.output_tokens for r in requests) == pytest.approx(200752, rel=0.005)
    assert max(r.output_tokens for r in requests) > 4 * 200.752  # the long tail that sets the duration


def test_sharegpt_runs_throughput_within_a_quarter(saturation):
    """ShareGPT runs (1,000 prompts at once) replayed with the table's per-request spread: the
    median |error| of output tokens/s at most 25% (18.1% with vLLM's seed-0 draw, 17.8-21.5% with
    seeds 1-3; at the mean lengths it was 74%: the benchmark's duration is set by its longest
    outputs decoding at a small batch at the end)."""
    assert saturation.median_sharegpt["output_tokens_per_s"] <= 0.25


def test_saturation_medians_hold_their_bounds(saturation):
    """The 112 published runs at saturation or fixed concurrency (GPUStack performance-lab pages,
    InferenceX, Vultr's B200 sweeps): median |error| over all of them at most 42% on output tokens/s
    and 36% on ITL P50 (39.9% and 34.9% when written on the first 100, each run timed out of its
    source, SGLang's steps of prompts alone; 62.7% and 35.4% before the ShareGPT runs had their
    spread, in source; 30.7% and 34.1% with Vultr's 12 runs); vLLM's alone at most 43% on tokens/s
    (40.4%). Issue 32 asks 15%:
    the fixed-length runs (128/4 prompts, 2K-32K prefills) are still far (the README's Saturation section)."""
    assert len(saturation.runs) >= 112 and saturation.skipped == 0
    assert saturation.median["output_tokens_per_s"] <= 0.42
    assert saturation.median["itl_p50_ms"] <= 0.36
    assert saturation.median_engine["vllm"]["output_tokens_per_s"] <= 0.43


def test_the_readme_quotes_the_medians_the_replays_give(saturation):
    """The README's Saturation paragraph states the medians of these replays; a change to the time
    model or the simulator that moves them must move the README too (the paragraph had kept a
    previous fit's 37.3% and 34.5% beside the script's 36.0% and 34.1%)."""
    from pathlib import Path

    readme = " ".join((Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8").split())
    s = saturation
    quoted = [
        f"the median errors are {s.median['output_tokens_per_s']:.1%} on output tokens/s and "
        f"{s.median['itl_p50_ms']:.1%} on ITL P50",
        f"ShareGPT runs {s.median_sharegpt['output_tokens_per_s']:.1%} and {s.median_sharegpt['itl_p50_ms']:.1%}",
        f"fixed-length runs {s.median_fixed_lengths['output_tokens_per_s']:.1%} and "
        f"{s.median_fixed_lengths['itl_p50_ms']:.1%}",
        f"MoE runs {s.median_moe['output_tokens_per_s']:.1%} and {s.median_moe['itl_p50_ms']:.1%}",
        f"dense {s.median_dense['output_tokens_per_s']:.1%} and {s.median_dense['itl_p50_ms']:.1%}",
        *(
            f"{name} {s.median_engine[engine]['output_tokens_per_s']:.1%} and {s.median_engine[engine]['itl_p50_ms']:.1%}"
            for engine, name in (("sglang", "SGLang"), ("trtllm", "TensorRT-LLM"))
        ),
    ]
    assert [q for q in quoted if q not in readme] == []


def test_sglang_itl_is_a_decode_step_between_prompt_steps(saturation):
    """SGLang runs a step of prompts alone, prefill first (``--enable-mixed-chunk`` off by
    default), so most of a request's gaps are decode steps, not steps carrying an 8,192-token
    prompt chunk: its 21 runs' median |error| on ITL P50 at most 35% (31.1% when written; 79.2%
    when its steps mixed prompts and decodes as vLLM's, e.g. DeepSeek-R1 H200 32K prompts: 35.3 ms
    measured, 420 ms predicted then, 46 ms now)."""
    assert saturation.median_engine["sglang"]["itl_p50_ms"] <= 0.35


def test_the_api_server_time_is_fitted_leaving_each_source_out():
    """Two sources whose runs are best replayed at different API-server times: each source's fold
    takes the other's value, and its out-of-source errors are its runs at that value."""
    from dataclasses import replace

    from llm_cost.analyses.saturation_runs import FRONTEND_GRID_S, RunCheck, fit_frontend

    base = next(r for r in load_runs() if r.engine.value == "vllm")
    runs = [replace(base, id=f"{s}{i}", source=s) for s in "ab" for i in range(3)]
    best = {"a": 1, "b": 4}  # grid indices where each source's errors vanish

    def check(run, g):
        e = 0.1 * abs(g - best[run.source])
        return RunCheck(run.id, run.source, "vllm", "m", "g", "TP1", 1, {}, {}, {"output_tokens_per_s": e})

    fit = fit_frontend(runs, [[check(r, g) for r in runs] for g in range(len(FRONTEND_GRID_S))])
    assert fit.folds_s == {"a": FRONTEND_GRID_S[4], "b": FRONTEND_GRID_S[1]}
    assert fit.median_out_of_source["output_tokens_per_s"] == pytest.approx(0.3)
    assert fit.median_none["output_tokens_per_s"] == pytest.approx(0.25)


def test_a_run_is_timed_by_the_fit_without_its_source():
    """GPUStack's gpt-oss-120b H100 page gave step-time rows too: its runs are timed by the shipped
    fit's fold without that source (llm_cost/data/timemodel-fit.json), a page without rows by the
    whole fit."""
    from llm_cost.perf.profile import fit_data

    runs = load_runs()
    held = next(
        r for r in runs if r.source == "gpustack performance-lab gpt-oss-120b h100" and r.engine.value == "vllm"
    )
    fold = fit_data()["folds"][held.source]
    profile = saturation_formats(held).time_model.profile
    assert profile.parameters.engine.request_overhead_s == fold["engines"]["vllm"]["request_overhead_s"]
    assert profile.parameters.family.gemm_efficiency_16 == fold["families"]["hopper"]["gemm_efficiency_16"]
    whole = next(r for r in runs if r.source == "gpustack performance-lab qwen3-14b h100" and r.engine.value == "vllm")
    assert "fitted without" not in saturation_formats(whole).time_model.profile.note
