"""Gemma 4 (model_type gemma4 / gemma4_text) against the 31B, 26B-A4B and E2B totals
(tests/fixtures/hf/CHECKPOINTS.yaml gemma-4-31b-it, gemma-4-26b-a4b-it, gemma-4-e2b-it-text) and hand arithmetic from
transformers models/gemma4/modeling_gemma4.py: the full-attention layers' own heads
(global_head_dim 512, 4 K/V heads, no v_proj under attention_k_eq_v), the stored layer scalars,
the Gemma 4 vision tower; KV bytes per token by layer type; the decode step's attention."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from llm_cost.core.errors import SpecError
from llm_cost.core.types import LayerType, OpRole
from llm_cost.model.kv import kv_bytes, kv_bytes_per_token, kv_cache
from llm_cost.model.layout import Layout
from llm_cost.model.params import count_params
from llm_cost.model.structure import build
from llm_cost.specs.hf import hf_to_spec, load_hf_config
from llm_cost.workload.step import build_step, decode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf"
CONFIG = FIXTURES / "gemma-4-31b-it" / "config.json"
MOE_CONFIG = FIXTURES / "gemma-4-26b-a4b-it" / "config.json"
E2B_CONFIG = FIXTURES / "gemma-4-e2b-it-text" / "config.json"
CHECKPOINTS = yaml.safe_load((FIXTURES / "CHECKPOINTS.yaml").read_text(encoding="utf-8"))

D, V, FF = 5376, 262_144, 21_504
#: one sliding layer's attention: q [32 x 256, d], k and v [16 x 256, d], o [d, 32 x 256], q/k norms of 256
SLIDING = D * 32 * 256 + 2 * D * 16 * 256 + 32 * 256 * D + 2 * 256
#: one full layer's: q [32 x 512, d], k [4 x 512, d], no v_proj, o [d, 32 x 512], q/k norms of 512
FULL = D * 32 * 512 + D * 4 * 512 + 32 * 512 * D + 2 * 512
#: every layer's GeGLU MLP, four norms and its stored layer_scalar [1]
BLOCK = 3 * D * FF + 4 * D + 1


def _config() -> dict:
    return json.loads(CONFIG.read_text(encoding="utf-8"))


def test_31b_language_model_by_hand_is_the_header_split():
    """The headers' language model 30,697,345,340: the tied embedding once, 50 sliding and 10 full
    layers, 60 blocks, the final norm; 60 of those elements are the layer scalars (the learned
    tensors alone: 30,697,345,280)."""
    spec = load_hf_config(CONFIG)
    assert [spec.layer_type(i) for i in range(6)] == [LayerType.SLIDING_ATTENTION] * 5 + [LayerType.FULL_ATTENTION]
    text = V * D + 50 * SLIDING + 10 * FULL + 60 * BLOCK + D
    assert text == 30_697_345_340 and text - 60 == 30_697_345_280
    assert build(spec).decoder_params == text


def test_31b_vision_tower_and_embedder_by_hand():
    """The headers' vision tower 569,550,384 and projector 6,193,152: input_proj [1152, 3 x 16^2],
    the [2, 10240, 1152] position table, 27 blocks (q/k/v/o 1152 x 1152 with 16 heads of 72, q/k
    norms of 72, gate/up/down of 4304, four norms), std_bias and std_scale [1152]; the embedder's
    embedding_projection [5376, 1152]."""
    e, f = 1152, 4304
    block = 4 * e * e + 2 * 72 + 3 * e * f + 4 * e
    tower = e * 3 * 16 * 16 + 2 * 10240 * e + 27 * block + 2 * e
    assert tower == 569_550_384 and D * e == 6_193_152
    assert build(load_hf_config(CONFIG)).vision_params == tower + D * e


def test_31b_checkpoint_total():
    counted = count_params(load_hf_config(CONFIG))
    assert counted.total_params == CHECKPOINTS["gemma-4-31b-it"]["total_params"] == 31_273_088_876
    assert counted.total_params == 30_697_345_340 + 569_550_384 + 6_193_152


def test_full_layers_have_no_v_proj_and_their_own_heads():
    shapes = {}
    for t in build(load_hf_config(CONFIG)).tensors:
        if t.group == "attention":
            shapes.setdefault(t.name, []).append((t.shape, t.layers))
    assert shapes["layers.*.self_attn.q_proj.weight"] == [((32 * 256, D), 50), ((32 * 512, D), 10)]
    assert shapes["layers.*.self_attn.k_proj.weight"] == [((16 * 256, D), 50), ((4 * 512, D), 10)]
    assert shapes["layers.*.self_attn.v_proj.weight"] == [((16 * 256, D), 50)]


def test_gemma4_text_is_the_language_model():
    """Gemma4ForCausalLM of the same text_config: the language model alone."""
    cfg = {**_config()["text_config"], "architectures": ["Gemma4ForCausalLM"]}
    spec, _ = hf_to_spec(cfg, "gemma-4-31b-text/config.json")
    assert count_params(spec).total_params == 30_697_345_340 and spec.vision is None


def test_kv_bytes_per_token_by_layer_type():
    """Sliding layers cache 2 x 16 x 256 elements per token, full layers 2 x 4 x 512 (K and V
    both: V is k_proj's output before k_norm and RoPE, so the two differ), at 2 B; the sliding
    layers keep at most the 1,024-token window."""
    spec = load_hf_config(CONFIG)
    assert kv_bytes_per_token(spec, 16) == 50 * 2 * 16 * 256 * 2 + 10 * 2 * 4 * 512 * 2 == 901_120
    assert kv_bytes(spec, 10_000, 16) == 50 * 1024 * 2 * 16 * 256 * 2 + 10 * 10_000 * 2 * 4 * 512 * 2
    r = kv_cache(spec, [10_000])
    assert {(k.layer_type, k.layers, k.bytes_per_token, k.window) for k in r.layer_kinds} == {
        (LayerType.SLIDING_ATTENTION, 50, 16_384, 1024),
        (LayerType.FULL_ATTENTION, 10, 8_192, None),
    }
    assert r.mha_bytes_per_token == 50 * 2 * 32 * 256 * 2 + 10 * 2 * 32 * 512 * 2
    # decode: 4 x 32 heads x d_head FLOPs per cached token and layer, over the bytes of its K and V
    flops = 50 * 4 * 32 * 256 + 10 * 4 * 32 * 512
    assert r.kv_read_intensity_flop_per_byte == pytest.approx(flops / 901_120, rel=1e-12)


def test_kv_per_gpu_at_tp8():
    """At TP 8 a GPU holds 2 of the 16 sliding K/V heads and 1 of the 4 full ones (each full head
    on two GPUs): 50 x 2 x 2 x 256 x 2 + 10 x 2 x 1 x 512 x 2 bytes per token."""
    spec = load_hf_config(CONFIG)
    r = kv_cache(spec, [1000], layout=Layout(tp=8))
    assert r.per_gpu.kv_bytes_per_token == [50 * 2 * 2 * 256 * 2 + 10 * 2 * 1 * 512 * 2]
    with pytest.raises(Exception, match="tp: 3"):
        kv_cache(spec, [1000], layout=Layout(tp=3))


def test_decode_step_attention_and_weights_by_hand():
    """One decode token at context 4,095: the sliding layers see 1,024 keys, the full layers 4,096;
    QK^T + AV is 2 x 32 heads x (d_head + d_head) FLOPs per key; every weight used once (the tied
    LM head multiplies by the embedding); the sliding layers read their 1,024 cached tokens, the
    full layers all 4,095."""
    spec = load_hf_config(CONFIG)
    step = build_step(spec, decode(1, 4095))
    sliding_att = 50 * 2 * 32 * (256 + 256) * 1024
    full_att = 10 * 2 * 32 * (512 + 512) * 4096
    weights = 50 * (SLIDING - 512) + 10 * (FULL - 1024) + 60 * 3 * D * FF + V * D  # matmuls only
    assert step.flops == 2 * weights + sliding_att + full_att
    ops = {o.role: o for o in step.ops if o.role in (OpRole.FULL_ATTENTION, OpRole.SLIDING_ATTENTION)}
    assert ops[OpRole.SLIDING_ATTENTION].kv_read_bytes == 50 * 1024 * 2 * 16 * 256 * 2
    assert ops[OpRole.FULL_ATTENTION].kv_read_bytes == 10 * 4095 * 2 * 4 * 512 * 2
    assert ops[OpRole.FULL_ATTENTION].kv_heads == 4


def test_fully_bidirectional_attention_is_refused():
    cfg = _config()
    cfg["text_config"]["use_bidirectional_attention"] = "all"
    with pytest.raises(SpecError, match="use_bidirectional_attention"):
        hf_to_spec(cfg, "g/config.json")


def test_absent_per_layer_width_takes_transformers_default():
    """Gemma4TextConfig's hidden_size_per_layer_input defaults to 256 (transformers 5.24.0): a
    text_config without the key has per-layer embeddings, 262,144 x 60 x 256 + the projection
    5376 x 60 x 256 + its norm 256, and in each of the 60 blocks 2 x 5376 x 256 + 5376."""
    cfg = _config()
    del cfg["text_config"]["hidden_size_per_layer_input"]
    spec, defaults = hf_to_spec(cfg, "g/config.json")
    ple = V * 60 * 256 + D * 60 * 256 + 256 + 60 * (2 * D * 256 + D)
    assert count_params(spec).total_params == 31_273_088_876 + ple
    assert any(d.startswith("hidden_size_per_layer_input = 256 (absent;") for d in defaults)


def test_an_audio_tower_is_read_with_transformers_defaults():
    """An audio_config of only a width takes Gemma4AudioConfig's other defaults (transformers 5.24.0:
    12 layers, 8 heads, channels [128, 32], kernel 5, output 1536, clipped linears); the towers are
    counted in tests/specs/test_gemma4_audio.py."""
    cfg = {**_config(), "audio_config": {"model_type": "gemma4_audio", "hidden_size": 1024}}
    spec, defaults = hf_to_spec(cfg, "g/config.json")
    assert spec.audio is not None and spec.audio.num_hidden_layers == 12
    assert any(d.startswith("audio_config.num_hidden_layers = 12 (absent;") for d in defaults)


def test_without_layer_types_every_sixth_layer_is_full_and_the_last_one_too():
    """Gemma4TextConfig.__post_init__: layer i is full when (i + 1) % 6 == 0, and the last layer is
    forced to full attention (here 62 layers: 10 by the rule, plus layer 61)."""
    cfg = _config()
    text = {k: v for k, v in cfg["text_config"].items() if k != "layer_types"}
    cfg["text_config"] = {**text, "num_hidden_layers": 62}
    spec, _ = hf_to_spec(cfg, "g/config.json")
    full = [i for i in range(62) if spec.layer_type(i) == LayerType.FULL_ATTENTION]
    assert full == [5, 11, 17, 23, 29, 35, 41, 47, 53, 59, 61]


# -- 26B-A4B: the MoE block beside the dense MLP -----------------------------------------------------


def _moe_layer(d: int) -> int:
    """One 26B-A4B layer's feed-forward (Gemma4TextDecoderLayer with enable_moe_block): the dense
    GeGLU MLP of 2112, the router proj [128, d] + scale [d] + per_expert_scale [128], 128 experts of
    gate_up_proj [2 x 704, d] and down_proj [d, 704], three more norms [d]."""
    return 3 * d * 2112 + 128 * d + d + 128 + 128 * (2 * 704 * d + d * 704) + 3 * d


def test_26b_language_model_by_hand_is_the_header_split():
    """The headers' model.language_model 25,233,141,790: the tied embedding once, 25 sliding and 5
    full layers (16 query heads; 8 K/V heads of 256, or 2 of 512 without v_proj), each layer's
    feed-forward, four norms and layer_scalar, the final norm."""
    d = 2816
    sliding = d * 16 * 256 + 2 * d * 8 * 256 + 16 * 256 * d + 2 * 256
    full = d * 16 * 512 + d * 2 * 512 + 16 * 512 * d + 2 * 512
    text = V * d + 25 * sliding + 5 * full + 30 * (_moe_layer(d) + 4 * d + 1) + d
    assert text == 25_233_141_790
    spec = load_hf_config(MOE_CONFIG)
    assert build(spec).decoder_params == text
    assert build(spec).vision_params == 569_550_384 + d * 1152 == 572_794_416
    assert count_params(spec).total_params == CHECKPOINTS["gemma-4-26b-a4b-it"]["total_params"] == 25_805_936_206


def test_26b_active_parameters_per_token():
    """A token runs 8 of the 128 experts: the total less 120 experts' 3 x 704 x d in 30 layers, and
    less the vision tower (not run by a text token) gives the comparison table's 3,822,530,590."""
    d = 2816
    active_text = 25_233_141_790 - 30 * 120 * 3 * 704 * d
    assert active_text == 3_822_530_590
    counted = count_params(load_hf_config(MOE_CONFIG))
    assert counted.active_params == active_text


def test_26b_kv_and_a_decode_token_by_hand():
    """KV: 25 sliding layers of 2 x 8 x 256 and 5 full layers of 2 x 2 x 512 elements per token at
    2 B. Decode at context 4,095: attention 2 x 16 heads x (d_head + d_head) per key (1,024 keys in
    a sliding layer, 4,096 in a full one)."""
    spec = load_hf_config(MOE_CONFIG)
    assert kv_bytes_per_token(spec, 16) == 25 * 2 * 8 * 256 * 2 + 5 * 2 * 2 * 512 * 2 == 225_280
    step = build_step(spec, decode(1, 4095))
    (full,) = [o for o in step.ops if o.role == OpRole.FULL_ATTENTION]
    (sliding,) = [o for o in step.ops if o.role == OpRole.SLIDING_ATTENTION]
    assert full.flops == 5 * 2 * 16 * (512 + 512) * 4096
    assert sliding.flops == 25 * 2 * 16 * (256 + 256) * 1024


def test_a_gemma4_config_with_the_vocabulary_top_k_spelling_is_refused():
    cfg = json.loads(MOE_CONFIG.read_text(encoding="utf-8"))
    cfg["text_config"]["num_experts_per_tok"] = 8
    with pytest.raises(SpecError, match="num_experts_per_tok is not a Gemma4TextConfig key"):
        hf_to_spec(cfg, "g/config.json")


def test_expert_keys_without_the_moe_block_build_nothing():
    """Without enable_moe_block Gemma4TextDecoderLayer builds no router and no experts: the 31B's
    count is unchanged by expert keys (a note says they are unused)."""
    cfg = _config()
    cfg["text_config"].update(num_experts=128, top_k_experts=8, moe_intermediate_size=704)
    spec, _ = hf_to_spec(cfg, "g/config.json")
    assert count_params(spec).total_params == 31_273_088_876 and spec.moe is None
    assert "num_experts is unused: enable_moe_block is false" in spec.source.note


# -- E2B: per-layer embeddings, KV-shared layers, double-wide MLPs --------------------------------------


def test_e2b_language_model_by_hand():
    """4,628,569,379: the tied embedding; the per-layer embeddings [262144, 35 x 256], their
    projection [35 x 256, 1536] and norm [256]; 12 sliding and 3 full layers with their own K/V
    (q [8 x h, d], k and v [1 x h, d], o, q/k norms of h = 256 or 512); 16 sliding and 4 full
    KV-shared layers (q, q_norm, o only); MLPs of 6144, 12288 in the 20 shared layers; in every
    block four norms, the layer_scalar, the per-layer gate [256, d], projection [d, 256] and norm."""
    d, p = 1536, 256

    def attention(h: int, kv: bool) -> int:
        return d * 8 * h + 8 * h * d + h + ((2 * d * 1 * h + h) if kv else 0)

    own = 12 * attention(256, True) + 3 * attention(512, True)
    shared = 16 * attention(256, False) + 4 * attention(512, False)
    mlps = 15 * 3 * d * 6144 + 20 * 3 * d * 12288
    blocks = 35 * (4 * d + 1 + 2 * d * p + d)
    ple = V * 35 * p + d * 35 * p + p
    total = V * d + ple + own + shared + mlps + blocks + d
    assert total == CHECKPOINTS["gemma-4-e2b-it-text"]["total_params"] == 4_628_569_379
    assert count_params(load_hf_config(E2B_CONFIG)).total_params == total


def test_e2b_shared_layers_cache_nothing_and_write_nothing():
    """Layers 15-34 reuse layer 13's (sliding) or 14's (full) K/V: per token only the 15 owning
    layers cache; in a decode step every layer reads K/V (the shared ones their owner's), only
    the owners write."""
    spec = load_hf_config(E2B_CONFIG)
    assert [spec.kv_shared(i) for i in (14, 15, 34)] == [False, True, True]
    assert kv_bytes_per_token(spec, 16) == 12 * 2 * 256 * 2 + 3 * 2 * 512 * 2 == 18_432
    assert kv_bytes(spec, 4096, 16) == 12 * 512 * 2 * 256 * 2 + 3 * 4096 * 2 * 512 * 2
    step = build_step(spec, decode(1, 4095))
    (full,) = [o for o in step.ops if o.role == OpRole.FULL_ATTENTION]
    (sliding,) = [o for o in step.ops if o.role == OpRole.SLIDING_ATTENTION]
    assert full.kv_write_bytes == 3 * 2 * 512 * 2 and sliding.kv_write_bytes == 12 * 2 * 256 * 2
    assert full.kv_read_bytes == 7 * 4095 * 2 * 512 * 2  # all 7 full layers read 4,095 cached tokens
    assert sliding.kv_read_bytes == 28 * 512 * 2 * 256 * 2  # 28 sliding layers read the 512-token window
    assert full.flops == 7 * 2 * 8 * (512 + 512) * 4096


def test_e2b_on_several_pipeline_stages_is_refused():
    spec = load_hf_config(E2B_CONFIG)
    with pytest.raises(Exception, match="pp: .*one pipeline stage"):
        kv_cache(spec, [1000], layout=Layout(pp=2))


def test_a_shared_layer_without_an_owner_of_its_type_is_refused():
    """Gemma4TextAttention takes a shared layer's K/V from the last earlier layer of its type: with
    one full layer (the last), 30 shared layers leave no full layer to share with."""
    cfg = json.loads(E2B_CONFIG.read_text(encoding="utf-8"))
    cfg.update(num_kv_shared_layers=34, layer_types=["sliding_attention"] * 34 + ["full_attention"])
    with pytest.raises(SpecError, match="KV-shared layer 34 .* has no earlier full_attention layer"):
        hf_to_spec(cfg, "g/config.json")


def test_e4b_language_model_against_its_published_counts():
    """Gemma 4 E4B's text_config as a public package validator pins it (untraced index reference 70085931258:
    hidden 2560, 42 layers of five sliding and one full, 8 heads, 2 K/V heads, 18 KV-shared layers,
    head_dim 256 / 512, per-layer width 256, intermediate 10240); use_double_wide_mlp false, which the
    totals decide (a doubled MLP in 18 layers would add 18 x 3 x 2560 x 10240). sum(p.numel()) of
    the model 7,463,013,376 (github.com/facebookresearch/fairseq2 tests/integration/models/test_gemma4.py @ 9200c9e736a4, 'matching HuggingFace') + 42 layer scalars; llama.cpp
    counts 7,463,013,674 = that + its rope_freqs [256] (github.com/miztiik/yen-idhazh docs/reference/models/gemma-4-e4b-qat.md at an unpinned revision)."""
    cfg = json.loads(E2B_CONFIG.read_text(encoding="utf-8"))
    cfg.update(
        hidden_size=2560,
        num_hidden_layers=42,
        num_key_value_heads=2,
        num_kv_shared_layers=18,
        intermediate_size=10240,
        use_double_wide_mlp=False,
        layer_types=(["sliding_attention"] * 5 + ["full_attention"]) * 7,
    )
    spec, _ = hf_to_spec(cfg, "gemma-4-e4b-text/config.json")
    assert count_params(spec).total_params == 7_463_013_376 + 42 == 7_463_013_674 - 256
    # only the 24 owning layers cache: 20 sliding of 2 x 2 x 256 and 4 full of 2 x 2 x 512 elements, at 2 B
    assert kv_bytes_per_token(spec, 16) == 20 * 2 * 2 * 256 * 2 + 4 * 2 * 2 * 512 * 2


def test_the_activation_workspace_takes_the_widest_attention_layer():
    """The capacity planner's peak activations use the widest Q/K/V of any layer: the 31B's full
    layers (32 x 512 + 2 x 4 x 512 = 20,480 wide) over its sliding layers (32 x 256 + 2 x 16 x 256 =
    16,384): per token d + 20,480 + 2 x 21,504 elements at 2 B, and the logits V at 4 B per row."""
    from llm_cost.analyses.capacity import workspace_bytes

    spec = load_hf_config(CONFIG)
    assert workspace_bytes(spec, Layout(), 100, 1) == 100 * (D + 20_480 + 2 * FF) * 2 + V * 4
