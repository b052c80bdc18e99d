"""Grouped MoE GEMMs are timed by the tokens each expert multiplies (the M of its GEMM), not by the
batch's tokens: checked by hand for Mixtral-8x7B, and the fitted A100 profile's Mixtral rows
(gpt-fast README, mixtral-moe/README.md '## Benchmarks') checked leave-one-out."""

from __future__ import annotations

import statistics

import pytest

from llm_cost.analyses.calibration import measurements_dir, validate
from llm_cost.core.types import OpKind, OpRole
from llm_cost.perf.calibrated import CalibratedModel
from llm_cost.perf.profile import load_profile
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


def test_the_expert_gemm_runs_at_the_efficiency_of_its_rows():
    """The compute term of a routed-expert GEMM is FLOPs / (peak x e_max x M / (M + M_half)) with
    M the rows per expert (16.0000002 here), not the batch's 64 tokens."""
    profile = load_profile("h100")
    q = profile.parameters
    gpu = load_gpu("h100")
    step = build_step(load_model("mixtral-8x7b"), decode(64, 1024))
    times = {t.name: t for t in CalibratedModel(profile).step_time(step, gpu).ops}
    m = 128 / (8 * (1 - 0.75**64))
    for op in (o for o in step.ops if o.role == OpRole.ROUTED_EXPERTS):
        by_hand = float(op.flops) / (989.4e12 * q.gemm_efficiency_max * m / (m + q.gemm_half_tokens))
        at_batch = float(op.flops) / (989.4e12 * q.gemm_efficiency_max * 64 / (64 + q.gemm_half_tokens))
        assert times[op.name].compute_s == pytest.approx(by_hand, rel=1e-9)
        assert times[op.name].compute_s > 2 * at_batch


def test_mixtral_rows_leave_one_out():
    """The A100 profile (gpt-fast, torch.compile) predicts each of its seven Mixtral-8x7B rows (batch
    1: one token per expert that runs, bf16 TP 2-8 and int8 TP 1-8) fitted without that row:
    median error within 5%, each within 15%."""
    pytest.importorskip("scipy")
    result = validate(load_profile("a100"))
    rows = [r for r in result.rows if r.model.lower().startswith("mixtral")]
    assert len(rows) == 7
    assert all(r.batch == 1 for r in rows)
    errors = [abs(r.loo_error) for r in rows]
    assert statistics.median(errors) < 0.05
    assert max(errors) < 0.15
    assert (measurements_dir() / "gpt-fast-readme-tp-quant-mixtral.yaml").is_file()
