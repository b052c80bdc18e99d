"""Configs as transformers 5 saves them (tests/fixtures/hf-v5, written by scripts/hf_resave.py from
every config fixture with transformers 5.24.0's configuration classes) are counted exactly: the
same checkpoint totals as the published files (tests/fixtures/hf/CHECKPOINTS.yaml,
tests/fixtures/hf-kinds/SOURCES.yaml), and the same KV cache.

transformers 5 writes other spellings and layouts: the attribute the ``attribute_map`` points to
(``num_local_experts`` for Qwen3-MoE's ``num_experts``), the lists its ``__post_init__`` derives
(``mlp_layer_types`` beside ``first_k_dense_replace``, ``layer_types``, ``indexer_types``),
Nemotron-H's ``layers_block_type`` without ``num_hidden_layers``, Gemma 4's ``per_layer_config``,
MiniMax-M3's flat ``index_*`` keys, each class's defaults written out (a text_config
``tie_word_embeddings: true`` beside a wrapper's false)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from llm_cost.model.kv import kv_bytes_per_token
from llm_cost.model.params import count_params
from llm_cost.specs.hf import load_hf_config

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
V5 = FIXTURES / "hf-v5"
TOTALS = {
    **yaml.safe_load((FIXTURES / "hf" / "CHECKPOINTS.yaml").read_text(encoding="utf-8")),
    **yaml.safe_load((FIXTURES / "hf-kinds" / "SOURCES.yaml").read_text(encoding="utf-8")),
}
RESAVED = sorted(p.name for p in V5.iterdir() if (p / "config.json").is_file())


def _original(name: str) -> Path:
    (path,) = [p for p in (FIXTURES / "hf" / name, FIXTURES / "hf-kinds" / name) if p.is_dir()]
    return path / "config.json"


def test_every_fixture_has_a_resave_or_a_reason():
    """56 re-saves; the two without one say why (no transformers class; transformers refuses the file)."""
    skipped = yaml.safe_load((V5 / "SKIPPED.yaml").read_text(encoding="utf-8"))
    originals = {p.parent.name for p in FIXTURES.glob("hf/*/config.json")} | {
        p.parent.name for p in FIXTURES.glob("hf-kinds/*/config.json")
    }
    assert set(RESAVED) | set(skipped) == originals and not set(RESAVED) & set(skipped)
    assert set(skipped) == {"internlm2_5-7b-chat", "llama-4-scout-17b-16e"}


@pytest.mark.parametrize("name", RESAVED)
def test_resave_counts_the_checkpoint_total(name):
    """The re-save gives the checkpoint's independent total (main model, or main + MTP where the
    source gives the whole checkpoint), the same as the published file, and the same KV bytes."""
    entry = TOTALS[name]
    resaved = count_params(load_hf_config(V5 / name / "config.json"))
    if entry.get("total_params") is not None:
        assert resaved.total_params == entry["total_params"]
    elif entry.get("checkpoint_total") is not None:
        assert resaved.checkpoint_params == entry["checkpoint_total"]
    published = load_hf_config(_original(name))
    assert resaved.checkpoint_params == count_params(published).checkpoint_params
    assert kv_bytes_per_token(load_hf_config(V5 / name / "config.json")) == kv_bytes_per_token(published)


def test_qwen3_moe_resave_spells_num_local_experts():
    """Qwen3MoeConfig.attribute_map {"num_experts": "num_local_experts"}: transformers 5 saves the
    attribute's name; 128 experts either way, 30,532,122,624 parameters (CHECKPOINTS.yaml)."""
    text = (V5 / "qwen3-30b-a3b" / "config.json").read_text(encoding="utf-8")
    assert '"num_local_experts": 128' in text and '"num_experts"' not in text
    assert load_hf_config(V5 / "qwen3-30b-a3b").moe.num_experts == 128


def test_nemotron_resave_has_no_num_hidden_layers():
    """NemotronHConfig derives num_hidden_layers from layers_block_type (52 blocks) and saves none;
    the default is stated."""
    from llm_cost.specs.hf import load_hf_config_verbose

    spec, defaults = load_hf_config_verbose(V5 / "nemotron-3-nano-30b-a3b")
    assert spec.num_hidden_layers == 52
    assert any(d.startswith("num_hidden_layers = 52 (absent; the length of layers_block_type") for d in defaults)


# -- every default applied is stated --------------------------------------------------------------


def test_a_qwen3_moe_config_without_head_dim_states_the_default_it_takes(tmp_path):
    """Qwen3-30B-A3B's config without head_dim: transformers builds heads of hidden_size /
    num_attention_heads = 64, not the checkpoint's 128; the count is the checkpoint's
    30,532,122,624 less 48 layers x 64 x (2,048 x (32 + 4 + 4 + 32) + 2) = 30,079,131,648, and the
    text and JSON of ``params`` say which default was taken and whose it is."""
    import json

    from typer.testing import CliRunner

    from llm_cost.cli import app

    config = json.loads((FIXTURES / "hf" / "qwen3-30b-a3b" / "config.json").read_text(encoding="utf-8"))
    del config["head_dim"]
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    runner = CliRunner()
    text = runner.invoke(app, ["params", str(tmp_path)]).output
    assert "defaults: head_dim 64 (transformers 5.24.0 Qwen3MoeConfig: hidden_size / num_attention_heads)" in text
    data = json.loads(runner.invoke(app, ["params", str(tmp_path), "--json"]).output)
    assert data["total_params"] == 30_532_122_624 - 48 * 64 * (2048 * (32 + 4 + 4 + 32) + 2) == 30_079_131_648
    assert data["defaults"] == [
        {
            "field": "head_dim",
            "value": "64",
            "source": "transformers 5.24.0 Qwen3MoeConfig: hidden_size / num_attention_heads",
        }
    ]


def test_a_config_with_every_key_states_no_default():
    """The published Qwen3-30B-A3B config sets every key the mapping reads: no defaults line."""
    r = count_params(load_hf_config(FIXTURES / "hf" / "qwen3-30b-a3b"))
    assert r.defaults == [] and r.total_params == 30_532_122_624
