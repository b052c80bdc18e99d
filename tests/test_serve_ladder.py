"""Saturated plans descend a ladder of concurrency caps (issue 22's new-user report): a plan is
found whenever a configuration simulated alone meets the targets, and a looser target never gives
a worse plan. Each check compares the plan with an independent run: the configuration simulated
on its own, or the plan with one target removed."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from llm_cost import api
from llm_cost.analyses.simulated_plan import ladder
from llm_cost.core.errors import InputError
from llm_cost.model.layout import Layout

GEMMA = str(Path(__file__).parent / "fixtures" / "hf" / "gemma-4-26b-a4b-it")


@pytest.fixture(autouse=True)
def band_under_load(monkeypatch):
    """The search's mechanics on the scenarios they were found on: saturated plans banded by the
    vLLM runs under load (x0.68-x1.00 on an H100), as plans were before a plan without a rate took
    the runs at saturation (x0.66-x2.06): the ladder, the ascent and the chunks do not depend on
    which band the runs are simulated at, and at x2.06 these cases no longer reach them."""
    from llm_cost.analyses import serving_runs

    monkeypatch.setattr(serving_runs, "SATURATION_BAND_FILE", serving_runs.BAND_FILE)


def test_the_ladder_falls_by_root_two_to_one():
    """88 / 2**(k/2) for k = 1.. : 62.2, 44, 31.1, 22, 15.6, 11, 7.8, 5.5, 3.9, 2.75, 1.94, 1.375,
    0.97 rounded half up: 62, 44, 31, 22, 16, 11, 8, 6, 4, 3, 2, 1, (1 again, dropped)."""
    assert ladder(88) == [62, 44, 31, 22, 16, 11, 8, 6, 4, 3, 2, 1]
    assert ladder(2) == [1] and ladder(1) == []


def test_a_plan_is_found_when_a_lower_cap_meets_the_targets():
    """``serve gemma-4-26b-a4b-it --gpu h100 --gpus 1 --input 2K --output 256 --ttft p99:2s
    --tpot p90:50ms`` said no configuration reaches TTFT P99 2 s (88 sequences: 6.34 s), yet the
    same GPU capped at 32 sequences (``--max-num-seqs 32``, simulated on its own) meets both. The
    plan must exist and serve at least that configuration's output tokens/s per GPU."""
    targets = dict(ttft_s="p99:2s", tpot_s="p90:50ms")
    alone = api.serve(GEMMA, "h100", "2K", 256, gpus=1, max_num_seqs=32, **targets)
    assert alone.chosen.max_num_seqs == 32 and alone.chosen.meets
    plan = api.serve(GEMMA, "h100", "2K", 256, gpus=1, **targets)
    assert plan.chosen.meets
    assert plan.output_tokens_per_s_per_gpu >= alone.output_tokens_per_s_per_gpu


def test_a_layout_beaten_on_the_frontier_is_tried_above_its_best_concurrency():
    """A new user's report: on 8 H200 with P99 TTFT 2 s the plan stopped at 2 x TP4 with 84
    sequences (351 output tokens/s per GPU), the frontier's last TP4 point: 4 x TP2 beat TP4's
    points of more sequences on both tokens/s per user and per GPU, then missed the TTFT target in
    simulation. The same layout capped at 192 sequences, planned alone, meets it; the plan must
    serve at least that configuration's output tokens/s per GPU."""
    alone = api.serve("llama3-70b", "h200", "2K", 256, gpus=8, layout=Layout(tp=4), max_num_seqs=192, ttft_s="p99:2s")
    assert alone.chosen.max_num_seqs == 192 and alone.chosen.meets
    plan = api.serve("llama3-70b", "h200", "2K", 256, gpus=8, ttft_s="p99:2s")
    assert plan.chosen.meets
    assert plan.output_tokens_per_s_per_gpu >= alone.output_tokens_per_s_per_gpu


def test_a_ttft_missed_at_a_small_chunk_does_not_stop_a_larger_chunk_above_it():
    """A helper's report: on 8 H100 with P90 TPOT 60 ms, P90 TTFT 2 s planned 2 x TP4 at 64
    sequences and a 1,024-token chunk, but P90 TTFT 1.2 s planned 1 x TP8, though that 2 x TP4
    meets 1.2 s too (its P90 TTFT is about 0.3 s): the descent missed the TTFT at 52 sequences with
    a 512-token chunk and tried no cap above it, while a larger chunk prefills a prompt in fewer
    steps. The same layout at 64 sequences and a 1,024-token chunk, planned alone, meets 1.2 s;
    the plan must find a 2 x TP4 at that chunk above 52 sequences that meets it, within the
    sampling noise of a closed loop's throughput (294-304 tokens/s per GPU at 60-72 sequences)."""
    targets = {"tpot_s": "p90:60ms", "ttft_s": "p90:1.2s"}
    alone = api.serve(
        "llama3-70b", "h100", "2K", 256, gpus=8, layout=Layout(tp=4), max_num_seqs=64, chunk_tokens=1024, **targets
    )
    assert alone.chosen.meets
    plan = api.serve("llama3-70b", "h100", "2K", 256, gpus=8, **targets)
    chosen = plan.chosen
    assert chosen.meets and chosen.layout == Layout(tp=4)
    assert chosen.max_num_batched_tokens == 1024 and chosen.max_num_seqs > 52
    assert plan.output_tokens_per_s_per_gpu >= 0.9 * alone.output_tokens_per_s_per_gpu


def test_a_gpu_better_on_every_datasheet_figure_plans_at_least_as_much():
    """H200 and H100 SXM have the same tensor peaks, SMs, NVLink and TDP; the H200 has more HBM
    (141 against 80 GB) and more bandwidth (4.8 against 3.35 TB/s) (NVIDIA's datasheets). Planned
    for the same traffic and P99 TTFT target on 8 GPUs, the H200 must carry at least the H100's
    output tokens/s per GPU (the H200 plan had come out behind: 351 against 364)."""
    h100, h200 = api.load_gpu("h100"), api.load_gpu("h200")
    assert h200.dense_tflops == h100.dense_tflops and h200.sm_count == h100.sm_count
    assert h200.interconnect == h100.interconnect
    assert h200.memory_gb > h100.memory_gb and h200.memory_bandwidth_tb_s > h100.memory_bandwidth_tb_s
    plans = [api.serve("llama3-70b", g, "2K", 256, gpus=8, ttft_s="p99:2s") for g in ("h100", "h200")]
    assert plans[1].output_tokens_per_s_per_gpu >= plans[0].output_tokens_per_s_per_gpu


def test_dropping_a_target_never_gives_a_worse_plan_for_llama3_70b():
    """Issue 22's example: with TTFT P99 2 s and TPOT P90 50 ms the plan is 2 x TP4 at $2.289/M;
    dropping TPOT gave 1 x TP8 at $2.895/M. Without TPOT the plan must cost no more per million
    output tokens (same price, so no fewer output tokens/s per GPU)."""
    common = dict(gpus=8, usd_per_gpu_hour=2.5)
    both = api.serve("llama3-70b", "h100", "2K", 256, ttft_s="p99:2s", tpot_s="p90:50ms", **common)
    ttft_only = api.serve("llama3-70b", "h100", "2K", 256, ttft_s="p99:2s", **common)
    assert ttft_only.output_tokens_per_s_per_gpu >= both.output_tokens_per_s_per_gpu
    assert ttft_only.usd_per_million_output_tokens <= both.usd_per_million_output_tokens


def _plan(**targets):
    try:
        return api.serve("llama3-8b", "h100", "2K", 256, gpus=1, requests=200, **targets)
    except InputError:
        return None


@pytest.mark.parametrize("seed", range(4))
def test_a_looser_target_set_never_gives_a_worse_plan(seed):
    """A property: for a random pair of percentile targets (TTFT P50..P99 of 0.05-3 s, TPOT
    P50..P99 of 5-60 ms), the plan with either target removed exists whenever the plan with both
    does, and serves at least its output tokens/s per GPU (the saturated objective), to within the
    resolution of the steady-window rate it is measured by: a request at each end of the window (a
    closed loop's rate counts each request's share of the window, its tokens taken as evenly spaced,
    so the requests the window cuts are estimated; seed 2 finds 136 users 1.6% under 96 at the same
    chunk, both past saturation)."""
    rng = random.Random(seed)
    ttft = f"p{rng.choice([50, 90, 99])}:{rng.uniform(0.05, 3.0):.3f}s"
    tpot = f"p{rng.choice([50, 90, 99])}:{rng.uniform(5, 60):.1f}ms"
    both = _plan(ttft_s=ttft, tpot_s=tpot)
    for looser in (_plan(ttft_s=ttft), _plan(tpot_s=tpot)):
        if both is not None:
            assert looser is not None, (ttft, tpot)
            window = both.chosen.simulation.steady
            resolution = 2 / window.requests if window is not None else 0.0
            assert looser.output_tokens_per_s_per_gpu >= both.output_tokens_per_s_per_gpu * (1 - resolution), (
                ttft,
                tpot,
            )


def test_a_looser_ttft_never_plans_less_for_llama3_70b():
    """A new user's report: with P90 TPOT 60 ms on 8 H100, P90 TTFT 0.8 s and 2 s planned 2 x TP4
    at 64 sequences (304 output tokens/s per GPU) while 1 s to 1.5 s planned 68 (284): a search
    that skipped lower caps once one held, though a closed loop's throughput is not monotone in
    its cap within a few percent. A looser TTFT must plan at least as much, to the resolution of
    the steady window's completions."""
    plans = [
        api.serve("llama3-70b", "h100", "2K", 256, gpus=8, tpot_s="p90:60ms", ttft_s=f"p90:{t}")
        for t in ("0.8s", "1.2s", "2s")
    ]
    for tight, loose in zip(plans, plans[1:]):
        window = tight.chosen.simulation.steady
        resolution = 1 / window.requests if window is not None else 0.0
        assert loose.output_tokens_per_s_per_gpu >= tight.output_tokens_per_s_per_gpu * (1 - resolution)
