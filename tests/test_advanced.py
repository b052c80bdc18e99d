"""MoE, long context and speculative decoding: invariants and the CLI's promises (issue 4)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.specs.load import load_gpu, load_model
from llm_cost.analyses.moe import moe_analysis
from llm_cost.workload.routing import expected_experts
from llm_cost.analyses.speculative import expected_tokens, speculative
from llm_cost.core.errors import InputError


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 1024), st.data(), st.integers(1, 10**6))
def test_expected_experts_bounds(E, data, B):
    k = data.draw(st.integers(1, E))
    hit = expected_experts(E, k, B)
    assert min(k, E) - 1e-9 <= hit <= min(k * B, E) + 1e-9
    assert expected_experts(E, k, B + 1) >= hit - 1e-9


def test_expected_experts_brute_force_small_case():
    """E = 4, k = 2, B = 2: each token picks 2 of 4; P(expert unused) = (1 - 2/4)^2 = 1/4, so
    E[distinct] = 4 x 3/4 = 3 (enumerating the 36 equally likely pairs of picks gives 108/36)."""
    from itertools import combinations, product

    picks = list(combinations(range(4), 2))
    mean = sum(len(set(a) | set(b)) for a, b in product(picks, picks)) / len(picks) ** 2
    assert mean == expected_experts(4, 2, 2) == 3


@settings(max_examples=200, deadline=None)
@given(st.floats(0, 1), st.integers(1, 64))
def test_speculative_tokens_between_1_and_gamma_plus_1(alpha, gamma):
    e = expected_tokens(alpha, gamma)
    assert 1 - 1e-12 <= e <= gamma + 1 + 1e-9


def test_speculative_alpha_one_is_gamma_plus_one():
    assert expected_tokens(1.0, 4) == 5


@pytest.mark.parametrize("alpha,gamma,c,needle", [(1.5, 4, 0.1, "--alpha"), (-0.1, 4, 0.1, "--alpha"),
                                                  (0.8, 0, 0.1, "--gamma"), (0.8, 4, -1, "--c")])
def test_speculative_rejects_impossible_arguments(alpha, gamma, c, needle):
    with pytest.raises(InputError, match=needle):
        speculative(alpha, gamma, c)


def test_moe_rejects_ep_not_dividing_experts_and_dense_models():
    with pytest.raises(InputError, match="--ep"):
        moe_analysis(load_model("deepseek-v3"), [1], 8, ep=3)
    with pytest.raises(InputError, match="no mixture-of-experts"):
        moe_analysis(load_model("llama3-8b"), [1])


def test_mixtral_decode_reads_nearly_all_experts_at_batch_32():
    """Mixtral: E = 8, k = 2; at B = 32, 8 (1 - (3/4)^32) = 7.9992 experts per layer."""
    r = moe_analysis(load_model("mixtral-8x7b"), [32])
    assert r.rows[0].expected_experts == pytest.approx(8 * (1 - 0.75**32))


def test_moe_cli_deepseek(cli):
    r = cli("moe", "deepseek-v3", "--batch", "1,32,128")
    assert r.code == 0, r.err
    for text in ("8.0", "163.3", "251.6", "37.55 GB", "434.28 GB", "659.79 GB", "weights at 8 bits"):
        assert text in r.out
    data = cli("moe", "deepseek-v3", "--ep", "32", "--gpu", "h100", "--json").json()
    assert data["experts_per_rank"] == 8 and round(data["tokens_to_pass_ridge"]) == 9451


@pytest.mark.parametrize("args,needle", [(["moe", "deepseek-v3", "--ep", "3"], "--ep"),
                                         (["moe", "llama3-8b"], "no mixture-of-experts"),
                                         (["spec", "--alpha", "1.5", "--gamma", "4", "--c", "0.1"], "--alpha"),
                                         (["spec", "--alpha", "0.8", "--gamma", "4"], "--c is required"),
                                         (["spec", "--alpha", "nan", "--gamma", "4", "--c", "0.1"], "--alpha"),
                                         (["spec", "--alpha", "0.8", "--gamma", "4", "--c", "0.1", "--gpu", "h100"],
                                          "needs a MODEL"),
                                         (["spec", "llama3-8b", "--mtp", "--alpha", "0.8", "--gamma", "1"], "no MTP"),
                                         (["context", "llama3-8b", "--weight-flops", "half"], "--weight-flops")])
def test_impossible_arguments_exit_2(cli, args, needle):
    r = cli(*args)
    assert r.code == 2 and needle in r.err and r.out == "", (r.code, r.err)


def test_spec_cli(cli):
    out = cli("spec", "--alpha", "0.8", "--gamma", "4", "--c", "0.1").out
    assert "3.3616" in out and "2.40x" in out
    data = cli("spec", "llama3-8b", "--gpu", "h100", "--alpha", "0.8", "--gamma", "4", "--c", "0.1",
               "--batch", "64,128", "--weight-bytes", "resident", "--mbu", "1", "--json").json()
    assert [round(r["speedup"], 2) for r in data["rows"]] == [1.61, 0.89]


def test_spec_with_mtp_draft(cli):
    """DeepSeek-V3's MTP module as the draft: c = its matmul weights (one block with 8 of 256
    experts, eh_proj, the shared LM head) over the model's active matmul weights, about 0.044;
    alpha 0.85 (the report's 85-90%) gives about 1.8x, as seed 003 §07 reports."""
    data = cli("spec", "deepseek-v3", "--mtp", "--alpha", "0.85", "--gamma", "1", "--json").json()
    assert 0.03 < data["c"] < 0.06
    assert round(data["speedup_memory_bound"], 1) == 1.8


def test_context_cli_qwen3_next(cli):
    out = cli("context", "qwen3-next-80b-a3b").out
    assert "3.04 GiB" in out and "12.00 GiB" in out


def test_context_sliding_window_has_no_crossover_growth():
    from llm_cost.analyses.context import context_analysis

    r = context_analysis(load_model("mistral-7b"), [4096, 131072], load_gpu("h100"))
    assert r.rows[0].kv_bytes == r.rows[1].kv_bytes  # capped at W = 4096
    assert r.rows[1].attention_flops_per_token == r.rows[0].attention_flops_per_token


@pytest.mark.parametrize("context", [1, 4095, 131071])
def test_kv_mla_ratio_agrees_with_the_flop_count(context):
    """kv prints the absorbed/plain ratio from a closed form; the operator FLOP count must agree:
    DeepSeek-V3 (2 x 512 + 64) / (128 + 64 + 128) = 1088 / 320 = 3.4 at any context."""
    from llm_cost.workload.flops import forward_flops
    from llm_cost.model.kv import kv_cache

    v3 = load_model("deepseek-v3")
    plain = forward_flops(v3, 1, cached=context, logits="last").attention_flops
    absorbed = forward_flops(v3, 1, cached=context, logits="last", mla_form="absorbed").attention_flops
    assert kv_cache(v3, [1]).mla_absorbed_flop_ratio == pytest.approx(absorbed / plain) == 3.4
