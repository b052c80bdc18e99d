"""Commands about a model's spec: params, kv, import, list, show."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Optional

import typer

from llm_cost.cli.options import (
    MAX_GRID_POINTS,
    MODEL_HELP,
    Csv,
    Dp,
    Ep,
    Json,
    KvDtype,
    Plot,
    Pp,
    Tp,
    Verbose,
    integer_grid,
    option,
    token_grid,
)
from llm_cost.cli.program import app, emit, emit_csv, parse_layout, report_defaults
from llm_cost.core.errors import InputError
from llm_cost.core.types import StorageDtype


@app.command()
def params(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    dtype: Annotated[
        Optional[StorageDtype],
        typer.Option(
            "--weights-dtype",
            "--dtype",
            case_sensitive=False,
            help="Weight dtype for the byte total (default: the checkpoint's).",
        ),
    ] = None,
    tp: Tp = None,
    pp: Pp = None,
    ep: Ep = None,
    dp: Dp = None,
    verbose: Verbose = False,
    as_json: Json = False,
) -> None:
    """Parameter breakdown: embedding, attention, MLP or experts, norms, biases, LM head, vision, MTP.

    Example: llm-cost params llama3-8b --dtype fp8
    """
    from pathlib import Path

    from llm_cost.analyses.checkpoint import checkpoint_report, gguf_weight_bits
    from llm_cost.model.params import count_params
    from llm_cost.report import params as view
    from llm_cost.specs.load import load_model

    layout = parse_layout(tp, pp, ep, dp)
    spec = load_model(model)
    bits, shown = (dtype.bits, dtype.value) if dtype else (None, None)
    if bits is None and model.strip().lower().endswith(".gguf"):
        bits, shown = gguf_weight_bits(spec, Path(model)), "the GGUF file's types"
    result = count_params(spec, bits, shown, layout, checkpoint_report(spec, Path(model)))
    emit(result, as_json, view.render, spec.display_name)
    if verbose:
        report_defaults(model)


@app.command()
def kv(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    context: Annotated[
        Any,
        option(
            "--context",
            "-c",
            parse=token_grid("--context"),
            metavar="LIST",
            help="Contexts in tokens (8K = 8,192, 128K = 131,072): a list, a doubling "
            "range 1K..128K or a range in steps 1K..8K:1K.",
        ),
    ] = "1024,8K,32K,128K",
    batch: Annotated[
        Any,
        option(
            "--batch",
            "-b",
            parse=integer_grid("--batch"),
            metavar="LIST",
            help="Sequences held at once: a value, a list 1,8,64 or a range 1..256 or "
            "1..100:10 (a list needs --json or --csv).",
        ),
    ] = "1",
    kv_dtype: KvDtype = StorageDtype.BF16,
    tp: Tp = None,
    pp: Pp = None,
    ep: Ep = None,
    dp: Dp = None,
    verbose: Verbose = False,
    as_json: Json = False,
    as_csv: Csv = False,
    plot: Plot = None,
) -> None:
    """KV-cache bytes per token and per sequence over contexts (GQA, MLA, sliding window, hybrid).

    Example: llm-cost kv llama3-8b --context 8K,128K --batch 4 --kv-dtype fp8
    """
    from llm_cost.model.kv import kv_cache
    from llm_cost.report import kv as view
    from llm_cost.specs.load import load_model

    layout = parse_layout(tp, pp, ep, dp)
    if len(batch) * len(context) > MAX_GRID_POINTS:
        raise InputError(
            f"--batch x --context: {len(batch) * len(context):,} points is more than the "
            f"{MAX_GRID_POINTS:,} a sweep takes"
        )
    spec = load_model(model)
    results = [kv_cache(spec, context, kv_dtype.bits, kv_dtype.value, b, layout) for b in batch]
    if plot is not None:
        from llm_cost.report import plots

        plots.kv(results, spec.display_name, plot)
    if as_csv:
        emit_csv([c for r in results for c in r.contexts], [{"batch": r.batch} for r in results for _ in r.contexts])
    elif len(results) > 1:
        if not as_json:
            raise InputError("--batch: a list of batches prints as --json or --csv; give one value for the table")
        emit(results, True, None)
    else:
        emit(results[0], as_json, view.render, spec.display_name)
    if verbose:
        report_defaults(model)


@app.command("import")
def import_(
    config: str = typer.Argument(..., help="A Hugging Face config.json, or the folder holding one."),
    out: str = typer.Option(..., "--out", "-o", help="The YAML spec to write, e.g. models/NAME.yaml."),
    name: Optional[str] = typer.Option(None, "--name", help="Spec name (default: the file stem of --out)."),
    force: bool = typer.Option(False, "--force", help="Overwrite --out if it exists."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also list the family defaults that were applied."),
    as_json: Json = False,
) -> None:
    """Write our YAML spec from a Hugging Face config.json, recording the source and the defaults used.

    Example: llm-cost import ~/hf/Qwen2.5-7B/config.json -o models/qwen2.5-7b.yaml
    """
    from pathlib import Path

    from llm_cost.analyses.import_spec import import_config
    from llm_cost.report import hf as view

    result = import_config(Path(config), Path(out), name, force)
    emit(result, as_json, view.render_import, verbose)


class ListKind(str, Enum):
    """What ``llm-cost list`` lists."""

    models = "models"
    gpus = "gpus"


@app.command("list")
def list_(
    kind: ListKind = typer.Argument(..., help="models or gpus", case_sensitive=False),
    as_json: Json = False,
) -> None:
    """List the shipped model or GPU specs with their key figures.

    Example: llm-cost list gpus
    """
    from llm_cost.analyses.catalog import gpu_catalog, model_catalog
    from llm_cost.report import catalog as view

    result = model_catalog() if kind is ListKind.models else gpu_catalog()
    emit(result, as_json, view.render)


@app.command()
def show(
    name: str = typer.Argument(..., help="A model or GPU name, alias, or path to a YAML spec."),
    as_json: Json = False,
) -> None:
    """Print a model or GPU spec as loaded and validated, with its sources.

    Example: llm-cost show h100
    """
    from llm_cost.analyses.catalog import find_spec
    from llm_cost.report import catalog as view

    result = find_spec(name)
    emit(result, as_json, view.render_spec)
