"""What images and video cost a vision-language model (seed 003 §09).

Qwen2-VL (Wang et al. 2024; transformers ``Qwen2VLImageProcessor.smart_resize``): an image is
resized so both sides are multiples of patch x merge = 28 pixels (each side rounded to the
nearest multiple, then scaled into [min_pixels, max_pixels]); the ViT cuts it into 14 x 14
patches (a still image fills one temporal patch of 2 frames), and the 2 x 2 merger turns 4
patches into one decoder token. For the sizes seed 003 prints, this equals its
ceil(H/28) x ceil(W/28): 336^2 -> 144, 1024^2 -> 1369, 1920x1080 -> 2691.

Costs of one image:

* encoder, over n_p patches: 2 x N_blocks x n_p for the blocks' weights (seed 003's
  2 N_vit n_p, N_vit = the ViT blocks' parameters) + 4 L_vit n_p^2 d_vit for full bidirectional
  attention within the image, plus the patch embedding and the merger (listed apart);
* decoder: the image tokens are prefilled like text (weight FLOPs per token under a stated
  convention, plus causal attention among them) and stay in the KV cache:
  tokens x 2 L n_kv d_head x bytes, against the encoder output tokens x d_model x bytes; the
  ratio 2 L n_kv d_head / d_model is the model's (seed 003: 20 for Llama-3-70B).
"""

from __future__ import annotations

import math
from dataclasses import field
from fractions import Fraction

from llm_cost.core.choices import Logits, WeightFlops
from llm_cost.core.errors import InputError
from llm_cost.core.limits import MAX_RESAMPLER_TOKENS
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Part, TensorGroup
from llm_cost.model.kv import kv_bytes, kv_bytes_per_token
from llm_cost.model.structure import build
from llm_cost.specs.files import shown
from llm_cost.specs.schema import ModelSpec, Qwen2Vision
from llm_cost.workload.flops import forward_flops, weight_flops_params

__all__ = ["smart_resize", "VisionCost", "ImageResult", "image_cost", "video_cost"]

#: Qwen2-VL image processor defaults (preprocessor_config.json of Qwen/Qwen2-VL-7B-Instruct).
MIN_PIXELS = 56 * 56
MAX_PIXELS = 28 * 28 * 16384


def smart_resize(
    height: int, width: int, factor: int = 28, min_pixels: int = MIN_PIXELS, max_pixels: int = MAX_PIXELS
) -> tuple[int, int]:
    """Qwen2-VL's resize: both sides to multiples of ``factor``, total pixels within
    [min_pixels, max_pixels], aspect ratio kept (transformers ``smart_resize``)."""
    if max(height, width) / min(height, width) > 200:
        raise InputError(
            f"width and height: aspect ratio {max(height, width) / min(height, width):.0f} exceeds 200, "
            "which Qwen2-VL's processor rejects",
            fields=("width", "height"),
        )
    h = max(factor, round(height / factor) * factor)
    w = max(factor, round(width / factor) * factor)
    if h * w > max_pixels:
        beta = math.sqrt(height * width / max_pixels)
        h = max(factor, math.floor(height / beta / factor) * factor)
        w = max(factor, math.floor(width / beta / factor) * factor)
    elif h * w < min_pixels:
        beta = math.sqrt(min_pixels / (height * width))
        h = math.ceil(height * beta / factor) * factor
        w = math.ceil(width * beta / factor) * factor
    return h, w


@record
class VisionCost:
    """The vision encoder's work on one image (or one temporal group of a video)."""

    resized_height: int
    resized_width: int
    patches: int  # n_p per temporal group
    temporal_groups: int
    tokens: int  # decoder tokens after the connector
    block_flops: float  # 2 N_blocks n_p (weights of the ViT blocks)
    attention_flops: float  # 4 L n_p^2 d (full attention within each group)
    patch_embed_flops: float
    merger_flops: float
    total_flops: float
    attention_share: float  # of block + attention FLOPs, as seed 003 quotes
    blocks_with_attention_flops: float  # block_flops + attention_flops
    embed_and_merger_flops: float  # patch_embed_flops + merger_flops


@record
class ImageResult(Result):
    """An image's (or a video's) tokens, encoder FLOPs and what they cost the decoder."""

    model: str
    decoder: str
    connector: str
    height: int
    width: int
    frames: int
    vision: VisionCost
    weight_convention: WeightFlops
    decoder_weight_flops: float  # block GEMMs over the image tokens (gemm) or 2 x N x tokens (documents)
    decoder_attention_flops: float  # causal attention among the image tokens
    decoder_prefill_flops: float
    kv_bytes: int | Fraction
    encoder_output_bytes: int | float
    kv_to_encoder_output: float
    conventions: list[Note] = field(default_factory=list)


def _connector_tokens(connector: str, patches: int, merge: int) -> int:
    if connector == "merge2x2":
        return patches // (merge * merge)
    if connector == "mlp":
        return patches
    if connector.startswith("resampler:"):
        count = connector.split(":", 1)[1].strip()
        if not (count.isascii() and count.isdigit()) or len(count) > 7 or not 1 <= int(count) <= MAX_RESAMPLER_TOKENS:
            raise InputError(
                f"connector: {shown(connector, 40)!r} needs a token count from 1 to "
                f"{MAX_RESAMPLER_TOKENS:,}, e.g. resampler:64",
                fields=("connector",),
            )
        return int(count)
    raise InputError(f"connector: {connector!r} is not one of: mlp, merge2x2, resampler:N", fields=("connector",))


def _vision(spec: ModelSpec, height: int, width: int, frames: int, connector: str) -> VisionCost:
    v = spec.vision
    if v is None:
        raise InputError(
            f"{spec.name} has no vision tower; give a vision-language model (e.g. qwen2-vl-7b), and decoder "
            "to price its image tokens in another language model",
            fields=("decoder",),
        )
    if not isinstance(v, Qwen2Vision):
        raise InputError(
            f"{spec.name}: image costs are modelled for the Qwen2-VL tower only; its {v.title} vision "
            "tower is counted by params but its image tokens and FLOPs are not modelled yet"
        )
    factor = v.patch_size * v.spatial_merge_size
    h, w = smart_resize(height, width, factor)
    patches = (h // v.patch_size) * (w // v.patch_size)
    groups = max(1, math.ceil(frames / v.temporal_patch_size))
    tokens = _connector_tokens(connector, patches, v.spatial_merge_size) * groups
    s = build(spec)
    block_params = sum(t.total for t in s.tensors_of(Part.VISION) if t.group == TensorGroup.VISION_BLOCKS)
    embed = sum(t.total for t in s.tensors_of(Part.VISION) if t.group == TensorGroup.VISION_PATCH_EMBED)
    merger = sum(t.total for t in s.tensors_of(Part.VISION) if t.group == TensorGroup.VISION_MERGER)
    block_flops = 2.0 * block_params * patches * groups
    attention = 4.0 * v.depth * patches**2 * v.embed_dim * groups
    embed_flops = 2.0 * embed * patches * groups
    merger_flops = 2.0 * merger * patches * groups / v.spatial_merge_size**2
    total = block_flops + attention + embed_flops + merger_flops
    return VisionCost(
        h,
        w,
        patches,
        groups,
        tokens,
        block_flops,
        attention,
        embed_flops,
        merger_flops,
        total,
        attention / (block_flops + attention),
        block_flops + attention,
        embed_flops + merger_flops,
    )


def _image_weight_flops(dec: ModelSpec, tokens: int, convention: WeightFlops, linear_flops: int) -> int:
    """Decoder weight FLOPs of ``tokens`` image tokens. Under ``gemm`` (the default) they are the
    prefill step's block GEMMs: image tokens sit inside the prompt, so the LM head, which runs on
    the last (text) position, costs them nothing. ``non_embedding`` and ``total`` keep the
    documents' "2 x N per token" (seed 003 §09), which counts the LM head on every token."""
    if convention == WeightFlops.GEMM:
        return linear_flops
    return 2 * weight_flops_params(build(dec), convention) * tokens


def image_cost(
    spec: ModelSpec,
    height: int,
    width: int,
    decoder: ModelSpec | None = None,
    connector: str = "merge2x2",
    frames: int = 1,
    weight_convention: WeightFlops = WeightFlops.GEMM,
    kv_bits: int = 16,
) -> ImageResult:
    """Tokens, encoder FLOPs and decoder cost of one image (``frames`` > 1: a video clip)."""
    if height < 1 or width < 1:
        raise InputError(
            f"width and height: {width}x{height} must be positive pixel counts, e.g. 1920x1080",
            fields=("width", "height"),
        )
    dec = decoder or spec
    vision = _vision(spec, height, width, frames, connector)
    n = vision.tokens
    forward = forward_flops(dec, n, logits=Logits.LAST)
    weight = _image_weight_flops(dec, n, weight_convention, forward.linear_flops)
    attention = forward.attention_flops
    kv = kv_bytes(dec, n, kv_bits)
    out = n * dec.hidden_size * kv_bits // 8
    conventions = [
        note("image.resize", connector="2x2 merge" if connector == "merge2x2" else connector),
        note("image.encoder_flops"),
        note(f"image.decoder_prefill.{weight_convention}"),
        note("image.bits", kv_bits=kv_bits),
    ] + dec.context_note([n])
    return ImageResult(
        spec.name,
        dec.name,
        connector,
        height,
        width,
        frames,
        vision,
        weight_convention,
        weight,
        attention,
        weight + attention,
        kv,
        out,
        float(kv_bytes_per_token(dec, kv_bits)) / (dec.hidden_size * kv_bits / 8),
        conventions,
    )


def video_cost(
    spec: ModelSpec,
    height: int,
    width: int,
    seconds: float,
    fps: float,
    decoder: ModelSpec | None = None,
    weight_convention: WeightFlops = WeightFlops.GEMM,
    kv_bits: int = 16,
) -> ImageResult:
    """A clip of ``seconds`` at ``fps``: frames sampled at t = 0, 1/fps, 2/fps, ... within it,
    ceil(seconds x fps) (0.5 s at 1 fps: the first frame; 2.5 s: three), grouped by the temporal
    patch (2 for Qwen2-VL)."""
    frames = math.ceil(seconds * fps - 1e-9)
    if frames < 1:
        raise InputError(
            f"seconds x fps = {seconds * fps:g} frames; a video needs at least one frame", fields=("seconds", "fps")
        )
    return image_cost(spec, height, width, decoder, "merge2x2", frames, weight_convention, kv_bits)
