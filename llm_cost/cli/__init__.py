"""The ``llm-cost`` command line: parse, load, call the engine, render. Nothing is computed here.

Every command takes ``--json`` (the result object, stable keys). A user's mistake (unknown name,
invalid spec, bad flag value) prints one clear message on stderr and exits with code 2;
nothing is printed on stdout before the whole result is computed.

``app`` holds the Typer app, shared options and the entry point; the commands live in
``model`` (params, kv, import, list, show), ``serving`` (flops, roofline, fit, activations,
context, moe, spec), ``other`` (rope, numerics, train, image, video, reproduce), ``calibration`` (calibrate,
validate). Importing them registers the commands, in this order.

A start stays cheap because :func:`app.main` builds only the command that is run (``--help``
lists stand-ins for the commands, :func:`app._listing`) and coerces its values without Typer's
Pydantic adapters where it can (:mod:`llm_cost.cli.coercion`). A new command module (``serve``,
say) needs nothing of its own for that: declare its commands with ``@app.command()``, import what
a command computes with inside the command's function (a module's top level runs on every start
of every command), and add the module to the import below; the tests of
``tests/cli/test_cold_start.py`` then cover its parameters and its line in the help.
"""

from llm_cost.cli import model, serving, serve, other, calibration  # noqa: F401, I001  (registers the commands, in this order)
from llm_cost.cli.app import app, main

__all__ = ["app", "main"]
