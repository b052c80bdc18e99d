"""An EP all-to-all dispatches a token's hidden state at the step's activation precision: 8 bits
when the GEMMs take FP8 (DeepEP's FP8 dispatch, DeepSeek-V3), 16 for a BF16 model (the step had
assumed FP8 for every model); the combine returns 16 bits either way."""

from __future__ import annotations

from fractions import Fraction

import pytest

from llm_cost.core.types import Dtype, OpRole
from llm_cost.model.layout import Layout
from llm_cost.specs.load import load_model
from llm_cost.workload.step import build_step, decode


def _all_to_all_bytes(model: str, dtype: Dtype) -> Fraction:
    step = build_step(load_model(model), decode(8, 1024), layout=Layout(tp=1, ep=8, dp=8), compute_dtype=dtype)
    return sum(Fraction(op.comm_bytes) for st in step.stages for op in st.ops if op.role == OpRole.EP_ALL_TO_ALL)


@pytest.mark.parametrize("dtype, dispatch", [(Dtype.BF16, 16), (Dtype.FP8, 8)])
def test_mixtral_on_ep8_dispatches_at_its_activation_bits(dtype, dispatch):
    """Mixtral-8x7B (config.json: hidden_size 4,096, num_experts_per_tok 2, 32 layers): 8 decoding
    sequences over DP8 leave each GPU one token, whose 2 copies it sends, 7/8 of them to remote
    experts, at dispatch + combine bits, in each of 32 MoE layers."""
    tokens, k, d, layers = 1, 2, 4096, 32
    expected = Fraction(tokens * k * d * (dispatch + 16), 8) * Fraction(7, 8) * layers
    assert _all_to_all_bytes("mixtral-8x7b", dtype) == expected


def test_the_moe_command_defaults_to_the_steps_dispatch(cli):
    """moe's --dispatch-dtype defaults to the step's: 16 bits for Mixtral (BF16), 8 for DeepSeek-V3
    (FP8 block weights, FP8 activations): k x d x bits per token per MoE layer."""
    mixtral = cli("moe", "mixtral-8x7b", "--json").json()
    v3 = cli("moe", "deepseek-v3", "--json").json()
    assert mixtral["dispatch_bits"] == 16 and v3["dispatch_bits"] == 8
    assert cli("moe", "mixtral-8x7b", "--dispatch-dtype", "fp8", "--json").json()["dispatch_bits"] == 8
