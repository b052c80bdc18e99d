"""Parsing of user-typed quantities and formatting of exact results.

Conventions (design notes, "Conventions"):

* Context lengths use binary suffixes: ``8K`` = 8,192 and ``128k`` = 131,072 tokens,
  ``1M`` = 1,048,576 tokens; a plain integer (``128000``) is taken as written.
* Large counts (training tokens, GPU-hours) use decimal suffixes: ``15T`` = 15e12,
  ``1.3M`` = 1.3e6; scientific notation (``1e12``) is accepted.
* Bytes are exact integers (or exact fractions for sub-byte formats); they are printed
  with SI units (kB, MB, GB, TB = 10^3n) or IEC units (KiB, MiB, GiB, TiB = 2^10n), each
  under its own correct name, never mixed up.

Every parser raises :class:`InputError` (a ValueError) naming ``what`` (the argument or field parsed,
listed in the error's ``fields``) with what was typed and what would be valid; the CLI turns it into
exit code 2.
"""

from __future__ import annotations

import math
import numbers
import operator
import re
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any, SupportsIndex, cast

from llm_cost.core.errors import InputError
from llm_cost.core.limits import DURATION_RANGE_S, MAX_COUNT

#: A count of bytes, FLOPs or elements: exact (an int, or a Fraction for sub-byte formats) or an
#: expectation (a float, e.g. the expected routed experts a step reads).
Number = int | Fraction | float

__all__ = [
    "Number",
    "quotient",
    "parse_context",
    "parse_count",
    "parse_integer",
    "parse_grid",
    "parse_positive_float",
    "parse_fraction",
    "parse_decimal",
    "exact",
    "to_bytes",
    "exact_bits",
    "fmt_int",
    "fmt_si",
    "fmt_iec",
    "fmt_flops",
    "fmt_seconds",
    "fmt_number",
]

_BINARY = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30}
_DECIMAL = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12, "p": 10**15}
#: A number with an optional one-letter suffix. Matched through ``re``'s own cache, so it is compiled
#: when a value is first parsed, not on every start (0.3 ms; ``params MODEL`` parses no number).
_NUMBER = r"^\s*([0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([a-zA-Z]?)\s*$"


def _bad(what: str, problem: str) -> InputError:
    """The InputError for a bad value of ``what`` (an argument, field or flag): "what: problem",
    with ``what`` as its field."""
    return InputError(f"{what}: {problem}", fields=(what,))


def _ungrouped(text: str) -> str:
    """``text`` without its thousands separators when it is a whole number written with them
    (``2,835``, as this tool prints the counts it suggests: an attack typed one back and was
    refused); any other text as it is. A list's items are split on commas before their values
    are read (:func:`parse_grid`), so only a single value reaches this."""
    raw = str(text).strip()
    return raw.replace(",", "") if re.fullmatch(r"[0-9]{1,3}(,[0-9]{3})+", raw) else str(text)


def _unsigned_zero(text: str) -> str:
    """``text`` without its minus sign when it is a zero (``-0``, ``-0.0K``: 0, as
    :func:`parse_decimal` reads it; an attack was told '-0' is negative); any other text as it is."""
    raw = str(text).strip()
    zero = re.match(_NUMBER, raw[1:]) if raw.startswith("-") else None
    return raw[1:] if zero and Decimal(zero.group(1)) == 0 else str(text)


def _split(text: str, what: str, suffixes: dict[str, int]) -> tuple[Decimal, int]:
    text = _unsigned_zero(_ungrouped(text))
    match = re.match(_NUMBER, str(text))
    if not match and str(text).strip().startswith("-") and re.match(_NUMBER, str(text).strip()[1:]):
        raise _bad(what, f"{text!r} is negative; it must be positive")
    if not match:
        valid = ", ".join(s.upper() for s in suffixes if s)
        raise _bad(what, f"{text!r} is not a number; use digits with an optional suffix ({valid}), e.g. 8192, 8K, 1e6")
    number, suffix = match.groups()
    if suffix.lower() not in suffixes:
        valid = ", ".join(s.upper() for s in suffixes if s)
        raise _bad(what, f"unknown suffix {suffix!r} in {text!r}; valid suffixes: {valid}")
    try:
        value = Decimal(number)
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimals
        raise _bad(what, f"{text!r} is not a number") from exc
    if not value.is_finite():
        raise _bad(what, f"{text!r} is not a finite number")
    return value, suffixes[suffix.lower()]


def _exact_int(value: Decimal, scale: int, text: str, what: str, minimum: int, maximum: int = MAX_COUNT) -> int:
    scaled = value * scale
    if scaled > maximum:
        raise _bad(what, f"{text!r} is larger than {maximum:.0e}")
    if scaled != scaled.to_integral_value():
        raise _bad(what, f"{text!r} is not a whole number")
    result = int(scaled)
    if result < minimum:
        raise _bad(what, f"{text!r} must be at least {minimum}")
    return result


def parse_context(text: str | int, what: str = "context", minimum: int = 1) -> int:
    """Parse a context length (tokens) with binary suffixes: ``8K`` -> 8192, ``1M`` -> 1,048,576.

    Raises InputError for negative, zero (below ``minimum``), fractional, NaN or unknown-suffix input.
    """
    if isinstance(text, int):
        if text < minimum:
            raise _bad(what, f"{text} must be at least {minimum}")
        return text
    value, scale = _split(text, what, _BINARY)
    return _exact_int(value, scale, str(text), what, minimum)


def parse_integer(text: str | int, what: str, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """A small count in plain decimal digits (batch, TP, gamma ...). Suffixes are refused with a
    hint: ``1K`` means 1,024 tokens only where the value counts tokens (a context)."""
    if isinstance(text, int):
        value = text
    else:
        raw = _unsigned_zero(_ungrouped(str(text))).strip()
        if re.fullmatch(r"[0-9]+", raw):
            value = int(raw) if len(raw) <= 20 else maximum + 1
        elif raw.startswith("-") and re.fullmatch(r"-[0-9]+", raw):
            raise _bad(what, f"{text!r} is negative; it must be at least {minimum}")
        elif re.match(_NUMBER, raw):
            raise _bad(
                what,
                f"{text!r} is not a whole number in plain digits (e.g. 64); suffixes such as "
                "K are only for token counts (a context of 8K)",
            )
        else:
            raise _bad(what, f"{text!r} is not a whole number (e.g. 64)")
    if value < minimum:
        raise _bad(what, f"{text} must be at least {minimum}")
    if value > maximum:
        raise _bad(what, f"{text} is larger than {maximum:,}")
    return value


def parse_grid(text: str, what: str, item) -> list[int]:
    """A list of values: comma-separated items, each a value, a doubling range ``a..b``
    (``1..256`` = 1, 2, 4, ..., 256; ``1K..128K`` = 1,024 ... 131,072; ``1..100`` ends 64, 100) or a
    range in steps ``a..b:s`` (``1..10:3`` = 1, 4, 7, 10; ``1K..4K:1K`` = 1,024 ... 4,096); the end
    is always included. Each value is parsed by ``item(text, what)``. Order is kept; at most
    10,000 values."""
    parts = str(text).split(",")
    if not any(p.strip() for p in parts):
        raise _bad(what, "empty list; give values such as 1,8,64 or a range 1..256")
    values: list[int] = []
    for part in parts:
        if not part.strip():
            raise _bad(what, f"{text!r} has an empty item; separate values with single commas")
        if ".." in part:
            lo_text, _, hi_text = part.partition("..")
            hi_text, colon, step_text = hi_text.partition(":")
            lo, hi = item(lo_text.strip(), what), item(hi_text.strip(), what)
            if lo < 1 or hi < lo:
                raise _bad(what, f"range {part.strip()!r} must go up from at least 1 (e.g. 1..256)")
            if colon:
                step = item(step_text.strip(), what)
                if step < 1:
                    raise _bad(what, f"range {part.strip()!r} needs a step of at least 1 (e.g. 1..100:10)")
                if len(values) + (hi - lo) // step + 2 > 10_001:
                    raise _bad(what, f"{text!r} has more than 10,000 values")
                values += range(lo, hi + 1, step)
            else:
                v = lo
                while v <= hi:
                    values.append(v)
                    v *= 2
            if values[-1] != hi:  # the end is always a point, doubling, stepping or not
                values.append(hi)
        else:
            values.append(item(part.strip(), what))
        if len(values) > 10_000:
            raise _bad(what, f"{text!r} has more than 10,000 values")
    return values


def parse_count(text: str | int, what: str, minimum: int = 1) -> int:
    """Parse a large count with decimal suffixes: ``15T`` -> 15e12, ``1.3M`` -> 1,300,000, ``1e12``."""
    if isinstance(text, int):
        if text < minimum:
            raise _bad(what, f"{text} must be at least {minimum}")
        return text
    value, scale = _split(text, what, _DECIMAL)
    return _exact_int(value, scale, str(text), what, minimum, 10**40)


def parse_positive_float(text: str | float, what: str, maximum: float | None = None) -> float:
    """Parse a finite float > 0 (and <= ``maximum`` if given); decimal suffixes allowed."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        dec, scale = _split(text, what, _DECIMAL)
        if dec * scale > Decimal("1e300"):
            raise _bad(what, f"{text!r} is too large")
        value = float(dec * scale)
    if not math.isfinite(value) or value <= 0:
        raise _bad(what, f"{text!r} must be a finite number greater than 0")
    if maximum is not None and value > maximum:
        raise _bad(what, f"{text!r} must be at most {maximum:g}")
    return value


_DURATION_UNITS = {
    "s": Decimal(1),
    "ms": Decimal("1e-3"),
    "us": Decimal("1e-6"),
    "µs": Decimal("1e-6"),
    "min": Decimal(60),
    "h": Decimal(3600),
}


def parse_duration(text: str | float, what: str) -> float:
    """A duration in seconds: ``2s``, ``50ms``, ``200us`` (or µs), ``1.5min``, ``2h`` or a bare
    number of seconds; at least a nanosecond and at most a day (:data:`~llm_cost.core.limits.DURATION_RANGE_S`).
    InputError naming ``what`` otherwise."""
    if isinstance(text, (int, float)):
        return parse_duration(str(text), what)
    raw = str(text).strip().lower().replace("\u03bc", "µ")  # the Greek mu typed for the micro sign
    if raw.startswith("-"):
        raise _bad(what, f"{text!r} must be greater than 0")
    unit = next((u for u in ("ms", "µs", "us", "min", "s", "h") if raw.endswith(u)), "")
    number = raw[: len(raw) - len(unit)].strip() if unit else raw
    match = re.match(_NUMBER, number)
    if not match or match.group(2):
        raise _bad(what, f"{text!r} is not a duration (e.g. 2s, 50ms, 200us, 1min, 2h)")
    seconds = Decimal(match.group(1)) * _DURATION_UNITS[unit or "s"]
    shortest, longest = DURATION_RANGE_S
    if not seconds > 0 or seconds > longest:
        raise _bad(what, f"{text!r} must be greater than 0 and at most a day")
    if seconds < Decimal(str(shortest)):
        raise _bad(what, f"{text!r} is under a nanosecond; a duration must be at least 1e-9 s (e.g. 50ms, 200us)")
    return float(seconds)


def parse_decimal(text: str, what: str, percent: bool = False, valid: str = "") -> Decimal:
    """A non-negative decimal number in ASCII digits (``0.6``, ``1e3``); with ``percent``, ``60%``
    is 0.6. InputError for negative, non-numeric, NaN or infinite input (a negative one's message
    ends with ``valid``, the range the caller takes)."""
    raw = str(text).strip()
    scale = Decimal(1)
    if percent and raw.endswith("%"):
        raw, scale = raw[:-1].strip(), Decimal(100)
    negative = re.match(_NUMBER, raw[1:]) if raw.startswith("-") else None
    if negative and not negative.group(2) and Decimal(negative.group(1)) == 0:
        raw = raw[1:]  # -0 is 0
    elif negative:
        raise _bad(what, f"{text!r} is negative{valid}")
    match = re.match(_NUMBER, raw)
    if not match or match.group(2):
        example = "e.g. 0.6 or 60%" if percent else "e.g. 0.6"
        raise _bad(what, f"{text!r} is not a number ({example})")
    return Decimal(match.group(1)) / scale


def parse_fraction(text: str | float, what: str, allow_zero: bool = False) -> float:
    """An efficiency or probability in (0, 1] (``[0, 1]`` with ``allow_zero``); ``60%`` = ``0.6``."""
    valid = f"in {'[0' if allow_zero else '(0'}, 1] (e.g. 0.6 or 60%)"
    value = float(parse_decimal(str(text), what, percent=True, valid=f"; it must be {valid}"))
    if value > 1 or (value == 0 and not allow_zero):
        raise _bad(what, f"{text!r} must be {valid}")
    return value


def plain_number(value: object) -> object:
    """``value`` as Python's own number where it is another library's (numpy's int64 as an int,
    its float32 as a float, a 0-d array as its element, read the same way), else as it is: a bool,
    a Fraction, a str or an array of several elements stay what they are (the checks refuse them). The API's checks and the layout read every number through it, so a numpy scalar is taken
    wherever a number is."""
    if isinstance(value, (bool, int, float, Fraction, str, bytes)) or value is None:
        return value
    if type(value).__name__ in ("bool_", "bool"):  # numpy's bool_ is no number here, as bool is not
        return value
    if getattr(value, "ndim", None) == 0 and callable(getattr(value, "item", None)):  # a 0-d array: its element
        return plain_number(cast("Any", value).item())
    try:
        if hasattr(type(value), "__index__"):
            return operator.index(cast("SupportsIndex", value))
        if isinstance(value, numbers.Real):
            return float(value)
    except (TypeError, ValueError):  # an array of several elements
        return value
    return value


def shown_number(value: object) -> str:
    """``repr(value)``, but an integer past 30 digits as how many digits it has: ``repr`` of one past
    4,300 digits raises ValueError (Python's int_max_str_digits), which an attacker's ``10**5000``
    turned into a traceback inside an error message."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10**30:
        return f"an integer of {math.floor(math.log10(abs(value))) + 1:,} digits"
    return repr(value)


def exact(value: int | Fraction) -> int | Fraction:
    """An exact quantity as an int when it is whole, else the Fraction itself."""
    if isinstance(value, Fraction) and value.denominator == 1:
        return int(value)
    return value


def quotient(numerator: int, denominator: int) -> int | Fraction:
    """``numerator / denominator`` exactly: an int when it divides, else the Fraction (the same as
    ``exact(Fraction(numerator, denominator))``, without building a Fraction that is whole)."""
    whole, rest = divmod(numerator, denominator)
    return whole if not rest else Fraction(numerator, denominator)


def exact_bits(bits: int | float | Fraction) -> Fraction:
    """Bits per weight as a Fraction: a Fraction is kept exactly (a GGUF file's bytes x 8 / parameters),
    a float is read as the nearest fraction with a denominator up to 1000 (4.25 -> 17/4)."""
    return bits if isinstance(bits, Fraction) else Fraction(bits).limit_denominator(1000)


def to_bytes(elements: int | Fraction, bits: int | Fraction) -> int | Fraction:
    """Exact bytes for ``elements`` values of ``bits`` bits each: an int when whole, else a Fraction."""
    if type(elements) is int and type(bits) is int:
        whole, rest = divmod(elements * bits, 8)
        return Fraction(elements * bits, 8) if rest else whole
    return exact(Fraction(elements) * Fraction(bits) / 8)


def fmt_int(value: int) -> str:
    """``8030261248`` -> ``8,030,261,248``."""
    return f"{int(value):,}"


def fmt_params(count: int) -> str:
    """A parameter count in short form: ``8030261248`` -> ``8.03B``, ``124439808`` -> ``124.44M``,
    ``6736`` -> ``6.74K``, ``12`` -> ``12`` (a tiny model is not "0.00B")."""
    for factor, suffix in ((10**9, "B"), (10**6, "M"), (10**3, "K")):
        if count >= factor:
            return f"{count / factor:.2f}{suffix}"
    return str(count)


#: What a formatter prints for a float that overflowed (a result is a number, never ``inf``).
TOO_LARGE = "too large to print (beyond a float's range)"


def fmt_number(value: float, digits: int = 3) -> str:
    """A float with ``digits`` significant digits, thousands separated when large."""
    if not math.isfinite(value):
        return TOO_LARGE
    if value == 0:
        return "0"
    if abs(value) >= 10**digits:
        return f"{value:,.0f}"
    return f"{value:.{digits}g}"


def fmt_given(value: float) -> str:
    """A value as given, in its shortest form, a whole one thousands separated (``--qps 100000``
    echoed as ``100,000``, where ``:g`` gave ``100000`` and ``1e+06``)."""
    if not math.isfinite(value):
        return TOO_LARGE
    return f"{int(value):,}" if value == int(value) and abs(value) < 1e15 else f"{value:g}"


def fmt_rate(value: float) -> str:
    """A rate or a count (tokens/s, requests/s, requests): whole and thousands separated from 100
    on, else three significant digits, so that a slow one (0.0238 tokens/s at a 1G-token context)
    does not print as 0; past 10^15 three significant digits again (a trace of arrivals 1e-300 s
    apart offers a 300-digit rate)."""
    if not math.isfinite(value):
        return TOO_LARGE
    return f"{value:,.0f}" if 100 <= abs(value) < 1e15 else f"{value:.3g}"


_SI = ["B", "kB", "MB", "GB", "TB", "PB", "EB"]
_IEC = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"]


def _scaled(nbytes: Number, base: int, names: list[str], digits: int) -> str:
    value = float(nbytes)
    if not math.isfinite(value):
        return TOO_LARGE
    index = 0
    while abs(value) >= base and index < len(names) - 1:
        value /= base
        index += 1
    if index == 0:
        return f"{value:,.0f} B" if value == int(value) else f"{value:,.2f} B"
    return f"{value:,.{digits}f} {names[index]}"


def fmt_si(nbytes: Number, digits: int = 2) -> str:
    """Bytes in SI units (1 GB = 10^9 B): ``16060522496`` -> ``16.06 GB``."""
    return _scaled(nbytes, 1000, _SI, digits)


def fmt_iec(nbytes: Number, digits: int = 2) -> str:
    """Bytes in IEC units (1 GiB = 2^30 B): ``1073741824`` -> ``1.00 GiB``."""
    return _scaled(nbytes, 1024, _IEC, digits)


def fmt_flops(flops: Number) -> str:
    """FLOPs with a decimal prefix: ``1.406e14`` -> ``140.6 TFLOP``."""
    value = float(flops)
    if not math.isfinite(value):
        return TOO_LARGE
    for factor, prefix in ((1e18, "E"), (1e15, "P"), (1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= factor:
            return f"{value / factor:,.2f} {prefix}FLOP"
    return f"{value:,.0f} FLOP"


def fmt_seconds(seconds: float, digits: int = 3) -> str:
    """A duration with a fitting unit and ``digits`` significant digits: µs, ms, s, h or days."""
    if not math.isfinite(seconds):
        return TOO_LARGE
    if seconds == 0:
        return "0 s"
    if seconds < 1e-9:  # a subnormal span printed as 4.94e-318 µs
        return f"{seconds:.{digits}g} s"
    for limit, scale, unit in ((1e-3, 1e6, "µs"), (1, 1e3, "ms"), (3600, 1, "s"), (86400 * 2, 1 / 3600, "h")):
        if seconds < limit:
            value = seconds * scale
            return (
                f"{value:,.{max(0, digits - 1 - int(math.floor(math.log10(abs(value)))))}f} {unit}"
                if value >= 1
                else f"{value:.{digits}g} {unit}"
            )
    days = seconds / 86400
    return f"{days:,.1f} days" if days < 1e15 else f"{days:.{digits}g} days"  # not 31 digits and a '.0
