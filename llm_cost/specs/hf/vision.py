"""Vision towers of multimodal wrappers: a config's ``vision_config`` -> the spec's ``vision``.

Each reader takes the wrapper config being read and the language model's fields read so far,
reads the tower's keys (its transformers configuration class's defaults for absent ones) and
returns the tower's spec; :data:`VISION_READERS` names them for the generic reader's departures
table (:mod:`llm_cost.specs.hf.generic`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llm_cost.core.errors import SpecError
from llm_cost.specs.hf.config import _VISION_SHAPE_KEYS, _Config

__all__ = ["qwen3_vision", "VISION_READERS"]


def qwen3_vision(c: _Config, out: dict[str, Any], deepstack: bool = True):
    """The Qwen3-VL vision tower of ``vision_config`` (transformers
    models/qwen3_vl/modeling_qwen3_vl.py, Qwen3VLVisionModel: patch embedding, learned position
    embedding, blocks, a merger) with one DeepStack merger per ``deepstack_visual_indexes`` entry;
    ``deepstack`` False: Qwen3.5's tower (models/qwen3_5/modeling_qwen3_5.py, Qwen3_5VisionModel
    deletes the DeepStack mergers)."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import Qwen3Vision

    raw = c.dict("vision_config")
    if raw is None:
        raise c.error("vision_config", f"is required for model_type '{c.family}' (the vision tower's shapes)")
    v = _Config(raw, c.file, c.family, c.defaults, c.notes, prefix="vision_config.")
    v.ignore("model_type", "hidden_act", "initializer_range", "torch_dtype", "dtype")
    if deepstack:
        mergers = len(v.int_list("deepstack_visual_indexes", [8, 16, 24]))
    else:
        if v.data.get("deepstack_visual_indexes"):
            raise v.error("deepstack_visual_indexes", f"is set, but model_type '{c.family}' has no DeepStack mergers")
        v.ignore("deepstack_visual_indexes")
        mergers = 0
    kw = dict(
        depth=v.int("depth", 27),
        hidden_size=v.int("hidden_size", 1152),
        intermediate_size=v.int("intermediate_size", 4304),
        num_heads=v.int("num_heads", 16),
        in_channels=v.int("in_channels", 3),
        patch_size=v.int("patch_size", 16),
        spatial_merge_size=v.int("spatial_merge_size", 2),
        temporal_patch_size=v.int("temporal_patch_size", 2),
        out_hidden_size=v.int("out_hidden_size", out["hidden_size"]),
        num_position_embeddings=v.int("num_position_embeddings", 2304),
        deepstack_mergers=mergers,
    )
    v.check_unplaced(
        _VISION_SHAPE_KEYS
        - {"intermediate_size", "out_hidden_size", "num_position_embeddings", "deepstack_visual_indexes"}
    )
    if kw["out_hidden_size"] != out["hidden_size"]:
        raise v.error(
            "out_hidden_size",
            f"({kw['out_hidden_size']}) must equal the language model's hidden_size ({out['hidden_size']})",
        )
    c.ignore("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")
    try:
        return Qwen3Vision.checked(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: vision_config is invalid: {exc.errors()[0]['msg']}") from None


#: Vision readers by the name a departures line gives.
VISION_READERS: dict[str, Callable[[_Config, dict[str, Any]], Any]] = {
    "qwen3_vl": qwen3_vision,
    "qwen3_5": lambda c, out: qwen3_vision(c, out, deepstack=False),
}
