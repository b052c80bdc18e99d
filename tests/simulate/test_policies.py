"""Each serving engine's admission and preemption rules (llm_cost.simulate.policies) against the
engines' own constants and rules: SGLang's ``PrefillAdder`` and its ``new_token_ratio`` schedule
(``SGLANG_INIT_NEW_TOKEN_RATIO`` 0.7, ``SGLANG_MIN_NEW_TOKEN_RATIO_FACTOR`` 0.14,
``SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS`` 600, ``CLIP_MAX_NEW_TOKENS`` 4,096), TensorRT-LLM's
``GUARANTEED_NO_EVICT``, vLLM V1's scheduler without a gate."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_cost.core.types import SERVING_ENGINES, Engine
from llm_cost.simulate.policies import SglangPolicy, policy_for


def test_every_serving_engine_has_its_own_policy():
    policies = {engine: policy_for(engine) for engine in SERVING_ENGINES}
    assert {p.engine for p in policies.values()} == set(SERVING_ENGINES)
    assert policy_for(Engine.SGLANG) is not policy_for(Engine.SGLANG)  # one per replica: SGLang's ratio is its own


def test_only_tensorrt_llm_reserves_whole_requests_and_only_sglang_keeps_prompts_apart():
    assert [e for e in SERVING_ENGINES if policy_for(e).reserves_whole] == [Engine.TRTLLM]
    assert [e for e in SERVING_ENGINES if policy_for(e).prompts_apart] == [Engine.SGLANG]


@pytest.mark.parametrize("engine", [Engine.VLLM, Engine.TRTLLM])
def test_vllm_and_tensorrt_llm_admit_on_blocks_and_caps_alone(engine):
    asked = []
    assert policy_for(engine).admission(10, lambda: asked.append(1) or [100]) is None
    assert asked == []  # the running requests' outputs are not even counted


def test_sglang_new_token_ratio_falls_from_0_7_to_0_098_over_600_steps_and_a_retraction_resets_it():
    p = SglangPolicy()
    assert p.new_token_ratio(0) == pytest.approx(0.7)
    assert p.new_token_ratio(300) == pytest.approx(0.7 - (0.7 - 0.098) / 2)
    assert p.new_token_ratio(600) == pytest.approx(0.098)
    assert p.new_token_ratio(5000) == pytest.approx(0.098)
    p.preempted(5000)
    assert p.new_token_ratio(5000) == pytest.approx(0.7)
    assert p.new_token_ratio(5300) == pytest.approx(0.7 - (0.7 - 0.098) / 2)


def test_sglang_gate_refuses_what_the_running_requests_estimate_leaves_no_room_for():
    # running requests with 4,000 and 9,000 output tokens to go: 0.7 x (4,000 + 4,096 clipped) = 5,667.2
    gate = SglangPolicy().admission(0, lambda: [4000, 9000])
    # 2,000 new prompt tokens + 3,000 output = 5,000 >= 10,000 - 5,667.2: NO_TOKEN
    assert not gate(2000, 3000, 10_000, False)
    # the same request with nothing running or admitted yet is let through (it can only wait for blocks)
    assert gate(2000, 3000, 10_000, True)


def test_sglang_gate_counts_what_this_pass_admitted():
    gate = SglangPolicy().admission(600, lambda: [])  # nothing running: no estimate
    assert gate(1000, 1000, 10_000, True)  # 2,000 reserved by the pass
    assert gate(3000, 2000, 10_000, False)  # 5,000 < 10,000 - 2,000: admitted, 7,000 reserved
    assert not gate(2000, 1000, 10_000, False)  # 3,000 >= 10,000 - 7,000: refused at equality, as add_one_req
    assert gate(1999, 1000, 10_000, False)  # one token less fits


def test_sglang_gate_clips_a_request_output_at_4096_tokens():
    gate = SglangPolicy().admission(600, lambda: [])
    assert gate(100, 100_000, 4197, False)  # 100 + 4,096 < 4,197
    assert not SglangPolicy().admission(600, lambda: [])(100, 100_000, 4196, False)


@given(
    st.integers(0, 2000),
    st.lists(st.integers(1, 20_000), max_size=8),
    st.integers(0, 50_000),
    st.integers(1, 50_000),
    st.integers(0, 200_000),
    st.integers(0, 200_000),
)
def test_sglang_gate_refuses_on_less_free_room_whatever_it_admitted_on_more(steps, running, new, out, free, less):
    """Fewer free tokens never admit what more refused (the gate is monotone in the free room)."""
    more = SglangPolicy().admission(steps, lambda: running)(new, out, free, False)
    fewer = SglangPolicy().admission(steps, lambda: running)(new, out, min(free, less), False)
    assert more or not fewer
