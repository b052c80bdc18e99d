"""Hugging Face config.json -> spec (llm_cost.hf) against independent checkpoint totals.

Fixtures: tests/fixtures/hf/NAME/config.json, real configs per family; CHECKPOINTS.yaml gives each
checkpoint's exact parameter total from an independent source (index total_size / bytes per
parameter, safetensors metadata, GGUF parameter_count, a measured sum(p.numel())). None of these
totals was computed from a config with a formula, so equality here tests the mapping and the
tensor enumeration together.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from llm_cost.core.errors import SpecError
from llm_cost.model.kv import kv_bytes, kv_bytes_per_token
from llm_cost.model.params import count_params
from llm_cost.model.structure import build
from llm_cost.specs.declare import field_names, validated
from llm_cost.specs.hf import SHAPE_KEYS, hf_to_spec, load_hf_config, load_hf_config_verbose, spec_to_yaml
from llm_cost.specs.load import load_model
from llm_cost.specs.schema import ModelSpec

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf"
CHECKPOINTS = yaml.safe_load((FIXTURES / "CHECKPOINTS.yaml").read_text(encoding="utf-8"))
FOLDERS = sorted(p.name for p in FIXTURES.iterdir() if (p / "config.json").is_file())


def _config(name: str) -> dict:
    return json.loads((FIXTURES / name / "config.json").read_text(encoding="utf-8"))


def _exact() -> list[tuple[str, int]]:
    return [
        (name, entry["total_params"])
        for name, entry in sorted(CHECKPOINTS.items())
        if entry.get("exact") and entry.get("total_params") is not None and name in FOLDERS
    ]


# -- parameter totals ---------------------------------------------------------------------------


def test_every_fixture_is_listed_and_counted():
    """Every config folder has a CHECKPOINTS entry, and all but falcon-7b-instruct (no published
    figure) have an exact total: 54 checkpoints across the 44 families with fixtures."""
    assert set(FOLDERS) <= set(CHECKPOINTS)
    assert {n for n in FOLDERS if n not in dict(_exact())} == {"falcon-7b-instruct"}
    assert len(_exact()) == 54


@pytest.mark.parametrize("name,total", _exact())
def test_total_equals_checkpoint(name, total):
    assert count_params(load_hf_config(FIXTURES / name / "config.json")).total_params == total


def test_falcon_7b_published_count_not_the_third_party_figure():
    """falcon-7b: 6,921,720,704 is the published count (tied word_embeddings / lm_head counted once).
    The third-party table's 7,217,189,760 is rejected: it exceeds the published count by exactly one
    V x d = 65,024 x 4,544 = 295,469,056 matrix, i.e. it counts the tied LM head twice
    (CHECKPOINTS.yaml keeps it as third_party_total and records the correction)."""
    r = count_params(load_hf_config(FIXTURES / "falcon-7b"))
    assert r.total_params == 6_921_720_704 == CHECKPOINTS["falcon-7b"]["total_params"]
    assert CHECKPOINTS["falcon-7b"]["third_party_total"] - r.total_params == 65_024 * 4_544
    # Per block: qkv 4,544 x (71 + 2) x 64 + dense 4,544^2 + MLP 2 x 4,544 x 18,176 + one LayerNorm 2 x 4,544.
    block = 4_544 * 73 * 64 + 4_544**2 + 2 * 4_544 * 18_176 + 2 * 4_544
    assert r.total_params == 65_024 * 4_544 + 32 * block + 2 * 4_544


def test_falcon_in_library_config_matches_legacy():
    """falcon-7b-instruct (model_type falcon, num_attention_heads / num_hidden_layers) has the
    tensor shapes of falcon-7b (legacy RefinedWebModel, n_head / n_layer)."""
    a = build(load_hf_config(FIXTURES / "falcon-7b"))
    b = build(load_hf_config(FIXTURES / "falcon-7b-instruct"))
    assert [(t.name, t.shape, t.layers) for t in a.tensors] == [(t.name, t.shape, t.layers) for t in b.tensors]


def test_gpt2_buffers_are_not_parameters():
    """gpt2: 124,439,808 parameters; the checkpoint's 137,022,720 elements add 12 causal-mask
    attn.bias buffers of 1 x 1 x 1,024 x 1,024 each."""
    r = count_params(load_hf_config(FIXTURES / "gpt2"))
    assert CHECKPOINTS["gpt2"]["checkpoint_tensor_elements"] - r.total_params == 12 * 1024 * 1024


def test_deepseek_v3_mtp_reported_apart():
    """DeepSeek-V3: main model 671,026,419,200 (the checkpoint audit); num_nextn_predict_layers = 1
    adds the MTP module (11,610,068,224 unique) plus its stored embedding/head copies."""
    r = count_params(load_hf_config(FIXTURES / "deepseek-v3"))
    assert r.mtp_params == 11_610_068_224
    assert r.checkpoint_params == 671_026_419_200 + 11_610_068_224 + 2 * 129_280 * 7_168


QWEN3_NEXT = {
    # Qwen3-Next-80B-A3B keys as in transformers' Qwen3NextConfig and the shipped spec's sources
    # (no verbatim config.json was found, see CHECKPOINTS.yaml; this dict is reconstructed).
    "architectures": ["Qwen3NextForCausalLM"],
    "model_type": "qwen3_next",
    "attention_bias": False,
    "decoder_sparse_step": 1,
    "full_attention_interval": 4,
    "head_dim": 256,
    "hidden_act": "silu",
    "hidden_size": 2048,
    "intermediate_size": 5120,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 32,
    "linear_value_head_dim": 128,
    "max_position_embeddings": 262144,
    "mlp_only_layers": [],
    "moe_intermediate_size": 512,
    "num_attention_heads": 16,
    "num_experts": 512,
    "num_experts_per_tok": 10,
    "num_hidden_layers": 48,
    "num_key_value_heads": 2,
    "partial_rotary_factor": 0.25,
    "rope_scaling": None,
    "rope_theta": 10000000,
    "shared_expert_intermediate_size": 512,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",
    "vocab_size": 151936,
}


def test_glm_4_5_air_mtp_layer_is_the_checkpoint_difference():
    """GLM-4.5-Air: the HF total 110,468,824,832 counts the MTP layer 46; without it the main model
    is 106,852,251,264 (the MTP-less fine-tune INTELLECT-3's listed total)."""
    r = count_params(load_hf_config(FIXTURES / "glm-4.5-air"))
    assert r.checkpoint_params == CHECKPOINTS["glm-4.5-air"]["checkpoint_total"] == 110_468_824_832
    # the copies are one embedding and one head, 2 x V x d
    assert r.mtp_checkpoint_copies == 2 * 151_552 * 4_096


def test_gemma3_vlm_parts():
    """gemma-3-4b-it = the text model + SigLIP tower + projector; the text part alone is what the
    same config gives as gemma3_text (the VLM wrapper adds no decoder weights)."""
    cfg = _config("gemma-3-4b-it")
    r = count_params(load_hf_config(FIXTURES / "gemma-3-4b-it"))
    text, _ = hf_to_spec({**cfg["text_config"], "architectures": ["Gemma3ForCausalLM"]}, "t/config.json")
    assert r.decoder_params == count_params(text).total_params
    # tower: patch conv (1152 x 3 x 14 x 14 + 1152), 4096 positions, 27 blocks, post-LN; projector 1152 x 2560 + 1152
    block = 2 * 2 * 1152 + 4 * (1152 * 1152 + 1152) + (1152 * 4304 + 4304) + (4304 * 1152 + 1152)
    tower = 1152 * 3 * 14 * 14 + 1152 + 4096 * 1152 + 27 * block + 2 * 1152
    assert r.vision_params == tower + 1152 * 2560 + 1152


def test_gemma3_vlm_refuses_a_pooling_head():
    cfg = _config("gemma-3-4b-it")
    bad = {**cfg, "vision_config": {**cfg["vision_config"], "vision_use_head": True}}
    with pytest.raises(SpecError, match=r"vision_config\.vision_use_head = true"):
        hf_to_spec(bad, "x/config.json")


def test_olmo2_norms_span_the_projections():
    """OLMo 2: q_norm has n_q x d_head weights and k_norm n_kv x d_head (not d_head as Qwen3)."""
    s = build(load_hf_config(FIXTURES / "olmo-2-1124-13b"))
    shapes = {t.name: t.shape for t in s.tensors}
    assert shapes["layers.*.self_attn.q_norm.weight"] == (5120,)
    assert shapes["layers.*.self_attn.k_norm.weight"] == (5120,)


def test_nemotron_h_blocks_follow_the_pattern():
    """Nemotron-H: one norm and one mixer per block; M, * and - give the tensor layer counts."""
    s = build(load_hf_config(FIXTURES / "nvidia-nemotron-nano-9b-v2"))
    layers = {t.name: t.layers for t in s.tensors}
    assert layers["layers.*.mamba.A_log"] == 27
    assert layers["layers.*.self_attn.q_proj.weight"] == 4
    assert layers["layers.*.mlp.up_proj.weight"] == 25 and "layers.*.mlp.gate_proj.weight" not in layers
    assert layers["layers.*.norm1.weight"] == 56 and "layers.*.norm2.weight" not in layers


def test_nemotron_h_refuses_blocks_it_cannot_place():
    """M, *, - and E (MoE, tests/specs/test_new_kinds.py) are placed; any other block letter is refused."""
    cfg = _config("nvidia-nemotron-nano-9b-v2")
    pattern = cfg["hybrid_override_pattern"].replace("-", "O", 1)
    with pytest.raises(SpecError, match=r"hybrid_override_pattern has 'O'"):
        hf_to_spec({**cfg, "hybrid_override_pattern": pattern}, "x/config.json")


def test_granite_mamba_width_must_match_expand():
    cfg = _config("granite-4.0-h-small")
    with pytest.raises(SpecError, match=r"mamba_d_head \(80\) x mamba_n_heads \(128\) must equal mamba_expand"):
        hf_to_spec({**cfg, "mamba_d_head": 80}, "x/config.json")


def test_granite_without_experts_is_a_dense_shared_mlp():
    """granitemoehybrid with num_local_experts 0: the shared_mlp is the whole feed-forward; removing
    the 72 experts and the router removes exactly 40 x (72 x 3 x 4096 x 768 + 72 x 4096)."""
    cfg = _config("granite-4.0-h-small")
    spec, _ = hf_to_spec({**cfg, "num_local_experts": 0}, "x/config.json")
    assert spec.moe is None and spec.mlp.intermediate_size == 1536
    full = count_params(load_hf_config(FIXTURES / "granite-4.0-h-small")).total_params
    assert full - count_params(spec).total_params == 40 * (72 * 3 * 4096 * 768 + 72 * 4096)


def test_hybrid_state_commands(cli):
    r = cli("kv", str(FIXTURES / "granite-4.0-h-small"), "--context", "8K", "--json")
    assert r.code == 0 and r.json()["contexts"][0]["state_bytes"] == 36 * 128 * 64 * 128 * 2
    r = cli("activations", str(FIXTURES / "nvidia-nemotron-nano-9b-v2"))
    assert r.code == 2 and "Mamba-2" in r.err
    r = cli("train", str(FIXTURES / "nvidia-nemotron-nano-9b-v2"), "--tokens", "1T", "--mfu", "0.4", "--json")
    assert r.code == 0 and r.json()["activations"] is None and r.json()["params"] == 8_888_227_328
    r = cli("activations", str(FIXTURES / "llama-4-scout-17b-16e"), "--json")  # per-layer MLP kinds, no Mamba
    assert r.code == 0


def test_minimax_m2_fp8_and_full_width_qk_norms():
    """MiniMax-M2: FP8 weights (scales not counted), q_norm over 48 x 128 and k_norm over 8 x 128;
    a lightning-attention layer (attn_type_list 0, MiniMax-01) is refused."""
    spec = load_hf_config(FIXTURES / "minimax-m2")
    shapes = {t.name: t.shape for t in build(spec).tensors}
    assert spec.torch_dtype == "fp8" and spec.partial_rotary_factor == 0.5
    assert shapes["layers.*.self_attn.q_norm.weight"] == (6144,)
    assert shapes["layers.*.self_attn.k_norm.weight"] == (1024,)
    cfg = _config("minimax-m2")
    with pytest.raises(SpecError, match=r"attn_type_list has 0 \(lightning attention\)"):
        hf_to_spec({**cfg, "attn_type_list": [0] + [1] * 61}, "x/config.json")


def test_llama4_layers_and_active_parameters():
    """Llama 4 Scout: every 4th layer is NoPE / global, the rest chunked; all 48 layers MoE with one
    routed expert of 16 plus the shared one: 17,172,894,720 active (Meta's "17B active")."""
    spec = load_hf_config(FIXTURES / "llama-4-scout-17b-16e")
    assert [spec.layer_type(i) for i in range(4)] == ["chunked_attention"] * 3 + ["full_attention"]
    r = count_params(spec)
    assert r.active_params == r.total_params - r.vision_params - 48 * 15 * 3 * 5120 * 8192
    assert r.active_params == 17_172_894_720


def test_llama4_empty_no_rope_layers_is_the_default_schedule():
    """RedHatAI's FP8-dynamic Scout (catalog, verbatim) publishes ``no_rope_layers: []``, which
    Llama4TextConfig replaces by its default (``no_rope_layers if no_rope_layers else default``:
    every 4th layer NoPE); it was refused. Its layer schedule is then the one Meta's Scout config
    lists explicitly, and it counts Meta's checkpoint total (the same architecture)."""
    from llm_cost.specs.load import load_model

    redhat, meta = load_model("llama4-scout-fp8-dynamic"), load_hf_config(FIXTURES / "llama-4-scout-17b-16e")
    assert [redhat.layer_type(i) for i in range(48)] == [meta.layer_type(i) for i in range(48)]
    assert [i for i in range(48) if redhat.layer_type(i) == "full_attention"] == list(range(3, 48, 4))
    assert count_params(redhat).total_params == 108_641_793_536  # the Hub total of Meta's checkpoint (CHECKPOINTS.yaml)


def test_llama4_interleaved_moe_uses_the_dense_width():
    """interleave_moe_layer_step 2 (Maverick's layout): odd layers MoE, even layers a dense gated MLP of
    intermediate_size_mlp; 24 MoE layers become dense: each trades (16 + 1) experts and the router
    for one 3 x d x 16,384 MLP."""
    cfg = _config("llama-4-scout-17b-16e")
    text = {k: v for k, v in cfg["text_config"].items() if k != "moe_layers"}
    spec, _ = hf_to_spec({**cfg, "text_config": {**text, "interleave_moe_layer_step": 2}}, "x/config.json")
    assert [spec.mlp_kind(i) for i in range(4)] == ["dense", "moe", "dense", "moe"]
    full = count_params(load_hf_config(FIXTURES / "llama-4-scout-17b-16e")).total_params
    moe_layer = 17 * 3 * 5120 * 8192 + 16 * 5120
    assert full - count_params(spec).total_params == 24 * (moe_layer - 3 * 5120 * 16384)


@pytest.mark.parametrize(
    "new,cached,chunk", [(1, 0, 4), (10, 0, 4), (5, 7, 4), (9, 3, 3), (1, 8191, 8192), (20_000, 0, 8192)]
)
def test_chunked_pairs_match_a_count_of_each_token(new, cached, chunk):
    from llm_cost.workload.step import chunked_pairs

    brute = sum((p - 1) % chunk + 1 for p in range(cached + 1, cached + new + 1))
    assert chunked_pairs(new, cached, True, chunk) == brute


def test_qwen2_5_vl_vision_is_the_logged_share():
    """Qwen2.5-VL-7B: the language model alone is Qwen2.5-7B's 7,615,616,512; the tower is the rest
    (676,550,144 in the fine-tuning log of CHECKPOINTS.yaml)."""
    r = count_params(load_hf_config(FIXTURES / "qwen2.5-vl-7b-instruct"))
    assert r.decoder_params == CHECKPOINTS["qwen2.5-7b"]["total_params"] == 7_615_616_512
    assert r.vision_params == 676_550_144


def test_phimoe_feed_forward_is_the_published_split():
    """Phi-3.5-MoE: the thread's 'Feed-Forward 40,267,415,552' is the 16 experts plus the routers; the
    LM head carries 32,064 biases."""
    r = count_params(load_hf_config(FIXTURES / "phi-3.5-moe-instruct"))
    router = sum(row.params for row in r.rows if row.group == "router")
    assert r.routed_expert_params + router == 40_267_415_552
    spec, _ = hf_to_spec({**_config("phi-3.5-moe-instruct"), "lm_head_bias": False}, "x/config.json")
    assert r.total_params - count_params(spec).total_params == 32_064


def test_qwen3_vl_language_model_is_qwen3_8b():
    """Qwen3-VL-8B's decoder is Qwen3-8B's checkpoint total; each DeepStack merger is a LayerNorm over
    4 x 1152 and a [4608 -> 4608 -> 4096] MLP with biases."""
    r = count_params(load_hf_config(FIXTURES / "qwen3-vl-8b-instruct"))
    assert r.decoder_params == CHECKPOINTS["qwen3-8b"]["total_params"]
    cfg = _config("qwen3-vl-8b-instruct")
    spec, _ = hf_to_spec({**cfg, "vision_config": {**cfg["vision_config"], "deepstack_visual_indexes": []}}, "x/c.json")
    merger = 2 * 4608 + 4608 * 4608 + 4608 + 4608 * 4096 + 4096
    assert r.total_params - count_params(spec).total_params == 3 * merger


def test_mistral3_text_part_is_sarvam_m():
    """Mistral Small 3.x 24B: the language model alone is 23,572,403,200, the listed total of the
    text-only fine-tune sarvamai/sarvam-m (CHECKPOINTS.yaml); the rest is Pixtral and the projector."""
    r = count_params(load_hf_config(FIXTURES / "mistral-small-3.2-24b-instruct-2506"))
    assert r.decoder_params == 23_572_403_200
    assert r.vision_params == r.total_params - 23_572_403_200 == 438_958_080


def test_qwen3_next_matches_shipped_spec_and_checkpoint_with_mtp():
    """qwen3_next: the same main-model tensors and MTP layer as the shipped qwen3-next-80b-a3b
    (79,674,391,296, llama.cpp's 79.67B without MTP). The checkpoint's MTP block (fc [2d -> d], two input norms, one
    full-attention MoE layer, a final norm = 1,650,471,424) is in the checkpoint total,
    81,324,862,720 (CHECKPOINTS.yaml), whether the config declares it (mtp_num_hidden_layers = 1)
    or, as the Hub's Qwen3-Next configs, does not (a note says so); mtp_num_hidden_layers = 0 has none."""
    spec, _ = hf_to_spec(QWEN3_NEXT, "qwen3-next-80b-a3b/config.json")
    shipped = load_model("qwen3-next-80b-a3b")
    main = [(t.name, t.shape, t.layers, t.copies) for t in build(spec).tensors if t.part == "decoder"]
    assert main == [(t.name, t.shape, t.layers, t.copies) for t in build(shipped).tensors if t.part == "decoder"]
    assert count_params(spec).total_params == count_params(shipped).total_params == 79_674_391_296
    assert "1 MTP layer (mtp.*) counted in the checkpoint total" in spec.source.note
    # the shipped spec states the same MTP layer (a new user compared its 79.67B with the Hub's total)
    assert count_params(shipped).checkpoint_params == CHECKPOINTS["qwen3-next-80b-a3b-instruct"]["total_params"]
    for config in (QWEN3_NEXT, {**QWEN3_NEXT, "mtp_num_hidden_layers": 1}):
        r = count_params(hf_to_spec(config, "x/config.json")[0])
        assert r.total_params == 79_674_391_296 and r.mtp_params == 1_650_471_424
        assert r.checkpoint_params == CHECKPOINTS["qwen3-next-80b-a3b-instruct"]["total_params"] == 81_324_862_720
    assert count_params(hf_to_spec({**QWEN3_NEXT, "mtp_num_hidden_layers": 0}, "x")[0]).mtp_params == 0


# -- the shipped specs agree with configs of the same architecture -------------------------------


@pytest.mark.parametrize(
    "shipped,fixture",
    [
        ("llama3-8b", "llama-3.1-8b"),  # Llama 3 and 3.1 8B: same shapes (3.1 adds rope_scaling)
        ("llama3-70b", "llama-3.1-70b"),  # Llama 3 and 3.1 70B likewise
        ("mixtral-8x7b", "mixtral-8x7b-instruct-v0.1"),
        ("deepseek-v3", "deepseek-v3"),
        ("qwen2-vl-7b", "qwen2-vl-7b-instruct"),
    ],
)
def test_shipped_spec_agrees_with_config(shipped, fixture):
    a, b = build(load_model(shipped)), build(load_hf_config(FIXTURES / fixture))
    assert [(t.name, t.shape, t.layers, t.copies, t.stored, t.part) for t in a.tensors] == [
        (t.name, t.shape, t.layers, t.copies, t.stored, t.part) for t in b.tensors
    ]
    assert a.total_params == b.total_params == CHECKPOINTS[fixture]["total_params"]
    assert a.mtp_params == b.mtp_params


def test_deepseek_v3_config_gives_the_shipped_spec():
    """Field for field (metadata aside), including FP8 from quantization_config and the yarn scaling."""
    a, b = load_model("deepseek-v3"), load_hf_config(FIXTURES / "deepseek-v3")
    differ = {k for k in field_names(ModelSpec) if getattr(a, k) != getattr(b, k)}
    assert differ == {"display_name", "aliases", "source"}


# -- KV cache -----------------------------------------------------------------------------------

KV = [
    # (fixture, bytes per token at BF16, derivation from the config values)
    ("llama-3.1-8b", 131_072),  # 2 x L 32 x n_kv 8 x head_dim 128 x 2 B
    ("llama-3.1-70b", 327_680),  # 2 x L 80 x n_kv 8 x head_dim 128 x 2 B
    ("llama-3.2-1b-instruct", 32_768),  # 2 x 16 x 8 x head_dim 64 (given) x 2
    ("tinyllama-1.1b-chat-v1.0", 22_528),  # 2 x 22 x 4 x (2048 / 32 = 64) x 2
    ("mistral-7b-instruct-v0.3", 131_072),  # 2 x 32 x 8 x 128 x 2 (sliding_window null: full)
    ("mixtral-8x7b-instruct-v0.1", 131_072),  # 2 x 32 x 8 x 128 x 2
    ("qwen2.5-7b", 57_344),  # 2 x 28 x 4 x (3584 / 28 = 128) x 2
    ("qwen2.5-3b", 36_864),  # 2 x 36 x 2 x (2048 / 16 = 128) x 2
    ("qwen1.5-moe-a2.7b-chat", 196_608),  # 2 x 24 x 16 (MHA) x 128 x 2
    ("qwen3-8b", 147_456),  # 2 x 36 x 8 x 128 x 2
    ("qwen3-30b-a3b", 98_304),  # 2 x 48 x 4 x 128 x 2
    ("qwen2-vl-7b-instruct", 57_344),  # 2 x 28 x 4 x 128 x 2 (vision tower caches nothing)
    ("deepseek-v2-lite", 31_104),  # MLA latent: L 27 x (kv_lora_rank 512 + qk_rope 64) x 2
    ("deepseek-v3", 70_272),  # MLA latent: 61 x (512 + 64) x 2
    ("gemma-2b", 18_432),  # MQA: 2 x 18 x 1 x head_dim 256 x 2
    ("gemma-2-9b-it", 344_064),  # 2 x 42 x 8 x 256 x 2 (below the 4096 window)
    ("gemma-3-1b-it", 26_624),  # 2 x 26 x 1 x 256 x 2 (below the 512 window)
    ("phi-3-mini-4k-instruct", 393_216),  # 2 x 32 x 32 x (3072 / 32 = 96) x 2
    ("gpt2", 36_864),  # 2 x 12 x 12 x (768 / 12 = 64) x 2
    ("falcon-7b", 8_192),  # multi_query: 2 x 32 x 1 x (4544 / 71 = 64) x 2
    ("falcon-7b-instruct", 8_192),
    ("gpt-oss-20b", 49_152),  # 2 x 24 x 8 x head_dim 64 x 2 (below the 128 window)
    ("olmo-2-1124-13b", 819_200),  # MHA: 2 x 40 x 40 x (5120 / 40 = 128) x 2
    ("smollm3-3b", 73_728),  # 2 x 36 x 4 x 128 x 2
    ("gemma-3-4b-it", 139_264),  # 2 x 34 x 4 x 256 x 2 (below the 1024 window; vision caches nothing)
    ("glm-4.5-air", 188_416),  # 2 x 46 x 8 x 128 x 2 (the MTP layer is not counted)
    ("nvidia-nemotron-nano-9b-v2", 16_384),  # only the 4 attention blocks: 2 x 4 x 8 x 128 x 2
    ("granite-4.0-h-small", 16_384),  # only the 4 attention layers: 2 x 4 x 8 x 128 x 2
    ("minimax-m2", 253_952),  # 2 x 62 x 8 x 128 x 2
    ("llama-4-scout-17b-16e", 196_608),  # 2 x 48 x 8 x 128 x 2 (below the 8,192 chunk)
    ("olmoe-1b-7b-0924", 131_072),  # MHA: 2 x 16 x 16 x 128 x 2
    ("internlm2_5-7b-chat", 131_072),  # 2 x 32 x 8 x 128 x 2
    ("ernie-4.5-0.3b-pt", 18_432),  # 2 x 18 x 2 x 128 x 2
    ("qwen2.5-vl-7b-instruct", 57_344),  # 2 x 28 x 4 x 128 x 2 (the tower caches nothing)
    ("olmo-3-1025-7b", 524_288),  # MHA: 2 x 32 x 32 x 128 x 2 (below the 4,096 window)
    ("granite-3.1-1b-a400m-instruct", 49_152),  # 2 x 24 x 8 x 64 x 2
    ("kimi-k2-instruct", 70_272),  # MLA latent: 61 x (512 + 64) x 2
    ("phi-3.5-moe-instruct", 131_072),  # 2 x 32 x 8 x 128 x 2
    ("qwen3-vl-8b-instruct", 147_456),  # 2 x 36 x 8 x 128 x 2 (as Qwen3-8B)
    ("mistral-small-3.2-24b-instruct-2506", 163_840),  # 2 x 40 x 8 x 128 x 2
    ("qwen3-vl-30b-a3b-instruct", 98_304),  # 2 x 48 x 4 x 128 x 2
    ("qwen3.5-27b", 65_536),  # 16 full-attention layers of 64 (every 4th): 2 x 16 x 4 x 256 x 2
    ("qwen3.5-35b-a3b", 20_480),  # 10 full-attention layers of 40: 2 x 10 x 2 x 256 x 2
    ("qwen3.6-27b", 65_536),  # Qwen3.5-27B's shapes
    ("qwen3.6-35b-a3b", 20_480),  # Qwen3.5-35B-A3B's shapes
    ("glm-4.7-flash", 54_144),  # MLA latent 512 + rope key 64 per layer: 47 x 576 x 2
    ("qwen3-coder-480b-a35b-instruct", 253_952),  # 2 x 62 x 8 x 128 x 2
    ("kimi-k2.5", 70_272),  # MLA as DeepSeek-V3: 61 x (512 + 64) x 2
    ("glm-4.5v", 188_416),  # 2 x 46 x 8 x 128 x 2
    # Gemma 4 31B: 50 sliding layers 2 x 16 x 256 x 2 B + 10 full layers at their own heads 2 x 4 x 512 x 2 B
    ("gemma-4-31b-it", 50 * 2 * 16 * 256 * 2 + 10 * 2 * 4 * 512 * 2),
    # Gemma 4 26B-A4B: 25 sliding layers 2 x 8 x 256 x 2 B + 5 full layers 2 x 2 x 512 x 2 B
    ("gemma-4-26b-a4b-it", 25 * 2 * 8 * 256 * 2 + 5 * 2 * 2 * 512 * 2),
    # Gemma 4 E2B text: only the 15 layers before the 20 KV-shared ones cache, 12 sliding of 2 x 1 x 256
    # and 3 full of 2 x 1 x 512 elements, at 2 B
    ("gemma-4-e2b-it-text", 12 * 2 * 1 * 256 * 2 + 3 * 2 * 1 * 512 * 2),
    # the whole E2B: the same language model (the vision and audio towers cache nothing)
    ("gemma-4-e2b-it", 12 * 2 * 1 * 256 * 2 + 3 * 2 * 1 * 512 * 2),
    # E4B: the 24 layers before the 18 KV-shared ones, 20 sliding of 2 x 2 x 256 and 4 full of 2 x 2 x 512, at 2 B
    ("gemma-4-e4b-it", 20 * 2 * 2 * 256 * 2 + 4 * 2 * 2 * 512 * 2),
    # MiniMax-M3: 60 layers of 2 x 4 x 128 x 2 B, + the lightning indexer's bf16 key of 128 on the 57 sparse layers
    ("minimax-m3", 60 * 2 * 4 * 128 * 2 + 57 * 128 * 2),
]


def test_kv_table_covers_every_fixture():
    assert {name for name, _ in KV} == set(FOLDERS)


@pytest.mark.parametrize("name,expected", KV)
def test_kv_bytes_per_token(name, expected):
    assert kv_bytes_per_token(load_hf_config(FIXTURES / name), 16) == expected


@pytest.mark.parametrize(
    "name,context,expected",
    [
        # gemma-2-9b-it: 21 global layers keep all 32,768 tokens, 21 sliding (even i) keep 4,096:
        # 2 x 8 x 256 x (21 x 32,768 + 21 x 4,096) x 2 B
        ("gemma-2-9b-it", 32_768, 2 * 8 * 256 * (21 * 32_768 + 21 * 4_096) * 2),
        # gemma-3-1b-it: sliding_window_pattern 6 -> layers 5, 11, 17, 23 global (4), 22 sliding at 512:
        # 2 x 1 x 256 x (4 x 32,768 + 22 x 512) x 2 B
        ("gemma-3-1b-it", 32_768, 2 * 1 * 256 * (4 * 32_768 + 22 * 512) * 2),
        # gpt-oss-20b: layer_types alternate, 12 full at 131,072 and 12 sliding at 128:
        # 2 x 8 x 64 x (12 x 131,072 + 12 x 128) x 2 B
        ("gpt-oss-20b", 131_072, 2 * 8 * 64 * (12 * 131_072 + 12 * 128) * 2),
        # phi-3-mini-4k: sliding_window 2047 in every layer: 2 x 32 x 96 x 32 x 2,047 x 2 B at 4,096
        ("phi-3-mini-4k-instruct", 4_096, 2 * 32 * 96 * 32 * 2_047 * 2),
        # qwen2.5-7b: sliding_window is set but use_sliding_window false: every layer full
        ("qwen2.5-7b", 131_072, 57_344 * 131_072),
        # Nemotron-Nano-9B-v2 at 0 tokens: 27 Mamba-2 layers of SSM state 128 x 80 x 128 plus conv state
        # (128 x 80 + 2 x 8 x 128 = 12,288 channels) x (4 - 1), at 2 B
        ("nvidia-nemotron-nano-9b-v2", 0, 27 * (128 * 80 * 128 + 12_288 * 3) * 2),
        # Llama 4 Scout at 131,072: 12 NoPE layers keep everything, 36 chunked layers one 8,192-token chunk
        ("llama-4-scout-17b-16e", 131_072, 2 * 8 * 128 * (12 * 131_072 + 36 * 8_192) * 2),
        # Olmo 3 7B at 65,536: 8 full layers keep all, 24 sliding keep 4,096: 2 x 32 x 128 x (...) x 2 B
        ("olmo-3-1025-7b", 65_536, 2 * 32 * 128 * (8 * 65_536 + 24 * 4_096) * 2),
        # Granite-4.0-H-Small at 8,192 tokens: 4 attention layers' KV + 36 x (128 x 64 x 128 + (8,192 + 256) x 3), 2 B
        ("granite-4.0-h-small", 8_192, 2 * 4 * 8 * 128 * 8_192 * 2 + 36 * (128 * 64 * 128 + 8_448 * 3) * 2),
    ],
)
def test_kv_bytes_with_windows(name, context, expected):
    assert kv_bytes(load_hf_config(FIXTURES / name), context, 16) == expected


# -- mapping details ---------------------------------------------------------------------------


def test_head_dim_honoured_when_not_hidden_over_heads():
    """A Mistral-NeMo-like config: hidden 5120, 32 heads, head_dim 128 (not 160)."""
    cfg = {**_config("mistral-7b-instruct-v0.3"), "hidden_size": 5120, "head_dim": 128, "vocab_size": 131072}
    spec, defaults = hf_to_spec(cfg, "nemo/config.json")
    q = next(t for t in build(spec).tensors if t.name.endswith("q_proj.weight"))
    assert q.shape == (32 * 128, 5120) and not any(d.startswith("head_dim") for d in defaults)


def test_llama_biases_add_exactly_their_elements():
    base = count_params(load_hf_config(FIXTURES / "llama-3.1-8b")).total_params
    spec, _ = hf_to_spec({**_config("llama-3.1-8b"), "attention_bias": True, "mlp_bias": True}, "x/config.json")
    # q 4096 + k 1024 + v 1024 + o 4096; gate 14336 + up 14336 + down 4096; 32 layers
    assert count_params(spec).total_params - base == 32 * (4096 + 1024 + 1024 + 4096 + 14336 * 2 + 4096)


def test_deepseek_moe_layer_freq():
    """DeepSeek rule: layer i is MoE when i >= first_k_dense_replace and i % moe_layer_freq == 0."""
    cfg = {**_config("deepseek-v2-lite"), "moe_layer_freq": 2, "first_k_dense_replace": 1}
    spec, _ = hf_to_spec(cfg, "x/config.json")
    assert [i for i in range(27) if spec.is_moe_layer(i)] == list(range(2, 27, 2))


def test_qwen2_vl_nested_text_config_is_read():
    """Newer transformers save the language model's keys under text_config."""
    cfg = _config("qwen2-vl-7b-instruct")
    text_keys = (
        "hidden_size",
        "intermediate_size",
        "num_attention_heads",
        "num_hidden_layers",
        "num_key_value_heads",
        "vocab_size",
        "rope_theta",
        "rope_scaling",
    )
    nested = {k: v for k, v in cfg.items() if k not in text_keys}
    nested["text_config"] = {k: cfg[k] for k in text_keys}
    spec, _ = hf_to_spec(nested, "x/config.json")
    assert count_params(spec).total_params == 8_291_375_616


def test_defaults_are_reported():
    _, defaults = load_hf_config_verbose(FIXTURES / "qwen2-vl-7b-instruct")
    assert "vision_config.depth = 32 (absent; qwen2_vl default)" in defaults
    _, defaults = load_hf_config_verbose(FIXTURES / "gemma-2b")
    assert defaults == ["tie_word_embeddings = true (absent; transformers 5.24.0 GemmaConfig default)"]
    _, defaults = load_hf_config_verbose(FIXTURES / "llama-3.2-1b-instruct")
    assert defaults == []


def test_names_and_source():
    spec = load_hf_config(FIXTURES / "qwen2-vl-7b-instruct")
    assert spec.name == "qwen2-vl-7b-instruct"
    assert spec.display_name == "Qwen/Qwen2-VL-7B-Instruct"  # from the HF cache path in _name_or_path
    assert spec.source.url.endswith("qwen2-vl-7b-instruct/config.json")
    assert load_hf_config(FIXTURES / "phi-3-mini-4k-instruct").display_name == "Phi-3-mini-4k-instruct"
    assert load_hf_config(FIXTURES / "gpt2").display_name == "gpt2"


def test_a_config_in_the_hub_cache_is_named_after_its_repository(tmp_path):
    """huggingface_hub keeps a download as models--ORG--NAME/snapshots/REVISION/config.json: the
    name is NAME, not the revision's 40-digit hash (Qwen3.5-27B's config has no _name_or_path)."""
    snapshot = tmp_path / "models--Qwen--Qwen3.5-27B" / "snapshots" / ("0123456789abcdef" * 3)[:40]
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text((FIXTURES / "qwen3.5-27b" / "config.json").read_text())
    spec = load_hf_config(snapshot / "config.json")
    assert spec.name == "qwen3.5-27b" and spec.display_name == "Qwen3.5-27B"


@pytest.mark.parametrize("name", FOLDERS)
def test_yaml_round_trip(name):
    spec = load_hf_config(FIXTURES / name)
    assert validated(ModelSpec, yaml.safe_load(spec_to_yaml(spec))) == spec


# -- failures -----------------------------------------------------------------------------------


def test_folder_and_file_give_the_same_spec():
    assert load_hf_config(FIXTURES / "gpt2") == load_hf_config(FIXTURES / "gpt2" / "config.json")


def test_unknown_model_type_fails_clearly():
    """An unknown model_type is read generically; a key outside the standard vocabulary (BERT's
    token-type embedding) is refused, named, with the family whose keys are closest."""
    with pytest.raises(
        SpecError,
        match=r"config\.json: model_type 'bert' is not supported \(closest supported family by keys: llama\); "
        r"read generically: type_vocab_size is not in the standard config vocabulary; refusing to guess",
    ):
        hf_to_spec({**_config("llama-3.1-8b"), "model_type": "bert", "type_vocab_size": 2}, "config.json")


@pytest.mark.parametrize(
    "fixture,model_type,closest",
    [
        # the closest family is found by the config's keys, not by the model_type's spelling
        ("olmo-3-1025-7b", "olmo4", "olmo3"),
        ("qwen3-30b-a3b", "qwen3_7_moe", "qwen3_moe"),
        ("phi-3-mini-4k-instruct", "phi5", "phi3"),
        ("glm-4.5-air", "zz_new", "glm4_moe"),
        ("deepseek-v2-lite", "brand_new", "deepseek_v2"),
    ],
)
def test_unknown_model_type_names_the_closest_family(fixture, model_type, closest):
    with pytest.raises(
        SpecError,
        match=rf"model_type '{model_type}' is not supported \(closest supported family by keys: {closest}\)",
    ):
        hf_to_spec({**_config(fixture), "model_type": model_type, "unheard_of_width": 7}, "config.json")


@pytest.mark.parametrize(
    "key,value,model",
    [
        ("num_experts", 8, "llama-3.1-8b"),  # a MoE key on a dense family
        ("attention_bias", True, "mistral-7b-instruct-v0.3"),  # Mistral has no attention biases
        ("use_qk_norm", True, "llama-3.1-8b"),
        ("text_config", {"hidden_size": 1024}, "gemma-2b"),
    ],
)
def test_unplaceable_shape_key_fails(key, value, model):
    assert key in SHAPE_KEYS
    with pytest.raises(SpecError, match=rf"x/config\.json: {key} = .* cannot place it"):
        hf_to_spec({**_config(model), key: value}, "x/config.json")


def test_inert_shape_key_is_fine():
    spec, _ = hf_to_spec({**_config("mistral-7b-instruct-v0.3"), "attention_bias": False}, "x/config.json")
    assert count_params(spec).total_params == 7_248_023_552


@pytest.mark.parametrize(
    "change,message",
    [
        (
            {"hidden_size": "4096"},
            r'hidden_size must be an integer, as transformers 5.24.0 LlamaConfig declares it \(got "4096"\)',
        ),
        ({"hidden_size": None}, r"hidden_size = null: transformers 5.24.0 LlamaConfig declares an integer there"),
        ({"num_key_value_heads": 5}, r"num_key_value_heads \(5\) must divide num_attention_heads \(32\)"),
        ({"architectures": ["LlamaForSequenceClassification"]}, r"architectures .* only causal-LM"),
        ({"torch_dtype": "complex64"}, r"torch_dtype 'complex64' is not a dtype"),
    ],
)
def test_bad_values_fail_naming_the_key(change, message):
    with pytest.raises(SpecError, match=message):
        hf_to_spec({**_config("llama-3.1-8b"), **change}, "x/config.json")


def test_missing_config_fails_clearly(tmp_path):
    with pytest.raises(SpecError, match="folder has no config.json"):
        load_hf_config(tmp_path)
    with pytest.raises(SpecError, match="no such file"):
        load_hf_config(tmp_path / "config.json")


@pytest.mark.parametrize(
    "text,message",
    [
        ('{"model_type": "llama",', "invalid JSON at line 1"),
        # NaN and Infinity are read (as transformers reads them); a shape key holding one is refused
        (
            '{"model_type": "llama", "hidden_size": NaN}',
            r"hidden_size must be an integer, as transformers 5.24.0 LlamaConfig declares it \(got NaN\)",
        ),
        ('{"model_type": "llama", "x": 1, "x": 2}', "duplicate key 'x'"),
        ("[1, 2]", "top level must be a JSON object"),
        ("", "empty file"),
    ],
)
def test_malformed_json_fails_clearly(tmp_path, text, message):
    (tmp_path / "config.json").write_text(text, encoding="utf-8")
    with pytest.raises(SpecError, match=message):
        load_hf_config(tmp_path)


def test_huge_config_is_refused(tmp_path):
    """A config.json may hold a quantization layer map of a few MB (nvidia's NVFP4 releases); 16 MB
    is refused, before it is parsed."""
    (tmp_path / "config.json").write_text('{"pad": "' + "x" * 16_000_001 + '"}', encoding="utf-8")
    with pytest.raises(SpecError, match=r"too large for a config.json \(limit 16,000,000 bytes\)"):
        load_hf_config(tmp_path)


@pytest.mark.parametrize("layers", [10_001, 1_000_000, 10**40, 1e40])
@pytest.mark.parametrize("family", ["deepseek-v3", "llama-3.1-8b", "gemma-3-4b-it", "qwen3-next"])
def test_a_layer_count_past_the_schema_is_refused_before_any_layer_is_built(family, layers):
    """num_hidden_layers is bounded (10,000) when read, before a mapping expands per-layer lists
    (DeepSeek's dense-layer list is quadratic in L: a million layers did not finish)."""
    config = dict(QWEN3_NEXT) if family == "qwen3-next" else json.loads((FIXTURES / family / "config.json").read_text())
    target = config["text_config"] if "text_config" in config else config
    target["num_hidden_layers"] = layers
    # 1e40 is a float: transformers' strict int field refuses it before the bound is reached
    bound = "must be an integer, as transformers" if isinstance(layers, float) else "must be an integer <= 10,000"
    with pytest.raises(SpecError, match=f"num_hidden_layers {bound}"):
        hf_to_spec(config, "config.json")


# -- import (the `llm-cost import` engine) -------------------------------------------------------


def test_import_writes_validates_and_refuses_to_overwrite(tmp_path):
    from llm_cost.analyses.import_spec import import_config
    from llm_cost.core.errors import InputError

    out = tmp_path / "qwen2.5-7b.yaml"
    r = import_config(FIXTURES / "qwen2.5-7b", out)
    assert (r.name, r.model_type, r.total_params) == ("qwen2.5-7b", "qwen2", 7_615_616_512)
    spec = load_model(str(out))  # our YAML loader reads what was written
    assert spec.name == "qwen2.5-7b" and count_params(spec).total_params == 7_615_616_512
    assert spec.source.url.endswith("qwen2.5-7b/config.json")
    before = out.read_text()
    with pytest.raises(InputError, match="already exists; pass force"):
        import_config(FIXTURES / "gpt2", out)
    assert out.read_text() == before
    r = import_config(FIXTURES / "gpt2", out, name="gpt2-small", force=True)
    assert r.name == "gpt2-small" and load_model(str(out)).name == "gpt2-small"
    assert [p.name for p in tmp_path.iterdir()] == ["qwen2.5-7b.yaml"]  # no temporary file left behind


@pytest.mark.parametrize("out,message", [("spec.txt", "must end in .yaml"), ("missing/x.yaml", "does not exist")])
def test_import_rejects_bad_targets(tmp_path, out, message):
    from llm_cost.analyses.import_spec import import_config
    from llm_cost.core.errors import InputError

    with pytest.raises(InputError, match=message):
        import_config(FIXTURES / "gpt2", tmp_path / out)


def test_defaults_used_only_for_config_paths(tmp_path):
    from llm_cost.specs.hf import defaults_used

    assert defaults_used("llama3-8b") is None
    (tmp_path / "dir.yaml").mkdir()
    assert defaults_used(str(tmp_path / "dir.yaml")) is None  # a folder named like a YAML spec
    assert defaults_used(str(FIXTURES / "gemma-2b")) == [
        "tie_word_embeddings = true (absent; transformers 5.24.0 GemmaConfig default)"
    ]


# --- the command line -------------------------------------------------------------------------


def test_params_accepts_a_config_json_and_a_folder(cli):
    for arg in (str(FIXTURES / "gemma-2b" / "config.json"), str(FIXTURES / "gemma-2b")):
        r = cli("params", arg, "--json")
        assert r.code == 0 and r.json()["total_params"] == 2_506_172_416


def test_params_from_any_folder(cli, tmp_path, monkeypatch):
    """`llm-cost params path/to/config.json` works from any working directory."""
    monkeypatch.chdir(tmp_path)
    r = cli("params", str(FIXTURES / "llama-3.1-8b" / "config.json"), "--json")
    assert r.code == 0 and r.json()["total_params"] == 8_030_261_248


def test_params_verbose_lists_defaults_on_stderr(cli):
    r = cli("params", str(FIXTURES / "gemma-2b"), "--json", "--verbose")
    assert r.code == 0 and r.json()["total_params"] == 2_506_172_416
    assert "tie_word_embeddings = true (absent; transformers 5.24.0 GemmaConfig default)" in r.err


def test_kv_accepts_a_config_json(cli):
    r = cli("kv", str(FIXTURES / "deepseek-v3"), "--context", "1024", "--json")
    assert r.code == 0 and r.json()["bytes_per_token"] == 61 * 576 * 2


def test_unknown_model_type_exits_2(cli, tmp_path):
    (tmp_path / "config.json").write_text('{"model_type": "bert", "type_vocab_size": 2}')
    r = cli("params", str(tmp_path))
    assert r.code == 2 and "model_type 'bert' is not supported" in r.err and r.out == ""
    assert "type_vocab_size is not in the standard config vocabulary" in r.err


def test_import_writes_refuses_and_forces(cli, tmp_path):
    out = tmp_path / "qwen2.5-7b.yaml"
    r = cli("import", str(FIXTURES / "qwen2.5-7b"), "-o", str(out))
    assert r.code == 0 and "7,615,616,512" in r.out and out.is_file()
    assert cli("params", str(out), "--json").json()["total_params"] == 7_615_616_512
    r = cli("import", str(FIXTURES / "qwen2.5-7b"), "-o", str(out))
    assert r.code == 2 and "already exists; pass --force" in r.err
    assert cli("import", str(FIXTURES / "qwen2.5-7b"), "-o", str(out), "--force").code == 0
    assert [p.name for p in tmp_path.iterdir()] == ["qwen2.5-7b.yaml"]  # no temp file left


@pytest.mark.parametrize(
    "name,kind,title",
    [
        ("qwen2-vl-7b-instruct", "qwen2_vl", "Qwen2-VL"),
        ("qwen2.5-vl-7b-instruct", "qwen2_5_vl", "Qwen2.5-VL"),
        ("qwen3-vl-8b-instruct", "qwen3_vl", "Qwen3-VL"),
        ("gemma-3-4b-it", "siglip_gemma3", "SigLIP (Gemma 3)"),
        ("llama-4-scout-17b-16e", "llama4", "Llama 4"),
        ("mistral-small-3.2-24b-instruct-2506", "pixtral", "Pixtral"),
        ("kimi-k2.5", "moonvit", "MoonViT (Kimi-K2.5)"),
        ("glm-4.5v", "glm4v", "GLM-4V"),
    ],
)
def test_every_vision_tower_is_the_one_vision_field_told_apart_by_kind(name, kind, title):
    spec = load_hf_config(FIXTURES / name)
    assert [f for f in field_names(ModelSpec) if "vision" in f] == ["vision"]
    assert spec.vision is not None and spec.vision.kind == kind and spec.vision.title == title
    assert yaml.safe_load(spec_to_yaml(spec))["vision"]["kind"] == kind


@pytest.mark.parametrize("block", [[0, 0], "abc", [128, 128, 1], [128.0, 128.0], None])
def test_an_fp8_block_size_that_is_not_two_positive_integers_is_refused(block, tmp_path):
    """DeepSeek-V3's config.json as published, its ``weight_block_size`` replaced: transformers'
    FineGrainedFP8Config refuses anything but "a tuple of two positive integers", and so does the
    reader, naming the file and the key (it had read such values as one scale per tensor). An
    explicit null is the absent key: one scale per tensor."""
    config = json.loads((FIXTURES / "deepseek-v3" / "config.json").read_text(encoding="utf-8"))
    config["quantization_config"]["weight_block_size"] = block
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    if block is None:
        assert load_model(str(path)).quantization.weights_format == "fp8"
        return
    with pytest.raises(SpecError, match=r"config\.json: quantization_config\.weight_block_size must be two positive"):
        load_model(str(path))


def test_an_fp8_block_size_the_tool_does_not_model_is_weighed_per_tensor_and_noted(tmp_path):
    """[64, 64] is a valid block the tool does not model: one scale per tensor, said in the spec's note."""
    config = json.loads((FIXTURES / "deepseek-v3" / "config.json").read_text(encoding="utf-8"))
    config["quantization_config"]["weight_block_size"] = [64, 64]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    spec = load_model(str(path))
    assert spec.quantization.weights_format == "fp8"
    assert "weight_block_size [64, 64] is not modelled" in spec.source.note
    published = load_model(str(FIXTURES / "deepseek-v3" / "config.json"))
    assert published.quantization.weights_format == "fp8_block"


@pytest.mark.parametrize(
    "quantization, key",
    [
        ({"quant_method": "mxfp4", "modules_to_not_convert": 1}, "modules_to_not_convert must be a list"),
        ({"quant_method": "mxfp4", "modules_to_not_convert": "lm_head"}, "modules_to_not_convert must be a list"),
        ({"quant_method": "mxfp4", "modules_to_not_convert": ["lm_head", None]}, "modules_to_not_convert must be"),
        ({"quant_method": "fp8", "ignored_layers": 7}, "ignored_layers must be a list"),
        ({"quant_method": "awq", "bits": 4, "group_size": 128, "modules_to_not_convert": 12}, "modules_to_not_convert"),
        ({"quant_method": "modelopt", "quantization": "NVFP4"}, "quantization must be a mapping"),
        ({"quant_method": "modelopt", "quant_algo": "NVFP4", "exclude_modules": 3}, "exclude_modules must be a list"),
        (
            {"quant_method": "compressed-tensors", "config_groups": {"g": {"weights": "x"}}},
            "config_groups.g.weights must be a mapping",
        ),
        (
            {
                "quant_method": "compressed-tensors",
                "config_groups": {
                    "g": {"weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": 128}}
                },
            },
            "block_structure must be two positive integers",
        ),
    ],
)
def test_a_quantization_config_field_of_the_wrong_type_is_refused_naming_it(quantization, key, tmp_path):
    """Llama-3.1-8B's config.json as published with a constructed ``quantization_config`` whose
    field has a type no checkpoint has (a hostile-input trial: each raised TypeError or
    AttributeError, an internal error, and a string of module names was read letter by letter):
    one SpecError naming the file and the key."""
    config = json.loads((FIXTURES / "llama-3.1-8b" / "config.json").read_text(encoding="utf-8"))
    config["quantization_config"] = quantization
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(SpecError, match=rf"config\.json: quantization_config\..*{key}"):
        load_model(str(path))


@pytest.mark.parametrize(
    ("modules", "kept"),
    [
        # Qwen/Qwen3-235B-A22B-FP8 and -30B-A3B-FP8 list every layer's norms and router: attention stays
        # FP8 (their Hub totals count its block scales; catalog/CATALOG.yaml)
        (["lm_head", "model.layers.0.input_layernorm", "model.layers.0.post_attention_layernorm",
          "model.layers.0.mlp.gate"], ()),
        # GLM-5-FP8: the MLA norms are vectors, the DSA indexer's weights_proj is never quantised (its Hub
        # total counts wq_b's and wk's block scales, not weights_proj's): neither keeps attention
        (["model.layers.0.self_attn.q_a_layernorm", "model.layers.0.self_attn.indexers_proj"], ()),
        (["model.layers.0.self_attn.indexer"], ("indexer",)),
        (["model.layers.0.self_attn.o_proj"], ("attention",)),
    ],
)  # fmt: skip
def test_kept_modules_name_the_groups_whose_matmuls_they_are(modules, kept):
    """A MoE user's and an attacker's finding: ``post_attention_layernorm`` was read as keeping the
    attention group, so Qwen3-*-FP8 counted its attention in BF16 (Qwen3-30B-A3B-FP8 31.17 GB
    weighed as 32.08 GB); a norm is a vector, never quantised, and keeps no group."""
    from llm_cost.specs.hf.quantization import read_quantization

    q = {"quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128], "modules_to_not_convert": modules}
    assert read_quantization(q, "bf16", [])["quantization"]["kept"] == kept


def test_a_config_dict_is_held_to_the_values_a_config_file_may_hold():
    """A config.json file past 1,000,000 values is refused at once; an attacker's config dicts of
    2,000,000 keys or a 24-million-entry mlp_only_layers were read for 6.6 s and 9.3 s. The same
    limit (MAX_CONFIG_VALUES) refuses them naming model; a real config (Qwen3.6-27B's, 1,562 values)
    passes."""
    import llm_cost
    from llm_cost.api.model import config_of
    from llm_cost.core.limits import MAX_CONFIG_VALUES

    config, _ = config_of(str(FIXTURES / "qwen3.6-27b"))
    for bloated in ({**config, "mlp_only_layers": [0] * (MAX_CONFIG_VALUES + 1)},
                    {**config, **{f"k{i}": i for i in range(MAX_CONFIG_VALUES)}}):  # fmt: skip
        with pytest.raises(llm_cost.LlmCostError) as refused:
            llm_cost.params(bloated)
        assert refused.value.fields == ("model",) and f"more than {MAX_CONFIG_VALUES:,} values" in str(refused.value)
    assert llm_cost.params(config).total_params == llm_cost.params(str(FIXTURES / "qwen3.6-27b")).total_params
