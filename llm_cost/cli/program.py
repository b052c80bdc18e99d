"""The Typer app, the options and flag parsers the commands share, and the entry point."""

from __future__ import annotations

import re
import sys
from typing import Any, Literal, Optional

import typer

from llm_cost.core.errors import InputError

#: The options that print a command's help.
HELP_OPTIONS = ["-h", "--help"]

#: The program's help (its list of commands) is Click's plain text: Typer's Rich help imports Markdown,
#: syntax highlighting and tracebacks (markdown-it, Pygments: about 60 ms, as long as importing Typer
#: and Rich themselves), which would make ``llm-cost --help`` slower than any command.
HELP_MARKUP = None
#: A command's own help keeps Typer's Rich panels: its options' help wraps there without splitting a
#: flag's name at its hyphens, as Click's plain text does.
COMMAND_HELP_MARKUP: Literal["rich"] = "rich"

app = typer.Typer(
    name="llm-cost",
    rich_markup_mode=HELP_MARKUP,
    help="Exact cost arithmetic for decoder-only LLMs: parameters, KV cache, FLOPs, Roofline bounds, memory, "
    "MoE, speculative decoding, training and multimodal costs. Every command takes --json.",
    add_completion=True,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": HELP_OPTIONS},
)

DEBUG_HELP = "Before the command: show the traceback of an internal error (also LLM_COST_DEBUG=1)."


def layout_of(
    tp: Optional[int], pp: Optional[int], ep: Optional[int], dp: Optional[int], redundant_experts: Optional[int] = None
) -> Any:
    """The Layout of the --tp/--pp/--ep/--dp/--redundant-experts flags given (each other degree 1, no
    redundant experts), or None when none is."""
    pairs = (("tp", tp), ("pp", pp), ("ep", ep), ("dp", dp), ("redundant_experts", redundant_experts))
    given = {k: v for k, v in pairs if v is not None}
    if not given:
        return None
    from llm_cost.api import Layout

    return Layout(**given)


def emit(result, as_json: bool, render, *args) -> None:
    """Print ``result`` as JSON or through ``render(console, result, *args)``, whole: the text is
    rendered in memory first, so a failure while rendering leaves stdout untouched."""
    from llm_cost.report.base import console, to_json, write_out

    if as_json:
        write_out(to_json(result) + "\n")
    else:
        con = console()
        render(con, result, *args)
        write_out("\n".join(line.rstrip() for line in con.file.getvalue().split("\n")))  # no trailing spaces


def emit_csv(rows: list, extra: list[dict] | None = None) -> None:
    """Print result rows as CSV with one header line: each row's scalar fields (its JSON keys),
    ``extra[i]`` columns first."""
    from llm_cost.report.base import write_out
    from llm_cost.report.table_csv import rows_of, to_csv

    write_out(to_csv(rows_of(rows, extra)))


def report_defaults(model: str) -> None:
    """--verbose: the defaults a config.json MODEL took, on stderr (so --json stays clean)."""
    from llm_cost import api
    from llm_cost.report.base import console
    from llm_cost.report.hf import print_defaults

    con = console()
    con.file = sys.stderr
    defaults = api.defaults_used(model)
    if defaults is None:
        con.print(f"{model}: a shipped or YAML spec, no config.json defaults to report")
    else:
        print_defaults(con, defaults)


def command_name(info) -> str:  # noqa: ANN001 - Typer's CommandInfo
    """A registered command's command-line name."""
    return info.name or info.callback.__name__.replace("_", "-")


def _command_names() -> dict[str, object]:
    """Registered commands by their command-line name."""
    return {command_name(info): info for info in app.registered_commands}


def _version(value: bool) -> None:
    if value:
        from llm_cost import __version__

        typer.echo(f"llm-cost {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Print the version and exit."
    ),
    debug: bool = typer.Option(False, "--debug", help=DEBUG_HELP),
) -> None:
    """Exact cost arithmetic for decoder-only LLMs.

    (``main`` takes a leading ``--debug`` off the command line before Click parses it, so a
    known command is run on its own; it is declared here so that ``--help`` lists it.)"""


def _reject_empty(command, args: list[str]) -> None:
    """InputError for an empty value (``--batch ''``, ``--batch=``, MODEL ``''``): Click would
    pass it on, and a command would take it for "not given"."""
    options = {
        opt: max(p.opts, key=len)
        for p in command.params
        if p.param_type_name == "option" and not p.is_flag
        for opt in p.opts
    }
    names = [str(p.name).upper() for p in command.params if p.param_type_name == "argument"]
    positional, option = 0, None
    for token in args:
        flag, eq, value = token.partition("=")
        if eq and flag in options and not value.strip():
            raise InputError(f"{options[flag]}: empty value; give a value (see the command's -h)")
        if not token.strip() and (option or positional < len(names)):
            raise InputError(f"{option or names[positional]}: empty value; give a value (see the command's -h)")
        if option:
            option = None
        elif token in options:
            option = options[token]
        elif not token.startswith("-"):
            positional += 1


def _reject_bad_tokens(command, args: list[str]) -> None:
    """InputError for an empty value or a repeated option on the command line (the two checks
    Click does not make)."""
    _reject_empty(command, args)
    _reject_repeated(command, args)


def _reject_repeated(command, args: list[str]) -> None:
    """InputError for an option given twice (``--ttft p99:1s --ttft p50:2s``): Click keeps the last
    value, so a latency target or a price would be dropped without a word. Options that take
    several values by repetition (``multiple``) and the words after ``--`` are left alone."""
    long_name = {opt: max(p.opts, key=len) for p in command.params if p.param_type_name == "option" for opt in p.opts}
    takes_value = {opt for p in command.params if p.param_type_name == "option" and not p.is_flag for opt in p.opts}
    repeatable = {opt for p in command.params if getattr(p, "multiple", False) for opt in p.opts}
    seen: set[str] = set()
    skip = False
    for token in args:
        if skip:
            skip = False
            continue
        if token == "--":
            return
        flag, eq, _ = token.partition("=")
        if flag not in long_name:
            continue
        skip = flag in takes_value and not eq
        name = long_name[flag]
        if name in seen and flag not in repeatable:
            raise InputError(f"{name}: given twice; give it once (a second value would silently replace the first)")
        seen.add(name)


def _listing() -> typer.Typer:
    """The app with parameterless stand-ins for its commands, for the program's own ``--help``:
    that help shows each command's name and help text, which Typer derives from
    the same command entries (the stand-in keeps the function's name and docstring), never their
    options, so converting every command's signature to Click parameters (tens of ms) is skipped.
    A test checks the help is the same as the whole app's."""
    import copy

    def stand_in(info):  # noqa: ANN001, ANN202 - Typer's CommandInfo
        def command() -> None:  # never run: the listing only shows it
            ...

        command.__name__, command.__doc__ = info.callback.__name__, info.callback.__doc__
        entry = copy.copy(info)
        entry.callback = command
        return entry

    listing = copy.copy(app)
    listing.registered_commands = [stand_in(info) for info in app.registered_commands]
    return listing


def _reflowed(text: str | None) -> str | None:
    """A command's docstring with each paragraph's lines joined: Typer's Rich help keeps the single
    line breaks of every paragraph after the first, so a docstring wrapped at 100 columns printed
    ragged on an 80-column terminal ("... for the" / "highest predicted MFU ..."). Paragraphs stay
    apart; Rich wraps each to the terminal."""
    if text is None:
        return None
    return "\n\n".join(" ".join(line.strip() for line in p.splitlines()) for p in text.split("\n\n"))


def _run(argv: list[str]) -> None:
    """Run the CLI. A known subcommand is built on its own: Typer otherwise converts every
    command's signature to Click parameters on each start, which costs tens of milliseconds
    for nothing; ``llm-cost --help`` lists the commands without building them (:func:`_listing`);
    typos, the bare program and the other root options still go through the whole app.
    A usage error (missing argument, unknown option, bad choice) becomes one ``error:`` line."""
    from typer.main import get_command

    from llm_cost.cli import coercion, load_commands
    from llm_cost.core.errors import OutputError

    load_commands(argv[0] if argv else None)
    commands = _command_names()
    if argv and argv[0] in commands:
        single = typer.Typer(add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=COMMAND_HELP_MARKUP)
        single.registered_commands = [commands[argv[0]]]  # type: ignore[list-item]
        command, args, prog = get_command(single), argv[1:], f"llm-cost {argv[0]}"
        command.help = _reflowed(command.help)
        coercion.install(command, HELP_OPTIONS)
        _reject_bad_tokens(command, args)
        _check_formats(argv[0], {opt for p in command.params for opt in p.opts}, args)
    elif len(argv) == 1 and argv[0] in HELP_OPTIONS:
        command, args, prog = get_command(_listing()), argv, "llm-cost"
    else:  # the bare program too: shell completion runs it, with the words in the environment
        command, args, prog = get_command(app), argv or ["--help"], "llm-cost"
    try:
        code = command.main(args=args, prog_name=prog, help_option_names=HELP_OPTIONS, standalone_mode=False)
    except SystemExit as exc:  # Rich (Console.on_broken_pipe) and Typer exit 1 when the help meets a closed pipe
        if exc.code == 1 and (set(args) & set(HELP_OPTIONS) or type(sys.stdout).__name__ == "PacifyFlushWrapper"):
            raise OutputError("stdout: the reader closed the pipe", broken_pipe=True) from None
        raise
    except Exception as exc:  # Click's usage errors: match on its interface
        if not (hasattr(exc, "format_message") and hasattr(exc, "exit_code")):
            raise
        cause = _input_error(exc)
        if cause is not None:  # an option's parser refused the value: its message names the flag
            raise cause from None
        message = exc.format_message().replace("Value error, ", "")
        named = re.match(r"Invalid value for '[^']+'(?: / '[^']+')*: (--[\w-]+: .*)", message, re.S)
        if named:  # the parser's own message already names the flag
            raise InputError(named.group(1)) from None
        raise InputError(f"{message} (see '{prog} -h')") from None
    if isinstance(code, int) and code:
        raise SystemExit(code)


def _check_formats(name: str, takes: set[str], args: list[str]) -> None:
    """InputError for --json with --csv, and for --csv on a command with no rows (``takes``: its
    options), which points to --json rather than Click's "No such option"."""
    if "--json" in args and "--csv" in args and {"--json", "--csv"} <= takes:
        raise InputError("--json and --csv: give one (JSON is the whole result, CSV its rows)")
    if "--csv" in args and "--csv" not in takes and "--json" in takes:
        raise InputError(f"--csv: {name} prints no table of rows to give as CSV; use --json for its result as data")


def _input_error(exc: BaseException) -> Optional[InputError]:
    """The InputError an option's parser raised beneath a usage error, if any."""
    seen = exc.__context__ or exc.__cause__
    while seen is not None:
        if isinstance(seen, InputError):
            return seen
        seen = seen.__context__ or seen.__cause__
    return None


def _split_debug(argv: list[str]) -> tuple[list[str], bool]:
    """Take a leading global ``--debug`` off ``argv``; debugging is also on with LLM_COST_DEBUG=1."""
    import os

    debug = os.environ.get("LLM_COST_DEBUG", "") not in ("", "0")
    while argv and argv[0] == "--debug":
        argv, debug = argv[1:], True
    return argv, debug


def _os_failure(exc: OSError) -> tuple[int, str]:
    """(exit code, message) for an OSError: the file it names and the system's reason; exit 2 for
    a path the user gave (:func:`~llm_cost.core.errors.input_error_of`), else 1."""
    import errno

    from llm_cost.core.errors import input_error_of

    name = errno.errorcode.get(exc.errno or 0, "")
    if not exc.filename and name in ("ENOSPC", "EDQUOT", "EIO", "EBADF"):  # a stream, not a file we opened
        return 1, f"cannot write the output: {exc.strerror or exc}"
    refused = input_error_of(exc)
    if refused is not None:
        return 2, str(refused)
    where = f"{exc.filename}: " if exc.filename else ""
    return 1, f"{where}{exc.strerror or exc}"


def _failure(exc: BaseException, argv: list[str]) -> tuple[int, str]:
    """(exit code, one-line message) for an exception that escaped a command run with ``argv``;
    an empty message is reported quietly (a broken pipe)."""
    from llm_cost.core.errors import OutputError

    if isinstance(exc, InputError):
        from llm_cost.cli.flags import as_flags

        return 2, as_flags(exc, frozenset(a.split("=", 1)[0] for a in argv if a.startswith("--")))
    if isinstance(exc, OutputError):
        return (0, "") if exc.broken_pipe else (1, str(exc))
    if isinstance(exc, BrokenPipeError):
        return 0, ""
    if isinstance(exc, OSError):
        return _os_failure(exc)
    if isinstance(exc, (OverflowError, RecursionError, MemoryError)):
        from llm_cost.core.errors import input_error_of

        return 2, str(input_error_of(exc))
    return 1, (
        f"internal error ({type(exc).__name__}: {exc}); this is a bug in llm-cost: please report it with "
        "the command line (run with --debug or LLM_COST_DEBUG=1 for the traceback)"
    )


def _tolerant_stdout() -> None:
    """A stdout that cannot encode every character (PYTHONIOENCODING=ascii, a latin-1 terminal)
    writes ASCII stand-ins or ``?`` for them instead of failing: the help too, which Rich writes
    itself. A UTF-8 stdout (the common case) is left alone, at no cost."""
    encoding = (getattr(sys.stdout, "encoding", None) or "utf-8").lower().replace("-", "")
    if encoding.startswith("utf") or not hasattr(sys.stdout, "reconfigure"):
        return
    import codecs

    from llm_cost.report.base import stand_in

    codecs.register_error("llm-cost-stand-in", stand_in)
    sys.stdout.reconfigure(errors="llm-cost-stand-in")


def _quiet_stdout() -> None:
    """Point stdout at /dev/null so the interpreter's last flush cannot fail again."""
    import os

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (AttributeError, OSError, ValueError):  # no real file behind stdout (tests capture it)
        pass


def main() -> None:
    """Entry point and the one failure boundary: a user's mistake exits 2, an output or
    environment failure 1, each with one line on stderr; a reader that closed the pipe (``| head``)
    ends the run quietly with 0 (nothing failed: the reader had what it wanted); an internal
    error says so in one line, with the traceback only under ``--debug`` or LLM_COST_DEBUG=1."""
    from llm_cost.core.errors import OutputError

    argv, debug = _split_debug(sys.argv[1:])
    try:
        if sys.stdout is None:
            raise OutputError("stdout is closed; nothing to write the result to")
        _tolerant_stdout()
        _run(argv)
        from llm_cost.report.base import write_out

        write_out("")  # flush what Click wrote (help, --version); a full or closed stdout fails here
    except SystemExit:
        raise
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except BaseException as exc:  # noqa: BLE001 - the boundary: every failure becomes one line
        if debug and not isinstance(exc, InputError):
            import traceback

            traceback.print_exc()
        code, message = _failure(exc, argv)
        if (code == 1 or not message) and not isinstance(exc, InputError):
            _quiet_stdout()
        if message:
            _say_on_stderr(message)
        raise SystemExit(code) from None


def _say_on_stderr(message: str) -> None:
    """The failure's one line on stderr, if stderr takes it: a closed or full stderr (``2>&-``,
    ``2>/dev/full``) loses the line but not the exit status, which says what failed (it had exited
    1 for a user's mistake, the interpreter's own failure to write)."""
    from llm_cost.core.errors import cut_long_values

    try:
        sys.stderr.write(f"error: {cut_long_values(' '.join(message.split()))}\n")
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):  # None when closed at start; ENOSPC; closed since
        sys.stderr = None  # the interpreter's exit flushes no lost line again
