"""Physical plausibility of MoE step predictions (issue 38): no predicted step of a shipped MoE model
runs faster than the best GEMM and memory-bandwidth fractions published for its GPU, over random
plans (the layouts ``serve`` searches, TP with or without EP and attention DP with EP, at random
batches, contexts and prompt lengths) on H100, H200, B200 and MI300X.

A step's compute time at the datasheet peak over its predicted time is the fraction of peak its
FLOPs would need; its bytes at the datasheet bandwidth over its predicted time the fraction of
bandwidth. Neither may pass the ceilings below (a prediction past them would be a kernel faster
than any published)."""

from __future__ import annotations

from functools import cache

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost import Layout, api
from llm_cost.analyses.serving.moe_layouts import attention_dp_layouts
from llm_cost.analyses.serving.replicas import replica_layouts
from llm_cost.specs.load import model_names

#: The best published share of the dense tensor-core peak: DeepGEMM's FP8 GEMMs reach "up to 1550
#: TFLOPS" on H800 SXM (github.com/deepseek-ai/DeepGEMM README), of its 1,979 TFLOPS dense FP8
#: peak (the H100 SXM datasheet's, whose SMs the H800 shares): 0.78.
GEMM_CEILING = 1550 / 1979
#: The best published share of HBM bandwidth: FlashMLA's decode kernel reads "up to 3000 GB/s in
#: memory-bound configuration" on H800 SXM5 (github.com/deepseek-ai/FlashMLA README), of its
#: 3.35 TB/s: 0.90.
BANDWIDTH_CEILING = 3000 / 3350
#: Hopper's fractions stand for B200 and MI300X too: the highest we found published for any of the
#: four GPUs, so a looser ceiling where theirs is lower.
GPUS = ("h100", "h200", "b200", "mi300x")


@cache
def _moe_models() -> tuple[str, ...]:
    return tuple(n for n in model_names() if api.load_model(n).moe is not None)


@cache
def _layouts(model: str, gpu: str) -> tuple[Layout, ...]:
    """The layouts ``serve`` searches for ``model`` on ``gpu``: one node's TP/PP/EP replicas and
    attention-DP replicas up to 16 GPUs."""
    spec, g = api.load_model(model), api.load_gpu(gpu)
    return tuple(replica_layouts(spec, g, 8) + attention_dp_layouts(spec, g, 16))


def test_every_shipped_moe_model_is_checked():
    """The shipped MoE models (those with routed experts) include DeepSeek-V3 and Mixtral."""
    assert {"deepseek-v3", "mixtral-8x7b"} <= set(_moe_models())


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("model", _moe_models())
@settings(max_examples=8, deadline=None, derandomize=True)
@given(data=st.data(), prefill=st.booleans())
def test_no_moe_step_is_faster_than_the_published_ceilings(model, gpu, data, prefill):
    layout = data.draw(st.sampled_from(_layouts(model, gpu)))
    if prefill:
        seq = data.draw(st.sampled_from((256, 2048, 8192)))
        step = api.prefill(model, gpu, seq=seq, batch=data.draw(st.integers(1, 4)), layout=layout)
    else:
        batch = data.draw(st.integers(1, 1024))
        step = api.decode(model, gpu, batch=batch, context=data.draw(st.integers(0, 32768)), layout=layout)
    assert step.predicted_s > 0
    assert step.compute_time_s / step.predicted_s <= GEMM_CEILING
    assert step.memory_time_s / step.predicted_s <= BANDWIDTH_CEILING
