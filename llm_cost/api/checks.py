"""Checks of the API's arguments: each returns the value in its canonical type or raises
:class:`~llm_cost.core.errors.InputError` naming the argument (``fields``), never a flag.

These are the only range checks of user input: the command line parses text into numbers and
passes them here, so a shell user and a Python caller are refused by the same rule.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from enum import Enum
from fractions import Fraction
from typing import Any, TypeVar

from llm_cost.core.errors import InputError

__all__ = [
    "count",
    "counts",
    "step_tokens",
    "MIN_STEP_TOKENS",
    "MAX_STEP_TOKENS",
    "number",
    "efficiency",
    "choice",
    "optional",
    "fraction",
    "one_of",
    "grid_size",
    "MAX_GRID_POINTS",
    "simulated_tokens",
    "MAX_SIMULATED_TOKENS",
]

E = TypeVar("E", bound=Enum)

#: The largest count an argument takes (a batch, a context, a token total): 10^15.
MAX_COUNT = 10**15


def count(value: Any, name: str, minimum: int = 1, maximum: int = MAX_COUNT) -> int:
    """An integer in ``[minimum, maximum]``."""
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= maximum:
        raise InputError(f"{name}: {value!r} must be an integer from {minimum:,} to {maximum:,}", fields=(name,))
    return value


#: The fewest tokens one engine step may schedule: vLLM's ``max_num_batched_tokens``
#: (:func:`llm_cost.simulate_serving`), serve's ``chunk_tokens`` (the CLI's ``--chunk``). One
#: rule for every argument that sets it: serve took 2 and more, the simulation 1 (issue 26).
MIN_STEP_TOKENS = 2
#: The most tokens one engine step may schedule: the longest ``max_model_len`` taken, 2^24.
MAX_STEP_TOKENS = 2**24


def step_tokens(value: Any, name: str, maximum: int = MAX_STEP_TOKENS) -> int:
    """A step's token budget: an integer from :data:`MIN_STEP_TOKENS` to ``maximum``."""
    return count(value, name, MIN_STEP_TOKENS, maximum)


def large_count(value: Any, name: str, minimum: int = 1, maximum: int = 10**40) -> int:
    """A count that may be written as a float (``15e12`` tokens): an integer, or a finite float with
    no fractional part, in ``[minimum, maximum]``."""
    if isinstance(value, float) and math.isfinite(value) and value.is_integer() and minimum <= value <= maximum:
        return int(value)
    return count(value, name, minimum, maximum)


def counts(values: Any, name: str, minimum: int = 1, maximum: int = MAX_COUNT) -> list[int]:
    """A non-empty list of integers in ``[minimum, maximum]``."""
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, set, frozenset)):
        raise InputError(f"{name}: {values!r} must be a list of integers, e.g. [1024, 8192]", fields=(name,))
    out = [count(v, name, minimum, maximum) for v in values]
    if not out:
        raise InputError(f"{name}: give at least one value", fields=(name,))
    return out


def number(value: Any, name: str, *, minimum: float = 0.0, maximum: float = 1e300, open_min: bool = True) -> float:
    """A finite real number above ``minimum`` (at least it when not ``open_min``), at most ``maximum``."""
    ok = (
        not isinstance(value, bool)
        and isinstance(value, (int, float, Fraction))
        and math.isfinite(value)
        and (value > minimum if open_min else value >= minimum)
        and value <= maximum
    )
    if not ok:
        side = "above" if open_min else "at least"
        raise InputError(
            f"{name}: {value!r} must be a finite number {side} {minimum:g} and at most {maximum:g}", fields=(name,)
        )
    return float(value)


def percentile(value: Any, name: str) -> float:
    """A percentile strictly between 0 and 100 (a target's ``p95``, ``p99.9``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 100:
        raise InputError(
            f"{name}: percentile {value!r} must be above 0 and below 100 (p50, p95, p99.9)", fields=(name,)
        )
    return float(value)


def efficiency(value: Any, name: str) -> float:
    """A utilisation (MFU, MBU) in [0.01, 1]: below 1% is a typing mistake, not a GPU."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.01 <= value <= 1:
        raise InputError(f"{name}: {value!r} must be a number between 0.01 and 1 (e.g. 0.6)", fields=(name,))
    return float(value)


def fraction(value: Any, name: str) -> Fraction:
    """A share in (0, 1] as an exact Fraction (a float is read to 6 decimals)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)) or not 0 < value <= 1:
        raise InputError(f"{name}: {value!r} must be a number in (0, 1], e.g. 0.9", fields=(name,))
    share = Fraction(value).limit_denominator(10**6)
    if share == 0:
        raise InputError(f"{name}: {value!r} rounds to 0; give at least 0.000001", fields=(name,))
    return share


def choice(value: Any, enum: type[E], name: str) -> E:
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


def one_of(value: Any, name: str, valid: Sequence[Any]) -> Any:
    """``value`` if it is one of ``valid``."""
    if value not in valid:
        shown = repr(value.value if isinstance(value, Enum) else value)
        raise InputError(f"{name}: {shown} is not one of: {', '.join(map(str, valid))}", fields=(name,))
    return value


def optional(value: Any, check: Any, *args: Any, **kwargs: Any) -> Any:
    """None, or ``check(value, *args, **kwargs)``."""
    return None if value is None else check(value, *args, **kwargs)


#: The most points a sweep (batches x contexts) takes in one call.
MAX_GRID_POINTS = 10_000


def known_options(options: dict[str, Any], function: Any) -> None:
    """InputError naming the keyword arguments of ``options`` that ``function`` does not take."""
    import inspect

    taken = {p.name for p in inspect.signature(function).parameters.values() if p.kind == p.KEYWORD_ONLY}
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


#: The most output tokens one simulation decodes (2^23: 1,000 requests of 8K tokens). The
#: simulator's time grows with them: about 2.3 million a second on a 2-core machine (measured:
#: 20,000 x 256 tokens in 1.8 s, 20,000 x 1,000 in 9.3 s, 2,000 x 8,000 in 6.6 s).
MAX_SIMULATED_TOKENS = 2**23


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
