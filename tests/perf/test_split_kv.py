"""Split-KV decode attention (flash-decoding): FlashAttention-2's split rule, checked against the rule
worked by hand (Dao-AILab/flash-attention csrc/flash_attn/flash_api.cpp, num_splits_heuristic and
set_params_splitkv), and what a profile with and without it predicts for a long-context decode."""

from __future__ import annotations

import dataclasses

import pytest

from llm_cost import api
from llm_cost.perf.choose import load_profile
from llm_cost.perf.kernels import fa_decode_launch, fa_num_splits
from llm_cost.specs.load import load_gpu


def _split_profile(tmp_path, name="h100-split"):
    """The shipped PyTorch-eager profile of the H100 with decode_split_kv on, as a profile file."""
    from llm_cost.analyses.calibration import profile_yaml

    p = dataclasses.replace(load_profile("hopper-pytorch-eager"), name=name, decode_split_kv=True)
    path = tmp_path / f"{name}.yaml"
    path.write_text(profile_yaml(p), encoding="utf-8")
    return path


def test_sm_counts_from_the_whitepapers():
    # NVIDIA A100 and H100 architecture whitepapers: A100 108 SMs, H100 SXM5 132, H100 PCIe 114
    assert load_gpu("a100").sm_count == 108
    assert load_gpu("h100").sm_count == 132
    assert load_gpu("h100-pcie").sm_count == 114


def test_llama3_8b_batch_1_at_32k_on_h100_splits_29_ways():
    """By hand: Llama-3-8B has 32 query and 8 KV heads of 128; a decode step's query attends to
    32,768 cached keys + its own = 32,769. GQA decode packs a KV head's 4 query heads as rows:
    heads 8, m_blocks ceil(4/64) = 1, so 1 x 8 x 1 = 8 blocks without a split; slots 2 x 132 = 264;
    key blocks of 128: ceil(32,769/128) = 257. 8 < 0.8 x 264, so split: s up to min(128, 264, 257)
    = 128. s = 33 fills one wave exactly (8 x 33 = 264, efficiency 1; eligible: ceil(257/33) = 8 !=
    ceil(257/32) = 9), so the best efficiency is 1 and the rule takes the smallest eligible s with
    8 s / 264 >= 0.85: s >= 28.05; s = 29 (ceil(257/29) = 9 != ceil(257/28) = 10) is eligible."""
    assert fa_num_splits(8, 264, 257) == 29
    launch = fa_decode_launch(batch=1, heads=32, kv_heads=8, queries=1, keys=32769, head_dim=128, sm_count=132)
    assert (launch.heads, launch.m_blocks, launch.n_blocks, launch.splits, launch.blocks) == (8, 1, 257, 29, 232)


def test_ineligible_splits_are_skipped():
    """By hand, 1,024 cached keys + 1: ceil(1,025/128) = 9 key blocks; ceil(9/s) for s = 1..9 is
    9, 5, 3, 3, 2, 2, 2, 2, 1, so s = 4, 6, 7, 8 repeat their predecessor and are not eligible.
    All s stay under one wave (8 s < 264): efficiency 8 s / 264, best at s = 9 (72/264); 85% of it
    needs 8 s >= 61.2, s >= 7.65: the smallest eligible is 9 (8 is not eligible)."""
    assert fa_num_splits(8, 264, 9) == 9
    assert fa_num_splits(8, 264, 8) == 8  # ceil(8/s): 8, 4, 3, 2, 2, 2, 2, 1: 8 is eligible


def test_enough_blocks_means_one_split():
    """32 sequences x 8 KV heads = 256 blocks >= 0.8 x 264 = 211.2: no split."""
    assert fa_num_splits(256, 264, 257) == 1
    assert fa_decode_launch(32, 32, 8, 1, 32769, 128, 132).blocks == 256


def test_bound_at_32k_is_the_bytes_over_the_bandwidth():
    """By hand: Llama-3-8B's matmul weights are its 8,030,261,248 parameters less the 128,256 x 4,096
    embedding (untied: the LM head is a matmul) and 65 norm vectors of 4,096: 7,504,658,432 x 2 B =
    15,009,316,864 B; the KV read is 32 layers x 2 (K, V) x 8 heads x 128 x 2 B x 32,768 tokens =
    4,294,967,296 B; plus 266,240 x 2 B of norms, one 8,192 B embedding row and the new token's K/V
    (131,072 B): 19,304,955,904 B / 3.35e12 B/s = 5.7627 ms."""
    d = api.decode("llama3-8b", "h100", batch=1, context=32768)
    assert d.matmul_weight_bytes == 15_009_316_864
    assert d.kv_read_bytes == 4_294_967_296
    assert d.bytes == 19_304_955_904
    assert d.bound_s == pytest.approx(19_304_955_904 / 3.35e12, rel=1e-12)


def test_split_kv_profile_reads_a_long_cache_faster(tmp_path):
    split = _split_profile(tmp_path)
    eager = api.decode("llama3-8b", "h100", batch=1, context=32768, engine="pytorch-eager")  # no split-KV
    flash = api.decode("llama3-8b", "h100", batch=1, context=32768, profile=str(split))
    assert eager.bound_s < flash.predicted_s < eager.predicted_s / 2
    # at batch 64 the 512 blocks fill the GPU without a split: both profiles predict the same
    a = api.decode("llama3-8b", "h100", batch=64, context=8192, engine="pytorch-eager")
    b = api.decode("llama3-8b", "h100", batch=64, context=8192, profile=str(split))
    assert a.predicted_s == pytest.approx(b.predicted_s, rel=1e-9)


@pytest.mark.parametrize("command", ["roofline", "fit"])
def test_roofline_and_fit_warn_of_a_profile_without_split_kv(cli, tmp_path, command):
    # the PyTorch eager profile times decode attention without split-KV
    args = [command, "llama3-8b", "--gpu", "h100", "--engine", "pytorch-eager", "--context", "32K"] + (
        ["--batch", "1"] if command == "roofline" else ["--tp", "1"]
    )
    out = cli(*args)
    assert out.code == 0
    assert "without split-KV" in out.out and "232 blocks" in out.out
    if command == "roofline":  # fit predicts with the GPU's shipped profile only
        quiet = cli(*args, "--profile", str(_split_profile(tmp_path)))
        assert quiet.code == 0 and "without split-KV" not in quiet.out


def test_no_warning_where_the_cache_is_short_or_the_batch_large(cli):
    for args in (("--batch", "1", "--context", "1K"), ("--batch", "64", "--context", "8K")):
        out = cli("roofline", "llama3-8b", "--gpu", "h100", "--engine", "pytorch-eager", *args)
        assert out.code == 0 and "without split-KV" not in out.out


def test_the_warning_starts_where_split_kv_saves_a_fifth():
    """Batch 1 under PyTorch eager: at 2,048 cached tokens split-KV would save less than a fifth (no
    warning), at 8,192 more (a warning)."""
    short = api.decode("llama3-8b", "h100", batch=1, context=2048, engine="pytorch-eager")
    long = api.decode("llama3-8b", "h100", batch=1, context=8192, engine="pytorch-eager")
    assert not any(n.code == "prediction.no_split_kv" for n in short.conventions)
    assert any(n.code == "prediction.no_split_kv" for n in long.conventions)
