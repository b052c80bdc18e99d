"""Commands about positions, number formats, training and inputs: rope, numerics, train, image,
video, and the documents' numbers: reproduce."""

from __future__ import annotations

import re
from enum import Enum
from typing import Annotated, Optional

import typer

from llm_cost.cli.options import (
    MODEL_HELP,
    Csv,
    Dp,
    Gpu,
    Json,
    KvDtype,
    Pp,
    Tp,
    efficiency,
    integer,
    large_count,
    non_negative,
    option,
    positive,
    tokens,
)
from llm_cost.cli.program import app, emit, emit_csv
from llm_cost.cli.step_options import WeightFlopsOpt
from llm_cost.core.choices import Recompute, WeightFlops
from llm_cost.core.errors import InputError
from llm_cost.core.types import Dtype, StorageDtype


@app.command()
def rope(
    model: Annotated[Optional[str], typer.Argument(help=MODEL_HELP + " Omit it to give --base and --head-dim.")] = None,
    base: Annotated[
        Optional[float],
        option(
            "--base",
            parse=positive("--base"),
            metavar="NUMBER",
            help="RoPE base (rope_theta), e.g. 10000 or 5e5. Required without MODEL; "
            "with a MODEL it overrides the model's rope_theta.",
        ),
    ] = None,
    head_dim: Annotated[
        Optional[int],
        option(
            "--head-dim",
            parse=integer("--head-dim"),
            metavar="INTEGER",
            help="Rotated dims per head d (even, e.g. 128). Required without "
            "MODEL; with a MODEL it overrides the model's rotated dims.",
        ),
    ] = None,
    train_length: Annotated[
        Optional[int],
        option(
            "--train-length",
            parse=tokens("--train-length"),
            metavar="TOKENS",
            help="Training context in tokens (8K = 8,192). Default: the "
            "model's original_max_position_embeddings or "
            "max_position_embeddings; without MODEL 8K.",
        ),
    ] = None,
    target_length: Annotated[
        Optional[int],
        option(
            "--target-length",
            parse=tokens("--target-length"),
            metavar="TOKENS",
            help="Extended context in tokens (128K = 131,072). Default: the "
            "model's max_position_embeddings if longer, else 4 x "
            "--train-length.",
        ),
    ] = None,
    as_json: Json = False,
) -> None:
    """RoPE wavelengths per pair, and how PI, NTK-aware, YaRN, dynamic NTK and Llama 3.1 scaling stretch them.

    Examples: llm-cost rope llama3.1-405b;
    llm-cost rope --base 10000 --head-dim 128 --train-length 8K --target-length 32K
    """
    from llm_cost.analyses.rope import DEFAULT_TRAIN_LENGTH, rope_analysis, rope_for_model
    from llm_cost.report import rope as view

    if model is None:
        if base is None or head_dim is None:
            raise InputError("give a MODEL, or both --base and --head-dim (e.g. --base 10000 --head-dim 128)")
        train = train_length if train_length is not None else DEFAULT_TRAIN_LENGTH
        result = rope_analysis(base, head_dim, train, target_length if target_length is not None else 4 * train)
    else:
        from llm_cost.specs.load import load_model

        result = rope_for_model(load_model(model), train_length, target_length, base=base, dims=head_dim)
    emit(result, as_json, view.render)


@app.command()
def numerics(
    k: Annotated[
        int,
        option(
            "--k",
            parse=tokens("--k"),
            metavar="TOKENS",
            help="Dot-product length for the accumulation noise u x sqrt(k); 4K = 4,096.",
        ),
    ] = 4096,
    head_dim: Annotated[
        int,
        option(
            "--head-dim",
            parse=integer("--head-dim"),
            metavar="INTEGER",
            help="Head dimension d_head for the QK-norm logit bound sqrt(d_head).",
        ),
    ] = 128,
    as_json: Json = False,
    as_csv: Csv = False,
) -> None:
    """Number formats (FP32, TF32, BF16, FP16, FP8 E4M3/E5M2, FP4 E2M1, INT8, INT4): range, precision, overflow.

    Example: llm-cost numerics --k 8K --head-dim 64
    """
    from llm_cost.analyses.numerics import numerics as compute
    from llm_cost.report import numerics as view

    result = compute(k, head_dim)
    if as_csv:
        emit_csv(result.formats)
        return
    emit(result, as_json, view.render)


class Zero(str, Enum):
    """ZeRO stages."""

    zero0 = "0"
    zero1 = "1"
    zero2 = "2"
    zero3 = "3"


@app.command()
def train(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    tokens_: Annotated[
        int,
        option(
            "--tokens",
            parse=large_count("--tokens"),
            metavar="COUNT",
            help="Training tokens D; decimal suffixes: 15T = 15 x 10^12.",
        ),
    ],
    gpu: Gpu = "h100",
    gpus: Annotated[
        Optional[int],
        option(
            "--gpus",
            parse=large_count("--gpus"),
            metavar="COUNT",
            help="GPUs training together, for the wall-clock time and ZeRO (default: "
            "none given; or --tp x --pp x --dp).",
        ),
    ] = None,
    mfu: Annotated[
        Optional[float],
        option(
            "--mfu",
            parse=efficiency("--mfu"),
            metavar="FRACTION",
            help="MFU to get the time (0-1 or 40%); or give --gpu-hours.",
        ),
    ] = None,
    gpu_hours: Annotated[
        Optional[float],
        option(
            "--gpu-hours",
            parse=positive("--gpu-hours"),
            metavar="NUMBER",
            help="A GPU-hour budget (1.3M) to get the implied MFU.",
        ),
    ] = None,
    recompute: Annotated[
        Recompute, typer.Option("--recompute", case_sensitive=False, help="Activation recompute.")
    ] = Recompute.NONE,
    dtype: Annotated[
        Dtype, typer.Option("--dtype", case_sensitive=False, help="Compute dtype for the peak.")
    ] = Dtype.BF16,
    power_w: Annotated[
        Optional[float],
        option(
            "--power-w",
            parse=positive("--power-w"),
            metavar="NUMBER",
            help="Power per GPU, W (default: the GPU's TDP).",
        ),
    ] = None,
    pue: Annotated[
        float,
        option(
            "--pue", parse=positive("--pue", 10), metavar="NUMBER", help="Data-centre power usage effectiveness (>= 1)."
        ),
    ] = 1.0,
    grid_kg_per_kwh: Annotated[
        Optional[float],
        option(
            "--grid-kg-per-kwh",
            parse=non_negative("--grid-kg-per-kwh"),
            metavar="NUMBER",
            help="Grid carbon intensity, kg CO2e/kWh.",
        ),
    ] = None,
    usd_per_gpu_hour: Annotated[
        Optional[float],
        option(
            "--usd-per-gpu-hour",
            parse=non_negative("--usd-per-gpu-hour"),
            metavar="NUMBER",
            help="Price of one GPU-hour, USD.",
        ),
    ] = None,
    seq: Annotated[
        int,
        option(
            "--seq",
            parse=tokens("--seq"),
            metavar="TOKENS",
            help="Sequence length (8K = 8,192) for activation memory and the FLOPs with attention.",
        ),
    ] = 8192,
    micro_batch: Annotated[
        int,
        option(
            "--micro-batch",
            parse=integer("--micro-batch"),
            metavar="INTEGER",
            help="Sequences per micro-batch for activation memory.",
        ),
    ] = 1,
    tp: Tp = None,
    pp: Pp = None,
    dp: Dp = None,
    zero: Annotated[
        Zero, typer.Option("--zero", help="ZeRO stage over the data-parallel GPUs (3 ~ FSDP).")
    ] = Zero.zero1,
    sequence_parallel: Annotated[
        bool, typer.Option("--sequence-parallel", help="Megatron sequence parallelism.")
    ] = False,
    as_json: Json = False,
) -> None:
    """Training: 6ND FLOPs, time at an MFU (or the MFU a GPU-hour budget implies), energy, CO2, cost, memory.

    Examples: llm-cost train llama3-8b --tokens 15T --gpu-hours 1.3M;
    llm-cost train llama3-70b --tokens 15T --gpus 2048 --mfu 0.4 --grid-kg-per-kwh 0.4
    """
    from llm_cost.analyses.training import train as train_
    from llm_cost.report import training as view
    from llm_cost.specs.load import load_gpu, load_model

    if pue < 1:
        raise InputError(f"--pue: {pue:g} must be at least 1 (facility power / IT power)")
    spec, g = load_model(model), load_gpu(gpu)
    result = train_(
        spec,
        tokens_,
        g,
        gpus,
        mfu,
        gpu_hours,
        recompute,
        dtype,
        power_w,
        pue,
        grid_kg_per_kwh,
        usd_per_gpu_hour,
        seq,
        micro_batch,
        tp,
        pp,
        dp,
        int(zero.value),
        sequence_parallel,
    )
    emit(result, as_json, view.render, spec.display_name, g.display_name)


def _size(text: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` in pixels -> (height, width)."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX*]\s*(\d+)\s*", text)
    if not m or int(m.group(1)) < 1 or int(m.group(2)) < 1 or max(int(m.group(1)), int(m.group(2))) > 10**6:
        raise InputError(f"--size: {text!r} is not WIDTHxHEIGHT in pixels (e.g. 1920x1080, each 1 to 1,000,000)")
    return int(m.group(2)), int(m.group(1))


Size = Annotated[
    tuple, option("--size", parse=_size, metavar="WxH", help="Size WIDTHxHEIGHT in pixels, e.g. 1920x1080.")
]


@app.command()
def image(
    model: Annotated[str, typer.Argument(help="A vision-language model (qwen2-vl-7b) or its YAML spec.")],
    size: Size,
    decoder: Annotated[
        Optional[str],
        typer.Option(
            "--decoder",
            help="Price the tokens in another language model (e.g. llama3-70b); default: MODEL's own decoder.",
        ),
    ] = None,
    connector: Annotated[
        str, typer.Option("--connector", help="mlp (a token per patch), merge2x2, or resampler:N.")
    ] = "merge2x2",
    weight_flops: WeightFlopsOpt = WeightFlops.GEMM,
    kv_dtype: KvDtype = StorageDtype.BF16,
    as_json: Json = False,
) -> None:
    """What an image costs: tokens, vision-encoder FLOPs and attention share, decoder prefill and KV.

    Examples: llm-cost image qwen2-vl-7b --size 1920x1080; llm-cost image qwen2-vl-7b --size 1024x1024 --decoder llama3-70b
    """
    from llm_cost.analyses.multimodal import image_cost
    from llm_cost.report import multimodal as view
    from llm_cost.specs.load import load_model

    h, w = size
    spec = load_model(model)
    dec = load_model(decoder) if decoder else None
    result = image_cost(spec, h, w, dec, connector, 1, weight_flops, kv_dtype.bits)
    emit(result, as_json, view.render)


@app.command()
def video(
    model: Annotated[str, typer.Argument(help="A vision-language model (qwen2-vl-7b) or its YAML spec.")],
    size: Size,
    seconds: Annotated[
        float, option("--seconds", parse=positive("--seconds", 10**7), metavar="NUMBER", help="Clip length in seconds.")
    ],
    fps: Annotated[
        float, option("--fps", parse=positive("--fps", 1000), metavar="NUMBER", help="Frames sampled per second.")
    ],
    decoder: Annotated[
        Optional[str], typer.Option("--decoder", help="Price the tokens in another language model.")
    ] = None,
    weight_flops: WeightFlopsOpt = WeightFlops.GEMM,
    kv_dtype: KvDtype = StorageDtype.BF16,
    as_json: Json = False,
) -> None:
    """What a video costs: frames grouped by the temporal patch, tokens, encoder FLOPs, decoder KV.

    Example: llm-cost video qwen2-vl-7b --size 1280x720 --seconds 60 --fps 1
    """
    from llm_cost.analyses.multimodal import video_cost
    from llm_cost.report import multimodal as view
    from llm_cost.specs.load import load_model

    h, w = size
    spec = load_model(model)
    dec = load_model(decoder) if decoder else None
    result = video_cost(spec, h, w, seconds, fps, dec, weight_flops, kv_dtype.bits)
    emit(result, as_json, view.render)


@app.command()
def reproduce(
    row: Annotated[
        Optional[list[str]], typer.Option("--row", help="Only these row ids (repeatable), e.g. --row P7.")
    ] = None,
    as_json: Json = False,
) -> None:
    """Recompute every number the seed documents print; exit 0 only when all match.

    Example: llm-cost reproduce --row K2 --row R1
    """
    from llm_cost.analyses.reproduce import check_rows, load_rows
    from llm_cost.report import reproduce as view

    known = {r["id"] for r in load_rows()}
    unknown = [r for r in (row or []) if r not in known]
    if unknown:
        raise InputError(f"--row: unknown row id(s) {', '.join(unknown)}; see `llm-cost reproduce` for the ids")
    result = check_rows(row or None)
    emit(result, as_json, view.render)
    if not all(r.ok for r in result):
        raise SystemExit(1)
