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


def _weight_bits(dtype: str, weights_dtype: Optional[str], bits_per_weight: Optional[str]):
    """Bits per stored weight: --bits-per-weight, else --weights-dtype, else --dtype."""
    from .units import dtype_bits, parse_positive_float

    if bits_per_weight is not None:
        return parse_positive_float(bits_per_weight, "--bits-per-weight", maximum=64)
    if weights_dtype is not None:
        return dtype_bits(weights_dtype, "--weights-dtype")
    return dtype_bits(dtype, "--dtype")


@app.command()
def flops(
    model: str = typer.Argument(..., help=MODEL_HELP),
    phase: str = typer.Option("prefill", "--phase", help="prefill (a prompt) or decode (one token after --context)."),
    seq: str = typer.Option("128,1024,8K", "--seq", "-s", help="Prefill: prompt lengths, comma-separated (8K = 8,192)."),
    context: str = typer.Option("8K", "--context", "-c",
                                help="Decode: tokens already cached, comma-separated (the new token also sees itself)."),
    batch: str = typer.Option("1", "--batch", "-b", help="Sequences per forward pass."),
    attention: str = typer.Option("causal", "--attention", help="causal (each token sees those before it) or full (S x S)."),
    logits: str = typer.Option("all", "--logits", help="LM head on all positions (training, seed 000) or the last."),
    mla: str = typer.Option("plain", "--mla", help="MLA attention form: plain or absorbed (DeepSeek decode)."),
    as_json: bool = JSON_OPT,
) -> None:
    """FLOPs of a forward pass: per-layer linear and attention FLOPs, LM head, totals, over lengths.

    Examples: llm-cost flops llama3-8b --phase prefill --seq 8K;
    llm-cost flops llama3-8b --phase decode --context 8K
    """
    from .flops import forward_flops
    from .load import load_model
    from .report import flops as view
    from .units import parse_context, parse_contexts

    _choice(phase, "--phase", ("prefill", "decode"))
    _choice(attention, "--attention", ("causal", "full"))
    _choice(logits, "--logits", ("all", "last"))
    _choice(mla, "--mla", ("plain", "absorbed"))
    b = parse_context(batch, "--batch")
    lengths = parse_contexts(seq, "--seq") if phase == "prefill" else parse_contexts(context, "--context", minimum=0)
    spec = load_model(model)
    if phase == "prefill":
        result = [forward_flops(spec, n, 0, b, attention, logits, mla) for n in lengths]
    else:
        result = [forward_flops(spec, 1, c, b, attention, "last", mla) for c in lengths]
    _emit(result, as_json, view.render, spec.display_name, phase)


def _choice(value: str, flag: str, valid: tuple[str, ...]) -> None:
    if value not in valid:
        raise InputError(f"{flag}: {value!r} is not one of: {', '.join(valid)}")


@app.command()
def roofline(
    model: Optional[str] = typer.Argument(None, help=MODEL_HELP + " Default with --batch/--context: llama3-8b."),
    gpu: str = typer.Option("h100", "--gpu", "-g", help=GPU_HELP),
    dtype: str = typer.Option("bf16", "--dtype", help="Compute dtype for the peak; also the weight dtype by default."),
    weights_dtype: Optional[str] = typer.Option(None, "--weights-dtype", help="Weight storage dtype (e.g. int4)."),
    bits_per_weight: Optional[str] = typer.Option(None, "--bits-per-weight",
                                                  help="Bits per stored weight incl. scales (e.g. 4.25 for int4, group 128)."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="KV-cache element dtype."),
    phase: Optional[str] = typer.Option(None, "--phase",
                                        help="decode (one step at --batch/--context, the default) or prefill (--seq)."),
    batch: Optional[str] = typer.Option(None, "--batch", "-b", help="Sequences per step (default 1)."),
    context: Optional[str] = typer.Option(None, "--context", "-c",
                                          help="Decode: tokens already cached per sequence (default 0)."),
    seq: Optional[str] = typer.Option(None, "--seq", "-s", help="Prefill: prompt length (default 8K)."),
    mfu: str = typer.Option("0.6", "--mfu", help="Model FLOP utilisation for estimates (0-1 or 60%)."),
    mbu: str = typer.Option("1.0", "--mbu", help="Memory bandwidth utilisation for estimates (0-1 or 80%)."),
    weight_bytes: str = typer.Option("read", "--weight-bytes",
                                     help="read (matmul weights + B embedding rows) or resident (every weight, seed 003)."),
    ops: bool = typer.Option(False, "--ops", help="Per-operator table (FLOPs, bytes, intensity, bound, time)."),
    as_json: bool = JSON_OPT,
) -> None:
    """Roofline: ridge points of a GPU; with a model, the decode step or prefill time bounds.

    Examples: llm-cost roofline --gpu h100; llm-cost roofline llama3-8b --gpu h100 --batch 1;
    llm-cost roofline --gpu h100 --batch 64 (model llama3-8b); llm-cost roofline llama3-8b --phase prefill --seq 8K
    """
    from .load import load_gpu, load_model
    from .report import roofline as view
    from .roofline import decode_step, peak_flops, prefill_step, ridge_points
    from .units import dtype_bits, parse_context, parse_fraction

    wants_step = model is not None or any(v is not None for v in (phase, batch, context, seq))
    phase = phase or "decode"
    _choice(phase, "--phase", ("decode", "prefill"))
    _choice(weight_bytes, "--weight-bytes", ("read", "resident"))
    g = load_gpu(gpu)
    peak_flops(g, dtype)  # an unsupported dtype is an error before anything else
    kv_bits = dtype_bits(kv_dtype, "--kv-dtype")
    bits = _weight_bits(dtype, weights_dtype, bits_per_weight)
    b = parse_context(batch or "1", "--batch")
    c = parse_context(context or "0", "--context", minimum=0)
    s = parse_context(seq or "8K", "--seq")
    f_mfu, f_mbu = parse_fraction(mfu, "--mfu"), parse_fraction(mbu, "--mbu")
    model_given = model is not None
    if not wants_step:
        _emit(ridge_points(g), as_json, view.render_ridges, g.display_name)
        return
    spec = load_model(model or "llama3-8b")
    if phase == "prefill":
        result = prefill_step(spec, g, s, b, dtype, bits, kv_bits, f_mfu)
        _emit(result, as_json, view.render_prefill, spec.display_name, g.display_name, model_given)
    else:
        result = decode_step(spec, g, b, c, dtype, bits, kv_bits, f_mfu, f_mbu, weight_bytes)
        _emit(result, as_json, view.render_decode, spec.display_name, g.display_name, model_given, ops)


@app.command()
def fit(
    model: str = typer.Argument(..., help=MODEL_HELP),
    gpu: str = typer.Option("h100", "--gpu", "-g", help=GPU_HELP),
    context: str = typer.Option("8K", "--context", "-c", help="Tokens per sequence for the largest batch."),
    batch: str = typer.Option("1", "--batch", "-b", help="Sequences for the largest context."),
    weights_dtype: str = typer.Option("bf16", "--weights-dtype", help="Weight dtype: bf16, fp8, int8, int4, ..."),
    bits_per_weight: Optional[str] = typer.Option(None, "--bits-per-weight", help="Bits per weight incl. scales (4.25)."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="KV-cache element dtype."),
    reserve_gb: str = typer.Option("0", "--reserve-gb", help="Memory kept free for runtime and activations, GB (10^9 B)."),
    as_json: bool = JSON_OPT,
) -> None:
    """What fits on one GPU: weights vs memory, largest batch and context, KV token budget.

    Example: llm-cost fit llama3-8b --gpu h100 --context 8K
    """
    from .load import load_gpu, load_model
    from .memory import fit as fit_
    from .report import fit as view
    from .units import dtype_bits, parse_context

    c = parse_context(context, "--context")
    b = parse_context(batch, "--batch")
    bits = _weight_bits(weights_dtype, None, bits_per_weight)
    kv_bits = dtype_bits(kv_dtype, "--kv-dtype")
    reserve = _gigabytes(reserve_gb, "--reserve-gb")
    spec, g = load_model(model), load_gpu(gpu)
    result = fit_(spec, g, c, b, bits, kv_bits, reserve)
    _emit(result, as_json, view.render, spec.display_name, g.display_name)


def _gigabytes(text: str, flag: str) -> int:
    """A non-negative size in GB (10^9 B) as exact bytes."""
    from decimal import Decimal, InvalidOperation

    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise InputError(f"{flag}: {text!r} is not a number of GB") from None
    if not value.is_finite() or value < 0 or value > 10**6:
        raise InputError(f"{flag}: {text!r} must be between 0 and 1,000,000 GB")
    return int(value * 10**9)


@app.command()
def activations(
    model: str = typer.Argument(..., help=MODEL_HELP),
    seq: str = typer.Option("8K", "--seq", "-s", help="Training sequence length."),
    micro_batch: str = typer.Option("1", "--micro-batch", help="Sequences per micro-batch."),
    as_json: bool = JSON_OPT,
) -> None:
    """Training activation memory per layer, s b h (34 + 5 a s / h), without and with recompute.

    Example: llm-cost activations llama3-8b --seq 8K
    """
    from .load import load_model
    from .memory import activation_memory
    from .report import fit as view
    from .units import parse_context

    s = parse_context(seq, "--seq")
    b = parse_context(micro_batch, "--micro-batch")
    spec = load_model(model)
    result = [activation_memory(spec, s, b, r) for r in ("none", "selective", "full")]
    _emit(result, as_json, view.render_activations, spec.display_name)


def main() -> None:
    """Entry point: run the app; a user's mistake exits 2 with one message, never a traceback."""
    try:
        app()
    except (SpecError, InputError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise SystemExit(2) from None
