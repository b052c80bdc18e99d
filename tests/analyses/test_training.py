"""Training cost: 6ND, time from an MFU and back, GPU-hour budgets, ZeRO state."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.analyses.training import state_memory, train
from llm_cost.specs.load import load_gpu, load_model


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


def test_the_budget_mode_names_whose_state_accounting_it_uses(cli):
    """16 B per parameter is the ZeRO paper's mixed-precision Adam; a planned Megatron run holds
    6 + 12/DP (theoretical_memory_usage.py), so the budget mode must say which it printed and in
    which units."""
    out = cli("train", "llama3-8b", "--tokens", "15T", "--mfu", "0.4", "--gpus", "1024").out
    assert "ZeRO paper" in out and "6 + 12/DP" in out and "GB = 10^9 B" in out
    assert "128.48 GB" in out  # 16 x 8,030,261,248 B


def test_train_needs_exactly_one_of_mfu_and_gpu_hours(cli):
    assert cli("train", "llama3-8b", "--tokens", "1T").code == 2
    r = cli("train", "llama3-8b", "--tokens", "1T", "--mfu", "0.4", "--gpu-hours", "10")
    assert r.code == 2 and "exactly one" in r.err


def test_gpu_hours_implying_an_mfu_below_1_percent_are_refused_as_such_an_mfu_is(cli):
    """An attack: --gpu-hours 1e300 printed 'MFU 0.0%' and 300-digit energy. 6ND for Llama-3-8B on
    10^12 tokens is 6 x 8,030,261,248 x 10^12 FLOP; at 1% of 989.4 TFLOP/s that is 1,352,718 GPU-hours,
    the most a run at 1% MFU takes."""
    most = 6 * 8_030_261_248 * 10**12 / (0.01 * 989.4e12) / 3600
    r = cli("train", "llama3-8b", "--tokens", "1T", "--gpu-hours", "1e300")
    assert r.code == 2 and r.err.startswith("error: --gpu-hours:") and "below 1%" in r.err
    assert f"{most:,.6g}" in r.err
    assert cli("train", "llama3-8b", "--tokens", "1T", "--gpu-hours", f"{most * 0.999:.0f}").code == 0


def test_train_huge_token_count_stays_finite(cli):
    data = cli("train", "llama3-8b", "--tokens", "1e30", "--mfu", "0.5", "--json").json()
    assert data["model_flops"] == pytest.approx(6 * 8_030_261_248 * 1e30)


def test_a_tiny_energy_keeps_its_digits_in_both_units(cli):
    """One token of Llama-3-8B: 6 x 8,030,261,248 FLOP at 40% of 989.4 TFLOP/s on one 700 W H100
    is 2.37e-8 kWh; the kWh figure had printed as 0.0 beside 2.37e-11 MWh."""
    kwh = 6 * 8_030_261_248 / (0.4 * 989.4e12) * 700 / 3.6e6
    out = cli("train", "llama3-8b", "--tokens", "1", "--mfu", "0.4").out
    assert f"{kwh:.3g} kWh = {kwh / 1000:.3g} MWh" in out
