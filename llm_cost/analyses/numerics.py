"""Number formats for training and inference: range, precision, overflow (seed 003 §10).

Every figure is computed from a format's bit layout (sign, ``e`` exponent bits, ``m`` mantissa
bits, exponent bias, and what the all-ones exponent encodes), never from a table of values:

* IEEE 754-2019 §3.3-§3.4 (binary32 = FP32, binary16 = FP16): the all-ones exponent field is
  reserved for inf (mantissa 0) and NaN (mantissa != 0); normal values (-1)^s 2^(E - bias)
  (1 + M / 2^m) for 1 <= E <= 2^e - 2; subnormals 2^(1 - bias) (M / 2^m) for E = 0.
* BF16 (Google Brain float16): the top 16 bits of binary32, IEEE-style specials.
* TF32 (NVIDIA A100 whitepaper, 2020): 8 exponent and 10 mantissa bits (FP32 range, FP16
  precision), held in 32-bit registers; IEEE-style specials.
* FP8 E4M3 and E5M2 (OCP 8-bit Floating Point Specification (OFP8) rev 1.0, 2023; NVIDIA
  ``__nv_fp8_e4m3`` / ``__nv_fp8_e5m2``): E5M2 follows IEEE (inf, NaN, max 57,344). E4M3 is
  the "fn" variant (``float8_e4m3fn``): no inf, the top exponent holds normal values and only
  S.1111.111 is NaN, so the largest finite value is S.1111.110 = 448.
* FP4 E2M1 (OCP Microscaling Formats (MX) Specification v1.0, 2023, §5.3.3): no inf, no NaN,
  values 0, 0.5, 1, 1.5, 2, 3, 4, 6.
* INT8 / INT4: two's complement integers, step 1.

Rounding (:func:`round_to_format`) is IEEE round-to-nearest, ties-to-even, done exactly with
``fractions.Fraction`` and integer arithmetic (no floating point is involved).
"""

from __future__ import annotations

import math
from dataclasses import field
from fractions import Fraction
from typing import Union

from llm_cost.core.errors import InputError
from llm_cost.core.labels import FormatKind
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result

__all__ = [
    "Format",
    "IntFormat",
    "FormatRow",
    "NumericsResult",
    "FORMATS",
    "INT_FORMATS",
    "FP32",
    "TF32",
    "BF16",
    "FP16",
    "FP8_E4M3",
    "FP8_E5M2",
    "FP4_E2M1",
    "INT8",
    "INT4",
    "round_to_format",
    "round_to_int_format",
    "exp_overflow_x",
    "accumulation_noise",
    "qk_norm_logit_bound",
    "numerics",
]

#: ``nan_encoding`` codes: how NaN (if any) is written in the bit layout.
NAN_IEEE = "ieee"  # exponent all ones, mantissa != 0 (the all-ones exponent is reserved)
NAN_ALL_ONES = "all-ones"  # only S.1...1.1...1 is NaN; the top exponent otherwise holds normal values
NAN_NONE = "none"  # no NaN encoding at all

_NAN_NOTES = {
    NAN_IEEE: "NaN = exponent all ones, mantissa != 0; inf = exponent all ones, mantissa 0",
    NAN_ALL_ONES: "no inf; only S.1111.111 (all ones) is NaN, the rest of the top exponent is finite",
    NAN_NONE: "no inf, no NaN: every bit pattern is a finite number",
}

Number = Union[Fraction, int, float]


def _pow2(k: int) -> Fraction:
    return Fraction(2) ** k


def _pow2_str(k: int) -> str:
    return f"2^{k}"


@record
class Format:
    """A binary floating-point layout: 1 sign bit, ``exponent_bits``, ``mantissa_bits`` (stored
    fraction bits, the leading 1 of normals implicit), exponent ``bias``.

    ``nan_encoding`` is ``"ieee"`` (the all-ones exponent is reserved for inf and NaN),
    ``"all-ones"`` (OCP E4M3: only the all-ones pattern is NaN, no inf) or ``"none"`` (E2M1).
    ``storage_bits`` is the register width when it differs from 1 + e + m (TF32: 32).
    """

    name: str
    exponent_bits: int
    mantissa_bits: int
    bias: int
    has_inf: bool
    nan_encoding: str
    storage_bits: int | None = None
    source: str = ""

    def __post_init__(self) -> None:
        if self.nan_encoding not in _NAN_NOTES:
            raise ValueError(f"{self.name}: nan_encoding must be one of {', '.join(_NAN_NOTES)}")
        if self.has_inf and self.nan_encoding != NAN_IEEE:
            raise ValueError(f"{self.name}: inf needs the IEEE reserved top exponent")
        if self.exponent_bits < 1 or self.mantissa_bits < 1:
            raise ValueError(f"{self.name}: needs at least one exponent and one mantissa bit")

    # --- layout -------------------------------------------------------------------------------
    @property
    def total_bits(self) -> int:
        """Sign + exponent + mantissa bits."""
        return 1 + self.exponent_bits + self.mantissa_bits

    @property
    def bits(self) -> int:
        """Bits a value occupies in memory or registers."""
        return self.storage_bits or self.total_bits

    @property
    def top_exponent_reserved(self) -> bool:
        """IEEE style: the all-ones exponent field encodes only inf and NaN."""
        return self.nan_encoding == NAN_IEEE

    @property
    def has_nan(self) -> bool:
        """The format encodes NaN."""
        return self.nan_encoding != NAN_NONE

    @property
    def nan_note(self) -> str:
        """How NaN (and inf) are encoded, in words."""
        return _NAN_NOTES[self.nan_encoding]

    @property
    def emin(self) -> int:
        """Exponent of the smallest normal (field 1): 1 - bias; subnormals share it."""
        return 1 - self.bias

    @property
    def emax(self) -> int:
        """Exponent of the largest finite binade: field 2^e - 2 if the top field is reserved, else 2^e - 1."""
        top_field = 2**self.exponent_bits - (2 if self.top_exponent_reserved else 1)
        return top_field - self.bias

    @property
    def max_mantissa(self) -> int:
        """Largest stored mantissa in the top finite binade (all ones, less one if that pattern is NaN)."""
        return 2**self.mantissa_bits - (2 if self.nan_encoding == NAN_ALL_ONES else 1)

    # --- values ---------------------------------------------------------------------------------
    @property
    def max_finite(self) -> Fraction:
        """Largest finite value: 2^emax x (1 + max_mantissa / 2^m)."""
        m = self.mantissa_bits
        return _pow2(self.emax) * Fraction(2**m + self.max_mantissa, 2**m)

    @property
    def min_normal(self) -> Fraction:
        """Smallest positive normal value 2^(1 - bias)."""
        return _pow2(self.emin)

    @property
    def min_subnormal(self) -> Fraction:
        """Smallest positive subnormal 2^(1 - bias - m)."""
        return _pow2(self.emin - self.mantissa_bits)

    @property
    def unit_roundoff(self) -> Fraction:
        """u = 2^-(m + 1): the largest relative error of round-to-nearest (normal range)."""
        return _pow2(-(self.mantissa_bits + 1))

    @property
    def machine_epsilon(self) -> Fraction:
        """2^-m: the gap between 1.0 and the next larger value (= 2u)."""
        return _pow2(-self.mantissa_bits)

    @property
    def max_finite_formula(self) -> str:
        """``(2 - 2^-j) x 2^emax``: j = m, or m - 1 when the all-ones mantissa is NaN."""
        gap = Fraction(2**self.mantissa_bits - self.max_mantissa, 2**self.mantissa_bits)
        return f"(2 - 2^{-_floor_log2(1 / gap)}) x 2^{self.emax}"


@record
class IntFormat:
    """A two's-complement integer format of ``bits`` bits (step 1)."""

    name: str
    bits: int

    @property
    def min_value(self) -> int:
        """Most negative value (two's complement)."""
        return -(2 ** (self.bits - 1))

    @property
    def max_value(self) -> int:
        """Largest value (two's complement)."""
        return 2 ** (self.bits - 1) - 1


def _ieee_bias(exponent_bits: int) -> int:
    return 2 ** (exponent_bits - 1) - 1


def _fmt(name: str, e: int, m: int, nan: str, storage: int | None = None, source: str = "") -> Format:
    return Format(name, e, m, _ieee_bias(e), nan == NAN_IEEE, nan, storage, source)


FP32 = _fmt("FP32", 8, 23, NAN_IEEE, source="IEEE 754-2019 binary32")
TF32 = _fmt("TF32", 8, 10, NAN_IEEE, 32, "NVIDIA A100 TF32: FP32 range, 10 mantissa bits, 32-bit registers")
BF16 = _fmt("BF16", 8, 7, NAN_IEEE, source="bfloat16: top half of binary32")
FP16 = _fmt("FP16", 5, 10, NAN_IEEE, source="IEEE 754-2019 binary16")
FP8_E4M3 = _fmt("FP8 E4M3", 4, 3, NAN_ALL_ONES, source="OCP OFP8 rev 1.0 E4M3 ('fn': no inf)")
FP8_E5M2 = _fmt("FP8 E5M2", 5, 2, NAN_IEEE, source="OCP OFP8 rev 1.0 E5M2 (IEEE-like)")
FP4_E2M1 = _fmt("FP4 E2M1", 2, 1, NAN_NONE, source="OCP MX v1.0 §5.3.3 FP4 E2M1")
FORMATS: tuple[Format, ...] = (FP32, TF32, BF16, FP16, FP8_E4M3, FP8_E5M2, FP4_E2M1)

INT8 = IntFormat("INT8", 8)
INT4 = IntFormat("INT4", 4)
INT_FORMATS: tuple[IntFormat, ...] = (INT8, INT4)


# --- rounding ----------------------------------------------------------------------------------
def _as_fraction(x: Number) -> Fraction:
    if isinstance(x, Fraction):
        return x
    if isinstance(x, float) and not math.isfinite(x):
        raise ValueError("non-finite input")
    return Fraction(x)


def _floor_log2(a: Fraction) -> int:
    """floor(log2 a) for a > 0, exactly."""
    n, d = a.numerator, a.denominator
    e = n.bit_length() - d.bit_length()  # a lies in [2^(e-1), 2^(e+1))
    ge = (d << e) <= n if e >= 0 else d <= (n << -e)  # 2^e <= a ?
    return e if ge else e - 1


def _round_half_even(num: int, den: int) -> int:
    """num/den rounded to the nearest integer, ties to even (den > 0)."""
    q, r = divmod(num, den)
    twice = 2 * r
    if twice > den or (twice == den and q % 2 == 1):
        q += 1
    return q


def round_to_format(x: Number, fmt: Format, saturate: bool = False) -> Fraction | float:
    """``x`` rounded to ``fmt`` with round-to-nearest, ties-to-even (IEEE 754-2019 §4.3.1), exactly.

    The significand is rounded to m + 1 bits as if the exponent range were unbounded above;
    below 2^(1 - bias) the quantum stays 2^(1 - bias - m) (gradual underflow to subnormals and 0).
    A result above the largest finite value overflows (so the IEEE tie max + ulp/2 overflows too):

    * formats with inf (FP32, TF32, BF16, FP16, E5M2): ``±math.inf`` (IEEE 754-2019 §7.4);
    * E4M3 (NaN but no inf): ``math.nan``, the OCP OFP8 non-saturating conversion (NVIDIA's
      default ``__NV_NOSAT``); values up to 464 still round to 448;
    * E2M1 (neither): ``±max`` (6), the OCP MX conversion, which must saturate;
    * ``saturate=True``: ``±max`` for every format (OFP8 saturating mode, ``__NV_SATFINITE``).

    Finite results are returned as exact ``Fraction`` values (a zero result is ``Fraction(0)``;
    the sign of zero is not kept). Float inputs must be finite.
    """
    a = _as_fraction(x)
    if a == 0:
        return Fraction(0)
    negative = a < 0
    a = -a if negative else a
    m = fmt.mantissa_bits
    e = max(_floor_log2(a), fmt.emin)
    shift = m - e  # a / 2^(e - m)
    if shift >= 0:
        steps = _round_half_even(a.numerator << shift, a.denominator)
    else:
        steps = _round_half_even(a.numerator, a.denominator << -shift)
    result = steps * _pow2(e - m)
    if result > fmt.max_finite:
        if saturate or not fmt.has_nan:
            result = fmt.max_finite
        elif fmt.has_inf:
            return -math.inf if negative else math.inf
        else:
            return math.nan
    return -result if negative else result


def round_to_int_format(x: Number, fmt: IntFormat) -> int:
    """``x`` rounded to the nearest integer (ties to even), saturated to [min, max] of ``fmt``."""
    a = _as_fraction(x)
    q = _round_half_even(a.numerator, a.denominator)
    return min(max(q, fmt.min_value), fmt.max_value)


# --- derived figures ---------------------------------------------------------------------------
def exp_overflow_x(fmt: Format) -> float:
    """x above which e^x exceeds the largest finite value of ``fmt``: ln(max finite)."""
    mx = fmt.max_finite
    return math.log(mx.numerator) - math.log(mx.denominator)


def accumulation_noise(fmt: Format, k: int) -> float:
    """Random-walk estimate of the relative error of a length-``k`` dot product accumulated in
    ``fmt``: u x sqrt(k) with the unit roundoff u = 2^-(m + 1) (seed 003 §10: BF16 2^-8 x
    sqrt(4096) = 0.25). The worst-case bound grows as k x u instead."""
    return float(fmt.unit_roundoff) * math.sqrt(k)


def qk_norm_logit_bound(head_dim: int) -> float:
    """With QK-norm (q and k RMS-normalised, so |q| = |k| = sqrt(d)), a logit q.k / sqrt(d)
    is at most |q| |k| / sqrt(d) = sqrt(d) in magnitude (Cauchy-Schwarz)."""
    return math.sqrt(head_dim)


# --- result ------------------------------------------------------------------------------------
@record
class FormatRow:
    """One number format's figures (``None`` where a figure does not apply to integers)."""

    name: str
    kind: FormatKind
    bits: int  # storage bits
    exponent_bits: int | None
    mantissa_bits: int | None
    bias: int | None
    max_finite: float
    max_finite_exact: str  # a decimal integer (every max here is one), or "p/q"
    max_finite_formula: str
    min_value: float  # most negative finite value
    min_normal: float | None
    min_normal_exact: str | None  # "2^-14"
    min_subnormal: float | None
    min_subnormal_exact: str | None
    unit_roundoff: float | None
    unit_roundoff_exact: str | None
    machine_epsilon: float | None
    machine_epsilon_exact: str | None
    step: int | None  # integer formats: 1
    has_inf: bool
    has_nan: bool
    nan_encoding: str
    overflow_rounds_to: str  # what round-to-nearest gives above the largest finite value
    exp_overflow_x: float | None  # ln(max finite)
    one_plus_0001: float  # 1.0 + 0.001 rounded to the format
    one_plus_0001_exact: str
    one_plus_0001_lost: bool  # the 0.001 vanished
    accumulation_noise: float | None  # u x sqrt(k)
    source: str


@record
class NumericsResult(Result):
    """Range and precision of the formats, accumulation noise at ``k``, QK-norm logit bound."""

    k: int
    head_dim: int
    formats: list[FormatRow]
    qk_norm_logit_bound: float
    qk_norm_exp_overflows: list[str]  # float formats whose e^x overflows below the bound
    epsilon_convention: str
    conventions: list[Note] = field(default_factory=list)


def _exact_str(v: Fraction) -> str:
    return str(v.numerator) if v.denominator == 1 else f"{v.numerator}/{v.denominator}"


def _decimal_str(v: Fraction) -> str:
    """Exact decimal expansion of a dyadic fraction."""
    if v.denominator == 1:
        return str(v.numerator)
    k = v.denominator.bit_length() - 1
    assert v.denominator == 1 << k, "not dyadic"
    digits = str(abs(v.numerator) * 5**k).rjust(k + 1, "0")
    text = f"{digits[:-k]}.{digits[-k:]}".rstrip("0")
    return ("-" if v < 0 else "") + text


def _overflow_note(fmt: Format) -> str:
    if fmt.has_inf:
        return "inf"
    return "NaN" if fmt.has_nan else f"saturates to ±{_exact_str(fmt.max_finite)}"


def _float_row(fmt: Format, k: int, probe: Fraction) -> FormatRow:
    rounded = round_to_format(probe, fmt)
    assert isinstance(rounded, Fraction)
    return FormatRow(
        name=fmt.name,
        kind=FormatKind.FLOAT,
        bits=fmt.bits,
        exponent_bits=fmt.exponent_bits,
        mantissa_bits=fmt.mantissa_bits,
        bias=fmt.bias,
        max_finite=float(fmt.max_finite),
        max_finite_exact=_exact_str(fmt.max_finite),
        max_finite_formula=fmt.max_finite_formula,
        min_value=-float(fmt.max_finite),
        min_normal=float(fmt.min_normal),
        min_normal_exact=_pow2_str(fmt.emin),
        min_subnormal=float(fmt.min_subnormal),
        min_subnormal_exact=_pow2_str(fmt.emin - fmt.mantissa_bits),
        unit_roundoff=float(fmt.unit_roundoff),
        unit_roundoff_exact=_pow2_str(-(fmt.mantissa_bits + 1)),
        machine_epsilon=float(fmt.machine_epsilon),
        machine_epsilon_exact=_pow2_str(-fmt.mantissa_bits),
        step=None,
        has_inf=fmt.has_inf,
        has_nan=fmt.has_nan,
        nan_encoding=fmt.nan_note,
        overflow_rounds_to=_overflow_note(fmt),
        exp_overflow_x=exp_overflow_x(fmt),
        one_plus_0001=float(rounded),
        one_plus_0001_exact=_decimal_str(rounded),
        one_plus_0001_lost=rounded == 1,
        accumulation_noise=accumulation_noise(fmt, k),
        source=fmt.source,
    )


def _int_row(fmt: IntFormat, probe: Fraction) -> FormatRow:
    rounded = round_to_int_format(probe, fmt)
    return FormatRow(
        name=fmt.name,
        kind=FormatKind.INT,
        bits=fmt.bits,
        exponent_bits=None,
        mantissa_bits=None,
        bias=None,
        max_finite=float(fmt.max_value),
        max_finite_exact=str(fmt.max_value),
        max_finite_formula=f"2^{fmt.bits - 1} - 1",
        min_value=float(fmt.min_value),
        min_normal=None,
        min_normal_exact=None,
        min_subnormal=None,
        min_subnormal_exact=None,
        unit_roundoff=None,
        unit_roundoff_exact=None,
        machine_epsilon=None,
        machine_epsilon_exact=None,
        step=1,
        has_inf=False,
        has_nan=False,
        nan_encoding="no inf, no NaN (two's complement)",
        overflow_rounds_to=f"saturates to [{fmt.min_value}, {fmt.max_value}]",
        exp_overflow_x=None,
        one_plus_0001=float(rounded),
        one_plus_0001_exact=str(rounded),
        one_plus_0001_lost=rounded == 1,
        accumulation_noise=None,
        source="two's complement integer, step 1",
    )


def _check_int(value: int, name: str) -> int:
    """``value`` of the argument ``name``: a whole number of at least 1; InputError naming it otherwise."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{name}: {value!r} is not a whole number", fields=(name,))
    if value < 1:
        raise InputError(f"{name}: {value} must be at least 1", fields=(name,))
    return value


def _epsilon_convention(k: int) -> str:
    return (
        "accumulation noise = u x sqrt(k) with the unit roundoff u = 2^-(m+1) (half the machine epsilon "
        f"2^-m); BF16, k = {k:,}: 2^-8 x {math.sqrt(k):,.4g} = {100 * 2**-8 * math.sqrt(k):.4g}%"
    )


def numerics(k: int = 4096, head_dim: int = 128) -> NumericsResult:
    """Figures of every format, accumulation noise of a length-``k`` dot product and the QK-norm
    logit bound for ``head_dim`` (seed 003 §10). Raises InputError naming ``k`` / ``head_dim``."""
    _check_int(k, "k")
    _check_int(head_dim, "head_dim")
    probe = Fraction(1) + Fraction(1, 1000)  # the decimal 1.001 exactly
    rows = [_float_row(f, k, probe) for f in FORMATS] + [_int_row(f, probe) for f in INT_FORMATS]
    bound = qk_norm_logit_bound(head_dim)
    overflows = [f.name for f in FORMATS if exp_overflow_x(f) < bound]
    conventions = [
        note("numerics.layout"),
        note("numerics.fp8_variants"),
        note("numerics.rounding"),
        note("numerics.unit_roundoff"),
        note("numerics.accumulation", k=k),
        note("numerics.exp_and_int"),
        note("numerics.qk_norm", head_dim=head_dim, bound=bound),
    ]
    return NumericsResult(
        k=k,
        head_dim=head_dim,
        formats=rows,
        qk_norm_logit_bound=bound,
        qk_norm_exp_overflows=overflows,
        epsilon_convention=_epsilon_convention(k),
        conventions=conventions,
    )
