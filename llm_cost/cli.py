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

MODEL_HELP = ("Shipped model name or alias (see `llm-cost list models`), a path to a YAML spec, or a Hugging Face "
              "config.json (or the folder holding it).")
VERBOSE_OPT = typer.Option(False, "--verbose", "-v",
                           help="For a config.json MODEL: list the family defaults applied (on stderr).")
GPU_HELP = "Shipped GPU name or alias (see `llm-cost list gpus`), or a path to a YAML spec."
JSON_OPT = typer.Option(False, "--json", help="Print the result as JSON (stable keys) instead of tables.")
TP_OPT = typer.Option(None, "--tp", help="Tensor-parallel GPUs (divide the query heads).")
PP_OPT = typer.Option(None, "--pp", help="Pipeline stages (at most the layer count).")
EP_OPT = typer.Option(None, "--ep", help="Expert-parallel ranks: 1 or TP x DP (experts spread whole).")
DP_OPT = typer.Option(None, "--dp", help="Data-parallel replicas.")


def _layout(tp: Optional[str], pp: Optional[str], ep: Optional[str], dp: Optional[str]):
    """A Layout from the --tp/--pp/--ep/--dp flags, or None when none is given."""
    from .parallel import Layout
    from .units import parse_context

    if tp is None and pp is None and ep is None and dp is None:
        return None
    n = {flag: parse_context(v or "1", flag) for flag, v in (("--tp", tp), ("--pp", pp), ("--ep", ep), ("--dp", dp))}
    return Layout(n["--tp"], n["--pp"], n["--ep"], n["--dp"])


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
    from .load import load_model
    from .params import count_params
    from .report import params as view
    from .units import dtype_bits

    bits = dtype_bits(dtype) if dtype else None
    layout = _layout(tp, pp, ep, dp)
    spec = load_model(model)
    result = count_params(spec, bits, dtype.lower() if dtype else None)
    if layout is not None:
        from dataclasses import replace

        from .parallel import per_gpu

        result = replace(result, layout=layout, per_gpu=per_gpu(spec, layout, result.bits_per_param))
    _emit(result, as_json, view.render, spec.display_name)
    if verbose:
        _report_defaults(model)


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
    from .kv import kv_cache
    from .load import load_model
    from .report import kv as view
    from .units import dtype_bits, parse_context, parse_contexts

    contexts = parse_contexts(context)
    b = parse_context(batch, "--batch")
    bits = dtype_bits(kv_dtype, "--kv-dtype")
    layout = _layout(tp, pp, ep, dp)
    spec = load_model(model)
    result = kv_cache(spec, contexts, bits, kv_dtype.lower(), b)
    if layout is not None:
        from dataclasses import replace

        from .parallel import per_gpu

        result = replace(result, layout=layout, per_gpu=per_gpu(spec, layout, 16, bits))
    _emit(result, as_json, view.render, spec.display_name)
    if verbose:
        _report_defaults(model)


def _report_defaults(model: str) -> None:
    """--verbose: the defaults a config.json MODEL took, on stderr (so --json stays clean)."""
    from .hf import defaults_used
    from .report.hf import print_defaults
    from .report.base import console

    con = console()
    con.file = sys.stderr
    defaults = defaults_used(model)  # None unless MODEL is a .json path or a folder
    if defaults is None:
        con.print(f"{model}: a shipped or YAML spec, no config.json defaults to report")
    else:
        print_defaults(con, defaults)


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

    from .hf import import_config
    from .report import hf as view

    result = import_config(Path(config), Path(out), name, force)
    _emit(result, as_json, view.render_import, verbose)


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


def _weight_bits(default_dtype: str, weights_dtype: Optional[str], bits_per_weight: Optional[str]):
    """Bits per stored weight: --bits-per-weight, else --weights-dtype, else ``default_dtype``
    (the checkpoint's dtype)."""
    from .units import dtype_bits, parse_positive_float

    if bits_per_weight is not None:
        return parse_positive_float(bits_per_weight, "--bits-per-weight", maximum=64)
    if weights_dtype is not None:
        return dtype_bits(weights_dtype, "--weights-dtype")
    return dtype_bits(default_dtype)


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
    dtype: str = typer.Option("bf16", "--dtype", help="Compute dtype for the peak FLOP/s."),
    weights_dtype: Optional[str] = typer.Option(None, "--weights-dtype",
                                                help="Weight storage dtype (e.g. int4); default: the checkpoint's."),
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
    tp: Optional[str] = TP_OPT,
    pp: Optional[str] = PP_OPT,
    ep: Optional[str] = EP_OPT,
    dp: Optional[str] = DP_OPT,
    network_gb_s: str = typer.Option("50", "--network-gb-s",
                                      help="Per-GPU network bandwidth between nodes, GB/s per direction (layouts)."),
    as_json: bool = JSON_OPT,
) -> None:
    """Roofline: ridge points of a GPU; with a model, the decode step or prefill time bounds.

    Examples: llm-cost roofline --gpu h100; llm-cost roofline llama3-8b --gpu h100 --batch 1;
    llm-cost roofline --gpu h100 --batch 64 (model llama3-8b); llm-cost roofline llama3-8b --phase prefill --seq 8K
    """
    from .load import load_gpu, load_model
    from .report import roofline as view
    from .roofline import decode_step, peak_flops, prefill_step, ridge_points
    from .units import dtype_bits, parse_context, parse_fraction, parse_positive_float

    layout = _layout(tp, pp, ep, dp)
    network = parse_positive_float(network_gb_s, "--network-gb-s")
    wants_step = model is not None or layout is not None or any(v is not None for v in (phase, batch, context, seq))
    phase = phase or "decode"
    _choice(phase, "--phase", ("decode", "prefill"))
    _choice(weight_bytes, "--weight-bytes", ("read", "resident"))
    g = load_gpu(gpu)
    peak_flops(g, dtype)  # an unsupported dtype is an error before anything else
    kv_bits = dtype_bits(kv_dtype, "--kv-dtype")
    _weight_bits("bf16", weights_dtype, bits_per_weight)  # validate flags before loading the model
    b = parse_context(batch or "1", "--batch")
    c = parse_context(context or "0", "--context", minimum=0)
    s = parse_context(seq or "8K", "--seq")
    f_mfu, f_mbu = parse_fraction(mfu, "--mfu"), parse_fraction(mbu, "--mbu")
    model_given = model is not None
    if not wants_step:
        _emit(ridge_points(g), as_json, view.render_ridges, g.display_name)
        return
    spec = load_model(model or "llama3-8b")
    bits = _weight_bits(spec.torch_dtype, weights_dtype, bits_per_weight)
    if phase == "prefill":
        result = prefill_step(spec, g, s, b, dtype, bits, kv_bits, f_mfu)
        _emit(result, as_json, view.render_prefill, spec.display_name, g.display_name, model_given)
    else:
        result = decode_step(spec, g, b, c, dtype, bits, kv_bits, f_mfu, f_mbu, weight_bytes)
        if layout is not None:
            from dataclasses import replace

            from .parallel import deployment

            result = replace(result, deployment=deployment(spec, g, layout, b, c, bits, kv_bits, 0, dtype,
                                                           network))
        _emit(result, as_json, view.render_decode, spec.display_name, g.display_name, model_given, ops)


@app.command()
def fit(
    model: str = typer.Argument(..., help=MODEL_HELP),
    gpu: str = typer.Option("h100", "--gpu", "-g", help=GPU_HELP),
    context: str = typer.Option("8K", "--context", "-c", help="Tokens per sequence."),
    batch: str = typer.Option("1", "--batch", "-b", help="Sequences held at once."),
    weights_dtype: Optional[str] = typer.Option(None, "--weights-dtype",
                                                help="Weight dtype: bf16, fp8, int8, int4, ... (default: the checkpoint's)."),
    bits_per_weight: Optional[str] = typer.Option(None, "--bits-per-weight", help="Bits per weight incl. scales (4.25)."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="KV-cache element dtype."),
    reserve_gb: str = typer.Option("0", "--reserve-gb", help="Memory kept free for runtime and activations, GB (10^9 B)."),
    max_gpus: str = typer.Option("64", "--max-gpus", help="Largest layout to search for the smallest that fits."),
    tp: Optional[str] = TP_OPT,
    pp: Optional[str] = PP_OPT,
    ep: Optional[str] = EP_OPT,
    dp: Optional[str] = DP_OPT,
    as_json: bool = JSON_OPT,
) -> None:
    """What fits: one GPU's capacity (largest batch/context, KV budget) and the smallest multi-GPU layouts.

    With --tp/--pp/--ep/--dp: that layout's per-GPU weights, KV, headroom and decode bound.
    Examples: llm-cost fit llama3-8b --gpu h100; llm-cost fit llama3-70b --gpu h100 --context 8K;
    llm-cost fit deepseek-v3 --gpu h200 --weights-dtype fp8; llm-cost fit llama3-70b --tp 2
    """
    from .load import load_gpu, load_model
    from .memory import fit as fit_
    from .parallel import FitReport, deployment, smallest_layouts
    from .report import fit as view
    from .units import dtype_bits, parse_context

    c = parse_context(context, "--context")
    b = parse_context(batch, "--batch")
    _weight_bits("bf16", weights_dtype, bits_per_weight)
    kv_bits = dtype_bits(kv_dtype, "--kv-dtype")
    reserve = _gigabytes(reserve_gb, "--reserve-gb")
    n_max = parse_context(max_gpus, "--max-gpus")
    layout = _layout(tp, pp, ep, dp)
    spec, g = load_model(model), load_gpu(gpu)
    bits = _weight_bits(spec.torch_dtype, weights_dtype, bits_per_weight)
    if layout is not None:
        result = FitReport(None, [], n_max, deployment(spec, g, layout, b, c, bits, kv_bits, reserve))
    else:
        result = FitReport(fit_(spec, g, c, b, bits, kv_bits, reserve),
                           smallest_layouts(spec, g, b, c, bits, kv_bits, reserve, n_max), n_max, None)
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


@app.command()
def moe(
    model: str = typer.Argument(..., help=MODEL_HELP),
    batch: str = typer.Option("1,32,128", "--batch", "-b", help="Decode batches (tokens per step), comma-separated."),
    weights_dtype: Optional[str] = typer.Option(None, "--weights-dtype",
                                                help="Weight dtype: bf16, fp8, int4, ... (default: the checkpoint's)."),
    ep: str = typer.Option("1", "--ep", help="Expert-parallel GPUs (must divide experts + redundant experts)."),
    redundant_experts: str = typer.Option("0", "--redundant-experts", help="Extra expert copies spread over the EP GPUs."),
    dispatch_dtype: str = typer.Option("fp8", "--dispatch-dtype", help="All-to-all dispatch dtype."),
    combine_dtype: str = typer.Option("bf16", "--combine-dtype", help="All-to-all combine dtype."),
    tp: str = typer.Option("8", "--tp", help="Tensor-parallel degree of the all-reduce comparison."),
    prompt: str = typer.Option("4096", "--prompt", help="Prompt tokens for the all-to-all volume of one prefill."),
    gpu: Optional[str] = typer.Option(None, "--gpu", "-g", help=GPU_HELP + " Adds the expert GEMM ridge analysis."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="Compute dtype for the ridge (default: fp8 for 8-bit "
                                        "weights when the GPU has it, else bf16)."),
    as_json: bool = JSON_OPT,
) -> None:
    """MoE: total / active / read-per-step parameters, expected experts per batch, EP memory, all-to-all.

    Example: llm-cost moe deepseek-v3 --batch 1,32,128 --weights-dtype fp8 --ep 32 --gpu h100
    """
    from .load import load_gpu, load_model
    from .moe import moe_analysis
    from .report import moe as view
    from .units import dtype_bits, parse_context, parse_contexts

    batches = parse_contexts(batch, "--batch")
    _weight_bits("bf16", weights_dtype, None)
    n_ep = parse_context(ep, "--ep")
    n_red = parse_context(redundant_experts, "--redundant-experts", minimum=0)
    n_tp = parse_context(tp, "--tp")
    n_prompt = parse_context(prompt, "--prompt")
    d_bits, c_bits = dtype_bits(dispatch_dtype, "--dispatch-dtype"), dtype_bits(combine_dtype, "--combine-dtype")
    spec = load_model(model)
    bits = _weight_bits(spec.torch_dtype, weights_dtype, None)
    g = load_gpu(gpu) if gpu else None
    result = moe_analysis(spec, batches, bits, n_ep, n_red, d_bits, c_bits, n_tp, n_prompt, g, dtype)
    _emit(result, as_json, view.render, spec.display_name)


@app.command()
def context(
    model: str = typer.Argument(..., help=MODEL_HELP),
    contexts: str = typer.Option("8K,32K,128K,1M", "--context", "-c", help="Contexts in tokens, comma-separated."),
    gpu: str = typer.Option("h100", "--gpu", "-g", help=GPU_HELP),
    mfu: str = typer.Option("0.6", "--mfu", help="Model FLOP utilisation for prefill times (0-1 or 60%)."),
    dtype: str = typer.Option("bf16", "--dtype", help="Compute dtype for the peak."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="KV-cache element dtype."),
    weight_flops: str = typer.Option("gemm", "--weight-flops",
                                     help="Weight FLOPs per token: gemm (2 N_gemm), non_embedding (2 (N - embedding), "
                                          "seed 003) or total (2 N)."),
    as_json: bool = JSON_OPT,
) -> None:
    """Long context: attention vs weight FLOPs, crossover, prefill time, KV per request, score-matrix size.

    Example: llm-cost context llama3-70b --context 8K,128K --weight-flops total
    """
    from .context import context_analysis
    from .load import load_gpu, load_model
    from .report import context as view
    from .units import dtype_bits, parse_contexts, parse_fraction

    _choice(weight_flops, "--weight-flops", ("gemm", "non_embedding", "total"))
    ctx = parse_contexts(contexts, "--context")
    f_mfu = parse_fraction(mfu, "--mfu")
    kv_bits = dtype_bits(kv_dtype, "--kv-dtype")
    spec, g = load_model(model), load_gpu(gpu)
    result = context_analysis(spec, ctx, g, f_mfu, dtype, weight_flops, kv_bits)
    _emit(result, as_json, view.render, spec.display_name)


@app.command("spec")
def spec_(
    model: Optional[str] = typer.Argument(None, help=MODEL_HELP + " With --gpu: the Roofline step model."),
    alpha: str = typer.Option(..., "--alpha", help="Acceptance rate per drafted token, in [0, 1]."),
    gamma: str = typer.Option(..., "--gamma", help="Tokens drafted per round (>= 1)."),
    c: Optional[str] = typer.Option(None, "--c", help="Cost of one draft step as a fraction of a target step."),
    mtp: bool = typer.Option(False, "--mtp", help="Use the model's MTP module as the draft (c from its weights)."),
    gpu: Optional[str] = typer.Option(None, "--gpu", "-g", help=GPU_HELP),
    batch: str = typer.Option("1,8,32,64,128,256", "--batch", "-b", help="Batches for the step model."),
    context: str = typer.Option("0", "--context", help="Cached tokens per sequence in the step model."),
    mfu: str = typer.Option("0.6", "--mfu", help="MFU of the step model's compute term."),
    dtype: str = typer.Option("bf16", "--dtype", help="Compute dtype (peak and weight storage)."),
    weight_bytes: str = typer.Option("read", "--weight-bytes", help="read or resident (seed 003's convention)."),
    as_json: bool = JSON_OPT,
) -> None:
    """Speculative decoding: expected tokens per round, speedup, the turning batch, the step model.

    Examples: llm-cost spec --alpha 0.8 --gamma 4 --c 0.1;
    llm-cost spec llama3-8b --gpu h100 --alpha 0.8 --gamma 4 --c 0.1 --batch 64,128;
    llm-cost spec deepseek-v3 --mtp --alpha 0.85 --gamma 1
    """
    from .load import load_gpu, load_model
    from .report import speculative as view
    from .speculative import speculative
    from .units import parse_context, parse_contexts, parse_fraction

    _choice(weight_bytes, "--weight-bytes", ("read", "resident"))
    a = _unit_interval(alpha, "--alpha")
    g_ = parse_context(gamma, "--gamma")
    cost = _non_negative(c, "--c") if c is not None else None
    batches = parse_contexts(batch, "--batch")
    ctx = parse_context(context, "--context", minimum=0)
    f_mfu = parse_fraction(mfu, "--mfu")
    spec = load_model(model) if model else None
    hw = load_gpu(gpu) if gpu else None
    if hw is not None and spec is None:
        raise InputError("--gpu needs a MODEL for the step model (e.g. llm-cost spec llama3-8b --gpu h100 ...)")
    result = speculative(a, g_, cost, spec, hw, batches, f_mfu, ctx, dtype, weight_bytes, mtp)
    _emit(result, as_json, view.render)


def _unit_interval(text: str, flag: str) -> float:
    """A float in [0, 1]."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{flag}: {text!r} is not a number in [0, 1]") from None
    if not math.isfinite(value) or not 0 <= value <= 1:
        raise InputError(f"{flag}: {text!r} must be in [0, 1]")
    return value


def _non_negative(text: str, flag: str) -> float:
    """A finite float >= 0."""
    import math

    try:
        value = float(text)
    except ValueError:
        raise InputError(f"{flag}: {text!r} is not a number") from None
    if not math.isfinite(value) or value < 0:
        raise InputError(f"{flag}: {text!r} must be a finite number >= 0")
    return value


@app.command()
def numerics(
    k: str = typer.Option("4096", "--k", help="Dot-product length for the accumulation noise u x sqrt(k); 4K = 4,096."),
    head_dim: str = typer.Option("128", "--head-dim", help="Head dimension d_head for the QK-norm logit bound sqrt(d_head)."),
    as_json: bool = JSON_OPT,
) -> None:
    """Number formats (FP32, TF32, BF16, FP16, FP8 E4M3/E5M2, FP4 E2M1, INT8, INT4): range, precision, overflow.

    Example: llm-cost numerics --k 8K --head-dim 64
    """
    from .numerics import numerics as compute
    from .report import numerics as view
    from .units import parse_context

    result = compute(parse_context(k, "--k"), parse_context(head_dim, "--head-dim"))
    _emit(result, as_json, view.render)


@app.command()
def rope(
    model: Optional[str] = typer.Argument(None, help=MODEL_HELP + " Omit it to give --base and --head-dim."),
    base: Optional[str] = typer.Option(None, "--base",
                                       help="RoPE base (rope_theta), e.g. 10000 or 5e5. Required without MODEL; "
                                       "with a MODEL it overrides the model's rope_theta."),
    head_dim: Optional[str] = typer.Option(None, "--head-dim",
                                           help="Rotated dims per head d (even, e.g. 128). Required without MODEL; "
                                           "with a MODEL it overrides the model's rotated dims."),
    train_length: Optional[str] = typer.Option(None, "--train-length",
                                               help="Training context in tokens (8K = 8,192). Default: the model's "
                                               "original_max_position_embeddings or max_position_embeddings; "
                                               "without MODEL 8K."),
    target_length: Optional[str] = typer.Option(None, "--target-length",
                                                help="Extended context in tokens (128K = 131,072). Default: the "
                                                "model's max_position_embeddings if longer, else 4 x --train-length."),
    as_json: bool = JSON_OPT,
) -> None:
    """RoPE wavelengths per pair, and how PI, NTK-aware, YaRN, dynamic NTK and Llama 3.1 scaling stretch them.

    Examples: llm-cost rope llama3.1-405b;
    llm-cost rope --base 10000 --head-dim 128 --train-length 8K --target-length 32K
    """
    from .report import rope as view
    from .rope import DEFAULT_TRAIN_LENGTH, rope_analysis, rope_for_model
    from .units import parse_context, parse_positive_float

    b = parse_positive_float(base, "--base") if base is not None else None
    d = parse_context(head_dim, "--head-dim") if head_dim is not None else None
    train = parse_context(train_length, "--train-length") if train_length is not None else None
    target = parse_context(target_length, "--target-length") if target_length is not None else None
    if model is None:
        if b is None or d is None:
            raise InputError("give a MODEL, or both --base and --head-dim (e.g. --base 10000 --head-dim 128)")
        train = train if train is not None else DEFAULT_TRAIN_LENGTH
        result = rope_analysis(b, d, train, target if target is not None else 4 * train)
    else:
        from .load import load_model

        result = rope_for_model(load_model(model), train, target, base=b, dims=d)
    _emit(result, as_json, view.render)


@app.command()
def train(
    model: str = typer.Argument(..., help=MODEL_HELP),
    tokens: str = typer.Option(..., "--tokens", help="Training tokens D; decimal suffixes: 15T = 15 x 10^12."),
    gpu: str = typer.Option("h100", "--gpu", "-g", help=GPU_HELP),
    gpus: str = typer.Option("1", "--gpus", help="GPUs training together (data parallel for ZeRO)."),
    mfu: Optional[str] = typer.Option(None, "--mfu", help="MFU to get the time (0-1 or 40%); or give --gpu-hours."),
    gpu_hours: Optional[str] = typer.Option(None, "--gpu-hours", help="A GPU-hour budget (1.3M) to get the implied MFU."),
    recompute: str = typer.Option("none", "--recompute", help="Activation recompute: none, selective or full."),
    dtype: str = typer.Option("bf16", "--dtype", help="Compute dtype for the peak."),
    power_w: Optional[str] = typer.Option(None, "--power-w", help="Power per GPU, W (default: the GPU's TDP)."),
    pue: str = typer.Option("1.0", "--pue", help="Data-centre power usage effectiveness (>= 1)."),
    grid_kg_per_kwh: Optional[str] = typer.Option(None, "--grid-kg-per-kwh", help="Grid carbon intensity, kg CO2e/kWh."),
    usd_per_gpu_hour: Optional[str] = typer.Option(None, "--usd-per-gpu-hour", help="Price of one GPU-hour, USD."),
    seq: str = typer.Option("8K", "--seq", help="Sequence length for activation memory."),
    micro_batch: str = typer.Option("1", "--micro-batch", help="Sequences per micro-batch for activation memory."),
    tp: Optional[str] = TP_OPT,
    pp: Optional[str] = PP_OPT,
    dp: Optional[str] = DP_OPT,
    zero: str = typer.Option("1", "--zero", help="ZeRO stage over the data-parallel GPUs: 0, 1, 2 or 3 (3 ~ FSDP)."),
    sequence_parallel: bool = typer.Option(False, "--sequence-parallel", help="Megatron sequence parallelism."),
    as_json: bool = JSON_OPT,
) -> None:
    """Training: 6ND FLOPs, time at an MFU (or the MFU a GPU-hour budget implies), energy, CO2, cost, memory.

    Examples: llm-cost train llama3-8b --tokens 15T --gpu-hours 1.3M;
    llm-cost train llama3-70b --tokens 15T --gpus 2048 --mfu 0.4 --grid-kg-per-kwh 0.4
    """
    from .load import load_gpu, load_model
    from .report import training as view
    from .training import train as train_
    from .units import parse_context, parse_count, parse_fraction, parse_positive_float

    _choice(recompute, "--recompute", ("none", "selective", "full"))
    d = parse_count(tokens, "--tokens")
    n = parse_count(gpus, "--gpus")
    f_mfu = parse_fraction(mfu, "--mfu") if mfu is not None else None
    hours = parse_positive_float(gpu_hours, "--gpu-hours") if gpu_hours is not None else None
    power = parse_positive_float(power_w, "--power-w") if power_w is not None else None
    f_pue = parse_positive_float(pue, "--pue", maximum=10)
    if f_pue < 1:
        raise InputError(f"--pue: {pue!r} must be at least 1 (facility power / IT power)")
    grid = _non_negative(grid_kg_per_kwh, "--grid-kg-per-kwh") if grid_kg_per_kwh is not None else None
    price = _non_negative(usd_per_gpu_hour, "--usd-per-gpu-hour") if usd_per_gpu_hour is not None else None
    s, b = parse_context(seq, "--seq"), parse_context(micro_batch, "--micro-batch")
    _choice(zero, "--zero", ("0", "1", "2", "3"))
    layout = _layout(tp, pp, None, dp)
    if layout is not None and gpus != "1" and layout.gpus != n:
        raise InputError(f"--gpus {n} disagrees with --tp x --pp x --dp = {layout.gpus}; give one or the other")
    spec, g = load_model(model), load_gpu(gpu)
    if layout is not None:
        n = layout.gpus
    result = train_(spec, d, g, n, f_mfu, hours, recompute, dtype, power, f_pue, grid, price, s, b)
    if layout is not None:
        from dataclasses import replace

        from .training import parallel_train_memory

        result = replace(result, parallel=parallel_train_memory(spec, g, layout.tp, layout.pp, layout.dp, int(zero),
                                                                s, b, recompute, sequence_parallel))
    _emit(result, as_json, view.render, spec.display_name)


def _size(text: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` in pixels -> (height, width)."""
    import re

    m = re.fullmatch(r"\s*(\d+)\s*[xX*]\s*(\d+)\s*", text)
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1 or max(int(m.group(1)), int(m.group(2))) > 10**6:
        raise InputError(f"--size: {text!r} is not WIDTHxHEIGHT in pixels (e.g. 1920x1080, each 1 to 1,000,000)")
    return int(m.group(2)), int(m.group(1))


@app.command()
def image(
    model: str = typer.Argument(..., help="A vision-language model (qwen2-vl-7b) or its YAML spec."),
    size: str = typer.Option(..., "--size", help="Image size WIDTHxHEIGHT in pixels, e.g. 1920x1080."),
    decoder: Optional[str] = typer.Option(None, "--decoder", help="Price the tokens in another language model "
                                          "(e.g. llama3-70b); default: MODEL's own decoder."),
    connector: str = typer.Option("merge2x2", "--connector", help="mlp (a token per patch), merge2x2, or resampler:N."),
    weight_flops: str = typer.Option("gemm", "--weight-flops", help="Decoder weight FLOPs: gemm, non_embedding, total."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="KV-cache element dtype."),
    as_json: bool = JSON_OPT,
) -> None:
    """What an image costs: tokens, vision-encoder FLOPs and attention share, decoder prefill and KV.

    Examples: llm-cost image qwen2-vl-7b --size 1920x1080; llm-cost image qwen2-vl-7b --size 1024x1024 --decoder llama3-70b
    """
    from .load import load_model
    from .multimodal import image_cost
    from .report import multimodal as view
    from .units import dtype_bits

    _choice(weight_flops, "--weight-flops", ("gemm", "non_embedding", "total"))
    h, w = _size(size)
    kv_bits = dtype_bits(kv_dtype, "--kv-dtype")
    spec = load_model(model)
    dec = load_model(decoder) if decoder else None
    result = image_cost(spec, h, w, dec, connector, 1, weight_flops, kv_bits)
    _emit(result, as_json, view.render)


@app.command()
def video(
    model: str = typer.Argument(..., help="A vision-language model (qwen2-vl-7b) or its YAML spec."),
    size: str = typer.Option(..., "--size", help="Frame size WIDTHxHEIGHT in pixels, e.g. 1280x720."),
    seconds: str = typer.Option(..., "--seconds", help="Clip length in seconds."),
    fps: str = typer.Option(..., "--fps", help="Frames sampled per second."),
    decoder: Optional[str] = typer.Option(None, "--decoder", help="Price the tokens in another language model."),
    weight_flops: str = typer.Option("gemm", "--weight-flops", help="Decoder weight FLOPs: gemm, non_embedding, total."),
    kv_dtype: str = typer.Option("bf16", "--kv-dtype", help="KV-cache element dtype."),
    as_json: bool = JSON_OPT,
) -> None:
    """What a video costs: frames grouped by the temporal patch, tokens, encoder FLOPs, decoder KV.

    Example: llm-cost video qwen2-vl-7b --size 1280x720 --seconds 60 --fps 1
    """
    from .load import load_model
    from .multimodal import video_cost
    from .report import multimodal as view
    from .units import dtype_bits, parse_positive_float

    _choice(weight_flops, "--weight-flops", ("gemm", "non_embedding", "total"))
    h, w = _size(size)
    secs = parse_positive_float(seconds, "--seconds", maximum=10**7)
    rate = parse_positive_float(fps, "--fps", maximum=1000)
    kv_bits = dtype_bits(kv_dtype, "--kv-dtype")
    spec = load_model(model)
    dec = load_model(decoder) if decoder else None
    result = video_cost(spec, h, w, secs, rate, dec, weight_flops, kv_bits)
    _emit(result, as_json, view.render)


@app.command()
def reproduce(
    row: Optional[list[str]] = typer.Option(None, "--row", help="Only these row ids (repeatable), e.g. --row P7."),
    as_json: bool = JSON_OPT,
) -> None:
    """Recompute every number the seed documents print; exit 0 only when all match.

    Example: llm-cost reproduce --row K2 --row R1
    """
    from .report import reproduce as view
    from .reproduce import check_rows, load_rows

    known = {r["id"] for r in load_rows()}
    unknown = [r for r in (row or []) if r not in known]
    if unknown:
        raise InputError(f"--row: unknown row id(s) {', '.join(unknown)}; see `llm-cost reproduce` for the ids")
    result = check_rows(row or None)
    _emit(result, as_json, view.render)
    if not all(r.ok for r in result):
        raise SystemExit(1)


def _command_names() -> dict[str, object]:
    """Registered commands by their command-line name."""
    names = {}
    for info in app.registered_commands:
        name = info.name or info.callback.__name__.replace("_", "-")  # type: ignore[union-attr]
        names[name] = info
    return names


def _run(argv: list[str]) -> None:
    """Run the CLI. A known subcommand is built on its own: Typer otherwise converts every
    command's signature to Click parameters on each start, which costs tens of milliseconds
    for nothing; ``--help``, typos and the bare program still go through the whole app."""
    from typer.main import get_command

    commands = _command_names()
    if argv and argv[0] in commands:
        single = typer.Typer(add_completion=False, pretty_exceptions_enable=False)
        single.registered_commands = [commands[argv[0]]]  # type: ignore[list-item]
        get_command(single).main(args=argv[1:], prog_name=f"llm-cost {argv[0]}",
                                 help_option_names=["-h", "--help"])
    else:
        app(args=argv, prog_name="llm-cost")


def main() -> None:
    """Entry point: run the app; a user's mistake exits 2 with one message, never a traceback."""
    try:
        _run(sys.argv[1:])
    except (SpecError, InputError) as exc:
        sys.stderr.write(f"error: {exc}\n")
        raise SystemExit(2) from None
