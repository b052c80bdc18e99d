"""The API's questions about what an input costs a vision-language model: an image or a video
(``llm-cost image``, ``video``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

from llm_cost.api import checks, choices
from llm_cost.api.model import ModelLike, load_model
from llm_cost.core.choices import WeightFlops
from llm_cost.core.limits import MAX_PIXELS_PER_SIDE

if TYPE_CHECKING:
    from llm_cost.analyses.multimodal import ImageResult
    from llm_cost.api.requests import KvDtypeArg

__all__ = ["image", "video", "MAX_PIXELS_PER_SIDE"]


def _size(width: Any, height: Any) -> tuple[int, int]:
    """(height, width) in pixels, each from 1 to :data:`MAX_PIXELS_PER_SIDE`."""
    return (
        checks.count(height, "height", 1, MAX_PIXELS_PER_SIDE),
        checks.count(width, "width", 1, MAX_PIXELS_PER_SIDE),
    )


def _decoder(decoder: Any) -> Any:
    """The language model the tokens are priced in, or None (the model's own decoder)."""
    from llm_cost.core.errors import InputError

    if decoder is None:
        return None
    if not isinstance(decoder, str):
        raise InputError(f"decoder: {decoder!r} is not a model name or path", fields=("decoder",))
    return load_model(decoder)


def image(
    model: ModelLike,
    width: int,
    height: int,
    *,
    decoder: Optional[ModelLike] = None,
    connector: str = "merge2x2",
    weight_flops: Union[WeightFlops, str] = WeightFlops.GEMM,
    kv_dtype: Optional[KvDtypeArg] = None,
) -> ImageResult:
    """What a ``width`` x ``height`` image costs (``llm-cost image``): its tokens, the vision
    encoder's FLOPs and attention share, the decoder's prefill FLOPs and KV bytes, in ``model``'s
    own decoder or in ``decoder``; ``connector`` ``mlp`` (a token per patch), ``merge2x2`` or
    ``resampler:N``."""
    from llm_cost.analyses.multimodal import image_cost

    h, w = _size(width, height)
    convention = checks.choice(weight_flops, WeightFlops, "weight_flops")
    spec, dec = load_model(model), _decoder(decoder)
    return image_cost(spec, h, w, dec, str(connector), 1, convention, choices.kv_dtype_of(kv_dtype).bits)


def video(
    model: ModelLike,
    width: int,
    height: int,
    seconds: float,
    fps: float,
    *,
    decoder: Optional[ModelLike] = None,
    weight_flops: Union[WeightFlops, str] = WeightFlops.GEMM,
    kv_dtype: Optional[KvDtypeArg] = None,
) -> ImageResult:
    """What a video of ``seconds`` sampled at ``fps`` frames per second costs (``llm-cost
    video``): frames grouped by the temporal patch, tokens, encoder FLOPs and decoder KV."""
    from llm_cost.analyses.multimodal import video_cost

    h, w = _size(width, height)
    seconds = checks.number(seconds, "seconds", maximum=10**7)
    fps = checks.number(fps, "fps", maximum=1000)
    convention = checks.choice(weight_flops, WeightFlops, "weight_flops")
    spec, dec = load_model(model), _decoder(decoder)
    return video_cost(spec, h, w, seconds, fps, dec, convention, choices.kv_dtype_of(kv_dtype).bits)
