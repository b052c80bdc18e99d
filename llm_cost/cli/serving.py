"""Commands about compute, memory and serving: flops, roofline, fit, activations, context, moe, spec."""

from __future__ import annotations

from typing import Optional

import typer

from llm_cost.core.errors import InputError
from llm_cost.cli.app import (
    DP_OPT, EP_OPT, GPU_HELP, JSON_OPT, MODEL_HELP, PP_OPT, TP_OPT, app, check_choice, emit, parse_gigabytes,
    parse_layout, parse_non_negative, parse_unit_interval, weight_bits)


@app.command()
def flops(
    model: str = typer.Argument(..., help=MODEL_HELP),
    phase: str = typer.Option("prefill", "--phase", help="prefill (a prompt) or decode (one token after --context)."),
    seq: str = typer.Option("128,1024,8K", "--seq", "-s", help="Prefill: prompt lengths, comma-separated (8K = 8,192)."),
    context: str = typer.Option("8K", "--context", "-c",
                                help="Decode: tokens already cached, comma-separated (the new token also sees itself)."),
    batch: str = typer.Option("1", "--batch", "-b", help="Sequences per forward pass."),
    attention: str = typer.Option("causal", "--attention", help="causal (each token sees those before it) or full (S x S)."),
    logits: str = typer.Option("all", "--logits", help="LM head on all positions (training, as the documents' table) or the last."),
    mla: str = typer.Option("plain", "--mla", help="MLA attention form: plain or absorbed (DeepSeek decode)."),
    as_json: bool = JSON_OPT,
) -> None:
    """FLOPs of a forward pass: per-layer linear and attention FLOPs, LM head, totals, over lengths.

    Examples: llm-cost flops llama3-8b --phase prefill --seq 8K;
    llm-cost flops llama3-8b --phase decode --context 8K
    """
    from llm_cost.workload.flops import forward_flops
    from llm_cost.specs.load import load_model
    from llm_cost.report import flops as view
    from llm_cost.core.units import parse_context, parse_contexts

    check_choice(phase, "--phase", ("prefill", "decode"))
    check_choice(attention, "--attention", ("causal", "full"))
    check_choice(logits, "--logits", ("all", "last"))
    check_choice(mla, "--mla", ("plain", "absorbed"))
    b = parse_context(batch, "--batch")
    lengths = parse_contexts(seq, "--seq") if phase == "prefill" else parse_contexts(context, "--context", minimum=0)
    spec = load_model(model)
    if phase == "prefill":
        result = [forward_flops(spec, n, 0, b, attention, logits, mla) for n in lengths]
    else:
        result = [forward_flops(spec, 1, c, b, attention, "last", mla) for c in lengths]
    emit(result, as_json, view.render, spec.display_name, phase)


@app.command()
def roofline(
    model: Optional[str] = typer.Argument(None, help=MODEL_HELP + " Default when a step option is given: llama3-8b."),
    gpu: str = typer.Option("h100", "--gpu", "-g", help=GPU_HELP),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="Compute dtype for the peak FLOP/s (default: fp8 for an "
                                        "FP8 checkpoint on a GPU with FP8, else bf16)."),
    weights_dtype: Optional[str] = typer.Option(None, "--weights-dtype",
                                                help="Weight storage dtype (e.g. int4); default: the checkpoint's."),
    bits_per_weight: Optional[str] = typer.Option(None, "--bits-per-weight",
                                                  help="Bits per stored weight incl. scales (e.g. 4.25 for int4, group 128)."),
    kv_dtype: Optional[str] = typer.Option(None, "--kv-dtype", help="KV-cache element dtype (default bf16)."),
    phase: Optional[str] = typer.Option(None, "--phase",
                                        help="decode (one step at --batch/--context, the default) or prefill (--seq)."),
    batch: Optional[str] = typer.Option(None, "--batch", "-b", help="Sequences per step (default 1)."),
    context: Optional[str] = typer.Option(None, "--context", "-c",
                                          help="Decode: tokens already cached per sequence (default 0)."),
    seq: Optional[str] = typer.Option(None, "--seq", "-s", help="Prefill: prompt length (default 8K)."),
    logits: Optional[str] = typer.Option(None, "--logits", help="Prefill: LM head on the last position (default, "
                                         "serving) or on all (training, the documents' prefill count)."),
    mfu: Optional[str] = typer.Option(None, "--mfu", help="Model FLOP utilisation for estimates (default 60%)."),
    mbu: Optional[str] = typer.Option(None, "--mbu", help="Memory bandwidth utilisation for estimates (default 80%)."),
    weight_bytes: Optional[str] = typer.Option(None, "--weight-bytes",
                                               help="Decode: read (matmul weights + one embedding row per sequence, "
                                                    "the default) or resident (every stored weight, as the documents)."),
    ops: bool = typer.Option(False, "--ops", help="Decode: per-operator table (FLOPs, bytes, intensity, bound, time)."),
    tp: Optional[str] = TP_OPT,
    pp: Optional[str] = PP_OPT,
    ep: Optional[str] = EP_OPT,
    dp: Optional[str] = DP_OPT,
    network_gb_s: Optional[str] = typer.Option(None, "--network-gb-s",
                                               help="Decode with a layout: network bandwidth between nodes per GPU, "
                                                    "GB/s per direction (default 50)."),
    as_json: bool = JSON_OPT,
) -> None:
    """Roofline: ridge points of a GPU; with a model (or any step option), a decode step's or a prefill's bounds.

    Examples: llm-cost roofline --gpu h100; llm-cost roofline llama3-8b --gpu h100 --batch 1;
    llm-cost roofline --gpu h100 --batch 64 (model llama3-8b); llm-cost roofline llama3-8b --phase prefill --seq 8K
    """
    from llm_cost.specs.load import load_gpu, load_model
    from llm_cost.report import roofline as view
    from llm_cost.analyses.roofline import decode_step, default_compute_dtype, peak_flops, prefill_step, ridge_points
    from llm_cost.core.units import dtype_bits, parse_context, parse_fraction, parse_positive_float

    layout = parse_layout(tp, pp, ep, dp)
    step_options = (phase, batch, context, seq, logits, mfu, mbu, weight_bytes, kv_dtype, weights_dtype,
                    bits_per_weight, network_gb_s)
    wants_step = model is not None or layout is not None or ops or any(v is not None for v in step_options)
    phase = phase or "decode"
    check_choice(phase, "--phase", ("decode", "prefill"))
    decode_only = {"--context": context, "--weight-bytes": weight_bytes, "--ops": ops or None,
                   "--tp/--pp/--ep/--dp": layout, "--network-gb-s": network_gb_s}
    wrong = [flag for flag, v in (decode_only.items() if phase == "prefill" else
                                  {"--seq": seq, "--logits": logits}.items()) if v is not None]
    if wrong:
        raise InputError(f"{', '.join(wrong)} do(es) not apply to --phase {phase}")
    check_choice(weight_bytes or "read", "--weight-bytes", ("read", "resident"))
    check_choice(logits or "last", "--logits", ("all", "last"))
    g = load_gpu(gpu)
    if dtype is not None:
        peak_flops(g, dtype)  # an unsupported dtype is an error before anything else
    kv_bits = dtype_bits(kv_dtype or "bf16", "--kv-dtype")
    weight_bits("bf16", weights_dtype, bits_per_weight)  # validate flags before loading the model
    b = parse_context(batch or "1", "--batch")
    c = parse_context(context or "0", "--context", minimum=0)
    s = parse_context(seq or "8K", "--seq")
    f_mfu, f_mbu = parse_fraction(mfu or "0.6", "--mfu"), parse_fraction(mbu or "0.8", "--mbu")
    network = parse_positive_float(network_gb_s or "50", "--network-gb-s")
    if not wants_step:
        emit(ridge_points(g), as_json, view.render_ridges, g.display_name)
        return
    spec = load_model(model or "llama3-8b")
    bits = weight_bits(spec.torch_dtype, weights_dtype, bits_per_weight)
    dtype = dtype or default_compute_dtype((weights_dtype or spec.torch_dtype).lower(), g)
    if phase == "prefill":
        result = prefill_step(spec, g, s, b, dtype, bits, kv_bits, f_mfu, logits=logits or "last")
        emit(result, as_json, view.render_prefill, spec.display_name, g.display_name, model is not None)
        return
    result = decode_step(spec, g, b, c, dtype, bits, kv_bits, f_mfu, f_mbu, weight_bytes or "read")
    if layout is not None:
        from dataclasses import replace

        from llm_cost.analyses.deployment import deployment

        result = replace(result, deployment=deployment(spec, g, layout, b, c, bits, kv_bits, 0, dtype, network))
    emit(result, as_json, view.render_decode, spec.display_name, g.display_name, model is not None, ops)


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
    memory_gb: Optional[str] = typer.Option(None, "--memory-gb",
                                            help="Memory per GPU, GB (10^9 B); default: the datasheet's figure, read "
                                                 "as 10^9 B (an '80 GB' HBM3 H100 physically holds 80 GiB)."),
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
    from llm_cost.specs.load import load_gpu, load_model
    from llm_cost.analyses.memory import fit as fit_
    from llm_cost.analyses.deployment import FitReport, deployment, smallest_layouts
    from llm_cost.report import fit as view
    from llm_cost.core.units import dtype_bits, parse_context

    c = parse_context(context, "--context")
    b = parse_context(batch, "--batch")
    weight_bits("bf16", weights_dtype, bits_per_weight)
    kv_bits = dtype_bits(kv_dtype, "--kv-dtype")
    reserve = parse_gigabytes(reserve_gb, "--reserve-gb")
    memory = parse_gigabytes(memory_gb, "--memory-gb") if memory_gb is not None else None
    if memory is not None and memory < 10**9:
        raise InputError(f"--memory-gb: {memory_gb!r} is below 1 GB")
    n_max = parse_context(max_gpus, "--max-gpus")
    layout = parse_layout(tp, pp, ep, dp)
    spec, g = load_model(model), load_gpu(gpu)
    if memory is not None:
        g = g.model_copy(update={"memory_gb": memory / 1e9})
    if reserve >= g.memory_bytes:
        raise InputError(f"--reserve-gb: {reserve / 1e9:g} GB leaves nothing of {g.name}'s {g.memory_gb:g} GB")
    bits = weight_bits(spec.torch_dtype, weights_dtype, bits_per_weight)
    if model.strip().lower().endswith(".gguf") and weights_dtype is None and bits_per_weight is None:
        from llm_cost.cli.app import gguf_bits

        bits = gguf_bits(spec, model)
    if layout is not None:
        result = FitReport(None, [], n_max, deployment(spec, g, layout, b, c, bits, kv_bits, reserve))
    else:
        result = FitReport(fit_(spec, g, c, b, bits, kv_bits, reserve),
                           smallest_layouts(spec, g, b, c, bits, kv_bits, reserve, n_max), n_max, None)
    emit(result, as_json, view.render, spec.display_name, g.display_name)


@app.command()
def activations(
    model: str = typer.Argument(..., help=MODEL_HELP),
    seq: str = typer.Option("8K", "--seq", "-s", help="Training sequence length."),
    micro_batch: str = typer.Option("1", "--micro-batch", help="Sequences per micro-batch."),
    formula: str = typer.Option("model", "--formula", help="model (the model's own block, no dropout) or gpt "
                                "(Korthikanti et al.'s GPT block, sbh(34 + 5as/h), as the source documents)."),
    as_json: bool = JSON_OPT,
) -> None:
    """Training activation memory per layer (Korthikanti et al.), without and with recompute.

    Example: llm-cost activations llama3-8b --seq 8K
    """
    from llm_cost.specs.load import load_model
    from llm_cost.analyses.memory import activation_memory
    from llm_cost.report import fit as view
    from llm_cost.core.units import parse_context

    s = parse_context(seq, "--seq")
    b = parse_context(micro_batch, "--micro-batch")
    spec = load_model(model)
    check_choice(formula, "--formula", ("model", "gpt"))
    result = [activation_memory(spec, s, b, r, formula=formula) for r in ("none", "selective", "full")]
    emit(result, as_json, view.render_activations, spec.display_name)


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
                                          "as the source documents) or total (2 N)."),
    as_json: bool = JSON_OPT,
) -> None:
    """Long context: attention vs weight FLOPs, crossover, prefill time, KV per request, score-matrix size.

    Example: llm-cost context llama3-70b --context 8K,128K --weight-flops total
    """
    from llm_cost.analyses.context import context_analysis
    from llm_cost.specs.load import load_gpu, load_model
    from llm_cost.report import context as view
    from llm_cost.core.units import dtype_bits, parse_contexts, parse_fraction

    check_choice(weight_flops, "--weight-flops", ("gemm", "non_embedding", "total"))
    ctx = parse_contexts(contexts, "--context")
    f_mfu = parse_fraction(mfu, "--mfu")
    kv_bits = dtype_bits(kv_dtype, "--kv-dtype")
    spec, g = load_model(model), load_gpu(gpu)
    result = context_analysis(spec, ctx, g, f_mfu, dtype, weight_flops, kv_bits)
    emit(result, as_json, view.render, spec.display_name)


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
    from llm_cost.specs.load import load_gpu, load_model
    from llm_cost.analyses.moe import moe_analysis
    from llm_cost.report import moe as view
    from llm_cost.core.units import dtype_bits, parse_context, parse_contexts

    batches = parse_contexts(batch, "--batch")
    weight_bits("bf16", weights_dtype, None)
    n_ep = parse_context(ep, "--ep")
    n_red = parse_context(redundant_experts, "--redundant-experts", minimum=0)
    n_tp = parse_context(tp, "--tp")
    n_prompt = parse_context(prompt, "--prompt")
    d_bits, c_bits = dtype_bits(dispatch_dtype, "--dispatch-dtype"), dtype_bits(combine_dtype, "--combine-dtype")
    spec = load_model(model)
    bits = weight_bits(spec.torch_dtype, weights_dtype, None)
    g = load_gpu(gpu) if gpu else None
    result = moe_analysis(spec, batches, bits, n_ep, n_red, d_bits, c_bits, n_tp, n_prompt, g, dtype)
    emit(result, as_json, view.render, spec.display_name)


@app.command("spec")
def spec_(
    model: Optional[str] = typer.Argument(None, help=MODEL_HELP + " With --gpu: the Roofline step model."),
    alpha: str = typer.Option(..., "--alpha", help="Acceptance rate per drafted token, in [0, 1]."),
    gamma: str = typer.Option(..., "--gamma", help="Tokens drafted per round (>= 1)."),
    c: Optional[str] = typer.Option(None, "--c", help="Cost of one draft step as a fraction of a target step."),
    mtp: bool = typer.Option(False, "--mtp", help="Use the model's MTP module as the draft (c from its weights)."),
    gpu: Optional[str] = typer.Option(None, "--gpu", "-g", help=GPU_HELP),
    batch: Optional[str] = typer.Option(None, "--batch", "-b",
                                        help="Step model: batches (default 1,8,32,64,128,256); needs MODEL and --gpu."),
    context: str = typer.Option("0", "--context", help="Cached tokens per sequence in the step model."),
    mfu: str = typer.Option("0.6", "--mfu", help="MFU of the step model's compute term (0-1 or 60%)."),
    dtype: Optional[str] = typer.Option(None, "--dtype", help="Step model: compute dtype (default: fp8 for an FP8 "
                                        "checkpoint on a GPU with FP8, else bf16); weights stay at the checkpoint's dtype."),
    weight_bytes: str = typer.Option("read", "--weight-bytes", help="read or resident (the source documents' convention)."),
    as_json: bool = JSON_OPT,
) -> None:
    """Speculative decoding: expected tokens per round, speedup, the turning batch, the step model.

    Examples: llm-cost spec --alpha 0.8 --gamma 4 --c 0.1;
    llm-cost spec llama3-8b --gpu h100 --alpha 0.8 --gamma 4 --c 0.1 --batch 64,128;
    llm-cost spec deepseek-v3 --mtp --alpha 0.85 --gamma 1
    """
    from llm_cost.specs.load import load_gpu, load_model
    from llm_cost.report import speculative as view
    from llm_cost.analyses.speculative import speculative
    from llm_cost.core.units import parse_context, parse_contexts, parse_fraction

    check_choice(weight_bytes, "--weight-bytes", ("read", "resident"))
    a = parse_unit_interval(alpha, "--alpha")
    g_ = parse_context(gamma, "--gamma")
    cost = parse_non_negative(c, "--c", percent=True) if c is not None else None
    if mtp and cost is not None:
        raise InputError("give --c or --mtp (which derives c from the model's MTP module), not both")
    if batch is not None and gpu is None:
        raise InputError("--batch is for the step model: give a MODEL and --gpu too")
    batches = parse_contexts(batch or "1,8,32,64,128,256", "--batch")
    ctx = parse_context(context, "--context", minimum=0)
    f_mfu = parse_fraction(mfu, "--mfu")
    spec = load_model(model) if model else None
    hw = load_gpu(gpu) if gpu else None
    if hw is not None and spec is None:
        raise InputError("--gpu needs a MODEL for the step model (e.g. llm-cost spec llama3-8b --gpu h100 ...)")
    if hw is not None and spec is not None:
        from llm_cost.analyses.roofline import default_compute_dtype, peak_flops

        dtype = dtype or default_compute_dtype(spec.torch_dtype, hw)
        peak_flops(hw, dtype)
    result = speculative(a, g_, cost, spec, hw, batches, f_mfu, ctx, dtype or "bf16", weight_bytes, mtp)
    emit(result, as_json, view.render)
