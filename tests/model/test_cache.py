"""The structure of a spec is built once per spec value: specs are hashed by their fields, so the
functools caches that replaced the caches by identity find an equal spec built another way."""

from __future__ import annotations

import dataclasses

from llm_cost.model.kv import kv_bytes
from llm_cost.model.structure import build
from llm_cost.specs.declare import to_data, validated
from llm_cost.specs.load import load_model
from llm_cost.specs.schema import ModelSpec


def test_the_cache_returns_the_same_structure_for_equal_specs():
    spec = load_model("llama3-8b")
    again = validated(ModelSpec, to_data(spec))
    assert build(spec) is build(spec) is build(again)


def test_a_different_spec_gets_its_own_structure():
    """Llama-3-8B with 16 of its 32 layers: 16 x 218,112,000 parameters per layer fewer (seed 000:
    W_Q, W_O 4096^2 each, W_K, W_V 4096 x 1024 each, SwiGLU 3 x 4096 x 14336, two norms 4096)."""
    spec = load_model("llama3-8b")
    half = dataclasses.replace(spec, num_hidden_layers=16)
    per_layer = 2 * 4096 * 4096 + 2 * 4096 * 1024 + 3 * 4096 * 14336 + 2 * 4096
    assert per_layer == 218_112_000
    assert build(half) is not build(spec)
    assert build(spec).total_params - build(half).total_params == 16 * per_layer


def test_layer_counts_follow_the_spec_value():
    """KV bytes of one 1,024-token sequence: 2 x 8 KV heads x 128 x 2 B x L layers x 1,024 tokens
    (seed 000 §七), for L = 32 and for a 16-layer copy made after the first was cached."""
    spec = load_model("llama3-8b")
    assert kv_bytes(spec, 1024) == 2 * 8 * 128 * 2 * 32 * 1024
    assert kv_bytes(dataclasses.replace(spec, num_hidden_layers=16), 1024) == 2 * 8 * 128 * 2 * 16 * 1024
