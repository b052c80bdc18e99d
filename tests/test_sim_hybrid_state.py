"""A hybrid model's fixed per-sequence state in the simulator's KV pool: charged once per running
request, not per token or per block, so the simulated engine holds as many tokens and sequences as
``llm_cost.fit`` says fit (vLLM V1's hybrid KV cache manager holds one page per request for each
Mamba-type layer group: ``vllm/v1/kv_cache_interface.py`` ``MambaSpec.max_memory_usage_bytes``,
vllm-project/vllm @ bc8282e61df21719b12b391c3a976b1c900dfbb4)."""

from __future__ import annotations

import pytest

import llm_cost

QWEN35 = "tests/fixtures/hf/qwen3.5-27b"
BLOCK = 16

# Qwen3.5-27B (tests/fixtures/hf/qwen3.5-27b/config.json): 64 layers, every 4th full attention.
# Attention KV per token: 16 full layers x 4 KV heads x 256 head_dim x 2 (K, V) x 2 B.
QWEN35_KV_PER_TOKEN = 16 * 4 * 256 * 2 * 2  # 65,536 B
# Fixed state per sequence, 48 gated-delta-net layers: the recurrent state 48 value heads x 128 x
# 128 x 2 B, and the conv state over 2 x 16 x 128 (q, k) + 48 x 128 (v) = 10,240 channels x
# (kernel 4 - 1) x 2 B.
QWEN35_STATE = 48 * (48 * 128 * 128 * 2 + (2 * 16 * 128 + 48 * 128) * 3 * 2)  # 78,446,592 B


def _run(model, **options):
    # vLLM's defaults on an H100 (1,024 sequences, 8,192 batched tokens): the workspace fit sizes too
    return llm_cost.simulate_serving(model, "h100", 2048, 256, requests=40, seed=3, **options)


def test_hybrid_capacity_agrees_with_fit():
    """Tokens: the KV budget fit reports over the attention KV of a 16-token block, whole blocks;
    the state: ceil(78,446,592 / (16 x 65,536)) = 75 blocks per running sequence; so the largest
    context of one sequence and the sequences of 2,304 tokens that fit are fit's own."""
    assert QWEN35_STATE == 78_446_592
    fit = llm_cost.fit(QWEN35, "h100", context=2304).single_gpu
    assert fit.kv_bytes_per_token == QWEN35_KV_PER_TOKEN
    budget = fit.kv_budget_bytes
    run = _run(QWEN35, qps=2.0)
    blocks = budget // (BLOCK * QWEN35_KV_PER_TOKEN)
    assert run.kv_blocks == blocks and run.kv_tokens == blocks * BLOCK
    assert run.state_blocks_per_sequence == -(-QWEN35_STATE // (BLOCK * QWEN35_KV_PER_TOKEN)) == 75
    # one sequence's longest context: what the budget holds after one state, in whole blocks
    alone = (budget - QWEN35_STATE) // QWEN35_KV_PER_TOKEN // BLOCK * BLOCK
    assert (blocks - 75) * BLOCK == fit.max_context_at_batch == alone
    # sequences of 2,304 tokens (144 blocks each): budget / (2,304 x 65,536 + 78,446,592)
    by_hand = budget // (2304 * QWEN35_KV_PER_TOKEN + QWEN35_STATE)
    assert run.max_sequences(2304) == fit.max_batch_at_context == by_hand
    # block rounding: the state's ceil costs at most one block per sequence
    assert run.max_sequences(2304) >= budget // (
        2304 * QWEN35_KV_PER_TOKEN + QWEN35_STATE + BLOCK * QWEN35_KV_PER_TOKEN
    )


def test_hybrid_batches_as_many_sequences_as_fit():
    """At 20 requests/s of 2,048 + 256 tokens (more than one H100 serves) the simulated engine runs
    tens of sequences at once, bounded by the ~84 that fit: it no longer runs one at a time with
    hundreds waiting (the state once charged per 16-token block held 3,744 tokens)."""
    run = _run(QWEN35, qps=20.0)
    fit = llm_cost.fit(QWEN35, "h100", context=2304).single_gpu
    assert 16 < run.running_mean <= fit.max_batch_at_context
    assert run.kv_use_max <= 1


def test_dense_capacity_is_the_budget_over_kv_per_token():
    """A model with no fixed state: no state blocks, and the tokens are fit's KV budget over a
    block's KV (Llama 3 8B: 32 layers x 8 KV heads x 128 x 2 x 2 B = 131,072 B a token), whole
    blocks, as before."""
    fit = llm_cost.fit("llama3-8b", "h100", context=2304).single_gpu
    assert fit.kv_bytes_per_token == 32 * 8 * 128 * 2 * 2
    run = _run("llama3-8b", qps=2.0)
    assert run.state_blocks_per_sequence == 0
    assert run.kv_tokens == fit.kv_budget_bytes // (BLOCK * 131_072) * BLOCK
    assert run.max_sequences(2304) == fit.max_batch_at_context


def test_state_blocks_are_checked():
    from llm_cost.simulate import EngineConfig, Fixed, poisson, simulate
    from llm_cost.specs.load import load_gpu, load_model

    with pytest.raises(llm_cost.LlmCostError) as info:
        simulate(
            load_model("llama3-8b"), load_gpu("h100"), poisson(1.0, Fixed(16), Fixed(4), requests=2),
            EngineConfig(), None, kv_capacity_tokens=1024, sequence_state_blocks=-1,  # type: ignore[arg-type]
        )  # fmt: skip
    assert str(info.value).startswith("sequence_state_blocks:")
