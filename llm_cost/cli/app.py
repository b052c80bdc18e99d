"""The Typer app, the options and flag parsers the commands share, and the entry point."""

from __future__ import annotations

import sys
from decimal import Decimal
from typing import Optional

import typer

from llm_cost.core.errors import SpecError
from llm_cost.core.errors import InputError

app = typer.Typer(
    name="llm-cost",
    help="Exact cost arithmetic for decoder-only LLMs: parameters, KV cache, FLOPs, Roofline bounds, memory, "
    "MoE, speculative decoding, training and multimodal costs. Every command takes --json.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

MODEL_HELP = ("Shipped model name or alias (see `llm-cost list models`), a path to a YAML spec, or a Hugging Face "
              "config.json (or the folder holding it).")
VERBOSE_OPT = typer.Option(False, "--verbose", "-v",
                           help="For a config.json MODEL: list the family defaults applied (on stderr).")
GPU_HELP = "Shipped GPU name or alias (see `llm-cost list gpus`), or a path to a YAML spec."
JSON_OPT = typer.Option(False, "--json", help="Print the result as JSON (stable keys) instead of tables.")
TP_OPT = typer.Option(None, "--tp", help="Tensor-parallel GPUs (divide the query heads).")
PP_OPT = typer.Option(None, "--pp", help="Pipeline stages (at most the layer count).")
EP_OPT = typer.Option(None, "--ep", help="Expert-parallel ranks: 1 or TP x DP (experts spread whole).")
DP_OPT = typer.Option(None, "--dp", help="Data-parallel replicas.")


def parse_layout(tp: Optional[str], pp: Optional[str], ep: Optional[str], dp: Optional[str]):
    """A Layout from the --tp/--pp/--ep/--dp flags, or None when none is given."""
    if tp is None and pp is None and ep is None and dp is None:
        return None
    from llm_cost.analyses.deployment import Layout
    from llm_cost.core.units import parse_context

    n = {flag: parse_context(v or "1", flag) for flag, v in (("--tp", tp), ("--pp", pp), ("--ep", ep), ("--dp", dp))}
    return Layout(n["--tp"], n["--pp"], n["--ep"], n["--dp"])


def emit(result, as_json: bool, render, *args) -> None:
    """Print ``result`` as JSON or through ``render(console, result, *args)``."""
    from llm_cost.report.base import console, to_json

    if as_json:
        sys.stdout.write(to_json(result) + "\n")
    else:
        render(console(), result, *args)


def weight_bits(default_dtype: str, weights_dtype: Optional[str], bits_per_weight: Optional[str]):
    """Bits per stored weight: --bits-per-weight, else --weights-dtype, else ``default_dtype``
    (the checkpoint's dtype)."""
    from llm_cost.core.units import dtype_bits, parse_positive_float

    if bits_per_weight is not None and weights_dtype is not None:
        raise InputError("give --bits-per-weight or --weights-dtype, not both")
    if bits_per_weight is not None:
        bits = parse_positive_float(bits_per_weight, "--bits-per-weight", maximum=64)
        if bits < 1:
            raise InputError(f"--bits-per-weight: {bits_per_weight!r} is below 1 bit per weight")
        return bits
    if weights_dtype is not None:
        return dtype_bits(weights_dtype, "--weights-dtype")
    return dtype_bits(default_dtype)


def gguf_bits(spec, model: str):
    """Exact bits per parameter of a GGUF file: its tensor bytes x 8 / the parameters its metadata
    describes, so weights come to the file's bytes exactly."""
    from fractions import Fraction
    from pathlib import Path

    from llm_cost.model.structure import build
    from llm_cost.specs.gguf import read_gguf

    return Fraction(8 * read_gguf(Path(model)).n_bytes, build(spec).total_params)


def check_choice(value: str, flag: str, valid: tuple[str, ...]) -> None:
    """InputError naming ``flag`` unless ``value`` is one of ``valid``."""
    if value not in valid:
        raise InputError(f"{flag}: {value!r} is not one of: {', '.join(valid)}")


def parse_gigabytes(text: str, flag: str) -> int:
    """A non-negative size in GB (10^9 B) as exact bytes, at most 10^6 GB."""
    from llm_cost.core.units import parse_decimal

    value = parse_decimal(text, flag)
    if value > 10**6:
        raise InputError(f"{flag}: {text!r} must be at most 1,000,000 GB")
    return int(value * 10**9)


def parse_unit_interval(text: str, flag: str) -> float:
    """A probability in [0, 1]; ``80%`` and ``0.8`` are the same."""
    from llm_cost.core.units import parse_fraction

    return parse_fraction(text, flag, allow_zero=True)


def parse_non_negative(text: str, flag: str, percent: bool = False) -> float:
    """A finite number >= 0 (``percent``: ``10%`` = 0.1)."""
    from llm_cost.core.units import parse_decimal

    value = parse_decimal(text, flag, percent)
    if value > Decimal("1e300"):
        raise InputError(f"{flag}: {text!r} is too large")
    return float(value)


def parse_size(text: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` in pixels -> (height, width)."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*[xX*]\s*(\d+)\s*", text)
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1 or max(int(m.group(1)), int(m.group(2))) > 10**6:
        raise InputError(f"--size: {text!r} is not WIDTHxHEIGHT in pixels (e.g. 1920x1080, each 1 to 1,000,000)")
    return int(m.group(2)), int(m.group(1))


def report_defaults(model: str) -> None:
    """--verbose: the defaults a config.json MODEL took, on stderr (so --json stays clean)."""
    from llm_cost.specs.hf import defaults_used
    from llm_cost.report.hf import print_defaults
    from llm_cost.report.base import console

    con = console()
    con.file = sys.stderr
    from llm_cost.specs import hub

    # None unless MODEL is a .json path, a folder or a Hub id
    defaults = hub.load_hub_model(model, verbose=True)[1] if hub.is_hub_id(model) else defaults_used(model)
    if defaults is None:
        con.print(f"{model}: a shipped or YAML spec, no config.json defaults to report")
    else:
        print_defaults(con, defaults)


def _command_names() -> dict[str, object]:
    """Registered commands by their command-line name."""
    names = {}
    for info in app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")  # type: ignore[union-attr]
        names[name] = info
    return names


def _version(value: bool) -> None:
    if value:
        from llm_cost import __version__

        typer.echo(f"llm-cost {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """Exact cost arithmetic for decoder-only LLMs."""


def _run(argv: list[str]) -> None:
    """Run the CLI. A known subcommand is built on its own: Typer otherwise converts every
    command's signature to Click parameters on each start, which costs tens of milliseconds
    for nothing; ``--help``, typos and the bare program still go through the whole app.
    A usage error (missing argument, unknown option, bad choice) becomes one ``error:`` line."""
    from typer.main import get_command

    commands = _command_names()
    if argv and argv[0] in commands:
        single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        single.registered_commands = [commands[argv[0]]]  # type: ignore[list-item]
        command, args, prog = get_command(single), argv[1:], f"llm-cost {argv[0]}"
    else:
        command, args, prog = get_command(app), argv or ["--help"], "llm-cost"
    try:
        code = command.main(args=args, prog_name=prog, help_option_names=["-h", "--help"], standalone_mode=False)
    except Exception as exc:  # Click's usage errors: typer vendors Click, so match on its interface
        if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
            raise
        raise InputError(f"{exc.format_message()} (see '{prog} -h')") from None
    if isinstance(code, int) and code:
        raise SystemExit(code)


def main() -> None:
    """Entry point: run the app; a user's mistake exits 2 with one message, never a traceback."""
    try:
        _run(sys.argv[1:])
    except (SpecError, InputError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise SystemExit(2) from None
