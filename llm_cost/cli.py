"""The ``llm-cost`` command line: parse, load, call the engine, render. Nothing is computed here.

Every command takes ``--json`` (the result object, stable keys). A user's mistake (unknown name,
invalid spec, bad flag value) prints one clear message on stderr and exits with code 2;
nothing is printed on stdout before the whole result is computed.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import Optional

import typer

from .load import SpecError
from .units import InputError

app = typer.Typer(
    name="llm-cost",
    help="Exact cost arithmetic for decoder-only LLMs: parameters, KV cache, FLOPs, Roofline, memory.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)

MODEL_HELP = "Shipped model name or alias (see `llm-cost list models`), or a path to a YAML spec."
GPU_HELP = "Shipped GPU name or alias (see `llm-cost list gpus`), or a path to a YAML spec."
JSON_OPT = typer.Option(False, "--json", help="Print the result as JSON (stable keys) instead of tables.")


def _emit(result, as_json: bool, render, *args) -> None:
    """Print ``result`` as JSON or through ``render(console, result, *args)``."""
    from .report.base import console, to_json

    if as_json:
        sys.stdout.write(to_json(result) + "\n")
    else:
        render(console(), result, *args)


@app.command()
def params(
    model: str = typer.Argument(..., help=MODEL_HELP),
    dtype: Optional[str] = typer.Option(
        None, "--dtype", help="Weight dtype for the byte total: bf16, fp16, fp8, int8, int4, fp4, fp32 "
        "(default: the checkpoint's)."),
    as_json: bool = JSON_OPT,
) -> None:
    """Parameter breakdown: embedding, attention, MLP or experts, norms, biases, LM head, vision, MTP.

    Example: llm-cost params llama3-8b --dtype fp8
    """
    from .load import load_model
    from .params import count_params
    from .report import params as view
    from .units import dtype_bits

    spec = load_model(model)
    bits = dtype_bits(dtype) if dtype else None
    result = count_params(spec, bits, dtype.lower() if dtype else None)
    _emit(result, as_json, view.render, spec.display_name)


@app.command()
def kv(
    model: str = typer.Argument(..., help=MODEL_HELP),
    context: str = typer.Option("1024,8K,32K,128K", "--context", "-c",
                                help="Comma-separated contexts in tokens; 8K = 8,192, 128K = 131,072."),
    batch: str = typer.Option("1", "--batch", "-b", help="Sequences held at once."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="KV element dtype: bf16, fp16, fp8, int8, int4, fp32."),
    as_json: bool = JSON_OPT,
) -> None:
    """KV-cache bytes per token and per sequence over contexts (GQA, MLA, sliding window, hybrid).

    Example: llm-cost kv llama3-8b --context 8K,128K --batch 4 --kv-dtype fp8
    """
    from .kv import kv_cache
    from .load import load_model
    from .report import kv as view
    from .units import dtype_bits, parse_context, parse_contexts

    contexts = parse_contexts(context)
    b = parse_context(batch, "--batch")
    bits = dtype_bits(kv_dtype, "--kv-dtype")
    spec = load_model(model)
    result = kv_cache(spec, contexts, bits, kv_dtype.lower(), b)
    _emit(result, as_json, view.render, spec.display_name)


class ListKind(str, Enum):
    models = "models"
    gpus = "gpus"


@app.command("list")
def list_(
    kind: ListKind = typer.Argument(..., help="models or gpus"),
    as_json: bool = JSON_OPT,
) -> None:
    """List the shipped model or GPU specs with their key figures.

    Example: llm-cost list gpus
    """
    from .catalog import gpu_catalog, model_catalog
    from .report import catalog as view

    result = model_catalog() if kind is ListKind.models else gpu_catalog()
    _emit(result, as_json, view.render)


@app.command()
def show(
    name: str = typer.Argument(..., help="A model or GPU name, alias, or path to a YAML spec."),
    as_json: bool = JSON_OPT,
) -> None:
    """Print a model or GPU spec as loaded and validated, with its sources.

    Example: llm-cost show h100
    """
    from .catalog import find_spec
    from .report import catalog as view

    result = find_spec(name)
    _emit(result, as_json, view.render_spec)


def main() -> None:
    """Entry point: run the app; a user's mistake exits 2 with one message, never a traceback."""
    try:
        app()
    except (SpecError, InputError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise SystemExit(2) from None
