"""MoE traffic: expected experts (against brute force), expert bytes read, the moe command."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.analyses.moe import moe_analysis
from llm_cost.core.errors import InputError
from llm_cost.specs.load import load_model
from llm_cost.workload.routing import expected_experts


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


def test_moe_rejects_ep_not_dividing_experts_and_dense_models():
    with pytest.raises(InputError, match="^ep: 3 GPUs"):
        moe_analysis(load_model("deepseek-v3"), [1], 8, ep=3)
    with pytest.raises(InputError, match="no mixture-of-experts"):
        moe_analysis(load_model("llama3-8b"), [1])


def test_a_moe_config_whose_every_layer_is_dense_is_a_dense_model_to_moe(cli, tmp_path):
    """An attack: DeepSeek-V3 with first_k_dense_replace 61 (its 61 layers all dense) declares
    experts that no layer uses; ``moe`` died on an IndexError (exit 1) where it names the model."""
    text = (Path(__file__).parents[2] / "models" / "deepseek-v3.yaml").read_text()
    spec = tmp_path / "dsdense.yaml"
    spec.write_text(text.replace("first_k_dense_replace: 3", "first_k_dense_replace: 61").replace(
        "name: deepseek-v3", "name: dsdense"))  # fmt: skip
    r = cli("moe", str(spec))
    assert r.code == 2 and "dsdense has no mixture-of-experts layers" in r.err and r.err.strip().count("\n") == 0


def test_mixtral_decode_reads_nearly_all_experts_at_batch_32():
    """Mixtral: E = 8, k = 2; at B = 32, 8 (1 - (3/4)^32) = 7.9992 experts per layer."""
    r = moe_analysis(load_model("mixtral-8x7b"), [32])
    assert r.rows[0].expected_experts == pytest.approx(8 * (1 - 0.75**32))


def test_moe_cli_deepseek(cli):
    r = cli("moe", "deepseek-v3", "--batch", "1,32,128", "--weights-dtype", "fp8")  # seed 003: every weight at 8 bits
    assert r.code == 0, r.err
    for text in ("8.0", "163.3", "251.6", "37.55 GB", "434.28 GB", "659.79 GB", "weights at 8 bits"):
        assert text in r.out
    data = cli("moe", "deepseek-v3", "--ep", "32", "--gpu", "h100", "--weights-dtype", "fp8", "--json").json()
    assert data["experts_per_rank"] == 8 and round(data["tokens_to_pass_ridge"]) == 9451


@pytest.mark.parametrize("ep", [1, 8, 32])
def test_the_all_to_all_says_how_much_of_it_leaves_the_gpu(ep):
    """A MoE user took the all-to-all's volume as all remote: under EP over n GPUs a copy bound for
    one of the sender's own experts stays on it, so with uniform routing (n - 1)/n of them leave.
    DeepSeek-V3 (config.json: hidden_size 7,168, num_experts_per_tok 8, 58 MoE layers of 61): a
    4,096-token prompt dispatches 8 x 7,168 at 1 B (FP8) and combines at 2 B (BF16) per MoE layer."""
    r = moe_analysis(load_model("deepseek-v3"), [1], ep=ep, dispatch_bits=8, combine_bits=16, prompt_tokens=4096)
    whole = 4096 * 58 * 8 * 7168 * (1 + 2)
    assert r.prompt_all_to_all_bytes == whole
    assert r.all_to_all_remote_share == (ep - 1) / ep
    assert r.prompt_all_to_all_remote_bytes == pytest.approx(whole * (ep - 1) / ep, rel=1e-15)


def test_the_all_reduce_tp_defaults_to_a_degree_that_divides_the_heads():
    """``moe glm-4.7-flash`` (an attacker): GLM-4.7-Flash's config has 20 query heads (MLA), which a
    fixed default TP 8 did not divide, so the command failed on a flag never given. The default is
    the largest of 8, 4, 2, 1 dividing them (4 here, 8 for DeepSeek-V3's 128); a TP given that does
    not divide them is refused with the degrees up to 64 that do (the divisors of 20); a dense
    model is refused for being dense before any TP is weighed."""
    from llm_cost import api

    assert api.moe("glm-4.7-flash").tp == 4 and api.moe("deepseek-v3").tp == 8
    with pytest.raises(InputError) as bad:
        api.moe("glm-4.7-flash", tp=8)
    assert bad.value.fields == ("tp",) and str(bad.value).endswith("give one of 1, 2, 4, 5, 10, 20")
    with pytest.raises(InputError) as dense:
        api.moe("qwen2.5-7b")  # 28 query heads: TP 8 does not divide them either
    assert dense.value.fields == ("model",)
