"""Multi-GPU layouts: every rule with a value derived by hand in its docstring."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.analyses.capacity import DOCUMENTS
from llm_cost.analyses.deployment import smallest_layouts
from llm_cost.analyses.training import parallel_train_memory
from llm_cost.core.errors import InputError
from llm_cost.model.layout import Layout, per_gpu, stage_layers
from llm_cost.perf.timemodel import RooflineBound
from llm_cost.specs.load import load_gpu, load_model
from llm_cost.workload.step import build_step, decode


def test_llama3_70b_tp2_weights_per_gpu():
    """Llama-3-70B, TP = 2, BF16. Per layer on one GPU: W_Q and W_O 2 x 8192 x 8192 / 2 = 67,108,864;
    W_K and W_V 2 x 8192 x 1024 / 2 = 8,388,608; SwiGLU 3 x 8192 x 28672 / 2 = 352,321,536; two
    norms replicated 16,384: 427,835,392 x 80 layers = 34,226,831,360; embedding and LM head
    vocabulary-parallel 2 x 128,256 x 8,192 / 2 = 1,050,673,152; final norm 8,192.
    Total 35,277,512,704 parameters = 70,555,025,408 B (70.56 GB)."""
    p = per_gpu(load_model("llama3-70b"), Layout(tp=2))
    assert p.weight_bytes == [70_555_025_408]


def test_llama3_70b_tp2_kv_per_gpu():
    """8 KV heads / TP 2 = 4 per GPU: 2 (K, V) x 4 x 128 x 2 B x 80 layers = 163,840 B = 160 KiB."""
    p = per_gpu(load_model("llama3-70b"), Layout(tp=2))
    assert p.kv_bytes_per_token == [163_840] and p.kv_heads_per_gpu == 4


def test_llama3_70b_tp32_replicates_kv_heads():
    """TP 32 > 8 KV heads: each GPU keeps one head (each head on 4 GPUs): 2 x 1 x 128 x 2 B x 80 =
    40,960 B per token per GPU, 32 x 40,960 = 1,310,720 B across the 32 GPUs (4x the 327,680 B
    of the unsharded cache)."""
    p = per_gpu(load_model("llama3-70b"), Layout(tp=32))
    assert p.kv_bytes_per_token == [40_960] and p.kv_replication == 4
    assert 32 * p.kv_bytes_per_token[0] == 1_310_720


def test_pipeline_stages_split_layers_and_place_embedding_and_head():
    """Llama-3-8B, PP 3: 32 layers -> 11, 11, 10. Stage 0 holds the embedding (525,336,576
    parameters) and 11 blocks of 218,112,000; stage 2 holds 10 blocks, the final norm (4,096) and
    the LM head (525,336,576): 2,756,568,576 and 2,706,792,448 parameters, x 2 B."""
    p = per_gpu(load_model("llama3-8b"), Layout(pp=3))
    assert stage_layers(32, 3) == [11, 11, 10]
    assert p.weight_bytes[0] == 2 * (525_336_576 + 11 * 218_112_000)
    assert p.weight_bytes[1] == 2 * 11 * 218_112_000
    assert p.weight_bytes[2] == 2 * (10 * 218_112_000 + 4_096 + 525_336_576)


def test_expert_parallel_spreads_whole_experts():
    """DeepSeek-V3 FP8, TP 8 = EP 8: each GPU holds 256 / 8 = 32 experts per MoE layer:
    32 x 44,040,192 x 58 layers = 81,738,596,352 B of routed experts (1 B each)."""
    p = per_gpu(load_model("deepseek-v3"), Layout(tp=8, ep=8), weight_bits=8)
    assert p.expert_bytes == [32 * 44_040_192 * 58]


@pytest.mark.parametrize("layout,field", [(Layout(tp=3), "tp"), (Layout(pp=33), "pp"), (Layout(ep=2), "ep")])
def test_impossible_dense_layouts(layout, field):
    """Llama-3-8B: 32 query heads are not divisible by 3; 33 stages exceed 32 layers; no experts."""
    with pytest.raises(InputError, match=f"^{field}:"):
        per_gpu(load_model("llama3-8b"), layout)


def test_impossible_moe_layouts():
    """DeepSeek-V3: EP must be 1 or TP x DP (here 8); 256 experts + 1 redundant do not divide by 8."""
    v3 = load_model("deepseek-v3")
    with pytest.raises(
        InputError, match=r"^ep: 4 must be 1 or tp x dp, .* \(8 x 1 = 8 here\); give a tp and dp whose product is 4"
    ):
        per_gpu(v3, Layout(tp=8, ep=4))
    with pytest.raises(InputError, match="^ep: 8 does not divide 256 experts"):
        per_gpu(v3, Layout(tp=8, ep=8, redundant_experts=1))


def test_an_ep_that_divides_no_expert_slots_is_refused_for_that_first():
    """A new user's trial: Mixtral (8 experts) at tp 2, dp 1, ep 3 was told to give a tp and dp
    whose product is 3 (dp 3 with tp 1), which was then refused because 3 does not divide 8 experts.
    The refusal now names the experts and the EP sizes that divide them at tp 2, every one of
    which loads (EP = tp x dp)."""
    mixtral = load_model("mixtral-8x7b")
    with pytest.raises(InputError, match=r"^ep: 3 does not divide 8 experts .*at tp 2 \(dp = EP / tp\): 2, 4, 8;") as e:
        per_gpu(mixtral, Layout(tp=2, dp=1, ep=3))
    assert "whose product is 3" not in str(e.value)
    for ep in (2, 4, 8):
        per_gpu(mixtral, Layout(tp=2, dp=ep // 2, ep=ep))  # each size named loads


def test_tp_all_reduce_bytes():
    """Llama-3-70B, TP 2, one token: 2 all-reduces per layer x 80 layers x ring factor 2(2-1)/2 = 1
    x 8,192 x 2 B = 2,621,440 B per GPU; at NVLink 4's 450 GB/s per direction: 5.83 us."""
    step = build_step(load_model("llama3-70b"), decode(1, 0), layout=Layout(tp=2))
    assert step.total("comm_bytes") == 2_621_440
    assert RooflineBound().step_time(step, load_gpu("h100")).link_s == pytest.approx(2_621_440 / 450e9)


def test_fit_llama3_70b_needs_two_h100(cli):
    """141.1 GB of BF16 weights exceed one 80 GB H100; on two, each holds 70.56 GB plus 1.25 GiB of
    KV at 8K (8,192 x 160 KiB): 71.9 GB < 80 GB."""
    r = cli("fit", "llama3-70b", "--gpu", "h100", "--context", "8K", "--reserve-gb", "0")
    assert r.code == 0 and "smallest layouts: 2 x" in r.out
    data = cli("fit", "llama3-70b", "--gpu", "h100", "--context", "8K", "--json").json()
    assert min(d["layout"]["gpus"] for d in data["smallest_layouts"]) == 2


def test_fit_deepseek_v3_fp8_on_h200_needs_five():
    """671.03 GB in FP8 (MTP not loaded for serving) over H200s of 141 GB: 4 GPUs hold at most
    564 GB. 5 can, only as PP 5 (TP 5 does not divide 128 heads): stages of 13, 12, 12, 12, 12
    layers; the fullest is the last, 12 MoE layers of 11,507,286,272 parameters (attention
    187,105,280 + norms 16,384 + router 1,835,264 + 256 experts 11,274,289,152 + shared expert
    44,040,192) = 138,087,435,264 B, plus the LM head 926,679,040 B, the final norm 7,168 B and
    8K of latent KV 12 x 1,152 x 8,192 = 113,246,208 B: 139,127,367,680 B < 141e9 B (the
    datasheet's GB, all of it: the documents' convention)."""
    only = smallest_layouts(load_model("deepseek-v3"), load_gpu("h200"), weight_bits=8, policy=DOCUMENTS)[0]
    assert (only.layout.gpus, only.layout.tp, only.layout.pp) == (5, 1, 5)
    assert only.used_bytes == 138_087_435_264 + 926_679_040 + 7_168 + 113_246_208


def test_fit_deepseek_v3_fp8_on_h200_as_an_engine_sees_it():
    """Under an engine's accounting an H200 offers 141 GiB x 0.9 = 136.26 GB less a 1 GiB reserve
    and the workspace: PP 5's fullest stage (139.13 GB) no longer fits, so 6 GPUs are the fewest."""
    only = smallest_layouts(load_model("deepseek-v3"), load_gpu("h200"), weight_bits=8)[0]
    assert only.layout.gpus == 6 and 141 * 2**30 * 9 // 10 < 139_127_367_680


def test_fit_lists_nothing_when_max_gpus_too_small(cli):
    r = cli("fit", "deepseek-v3", "--gpu", "h100", "--max-gpus", "4")
    assert r.code == 0 and "no layout of up to 4" in r.out


@settings(max_examples=15, deadline=None)
@given(
    st.sampled_from(["llama3-8b", "mixtral-8x7b", "deepseek-v3", "qwen3-next-80b-a3b", "qwen2-vl-7b"]),
    st.integers(1, 48),
)
def test_pipeline_stages_add_up_to_the_model(name, pp):
    """Without TP, the stages together hold every stored parameter exactly once (MTP modules only
    when asked for: training, or serving with MTP drafts)."""
    from llm_cost.model.structure import build

    spec = load_model(name)
    pp = min(pp, spec.num_hidden_layers)
    s = build(spec)
    assert sum(per_gpu(spec, Layout(pp=pp), mtp=True).weight_bytes) == 2 * (s.total_params + s.mtp_params)
    assert sum(per_gpu(spec, Layout(pp=pp)).weight_bytes) == 2 * s.total_params  # serving: no MTP


def test_training_memory_zero_stages():
    """Llama-3-70B, TP 8, PP 1: 8,820,367,360 parameters per GPU (attention and MLP / 8, norms
    replicated). ZeRO-1 over DP 64: 4 B + 12 B / 64 per parameter = 36,935,288,320 B;
    ZeRO-3: 16 B / 64 = 2,205,091,840 B."""
    spec, h100 = load_model("llama3-70b"), load_gpu("h100")
    z1 = parallel_train_memory(spec, h100, tp=8, dp=64, zero=1)
    z3 = parallel_train_memory(spec, h100, tp=8, dp=64, zero=3)
    assert z1.params_per_gpu == 8_820_367_360
    assert z1.state_bytes == pytest.approx(4 * 8_820_367_360 + 12 * 8_820_367_360 / 64)
    assert z3.state_bytes == pytest.approx(16 * 8_820_367_360 / 64)


def test_sequence_parallel_divides_activations():
    """Korthikanti et al.: with SP every term of sbh(34 + 5as/h) is divided by t."""
    from llm_cost.analyses.memory import activation_memory

    spec = load_model("llama3-8b")
    plain = activation_memory(spec, 4096, 1, "none")
    sp = activation_memory(spec, 4096, 1, "none", tp=8, sequence_parallel=True)
    assert sp.bytes_per_layer == plain.bytes_per_layer / 8


def test_smallest_training_cluster(cli):
    """Llama-3-70B at ZeRO-3 on H100s, TP 8, selective recompute, SP, s = 8K: activations 80 x
    34 x 8192 x 8192 / 8 x 2^0 bytes = 22.8 GB; state 16 B x 8.82e9 / DP must fit in the remaining
    57.2 GB: DP >= 2.47, so 3 replicas (24 GPUs)."""
    data = cli(
        "train",
        "llama3-70b",
        "--tokens",
        "1T",
        "--mfu",
        "0.4",
        "--tp",
        "8",
        "--dp",
        "64",
        "--zero",
        "3",
        "--recompute",
        "selective",
        "--sequence-parallel",
        "--json",
    ).json()
    assert data["parallel"]["smallest_dp"] == 3


@pytest.mark.parametrize(
    "args,needle",
    [
        (["params", "llama3-8b", "--tp", "3"], "--tp"),
        (["kv", "llama3-70b", "--tp", "12"], "--tp"),
        (["fit", "llama3-8b", "--pp", "40"], "--pp"),
        (["roofline", "deepseek-v3", "--tp", "8", "--ep", "3"], "--ep"),
        (["params", "llama3-8b", "--tp", "0"], "--tp"),
        (["train", "llama3-8b", "--tokens", "1T", "--mfu", "0.4", "--tp", "2", "--gpus", "3"], "--gpus"),
        (["train", "llama3-8b", "--tokens", "1T", "--mfu", "0.4", "--tp", "2", "--zero", "4"], "--zero"),
    ],
)
def test_impossible_layouts_exit_2(cli, args, needle):
    r = cli(*args)
    assert r.code == 2 and needle in r.err and r.out == "", (r.code, r.err)


@pytest.mark.parametrize("name", ["mistral-7b", "qwen3-next-80b-a3b", "deepseek-v3", "llama3-8b"])
@pytest.mark.parametrize("context", [1, 4096, 32768])
def test_stage_kv_on_one_gpu_is_the_kv_command_s(name, context):
    """Sliding windows (Mistral's 4,096), linear-attention state and MLA latents: one GPU's stage
    holds exactly what `kv` reports for one sequence."""
    from llm_cost.model.kv import kv_bytes
    from llm_cost.model.layout import stage_kv_bytes

    spec = load_model(name)
    assert stage_kv_bytes(spec, Layout(), context) == [kv_bytes(spec, context)]


def test_fit_layout_table_caps_kv_at_the_window(cli):
    """Mistral-7B at 32K keeps its 4,096-token window: 32 layers x 2 x 8 x 128 x 2 B x 4,096 = 512 MiB
    per sequence, in the layout table too."""
    data = cli("fit", "mistral-7b", "--gpu", "a100-40gb", "--context", "32K", "--json").json()
    assert data["smallest_layouts"][0]["kv_bytes_per_gpu"] == 512 * 2**20
