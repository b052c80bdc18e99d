"""New layer and block kinds, from real configs: parameter totals against independent checkpoint
totals (tests/fixtures/hf-kinds/SOURCES.yaml), cache and state bytes per token and decode FLOPs
per token against hand arithmetic written here from the modeling files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from llm_cost.core.types import LayerType, OpRole
from llm_cost.model.kv import kv_bytes, kv_bytes_per_token, kv_cache
from llm_cost.model.params import count_params
from llm_cost.model.structure import build
from llm_cost.specs.hf import load_hf_config
from llm_cost.workload.step import build_step, decode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf-kinds"
SOURCES = yaml.safe_load((FIXTURES / "SOURCES.yaml").read_text(encoding="utf-8"))
FOLDERS = sorted(p.name for p in FIXTURES.iterdir() if (p / "config.json").is_file())


def _spec(name: str):
    return load_hf_config(FIXTURES / name / "config.json")


def test_every_fixture_has_a_source_and_an_exact_total():
    assert set(FOLDERS) == set(SOURCES)
    assert all(SOURCES[n]["exact"] and isinstance(SOURCES[n]["total_params"], int) for n in FOLDERS)


@pytest.mark.parametrize("name", FOLDERS)
def test_total_equals_checkpoint(name):
    assert count_params(_spec(name)).total_params == SOURCES[name]["total_params"]


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
