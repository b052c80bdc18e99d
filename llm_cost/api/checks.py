"""Checks of the API's arguments: each returns the value in its canonical type or raises
:class:`~llm_cost.core.errors.InputError` naming the argument (``fields``), never a flag.

These are the only range checks of user input: the command line parses text into numbers and
passes them here, so a shell user and a Python caller are refused by the same rule.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from enum import Enum
from fractions import Fraction
from typing import Optional, TypeVar, cast

from llm_cost.core.errors import InputError
from llm_cost.core.limits import (
    MAX_COUNT,
    MAX_GRID_POINTS,
    MAX_SIMULATED_STEPS,
    MAX_SIMULATED_TOKENS,
    MAX_STEP_TOKENS,
    MIN_STEP_TOKENS,
    PERCENTILE_DECIMALS,
    PERCENTILE_RANGE,
)
from llm_cost.core.units import plain_number, shown_number

__all__ = [
    "count",
    "integer",
    "flag",
    "is_default",
    "unused",
    "counts",
    "step_tokens",
    "number",
    "price",
    "efficiency",
    "choice",
    "optional",
    "fraction",
    "one_of",
    "grid_size",
    "simulated_tokens",
    "simulated_steps",
]

E = TypeVar("E", bound=Enum)
T = TypeVar("T")


def integer(value: object) -> int | None:
    """``value`` as an int if it is an integer other than a bool: an int, or another library's
    integer (:func:`~llm_cost.core.units.plain_number`: numpy's int64, a 0-d array), else None."""
    plain = plain_number(value)
    return plain if isinstance(plain, int) and not isinstance(plain, bool) else None


def count(value: object, name: str, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """An integer (:func:`integer`) in ``[minimum, maximum]``."""
    whole = integer(value)
    if whole is None or not minimum <= whole <= maximum:
        raise InputError(
            f"{name}: {shown_number(value)} must be an integer from {minimum:,} to {maximum:,}", fields=(name,)
        )
    return whole


def step_tokens(value: object, name: str, maximum: int = MAX_STEP_TOKENS) -> int:
    """A step's token budget: an integer from :data:`MIN_STEP_TOKENS` to ``maximum``."""
    return count(value, name, MIN_STEP_TOKENS, maximum)


def large_count(value: object, name: str, minimum: int = 1, maximum: int = 10**40) -> int:
    """A count that may be written as a float (``15e12`` tokens): an integer, or a finite float with
    no fractional part, in ``[minimum, maximum]``."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and minimum <= value <= maximum:
        return int(value)
    return count(value, name, minimum, maximum)


def counts(values: object, name: str, minimum: int = 1, maximum: int = MAX_COUNT) -> list[int]:
    """A non-empty list of integers in ``[minimum, maximum]``."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, set, frozenset)):
        raise InputError(f"{name}: {values!r} must be a list of integers, e.g. [1024, 8192]", fields=(name,))
    out = [count(v, name, minimum, maximum) for v in values]
    if not out:
        raise InputError(f"{name}: give at least one value", fields=(name,))
    return out


def number(value: object, name: str, *, minimum: float = 0.0, maximum: float = 1e300, open_min: bool = True) -> float:
    """A finite real number above ``minimum`` (at least it when not ``open_min``), at most ``maximum``."""
    value = plain_number(value)  # numpy's int64 and float32 as Python's
    ok = (
        not isinstance(value, bool)
        and isinstance(value, (int, float, Fraction))
        and (not isinstance(value, float) or math.isfinite(value))  # an int or Fraction is finite (10**400 too)
        and (value > minimum if open_min else value >= minimum)
        and value <= maximum
    )
    if not ok:
        side = "above" if open_min else "at least"
        given = shown_number(value)
        if isinstance(value, float):  # 1e+12, not 1000000000000.0; but 2.0000001 whole, not "2" beside "at most 2"
            given = f"{value:g}" if not math.isfinite(value) or float(f"{value:g}") == value else repr(value)
        raise InputError(
            f"{name}: {given} must be a finite number {side} {minimum:g} and at most {maximum:g}", fields=(name,)
        )
    return float(cast(float, value))


def price(value: object, name: str, maximum: float = 1e6, what: str = "a price") -> float:
    """A price in USD (or another amount that may be 0, ``what``): a finite number, 0 (free) or from
    the smallest normal float (``sys.float_info.min``, 2.2e-308) to ``maximum``. A subnormal
    (1e-320) holds fewer digits than it shows (1e-320 prints as 9.99989e-321): no price, a slip of
    the exponent."""
    amount = number(value, name, maximum=maximum, open_min=False)
    if 0 < amount < sys.float_info.min:
        raise InputError(
            f"{name}: {value!r} is a subnormal number, too small to hold; give 0 or {what} from "
            f"{sys.float_info.min:.3g} to {maximum:g}",
            fields=(name,),
        )
    return amount or 0.0  # -0.0 is 0


def percentile(value: object, name: str) -> float:
    """A percentile of a target (``p95``, ``p99.9``): a number in
    :data:`~llm_cost.core.limits.PERCENTILE_RANGE` with at most
    :data:`~llm_cost.core.limits.PERCENTILE_DECIMALS` decimals (a simulation of at most 20,000
    requests resolves no finer percentile)."""
    low, high = PERCENTILE_RANGE
    ok = (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and low <= value <= high
        and round(value, PERCENTILE_DECIMALS) == value
    )
    if not ok:
        raise InputError(
            f"{name}: percentile {value!r} must be from {low:g} to {high:g} with at most {PERCENTILE_DECIMALS} "
            "decimals (p50, p95, p99.9)",
            fields=(name,),
        )
    return float(cast(float, value))


def efficiency(value: object, name: str) -> float:
    """A utilisation (MFU, MBU) in [0.01, 1]: below 1% is a typing mistake, not a GPU."""
    value = plain_number(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.01 <= value <= 1:
        raise InputError(f"{name}: {value!r} must be a number between 0.01 and 1 (e.g. 0.6)", fields=(name,))
    return float(cast(float, value))


def fraction(value: object, name: str) -> Fraction:
    """A share in (0, 1] as an exact Fraction (a float is read to 6 decimals)."""
    value = plain_number(value)
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)) or not 0 < value <= 1:
        raise InputError(f"{name}: {value!r} must be a number in (0, 1], e.g. 0.9", fields=(name,))
    share = Fraction(value).limit_denominator(10**6)
    if share == 0:
        raise InputError(f"{name}: {value!r} rounds to 0; give at least 0.000001", fields=(name,))
    return share


def choice(value: object, enum: type[E], name: str) -> E:
    """A member of ``enum`` from itself or its value (case-insensitive)."""
    if isinstance(value, enum):
        return value
    raw = value.value if isinstance(value, Enum) else value
    key = raw.strip().lower() if isinstance(raw, str) else None
    for member in enum:
        if key is not None and str(member.value).lower() == key:
            return member
    valid = ", ".join(str(m.value) for m in enum)
    raise InputError(f"{name}: {value!r} is not one of: {valid}", fields=(name,))


def one_of(value: object, name: str, valid: Sequence[T]) -> T:
    """The member of ``valid`` that ``value`` equals (itself, not ``value``: numpy's int64 1 gives the
    int 1, which a result keeps)."""
    try:
        found = [v for v in valid if not isinstance(value, bool) and value == v]
    except (TypeError, ValueError):  # an array compares elementwise: no truth value
        found = []
    if not found:
        shown = repr(value.value if isinstance(value, Enum) else value)
        raise InputError(f"{name}: {shown} is not one of: {', '.join(map(str, valid))}", fields=(name,))
    return found[0]


def record(value: object, kind: type[T], name: str) -> T:
    """``value`` if it is a ``kind`` (a request record such as
    :class:`~llm_cost.api.requests.ServeRequest`)."""
    if not isinstance(value, kind):
        shown = f"{value!r:.60}"
        raise InputError(f"{name}: {shown} is not a {kind.__name__}", fields=(name,))
    return value


def flag(value: object, name: str) -> bool:
    """A yes-or-no argument: True or False (not 1, "yes" or an array)."""
    if not isinstance(value, bool):
        raise InputError(f"{name}: {value!r} must be True or False", fields=(name,))
    return value


def optional(value: object, check: Callable[..., T], *args: object, **kwargs: object) -> Optional[T]:
    """None, or ``check(value, *args, **kwargs)``."""
    return None if value is None else check(value, *args, **kwargs)


def known_options(options: Mapping[str, object], function: Callable[..., object], keyword_only: bool = True) -> None:
    """InputError naming the keyword arguments of ``options`` that ``function`` does not take (its
    keyword-only arguments; without ``keyword_only``, any it takes by name: a request record's fields)."""
    import inspect

    kinds = (
        (inspect.Parameter.KEYWORD_ONLY,)
        if keyword_only
        else (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    )
    taken = {p.name for p in inspect.signature(function).parameters.values() if p.kind in kinds}
    unknown = sorted(options.keys() - taken)
    if unknown:
        raise InputError(
            f"{', '.join(unknown)}: not an option here; valid: {', '.join(sorted(taken))}", fields=tuple(unknown)
        )


def grid_size(points: int, names: tuple[str, ...]) -> None:
    """InputError naming ``names`` when a sweep has more than :data:`MAX_GRID_POINTS` points."""
    if points > MAX_GRID_POINTS:
        raise InputError(
            f"{' x '.join(names)}: {points:,} points is more than the {MAX_GRID_POINTS:,} a sweep takes",
            fields=names,
        )


def simulated_tokens(requests: float, output_tokens: float, where: str | None = None) -> None:
    """InputError naming ``requests`` and ``output_tokens`` (with ``where``, a workload or trace
    file: the file, ``fields`` ``workload``) when ``requests`` requests of ``output_tokens`` output
    tokens (their mean) are more than :data:`MAX_SIMULATED_TOKENS` to simulate."""
    total = requests * output_tokens
    if total > MAX_SIMULATED_TOKENS:
        head = f"{where}: requests x output_tokens" if where else "requests x output_tokens"
        raise InputError(
            f"{head}: {requests:,.0f} x {output_tokens:,.0f} = {total:,.0f} output tokens to decode, more than "
            f"the {MAX_SIMULATED_TOKENS:,} one simulation runs; give fewer requests or shorter outputs",
            fields=("workload",) if where else ("requests", "output_tokens"),
        )


def simulated_steps(requests: float, tokens: float, step_tokens: int, name: str = "max_num_batched_tokens") -> None:
    """InputError naming ``name`` (the token budget per step) when ``requests`` requests of
    ``tokens`` prompt and output tokens each (their mean; shared prefixes served from the cache
    left out) need more than :data:`MAX_SIMULATED_STEPS` engine steps at ``step_tokens`` tokens a
    step: the least a simulation runs, each step scheduling at most its budget."""
    steps = requests * tokens / step_tokens
    if steps > MAX_SIMULATED_STEPS:
        raise InputError(
            f"{name}: {step_tokens:,} tokens a step: {requests:,.0f} x {tokens:,.0f} prompt and output tokens take "
            f"{steps:,.0f} steps at the least, more than the {MAX_SIMULATED_STEPS:,} one simulation runs; give a "
            f"larger {name}, fewer requests or shorter ones",
            fields=(name,),
        )


def is_default(value: object, default: object) -> bool:
    """Whether ``value`` is a parameter's default (the same object, or an equal one of its type)."""
    return value is default or (type(value) is type(default) and value == default)


def unused(
    function: Callable[..., object],
    given: Mapping[str, object],
    names: Sequence[str],
    mode: str,
    used_by: str,
    mentions: Sequence[str] = (),
) -> None:
    """The one refusal of arguments a form of a call does not use: InputError naming each of
    ``names`` that ``given`` sets to other than ``function``'s default, saying which form uses them
    (``used_by``) and that ``mode`` (the form this call takes) does not. ``mentions``: the other
    argument names the two descriptions use as words (written as flags on the command line).
    ``serve`` refuses the simulation's arguments in its analytic forms and the chunk in a
    disaggregated search; ``train`` the planner's arguments and a layout's at a given MFU."""
    import inspect

    defaults = {p.name: p.default for p in inspect.signature(function).parameters.values()}
    named = [n for n in names if not is_default(given[n], defaults[n])]
    if named:
        them = "them" if len(named) > 1 else "it"
        raise InputError(
            f"{', '.join(named)}: {used_by} uses {them}, not {mode}; leave {them} out",
            fields=(*named, *mentions),
        )
