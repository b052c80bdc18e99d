"""Invariants over random valid specs of every architecture the schema covers, and very
large values that must stay exact."""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_cost.analyses.roofline import decode_step
from llm_cost.model.kv import kv_bytes, kv_bytes_per_token
from llm_cost.model.params import count_params
from llm_cost.report.base import to_json
from llm_cost.specs.declare import validated
from llm_cost.specs.load import load_gpu
from llm_cost.specs.schema import ModelSpec
from llm_cost.workload.flops import forward_flops


@st.composite
def specs(draw):
    """A random valid ModelSpec: GQA (with optional window, biases, q/k norms, tied embedding),
    MLA, MoE with dense first layers and shared experts, or a Qwen3-Next-style hybrid."""
    L = draw(st.integers(1, 24))
    heads_kv = draw(st.integers(1, 8))
    group = draw(st.integers(1, 4))
    n_q = heads_kv * group
    d_head = draw(st.sampled_from([16, 32, 64, 128]))
    d = n_q * d_head * draw(st.sampled_from([1, 2]))
    kind = draw(st.sampled_from(["gqa", "mla", "hybrid"] if L > 1 else ["gqa", "mla"]))
    spec = {
        "name": "random",
        "display_name": "random",
        "model_type": "test",
        "source": {"url": "hypothesis", "retrieved": "2026-11-29"},
        "vocab_size": draw(st.integers(2, 200_000)),
        "hidden_size": d,
        "num_hidden_layers": L,
        "tie_word_embeddings": draw(st.booleans()),
        "max_position_embeddings": 4096,
        "rope_theta": 10000.0,
    }
    if kind == "mla":
        spec["attention"] = {
            "kind": "mla",
            "num_attention_heads": n_q,
            "q_lora_rank": draw(st.one_of(st.none(), st.integers(8, 512))),
            "kv_lora_rank": draw(st.integers(8, 512)),
            "qk_nope_head_dim": d_head,
            "qk_rope_head_dim": draw(st.sampled_from([16, 32, 64])),
            "v_head_dim": d_head,
        }
    else:
        spec["attention"] = {
            "kind": "gqa",
            "num_attention_heads": n_q,
            "num_key_value_heads": heads_kv,
            "head_dim": d_head,
            "attention_bias": draw(st.booleans()),
            "qk_norm": draw(st.booleans()),
            "sliding_window": draw(st.one_of(st.none(), st.integers(1, 4096))),
        }
        if spec["attention"]["sliding_window"] is not None:
            spec["layer_types"] = [draw(st.sampled_from(["full_attention", "sliding_attention"])) for _ in range(L)]
    if kind == "hybrid":
        spec["linear_attention"] = {
            "kind": "gated_deltanet",
            "linear_num_key_heads": draw(st.integers(1, 8)),
            "linear_num_value_heads": draw(st.integers(1, 16)),
            "linear_key_head_dim": 32,
            "linear_value_head_dim": 32,
            "linear_conv_kernel_dim": 4,
        }
        spec["attention"]["sliding_window"] = None
        spec["layer_types"] = ["full_attention" if (i + 1) % 4 == 0 else "linear_attention" for i in range(L)]
        spec["layer_types"][-1] = "full_attention"
    if draw(st.booleans()):
        E = draw(st.integers(1, 64))
        spec["moe"] = {
            "num_experts": E,
            "num_experts_per_tok": draw(st.integers(1, E)),
            "moe_intermediate_size": draw(st.integers(1, 4096)),
            "shared_expert_intermediate_size": draw(st.sampled_from([0, 256])),
            "first_k_dense_replace": draw(st.integers(0, L)),
        }
        if spec["moe"]["first_k_dense_replace"]:
            spec["mlp"] = {"intermediate_size": draw(st.integers(1, 8192))}
    else:
        spec["mlp"] = {"intermediate_size": draw(st.integers(1, 8192)), "gated": draw(st.booleans())}
    return validated(ModelSpec, spec)


SETTINGS = dict(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@settings(**SETTINGS)
@given(specs())
def test_breakdown_sums_to_total_and_active_within_total(spec):
    r = count_params(spec)
    assert sum(row.params for row in r.rows if row.part != "mtp") == r.total_params
    assert 0 < r.active_params <= r.total_params
    assert r.active_n_gemm <= r.n_gemm
    assert json.loads(to_json(r))["total_params"] == r.total_params


@settings(**SETTINGS)
@given(specs(), st.integers(1, 100_000), st.integers(1, 100_000), st.integers(1, 64))
def test_kv_and_flops_monotone_in_context_and_batch(spec, context, more, batch):
    assert kv_bytes(spec, context + more, batch=batch) >= kv_bytes(spec, context, batch=batch)
    assert (
        kv_bytes(spec, context, batch=batch + 1) > kv_bytes(spec, context, batch=batch) or kv_bytes(spec, context) == 0
    )
    a = forward_flops(spec, 1, context, batch).total_flops
    assert forward_flops(spec, 1, context + more, batch).total_flops >= a
    assert forward_flops(spec, 1, context, batch + 1).total_flops > a


@settings(**SETTINGS)
@given(specs())
def test_mha_at_least_gqa_at_least_mqa(spec):
    if spec.attention.kind != "gqa":
        return
    n_q = spec.attention.num_attention_heads
    assert (
        kv_bytes_per_token(spec.with_kv_heads(n_q))
        >= kv_bytes_per_token(spec)
        >= kv_bytes_per_token(spec.with_kv_heads(1))
    )


@settings(**SETTINGS)
@given(specs(), st.integers(1, 256), st.integers(0, 50_000))
def test_roofline_bound_covers_both_terms(spec, batch, context):
    d = decode_step(spec, load_gpu("h100"), batch, context)
    assert d.bound_s >= d.compute_time_s and d.bound_s >= d.memory_time_s
    assert sum(o.flops for o in d.ops) == pytest.approx(d.flops)
    assert sum(o.bytes for o in d.ops) == pytest.approx(d.bytes)


def test_ten_trillion_parameter_spec_is_exact():
    """d = 65,536, L = 200, d_ff = 4d gated, V = 256,000, MHA: N = L(4d^2 + 3 d d_ff + 2d) + 2Vd + d
    = 200 (4 x 65,536^2 + 12 x 65,536^2 + 131,072) + 2 x 256,000 x 65,536 + 65,536."""
    d, L, V = 65_536, 200, 256_000
    spec = validated(
        ModelSpec,
        {
            "name": "t",
            "display_name": "t",
            "model_type": "llama",
            "source": {"url": "x", "retrieved": "x"},
            "vocab_size": V,
            "hidden_size": d,
            "num_hidden_layers": L,
            "tie_word_embeddings": False,
            "attention": {"kind": "gqa", "num_attention_heads": 512},
            "mlp": {"intermediate_size": 4 * d},
            "max_position_embeddings": 8192,
            "rope_theta": 1e4,
        },
    )
    expected = L * (4 * d * d + 12 * d * d + 2 * d) + 2 * V * d + d
    assert count_params(spec).total_params == expected > 10**13


def test_ten_million_token_context_is_exact(cli):
    data = cli("kv", "llama3-8b", "--context", "10000000", "--json").json()
    assert data["contexts"][0]["kv_bytes"] == 131_072 * 10_000_000


JSON_VS_TABLE = [
    (["params", "llama3-70b"], lambda j: f"{j['total_params']:,}"),
    (["kv", "mistral-7b", "--context", "8K"], lambda j: f"{j['bytes_per_token']:,}"),
    (["fit", "llama3-8b"], lambda j: f"{j['single_gpu']['token_budget']:,}"),
    (["moe", "mixtral-8x7b", "--batch", "4"], lambda j: f"{j['total_params']:,}"),
    (["train", "llama3-8b", "--tokens", "15T", "--gpu-hours", "1.3M"], lambda j: f"{j['gpu_hours']:,.0f}"),
    (["image", "qwen2-vl-7b", "--size", "1024x1024"], lambda j: f"{j['vision']['tokens']:,}"),
    (["spec", "--alpha", "0.8", "--gamma", "4", "--c", "0.1"], lambda j: f"{j['expected_tokens']:.4f}"),
    (["roofline", "llama3-8b", "--batch", "8"], lambda j: f"{j['matmul_weight_bytes']:,.0f} B"),
]


@pytest.mark.parametrize("argv,figure", JSON_VS_TABLE, ids=[a[0] for a, _ in JSON_VS_TABLE])
def test_json_carries_the_numbers_the_table_prints(cli, argv, figure):
    table = cli(*argv)
    data = cli(*argv, "--json").json()
    assert table.code == 0 and figure(data) in table.out
