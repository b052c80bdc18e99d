"""Grouped MoE GEMMs are timed by the tokens each expert multiplies (the M of its GEMM, tile-quantised
per expert), not by the batch's tokens; their activations are those of every routed copy; under
expert parallelism the most loaded rank sets the layer. Checked by hand for Mixtral-8x7B, and the
grouped GEMM's form against DeepGEMM's published grouped-GEMM rates."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from llm_cost.api import choices
from llm_cost.core.types import OpKind, OpRole
from llm_cost.perf import calibrated as cal
from llm_cost.specs.load import load_gpu, load_model
from llm_cost.workload.routing import hottest_rank_factor
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


def test_each_routed_copy_moves_its_own_rows():
    """By hand: at 64 sequences each token goes to 2 experts, so the gate projection (4,096 in,
    14,336 out, 32 layers) reads 128 input rows and writes 128 output rows of BF16 per layer:
    128 x (4,096 + 14,336) x 2 B x 32; a dense projection of the same shape would move 64 rows."""
    step = build_step(load_model("mixtral-8x7b"), decode(64, 1024))
    gate = next(op for op in step.ops if op.role == OpRole.ROUTED_EXPERTS and op.name.endswith("gate_proj.weight"))
    assert gate.activation_bytes == 128 * (4096 + 14336) * 2 * 32


def test_the_expert_gemm_computes_whole_tiles_of_its_own_rows():
    """The compute term of a routed-expert gate GEMM, worked by hand: 32 sequences x top-2 = 64
    copies over the 8 (1 - 0.75^32) experts hit, 64 / (8 (1 - 0.75^32)) = 8.0008 rows each, run in
    one 16-row tile per expert (perf.calibrated.grouped_tile_m), so the FLOPs count 16 / 8.0008
    times; the 8 (1 - 0.75^32) experts x 112 column tiles of 14,336 (896 tiles, the expected experts
    a fraction short of 8) run in 7 waves of the H100's 132 SMs (924 tile slots); at the profile's
    16-bit GEMM share x the engine's grouped-GEMM share of 989.4 TFLOP/s."""
    gpu = load_gpu("h100")
    model = choices.time_model_of(gpu)
    q = model.profile.parameters
    step = build_step(load_model("mixtral-8x7b"), decode(32, 1024))
    times = {t.name: t for t in model.step_time(step, gpu).ops}
    hit = 1 - 0.75**32
    m = 64 / (8 * hit)
    rate = 989.4e12 * q.family.gemm_efficiency_16 * q.engine.moe_gemm_share
    gates = [o for o in step.ops if o.role == OpRole.ROUTED_EXPERTS and o.n == 14336]
    assert len(gates) == 2
    for op in gates:
        by_hand = float(op.flops) * (16 / m) * (924 / (112 * 8 * hit)) / rate
        assert times[op.name].compute_s == pytest.approx(by_hand, rel=1e-9)


#: DeepGEMM's FP8 grouped GEMMs on an H800 (github.com/deepseek-ai/DeepGEMM README, "Grouped GEMMs
#: for MoE models", masked layout): (groups, rows per group, N, K) -> TFLOP/s; and the contiguous
#: layout's large-M rate of each (N, K) (4 groups of 8,192 rows).
DEEPGEMM_MASKED = {
    (1, 1024, 4096, 7168): 1233,
    (1, 1024, 7168, 2048): 925,
    (2, 512, 4096, 7168): 1040,
    (2, 512, 7168, 2048): 916,
    (4, 256, 4096, 7168): 932,
    (4, 256, 7168, 2048): 815,
}
DEEPGEMM_LARGE_M = {(4096, 7168): 1297, (7168, 2048): 1099}


def _grouped_rate(groups: int, rows: int, n: int, k: int, params: object) -> float:
    """FLOP/s of a grouped FP8 GEMM on the H800 by the calibrated model's forms at ``params``."""
    gpu = load_gpu("h800")
    f = params.family  # type: ignore[attr-defined]
    flops = 2.0 * groups * rows * n * k
    shaped = flops * cal.grouped_gemm_factor(rows, n, groups, gpu.sm_count)
    c, m = cal.gemm_terms(
        shaped, groups * n * k, 0.0, gpu.peak_flops("fp8"), gpu.bandwidth_bytes_s, f.gemm_efficiency_8,
        f.bandwidth_efficiency, 1.0, 1.0,
    )  # fmt: skip
    return flops / cal.smooth_max(c, m, f.overlap_p)


def test_grouped_gemms_run_as_dense_gemms_of_their_shape():
    """DeepGEMM's masked-layout rates, as a share of the same shape's large-M rate (0.72-0.95 for
    N 4096, K 7168 at 256-1,024 rows per group), are what the model's tile quantisation and
    compute/memory overlap give at the hopper family's fitted parameters, within 15%: no
    per-group ramp beyond them (the earlier rows / (rows + 115) ramp on top of the overlap gave
    0.53 at 256 rows)."""
    params = choices.time_model_of(load_gpu("h800")).profile.parameters
    for (groups, rows, n, k), measured in DEEPGEMM_MASKED.items():
        large = _grouped_rate(4, 8192, n, k, params)
        share = _grouped_rate(groups, rows, n, k, params) / large
        assert share == pytest.approx(measured / DEEPGEMM_LARGE_M[(n, k)], rel=0.15), (groups, rows, n, k)


def test_the_hottest_rank_by_hand():
    """8 ranks and 4,096 copies: mean 512, spread sqrt(4,096 x 1/8 x 7/8) = 21.17, so the most
    loaded rank carries 512 + 21.17 sqrt(2 ln 8) = 555.0 rows, 1.084 x the mean."""
    sigma = math.sqrt(4096 * (1 / 8) * (7 / 8))
    assert hottest_rank_factor(4096, 8) == pytest.approx((512 + sigma * math.sqrt(2 * math.log(8))) / 512, rel=1e-12)
    assert hottest_rank_factor(4096, 8) == pytest.approx(1.084, abs=5e-4)
    assert hottest_rank_factor(4096, 1) == 1.0


@given(st.integers(1, 10**7), st.integers(2, 512))
def test_the_hottest_rank_carries_between_the_mean_and_everything(copies: int, ranks: int):
    """Invariant: the most loaded rank carries at least the mean and at most every copy, and
    relatively less the more copies there are (the law of large numbers)."""
    f = hottest_rank_factor(copies, ranks)
    assert 1.0 <= f <= ranks
    assert hottest_rank_factor(copies * 4, ranks) <= f


def test_expert_parallel_steps_wait_for_the_hottest_rank():
    """Under EP the routed GEMMs' compute and activations are the hottest rank's: DeepSeek-V3 on
    8 H200 at attention DP 8 x EP 8 and 64 sequences per rank computes each routed GEMM
    hottest_rank_factor(64 x 8 x 8, 8) times the balanced work; at EP 1 (TP 8) no rank waits."""
    gpu = load_gpu("h200")
    model = choices.time_model_of(gpu, "sglang")
    from llm_cost.model.layout import Layout

    spec = load_model("deepseek-v3")
    step = build_step(spec, decode(512, 2048), layout=Layout(tp=1, dp=8, ep=8), weight_bits=8)
    op = next(o for o in step.ops if o.role == OpRole.ROUTED_EXPERTS)
    assert op.ep_ranks == 8
    load = cal.routed_load(float(op.flops), op.n, op.k, op.layers, op.ep_ranks)
    assert load == pytest.approx(hottest_rank_factor(64 * 8 * 8, 8), rel=1e-12)
    assert model.step_time(step, gpu).time_s > 0
    tp = build_step(spec, decode(64, 2048), layout=Layout(tp=8), weight_bits=8)
    assert all(o.ep_ranks == 1 for o in tp.ops if o.role == OpRole.ROUTED_EXPERTS)
