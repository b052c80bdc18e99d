"""The serving path's step times (``step_seconds``: a step split by ``split_step``, the operators
that depend on it only through its token count timed once per count) are the time model's own:
``step_time`` of ``build_step``'s step, to the last bit, stage by stage. The independent value is
the per-step path itself, on random steps (decode, prefill, mixed, several groups) of dense, MoE
with attention data parallelism, MLA, hybrid linear-attention and pipelined layouts, timed in an
order that reuses the memoised counts and under two GPUs' profiles."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_cost.core.types import Dtype, Engine
from llm_cost.model.layout import Layout
from llm_cost.perf.calibrated import CalibratedModel, step_seconds
from llm_cost.perf.choose import profile_for
from llm_cost.specs.load import load_gpu, load_model
from llm_cost.workload.step import SeqGroup, build_step

SETUPS = [
    ("llama3-8b", Layout(tp=2), 16, 16),
    ("llama3-70b", Layout(tp=2, pp=2), 16, 8),
    ("deepseek-v3", Layout(tp=2, ep=8, dp=4), 8, 16),
    ("deepseek-v3", Layout(tp=8), 16, 16),
    ("qwen3-next-80b-a3b", Layout(tp=1, ep=4, dp=4), 16, 16),
    ("gpt-oss-120b", Layout(tp=2, ep=2), 16, 8),
    ("llama3.1-405b", Layout(pp=16), 16, 16),  # its hop into stage 8 leaves an 8-GPU node: the network's
]
GPUS = ("h100", "b200")

groups = st.lists(
    st.builds(SeqGroup, st.integers(1, 300), st.sampled_from([1, 1, 1, 7, 512, 2048]), st.integers(0, 9000)),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(setup=st.sampled_from(SETUPS), gpu=st.sampled_from(GPUS), steps=st.lists(groups, min_size=1, max_size=6))
def test_step_seconds_is_the_time_of_the_built_step(setup, gpu, steps):
    name, layout, weight_bits, kv_bits = setup
    spec, g = load_model(name), load_gpu(gpu)
    model = CalibratedModel(profile_for(g, Engine.VLLM))
    formats = dict(layout=layout, weight_bits=Fraction(weight_bits), kv_bits=kv_bits, compute_dtype=Dtype.BF16)
    for step in [*steps, *steps]:  # the second time from the memo
        fast = step_seconds(model, spec, step, g, **formats)
        slow = model.step_time(build_step(spec, step, **formats), g, operators=False)
        assert [s.time_s for s in fast.stages] == [s.time_s for s in slow.stages]
        assert (fast.time_s, fast.compute_s, fast.memory_s, fast.link_s) == (
            slow.time_s,
            slow.compute_s,
            slow.memory_s,
            slow.link_s,
        )


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    setup=st.sampled_from(SETUPS),
    gpu=st.sampled_from(GPUS),
    steps=st.lists(groups, min_size=1, max_size=4),
)
def test_the_split_bound_is_the_bound_of_the_built_step(setup, gpu, steps):
    """The Roofline bound a serving band's fast end is held at (``step_seconds`` under
    RooflineBound: each stage head's sums taken once per token count) is the whole step's bound, up
    to the order of its sums (1e-9), pipeline hops over the network included (PP16 on 8-GPU nodes)."""
    import pytest

    from llm_cost.perf.timemodel import RooflineBound

    name, layout, weight_bits, kv_bits = setup
    spec, g = load_model(name), load_gpu(gpu)
    formats = dict(layout=layout, weight_bits=Fraction(weight_bits), kv_bits=kv_bits, compute_dtype=Dtype.BF16)
    bound = RooflineBound()
    for step in [*steps, *steps]:
        fast = step_seconds(bound, spec, step, g, **formats)
        whole = bound.step_time(build_step(spec, step, **formats), g, operators=False)
        assert fast.time_s == pytest.approx(whole.time_s, rel=1e-9)
        assert fast.link_s == pytest.approx(whole.link_s, rel=1e-9, abs=1e-15)
