"""MiniMax-M3 (model_type minimax_m3_vl) against its checkpoint total (tests/fixtures/hf/CHECKPOINTS.yaml
minimax-m3: 427,040,140,160 values in 23,416 tensors, 854,172,958,720 payload bytes) and hand
arithmetic from transformers models/minimax_m3_vl/modeling_minimax_m3_vl.py: GQA with per-head
norms, dense SwiGLU-OAI MLPs on the first three layers, MoE with a shared expert and a stored
correction bias, the lightning indexer on the 57 sparse layers, the CLIP-style tower and both
projectors; KV bytes per token with the indexer's bf16 keys; the decode step's block-sparse
attention and indexer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from llm_cost.core.errors import SpecError
from llm_cost.core.types import OpRole
from llm_cost.model.kv import kv_bytes, kv_bytes_per_token
from llm_cost.model.params import count_params
from llm_cost.model.structure import build
from llm_cost.specs.hf import hf_to_spec, load_hf_config
from llm_cost.workload.step import build_step, decode

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf"
CONFIG = FIXTURES / "minimax-m3" / "config.json"
CHECKPOINTS = yaml.safe_load((FIXTURES / "CHECKPOINTS.yaml").read_text(encoding="utf-8"))

D, V = 6144, 200_064
#: q [64 x 128, d], k and v [4 x 128, d], o [d, 64 x 128], q_norm and k_norm of the 128-wide head
ATTENTION = D * 64 * 128 + 2 * D * 4 * 128 + 64 * 128 * D + 2 * 128
#: MiniMaxM3VLDenseMLP of 12288: gate_up_proj [2 x 12288, d] and down_proj [d, 12288]
DENSE_MLP = 3 * 12288 * D
#: MiniMaxM3VLIndexer: q_proj [4 x 128, d], k_proj [128, d], q_norm and k_norm [128]
INDEXER = 4 * 128 * D + 128 * D + 2 * 128
#: the router gate [128, d] and its e_score_correction_bias [128]; the shared expert of 3072; 128 experts of 3072
MOE = 128 * D + 128 + 3 * 3072 * D + 128 * 3 * 3072 * D
#: the tower: Conv3d [1280, 3, 2, 14, 14], pre_layrnorm (weight, bias); per block q/k/v/out_proj with biases,
#: layer_norm1 / layer_norm2 (weights, biases), fc1 [5120, 1280] and fc2 [1280, 5120] with biases
E, F = 1280, 5120
TOWER = E * 3 * 2 * 14 * 14 + 2 * E + 32 * (4 * (E * E + E) + 4 * E + (F * E + F) + (E * F + E))
#: multi_modal_projector [6144, 1280] + [6144], [d, 6144] + [d]; patch_merge [6144, 4 d] + [6144], [d, 6144] + [d]
PROJECTORS = (6144 * E + 6144) + (D * 6144 + D) + (6144 * 4 * D + 6144) + (D * 6144 + D)


def test_total_by_hand_is_the_checkpoint_s_values():
    """Untied embedding and LM head, 3 dense and 57 MoE layers (two norms each), the final norm;
    the tower and projectors: 427,040,140,160 values (untraced index reference 61699509129)."""
    text = 2 * V * D + 3 * (ATTENTION + DENSE_MLP + 2 * D) + 57 * (ATTENTION + INDEXER + MOE + 2 * D) + D
    assert text + TOWER + PROJECTORS == CHECKPOINTS["minimax-m3"]["total_params"] == 427_040_140_160
    r = count_params(load_hf_config(CONFIG))
    assert r.total_params == 427_040_140_160
    assert r.decoder_params == text and r.vision_params == TOWER + PROJECTORS


def test_payload_bytes_are_bf16_with_f32_routers_and_patch_embedding():
    """854,172,958,720 payload bytes from the 59 shard headers (untraced index reference 59245552846) = 2 B per
    value + 2 B more for each of the 46,339,200 values of the 57 routers, their correction biases and
    the Conv3d patch embedding: those tensors are F32, the rest BF16."""
    s = build(load_hf_config(CONFIG))
    f32 = sum(
        t.total
        for t in s.tensors
        if (t.group == "router" or t.name.endswith("patch_embedding.weight") or t.name.endswith(".gate.bias"))
    )
    assert f32 == 57 * (128 * D + 128) + E * 3 * 2 * 14 * 14 == 46_339_200
    assert 2 * s.total_params + 2 * f32 == CHECKPOINTS["minimax-m3"]["checkpoint_bytes"] == 854_172_958_720


def test_active_parameters_per_token():
    """A token runs 4 of the 128 experts: the language model less 57 x 124 experts of 3 x 3072 x d;
    less the embedding and LM head 23,504,087,424, the model cards' '~23B activated' rounded."""
    r = count_params(load_hf_config(CONFIG))
    active = r.decoder_params - 57 * 124 * 3 * 3072 * D
    assert r.active_params == active == 25_962_473_856
    assert active - 2 * V * D == 23_504_087_424


def test_kv_bytes_per_token_and_at_a_context():
    """Every layer caches K and V of 4 heads x 128 at 2 B; the 57 sparse layers also keep the
    indexer's 128-wide bf16 key (vLLM MiniMaxM3IndexerCache, indexer_kv_dtype bf16)."""
    spec = load_hf_config(CONFIG)
    per_token = 60 * 2 * 4 * 128 * 2 + 57 * 128 * 2
    assert kv_bytes_per_token(spec, 16) == per_token == 137_472
    assert kv_bytes(spec, 10_000, 16) == 10_000 * per_token
    # at 8 bits the attention K/V halve, the indexer keys stay bf16
    assert kv_bytes_per_token(spec, 8) == 60 * 2 * 4 * 128 + 57 * 128 * 2


def test_decode_step_block_sparse_attention_by_hand():
    """One token at context 8,191: the 3 dense layers see all 8,192 keys, the 57 sparse layers at
    most (16 top-k + 1 local) blocks of 128 = 2,176 (an upper bound: a local block among the top-k
    makes it one block fewer); QK^T + AV is 2 x 64 heads x (128 + 128) per key. The indexer scores
    all 8,192 keys with 2 x 4 heads x 128 FLOPs each and reads the 8,191 cached bf16 keys."""
    step = build_step(load_hf_config(CONFIG), decode(1, 8191))
    full = [o for o in step.ops if o.role == OpRole.FULL_ATTENTION]
    dense, sparse = sorted(full, key=lambda o: o.layers)
    assert (dense.layers, dense.keys, sparse.layers, sparse.keys) == (3, 8192, 57, 2176)
    assert dense.flops == 3 * 2 * 64 * (128 + 128) * 8192
    assert sparse.flops == 57 * 2 * 64 * (128 + 128) * 2176
    assert dense.kv_read_bytes == 3 * 8191 * 2 * 4 * 128 * 2
    assert sparse.kv_read_bytes == 57 * 2176 * 2 * 4 * 128 * 2
    (indexer,) = [o for o in step.ops if o.role == OpRole.SPARSE_INDEXER]
    assert indexer.flops == 57 * 2 * 4 * 128 * 8192
    assert indexer.kv_read_bytes == 57 * 8191 * 128 * 2 and indexer.kv_write_bytes == 57 * 128 * 2


def _config() -> dict:
    return json.loads(CONFIG.read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "change,message",
    [
        (lambda c: c["text_config"]["sparse_attention_config"].update(sparse_attention_freq=[1] * 60), "differs from"),
        (
            lambda c: c["text_config"]["sparse_attention_config"].update(sparse_disable_index_value=[0] * 60),
            "index-value path",
        ),
        (lambda c: c["text_config"].update(attention_output_gate=True), "attention_output_gate"),
        (lambda c: c.update(num_reward_heads=1), "num_reward_heads"),
        (lambda c: c["vision_config"].update(position_embedding_type="learned"), "position_embedding_type"),
        (lambda c: c["text_config"].update(moe_layer_freq=[0, 1]), "moe_layer_freq must list 60 flags"),
    ],
)
def test_what_is_not_modelled_is_refused_naming_the_key(change, message):
    cfg = _config()
    change(cfg)
    with pytest.raises(SpecError, match=message):
        hf_to_spec(cfg, "m3/config.json")


def test_without_sparse_attention_the_layers_are_dense():
    """use_sparse_attention false: no indexer tensors (57 x (4 x 128 + 128) x d + 2 x 128 fewer) and
    no indexer keys in the cache."""
    cfg = _config()
    cfg["text_config"]["sparse_attention_config"]["use_sparse_attention"] = False
    spec, _ = hf_to_spec(cfg, "m3/config.json")
    assert count_params(spec).total_params == 427_040_140_160 - 57 * INDEXER
    assert kv_bytes_per_token(spec, 16) == 60 * 2 * 4 * 128 * 2


def test_the_notes_name_minimax_s_sparse_attention_not_deepseek_s():
    """The KV and FLOP conventions describe the block indexer (bf16 keys on 57 layers; 16 blocks of
    128 + 1 local = 2,176 keys at most), not DeepSeek's FP8 key and token top-k."""
    from llm_cost.model.kv import kv_cache
    from llm_cost.workload.flops import forward_flops

    spec = load_hf_config(CONFIG)
    kv = {n.code: n.params for n in kv_cache(spec, [1000]).conventions}
    assert "kv.indexer" not in kv and kv["kv.indexer_block"] == {"bytes": 256, "layers": 57}
    flops = {n.code: n.params for n in forward_flops(spec, 1000, detail=True).conventions}
    assert "attention.sparse" not in flops
    assert flops["attention.block_sparse"] == {"blocks": 16, "block": 128, "local": 1, "keys": 2176}
