"""The cold start's shortcuts change nothing: the fast parameter coercion (llm_cost.cli.coercion)
gives what Typer's own gives (the same value or the same error, for every parameter of every
command, over values a user types), and the program's help built from stand-ins for the commands
is the whole app's help."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import typer
from typer.main import get_command

from llm_cost.cli import COMMAND_MODULES, app, coercion
from llm_cost.cli.program import HELP_OPTIONS, _listing, command_name

#: Typed text of every kind the options take, good and bad.
SAMPLES = [
    None,
    "",
    " ",
    "1",
    "8",
    "8K",
    "128k",
    "1..256",
    "1,8,64",
    "0",
    "-1",
    "0.5",
    "60%",
    "1e300",
    "nan",
    "15T",
    "1.3M",
    "x",
    "bf16",
    "BF16",
    "fp8",
    "Fp8",
    "int4",
    "plain",
    "read",
    "causal",
    "gemm",
    "llama3-8b",
    "a" * 300,
]


def _outcome(runtime, value, param, ctx):
    try:
        result = runtime.coerce(value, param=param, ctx=ctx)
    except Exception as exc:  # noqa: BLE001 - the error is the outcome compared
        return "error", type(exc), str(exc)
    return "value", type(result), result


def _commands():
    for info in app.registered_commands:
        single = typer.Typer(add_completion=False)
        single.registered_commands = [info]
        yield info.callback.__name__, get_command(single)


def _typers_own_coercion():
    """Typer's own coercion and choice annotation: private (``typer._coercion``,
    ``typer._param_types``), present in every Typer the pin in pyproject.toml allows (0.24-0.29).
    A Typer without them, or with them changed, fails here rather than skipping: the fast path of
    :mod:`llm_cost.cli.coercion` would silently stop applying, and the pin must be revisited."""
    try:
        from typer._coercion import build_runtime_param
        from typer._param_types import choice_coercion_annotation
    except ImportError as exc:
        pytest.fail(f"typer {typer.__version__} lacks what llm_cost.cli.coercion mirrors: {exc}")
    return build_runtime_param, choice_coercion_annotation


def test_the_installed_typer_is_the_pinned_one():
    """The Typer installed satisfies the project's pin (the versions llm_cost.cli.coercion was
    checked on), and the fast coercion is active with it."""
    from importlib.metadata import requires
    from importlib.metadata import version as installed

    from packaging.requirements import Requirement

    (pin,) = [Requirement(r) for r in requires("llm-cost") or () if Requirement(r).name == "typer"]
    assert installed("typer") in pin.specifier, (installed("typer"), str(pin))
    assert coercion.RuntimeParam is not None


@pytest.mark.parametrize("name,command", list(_commands()))
def test_every_parameter_coerces_as_typer_does(name, command):
    build_runtime_param, choice_coercion_annotation = _typers_own_coercion()
    coercion.install(command, HELP_OPTIONS)
    ctx = command.context_class(command, info_name=name)
    for param in [*command.params, command.get_help_option(ctx)]:
        fast = param.get_runtime_param()
        assert isinstance(fast, coercion._FastRuntimeParam), param.name
        typer_own = build_runtime_param(param.type_descriptor)
        descriptor = param.type_descriptor
        choices = choice_coercion_annotation(descriptor.annotation, descriptor.parameter_info) or ((), True)
        values = [*SAMPLES, param.default, *choices[0], *(str(getattr(c, "value", c)).upper() for c in choices[0])]
        for value in values:
            if (param.multiple or param.nargs == -1) and isinstance(value, str):
                value = [value]
            assert _outcome(fast, value, param, ctx) == _outcome(typer_own, value, param, ctx), (param.name, value)


def test_the_command_table_is_what_each_module_registers():
    """COMMAND_MODULES, which decides the one module a start imports, lists every registered
    command under the module that declares it, in the help's order."""
    registered = [(info.callback.__module__, command_name(info)) for info in app.registered_commands]
    assert registered == [
        (f"llm_cost.cli.{module}", name) for module, names in COMMAND_MODULES.items() for name in names
    ]


def test_a_shipped_model_command_loads_only_what_it_uses():
    """``params llama3-8b`` coerces its values without ``typer._adapters`` (most of Pydantic),
    reads its spec without pydantic or a YAML or JSON parser, renders without Typer's Rich help
    and, into a pipe, without Rich's console (report.base.PlainConsole), and imports no other
    command's module nor the Hub's."""
    code = (
        "import sys; sys.argv = ['llm-cost', 'params', 'llama3-8b']\n"
        "from llm_cost.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m in UNUSED or m.split('.')[0] in UNUSED), file=sys.stderr)"
    )
    unused = [
        "typer._adapters",
        "typer.rich_utils",
        "pydantic",
        "yaml",
        "json",
        "llm_cost.cli.step",
        "llm_cost.cli.serve",
        "llm_cost.cli.train",
        "llm_cost.cli.calibration",
        "llm_cost.api.step",
        "llm_cost.api.serving",
        "llm_cost.api.memory",
        "llm_cost.specs.hub",
        "llm_cost.specs.files",
        "rich.console",
    ]
    run = subprocess.run(
        [sys.executable, "-c", f"UNUSED = {unused!r}\n{code}"],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "COLUMNS": "160"},  # a pipe's width (pytest sets 80, where Rich wraps the table)
    )
    assert run.stderr.strip() == "[]"


@pytest.mark.parametrize("argv", [["--help"], ["-h"]])
@pytest.mark.parametrize("columns", ["80", "200"])
def test_the_program_help_lists_the_commands_as_the_whole_app(cli, capsys, monkeypatch, argv, columns):
    monkeypatch.setenv("COLUMNS", columns)
    listed = cli(*argv)
    try:
        get_command(app).main(args=argv, prog_name="llm-cost", standalone_mode=False)
    except SystemExit:
        pass
    whole = capsys.readouterr()
    assert (listed.code, listed.out, listed.err) == (0, whole.out, whole.err)
    assert all(f" {name} " in listed.out for name in get_command(app).commands)
    assert [c.params for c in get_command(_listing()).commands.values()] == [[]] * len(app.registered_commands)


def test_the_exit_leaves_the_run_s_objects_to_the_process():
    """The console script's exit freezes what the run leaves (``gc.freeze`` at exit: the
    interpreter's finalization collects none of it), after the output is complete, and keeps
    the exit code; an exit handler registered before the run runs after the freeze. Not timed:
    ``scripts/bench.py`` measures what the freeze saves."""
    code = (
        "import atexit, gc, sys\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0, file=sys.stderr))\n"
        "sys.argv = ['llm-cost', 'params', 'nosuch-model']\n"
        "from llm_cost.cli import main\n"
        "main()\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode == 2
    assert run.stdout == ""
    assert run.stderr.splitlines()[0].startswith("error: unknown model 'nosuch-model'")
    assert run.stderr.splitlines()[-1] == "frozen True"
