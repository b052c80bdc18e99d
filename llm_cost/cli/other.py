"""Commands about positions, number formats, training and inputs: rope, numerics, train, image,
video, and the documents' numbers: reproduce."""

from __future__ import annotations

from typing import Optional

import typer

from llm_cost.core.errors import InputError
from llm_cost.cli.app import (
    DP_OPT, GPU_HELP, JSON_OPT, MODEL_HELP, PP_OPT, TP_OPT, app, check_choice, emit, parse_layout,
    parse_non_negative, parse_size)


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
    from llm_cost.report import rope as view
    from llm_cost.analyses.rope import DEFAULT_TRAIN_LENGTH, rope_analysis, rope_for_model
    from llm_cost.core.units import parse_context, parse_positive_float

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
        from llm_cost.specs.load import load_model

        result = rope_for_model(load_model(model), train, target, base=b, dims=d)
    emit(result, as_json, view.render)


@app.command()
def numerics(
    k: str = typer.Option("4096", "--k", help="Dot-product length for the accumulation noise u x sqrt(k); 4K = 4,096."),
    head_dim: str = typer.Option("128", "--head-dim", help="Head dimension d_head for the QK-norm logit bound sqrt(d_head)."),
    as_json: bool = JSON_OPT,
) -> None:
    """Number formats (FP32, TF32, BF16, FP16, FP8 E4M3/E5M2, FP4 E2M1, INT8, INT4): range, precision, overflow.

    Example: llm-cost numerics --k 8K --head-dim 64
    """
    from llm_cost.analyses.numerics import numerics as compute
    from llm_cost.report import numerics as view
    from llm_cost.core.units import parse_context

    result = compute(parse_context(k, "--k"), parse_context(head_dim, "--head-dim"))
    emit(result, as_json, view.render)


@app.command()
def train(
    model: str = typer.Argument(..., help=MODEL_HELP),
    tokens: str = typer.Option(..., "--tokens", help="Training tokens D; decimal suffixes: 15T = 15 x 10^12."),
    gpu: str = typer.Option("h100", "--gpu", "-g", help=GPU_HELP),
    gpus: Optional[str] = typer.Option(None, "--gpus", help="GPUs training together, for the wall-clock time and "
                                       "ZeRO (default: none given; or --tp x --pp x --dp)."),
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
    from llm_cost.specs.load import load_gpu, load_model
    from llm_cost.report import training as view
    from llm_cost.analyses.training import train as train_
    from llm_cost.core.units import parse_context, parse_count, parse_fraction, parse_positive_float

    check_choice(recompute, "--recompute", ("none", "selective", "full"))
    d = parse_count(tokens, "--tokens")
    n = parse_count(gpus, "--gpus") if gpus is not None else None
    f_mfu = parse_fraction(mfu, "--mfu") if mfu is not None else None
    hours = parse_positive_float(gpu_hours, "--gpu-hours") if gpu_hours is not None else None
    power = parse_positive_float(power_w, "--power-w") if power_w is not None else None
    f_pue = parse_positive_float(pue, "--pue", maximum=10)
    if f_pue < 1:
        raise InputError(f"--pue: {pue!r} must be at least 1 (facility power / IT power)")
    grid = parse_non_negative(grid_kg_per_kwh, "--grid-kg-per-kwh") if grid_kg_per_kwh is not None else None
    price = parse_non_negative(usd_per_gpu_hour, "--usd-per-gpu-hour") if usd_per_gpu_hour is not None else None
    s, b = parse_context(seq, "--seq"), parse_context(micro_batch, "--micro-batch")
    check_choice(zero, "--zero", ("0", "1", "2", "3"))
    layout = parse_layout(tp, pp, None, dp)
    if layout is not None and n is not None:
        if dp is None:  # --gpus with --tp/--pp: the data-parallel degree is what is left
            per_replica = layout.tp * layout.pp
            if n % per_replica:
                raise InputError(f"--gpus {n} is not a multiple of --tp x --pp = {per_replica}")
            layout = parse_layout(tp, pp, None, str(n // per_replica))
        elif layout.gpus != n:
            raise InputError(f"--gpus {n} disagrees with --tp x --pp x --dp = {layout.gpus}; give one or the other")
    spec, g = load_model(model), load_gpu(gpu)
    if layout is not None:
        n = layout.gpus
    result = train_(spec, d, g, n, f_mfu, hours, recompute, dtype, power, f_pue, grid, price, s, b)
    if layout is not None:
        from dataclasses import replace

        from llm_cost.analyses.training import parallel_train_memory

        result = replace(result, parallel=parallel_train_memory(spec, g, layout.tp, layout.pp, layout.dp, int(zero),
                                                                s, b, recompute, sequence_parallel))
    emit(result, as_json, view.render, spec.display_name, g.display_name)


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
    from llm_cost.specs.load import load_model
    from llm_cost.analyses.multimodal import image_cost
    from llm_cost.report import multimodal as view
    from llm_cost.core.units import dtype_bits

    check_choice(weight_flops, "--weight-flops", ("gemm", "non_embedding", "total"))
    h, w = parse_size(size)
    kv_bits = dtype_bits(kv_dtype, "--kv-dtype")
    spec = load_model(model)
    dec = load_model(decoder) if decoder else None
    result = image_cost(spec, h, w, dec, connector, 1, weight_flops, kv_bits)
    emit(result, as_json, view.render)


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
    from llm_cost.specs.load import load_model
    from llm_cost.analyses.multimodal import video_cost
    from llm_cost.report import multimodal as view
    from llm_cost.core.units import dtype_bits, parse_positive_float

    check_choice(weight_flops, "--weight-flops", ("gemm", "non_embedding", "total"))
    h, w = parse_size(size)
    secs = parse_positive_float(seconds, "--seconds", maximum=10**7)
    rate = parse_positive_float(fps, "--fps", maximum=1000)
    kv_bits = dtype_bits(kv_dtype, "--kv-dtype")
    spec = load_model(model)
    dec = load_model(decoder) if decoder else None
    result = video_cost(spec, h, w, secs, rate, dec, weight_flops, kv_bits)
    emit(result, as_json, view.render)


@app.command()
def reproduce(
    row: Optional[list[str]] = typer.Option(None, "--row", help="Only these row ids (repeatable), e.g. --row P7."),
    as_json: bool = JSON_OPT,
) -> None:
    """Recompute every number the seed documents print; exit 0 only when all match.

    Example: llm-cost reproduce --row K2 --row R1
    """
    from llm_cost.report import reproduce as view
    from llm_cost.analyses.reproduce import check_rows, load_rows

    known = {r["id"] for r in load_rows()}
    unknown = [r for r in (row or []) if r not in known]
    if unknown:
        raise InputError(f"--row: unknown row id(s) {', '.join(unknown)}; see `llm-cost reproduce` for the ids")
    result = check_rows(row or None)
    emit(result, as_json, view.render)
    if not all(r.ok for r in result):
        raise SystemExit(1)
