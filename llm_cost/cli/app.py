"""The Typer app, the options and flag parsers the commands share, and the entry point."""

from __future__ import annotations

import sys
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

def parse_layout(tp: Optional[int], pp: Optional[int], ep: Optional[int], dp: Optional[int]):
    """A Layout from the --tp/--pp/--ep/--dp flags, or None when none is given."""
    if tp is None and pp is None and ep is None and dp is None:
        return None
    from llm_cost.model.layout import Layout

    return Layout(tp or 1, pp or 1, ep or 1, dp or 1)


def emit(result, as_json: bool, render, *args) -> None:
    """Print ``result`` as JSON or through ``render(console, result, *args)``."""
    from llm_cost.report.base import console, to_json

    if as_json:
        sys.stdout.write(to_json(result) + "\n")
    else:
        render(console(), result, *args)


def weight_bits(default_dtype: str, weights_dtype, bits_per_weight: Optional[float]):
    """Bits per stored weight: --bits-per-weight, else --weights-dtype, else ``default_dtype``
    (the checkpoint's dtype)."""
    from llm_cost.core.types import Dtype

    if bits_per_weight is not None and weights_dtype is not None:
        raise InputError("give --bits-per-weight or --weights-dtype, not both")
    if bits_per_weight is not None:
        if bits_per_weight < 1:
            raise InputError(f"--bits-per-weight: {bits_per_weight:g} is below 1 bit per weight")
        return bits_per_weight
    return Dtype(weights_dtype or default_dtype).bits


def one(values: list[int], flag: str) -> int:
    """The single value of a grid option where only one makes sense."""
    if len(values) != 1:
        raise InputError(f"{flag}: give one value here, not a list of {len(values)}")
    return values[0]


def report_defaults(model: str) -> None:
    """--verbose: the defaults a config.json MODEL took, on stderr (so --json stays clean)."""
    from llm_cost.specs.hf import defaults_used
    from llm_cost.report.hf import print_defaults
    from llm_cost.report.base import console

    con = console()
    con.file = sys.stderr
    defaults = defaults_used(model)  # None unless MODEL is a .json path or a folder
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
    except Exception as exc:  # Click's usage errors: match on its interface
        if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
            raise
        cause = _input_error(exc)
        if cause is not None:  # an option's parser refused the value: its message names the flag
            raise cause from None
        message = exc.format_message().replace("Value error, ", "")
        raise InputError(f"{message} (see '{prog} -h')") from None
    if isinstance(code, int) and code:
        raise SystemExit(code)


def _input_error(exc: BaseException) -> Optional[InputError]:
    """The InputError an option's parser raised beneath a usage error, if any."""
    seen = exc.__context__ or exc.__cause__
    while seen is not None:
        if isinstance(seen, InputError):
            return seen
        seen = seen.__context__ or seen.__cause__
    return None


def main() -> None:
    """Entry point: run the app; a user's mistake exits 2 with one message, never a traceback."""
    try:
        _run(sys.argv[1:])
    except (SpecError, InputError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise SystemExit(2) from None
