"""A config.json's values checked by type and range before the mappings read them (issue 36 item
6, issue 34 "bad input"): nonsense that used to change the count is refused naming the key, keys
that contradict each other are refused naming both, and a null transformers accepts is read with
the default it stands for, stated."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from llm_cost.core.errors import SpecError
from llm_cost.model.params import count_params
from llm_cost.specs.hf import hf_to_spec, load_hf_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def _config(name: str) -> dict:
    (path,) = [p for p in (FIXTURES / "hf" / name, FIXTURES / "hf-kinds" / name) if p.is_dir()]
    return json.loads((path / "config.json").read_text(encoding="utf-8"))


def _text(name: str, **change) -> dict:
    config = _config(name)
    return {**config, "text_config": {**config["text_config"], **change}}


@pytest.mark.parametrize(
    "config,message",
    [
        # moe_layer_freq 1e300 made GLM-5.1 and DeepSeek dense (743.9B -> 33.2B)
        (lambda: {**_config("glm-5.1"), "moe_layer_freq": 1e300}, "moe_layer_freq must be an integer"),
        (
            lambda: {**_config("glm-5.1"), "moe_layer_freq": 10**300},
            r"moe_layer_freq = 1000.* is above num_hidden_layers \(78\)",
        ),
        (lambda: {**_config("deepseek-v3"), "moe_layer_freq": 1e300}, "moe_layer_freq must be an integer"),
        (
            lambda: {**_config("deepseek-v3"), "first_k_dense_replace": 62},
            r"first_k_dense_replace = 62 is above num_hidden_layers \(61\)",
        ),
        # text_config: [] was read as no text_config at all
        (lambda: {**_config("minimax-m3"), "text_config": []}, r"text_config must be a mapping or null \(got list\)"),
        (
            lambda: {**_config("qwen3.5-35b-a3b"), "text_config": []},
            r"text_config must be a mapping or null \(got list\)",
        ),
        (
            lambda: {**_config("gemma-4-31b-it"), "text_config": []},
            r"text_config must be a mapping or null \(got list\)",
        ),
        # full_attention_interval 1e20: every layer linear attention
        (lambda: _text("qwen3.5-27b", full_attention_interval=1e20), "full_attention_interval must be an integer"),
        (
            lambda: _text("qwen3.5-27b", full_attention_interval=65),
            r"full_attention_interval = 65 is above num_hidden_layers \(64\)",
        ),
        # null on MoE keys: Nemotron-3-Super's num_experts_per_tok (active 12.77B -> 8.37B, no note)
        (
            lambda: {**_config("nemotron-3-super-120b-a12b"), "num_experts_per_tok": None},
            "num_experts_per_tok = null: transformers 5.24.0 NemotronHConfig declares an integer",
        ),
        (
            lambda: {**_config("nemotron-3-super-120b-a12b"), "moe_intermediate_size": None},
            "moe_intermediate_size = null",
        ),
        (
            lambda: {**_config("qwen3-30b-a3b"), "num_experts": None},
            "num_experts = null: transformers 5.24.0 Qwen3MoeConfig",
        ),
        (lambda: {**_config("deepseek-v3"), "n_routed_experts": None}, "n_routed_experts = null"),
        (lambda: {**_config("deepseek-v3"), "n_shared_experts": None}, "n_shared_experts = null"),
        # lists checked against the layer count
        (
            lambda: {**_config("qwen3-8b"), "layer_types": ["full_attention"] * 3},
            r"layer_types has 3 entries but num_hidden_layers is 36",
        ),
        (
            lambda: {**_config("glm-4.7-flash"), "mlp_layer_types": ["dense"] * 5},
            r"mlp_layer_types has 5 entries but num_hidden_layers is 47",
        ),
        (
            lambda: {**_config("qwen3-30b-a3b"), "mlp_only_layers": [48]},
            r"mlp_only_layers lists layers beyond the 48 layers",
        ),
        # keys that contradict each other, both named
        (
            lambda: {**_config("qwen3-30b-a3b"), "num_local_experts": 64},
            r"num_experts = 128 and num_local_experts = 64 disagree; transformers 5.24.0 Qwen3MoeConfig reads both as one attribute",
        ),
        (
            lambda: {**_config("glm-4.7-flash"), "mlp_layer_types": ["dense"] * 2 + ["sparse"] * 45},
            r"mlp_layer_types names dense layers \[0, 1\], but first_k_dense_replace name \[0\]",
        ),
        (
            lambda: {**_config("nemotron-3-nano-30b-a3b"), "num_hidden_layers": 50},
            r"hybrid_override_pattern has 52 blocks but num_hidden_layers is 50",
        ),
        (
            lambda: {**_config("mimo-v2-flash"), "sliding_window": 64},
            r"sliding_window = 64 disagrees with sliding_window_size \(128\)",
        ),
        # a new user's trial (F21): each was counted as something transformers never builds
        (
            lambda: _text("llama-4-scout-17b-16e", interleave_moe_layer_step=0),
            r"interleave_moe_layer_step must be an integer >= 1 \(got 0\)",
        ),
        (
            lambda: {**_config("deepseek-v3"), "n_routed_experts": 0},
            r"n_routed_experts = 0 leaves the MoE layers no routed expert",
        ),
        (  # an attack: Mixtral with no experts had been counted as a dense 7.24B model
            lambda: {**_config("mixtral-8x7b-instruct-v0.1"), "num_local_experts": 0},
            r"num_local_experts = 0 leaves the MoE layers no routed expert",
        ),
        (
            lambda: {**_config("deepseek-v3"), "n_group": 7},
            r"n_group = 7 does not divide the 256 routed experts",
        ),
    ],
)
def test_nonsense_is_refused_naming_the_key(config, message):
    with pytest.raises(SpecError, match=message):
        hf_to_spec(config(), "x/config.json")


def test_a_null_transformers_accepts_is_read_with_its_default_stated():
    """LlamaConfig types num_key_value_heads ``int | None`` (None: as many as the query heads):
    Llama-3.1-8B with null is the MHA model, 8,030,261,248 + 32 layers x 2 x 4,096 x (4,096 -
    1,024) = 8,835,567,616, and the default is listed with the null it stands for."""
    spec, defaults = hf_to_spec({**_config("llama-3.1-8b"), "num_key_value_heads": None}, "x/config.json")
    assert count_params(spec).total_params == 8_030_261_248 + 32 * 2 * 4096 * (4096 - 1024) == 8_835_567_616
    (default,) = [d for d in spec.source.defaults if d.field == "num_key_value_heads"]
    assert (default.value, default.source) == ("32", "null in the config; = num_attention_heads (MHA)")


def test_a_byte_order_mark_is_read(tmp_path):
    """A config.json saved with a UTF-8 BOM (Windows editors) is the same model."""
    text = (FIXTURES / "hf" / "qwen3-8b" / "config.json").read_bytes()
    (tmp_path / "config.json").write_bytes(b"\xef\xbb\xbf" + text)
    assert count_params(load_hf_config(tmp_path)).total_params == 8_190_735_360


@pytest.mark.parametrize("given", ["./org/model/config.json", "org/model/config.json", "org/model", "./org/model"])
def test_a_relative_path_that_exists_is_read_as_a_path(cli, tmp_path, monkeypatch, given):
    """``org/model`` has the form of a Hub id; an existing folder of that name is a path (the test
    runs offline with an empty cache: a Hub lookup would fail)."""
    (tmp_path / "org" / "model").mkdir(parents=True)
    (tmp_path / "org" / "model" / "config.json").write_bytes(
        (FIXTURES / "hf" / "qwen3-8b" / "config.json").read_bytes()
    )
    monkeypatch.chdir(tmp_path)
    r = cli("params", given, "--json")
    assert r.code == 0 and r.json()["total_params"] == 8_190_735_360
