"""Data-parallel attention with expert parallelism (SGLang's and vLLM's DeepSeek-V3 deployments):
what one GPU computes and sends, checked against hand arithmetic from the DeepSeek-V3 config
(hidden 7,168; MLA with q_lora 1,536, kv_lora 512, 128 heads of 128 + 64 RoPE dims, v 128; 3 dense
layers of width 18,432 then 58 MoE layers of 256 routed experts, top-8, one shared expert, all of
width 2,048; vocabulary 129,280)."""

from __future__ import annotations

import pytest

from llm_cost.core.errors import InputError
from llm_cost.core.types import Dtype, OpKind, OpRole
from llm_cost.model.layout import Layout, per_gpu
from llm_cost.specs.load import load_model
from llm_cost.workload.step import build_step, prefill

V3 = load_model("deepseek-v3")
d, V, L_MOE, L_DENSE, K, E = 7168, 129_280, 58, 3, 8, 256

# Matmul weights per layer (DeepSeek-V3 config; DeepSeek-V2 paper §2.1 for the MLA projections).
MLA = (
    d * 1536  # q_a_proj
    + 1536 * 128 * (128 + 64)  # q_b_proj
    + d * (512 + 64)  # kv_a_proj_with_mqa
    + 512 * 128 * (128 + 128)  # kv_b_proj
    + 128 * 128 * d  # o_proj
)
EXPERT = 3 * d * 2048  # gate, up, down of one expert (routed or shared)
DENSE_MLP = 3 * d * 18_432
ROUTER = E * d
# Weight FLOPs of one token, without the LM head (2 per multiply-add; k = 8 routed experts).
NON_ROUTED_PER_TOKEN = 2 * (61 * MLA + L_DENSE * DENSE_MLP + L_MOE * (ROUTER + EXPERT))
ROUTED_PER_TOKEN = 2 * L_MOE * K * EXPERT
LM_HEAD_PER_ROW = 2 * V * d


def _weight_flops(step) -> int:
    return step.total("flops", (OpKind.GEMM,))


def test_one_gpu_prefill_of_8_prompts_is_1_14e15_weight_flops():
    """8 x 2,000 tokens on one GPU: 16,000 tokens through every non-routed matmul and 8 of the 256
    experts, the LM head on the last position of each prompt: 1.142e15 FLOPs (issue 23)."""
    tokens = 8 * 2000
    expected = tokens * (NON_ROUTED_PER_TOKEN + ROUTED_PER_TOKEN) + 8 * LM_HEAD_PER_ROW
    assert expected == 1_142_348_201_328_640
    assert _weight_flops(build_step(V3, prefill(8, 2000), weight_bits=8)) == expected


def test_dp32_ep32_gpu_does_its_replicas_share_of_the_expert_work():
    """--batch 256 --dp 32 --ep 32: each DP replica (one GPU, TP 1) runs attention, the dense layers,
    the shared expert and the LM head for its own 256 / 32 = 8 prompts. The routed experts are spread
    whole over all 32 GPUs (8 each); every GPU's experts receive the rows all 32 replicas route to
    them. With balanced routing a GPU's 8 experts take 8/256 of all 256 x 2,000 x 8 routed rows:
    512,000 x 8 / 32 = 128,000 rows = its own replica's 16,000 tokens x 8. So a GPU counts exactly
    the weight FLOPs of the 8 prompts on one GPU without a layout (1.142e15), not 1/32 of the routed
    part (5.09e14, the count issue 23 reported)."""
    layout = Layout(dp=32, ep=32)
    step = build_step(V3, prefill(256, 2000), layout=layout, weight_bits=8)
    replica_tokens, all_tokens = 8 * 2000, 256 * 2000
    routed_rows_per_gpu = all_tokens * K // 32
    assert routed_rows_per_gpu == replica_tokens * K
    expected = (
        replica_tokens * NON_ROUTED_PER_TOKEN + routed_rows_per_gpu * (ROUTED_PER_TOKEN // K) + 8 * LM_HEAD_PER_ROW
    )
    assert _weight_flops(step) == expected == 1_142_348_201_328_640
    routed = [op for op in step.ops if op.role == OpRole.ROUTED_EXPERTS]
    assert sum(op.flops for op in routed) == all_tokens * ROUTED_PER_TOKEN // 32


def test_dp32_ep32_all_to_all_per_gpu():
    """Each GPU dispatches its replica's 16,000 tokens to k = 8 experts, 31/32 of them on other GPUs,
    7,168 elements at FP8 (1 B: the step computes in FP8, as DeepSeek-V3 serves), and sends back as many expert outputs at BF16 (2 B) in the combine,
    in each of the 58 MoE layers: 16,000 x 8 x 31/32 x 7,168 x 3 B x 58 = 154,656,768,000 B per GPU,
    in two calls per layer (the dispatch and the combine kernels)."""
    step = build_step(V3, prefill(256, 2000), layout=Layout(dp=32, ep=32), weight_bits=8, compute_dtype=Dtype.FP8)
    (a2a,) = [op for op in step.ops if op.role == OpRole.EP_ALL_TO_ALL]
    assert a2a.layers == 2 * L_MOE
    assert a2a.collective.ranks == 32
    assert a2a.comm_bytes == 16_000 * 8 * 31 * 7168 * 3 * 58 // 32 == 154_656_768_000


def test_tp8_ep8_all_to_all_splits_the_tokens_over_the_tp_ranks():
    """EP 8 over TP 8 (DP 1): the replica's tokens are split over its 8 ranks for the dispatch, so a
    GPU sends 1/8 of 1,024 tokens x 8 experts x 7/8 remote x 7,168 x 3 B per MoE layer, half of it
    in each of the layer's two calls (dispatch, combine)."""
    step = build_step(V3, prefill(1, 1024), layout=Layout(tp=8, ep=8), weight_bits=8, compute_dtype=Dtype.FP8)
    (a2a,) = [op for op in step.ops if op.role == OpRole.EP_ALL_TO_ALL]
    assert a2a.collective.bytes_per_call * 2 == 1024 * 8 * 7 * 7168 * 3 // (8 * 8)


def test_eplb_redundant_experts_ep72_over_256_plus_32_slots():
    """EPLB (DeepSeek's expert-parallel load balancer): 256 experts + 32 redundant copies = 288 slots,
    4 per GPU over EP 72. The copies cost memory (4 experts per GPU, not 256/72), not FLOPs: the
    routed work still splits 72 ways."""
    layout = Layout(dp=72, ep=72, redundant_experts=32)
    held = per_gpu(V3, layout, weight_bits=8)
    assert held.expert_bytes[0] == L_MOE * 4 * EXPERT  # 4 whole experts per MoE layer at 1 B per weight
    step = build_step(V3, prefill(72, 1000), layout=layout, weight_bits=8)
    routed = sum(op.flops for op in step.ops if op.role == OpRole.ROUTED_EXPERTS)
    assert routed == 72 * 1000 * ROUTED_PER_TOKEN // 72
    with pytest.raises(InputError) as err:
        per_gpu(V3, Layout(dp=72, ep=72), weight_bits=8)
    # any mends it: 256 + 32 = 72 x 4, or an EP (tp x dp) that divides 256
    assert err.value.fields == ("ep", "redundant_experts", "tp", "dp")
    assert "32 redundant experts at ep 72" in str(err.value)


def test_redundant_experts_on_the_command_line(cli):
    """--redundant-experts reaches the layout of roofline, fit and params; without it EP 72 is refused."""
    args = ["deepseek-v3", "--dp", "72", "--ep", "72"]
    ok = cli("roofline", *args, "--gpu", "h100", "--phase", "prefill", "--seq", "1000", "--batch", "72",
             "--redundant-experts", "32", "--json")  # fmt: skip
    assert ok.code == 0, ok.err
    assert ok.json()["weight_flops"] == pytest.approx(
        1000 * (NON_ROUTED_PER_TOKEN + ROUTED_PER_TOKEN) + LM_HEAD_PER_ROW, rel=1e-12
    )
    assert cli("fit", *args, "--gpu", "h100", "--redundant-experts", "32").code == 0
    assert cli("params", *args, "--redundant-experts", "32").code == 0
    refused = cli("roofline", *args, "--gpu", "h100")
    assert refused.code == 2 and "--ep" in refused.err


def test_issue_23_command_counts_the_one_gpu_work(cli):
    """`roofline deepseek-v3 --gpu h100 --phase prefill --seq 2000 --batch 256 --dp 32 --ep 32` and
    `--batch 8` without a layout print the same weight FLOPs, 1.142e15 (the arithmetic above)."""
    common = ["roofline", "deepseek-v3", "--gpu", "h100", "--phase", "prefill", "--seq", "2000", "--json"]
    layout = cli(*common, "--batch", "256", "--dp", "32", "--ep", "32").json()
    one = cli(*common, "--batch", "8").json()
    assert layout["weight_flops"] == one["weight_flops"] == 1_142_348_201_328_640
    assert layout["comm_bytes"] == 154_656_768_000


@pytest.mark.parametrize(
    ("model", "tp", "dp", "redundant", "none"),
    [
        ("qwen3-30b-a3b", 4, 1, 3, True),  # 131 slots: prime
        ("deepseek-v3", 1, 4, 3, False),  # 259 = 7 x 37
        ("deepseek-v3", 2, 4, 3, True),  # 259 is odd
        ("qwen3-30b-a3b", 1, 8, 5, False),  # 133 = 7 x 19
        ("deepseek-v3", 4, 3, 0, False),  # EP 4 (dp 1) up to 256
    ],
)
def test_an_ep_that_does_not_divide_the_slots_suggests_only_layouts_that_run(model, tp, dp, redundant, none):
    """EP is tp x dp, so an EP size is a suggestion only at the layout's tp: 128 experts + 3
    redundant at tp 4 had been told 'EP sizes that do: 131', which no dp at tp 4 makes (a trial).
    Every EP size and redundant count the refusal names is a layout ``llm_cost.fit`` takes."""
    import re

    import llm_cost

    with pytest.raises(InputError) as err:
        llm_cost.fit(model, "h100", layout=Layout(tp=tp, dp=dp, ep=tp * dp, redundant_experts=redundant))
    message = str(err.value)
    sizes = re.search(r"EP sizes that do at tp \d+ \(dp = EP / tp\): ([\d, ]+);", message)
    assert (sizes is None) == none and (sizes is not None or f"no EP size at tp {tp} does" in message), message
    for ep in [int(e) for e in sizes.group(1).split(", ")] if sizes else []:
        assert ep % tp == 0
        llm_cost.fit(model, "h100", layout=Layout(tp=tp, dp=ep // tp, ep=ep, redundant_experts=redundant))
    counts = re.search(rf"or ([\d or]+) redundant experts? at ep {tp * dp}$", message)
    assert counts is not None, message
    for r in [int(c) for c in counts.group(1).split(" or ")]:
        llm_cost.fit(model, "h100", layout=Layout(tp=tp, dp=dp, ep=tp * dp, redundant_experts=r))
