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
