"""Speculative decoding: the closed forms' bounds, the step model, impossible arguments."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.analyses.speculative import expected_tokens, speculative
from llm_cost.core.errors import InputError


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1), st.integers(1, 64))
def test_speculative_tokens_between_1_and_gamma_plus_1(alpha, gamma):
    e = expected_tokens(alpha, gamma)
    assert 1 - 1e-12 <= e <= gamma + 1 + 1e-9


def test_speculative_alpha_one_is_gamma_plus_one():
    assert expected_tokens(1.0, 4) == 5


@pytest.mark.parametrize(
    "alpha,gamma,c,needle",
    [(1.5, 4, 0.1, "^alpha:"), (-0.1, 4, 0.1, "^alpha:"), (0.8, 0, 0.1, "^gamma:"), (0.8, 4, -1, "^c:")],
)
def test_speculative_rejects_impossible_arguments(alpha, gamma, c, needle):
    with pytest.raises(InputError, match=needle):
        speculative(alpha, gamma, c)


@pytest.mark.parametrize(
    "args,needle",
    [
        (["moe", "deepseek-v3", "--ep", "3"], "--ep"),
        (["moe", "llama3-8b"], "no mixture-of-experts"),
        (["spec", "--alpha", "1.5", "--gamma", "4", "--c", "0.1"], "--alpha"),
        (["spec", "--alpha", "0.8", "--gamma", "4"], "--c is required"),
        (["spec", "--alpha", "nan", "--gamma", "4", "--c", "0.1"], "--alpha"),
        (["spec", "--alpha", "0.8", "--gamma", "4", "--c", "0.1", "--gpu", "h100"], "needs a MODEL"),
        (["spec", "llama3-8b", "--mtp", "--alpha", "0.8", "--gamma", "1"], "no MTP"),
        (["context", "llama3-8b", "--weight-flops", "half"], "--weight-flops"),
    ],
)
def test_impossible_arguments_exit_2(cli, args, needle):
    r = cli(*args)
    assert r.code == 2 and needle in r.err and r.out == "", (r.code, r.err)


def test_spec_cli(cli):
    out = cli("spec", "--alpha", "0.8", "--gamma", "4", "--c", "0.1").out
    assert "3.3616" in out and "2.40x" in out
    data = cli(
        "spec",
        "llama3-8b",
        "--gpu",
        "h100",
        "--alpha",
        "0.8",
        "--gamma",
        "4",
        "--c",
        "0.1",
        "--batch",
        "64,128",
        "--weight-bytes",
        "resident",
        "--mbu",
        "1",
        "--json",
    ).json()
    assert [round(r["speedup"], 2) for r in data["rows"]] == [1.61, 0.89]


def test_spec_with_mtp_draft(cli):
    """DeepSeek-V3's MTP module as the draft: c = its matmul weights (one block with 8 of 256
    experts, eh_proj, the shared LM head) over the model's active matmul weights, about 0.044;
    alpha 0.85 (the report's 85-90%) gives about 1.8x, as seed 003 §07 reports."""
    data = cli("spec", "deepseek-v3", "--mtp", "--alpha", "0.85", "--gamma", "1", "--json").json()
    assert 0.03 < data["c"] < 0.06
    assert round(data["speedup_memory_bound"], 1) == 1.8


def test_spec_flags_batches_beyond_memory(cli):
    """Llama-3-8B on one H100 at 2K context, by hand: weights 8,030,261,248 parameters (the
    safetensors total) x 2 bytes; KV 2 x 32 layers x 8 heads x 128 x 2 bytes = 131,072 bytes per
    token; an "80 GB" H100 reports 81,559 MiB. (81,559 MiB - weights) // (2,048 x 131,072) = 258."""
    weights, kv_per_sequence = 8_030_261_248 * 2, 2_048 * 2 * 32 * 8 * 128 * 2
    expected = (81_559 * 2**20 - weights) // kv_per_sequence
    args = ("spec", "llama3-8b", "--gpu", "h100", "--alpha", "0.8", "--gamma", "4", "--c", "0.1", "--context", "2K")
    data = cli(*args, "--batch", "256,512", "--json").json()
    assert data["max_batch_in_memory"] == expected == 258
    assert [row["fits_memory"] for row in data["rows"]] == [True, False]
    out = cli(*args, "--batch", "256,512").out
    assert "512*" in out and f"at most {expected:,} fit" in out  # the knee (897) lies beyond memory


def test_spec_memory_counts_data_parallel_ranks_and_weights_that_do_not_fit(cli):
    """At 8K, one H100 holds (81,559 MiB - 2 x 8,030,261,248 B) // (8,192 x 131,072 B) = 64
    sequences of Llama-3-8B beside its weights, so 4 data-parallel ranks hold 256. Llama-3.1-405B's
    BF16 weights (810 GB) exceed one H100 at any batch, even at context 0."""
    per_rank = (81_559 * 2**20 - 2 * 8_030_261_248) // (8_192 * 2 * 32 * 8 * 128 * 2)
    args = ("spec", "--gpu", "h100", "--alpha", "0.8", "--gamma", "4", "--c", "0.1")
    dp = cli(*args[:1], "llama3-8b", *args[1:], "--context", "8K", "--batch", "256,512", "--dp", "4", "--json").json()
    assert dp["max_batch_in_memory"] == 4 * per_rank == 256
    assert [row["fits_memory"] for row in dp["rows"]] == [True, False]
    big = cli(*args[:1], "llama3-405b", *args[1:], "--context", "0", "--batch", "1", "--json").json()
    assert big["max_batch_in_memory"] == 0 and not big["rows"][0]["fits_memory"]


@pytest.mark.parametrize(
    "args, needle",
    [
        (["llama3-8b"], "MODEL needs a --gpu to time its steps"),  # a model alone was ignored
        (["--context", "8K"], "--context is for the step times"),  # so was a context
    ],
)
def test_spec_refuses_step_model_arguments_without_a_gpu(cli, args, needle):
    r = cli("spec", *args, "--alpha", "0.8", "--gamma", "4", "--c", "0.1")
    assert r.code == 2 and needle in r.err and r.err.strip().count("\n") == 0, r.err


def test_a_break_even_past_the_search_says_how_few_fit(cli):
    """No break-even up to the search's 1,048,576 sequences is not a batch an engine reaches: the
    line says how many fit in memory (a new user read the search limit as reachable)."""
    argv = ("spec", "llama3-70b", "--gpu", "h100", "--tp", "4", "--alpha", "0.9", "--gamma", "2", "--c", "0.01")
    data = cli(*argv, "--context", "2K", "--json").json()
    assert data["break_even_batch"] is None and data["max_batch_in_memory"] < 1_048_576
    line = next(row for row in cli(*argv, "--context", "2K").out.splitlines() if "break-even:" in row)
    assert line.rstrip().endswith(f"far past memory: at most {data['max_batch_in_memory']:,} fit"), line
