"""Long context: crossover, sliding windows, MLA's absorbed attention, the context command."""

from __future__ import annotations

import pytest

from llm_cost.core.choices import Logits, MLAForm
from llm_cost.specs.load import load_gpu, load_model


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
    from llm_cost.model.kv import kv_cache
    from llm_cost.workload.flops import forward_flops

    v3 = load_model("deepseek-v3")
    plain = forward_flops(v3, 1, cached=context, logits=Logits.LAST).attention_flops
    absorbed = forward_flops(v3, 1, cached=context, logits=Logits.LAST, mla_form=MLAForm.ABSORBED).attention_flops
    assert kv_cache(v3, [1]).mla_absorbed_flop_ratio == pytest.approx(absorbed / plain) == 3.4


def test_a_whole_crossover_prints_as_a_whole_number(cli):
    """Llama-3-8B by hand: 2 x N_gemm / (4 n_q d_head L) = 2 x 7,504,658,432 / (4 x 32 x 128 x 32)
    = 28,628 exactly, a count of tokens, not "28,628.0"."""
    assert 2 * 7_504_658_432 == 28_628 * 4 * 32 * 128 * 32
    out = cli("context", "llama3-8b", "--context", "8K").out
    assert "28,628 tokens" in out and "28,628.0" not in out


def test_context_weighs_a_quantized_checkpoint_as_roofline_does(cli):
    """DeepSeek-V3's config.json stores FP8 blocks beside a BF16 embedding and LM head (673.15 GB,
    checked against its safetensors in tests/model/test_formats.py); context had weighed every
    parameter at 8 bits (671.03 GB) while roofline, params and fit used the checkpoint's formats."""
    import re

    need = re.compile(r"weights \+ KV need ([\d,.]+ GB)")
    ours = need.search(cli("context", "deepseek-v3", "--context", "1M").out)
    theirs = need.search(cli("roofline", "deepseek-v3", "--gpu", "h200", "--context", "1M").out)
    mla_kv = 61 * (512 + 64) * 2 * 2**20  # 61 layers of a 576-element latent at BF16, 1M tokens
    assert ours and theirs and ours.group(1) == theirs.group(1) == f"{(673_150_582_112 + mla_kv) / 1e9:,.1f} GB"
