"""The ``llm-cost`` command line: parse, call :mod:`llm_cost.api`, render. Nothing is computed or decided here.

Every command takes ``--json`` (the result object, stable keys). A user's mistake (unknown name,
invalid spec, bad flag value) prints one clear message on stderr and exits with code 2;
nothing is printed on stdout before the whole result is computed.

``program`` holds the Typer app, shared options and the entry point; the commands live in the
modules of :data:`COMMAND_MODULES`, named by the question they answer as :mod:`llm_cost.api`'s
modules are: ``model`` (params, kv, import, list, show), ``step`` (flops, roofline, context),
``memory`` (fit, activations), ``moe`` (moe, spec), ``serve``, ``train``, ``positions`` (rope,
numerics), ``inputs`` (image, video), ``documents`` (reproduce) and ``calibration`` (calibrate,
validate). A command parses its flags, makes one call of :mod:`llm_cost.api` and renders the result. Importing a module registers its
commands. ``llm_cost.cli.app`` is the whole app, every command registered, in that order.

A start stays cheap because :func:`program.main` imports only the module of the command that is
run and builds only that command (``--help`` lists stand-ins for the commands,
:func:`program._listing`), and coerces its values without Typer's Pydantic adapters where it can
(:mod:`llm_cost.cli.coercion`); its exit leaves the run's objects to the process instead of
collecting them (:func:`main`). A new command module (``serve``, say) needs nothing of its own for
that: declare its commands with ``@app.command()``, import what a command computes with inside the
command's function (a module's top level runs on every start of its commands), and list the module
and its commands in :data:`COMMAND_MODULES`; the tests of ``tests/cli/test_cold_start.py`` then
check the list against the registered commands and cover its parameters and its line in the help.
"""

from __future__ import annotations

from typing import Any, Optional

__all__ = ["app", "main", "COMMAND_MODULES", "GC_THRESHOLD", "load_commands"]

#: Each command module and the commands it declares, in the order the program's help lists them.
COMMAND_MODULES = {
    "model": ("params", "kv", "import", "list", "show"),
    "step": ("flops", "roofline", "context"),
    "memory": ("fit", "activations"),
    "moe": ("moe", "spec"),
    "serve": ("serve",),
    "train": ("train",),
    "positions": ("rope", "numerics"),
    "inputs": ("image", "video"),
    "documents": ("reproduce",),
    "calibration": ("calibrate", "validate"),
}


def load_commands(command: Optional[str] = None) -> Any:
    """The Typer app with the module declaring ``command`` imported (its commands registered), or
    every module when ``command`` is None or no command's name. Importing the other modules costs
    a start about 2 ms that the command run never uses."""
    from importlib import import_module

    modules = [m for m, names in COMMAND_MODULES.items() if command in names] or list(COMMAND_MODULES)
    for module in modules:
        import_module(f"llm_cost.cli.{module}")
    from llm_cost.cli.program import app, command_name

    if len(modules) == len(COMMAND_MODULES):  # all registered: list them in COMMAND_MODULES' order
        order = [name for names in COMMAND_MODULES.values() for name in names]
        app.registered_commands.sort(key=lambda info: order.index(command_name(info)))
    return app


def __getattr__(name: str) -> Any:
    """``llm_cost.cli.app``: the Typer app with every command registered."""
    if name == "app":
        return load_commands()
    raise AttributeError(f"module 'llm_cost.cli' has no attribute {name!r}")


#: Allocations between two collections of the youngest generation while the program runs
#: (Python's default is 700). Starting a command allocates a few hundred thousand objects, almost
#: none of them in reference cycles, and each default collection walks every young object: a few
#: ms of a 130 ms start here. A CLI process lives for seconds, so cycles wait a little longer.
GC_THRESHOLD = 50_000


def main() -> None:
    """The ``llm-cost`` program, the console script's entry (:func:`llm_cost.cli.program.main`),
    the collector's threshold raised first (:data:`GC_THRESHOLD`), before Typer and Rich are
    imported: importing this package imports neither, and leaves the process's collector alone.

    The interpreter's exit freezes the objects the run leaves (``gc.freeze``, registered with
    :mod:`atexit`, once however often ``main`` runs in one process): the finalization then
    collects none of them. Its collections walk every object of Typer, Rich and the command: about
    15 ms of the 20-25 ms that ``python -c "import typer, rich.table"`` spends exiting, and about
    30 ms of a 145 ms ``llm-cost params llama3-8b``, on the 2-core machine of issue 26 (the same
    runs with and without the freeze, 20 of each in turn); the objects go with the process. Exit
    handlers still run (the freeze is one of them, and those registered before it run after it),
    standard streams are still flushed, and the modules are still cleared, each object freed as its
    last reference goes; only reference cycles left at exit are not collected, which the
    interpreter does not promise to finalize either."""
    import atexit
    import gc

    gc.set_threshold(GC_THRESHOLD, *gc.get_threshold()[1:])
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)
    from llm_cost.cli.program import main as run

    run()
