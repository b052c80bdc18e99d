"""Commands about what an input costs a vision-language model: image, video."""

from __future__ import annotations

import re
from typing import Annotated, Optional

import typer

from llm_cost.cli.options import Json, KvDtype, option, positive
from llm_cost.cli.program import app, emit
from llm_cost.cli.step_options import WeightFlopsOpt
from llm_cost.core.choices import WeightFlops
from llm_cost.core.errors import InputError
from llm_cost.core.types import StorageDtype


def _size(text: str) -> tuple[int, int]:
    """``WIDTHxHEIGHT`` in pixels -> (width, height)."""
    m = re.fullmatch(r"\s*(\d{1,20})\s*[xX*]\s*(\d{1,20})\s*", text)
    if not m:
        raise InputError(f"--size: {text!r} is not WIDTHxHEIGHT in pixels (e.g. 1920x1080)")
    return int(m.group(1)), int(m.group(2))


Size = Annotated[
    tuple, option("--size", parse=_size, metavar="WxH", help="Size WIDTHxHEIGHT in pixels, e.g. 1920x1080.")
]
VisionModel = Annotated[str, typer.Argument(help="A vision-language model (qwen2-vl-7b) or its YAML spec.")]
Decoder = Annotated[
    Optional[str],
    typer.Option(
        "--decoder", help="Price the tokens in another language model (e.g. llama3-70b); default: MODEL's own decoder."
    ),
]
Connector = Annotated[str, typer.Option("--connector", help="mlp (a token per patch), merge2x2, or resampler:N.")]
Seconds = Annotated[
    float, option("--seconds", parse=positive("--seconds"), metavar="NUMBER", help="Clip length in seconds.")
]
Fps = Annotated[float, option("--fps", parse=positive("--fps"), metavar="NUMBER", help="Frames sampled per second.")]


@app.command()
def image(
    model: VisionModel,
    size: Size,
    decoder: Decoder = None,
    connector: Connector = "merge2x2",
    weight_flops: WeightFlopsOpt = WeightFlops.GEMM,
    kv_dtype: KvDtype = StorageDtype.BF16,
    as_json: Json = False,
) -> None:
    """What an image costs: tokens, vision-encoder FLOPs and attention share, decoder prefill and KV.

    Examples: llm-cost image qwen2-vl-7b --size 1920x1080; llm-cost image qwen2-vl-7b --size 1024x1024 --decoder llama3-70b
    """
    from llm_cost import api
    from llm_cost.report import multimodal as view

    width, height = size
    result = api.image(
        model, width, height, decoder=decoder, connector=connector, weight_flops=weight_flops, kv_dtype=kv_dtype
    )
    emit(result, as_json, view.render)


@app.command()
def video(
    model: VisionModel,
    size: Size,
    seconds: Seconds,
    fps: Fps,
    decoder: Decoder = None,
    weight_flops: WeightFlopsOpt = WeightFlops.GEMM,
    kv_dtype: KvDtype = StorageDtype.BF16,
    as_json: Json = False,
) -> None:
    """What a video costs: frames grouped by the temporal patch, tokens, encoder FLOPs, decoder KV.

    Example: llm-cost video qwen2-vl-7b --size 1280x720 --seconds 60 --fps 1
    """
    from llm_cost import api
    from llm_cost.report import multimodal as view

    width, height = size
    result = api.video(
        model, width, height, seconds, fps, decoder=decoder, weight_flops=weight_flops, kv_dtype=kv_dtype
    )
    emit(result, as_json, view.render_video)
