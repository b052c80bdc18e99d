"""New layer and block kinds, from real configs: parameter totals against independent checkpoint
totals (tests/fixtures/hf-kinds/SOURCES.yaml), cache and state bytes per token and decode FLOPs
per token against hand arithmetic written here from the modeling files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from llm_cost.core.types import Dtype, LayerType, OpRole
from llm_cost.model.kv import kv_bytes, kv_bytes_per_token, kv_cache
from llm_cost.model.params import count_params
from llm_cost.model.structure import build
from llm_cost.specs.hf import hf_to_spec, load_hf_config
from llm_cost.workload.step import SeqGroup, build_step, decode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf-kinds"
SOURCES = yaml.safe_load((FIXTURES / "SOURCES.yaml").read_text(encoding="utf-8"))
FOLDERS = sorted(p.name for p in FIXTURES.iterdir() if (p / "config.json").is_file())


def _spec(name: str):
    return load_hf_config(FIXTURES / name / "config.json")


def test_every_fixture_has_a_source_and_an_exact_total():
    """Each fixture has an exact main-model total (total_params) or an exact total of everything its
    checkpoint stores (checkpoint_total: the main model plus its MTP layers)."""
    assert set(FOLDERS) == set(SOURCES)
    for name in FOLDERS:
        entry = SOURCES[name]
        assert entry["exact"] and (entry.get("total_params") or entry.get("checkpoint_total"))


@pytest.mark.parametrize("name", FOLDERS)
def test_total_equals_checkpoint(name):
    counted, entry = count_params(_spec(name)), SOURCES[name]
    if entry.get("total_params"):
        assert counted.total_params == entry["total_params"]
    if entry.get("checkpoint_total"):
        assert counted.checkpoint_params == entry["checkpoint_total"]


# -- LFM2: gated short convolutions ----------------------------------------------------------------


def test_lfm2_layers_and_widths_as_lfm2_builds_them():
    """Attention at layers 2, 5, 8, 10, 12, 14, short convolutions elsewhere; the MLP width is
    2/3 of intermediate_size 12288 rounded up to a multiple of 256 (Lfm2MLP): 8192."""
    spec = _spec("lfm2.5-1.2b")
    attention = [i for i in range(16) if spec.layer_type(i) == LayerType.FULL_ATTENTION]
    assert attention == [2, 5, 8, 10, 12, 14]
    assert {spec.layer_type(i) for i in range(16)} - {LayerType.FULL_ATTENTION} == {LayerType.SHORT_CONV}
    assert spec.mlp.intermediate_size == 256 * -(-(2 * 12288 // 3) // 256) == 8192
    conv = [t for t in build(spec).tensors if t.group == "short_conv"]
    assert {t.name: (t.shape, t.layers) for t in conv} == {
        "layers.*.conv.in_proj.weight": ((3 * 2048, 2048), 10),
        "layers.*.conv.conv.weight": ((2048, 1, 3), 10),
        "layers.*.conv.out_proj.weight": ((2048, 2048), 10),
    }


def test_lfm2_original_keys_give_the_same_model():
    """LFM2-1.2B's first config spelled the same model with block_ff_dim, full_attn_idxs and
    tie_embedding (Lfm2Config reads them); its model card's 1,170,340,608 is the same count."""
    import json

    config = json.loads((FIXTURES / "lfm2.5-1.2b" / "config.json").read_text(encoding="utf-8"))
    for key in ("layer_types", "intermediate_size", "tie_word_embeddings"):
        del config[key]
    config.update(block_ff_dim=12288, full_attn_idxs=[2, 5, 8, 10, 12, 14], tie_embedding=True)
    spec, _ = hf_to_spec(config, "LFM2-1.2B/config.json")
    assert count_params(spec).total_params == 1_170_340_608


def test_lfm2_cache_and_conv_state_by_hand():
    """KV per token: 6 attention layers x 2 (K, V) x 8 KV heads x 64 x 2 B. Conv state: each of
    the 10 short-conv layers keeps the last conv_L_cache - 1 = 2 inputs of its d = 2048 channels,
    per sequence, not per token."""
    spec = _spec("lfm2.5-1.2b")
    assert kv_bytes_per_token(spec, 16) == 6 * 2 * 8 * 64 * 2 == 12_288
    conv_state = 10 * 2048 * (3 - 1) * 2
    assert conv_state == 81_920
    assert kv_bytes(spec, 4096, 16) == 4096 * 12_288 + conv_state
    kv = kv_cache(spec, [4096])
    row = next(k for k in kv.layer_kinds if k.layer_type == LayerType.SHORT_CONV)
    assert (row.layers, row.bytes_per_token, row.state_bytes, row.conv_state_bytes) == (10, 0, 0, 2048 * 2 * 2)


def test_lfm2_decode_flops_per_token_by_hand():
    """One decode token at context 1000: 2 FLOPs per matmul weight (attention 6 x (2 x 2048^2 + 2 x
    2048 x 512), conv in/out_proj 10 x (3 + 1) x 2048^2, MLP 16 x 3 x 2048 x 8192, the tied LM head
    65536 x 2048), attention 6 layers x 2 x 32 heads x (64 + 64) x 1001 keys, and the short
    convolutions 10 x (2 x 2048 x 3 taps + 2 x 2048 gate products)."""
    spec = _spec("lfm2.5-1.2b")
    d = 2048
    matmul = 6 * (2 * d * d + 2 * d * 512) + 10 * 4 * d * d + 16 * 3 * d * 8192 + 65536 * d
    attention = 6 * 2 * 32 * (64 + 64) * 1001
    conv = 10 * (2 * d * 3 + 2 * d)
    step = build_step(spec, decode(1, 1000))
    assert step.flops == 2 * matmul + attention + conv
    (op,) = [o for o in step.ops if o.role == OpRole.SHORT_CONV]
    assert (op.flops, op.kv_read_bytes) == (conv, 10 * d * 2 * 2)


# -- Nemotron 3: MoE blocks in nemotron_h ------------------------------------------------------


def test_nemotron3_nano_moe_blocks_as_nemotron_h_builds_them():
    """23 E blocks: a router [128, d] with its correction bias, 128 routed experts of up_proj /
    down_proj only (NemotronHExperts, relu2) and one shared up/down MLP of 3712."""
    spec = _spec("nemotron-3-nano-30b-a3b")
    d = 2688
    moe = {t.name: (t.shape, t.layers, t.copies) for t in build(spec).tensors if t.layer_kind == "moe"}
    assert moe == {
        "layers.*.mlp.gate.weight": ((128, d), 23, 1),
        "layers.*.mlp.gate.bias": ((128,), 23, 1),
        "layers.*.mlp.experts.*.up_proj.weight": ((1856, d), 23, 128),
        "layers.*.mlp.experts.*.down_proj.weight": ((d, 1856), 23, 128),
        "layers.*.mlp.shared_experts.up_proj.weight": ((3712, d), 23, 1),
        "layers.*.mlp.shared_experts.down_proj.weight": ((d, 3712), 23, 1),
    }


def test_nemotron3_nano_cache_and_state_by_hand():
    """KV per token: 6 attention layers x 2 x 2 KV heads x 128 x 2 B. Each of the 23 Mamba-2 layers
    keeps an SSM state of 64 heads x 64 x 128 and a conv state of (64 x 64 + 2 x 8 x 128) x (4 - 1)
    per sequence."""
    spec = _spec("nemotron-3-nano-30b-a3b")
    assert kv_bytes_per_token(spec, 16) == 6 * 2 * 2 * 128 * 2 == 6144
    state = 23 * (64 * 64 * 128 + (64 * 64 + 2 * 8 * 128) * 3) * 2
    assert kv_bytes(spec, 8192, 16) == 8192 * 6144 + state


def test_nemotron3_nano_decode_flops_per_token_by_hand():
    """One decode token at context 4095: 2 FLOPs per weight it multiplies by (6 attention blocks of
    q [4096], k and v [256], o; 23 Mamba-2 in_proj [2 x 4096 + 2 x 8 x 128 + 64] and out_proj; 23 MoE
    blocks of router, 6 of the 128 routed experts and the shared expert; the LM head), attention
    6 x 2 x 32 heads x (128 + 128) x 4096 keys, the Mamba-2 recurrence 23 x (6 x 64 x 64 x 128 +
    2 x 6144 x 4)."""
    spec = _spec("nemotron-3-nano-30b-a3b")
    d = 2688
    attention_w = 6 * (d * 4096 + 2 * d * 256 + 4096 * d)
    mamba_w = 23 * (d * (2 * 4096 + 2 * 8 * 128 + 64) + 4096 * d)
    moe_w = 23 * (128 * d + 6 * 2 * d * 1856 + 2 * d * 3712)
    head = 131072 * d
    step = build_step(spec, decode(1, 4095))
    assert step.flops == 2 * (attention_w + mamba_w + moe_w + head) + 6 * 2 * 32 * 256 * 4096 + 23 * (
        6 * 64 * 64 * 128 + 2 * 6144 * 4
    )


# -- DeepSeek Sparse Attention: GLM-5.1 and DeepSeek-V3.2-Exp --------------------------------------

#: One lightning indexer of GLM-5.1, by hand from DeepseekV32Indexer / GlmMoeDsaIndexer: wq_b
#: [2048 -> 32 x 128], wk [6144 -> 128], k_norm weight and bias [128], weights_proj [6144 -> 32].
GLM5_INDEXER = 2048 * 32 * 128 + 6144 * 128 + 2 * 128 + 6144 * 32


def test_glm5_indexer_tensors_and_the_mtp_layer():
    """78 indexers in the main model and one in the MTP layer, whose checkpoint tensors hold no
    embedding or head copy (the Hub total is main model + MTP layer)."""
    spec = _spec("glm-5.1")
    s = build(spec)
    indexer = [t for t in s.tensors if ".indexer." in t.name and t.part == "decoder"]
    assert sum(t.total for t in indexer) == 78 * GLM5_INDEXER
    assert s.mtp_copies == 0 and spec.mtp.checkpoint_stores_shared is False


def test_glm5_cache_per_token_by_hand():
    """Per token, each of the 78 layers caches the latent and RoPE key, (512 + 64) x 2 B at bf16, and
    the indexer's key: 128 FP8 bytes and one fp32 scale per 128 elements (4 B): vLLM's "128 fp8 + 4
    fp32 scale = 132"."""
    spec = _spec("glm-5.1")
    assert kv_bytes_per_token(spec, 16) == 78 * ((512 + 64) * 2 + 128 + 4) == 100_152
    assert kv_bytes_per_token(spec, 8) == 78 * ((512 + 64) + 132)
    assert kv_bytes(spec, 10_000, 16, batch=2) == 2 * 10_000 * 100_152


def test_glm5_decode_attends_to_the_top_k_and_the_indexer_scans_every_key():
    """One decode token after 9,999 cached: the attention (absorbed MLA, d_qk 576, d_v 512, 64 heads)
    sees index_topk = 2048 of the 10,000 keys and reads those latents; the indexer scores all
    10,000 (2 x 32 heads x (128 + 1) FLOPs each) and reads every cached indexer key. Weight FLOPs:
    2 per weight of the attention and indexer projections, 3 dense MLPs, 75 MoE layers (router, 8 of
    256 experts, the shared expert) and the LM head."""
    spec = _spec("glm-5.1")
    d = 6144
    attention_w = 6144 * 2048 + 2048 * 64 * 256 + 6144 * 576 + 512 * 64 * (192 + 256) + 64 * 256 * 6144
    weights = 78 * (attention_w + GLM5_INDEXER - 2 * 128) + 3 * 3 * d * 12288 + 154880 * d
    weights += 75 * (256 * d + 8 * 3 * d * 2048 + 3 * d * 2048)
    step = build_step(spec, decode(1, 9_999))
    (att,) = [o for o in step.ops if o.role == OpRole.FULL_ATTENTION]
    (idx,) = [o for o in step.ops if o.role == OpRole.SPARSE_INDEXER]
    assert att.flops == 78 * 2 * 64 * (576 + 512) * 2048
    assert att.kv_read_bytes == 78 * 2048 * 576 * 2
    assert idx.flops == 78 * 2 * 32 * (128 + 1) * 10_000
    assert (idx.kv_read_bytes, idx.kv_write_bytes) == (78 * 9_999 * 132, 78 * 132)
    assert step.flops == 2 * weights + att.flops + idx.flops


def test_glm5_prefill_attention_grows_to_the_top_k():
    """A 4096-token prefill: token i attends to min(i, 2048) keys, the indexer to all i."""
    spec = _spec("glm-5.1")
    step = build_step(spec, [SeqGroup(1, 4096, 0)])
    (att,) = [o for o in step.ops if o.role == OpRole.FULL_ATTENTION]
    (idx,) = [o for o in step.ops if o.role == OpRole.SPARSE_INDEXER]
    pairs = 2048 * 2049 // 2 + (4096 - 2048) * 2048
    assert att.flops == 78 * 2 * 64 * (192 + 64 + 256) * pairs  # the plain form in prefill
    assert idx.flops == 78 * 2 * 32 * 129 * (4096 * 4097 // 2)


#: GLM-5.2's shared-indexer schedule (its config.json: index_topk_freq 4, index_skip_topk_offset 3;
#: GlmMoeDsaConfig: layer i runs its indexer when max(i - 2, 0) % 4 == 0): 21 of 78 layers.
GLM52 = {"index_topk_freq": 4, "index_skip_topk_offset": 3}
GLM52_FULL = [0, 1, *range(2, 78, 4)]


def _glm52():
    import json

    from llm_cost.specs.hf import hf_to_spec

    config = json.loads((FIXTURES / "glm-5.1" / "config.json").read_text(encoding="utf-8"))
    return hf_to_spec({**config, **GLM52}, "glm-5.2/config.json")[0]


def test_glm52_shared_layers_hold_no_indexer_and_the_total_is_the_hubs():
    """GLM-5.2 has GLM-5.1's shapes (SOURCES.yaml glm-5.1 notes) with 57 layers that reuse an earlier
    layer's top-k: the Hub API's safetensors total of zai-org/GLM-5.2, 753,329,940,480 (BF16
    753,329,921,024 + F32 19,456; quoted from https://huggingface.co/api/models/zai-org/GLM-5.2 in a
    public architecture note, untraced index reference 58123340717), is GLM-5.1's 753,864,139,008
    less 57 indexers; the MTP layer keeps its own."""
    spec = _glm52()
    assert sorted(set(range(78)) - set(spec.attention.indexer.shared_layers)) == GLM52_FULL
    r = count_params(spec)
    assert r.checkpoint_params == 753_329_940_480 == 753_864_139_008 - 57 * GLM5_INDEXER


def test_glm52_cache_and_decode_by_hand():
    """Only the 21 indexed layers cache an indexer key (132 B) and run the indexer; all 78 attend to
    the top 2,048 keys."""
    spec = _glm52()
    assert kv_bytes_per_token(spec, 16) == 78 * (512 + 64) * 2 + 21 * 132
    step = build_step(spec, decode(1, 9_999))
    (att,) = [o for o in step.ops if o.role == OpRole.FULL_ATTENTION]
    (idx,) = [o for o in step.ops if o.role == OpRole.SPARSE_INDEXER]
    assert att.flops == 78 * 2 * 64 * (576 + 512) * 2048
    assert idx.flops == 21 * 2 * 32 * (128 + 1) * 10_000
    assert (idx.kv_read_bytes, idx.kv_write_bytes) == (21 * 9_999 * 132, 21 * 132)


def test_glm52_pipeline_stages_split_the_indexers_where_they_are():
    """PP 2 over 39 + 39 layers: the first stage holds 12 indexers (0, 1, 2, 6, ..., 38), the second 9 (42, ..., 74)."""
    from llm_cost.model.layers import layer_counts

    spec = _glm52()
    assert layer_counts(spec, range(0, 39)).indexed == 12 and layer_counts(spec, range(39, 78)).indexed == 9


def _deepseek_v32_exp() -> dict:
    """DeepSeek-V3.2-Exp's config: DeepSeek-V3's shapes (it is V3.1-Terminus, V3's layout, trained
    further) with model_type deepseek_v32 and the indexer keys of its inference/config_671B_v3.2.json
    (index_n_heads 64, index_head_dim 128, index_topk 2048)."""
    import json

    v3 = json.loads((FIXTURES.parent / "hf" / "deepseek-v3" / "config.json").read_text(encoding="utf-8"))
    return {
        **v3,
        "model_type": "deepseek_v32",
        "architectures": ["DeepseekV32ForCausalLM"],
        "index_n_heads": 64,
        "index_head_dim": 128,
        "index_topk": 2048,
    }


def test_deepseek_v32_exp_indexers_are_the_hub_difference_to_v3():
    """The Hub's safetensors totals of deepseek-ai/DeepSeek-V3.2-Exp (685,396,921,376) and
    DeepSeek-V3 (684,531,386,000) differ by the 62 indexers (61 layers and the MTP layer) and
    their FP8 block scales: wq_b [8192, 1536] has 64 x 12 fp32 scales of 128 x 128 blocks and wk
    [128, 7168] 1 x 56 (k_norm and weights_proj are kept in bf16, DeepSeek's NVFP4 notes list them
    among the unquantised tensors)."""
    spec, _ = hf_to_spec(_deepseek_v32_exp(), "DeepSeek-V3.2-Exp/config.json")
    v3 = load_hf_config(FIXTURES.parent / "hf" / "deepseek-v3" / "config.json")
    per_layer = 1536 * 64 * 128 + 7168 * 128 + 2 * 128 + 7168 * 64
    scales = 64 * 12 + 1 * 56
    assert 685_396_921_376 - 684_531_386_000 == 62 * (per_layer + scales)
    s = build(spec)
    assert sum(t.total for t in s.tensors if ".indexer." in t.name and t.part == "decoder") == 61 * per_layer
    assert count_params(spec).total_params == count_params(v3).total_params + 61 * per_layer
    assert kv_bytes_per_token(spec, 16) == 61 * ((512 + 64) * 2 + 132)


# -- Kimi Linear: Kimi Delta Attention and MLA -------------------------------------------------------


def test_kimi_linear_kda_tensors_by_hand():
    """One KDA layer (the checkpoint's modeling_kimi.py): q/k/v_proj 3 x 2304 x 4096, three convs
    3 x 4096 x 4, f_a/g_a 2 x 2304 x 128, f_b/g_b 2 x 128 x 4096, dt_bias 4096, A_log 32, b_proj
    2304 x 32, o_norm 128, o_proj 4096 x 2304: 39,514,272 elements, in 20 layers."""
    spec = _spec("kimi-linear-48b-a3b")
    kda = [t for t in build(spec).tensors if t.group == "linear_attention" or t.name.endswith("o_norm.weight")]
    per_layer = 3 * 2304 * 4096 + 3 * 4096 * 4 + 2 * 2304 * 128 + 2 * 128 * 4096 + 4096 + 32 + 2304 * 32
    per_layer += 128 + 4096 * 2304
    assert per_layer == 39_514_272
    assert sum(t.total for t in kda) == 20 * per_layer
    assert [i + 1 for i in range(27) if spec.layer_type(i) == LayerType.FULL_ATTENTION] == [4, 8, 12, 16, 20, 24, 27]


def test_kimi_linear_cache_and_state_by_hand():
    """Per token only the 7 MLA layers cache: (512 + 64) x 2 B each. Per sequence each of the 20 KDA
    layers keeps its 32 x 128 x 128 state and the last 3 inputs of its 3 x 4096 conv channels."""
    spec = _spec("kimi-linear-48b-a3b")
    assert kv_bytes_per_token(spec, 16) == 7 * (512 + 64) * 2 == 8064
    state = 20 * (32 * 128 * 128 + 3 * 4096 * 3) * 2
    assert kv_bytes(spec, 100_000, 16) == 100_000 * 8064 + state


def test_kimi_linear_decode_flops_per_token_by_hand():
    """One decode token at context 4095: 2 FLOPs per weight it uses (20 KDA layers' projections, 7
    MLA layers' q_proj, kv_a, kv_b and o_proj, the dense MLP, 26 MoE layers of router, 8 of 256
    experts and the shared one, the LM head), the MLA attention absorbed (7 x 2 x 32 x (576 + 512) x
    4096 keys), the KDA recurrence 20 x (6 x 32 x 128 x 128 + 2 x 3 x 4096 x 4)."""
    spec = _spec("kimi-linear-48b-a3b")
    d = 2304
    kda_w = 3 * d * 4096 + 2 * d * 128 + 2 * 128 * 4096 + d * 32 + 4096 * d
    mla_w = d * 32 * 192 + d * 576 + 512 * 32 * 256 + 32 * 128 * d
    moe_w = 256 * d + 8 * 3 * d * 1024 + 3 * d * 1024
    weights = 20 * kda_w + 7 * mla_w + 3 * d * 9216 + 26 * moe_w + 163840 * d
    attention = 7 * 2 * 32 * (576 + 512) * 4096
    recurrence = 20 * (6 * 32 * 128 * 128 + 2 * 3 * 4096 * 4)
    step = build_step(spec, decode(1, 4095))
    assert step.flops == 2 * weights + attention + recurrence
    (kda,) = [o for o in step.ops if o.role == OpRole.LINEAR_ATTENTION]
    assert kda.kv_read_bytes == 20 * (32 * 128 * 128 + 3 * 4096 * 3) * 2  # each layer's state, read once


def test_nemotron3_super_latent_moe_against_the_hub_total():
    """Nemotron-3-Super-120B-A12B's real config (latent MoE, 40 M / 40 E / 8 * blocks, MTP "*E"):
    the routed experts work at the latent width 1024. The Hub's BF16 figure 123,611,012,096 and
    its API total 123,611,033,088 (SOURCES.yaml) differ by the 41 routers' 512-entry F32
    correction biases; the MTP module (enorm, hnorm, eh_proj [2d -> d], an attention and a
    latent-MoE block of one norm each, a final norm; no embedding or head copy) by hand here."""
    spec = _spec("nemotron-3-super-120b-a12b")
    pattern = "MEMEMEM*EMEMEMEM*EMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEMEM*EMEMEMEM*EMEMEMEME"
    assert (pattern.count("M"), pattern.count("E"), pattern.count("*")) == (40, 40, 8)
    latent = {t.name: t.shape for t in build(spec).tensors if t.group in ("moe_latent", "routed_experts")}
    assert latent == {
        "layers.*.mlp.fc1_latent_proj.weight": (1024, 4096),
        "layers.*.mlp.fc2_latent_proj.weight": (4096, 1024),
        "layers.*.mlp.experts.*.up_proj.weight": (2688, 1024),
        "layers.*.mlp.experts.*.down_proj.weight": (1024, 2688),
    }
    d = 4096
    attention = d * 32 * 128 + 2 * d * 2 * 128 + 32 * 128 * d
    moe = 512 * d + 2 * d * 1024 + 512 * 2 * 1024 * 2688 + 2 * d * 5376  # without the router bias
    mtp = 2 * d + 2 * d * d + (attention + d) + (moe + d) + d
    counted = count_params(spec)
    assert counted.mtp_params == mtp + 512 and counted.mtp_checkpoint_copies == 0
    assert counted.checkpoint_params == SOURCES["nemotron-3-super-120b-a12b"]["checkpoint_total"] == 123_611_033_088
    assert counted.checkpoint_params - 41 * 512 == 123_611_012_096  # the Hub's BF16 parameters


def test_nemotron3_super_with_its_infinity_line_counts_the_same(tmp_path):
    """The BF16 config's ``"time_step_limit": [0.0, Infinity]`` (Python's JSON dialect, which
    transformers reads) changes no shape: the real config with that line counts the Hub total."""
    text = (FIXTURES / "nemotron-3-super-120b-a12b" / "config.json").read_text(encoding="utf-8")
    text = text.replace(' "time_step_floor"', ' "time_step_limit": [0.0, Infinity],\n "time_step_floor"')
    (tmp_path / "config.json").write_text(text, encoding="utf-8")
    assert "Infinity" in text
    assert count_params(load_hf_config(tmp_path)).checkpoint_params == 123_611_033_088


def test_nemotron3_super_cache_and_state_by_hand():
    """Per token only the 8 attention blocks cache: 2 x 2 KV heads x 128 x 2 B each. Per sequence
    each of the 40 Mamba-2 mixers keeps its SSM state 128 heads x 64 x 128 and a conv state of
    (H P + 2 G N) x (kernel - 1) = (8192 + 2 x 8 x 128) x 3 elements, at 2 B."""
    spec = _spec("nemotron-3-super-120b-a12b")
    assert kv_bytes_per_token(spec, 16) == 8 * 2 * 2 * 128 * 2 == 8192
    state = 40 * (128 * 64 * 128 + (8192 + 2 * 8 * 128) * 3) * 2
    assert kv_bytes(spec, 10_000, 16) == 10_000 * 8192 + state


def test_a_latent_moe_dispatches_the_latent_width():
    """With EP the token goes to its 22 experts at l = 1024 wide (fc1_latent_proj runs before the
    dispatch): 22 x 1024 x (8 + 16) / 8 bytes per token per MoE layer under FP8 compute (FP8
    dispatch), times (ep - 1) / ep^2 sent by one GPU; the moe analysis reports the same 22 x 1024 B
    of FP8 dispatch."""
    import json

    from llm_cost.analyses.moe import moe_analysis
    from llm_cost.model.layout import Layout

    nano = json.loads((FIXTURES / "nemotron-3-nano-30b-a3b" / "config.json").read_text(encoding="utf-8"))
    spec, _ = hf_to_spec({**nano, "moe_latent_size": 1024, "num_experts_per_tok": 22}, "latent/config.json")
    step = build_step(spec, decode(16, 100), layout=Layout(tp=8, ep=8), compute_dtype=Dtype.FP8)
    (a2a,) = [o for o in step.ops if o.role == OpRole.EP_ALL_TO_ALL]
    assert a2a.collective.bytes_per_call * 2 * 64 == 16 * 22 * 1024 * (8 + 16) // 8 * 7  # dispatch + combine calls
    assert moe_analysis(spec, [1], dispatch_bits=8).dispatch_bytes_per_token_per_layer == 22 * 1024


# -- refusals: shape-changing keys the new mappings cannot place -----------------------------------


@pytest.mark.parametrize(
    "name,change,key",
    [
        ("glm-5.1", {"index_topk_freq": 4, "indexer_types": ["full", "shared"] * 39}, "index_topk_freq disagrees"),
        ("glm-5.1", {"indexer_types": ["shared", "full"] * 39}, "indexer_types makes layer 0 shared"),
        ("glm-5.1", {"indexer_types": ["full"] * 77}, "indexer_types has 77 entries but num_hidden_layers is 78"),
        ("lfm2.5-1.2b", {"conv_dim": 1024}, "conv_dim"),
        ("lfm2.5-1.2b", {"block_ffn_dim_multiplier": float("inf")}, r"block_ffn_dim_multiplier .*\(got Infinity\)"),
        ("lfm2.5-1.2b", {"block_ffn_dim_multiplier": float("nan")}, r"block_ffn_dim_multiplier .*\(got NaN\)"),
        ("lfm2.5-1.2b", {"block_ffn_dim_multiplier": 1e308}, "block_ffn_dim_multiplier = 1e[+]308 times"),
        ("nemotron-3-nano-30b-a3b", {"num_nextn_predict_layers": 2}, "num_nextn_predict_layers"),
        ("nemotron-3-nano-30b-a3b", {"mlp_bias": True}, "mlp_bias"),
        ("kimi-linear-48b-a3b", {"moe_layer_freq": 2}, "moe_layer_freq"),
    ],
)
def test_a_shape_the_mapping_cannot_place_is_refused_naming_its_key(name, change, key):
    import json

    from llm_cost.core.errors import SpecError

    config = json.loads((FIXTURES / name / "config.json").read_text(encoding="utf-8"))
    with pytest.raises(SpecError, match=key):
        hf_to_spec({**config, **change}, f"{name}/config.json")


def test_kimi_linear_refuses_a_full_rank_gate_and_a_layer_left_out():
    import json

    from llm_cost.core.errors import SpecError

    config = json.loads((FIXTURES / "kimi-linear-48b-a3b" / "config.json").read_text(encoding="utf-8"))
    full_rank = {**config["linear_attn_config"], "use_full_rank_gate": True}
    with pytest.raises(SpecError, match="use_full_rank_gate"):
        hf_to_spec({**config, "linear_attn_config": full_rank}, "k/config.json")
    short = {**config["linear_attn_config"], "kda_layers": config["linear_attn_config"]["kda_layers"][:-1]}
    with pytest.raises(SpecError, match=r"places no mixer in layers \[26\]"):
        hf_to_spec({**config, "linear_attn_config": short}, "k/config.json")


def test_every_gpu_of_a_tp_group_keeps_the_whole_latent_and_indexer_key():
    """MLA's latent and the indexer's key are not split by heads: at TP 8 each GPU of GLM-5.1 holds
    the 78 x (1152 + 132) B of every token, as at TP 1."""
    from llm_cost.model.layout import Layout

    spec = _spec("glm-5.1")
    kv = kv_cache(spec, [1000], layout=Layout(tp=8))
    assert kv.per_gpu.kv_bytes_per_token == [78 * (1152 + 132)]


@pytest.mark.parametrize("name", FOLDERS)
def test_one_gpu_holds_what_the_cache_counts(name):
    """The per-GPU cache of a layout (what fit, serving and the simulator size the KV pool with) is,
    at one GPU, the cache and state kv_bytes counts: indexer keys, conv and recurrent states too."""
    from llm_cost.model.layout import ONE_GPU, stage_kv_bytes

    spec = _spec(name)
    assert stage_kv_bytes(spec, ONE_GPU, 5000) == [kv_bytes(spec, 5000)]


def test_lfm2_without_block_ffn_dim_multiplier_takes_lfm2configs_default():
    """Lfm2Config's block_ffn_dim_multiplier defaults to 1.0 (transformers configuration_lfm2.py;
    llm_cost/data/hf_defaults.json): a config that leaves it out is the same model, 1,170,340,608
    (it was an internal error, a sentinel reaching the JSON encoder)."""
    import json

    config = json.loads((FIXTURES / "lfm2.5-1.2b" / "config.json").read_text(encoding="utf-8"))
    assert config.pop("block_ffn_dim_multiplier") == 1.0
    spec, _ = hf_to_spec(config, "LFM2.5-1.2B/config.json")
    assert count_params(spec).total_params == 1_170_340_608
