"""Commands about a model's spec: params, kv, import, list, show."""

from __future__ import annotations

from enum import Enum
from typing import Optional

import typer

from llm_cost.cli.app import (
    DP_OPT, EP_OPT, JSON_OPT, MODEL_HELP, PP_OPT, TP_OPT, VERBOSE_OPT, app, emit, parse_layout, report_defaults)


@app.command()
def params(
    model: str = typer.Argument(..., help=MODEL_HELP),
    dtype: Optional[str] = typer.Option(
        None, "--weights-dtype", "--dtype", help="Weight dtype for the byte total: bf16, fp16, fp8, int8, int4, fp4, fp32 "
        "(default: the checkpoint's)."),
    tp: Optional[str] = TP_OPT,
    pp: Optional[str] = PP_OPT,
    ep: Optional[str] = EP_OPT,
    dp: Optional[str] = DP_OPT,
    verbose: bool = VERBOSE_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """Parameter breakdown: embedding, attention, MLP or experts, norms, biases, LM head, vision, MTP.

    Example: llm-cost params llama3-8b --dtype fp8
    """
    from llm_cost.specs.load import load_model
    from llm_cost.model.params import count_params
    from llm_cost.report import params as view
    from llm_cost.core.units import dtype_bits

    bits = dtype_bits(dtype, "--weights-dtype") if dtype else None
    layout = parse_layout(tp, pp, ep, dp)
    spec = load_model(model)
    shown_dtype = dtype.lower() if dtype else None
    if bits is None and model.strip().lower().endswith(".gguf"):
        from llm_cost.cli.app import gguf_bits

        bits, shown_dtype = gguf_bits(spec, model), "the GGUF file's types"
    result = count_params(spec, bits, shown_dtype)
    result = _with_checkpoint(result, spec, model)
    if layout is not None:
        from dataclasses import replace

        from llm_cost.analyses.deployment import per_gpu

        result = replace(result, layout=layout, per_gpu=per_gpu(spec, layout, result.bits_per_param))
    emit(result, as_json, view.render, spec.display_name)
    if verbose:
        report_defaults(model)


def _with_checkpoint(result, spec, model: str):
    """Attach the stored-vs-described report when MODEL is a folder holding safetensors files."""
    from pathlib import Path

    from llm_cost.specs.checkpoint import is_checkpoint_folder, read_checkpoint

    path = Path(model)
    if path.suffix.lower() == ".gguf":
        from dataclasses import replace

        from llm_cost.analyses.checkpoint import compare_gguf
        from llm_cost.specs.gguf import read_gguf

        return replace(result, checkpoint=compare_gguf(spec, read_gguf(path)))
    if not is_checkpoint_folder(path):
        return result
    from dataclasses import replace

    from llm_cost.analyses.checkpoint import compare

    return replace(result, checkpoint=compare(spec, read_checkpoint(path)))


@app.command()
def kv(
    model: str = typer.Argument(..., help=MODEL_HELP),
    context: str = typer.Option("1024,8K,32K,128K", "--context", "-c",
                                help="Comma-separated contexts in tokens; 8K = 8,192, 128K = 131,072."),
    batch: str = typer.Option("1", "--batch", "-b", help="Sequences held at once."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="KV element dtype: bf16, fp16, fp8, int8, int4, fp32."),
    tp: Optional[str] = TP_OPT,
    pp: Optional[str] = PP_OPT,
    ep: Optional[str] = EP_OPT,
    dp: Optional[str] = DP_OPT,
    verbose: bool = VERBOSE_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """KV-cache bytes per token and per sequence over contexts (GQA, MLA, sliding window, hybrid).

    Example: llm-cost kv llama3-8b --context 8K,128K --batch 4 --kv-dtype fp8
    """
    from llm_cost.model.kv import kv_cache
    from llm_cost.specs.load import load_model
    from llm_cost.report import kv as view
    from llm_cost.core.units import dtype_bits, parse_context, parse_contexts

    contexts = parse_contexts(context)
    b = parse_context(batch, "--batch")
    bits = dtype_bits(kv_dtype, "--kv-dtype")
    layout = parse_layout(tp, pp, ep, dp)
    spec = load_model(model)
    result = kv_cache(spec, contexts, bits, kv_dtype.lower(), b)
    if layout is not None:
        from dataclasses import replace

        from llm_cost.analyses.deployment import per_gpu

        result = replace(result, layout=layout, per_gpu=per_gpu(spec, layout, 16, bits))
    emit(result, as_json, view.render, spec.display_name)
    if verbose:
        report_defaults(model)


@app.command("import")
def import_(
    config: str = typer.Argument(..., help="A Hugging Face config.json, or the folder holding one."),
    out: str = typer.Option(..., "--out", "-o", help="The YAML spec to write, e.g. models/NAME.yaml."),
    name: Optional[str] = typer.Option(None, "--name", help="Spec name (default: the file stem of --out)."),
    force: bool = typer.Option(False, "--force", help="Overwrite --out if it exists."),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Also list the family defaults that were applied."),
    as_json: bool = JSON_OPT,
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
    as_json: bool = JSON_OPT,
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
    as_json: bool = JSON_OPT,
) -> None:
    """Print a model or GPU spec as loaded and validated, with its sources.

    Example: llm-cost show h100
    """
    from llm_cost.analyses.catalog import find_spec
    from llm_cost.report import catalog as view

    result = find_spec(name)
    emit(result, as_json, view.render_spec)
