"""Typed options the commands share, as ``Annotated`` aliases (the huggingface_hub CLI's habit).

Each option parses its text with a :mod:`llm_cost.core.units` parser that names the flag in its
error, and shows its kind in ``--help``: TOKENS (binary suffixes, 8K = 8,192), INTEGER (plain
digits), LIST (comma-separated values, doubling ranges ``1..256`` and ranges in steps ``1..1000:10``), FRACTION (0.6 or 60%),
NUMBER (a positive real), or a choice list. The options of the commands that model a step are in
:mod:`llm_cost.cli.step_options`.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, Optional

import typer

from llm_cost.core.errors import InputError
from llm_cost.core.types import StorageDtype
from llm_cost.core.units import (
    parse_context,
    parse_count,
    parse_decimal,
    parse_fraction,
    parse_grid,
    parse_integer,
    parse_positive_float,
)

if TYPE_CHECKING:
    from llm_cost.report.plots import OutFile


def given(*params: str) -> list[str]:
    """The flags of the running command's parameters ``params`` (Python names) that the command
    line gave (not left at their default): to refuse a flag the other flags make meaningless.
    Read from the Click context of the command (Click as Typer vendors it from 0.2x, else Click)."""
    try:
        from typer._click.globals import get_current_context
    except ImportError:  # a Typer that runs on Click itself
        from click import get_current_context  # type: ignore[no-redef]

    ctx = get_current_context()
    flags = {p.name: p.opts[0] for p in ctx.command.params}
    sources = {n: ctx.get_parameter_source(n) for n in params}
    return [flags[n] for n, source in sources.items() if source is not None and source.name != "DEFAULT"]


def ignored(flags: list[str], why: str) -> None:
    """InputError naming ``flags`` (given on the command line) that do not apply, and ``why``."""
    if flags:
        verb = "do" if len(flags) > 1 else "does"
        raise InputError(f"{', '.join(flags)} {verb} not apply {why}")


def tokens(flag: str, minimum: int = 1) -> Callable[[str], int]:
    """A token count (8K = 8,192) for ``flag``, which takes one (a list or range is refused as one)."""

    def parse(text: str) -> int:
        if "," in str(text) or ".." in str(text):
            raise InputError(f"{flag}: {str(text)!r} is a list or range; this command takes one value (e.g. 8K)")
        return parse_context(text, flag, minimum)

    return parse


def integer(flag: str, minimum: int = 1, maximum: int | None = None) -> Callable[[str], int]:
    """A plain whole number for ``flag`` (at most ``maximum``, default 10^15)."""
    if maximum is None:
        return lambda text: parse_integer(text, flag, minimum)
    return lambda text: parse_integer(text, flag, minimum, maximum)


def large_count(flag: str) -> Callable[[str], int]:
    """A large count with decimal suffixes (15T = 15 x 10^12) for ``flag``."""
    return lambda text: parse_count(text, flag)


def token_grid(flag: str, minimum: int = 1) -> Callable[[str], list[int]]:
    """A list of token counts with doubling ranges (1K..128K)."""
    return lambda text: parse_grid(text, flag, lambda t, w: parse_context(t, w, minimum))


def integer_grid(flag: str) -> Callable[[str], list[int]]:
    """A list of whole numbers with doubling ranges (1,2,4..256)."""
    return lambda text: parse_grid(text, flag, parse_integer)


def fraction(flag: str, allow_zero: bool = False) -> Callable[[str], float]:
    """An efficiency or probability in (0, 1] (``[0, 1]`` with ``allow_zero``); 60% = 0.6."""
    return lambda text: parse_fraction(text, flag, allow_zero)


def acceptance(flag: str) -> Callable[[str], float]:
    """An acceptance rate from 0 to below 1 (80% = 0.8), refused in the API's words."""

    def parse(text: str) -> float:
        value = parse_decimal(text, flag, percent=True, valid="; it must be from 0 to below 1 (e.g. 0.8 or 80%)")
        if not 0 <= value < 1:
            raise InputError(f"{flag}: {text!r} must be from 0 to below 1 (an acceptance rate, e.g. 0.8 or 80%)")
        return float(value)

    return parse


def efficiency(flag: str) -> Callable[[str], float]:
    """A utilisation (MFU, MBU) in [1%, 100%]: below 1% is a typing mistake, not a GPU."""

    def parse(text: str) -> float:
        value = parse_fraction(text, flag)
        if value < 0.01:
            raise InputError(f"{flag}: {text!r} is below 1%; give a utilisation such as 0.6 or 60%")
        return value

    return parse


def positive(flag: str, maximum: float | None = None) -> Callable[[str], float]:
    """A finite number greater than 0."""
    return lambda text: parse_positive_float(text, flag, maximum)


def within(flag: str, bounds: tuple[float, float]) -> Callable[[str], float]:
    """A finite number in ``bounds``, the argument's range as the API checks it
    (:mod:`llm_cost.core.limits`); a value outside it, or none, is refused with that range (an
    attack: ``--pue 0`` was told "greater than 0", and ``--pue 1e308`` "too large", of a range
    from 1 to 10)."""
    low, high = bounds

    def parse(text: str) -> float:
        try:
            value = parse_positive_float(text, flag)
        except InputError:
            value = math.nan
        if not low <= value <= high:
            raise InputError(f"{flag}: {text!r} must be a finite number at least {low:g} and at most {high:g}")
        return value

    return parse


def non_negative(flag: str, percent: bool = False, maximum: float = 1e300) -> Callable[[str], float]:
    """A finite number >= 0 and at most ``maximum`` (``percent``: 10% = 0.1); a positive one a
    float cannot hold at full precision (below ``sys.float_info.min``: 1e-400 would read as 0) is
    refused, not rounded."""

    def parse(text: str) -> float:
        value = parse_decimal(text, flag, percent)
        if value > Decimal(repr(maximum)):
            raise InputError(f"{flag}: {text!r} is larger than {maximum:g}")
        if 0 < value < Decimal(repr(sys.float_info.min)):
            raise InputError(
                f"{flag}: {text!r} is too small to hold; give 0 or from {sys.float_info.min:.3g} to {maximum:g}"
            )
        return float(value)

    return parse


def gigabytes(flag: str) -> Callable[[str], int]:
    """A non-negative size in GB (10^9 B) as exact bytes, at most 10^6 GB."""

    def parse(text: str) -> int:
        value = parse_decimal(text, flag)
        if value > 10**6:
            raise InputError(f"{flag}: {text!r} must be at most 1,000,000 GB")
        return int(value * 10**9)

    return parse


def option(*decls: str, parse: Callable[[str], Any], metavar: str, help: str) -> Any:  # noqa: A002
    """A typed option: ``parse`` turns its text into the value; ``metavar`` shows the kind."""
    return typer.Option(*decls, parser=parse, metavar=metavar, help=help)


MODEL_HELP = (
    "Shipped model name or alias (see `llm-cost list models`), a path to a YAML spec, or a Hugging Face "
    "config.json (or the folder holding it)."
)
GPU_HELP = "Shipped GPU name or alias (see `llm-cost list gpus`), or a path to a YAML spec."

Json = Annotated[bool, typer.Option("--json", help="Print the result as JSON (stable keys) instead of tables.")]
Plot = Annotated[
    Optional[str],
    typer.Option(
        "--plot",
        metavar="FILE",
        help="Also draw the result to FILE.png or FILE.svg (needs pip install 'llm-cost\\[plot]').",
    ),
]
PlotForce = Annotated[bool, typer.Option("--force", help="Replace the --plot file if it exists.")]


def plot_file(plot: Optional[str], force: bool) -> Optional[OutFile]:
    """The checked file of ``--plot`` (:func:`llm_cost.report.plots.target`), or None without
    ``--plot``; checked before anything is computed. InputError for ``--force`` without
    ``--plot`` (it replaces nothing then)."""
    if plot is None:
        if force:
            raise InputError("--force: replaces an existing --plot file; give --plot too, or leave --force out")
        return None
    from llm_cost.report.plots import target

    return target(plot, force)


AllRows = Annotated[
    bool,
    typer.Option(
        "--all-rows",
        help="Print every row of a long grid's table (by default a grid of more than 40 rows prints the rows "
        "that matter: the first and last, where the regime changes, and evenly spaced ones).",
    ),
]
Csv = Annotated[
    bool,
    typer.Option(
        "--csv",
        help="Print the rows as CSV, one per grid point or table row (header "
        "line first; columns as the JSON keys, units in their names).",
    ),
]
Verbose = Annotated[
    bool, typer.Option("--verbose", "-v", help="For a config.json MODEL: list the family defaults applied (on stderr).")
]
Gpu = Annotated[str, typer.Option("--gpu", "-g", help=GPU_HELP)]
OptionalGpu = Annotated[Optional[str], typer.Option("--gpu", "-g", help=GPU_HELP)]

Tp = Annotated[
    Optional[int],
    option("--tp", parse=integer("--tp"), metavar="INTEGER", help="Tensor-parallel GPUs (divide the query heads)."),
]
Pp = Annotated[
    Optional[int],
    option("--pp", parse=integer("--pp"), metavar="INTEGER", help="Pipeline stages (at most the layer count)."),
]
Ep = Annotated[
    Optional[int],
    option(
        "--ep",
        parse=integer("--ep"),
        metavar="INTEGER",
        help="Expert-parallel ranks: 1 or TP x DP (experts spread whole).",
    ),
]
Dp = Annotated[
    Optional[int],
    option(
        "--dp",
        parse=integer("--dp"),
        metavar="INTEGER",
        help="Data-parallel ranks; for a MoE model with --ep, attention data parallelism (each rank its own "
        "sequences and KV cache, the experts spread over TP x DP GPUs).",
    ),
]
RedundantExperts = Annotated[
    Optional[int],
    option(
        "--redundant-experts",
        parse=integer("--redundant-experts", 0),
        metavar="INTEGER",
        help="Extra expert slots over the EP ranks (EPLB: 256 experts + 32 over EP 72).",
    ),
]
KvDtype = Annotated[StorageDtype, typer.Option("--kv-dtype", case_sensitive=False, help="KV-cache element dtype.")]
