"""MiMo-V2-Flash (``mimo_v2_flash``) from its real config (tests/fixtures/hf-kinds/mimo-v2-flash,
source in SOURCES.yaml): value heads narrower than query/key heads, sliding layers with their own
K/V heads and the only sinks, three undeclared MTP layers. Every figure is hand arithmetic from
transformers models/mimo_v2_flash/modeling_mimo_v2_flash.py (MiMoV2FlashAttention,
MiMoV2FlashSparseMoeBlock) and llama.cpp's convert_hf_to_gguf.py MimoV2Model, written out here,
or the public checkpoint count in SOURCES.yaml."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from llm_cost.core.errors import SpecError
from llm_cost.core.types import LayerType, OpRole
from llm_cost.model.kv import kv_bytes, kv_bytes_per_token, kv_cache
from llm_cost.model.layout import Layout, stage_kv_bytes
from llm_cost.model.params import count_params
from llm_cost.model.structure import build
from llm_cost.specs.hf import hf_to_spec, load_hf_config
from llm_cost.workload.step import build_step, decode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf-kinds"
CONFIG = FIXTURES / "mimo-v2-flash" / "config.json"
SOURCE = yaml.safe_load((FIXTURES / "SOURCES.yaml").read_text(encoding="utf-8"))["mimo-v2-flash"]

D, V = 4096, 152576
FULL = [0, 5, 11, 17, 23, 29, 35, 41, 47]  # hybrid_layer_pattern's zeros
#: One attention layer, from MiMoV2FlashAttention: q_proj [d -> 64 x 192], k_proj [d -> n_kv x 192],
#: v_proj [d -> n_kv x 128], o_proj [64 x 128 -> d]; sinks [64] on the sliding layers only.
FULL_ATTENTION = D * 64 * 192 + D * 4 * 192 + D * 4 * 128 + 64 * 128 * D
SLIDING_ATTENTION = D * 64 * 192 + D * 8 * 192 + D * 8 * 128 + 64 * 128 * D + 64
DENSE_MLP = 3 * D * 16384  # gate, up, down (the first layer; each MTP layer)
#: MiMoV2FlashSparseMoeBlock: the router [256, d] and its e_score_correction_bias [256], 256 gated
#: experts of 2048, no shared expert.
MOE = 256 * D + 256 + 256 * 3 * D * 2048
MAIN = 2 * V * D + 9 * FULL_ATTENTION + 39 * SLIDING_ATTENTION + DENSE_MLP + 47 * MOE + 48 * 2 * D + D
#: One MTP layer: enorm, hnorm, eh_proj [2d -> d], a sliding attention block with sinks, a dense
#: MLP, its two norms and its final norm (llama.cpp MimoV2Model exports them; no embedding copy).
MTP_LAYER = 2 * D + 2 * D * D + SLIDING_ATTENTION + DENSE_MLP + 2 * D + D


def _spec():
    return load_hf_config(CONFIG)


def _config() -> dict:
    return json.loads(CONFIG.read_text(encoding="utf-8"))


def test_the_main_model_by_hand_and_the_checkpoint_against_its_public_count():
    """308,778,780,864 parameters in the 48 layers, embedding and head (what transformers'
    MiMoV2FlashForCausalLM holds), and with the 3 MTP layers the 309,766,601,088 of the public
    mimo2 GGUF count (SOURCES.yaml)."""
    counted = count_params(_spec())
    assert MAIN == 308_778_780_864
    assert counted.total_params == MAIN
    assert counted.mtp_params == 3 * MTP_LAYER == 3 * 329_273_408
    assert counted.mtp_checkpoint_copies == 0
    assert counted.checkpoint_params == MAIN + 3 * MTP_LAYER == SOURCE["checkpoint_total"]


def test_layer_schedules_and_the_attention_read_from_the_config():
    """Full attention where hybrid_layer_pattern has 0, MoE wherever moe_layer_freq has 1."""
    spec = _spec()
    assert [i for i in range(48) if spec.layer_type(i) == LayerType.FULL_ATTENTION] == FULL
    assert [i for i in range(48) if not spec.is_moe_layer(i)] == [0]
    att = spec.attention
    assert (att.num_key_value_heads, att.sliding_num_key_value_heads, att.head_dim, att.v_head_dim) == (4, 8, 192, 128)
    # MiMoV2FlashConfig: sliding_window = sliding_window_size (128 previous tokens) + 1, the query itself
    assert (att.sinks, att.sink_layers, att.sliding_window) == (True, "sliding", 129)
    assert spec.moe.shared_expert_intermediate_size in (None, 0) and spec.moe.router_bias


def test_the_k_and_v_projections_and_sinks_of_each_layer_kind():
    """k/v of the 9 full layers at 4 heads, of the 39 sliding layers at 8; o_proj reads 64 x 128;
    sinks in the 39 sliding layers only."""
    attention = {(t.name, t.shape, t.layers) for t in build(_spec()).tensors if t.group == "attention"}
    assert attention == {
        ("layers.*.self_attn.q_proj.weight", (64 * 192, D), 48),
        ("layers.*.self_attn.k_proj.weight", (4 * 192, D), 9),
        ("layers.*.self_attn.v_proj.weight", (4 * 128, D), 9),
        ("layers.*.self_attn[sliding].k_proj.weight", (8 * 192, D), 39),
        ("layers.*.self_attn[sliding].v_proj.weight", (8 * 128, D), 39),
        ("layers.*.self_attn.o_proj.weight", (D, 64 * 128), 48),
        ("layers.*.self_attn.sinks", (64,), 39),
    }


def test_kv_bytes_per_token_by_hand():
    """A full layer caches 4 K heads of 192 and 4 V heads of 128, a sliding layer 8 of each: at
    bf16 9 x 4 x (192 + 128) x 2 + 39 x 8 x (192 + 128) x 2 = 23,040 + 199,680 B per token."""
    spec = _spec()
    assert kv_bytes_per_token(spec, 16) == 9 * 4 * (192 + 128) * 2 + 39 * 8 * (192 + 128) * 2 == 222_720
    assert kv_bytes_per_token(spec, 8) == 222_720 // 2


def test_the_sliding_layers_keep_129_tokens():
    """At 100,000 tokens the full layers keep all of them, the sliding layers the last 129: the
    128 previous tokens of sliding_window_size and the query (transformers
    models/mimo_v2_flash/configuration_mimo_v2_flash.py: sliding_window = sliding_window_size + 1)."""
    spec = _spec()
    full, sliding = 4 * (192 + 128) * 2, 8 * (192 + 128) * 2
    assert kv_bytes(spec, 100, 16) == 100 * (9 * full + 39 * sliding)
    assert kv_bytes(spec, 100_000, 16, batch=3) == 3 * (9 * 100_000 * full + 39 * 129 * sliding)
    kinds = {k.layer_type: (k.layers, k.bytes_per_token, k.window) for k in kv_cache(spec, [1000]).layer_kinds}
    assert kinds == {
        LayerType.FULL_ATTENTION: (9, full, None),
        LayerType.SLIDING_ATTENTION: (39, sliding, 129),
    }


def test_the_mha_and_all_full_attention_comparisons_use_each_layers_own_heads():
    """With n_kv = n_q = 64 every layer would cache 64 x 320 x 2 B a token: 48 x 40,960 against
    222,720; with every layer full attention (no window) each layer keeps its own heads for all
    1,000 tokens: 1,000 x 222,720 B."""
    r = kv_cache(_spec(), [1000])
    assert r.mha_bytes_per_token == 48 * 64 * 320 * 2
    assert r.mha_ratio == 48 * 64 * 320 * 2 / 222_720
    assert r.contexts[0].all_attention_bytes == 1000 * 222_720


def test_tp8_gives_each_gpu_one_kv_head_of_each_layer_kind():
    """At TP 8 a full layer's 4 K/V heads are replicated (one per GPU, each twice) and a sliding
    layer's 8 split (one per GPU): 48 x (192 + 128) x 2 B per token per GPU; the k/v weights are a
    quarter and an eighth on one GPU."""
    spec = _spec()
    one = (192 + 128) * 2
    kv = kv_cache(spec, [1000], layout=Layout(tp=8))
    assert kv.per_gpu.kv_bytes_per_token == [48 * one]
    assert stage_kv_bytes(spec, Layout(tp=8), 1000) == [9 * 1000 * one + 39 * 129 * one]


def test_decode_attention_flops_and_cache_reads_by_hand():
    """One token after 4,095 cached: each of 64 heads scores keys over 192 and sums values over 128,
    2 x 64 x (192 + 128) FLOPs a key; the 9 full layers see 4,096 keys and read 4,095 cached
    tokens of 4 x 320 elements, the 39 sliding layers see 129 and read the 129 tokens their window
    keeps, 8 x 320 elements each (the cache convention of every sliding layer here)."""
    spec = _spec()
    step = build_step(spec, decode(1, 4095))
    ops = {o.role: o for o in step.ops if o.role in (OpRole.FULL_ATTENTION, OpRole.SLIDING_ATTENTION)}
    full, sliding = ops[OpRole.FULL_ATTENTION], ops[OpRole.SLIDING_ATTENTION]
    assert full.flops == 9 * 2 * 64 * (192 + 128) * 4096
    assert sliding.flops == 39 * 2 * 64 * (192 + 128) * 129
    assert full.kv_read_bytes == 9 * 4095 * 4 * 320 * 2 and full.kv_heads == 4
    assert sliding.kv_read_bytes == 39 * 129 * 8 * 320 * 2 and sliding.kv_heads == 8
    assert (full.kv_write_bytes, sliding.kv_write_bytes) == (9 * 4 * 320 * 2, 39 * 8 * 320 * 2)


def test_decode_weight_flops_by_hand():
    """2 FLOPs per weight a decode token multiplies by: q/k/v/o of each layer kind, the dense MLP,
    47 MoE layers of router and 8 of 256 experts, the LM head (sinks and norms are not matmuls);
    plus the attention of the test above."""
    spec = _spec()
    full_w = FULL_ATTENTION
    sliding_w = SLIDING_ATTENTION - 64
    moe_w = 256 * D + 8 * 3 * D * 2048
    weights = 9 * full_w + 39 * sliding_w + DENSE_MLP + 47 * moe_w + V * D
    attention = 2 * 64 * 320 * (9 * 4096 + 39 * 129)
    assert build_step(spec, decode(1, 4095)).flops == 2 * weights + attention


def test_the_sliding_kv_heads_default_to_twice_the_full_ones():
    """Without swa_num_key_value_heads, MiMoV2FlashAttention builds 2 x num_key_value_heads, and
    says so among the defaults."""
    config = {k: v for k, v in _config().items() if k != "swa_num_key_value_heads"}
    spec, defaults = hf_to_spec(config, "mimo/config.json")
    assert spec.attention.sliding_num_key_value_heads == 8
    assert any(d.startswith("swa_num_key_value_heads = 8") for d in defaults)


def test_mimo_v2_text_config_reads_alike():
    """MiMo-V2.5's text configs (model_type mimo_v2, q/k/v fused in one tensor, MTP layers declared)
    count the same weights."""
    config = {
        **_config(),
        "model_type": "mimo_v2",
        "architectures": ["MiMoV2ForCausalLM"],
        "attention_projection_layout": "fused_qkv",
        "num_nextn_predict_layers": 3,
    }
    spec, _ = hf_to_spec(config, "mimo-v2.5/config.json")
    assert count_params(spec).checkpoint_params == SOURCE["checkpoint_total"]


@pytest.mark.parametrize(
    "change,key",
    [
        ({"swa_head_dim": 128}, "swa_head_dim"),
        ({"swa_num_attention_heads": 32}, "swa_num_attention_heads"),
        ({"add_swa_attention_sink_bias": False, "add_full_attention_sink_bias": True}, "add_full_attention_sink_bias"),
        ({"n_shared_experts": 1}, "n_shared_experts"),
        ({"vision_config": {"hidden_size": 1280}}, "vision_config"),
        ({"attention_chunk_size": 4096}, "attention_chunk_size"),
        ({"hybrid_layer_pattern": [0, 1]}, "hybrid_layer_pattern"),
    ],
)
def test_a_shape_the_mapping_cannot_place_is_refused_naming_its_key(change, key):
    with pytest.raises(SpecError, match=key):
        hf_to_spec({**_config(), **change}, "mimo/config.json")


def test_a_checkpoint_named_as_the_hub_stores_mimo_matches_its_description(tmp_path):
    """A miniature MiMo-V2-Flash checkpoint (4 layers: full, sliding, sliding, full; the first
    dense) with the Hub's tensor names: per-layer q/k/v/o_proj, ``attention_sink_bias`` on the
    sliding layers (transformers' conversion_mapping renames it ``sinks``), the router's
    ``e_score_correction_bias``, per-expert projections, and ``model.mtp.layers.{0,1,2}`` (llama.cpp
    MimoV2Model's names). Every stored tensor is explained and none is missing."""
    np = pytest.importorskip("numpy")
    st = pytest.importorskip("safetensors.numpy")
    from llm_cost.analyses.checkpoint_roles import compare
    from llm_cost.specs.checkpoint import read_checkpoint

    d, n_q, hd, vd, E, w, dense, vocab = 32, 4, 12, 8, 4, 16, 64, 50
    config = {
        **_config(),
        "vocab_size": vocab,
        "hidden_size": d,
        "num_hidden_layers": 4,
        "num_attention_heads": n_q,
        "num_key_value_heads": 1,
        "head_dim": hd,
        "v_head_dim": vd,
        "swa_num_attention_heads": n_q,
        "swa_num_key_value_heads": 2,
        "swa_head_dim": hd,
        "swa_v_head_dim": vd,
        "hybrid_layer_pattern": [0, 1, 1, 0],
        "moe_layer_freq": [0, 1, 1, 1],
        "intermediate_size": dense,
        "moe_intermediate_size": w,
        "n_routed_experts": E,
        "num_experts_per_tok": 2,
        "quantization_config": None,
    }
    f16 = np.float16

    def attention(p: str, kv: int, sinks: bool) -> dict:
        t = {
            f"{p}.self_attn.q_proj.weight": np.zeros((n_q * hd, d), f16),
            f"{p}.self_attn.k_proj.weight": np.zeros((kv * hd, d), f16),
            f"{p}.self_attn.v_proj.weight": np.zeros((kv * vd, d), f16),
            f"{p}.self_attn.o_proj.weight": np.zeros((d, n_q * vd), f16),
            f"{p}.input_layernorm.weight": np.zeros(d, f16),
            f"{p}.post_attention_layernorm.weight": np.zeros(d, f16),
        }
        if sinks:
            t[f"{p}.self_attn.attention_sink_bias"] = np.zeros(n_q, f16)
        return t

    def mlp(p: str, width: int) -> dict:
        return {
            f"{p}.gate_proj.weight": np.zeros((width, d), f16),
            f"{p}.up_proj.weight": np.zeros((width, d), f16),
            f"{p}.down_proj.weight": np.zeros((d, width), f16),
        }

    t = {
        "model.embed_tokens.weight": np.zeros((vocab, d), f16),
        "model.norm.weight": np.zeros(d, f16),
        "lm_head.weight": np.zeros((vocab, d), f16),
    }
    for i, sliding in enumerate([False, True, True, False]):
        p = f"model.layers.{i}"
        t |= attention(p, 2 if sliding else 1, sliding)
        if i == 0:
            t |= mlp(f"{p}.mlp", dense)
            continue
        t[f"{p}.mlp.gate.weight"] = np.zeros((E, d), f16)
        t[f"{p}.mlp.gate.e_score_correction_bias"] = np.zeros(E, np.float32)
        for e in range(E):
            t |= mlp(f"{p}.mlp.experts.{e}", w)
    for k in range(3):
        p = f"model.mtp.layers.{k}"
        t |= attention(p, 2, True) | mlp(f"{p}.mlp", dense)
        t[f"{p}.eh_proj.weight"] = np.zeros((d, 2 * d), f16)
        for norm in ("enorm", "hnorm", "final_layernorm"):
            t[f"{p}.{norm}.weight"] = np.zeros(d, f16)
    folder = tmp_path / "mimo"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config), encoding="utf-8")
    st.save_file(t, str(folder / "model.safetensors"))
    spec, _ = hf_to_spec(config, str(folder / "config.json"))
    report = compare(spec, read_checkpoint(folder))
    assert report.unexplained == [] and report.missing == []
    assert report.stored_params == report.described_params == sum(a.size for a in t.values())


def test_the_front_door_reports_the_same_figures(cli):
    """``llm-cost params`` and ``llm-cost kv`` on the config: the totals above, 15.4B active (every
    non-routed parameter and 8 of the 256 experts in each of the 47 MoE layers; the model card's
    "15B active"), and the per-token cache."""
    params = cli("params", str(CONFIG), "--json")
    assert params.code == 0
    p = params.json()
    routed = 47 * 256 * 3 * D * 2048
    assert (p["total_params"], p["checkpoint_params"], p["mtp_params"]) == (MAIN, MAIN + 3 * MTP_LAYER, 3 * MTP_LAYER)
    assert p["routed_expert_params"] == routed
    assert p["active_params"] == MAIN - routed + 47 * 8 * 3 * D * 2048 == 15_445_936_320
    kv = cli("kv", str(CONFIG), "--context", "1000", "--json")
    assert kv.code == 0 and kv.json()["bytes_per_token"] == 222_720


# -- MiMo-7B (model_type mimo): Qwen2 blocks and MTP layers without embedding or head copies ---------

MIMO7B = Path(__file__).resolve().parents[1] / "fixtures" / "hf-unverified" / "mimo-7b-base"


def test_mimo_7b_main_model_and_mtp_by_hand():
    """MiMo-7B by the shapes of its modeling_mimo.py (tests/fixtures/hf-unverified/SOURCES.yaml):
    Qwen2 blocks of d 4,096 (q 4,096 x 4,096 + bias, k/v 1,024 x 4,096 + bias, o 4,096 x 4,096 without
    bias, a gated MLP of 11,008, two norms) x 36, untied embedding and head of 151,680, the final norm;
    one MTP layer of the same block plus token/hidden/final norms and input_proj [8,192 -> 4,096]
    without bias, using the main model's embedding and head (no copies). The reader used to add an
    o_proj bias per layer (+147,456) and DeepSeek's embedding and head copies (+1,242,562,560)."""
    d, kv, ff, V = 4096, 1024, 11008, 151680
    block = d * d + d + 2 * (d * kv + kv) + d * d + 3 * d * ff + 2 * d
    main = 2 * V * d + 36 * block + d
    mtp = block + 3 * d + 2 * d * d
    r = count_params(load_hf_config(MIMO7B))
    assert (r.total_params, r.mtp_params, r.mtp_checkpoint_copies) == (main, mtp, 0) == (7_622_619_136, 210_790_400, 0)
    assert r.checkpoint_params == 7_833_409_536
