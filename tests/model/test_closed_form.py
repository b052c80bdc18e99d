"""The structure's sums against closed-form formulas (tests of the one tensor list).

Seed 003 §01: N = L[d(2d + 2 d_kv) + 3 d d_ff + 2d] + 2 V d + d for an untied Llama-style
model (d_kv = n_kv d_head, n_q d_head = d); seed 000 §七: KV per token = 2 L n_kv d_head bytes.
"""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.model.kv import kv_bytes, kv_bytes_per_token
from llm_cost.model.params import count_params
from llm_cost.specs.declare import validated
from llm_cost.specs.schema import ModelSpec


def llama_like(d_head=128, n_q=32, n_kv=8, L=32, d_ff=14336, V=128256, tied=False, window=None):
    return validated(
        ModelSpec,
        {
            "name": "t",
            "display_name": "t",
            "model_type": "llama",
            "source": {"url": "test", "retrieved": "2026-11-29"},
            "vocab_size": V,
            "hidden_size": n_q * d_head,
            "num_hidden_layers": L,
            "tie_word_embeddings": tied,
            "attention": {
                "kind": "gqa",
                "num_attention_heads": n_q,
                "num_key_value_heads": n_kv,
                "head_dim": d_head,
                "sliding_window": window,
            },
            "mlp": {"intermediate_size": d_ff},
            "max_position_embeddings": 8192,
            "rope_theta": 10000.0,
        },
    )


shapes = st.builds(
    lambda d_head, n_kv, group, L, d_ff, V, tied: dict(
        d_head=d_head, n_q=n_kv * group, n_kv=n_kv, L=L, d_ff=d_ff, V=V, tied=tied
    ),
    d_head=st.sampled_from([32, 64, 80, 128, 256]),
    n_kv=st.integers(1, 16),
    group=st.integers(1, 8),
    L=st.integers(1, 128),
    d_ff=st.integers(1, 60000),
    V=st.integers(1, 300000),
    tied=st.booleans(),
)


@settings(max_examples=60, deadline=None)
@given(shapes)
def test_seed_formula(shape):
    L, V, d_ff = shape["L"], shape["V"], shape["d_ff"]
    d = shape["n_q"] * shape["d_head"]
    d_kv = shape["n_kv"] * shape["d_head"]
    heads = 1 if shape["tied"] else 2
    expected = L * (d * (2 * d + 2 * d_kv) + 3 * d * d_ff + 2 * d) + heads * V * d + d
    r = count_params(llama_like(**shape))
    assert r.total_params == expected
    assert sum(row.params for row in r.rows) == r.total_params
    # N_gemm: the four attention and three MLP matrices per layer plus the LM head.
    assert r.n_gemm == L * (d * (2 * d + 2 * d_kv) + 3 * d * d_ff) + V * d


@settings(max_examples=60, deadline=None)
@given(shapes, st.integers(1, 10**7))
def test_kv_formula_and_mha_gqa_mqa_order(shape, context):
    spec = llama_like(**shape)
    per_token = 2 * shape["L"] * shape["n_kv"] * shape["d_head"] * 2
    assert kv_bytes_per_token(spec) == per_token
    assert kv_bytes(spec, context) == per_token * context
    mha, mqa = spec.with_kv_heads(shape["n_q"]), spec.with_kv_heads(1)
    assert kv_bytes(mha, context) >= kv_bytes(spec, context) >= kv_bytes(mqa, context)
    if shape["n_kv"] < shape["n_q"]:
        assert kv_bytes(spec, context) < kv_bytes(mha, context)


@settings(max_examples=40, deadline=None)
@given(shapes, st.integers(1, 10**6), st.integers(1, 10**6), st.integers(1, 64))
def test_kv_linear_in_context_and_batch(shape, a, b, batch):
    spec = llama_like(**shape)
    assert kv_bytes(spec, a + b, batch=batch) == kv_bytes(spec, a, batch=batch) + kv_bytes(spec, b, batch=batch)
    assert kv_bytes(spec, a, batch=batch) == batch * kv_bytes(spec, a)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 8192), st.integers(1, 10**6))
def test_sliding_window_caps_kv(window, context):
    spec = llama_like(window=window)
    assert kv_bytes(spec, context) == kv_bytes_per_token(spec) * min(context, window)


def test_gpt_oss_120b_per_token_past_its_windows_is_the_full_attention_layers_alone():
    """gpt-oss-120b (config.json: 36 layers alternating sliding 128 / full, 8 KV heads, head_dim 64):
    past the 128-token window, one more token adds K and V in the 18 full-attention layers only,
    18 x 2 x 8 x 64 x 2 B = 36,864 B, the slope of KV bytes in context; within the window all 36
    layers add, 73,728 B."""
    import llm_cost

    r = llm_cost.kv("gpt-oss-120b", contexts=[4096, 8192])
    assert r.bytes_per_token == 36 * 2 * 8 * 64 * 2
    assert r.bytes_per_token_past_windows == 18 * 2 * 8 * 64 * 2
    assert r.contexts[1].kv_bytes - r.contexts[0].kv_bytes == 4096 * r.bytes_per_token_past_windows


def test_no_window_no_separate_past_window_figure():
    """Llama-3-8B has no sliding layers: one per-token figure, 2 x 32 x 8 x 128 x 2 B = 131,072 B."""
    import llm_cost

    r = llm_cost.kv("llama3-8b", contexts=[1024])
    assert r.bytes_per_token == 131_072 and r.bytes_per_token_past_windows is None


def test_gpu_list_gives_the_reported_capacity_beside_the_datasheet_figure():
    """The H100 SXM datasheet prints "80GB"; nvidia-smi reports 81,559 MiB of it (its memory.total,
    as published nvidia-smi outputs show it), which fit and serve size against (vLLM reads
    torch.cuda.mem_get_info, in bytes)."""
    import llm_cost

    rows = {e.name: e for e in llm_cost.catalog("gpus")}
    assert rows["h100"].memory_gb == 80 and rows["h100"].capacity_bytes == 81_559 * 2**20


def test_kv_per_gpu_of_a_sliding_model_honours_its_window():
    """Mistral-7B (32 layers, 8 KV heads of 128, sliding window 4,096) on TP2 x PP2: one GPU holds
    16 layers x 4 KV heads, 16 x 2 x 4 x 128 x 2 B = 32,768 B per token, for at most 4,096 tokens of a
    sequence: 134,217,728 B at 131,072 tokens (it printed 4 GiB, as if every token were kept)."""
    import llm_cost

    r = llm_cost.kv("mistral-7b", contexts=[1024, 131072], layout=llm_cost.Layout(tp=2, pp=2))
    per_token = 16 * 2 * 4 * 128 * 2
    assert r.per_gpu_sequence_bytes == [[per_token * 1024, per_token * 4096]] * 2
