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
    """60 re-saves; the three without one say why (no transformers class; transformers refuses the file)."""
    skipped = yaml.safe_load((V5 / "SKIPPED.yaml").read_text(encoding="utf-8"))
    originals = {
        p.parent.name for part in ("hf", "hf-kinds", "hf-unverified") for p in FIXTURES.glob(f"{part}/*/config.json")
    }
    assert set(RESAVED) | set(skipped) == originals and not set(RESAVED) & set(skipped)
    assert set(skipped) == {"internlm2_5-7b-chat", "llama-4-scout-17b-16e", "mimo-7b-base"}


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


# -- Qwen3.5 / 3.6 as published, SmolLM3, MiMo-7B -------------------------------------------------


@pytest.mark.parametrize("name", ["qwen3.5-27b", "qwen3.5-35b-a3b", "qwen3.6-27b", "qwen3.6-35b-a3b"])
def test_qwen3_5_and_3_6_as_published_state_the_gate_and_count_the_checkpoint(name):
    """The published configs say ``attn_output_gate: true`` (the gate Qwen3_5Attention always builds:
    q_proj [d -> 2 n_q d_head], models/qwen3_5/modeling_qwen3_5.py); read, not refused, and the
    totals are the checkpoints' (CHECKPOINTS.yaml); false would drop the gate and is refused."""
    import json

    from llm_cost.core.errors import SpecError
    from llm_cost.specs.hf import hf_to_spec

    spec = load_hf_config(FIXTURES / "hf" / name)
    assert spec.attention.output_gate and count_params(spec).total_params == TOTALS[name]["total_params"]
    config = json.loads((FIXTURES / "hf" / name / "config.json").read_text(encoding="utf-8"))
    config["text_config"]["attn_output_gate"] = False
    with pytest.raises(
        SpecError, match="attn_output_gate = False: model_type 'qwen3_5.*' always has attn_output_gate = True"
    ):
        hf_to_spec(config, "x/config.json")


def test_qwen3_5_27b_gate_weights_kv_and_decode_flops_by_hand():
    """Qwen3.5-27B's 16 full-attention layers: q_proj 5,120 -> 2 x 24 x 256 (queries and gate),
    k/v 5,120 -> 4 x 256, o_proj 24 x 256 -> 5,120; each caches 4 K and 4 V heads of 256 per token
    (16 x 4 x 512 x 2 B = 65,536 B at bf16; the gate is not cached); one decode token multiplies by
    every q_proj weight, the gate's half included (2 FLOPs each). The checkpoint's MTP layer
    (424,699,392, CHECKPOINTS.yaml checkpoint_total 27,781,427,952) is stored apart."""
    from llm_cost.model.kv import kv_bytes_per_token
    from llm_cost.model.structure import build

    spec = load_hf_config(FIXTURES / "hf" / "qwen3.5-27b")
    q = [t for t in build(spec).tensors if t.name == "layers.*.self_attn.q_proj.weight" and t.part == "decoder"]
    assert [(t.shape, t.layers) for t in q] == [((2 * 24 * 256, 5120), 16)]
    assert kv_bytes_per_token(spec) == 16 * 4 * 512 * 2 + 0 == 65_536
    r = count_params(spec)
    assert r.checkpoint_params == TOTALS["qwen3.5-27b"]["checkpoint_total"] == 27_356_728_560 + 424_699_392


def test_smollm3_with_the_hub_window_keys():
    """SmolLM3-3B's Hub config also carries ``max_window_layers: 28``, ``use_sliding_window: false``
    and ``sliding_window: null``: read as inert (SmolLM3Config does not read max_window_layers), the
    count is the checkpoint's 3,075,098,624. With a window, SmolLM3Config slides the NoPE layers
    (no_rope_layers 0: every 4th), not the first 28: at 100,000 tokens 27 full layers keep them all
    and 9 keep 4,096, each 4 x (128 + 128) x 2 B a token."""
    import json

    from llm_cost.model.kv import kv_bytes
    from llm_cost.specs.hf import hf_to_spec

    config = json.loads((FIXTURES / "hf" / "smollm3-3b" / "config.json").read_text(encoding="utf-8"))
    hub = {**config, "max_window_layers": 28, "use_sliding_window": False, "sliding_window": None}
    assert count_params(hf_to_spec(hub, "x/config.json")[0]).total_params == TOTALS["smollm3-3b"]["total_params"]
    spec, _ = hf_to_spec({**hub, "use_sliding_window": True, "sliding_window": 4096}, "x/config.json")
    assert [i for i in range(36) if spec.layer_type(i) == "sliding_attention"] == list(range(3, 36, 4))
    assert kv_bytes(spec, 100_000, 16) == (27 * 100_000 + 9 * 4_096) * 4 * 256 * 2
    assert "max_window_layers is not read by SmolLM3Config" in spec.source.note


@pytest.mark.parametrize(("folder", "key"), [(FIXTURES / "hf", "num_experts"), (V5, "num_local_experts")])
def test_qwen3_moe_with_no_experts_is_its_dense_form(folder, key):
    """Qwen3MoeDecoderLayer builds Qwen3MoeMLP(intermediate_size) where num_experts is 0
    (transformers models/qwen3_moe/modeling_qwen3_moe.py), as Qwen2-MoE does; an attacker's
    ``num_experts: 0`` was refused naming num_local_experts, a key the file did not hold. Under
    either spelling: the Qwen3-30B-A3B shapes with a dense 3 x 2,048 x 6,144 MLP in each of the 48
    layers, in place of the 48 x (128 experts x 3 x 2,048 x 768 + a 2,048 x 128 router)."""
    import json

    from llm_cost.specs.hf import hf_to_spec

    config = json.loads((folder / "qwen3-30b-a3b" / "config.json").read_text(encoding="utf-8"))
    assert config[key] == 128
    dense, _ = hf_to_spec({**config, key: 0}, "x/config.json")
    assert dense.moe is None and dense.mlp.intermediate_size == 6144
    moe_total = TOTALS["qwen3-30b-a3b"]["total_params"]
    experts = 48 * (128 * 3 * 2048 * 768 + 2048 * 128)
    assert count_params(dense).total_params == moe_total - experts + 48 * 3 * 2048 * 6144
