"""Number formats: the seed 003 §10 figures, and rounding checked against Python's own FP32/FP16."""

from __future__ import annotations

import math
import struct
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.analyses.numerics import (
    BF16,
    FORMATS,
    FP4_E2M1,
    FP8_E4M3,
    FP8_E5M2,
    FP16,
    FP32,
    INT4,
    INT8,
    TF32,
    numerics,
    round_to_format,
    round_to_int_format,
)
from llm_cost.core.errors import InputError


def _row(name: str):
    return next(r for r in numerics().formats if r.name == name)


# --- the document's numbers (seed 003 §10), as independent expectations -----------------------
def test_fp16_max_is_65504():
    assert FP16.max_finite == 65504
    assert _row("FP16").max_finite_exact == "65504"


def test_exp_overflows_fp16_at_11_09_and_bf16_fp32_at_88_7():
    assert round(_row("FP16").exp_overflow_x, 2) == 11.09
    assert round(_row("BF16").exp_overflow_x, 1) == 88.7
    assert round(_row("FP32").exp_overflow_x, 1) == 88.7
    assert math.exp(_row("FP16").exp_overflow_x) == pytest.approx(65504)


def test_e4m3_max_448_without_inf():
    row = _row("FP8 E4M3")
    assert row.max_finite_exact == "448" and not row.has_inf and row.has_nan
    assert row.overflow_rounds_to == "NaN"


def test_bf16_unit_roundoff_is_2_to_minus_8():
    row = _row("BF16")
    assert row.unit_roundoff == 2.0**-8 and row.unit_roundoff_exact == "2^-8"
    assert round(row.unit_roundoff, 3) == 0.004
    assert row.machine_epsilon == 2.0**-7


def test_one_plus_a_thousandth_is_one_in_bf16():
    assert round_to_format(Fraction(1001, 1000), BF16) == 1
    row = _row("BF16")
    assert row.one_plus_0001 == 1.0 and row.one_plus_0001_lost
    assert round_to_format(Fraction(1001, 1000), FP16) == 1 + Fraction(1, 1024)


def test_bf16_accumulation_noise_at_4096_is_25_percent():
    assert _row("BF16").accumulation_noise == 0.25
    assert next(r for r in numerics(k=16384).formats if r.name == "BF16").accumulation_noise == 0.5


def test_qk_norm_bound_sqrt_128():
    r = numerics()
    assert round(r.qk_norm_logit_bound, 2) == 11.31
    assert "FP16" in r.qk_norm_exp_overflows and "BF16" not in r.qk_norm_exp_overflows
    assert numerics(head_dim=64).qk_norm_logit_bound == 8.0


# --- other layouts -----------------------------------------------------------------------------
def test_other_maxima_and_subnormals():
    assert FP8_E5M2.max_finite == 57344 and FP8_E5M2.has_inf
    assert FP4_E2M1.max_finite == 6 and not FP4_E2M1.has_inf and not FP4_E2M1.has_nan
    assert FP16.min_subnormal == Fraction(1, 2**24) and FP16.min_normal == Fraction(1, 2**14)
    assert float(FP32.max_finite) == struct.unpack("<f", struct.pack("<I", 0x7F7FFFFF))[0]
    assert float(FP32.min_subnormal) == struct.unpack("<f", struct.pack("<I", 1))[0]
    assert TF32.bits == 32 and TF32.emax == FP32.emax and TF32.mantissa_bits == 10
    assert (INT8.min_value, INT8.max_value, INT4.min_value, INT4.max_value) == (-128, 127, -8, 7)


def test_e2m1_has_exactly_its_eight_magnitudes():
    grid = sorted({round_to_format(Fraction(i, 64), FP4_E2M1) for i in range(0, 64 * 8)})
    assert grid == [Fraction(v) for v in ("0", "0.5", "1", "1.5", "2", "3", "4", "6")]


def test_overflow_rules():
    assert round_to_format(65520, FP16) == math.inf  # the tie max + ulp/2 overflows (IEEE)
    assert round_to_format(Fraction(65519), FP16) == 65504
    assert round_to_format(-70000, FP16) == -math.inf
    assert round_to_format(464, FP8_E4M3) == 448  # tie to the even 448 (1.110), not the NaN slot
    assert math.isnan(round_to_format(465, FP8_E4M3))
    assert round_to_format(465, FP8_E4M3, saturate=True) == 448
    assert round_to_format(1000, FP4_E2M1) == 6 and round_to_format(-7, FP4_E2M1) == -6
    assert round_to_format(61440, FP8_E5M2) == math.inf
    assert round_to_int_format(300, INT8) == 127 and round_to_int_format(Fraction(5, 2), INT4) == 2


def test_input_errors_name_the_argument():
    with pytest.raises(InputError, match="^k: 0"):
        numerics(k=0)
    with pytest.raises(InputError, match="^head_dim: 0"):
        numerics(head_dim=0)


def test_json_round_trips():
    import json

    from llm_cost.report.base import to_json

    data = json.loads(to_json(numerics()))
    assert data["k"] == 4096 and len(data["formats"]) == 9


def test_render_prints_the_table():
    from rich.console import Console

    from llm_cost.report.numerics import render

    con = Console(record=True, width=200)
    render(con, numerics())
    text = con.export_text()
    assert "65,504" in text and "448" in text and "11.31" in text and "25.0%" in text


# --- rounding against Python's own FP32 (struct 'f') and FP16 (struct 'e') ---------------------
def _struct_round(x: float, code: str) -> float:
    return struct.unpack(code, struct.pack(code, x))[0]


def _check_against_struct(x: float, fmt, code: str) -> None:
    ours = round_to_format(Fraction(x), fmt)
    try:
        theirs = _struct_round(x, code)
    except OverflowError:  # struct refuses what would round to inf
        assert ours in (math.inf, -math.inf)
        return
    assert float(ours) == theirs


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False))
def test_fp32_matches_struct(x):
    _check_against_struct(x, FP32, "f")


@settings(max_examples=200, deadline=None)
@given(
    st.integers(min_value=0, max_value=0x7F7FFFFE),
    st.sampled_from([Fraction(1, 2), Fraction(1, 4), Fraction(3, 4)]),
    st.booleans(),
)
def test_fp32_ties_and_near_ties_match_struct(bits, t, negative):
    """Points between adjacent FP32 values (the midpoints are ties) are exact doubles."""
    lo = struct.unpack("<f", struct.pack("<I", bits))[0]
    hi = struct.unpack("<f", struct.pack("<I", bits + 1))[0]
    x = float(Fraction(lo) + t * (Fraction(hi) - Fraction(lo)))
    _check_against_struct(-x if negative else x, FP32, "f")


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=-7e4, max_value=7e4, allow_nan=False))
def test_fp16_matches_struct(x):
    _check_against_struct(x, FP16, "e")


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(FORMATS), st.fractions(max_denominator=2**20), st.fractions(max_denominator=2**20))
def test_rounding_is_monotone_and_idempotent(fmt, a, b):
    x, y = sorted((a * 1000, b * 1000))
    rx, ry = round_to_format(x, fmt, saturate=True), round_to_format(y, fmt, saturate=True)
    assert rx <= ry
    assert round_to_format(rx, fmt) == rx
    if abs(x) <= fmt.max_finite:  # nearest: no representable value lies strictly closer
        assert abs(rx - x) <= fmt.unit_roundoff * abs(x) or abs(rx - x) <= fmt.min_subnormal / 2
