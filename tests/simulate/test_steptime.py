"""The step timer's memo: bucketed steps against the same steps built and timed exactly."""

from __future__ import annotations

import random

import pytest

from llm_cost.core.types import Engine
from llm_cost.model.layout import Layout
from llm_cost.perf.choose import time_model_for
from llm_cost.simulate.steptime import StepTimer, bucket, context_bucket, same_context_bucket
from llm_cost.specs.load import load_gpu, load_model
from llm_cost.workload.step import SeqGroup, build_step


def test_buckets_are_within_half_a_grid_step_and_runs_share_them():
    """Below 64 tokens exact (contexts: the nearest multiple of 16); above, half of a grid of 1/16
    of the power of two below, at most 1/32 of the count."""
    for x in range(1, 20_000):
        assert abs(bucket(x) - x) <= x / 32
        assert abs(context_bucket(x) - x) <= max(8, x / 32)
    for x in range(0, 5000):
        run = same_context_bucket(x)
        assert run >= 1 and all(context_bucket(x + i) == context_bucket(x) for i in range(run))


def test_memoised_steps_match_the_exact_ones():
    """Random mixed steps (decodes at their own contexts, one prompt chunk) timed through the memo
    and exactly (every sequence its own group, the chunk at its bucket's token count): within 3%
    (the contexts' bucket moves the KV read, most of a long-context step, by up to 3.1%). The chunk
    is compared at its bucket because a GEMM's time is a step function of its rows (whole tiles:
    llm_cost.perf.families.gemm_tile_m), so a bucket that crosses a tile moves a compute-bound step
    by a tile, not by the bucket's 3%."""
    spec, gpu = load_model("llama3-8b"), load_gpu("h100")
    model = time_model_for(gpu, Engine.VLLM)
    timer = StepTimer(spec, gpu, model)
    rng = random.Random(1)
    for _ in range(40):
        contexts = [rng.randint(100, 4000) for _ in range(rng.randint(1, 128))]
        chunk, cached = rng.randint(1, 2048), rng.choice([0, 96, 1000])
        exact = build_step(spec, [SeqGroup(1, 1, c) for c in contexts] + [SeqGroup(1, bucket(chunk), bucket(cached))])
        want = model.step_time(exact, gpu, operators=False).time_s
        got = timer.seconds(len(contexts), sum(contexts) // len(contexts), chunk, cached, 1)
        assert got == pytest.approx(want, rel=0.03)
    assert timer.seconds(8, 500) == timer.seconds(8, 502)  # one bucket, timed once
    # each step: its own bucket, and from 64 decodes on the two grid points it is interpolated between
    assert len(timer.cache) <= 3 * 40 + 1


def test_timers_of_one_key_share_the_processs_memo():
    """Two timers of equal arguments (a time model built twice) share the process's memo, so a
    second plan builds no step the first timed, while each counts the buckets it met itself (a
    run's step shapes); another layout or another time model has its own memo."""
    spec, gpu = load_model("llama3-8b"), load_gpu("h100")
    a, b = (
        StepTimer(spec, gpu, time_model_for(gpu, Engine.VLLM)),
        StepTimer(spec, gpu, time_model_for(gpu, Engine.VLLM)),
    )
    t = a.seconds(101, 777)  # interpolated between 100 and 104 decodes: three buckets met
    assert b.shared is a.shared and (101, context_bucket(777), 0, 0, 0) in b.shared and not b.cache
    assert b.seconds(101, 777) == t and len(b.cache) == len(a.cache) == 3
    assert StepTimer(spec, gpu, time_model_for(gpu, Engine.VLLM), Layout(tp=2)).shared is not a.shared
    assert StepTimer(spec, gpu, time_model_for(gpu, Engine.SGLANG)).shared is not a.shared


def test_interpolated_decode_counts_are_within_a_percent_of_the_exact_steps():
    """From 64 decoding sequences on, a count between two grid points is timed by interpolation:
    every count from 64 to 300 (at 2,048 tokens of context, a bucket of its own, with and without a 512-token chunk) is
    within 1% of its step built and timed exactly, and a grid point is exact."""
    spec, gpu = load_model("llama3-8b"), load_gpu("h100")
    model = time_model_for(gpu, Engine.VLLM)
    timer = StepTimer(spec, gpu, model)
    for n in range(64, 301, 3):
        for chunk in (0, 512):
            groups = [SeqGroup(n, 1, 2048)] + ([SeqGroup(1, chunk, 0)] if chunk else [])
            want = model.step_time(build_step(spec, groups), gpu, operators=False).time_s
            assert timer.seconds(n, 2048, chunk, 0, 1 if chunk else 0) == pytest.approx(want, rel=0.01), (n, chunk)
    grid = model.step_time(build_step(spec, [SeqGroup(128, 1, 2048)]), gpu, operators=False).time_s
    assert timer.seconds(128, 2048) == grid


def test_a_runs_step_shapes_are_its_own_whatever_ran_before_on_its_timer():
    """A plan runs many candidates on one step timer per layout (its memo shared): each run's
    ``step_shapes`` must count the buckets that run met, the same as the run on a fresh timer, not
    the timer's total after the runs before it."""
    from llm_cost.simulate import ClosedLoop, EngineConfig, Fixed, Workload, poisson, simulate

    spec, gpu = load_model("llama3-8b"), load_gpu("h100")
    model = time_model_for(gpu, Engine.VLLM)
    config = EngineConfig(max_num_seqs=64, max_num_batched_tokens=2048)
    first = poisson(8.0, Fixed(3000), Fixed(200), requests=150)
    second = Workload(ClosedLoop(16), Fixed(700), Fixed(90), requests=120)

    def run(workload: Workload, timer: StepTimer) -> int:
        return simulate(spec, gpu, workload, config, model, kv_capacity_tokens=200_000, timer=timer).step_shapes

    shared = StepTimer(spec, gpu, model)
    run(first, shared)
    after = run(second, shared)
    alone = run(second, StepTimer(spec, gpu, model))
    assert after == alone > 0
    assert len(shared.cache) > alone  # the timer holds both runs' buckets
