"""The ``llm-cost`` command line: parse, load, call the engine, render. Nothing is computed here.

Every command takes ``--json`` (the result object, stable keys). A user's mistake (unknown name,
invalid spec, bad flag value) prints one clear message on stderr and exits with code 2;
nothing is printed on stdout before the whole result is computed.

``app`` holds the Typer app, shared options and the entry point; the commands live in
``model`` (params, kv, import, list, show), ``serving`` (flops, roofline, fit, activations,
context, moe, spec), ``other`` (rope, numerics, train, image, video, reproduce), ``calibration`` (calibrate,
validate). Importing them registers the commands, in this order.
"""

from llm_cost.cli import model, serving, serve, other, calibration  # noqa: F401, I001  (registers the commands, in this order)
from llm_cost.cli.app import app, main

__all__ = ["app", "main"]
