"""Grouped MoE GEMMs are timed by the tokens each expert multiplies (the M of its GEMM, tile-quantised),
not by the batch's tokens: checked by hand for Mixtral-8x7B."""

from __future__ import annotations

import pytest

from llm_cost.api import choices
from llm_cost.core.types import OpKind, OpRole
from llm_cost.specs.load import load_gpu, load_model
from llm_cost.workload.step import build_step, decode


def test_each_expert_gemm_sees_its_own_tokens():
    """By hand: 64 sequences x top-2 of 8 experts = 128 routed rows; each expert is hit with
    probability 1 - (6/8)^64, so 8 (1 - 0.75^64) experts run, each with 128 / (8 (1 - 0.75^64))
    = 16.0000002 rows, the M of its GEMM (the dense projections keep M = 64)."""
    step = build_step(load_model("mixtral-8x7b"), decode(64, 1024))
    per_expert = 128 / (8 * (1 - 0.75**64))
    routed = [op for op in step.ops if op.role == OpRole.ROUTED_EXPERTS]
    dense = [op for op in step.ops if op.kind == OpKind.GEMM and op.role == OpRole.MATMUL]
    assert len(routed) == 3 and dense
    assert all(float(op.m) == pytest.approx(per_expert, rel=1e-12) for op in routed)
    assert all(op.m == 64 for op in dense)


def test_the_expert_gemm_runs_on_deepgemms_ramp_of_its_own_rows():
    """The compute term of a routed-expert gate or up GEMM, worked by hand: each expert's
    16.0000002 rows run at rows / (rows + 115) of the large-M rate (DeepGEMM's grouped GEMMs,
    perf.calibrated.GROUPED_GEMM_HALF_ROWS), so the FLOPs count (16.0000002 + 115) / 16.0000002
    times, at the profile's 16-bit GEMM share x the engine's grouped-GEMM share of 989.4 TFLOP/s;
    at the batch's 64 rows it would be (64 + 115) / 64: the experts' own rows make it 2.3x slower."""
    gpu = load_gpu("h100")
    model = choices.time_model_of(gpu)
    q = model.profile.parameters
    step = build_step(load_model("mixtral-8x7b"), decode(64, 1024))
    times = {t.name: t for t in model.step_time(step, gpu).ops}
    m = 128 / (8 * (1 - 0.75**64))
    rate = 989.4e12 * q.family.gemm_efficiency_16 * q.engine.moe_gemm_share
    gates = [o for o in step.ops if o.role == OpRole.ROUTED_EXPERTS and o.n == 14336]
    assert len(gates) == 2
    for op in gates:
        by_hand = float(op.flops) * (m + 115) / m / rate
        assert times[op.name].compute_s == pytest.approx(by_hand, rel=1e-9)
        assert times[op.name].compute_s > 2.3 * float(op.flops) * (64 + 115) / 64 / rate
