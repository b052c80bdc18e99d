"""Training cost, images and video, and `reproduce` (issue 5)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.specs.load import load_gpu, load_model
from llm_cost.analyses.multimodal import smart_resize
from llm_cost.analyses.training import state_memory, train


def test_train_cli_llama3_8b_budget(cli):
    r = cli("train", "llama3-8b", "--tokens", "15T", "--gpu-hours", "1.3M")
    assert r.code == 0, r.err
    assert "7.23e+23 FLOPs" in r.out and "154.4 TFLOP/s" in r.out and "910.0 MWh" in r.out


def test_train_time_from_mfu_and_back():
    """At MFU m on n GPUs the time is 6ND / (n x peak x m); feeding its GPU-hours back gives m."""
    spec, h100 = load_model("llama3-70b"), load_gpu("h100")
    a = train(spec, 15 * 10**12, h100, gpus=2048, mfu=0.4)
    assert a.wall_seconds == pytest.approx(6 * 70_553_706_496 * 15e12 / (2048 * 989.4e12 * 0.4))
    b = train(spec, 15 * 10**12, h100, gpus=2048, gpu_hours=a.gpu_hours)
    assert b.mfu == pytest.approx(0.4)


def test_moe_training_uses_active_parameters():
    r = train(load_model("deepseek-v3"), 14_800 * 10**9, load_gpu("h100"), mfu=0.4)
    assert r.params == 37_552_297_472  # active, not 671B


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 10**13), st.integers(1, 100_000))
def test_zero_stages_shrink_per_gpu_state(params, n):
    s = state_memory(params, n)
    assert s.total_bytes == 16 * params
    g = s.per_gpu_bytes
    assert g["none"] >= g["zero1"] >= g["zero2"] >= g["zero3"] == pytest.approx(16 * params / n)


def test_train_needs_exactly_one_of_mfu_and_gpu_hours(cli):
    assert cli("train", "llama3-8b", "--tokens", "1T").code == 2
    r = cli("train", "llama3-8b", "--tokens", "1T", "--mfu", "0.4", "--gpu-hours", "10")
    assert r.code == 2 and "exactly one" in r.err


def test_train_huge_token_count_stays_finite(cli):
    data = cli("train", "llama3-8b", "--tokens", "1e30", "--mfu", "0.5", "--json").json()
    assert data["model_flops"] == pytest.approx(6 * 8_030_261_248 * 1e30)


def test_image_cli(cli):
    r = cli("image", "qwen2-vl-7b", "--size", "1920x1080")
    assert r.code == 0 and "2,691" in r.out
    data = cli("image", "qwen2-vl-7b", "--size", "1024x1024", "--decoder", "llama3-70b", "--json").json()
    assert data["vision"]["tokens"] == 1369 and data["kv_to_encoder_output"] == 20
    assert cli("image", "qwen2-vl-7b", "--size", "1024x1024", "--connector", "mlp", "--json").json()[
        "vision"]["tokens"] == 5476
    assert cli("image", "qwen2-vl-7b", "--size", "1024x1024", "--connector", "resampler:64", "--json").json()[
        "vision"]["tokens"] == 64


def test_video_cli(cli):
    data = cli("video", "qwen2-vl-7b", "--size", "1280x720", "--seconds", "60", "--fps", "1", "--json").json()
    assert data["vision"]["tokens"] == 35_880 and data["vision"]["temporal_groups"] == 30


@pytest.mark.parametrize("args,needle", [
    (["image", "llama3-8b", "--size", "1024x1024"], "no vision tower"),
    (["image", "qwen2-vl-7b", "--size", "1024"], "--size"),
    (["image", "qwen2-vl-7b", "--size", "0x10"], "--size"),
    (["image", "qwen2-vl-7b", "--size", "64x64", "--connector", "resampler:0"], "--connector"),
    (["image", "qwen2-vl-7b", "--size", "64x64", "--connector", "qformer"], "--connector"),
    (["video", "qwen2-vl-7b", "--size", "64x64", "--seconds", "0", "--fps", "1"], "--seconds"),
    (["train", "llama3-8b", "--tokens", "15X", "--mfu", "0.5"], "--tokens"),
    (["train", "llama3-8b", "--tokens", "15T", "--mfu", "1.5"], "--mfu"),
    (["train", "llama3-8b", "--tokens", "15T", "--mfu", "0.5", "--pue", "0.5"], "--pue"),
    (["reproduce", "--row", "Z9"], "--row"),
])
def test_bad_input_exit_2(cli, args, needle):
    r = cli(*args)
    assert r.code == 2 and needle in r.err and r.out == "", (r.code, r.err)


@settings(max_examples=200, deadline=None)
@given(st.integers(28, 4000), st.integers(28, 4000))
def test_smart_resize_multiples_and_bounds(h, w):
    if max(h, w) / min(h, w) > 200:
        return
    rh, rw = smart_resize(h, w)
    assert rh % 28 == 0 and rw % 28 == 0
    assert 56 * 56 <= rh * rw <= 28 * 28 * 16384


def test_reproduce_exits_0_with_every_row(cli):
    r = cli("reproduce")
    assert r.code == 0
    assert "86 of 86 rows match" in r.out
    rows = cli("reproduce", "--json").json()
    assert len(rows) == 86 and all(row["ok"] for row in rows)
