"""The generic config reader (llm_cost.specs.hf.generic), transformers' defaults for absent keys
(llm_cost.specs.hf.defaults) and reading as leniently as transformers does, against the
independent checkpoint totals of tests/fixtures/hf/CHECKPOINTS.yaml."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from llm_cost.core.errors import SpecError
from llm_cost.model.kv import kv_bytes_per_token
from llm_cost.model.params import count_params
from llm_cost.specs.hf import hf_to_spec, load_hf_config, load_hf_config_verbose

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf"
CHECKPOINTS = yaml.safe_load((FIXTURES / "CHECKPOINTS.yaml").read_text(encoding="utf-8"))


def _config(name: str) -> dict:
    return json.loads((FIXTURES / name / "config.json").read_text(encoding="utf-8"))


# -- an invented model_type of standard keys is counted, labelled --------------------------------


@pytest.mark.parametrize(
    "fixture",
    [
        "llama-3.1-8b",  # GQA, dense gated MLP
        "deepseek-v2-lite",  # MLA (q_lora_rank null), MoE with shared experts after first_k_dense_replace
        "mistral-7b-instruct-v0.3",  # GQA, sliding_window null
        "qwen2.5-3b",  # ... but Qwen2's q/k/v biases have no key: the generic read misses them
    ],
)
def test_an_invented_model_type_of_standard_keys_is_read_generically(fixture):
    """A real config renamed to a model_type no mapping knows: the standard vocabulary gives the
    checkpoint's total where the family's modeling file does not depart from it (llama, DeepSeek-V2,
    Mistral), and the label says the count was not checked against the family: Qwen2's q/k/v
    biases, which no config key announces, are exactly what a generic read cannot know."""
    spec, _ = hf_to_spec({**_config(fixture), "model_type": "brand_new_lm"}, "x/config.json")
    total = count_params(spec).total_params
    expected = CHECKPOINTS[fixture]["total_params"]
    if fixture == "qwen2.5-3b":
        # 36 layers x (q 2,048 + k 256 + v 256) bias elements
        assert expected - total == 36 * (2_048 + 256 + 256)
    else:
        assert total == expected
    assert "Read generically: not checked against a checkpoint of this family." in spec.source.note


def test_the_generic_label_is_in_text_and_json(cli, tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({**_config("llama-3.1-8b"), "model_type": "brand_new_lm"}))
    r = cli("params", str(tmp_path), "--json")
    assert r.code == 0 and r.json()["total_params"] == CHECKPOINTS["llama-3.1-8b"]["total_params"]
    codes = {n["code"]: n["params"] for n in r.json()["conventions"]}
    assert codes["params.read_generically"] == {"model_type": "brand_new_lm"}
    text = cli("params", str(tmp_path))
    assert text.code == 0
    assert "model_type brand_new_lm read generically: not checked against a checkpoint of this family" in text.out


def test_a_supported_family_is_not_labelled(cli):
    r = cli("params", str(FIXTURES / "llama-3.1-8b"), "--json")
    assert "params.read_generically" not in {n["code"] for n in r.json()["conventions"]}


@pytest.mark.parametrize(
    "extra,key",
    [
        ({"type_vocab_size": 2}, "type_vocab_size"),  # BERT's token-type embedding
        ({"moe_latent_size": 1024}, "moe_latent_size"),  # Nemotron-3's latent MoE
        ({"index_topk": 2048, "index_n_heads": 64}, "index_n_heads"),  # DeepSeek sparse attention's indexer
    ],
)
def test_a_key_outside_the_vocabulary_is_refused_by_name(extra, key):
    with pytest.raises(SpecError, match=rf"read generically: {key} is not in the standard config vocabulary"):
        hf_to_spec({**_config("llama-3.1-8b"), "model_type": "brand_new_lm", **extra}, "x/config.json")


def test_a_vision_tower_is_not_guessed():
    cfg = {**_config("qwen3-vl-8b-instruct"), "model_type": "brand_new_vl"}
    with pytest.raises(SpecError, match=r"vision_config is not in the standard config vocabulary"):
        hf_to_spec(cfg, "x/config.json")


@pytest.mark.parametrize(
    "model_type,not_named",
    [
        # the misleading hints by name: lfm2 -> olmo2, mimo_v2 -> minimax_m2, gemma4 -> gemma
        ("lfm2", "olmo2"),
        ("mimo_v2_flash", "minimax_m2"),
        ("gemma4", "gemma)"),
    ],
)
def test_the_closest_family_hint_compares_keys_not_names(model_type, not_named):
    """The hint is computed from keys: a config holding the keys transformers declares for
    ``model_type`` (its configuration class's fields) is not sent to a family of a similar name."""
    from llm_cost.specs.hf.defaults import _data

    entry = _data()["families"][model_type]
    cfg = {"model_type": model_type + "_x", **entry["defaults"]}
    if "text" in entry:
        cfg["text_config"] = entry["text"]["defaults"]
    with pytest.raises(SpecError) as exc:
        hf_to_spec(cfg, "x/config.json")
    assert f"model_type '{model_type}_x' is not supported (" in str(exc.value)
    assert not_named not in str(exc.value).split(";")[0]


# -- defaults as transformers has them -----------------------------------------------------------


def test_gemma3_text_config_without_vocab_size_takes_transformers_default():
    """A Gemma-3 text_config without vocab_size: Gemma3TextConfig's default 262,208 (transformers
    5.24.0 configuration_gemma3.py), and the checkpoint's total 4,300,079,472 (CHECKPOINTS.yaml)."""
    cfg = _config("gemma-3-4b-it")
    assert cfg["text_config"].pop("vocab_size") == 262_208
    spec, defaults = hf_to_spec(cfg, "x/config.json")
    assert count_params(spec).total_params == CHECKPOINTS["gemma-3-4b-it"]["total_params"] == 4_300_079_472
    assert "vocab_size = 262208 (absent; transformers 5.24.0 Gemma3TextConfig / Gemma3Config default)" in defaults


def test_an_explicit_null_is_still_refused():
    cfg = _config("gemma-3-4b-it")
    cfg["text_config"]["vocab_size"] = None
    with pytest.raises(
        SpecError, match=r"vocab_size = null: transformers 5.24.0 Gemma3TextConfig / Gemma3Config declares an integer"
    ):
        hf_to_spec(cfg, "x/config.json")


def test_defaults_table_matches_installed_transformers():
    """llm_cost/data/hf_defaults.json against the installed transformers' configuration classes
    (skipped without transformers; the table names the version it was taken from)."""
    transformers = pytest.importorskip("transformers")
    import dataclasses

    from transformers import CONFIG_MAPPING

    from llm_cost.specs.hf.defaults import _data

    data = _data()
    if transformers.__version__ != data["transformers_version"]:
        pytest.skip(f"table from transformers {data['transformers_version']}, {transformers.__version__} installed")
    for model_type, entry in data["families"].items():
        cls = CONFIG_MAPPING[model_type]
        assert cls.__name__ == entry["class"]
        fields = {f.name: f.default for f in dataclasses.fields(cls)}
        for key, value in entry["defaults"].items():
            got = fields[key]
            assert (list(got) if isinstance(got, tuple) else got) == value, (model_type, key)
        # the spellings transformers 5 saves (attribute_map), and the fields that admit null
        assert entry.get("aliases", {}) == dict(getattr(cls, "attribute_map", {})), model_type
        nullable = {
            f.name for f in dataclasses.fields(cls) if any(w in str(f.type) for w in ("None", "Optional", "Any"))
        }
        assert set(entry["types"]["nullable"]) <= nullable, model_type
    assert data["families"]["gemma3_text"]["defaults"]["vocab_size"] == 262_208


# -- lenient where transformers is -------------------------------------------------------------------


def test_infinity_in_a_non_shape_key_is_read(tmp_path):
    """Nemotron-3-Super writes ``"time_step_limit": [0.0, Infinity]``, which Python's json module
    and transformers read: the Nemotron-Nano-9B-v2 config with that line counts as before."""
    text = (FIXTURES / "nvidia-nemotron-nano-9b-v2" / "config.json").read_text(encoding="utf-8")
    cfg = json.loads(text)
    cfg["time_step_limit"] = "@INF@"
    (tmp_path / "config.json").write_text(json.dumps(cfg).replace('"@INF@"', "[0.0, Infinity]"))
    assert "Infinity" in (tmp_path / "config.json").read_text()
    total = count_params(load_hf_config(tmp_path)).total_params
    assert total == CHECKPOINTS["nvidia-nemotron-nano-9b-v2"]["total_params"]


def test_infinity_in_a_shape_key_is_refused(tmp_path):
    (tmp_path / "config.json").write_text(
        json.dumps({**_config("llama-3.1-8b"), "intermediate_size": "@INF@"}).replace('"@INF@"', "Infinity")
    )
    with pytest.raises(
        SpecError,
        match=r"intermediate_size must be an integer, as transformers 5.24.0 LlamaConfig declares it \(got Infinity\)",
    ):
        load_hf_config(tmp_path)


def test_qwen3_restating_use_qk_norm_is_accepted():
    """Qwen3-Coder-480B's qwen3_moe config says ``"use_qk_norm": true``, which every qwen3_moe model
    has: accepted, counted exactly (480,154,875,392, the Hub's safetensors count) and the same key
    on Qwen3-30B-A3B changes nothing; false is refused."""
    coder = load_hf_config(FIXTURES / "qwen3-coder-480b-a35b-instruct")
    assert _config("qwen3-coder-480b-a35b-instruct")["use_qk_norm"] is True
    assert count_params(coder).total_params == CHECKPOINTS["qwen3-coder-480b-a35b-instruct"]["total_params"]
    assert count_params(coder).total_params == 480_154_875_392
    cfg = {**_config("qwen3-30b-a3b"), "use_qk_norm": True}
    assert (
        count_params(hf_to_spec(cfg, "x/config.json")[0]).total_params == CHECKPOINTS["qwen3-30b-a3b"]["total_params"]
    )
    with pytest.raises(SpecError, match=r"use_qk_norm = False: model_type 'qwen3_moe' always has use_qk_norm = True"):
        hf_to_spec({**cfg, "use_qk_norm": False}, "x/config.json")


def test_kv_of_a_generic_read_is_the_hand_count():
    """DeepSeek-V2-Lite read generically: MLA caches kv_lora_rank + qk_rope_head_dim = 512 + 64
    elements per layer, 27 layers, 2 bytes: 31,104 B per token."""
    spec, _ = hf_to_spec({**_config("deepseek-v2-lite"), "model_type": "brand_new_lm"}, "x/config.json")
    assert kv_bytes_per_token(spec, 16) == 27 * (512 + 64) * 2


def test_verbose_defaults_name_the_transformers_class():
    _, defaults = load_hf_config_verbose(FIXTURES / "gemma-2b")
    assert defaults == ["tie_word_embeddings = true (absent; transformers 5.24.0 GemmaConfig default)"]


# -- model types read through the departures table, against checkpoint totals -------------------------


def test_qwen3_vl_moe_language_model_is_qwen3_30b_a3b():
    """Qwen3-VL-30B-A3B: its language model is Qwen3-30B-A3B's 30,532,122,624 (CHECKPOINTS.yaml),
    the rest the vision tower; the whole is the loaded model's 31,070,754,032."""
    r = count_params(load_hf_config(FIXTURES / "qwen3-vl-30b-a3b-instruct"))
    assert r.total_params == CHECKPOINTS["qwen3-vl-30b-a3b-instruct"]["total_params"] == 31_070_754_032
    assert r.decoder_params == CHECKPOINTS["qwen3-30b-a3b"]["total_params"]


@pytest.mark.parametrize(
    "name,mtp_layer",
    [
        # MTP layer: fc [d, 2d] + 2 input norms + 1 final norm + one decoder layer of full attention
        # (gated q 2 x n_q d_h, k/v n_kv d_h, o, q/k norms d_h) and the layer's FFN, no embedding copies
        (
            "qwen3.5-27b",
            5_120 * 10_240
            + 3 * 5_120
            + (5_120 * 2 * 24 * 256 + 2 * 5_120 * 4 * 256 + 24 * 256 * 5_120 + 2 * 256)
            + 3 * 5_120 * 17_408
            + 2 * 5_120,
        ),
        (
            "qwen3.5-35b-a3b",
            2_048 * 4_096
            + 3 * 2_048
            + (2_048 * 2 * 16 * 256 + 2 * 2_048 * 2 * 256 + 16 * 256 * 2_048 + 2 * 256)
            + (256 * 3 * 2_048 * 512 + 256 * 2_048 + 3 * 2_048 * 512 + 2_048)
            + 2 * 2_048,
        ),
    ],
)
def test_qwen3_5_counts_the_loaded_model_and_the_mtp_layer_apart(name, mtp_layer):
    """Qwen3.5 (dense and MoE): the loaded model's total (CHECKPOINTS.yaml); the checkpoint's MTP
    layer (mtp_num_hidden_layers 1, Qwen3-Next layout) by hand arithmetic beside it. For
    Qwen3.5-35B-A3B the two together are the Hub's 35.95B."""
    r = count_params(load_hf_config(FIXTURES / name))
    assert r.total_params == CHECKPOINTS[name]["total_params"]
    assert r.mtp_params == mtp_layer and r.mtp_checkpoint_copies == 0
    if name == "qwen3.5-35b-a3b":
        assert round(r.checkpoint_params / 1e9, 2) == 35.95


def test_qwen3_5_vision_has_no_deepstack():
    cfg = _config("qwen3.5-27b")
    cfg["vision_config"]["deepstack_visual_indexes"] = [8, 16, 24]
    with pytest.raises(SpecError, match=r"deepstack_visual_indexes is set, but model_type 'qwen3_5' has no DeepStack"):
        hf_to_spec(cfg, "x/config.json")


def test_qwen3_5_moe_shared_expert_is_gated():
    """Qwen3.5-MoE's shared expert always has its sigmoid gate [1, d] (modeling_qwen3_5_moe.py):
    a config without a shared expert cannot be placed."""
    cfg = _config("qwen3.5-35b-a3b")
    cfg["text_config"]["shared_expert_intermediate_size"] = 0
    with pytest.raises(SpecError, match=r"shared_expert_intermediate_size = 0 leaves the always-present"):
        hf_to_spec(cfg, "x/config.json")


def test_departure_types_are_not_labelled():
    spec = load_hf_config(FIXTURES / "qwen3.5-35b-a3b")
    assert "Read generically" not in spec.source.note and spec.model_type == "qwen3_5_moe"


def test_glm4_moe_lite_is_deepseek_attention_with_glm_routing():
    """GLM-4.7-Flash (glm4_moe_lite): DeepSeek-V3 MLA and a GLM-4-MoE router that always stores
    e_score_correction_bias; the GGUF anatomy's parts (CHECKPOINTS.yaml): attention 1,022,623,744,
    routed experts 27,783,069,696, active 3,896,766,080 of 29,943,393,920."""
    r = count_params(load_hf_config(FIXTURES / "glm-4.7-flash"))
    rows = {row.label.split(" (")[0]: row.params for row in r.rows}
    assert r.total_params == CHECKPOINTS["glm-4.7-flash"]["total_params"] == 29_943_393_920
    assert rows["attention"] == 1_022_623_744 and rows["routed experts"] == 27_783_069_696
    assert r.active_params == 3_896_766_080
    # router: 46 MoE layers x (weight 64 x 2,048 + e_score_correction_bias 64)
    assert rows["router"] == 46 * (64 * 2_048 + 64)


def test_kimi_k25_is_kimi_k2_plus_moonvit():
    """Kimi-K2.5: the language model is Kimi K2's 1,026,408,232,448 (CHECKPOINTS.yaml kimi-k2-instruct);
    the vision part is the checkpoint's tensor list (untraced index reference 62530201892) summed by hand, and
    equals the catalogue's Kimi K2.5 - Kimi K2 Thinking difference."""
    r = count_params(load_hf_config(FIXTURES / "kimi-k2.5"))
    e, f, layers, d = 1_152, 4_304, 27, 7_168
    tower = (
        e * 3 * 14 * 14
        + e  # patch_embed.proj weight [1152, 3, 14, 14] + bias
        + 64 * 64 * e  # patch_embed.pos_emb [64, 64, 1152]
        + layers * (2 * 2 * e + 3 * e * e + 3 * e + e * e + e + f * e + f + e * f + e)  # norm0/1, wqkv, wo, fc0, fc1
        + 2 * e  # final_layernorm
    )
    projector = 2 * e + (4 * e) * (4 * e) + 4 * e + d * 4 * e + d  # pre_norm, proj.0, proj.2
    assert r.vision_params == tower + projector == 1_028_542_417_904 - 1_028_071_273_984
    assert r.decoder_params == CHECKPOINTS["kimi-k2-instruct"]["total_params"]
    assert r.total_params == CHECKPOINTS["kimi-k2.5"]["total_params"]


def test_kimi_k25_projector_width_must_be_the_tower_width():
    cfg = _config("kimi-k2.5")
    cfg["vision_config"]["mm_hidden_size"] = 1024
    with pytest.raises(SpecError, match=r"vision_config\.mm_hidden_size \(1024\) must equal the tower's hidden_size"):
        hf_to_spec(cfg, "x/config.json")


def test_glm4v_moe_is_glm_4_5_air_plus_the_glm4v_tower():
    """GLM-4.5V: its language model is GLM-4.5-Air's main model (106,852,251,264, the glm-4.5-air
    test's figure); the vision tower and merger summed by hand from the checkpoint's tensor list
    (untraced index reference 62538297598); the whole is the report's 107,710,933,120."""
    r = count_params(load_hf_config(FIXTURES / "glm-4.5v"))
    e, o, f, blocks = 1_536, 4_096, 10_944, 24
    tower = (
        576 * e  # embeddings.position_embedding [576, 1536]
        + e * 3 * 2 * 14 * 14
        + e  # patch_embed.proj [1536, 3, 2, 14, 14] + bias
        + blocks * (2 * e + 3 * e * e + e * e + 3 * o * e)  # norm1/2, qkv, proj, gate/up/down
        + 2 * e  # post_conv_layernorm, post_layernorm
        + o * e * 2 * 2
        + o  # downsample [4096, 1536, 2, 2] + bias
        + o * o
        + 2 * o
        + 3 * f * o  # merger proj, post_projection_norm, gate/up/down
    )
    assert r.vision_params == tower
    assert r.decoder_params == 106_852_251_264
    assert r.total_params == CHECKPOINTS["glm-4.5v"]["total_params"] == 107_710_933_120


@pytest.mark.parametrize("name,text_type", [("qwen3.5-35b-a3b", "qwen3_5_moe_text"), ("qwen3.5-27b", "qwen3_5_text")])
def test_qwen3_5_text_models_are_the_wrappers_language_models(name, text_type):
    """Qwen3_5ForCausalLM / Qwen3_5MoeForCausalLM: a config of the text model alone (the wrapper's
    text_config, model_type qwen3_5_text / qwen3_5_moe_text) counts the wrapper's language model."""
    wrapper = count_params(load_hf_config(FIXTURES / name))
    text = {**_config(name)["text_config"], "model_type": text_type}
    r = count_params(hf_to_spec(text, "x/config.json")[0])
    assert r.total_params == wrapper.decoder_params == wrapper.total_params - wrapper.vision_params
    assert r.mtp_params == wrapper.mtp_params


def test_a_departures_line_can_bring_a_new_kind(monkeypatch):
    """The extension point for a new layer kind: a line whose ``extra`` reader reads the kind's key
    (here a stand-in that moves the model to LayerNorms) is a supported family; without the line
    the key is refused, named."""
    from llm_cost.specs.hf import departures, families
    from llm_cost.specs.hf.generic import generic_mapper

    def layernorm_reader(c, out):
        if c.bool("use_layernorm", False):
            out["norm_type"] = "layernorm"

    cfg = {**_config("llama-3.1-8b"), "model_type": "llama_with_layernorm", "use_layernorm": True}
    with pytest.raises(SpecError, match="use_layernorm is not in the standard config vocabulary"):
        hf_to_spec(cfg, "x/config.json")
    monkeypatch.setitem(
        departures.DEPARTURES, "llama_with_layernorm", departures.Departures(cite="a test", extra=layernorm_reader)
    )
    monkeypatch.setitem(
        families.FAMILIES,
        "llama_with_layernorm",
        (generic_mapper("llama_with_layernorm"), families.FAMILIES["llama"][1]),
    )
    spec, _ = hf_to_spec(cfg, "x/config.json")
    # LayerNorms add a bias beside each RMSNorm weight: 2 per layer x 32 layers + the final norm, of d = 4,096
    assert count_params(spec).total_params - CHECKPOINTS["llama-3.1-8b"]["total_params"] == (2 * 32 + 1) * 4_096
