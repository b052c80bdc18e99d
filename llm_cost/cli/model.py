"""Commands about a model's spec: params, kv, import, list, show."""

from __future__ import annotations

from enum import Enum
from typing import Annotated, Any, Optional

import typer

from llm_cost.cli.options import (
    MODEL_HELP,
    AllRows,
    Csv,
    Dp,
    Ep,
    Json,
    KvDtype,
    Plot,
    PlotForce,
    Pp,
    RedundantExperts,
    Tp,
    Verbose,
    integer_grid,
    option,
    plot_file,
    token_grid,
)
from llm_cost.cli.program import app, emit, emit_csv, layout_of, report_defaults
from llm_cost.cli.step_options import QuantizeEmbeddings
from llm_cost.core.errors import InputError
from llm_cost.core.types import StorageDtype, WeightFormat

ParamsDtype = Annotated[
    Optional[WeightFormat],
    typer.Option(
        "--weights-dtype",
        "--dtype",
        case_sensitive=False,
        help="Weight dtype for the byte total (default: the "
        "checkpoint's; int4 with a bf16 scale and zero per 128 weights).",
    ),
]
KvContexts = Annotated[
    Any,
    option(
        "--context",
        "-c",
        parse=token_grid("--context"),
        metavar="LIST",
        help="Contexts in tokens (8K = 8,192, 128K = 131,072): a list, a doubling range 1K..128K or a range in "
        "steps 1K..8K:1K.",
    ),
]
KvBatches = Annotated[
    Any,
    option(
        "--batch",
        "-b",
        parse=integer_grid("--batch"),
        metavar="LIST",
        help="Sequences held at once: a value, a list 1,8,64 or a range 1..256 or 1..100:10 (a list needs --json "
        "or --csv).",
    ),
]


@app.command()
def params(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    dtype: ParamsDtype = None,
    quantize_embeddings: QuantizeEmbeddings = False,
    tp: Tp = None,
    pp: Pp = None,
    ep: Ep = None,
    dp: Dp = None,
    redundant_experts: RedundantExperts = None,
    check: Annotated[
        bool,
        typer.Option(
            "--check",
            help="For a config.json or Hub id: build the model with transformers on the meta device (no weights) "
            "and compare the counts by module; needs pip install 'llm-cost[hf]'.",
        ),
    ] = False,
    verbose: Verbose = False,
    as_json: Json = False,
) -> None:
    """Parameter breakdown: embedding, attention, MLP or experts, norms, biases, LM head, vision, MTP.

    Example: llm-cost params llama3-8b --dtype fp8; llm-cost params ./Qwen3-8B/config.json --check
    """
    from llm_cost import api
    from llm_cost.report import params as view

    result = api.params(
        model, dtype, layout_of(tp, pp, ep, dp, redundant_experts), check=check, quantize_embeddings=quantize_embeddings
    )
    emit(result, as_json, view.render, api.load_model(model).display_name)
    if verbose:
        report_defaults(model)


@app.command()
def kv(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    context: KvContexts = "1024,8K,32K,128K",
    batch: KvBatches = "1",
    kv_dtype: KvDtype = StorageDtype.BF16,
    tp: Tp = None,
    pp: Pp = None,
    ep: Ep = None,
    dp: Dp = None,
    verbose: Verbose = False,
    all_rows: AllRows = False,
    as_json: Json = False,
    as_csv: Csv = False,
    plot: Plot = None,
    force: PlotForce = False,
) -> None:
    """KV-cache bytes per token and per sequence over contexts (GQA, MLA, sliding window, hybrid).

    Example: llm-cost kv llama3-8b --context 8K,128K --batch 4 --kv-dtype fp8
    """
    from llm_cost import api
    from llm_cost.report import kv as view

    out = plot_file(plot, force)
    results = api.kv_sweep(model, context, batch, kv_dtype, layout_of(tp, pp, ep, dp))
    if len(results) > 1 and not (as_json or as_csv):
        raise InputError("--batch: a list of batches prints as --json or --csv; give one value for the table")
    title = api.load_model(model).display_name
    if out is not None:
        from llm_cost.report import plots

        plots.kv(results, title, out)
    if as_csv:
        emit_csv([c for r in results for c in r.contexts], [{"batch": r.batch} for r in results for _ in r.contexts])
    else:
        emit(results if len(results) > 1 else results[0], as_json, view.render, title, all_rows)
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
    from llm_cost import api
    from llm_cost.report import hf as view

    emit(api.import_config(config, out, name, force), as_json, view.render_import, verbose)


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
    from llm_cost import api
    from llm_cost.report import catalog as view

    emit(api.catalog(kind.value), as_json, view.render)


@app.command()
def show(
    name: str = typer.Argument(..., help="A model or GPU name, alias, or path to a YAML spec."),
    as_json: Json = False,
) -> None:
    """Print a model or GPU spec as loaded and validated, with its sources.

    Example: llm-cost show h100
    """
    from llm_cost import api
    from llm_cost.report import catalog as view

    emit(api.show(name), as_json, view.render_spec)
