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
from llm_cost.specs.hf.gemma4 import gemma4_vision

__all__ = [
    "qwen2_vision",
    "qwen25_vision",
    "qwen3_vision",
    "siglip_gemma3_vision",
    "llama4_vision",
    "pixtral_vision",
    "moonvit_vision",
    "glm4v_vision",
    "VISION_READERS",
]


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


def qwen2_vision(c: _Config, out: dict[str, Any]):
    """Qwen2VisionTransformerPretrainedModel of ``vision_config`` (transformers
    models/qwen2_vl/modeling_qwen2_vl.py; Qwen2VLVisionConfig defaults for absent keys; legacy
    ``in_chans`` / ``spatial_patch_size`` are synonyms of ``in_channels`` / ``patch_size``)."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import Qwen2Vision

    raw = c.dict("vision_config")
    if raw is None:
        raise c.error("vision_config", "is required for model_type 'qwen2_vl' (the vision tower's shapes)")
    v = _Config(raw, c.file, c.family, c.defaults, c.notes, prefix="vision_config.")
    v.ignore("model_type", "hidden_act", "initializer_range")
    kw = dict(
        depth=v.int("depth", 32),
        embed_dim=v.int("embed_dim", 1280),
        num_heads=v.int("num_heads", 16),
        mlp_ratio=v.int("mlp_ratio", 4),
        in_chans=v.int(v.alias("in_channels", "in_chans"), 3),
        patch_size=v.int(v.alias("patch_size", "spatial_patch_size"), 14),
        spatial_merge_size=v.int("spatial_merge_size", 2),
        temporal_patch_size=v.int("temporal_patch_size", 2),
        hidden_act=v.str("hidden_act", "quick_gelu"),
        out_hidden_size=v.int(
            "hidden_size",
            out["hidden_size"],
            why="absent; the language model's hidden_size, which the merger must output",
        ),
    )
    v.check_unplaced(_VISION_SHAPE_KEYS)
    if kw["out_hidden_size"] != out["hidden_size"]:
        raise v.error(
            "hidden_size",
            f"({kw['out_hidden_size']}) must equal the language model's hidden_size ({out['hidden_size']})",
        )
    try:
        vision = Qwen2Vision.checked(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: vision_config is invalid: {exc.errors()[0]['msg']}") from None
    return vision


def qwen25_vision(c: _Config, out: dict[str, Any]):
    """The Qwen2.5-VL vision tower of ``vision_config`` (transformers
    models/qwen2_5_vl/modeling_qwen2_5_vl.py: RMSNorm, gated MLP; Qwen2_5_VLVisionConfig defaults
    for absent keys)."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import Qwen25Vision

    raw = c.dict("vision_config")
    if raw is None:
        raise c.error("vision_config", "is required for model_type 'qwen2_5_vl' (the vision tower's shapes)")
    v = _Config(raw, c.file, c.family, c.defaults, c.notes, prefix="vision_config.")
    v.ignore(
        "model_type",
        "hidden_act",
        "initializer_range",
        "tokens_per_second",
        "window_size",
        "fullatt_block_indexes",
        "torch_dtype",
        "dtype",
    )
    kw = dict(
        depth=v.int("depth", 32),
        hidden_size=v.int("hidden_size", 3584),
        intermediate_size=v.int("intermediate_size", 3420),
        num_heads=v.int("num_heads", 16),
        in_channels=v.int(v.alias("in_channels", "in_chans"), 3),
        patch_size=v.int(v.alias("patch_size", "spatial_patch_size"), 14),
        spatial_merge_size=v.int("spatial_merge_size", 2),
        temporal_patch_size=v.int("temporal_patch_size", 2),
        out_hidden_size=v.int("out_hidden_size", out["hidden_size"]),
    )
    v.check_unplaced(
        _VISION_SHAPE_KEYS - {"intermediate_size", "out_hidden_size", "fullatt_block_indexes", "window_size"}
    )
    if kw["out_hidden_size"] != out["hidden_size"]:
        raise v.error(
            "out_hidden_size",
            f"({kw['out_hidden_size']}) must equal the language model's hidden_size ({out['hidden_size']})",
        )
    c.ignore("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id", "vision_token_id")
    try:
        vision = Qwen25Vision.checked(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: vision_config is invalid: {exc.errors()[0]['msg']}") from None
    return vision


def siglip_gemma3_vision(c: _Config, out: dict[str, Any]):
    """The SigLIP vision tower of a Gemma 3 wrapper (transformers models/siglip/modeling_siglip.py,
    ``vision_config``; SiglipVisionConfig defaults for absent keys) and Gemma3MultiModalProjector
    (RMSNorm + [e, d] matrix). ``vision_use_head`` true would add SigLIP's attention-pooling head,
    which Gemma 3 does not use: refused."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import SiglipVision

    raw = c.dict("vision_config")
    if raw is None:
        raise c.error(
            "vision_config",
            "is required for model_type 'gemma3' (the SigLIP tower's shapes); "
            "a text-only Gemma 3 config has model_type gemma3_text",
        )
    v = _Config(raw, c.file, c.family, c.defaults, c.notes, prefix="vision_config.")
    v.ignore("model_type", "hidden_act", "layer_norm_eps", "attention_dropout", "torch_dtype", "dtype")
    if v.data.get("vision_use_head"):
        raise v.error("vision_use_head", "= true adds SigLIP's pooling head, which Gemma 3 does not have")
    v.ignore("vision_use_head")
    kw = dict(
        hidden_size=v.int("hidden_size", 768),
        intermediate_size=v.int("intermediate_size", 3072),
        num_hidden_layers=v.int("num_hidden_layers", 12),
        num_attention_heads=v.int("num_attention_heads", 12),
        image_size=v.int("image_size", 224),
        patch_size=v.int("patch_size", 16),
        num_channels=v.int("num_channels", 3),
        mm_tokens_per_image=c.int("mm_tokens_per_image", 256),
    )
    v.check_unplaced(_VISION_SHAPE_KEYS | {"projection_dim", "embed_dim", "depth"})
    c.ignore("boi_token_index", "eoi_token_index", "image_token_index", "initializer_range")
    try:
        vision = SiglipVision.checked(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: vision_config is invalid: {exc.errors()[0]['msg']}") from None
    side = kw["image_size"] // kw["patch_size"]
    tokens = int(round(kw["mm_tokens_per_image"] ** 0.5))
    if tokens * tokens != kw["mm_tokens_per_image"] or side % tokens:
        raise c.error(
            "mm_tokens_per_image",
            f"({kw['mm_tokens_per_image']}) must be a square whose side divides image_size / patch_size ({side})",
        )
    return vision


def llama4_vision(c: _Config):
    """The Llama 4 vision encoder and projector of a llama4 wrapper's ``vision_config``
    (transformers models/llama4/modeling_llama4.py, Llama4VisionModel; Llama4VisionConfig defaults
    for absent keys)."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import Llama4Vision

    raw = c.dict("vision_config")
    if raw is None:
        raise c.error(
            "vision_config",
            "is required for model_type 'llama4' (the vision encoder's shapes); a text-only "
            "config has model_type llama4_text",
        )
    v = _Config(raw, c.file, c.family, c.defaults, c.notes, prefix="vision_config.")
    v.ignore(
        "model_type",
        "hidden_act",
        "norm_eps",
        "attention_dropout",
        "projector_dropout",
        "rope_theta",
        "vision_feature_layer",
        "vision_feature_select_strategy",
        "initializer_range",
        "torch_dtype",
        "dtype",
        "pixel_shuffle_ratio",
        "rope_parameters",
    )
    kw = dict(
        hidden_size=v.int("hidden_size", 768),
        intermediate_size=v.int("intermediate_size", 5632),
        num_hidden_layers=v.int("num_hidden_layers", 34),
        num_attention_heads=v.int("num_attention_heads", 16),
        image_size=v.int("image_size", 448),
        patch_size=v.int("patch_size", 14),
        num_channels=v.int("num_channels", 3),
        projector_input_dim=v.int("projector_input_dim", 4096),
        projector_output_dim=v.int("projector_output_dim", 4096),
        vision_output_dim=v.int("vision_output_dim", 7680),
        multi_modal_projector_bias=v.bool("multi_modal_projector_bias", False),
    )
    v.check_unplaced(_VISION_SHAPE_KEYS)
    c.ignore("boi_token_index", "eoi_token_index", "image_token_index")
    try:
        return Llama4Vision.checked(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: vision_config is invalid: {exc.errors()[0]['msg']}") from None


def pixtral_vision(c: _Config, out: dict[str, Any]):
    """The Pixtral encoder of a mistral3 wrapper's ``vision_config`` (transformers
    models/pixtral/modeling_pixtral.py) and the Mistral3 projector (RMSNorm, 2x2 patch merger,
    linear_1, linear_2; biases only with ``multimodal_projector_bias``)."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import PixtralVision

    raw = c.dict("vision_config")
    if raw is None:
        raise c.error("vision_config", "is required for model_type 'mistral3' (the Pixtral encoder's shapes)")
    v = _Config(raw, c.file, c.family, c.defaults, c.notes, prefix="vision_config.")
    v.ignore(
        "model_type",
        "hidden_act",
        "initializer_range",
        "attention_dropout",
        "rope_theta",
        "rope_parameters",
        "image_size",
        "torch_dtype",
        "dtype",
        "rms_norm_eps",
    )
    heads = v.int("num_attention_heads", 16)
    kw = dict(
        hidden_size=v.int("hidden_size", 1024),
        intermediate_size=v.int("intermediate_size", 4096),
        num_hidden_layers=v.int("num_hidden_layers", 24),
        num_attention_heads=heads,
        head_dim=v.int("head_dim", 64),
        patch_size=v.int("patch_size", 16),
        num_channels=v.int("num_channels", 3),
        spatial_merge_size=c.int("spatial_merge_size", 2),
        multimodal_projector_bias=c.bool("multimodal_projector_bias", False),
    )
    v.check_unplaced(_VISION_SHAPE_KEYS - {"intermediate_size"})
    c.ignore("image_token_index", "projector_hidden_act", "vision_feature_layer", "vision_feature_select_strategy")
    try:
        vision = PixtralVision.checked(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: vision_config is invalid: {exc.errors()[0]['msg']}") from None
    return vision


def moonvit_vision(c: _Config, out: dict[str, Any]):
    """The MoonViT tower and projector of a kimi_k25 wrapper's ``vision_config`` (transformers
    models/kimi_k25/modeling_kimi_k25.py; Kimi_K25VisionConfig defaults for absent keys). The
    checkpoints' remote-code spellings (``vt_hidden_size``, ``vt_num_hidden_layers``,
    ``init_pos_emb_height`` ...) are synonyms of transformers' names; the projector's LayerNorm
    width (``mm_hidden_size``, transformers' ``projection_hidden_size``) must be the tower width,
    and ``text_hidden_size`` the language model's."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import MoonVitVision

    raw = c.dict("vision_config")
    if raw is None:
        raise c.error("vision_config", f"is required for model_type '{c.family}' (the MoonViT tower's shapes)")
    v = _Config(raw, c.file, c.family, c.defaults, c.notes, prefix="vision_config.")
    v.ignore(
        "model_type",
        "hidden_act",
        "projector_hidden_act",
        "projector_ln_eps",
        "merge_type",
        "pos_emb_type",
        "video_attn_type",
        "init_pos_emb_time",
        "pos_emb_time",
        "rope_parameters",
        "_attn_implementation",
        "mm_projector_type",
        "initializer_range",
        "torch_dtype",
        "dtype",
    )
    e = v.int(v.alias("hidden_size", "vt_hidden_size"), 1152)
    kernel = v.int_list("merge_kernel_size", [2, 2], minimum=1)
    if len(kernel) != 2:
        raise v.error("merge_kernel_size", f"must list two sizes (got {kernel!r})")
    kw = dict(
        hidden_size=e,
        intermediate_size=v.int(v.alias("intermediate_size", "vt_intermediate_size"), 4304),
        num_hidden_layers=v.int(v.alias("num_hidden_layers", "vt_num_hidden_layers"), 27),
        num_attention_heads=v.int(v.alias("num_attention_heads", "vt_num_attention_heads"), 16),
        patch_size=v.int("patch_size", 14),
        pos_emb_height=v.int(v.alias("pos_emb_height", "init_pos_emb_height"), 64),
        pos_emb_width=v.int(v.alias("pos_emb_width", "init_pos_emb_width"), 64),
        merge_patches=kernel[0] * kernel[1],
    )
    for key, inner, wanted, what in (
        ("mm_hidden_size", v, e, "the tower's hidden_size"),
        ("projection_hidden_size", c, e, "the tower's hidden_size"),
        ("text_hidden_size", v, out["hidden_size"], "the language model's hidden_size"),
    ):
        if inner.has(key) and inner.int(key) != wanted:
            raise inner.error(key, f"({inner.data[key]}) must equal {what} ({wanted})")
        inner.ignore(key)
    v.check_unplaced(_VISION_SHAPE_KEYS | {"vt_hidden_size", "vt_intermediate_size", "vt_num_hidden_layers"})
    c.ignore(
        "media_placeholder_token_id",
        "image_token_id",
        "video_token_id",
        "vision_start_token_id",
        "vision_end_token_id",
        "projection_layer_norm_eps",
    )
    try:
        return MoonVitVision.checked(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: vision_config is invalid: {exc.errors()[0]['msg']}") from None


def glm4v_vision(c: _Config, out: dict[str, Any]):
    """The GLM-4V vision tower of ``vision_config`` (transformers models/glm4v/modeling_glm4v.py;
    Glm4vMoeVisionConfig defaults for absent keys); ``out_hidden_size`` must be the language
    model's width (the downsample and merger project into it)."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import Glm4vVision

    raw = c.dict("vision_config")
    if raw is None:
        raise c.error("vision_config", f"is required for model_type '{c.family}' (the GLM-4V tower's shapes)")
    v = _Config(raw, c.file, c.family, c.defaults, c.notes, prefix="vision_config.")
    v.ignore(
        "model_type",
        "hidden_act",
        "attention_dropout",
        "initializer_range",
        "rms_norm_eps",
        "rope_parameters",
        "torch_dtype",
        "dtype",
    )
    kw = dict(
        depth=v.int("depth", 24),
        hidden_size=v.int("hidden_size", 1536),
        out_hidden_size=v.int("out_hidden_size", out["hidden_size"]),
        intermediate_size=v.int("intermediate_size", 13696),
        num_heads=v.int("num_heads", 12),
        image_size=v.int("image_size", 336),
        patch_size=v.int("patch_size", 14),
        temporal_patch_size=v.int("temporal_patch_size", 2),
        spatial_merge_size=v.int("spatial_merge_size", 2),
        in_channels=v.int("in_channels", 3),
        attention_bias=v.bool("attention_bias", False),
    )
    v.check_unplaced(_VISION_SHAPE_KEYS - {"intermediate_size", "out_hidden_size"})
    if kw["out_hidden_size"] != out["hidden_size"]:
        raise v.error(
            "out_hidden_size",
            f"({kw['out_hidden_size']}) must equal the language model's hidden_size ({out['hidden_size']})",
        )
    c.ignore(
        "image_token_id",
        "video_token_id",
        "image_start_token_id",
        "image_end_token_id",
        "video_start_token_id",
        "video_end_token_id",
    )
    try:
        return Glm4vVision.checked(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: vision_config is invalid: {exc.errors()[0]['msg']}") from None


#: Vision readers by the name a departures line gives.
VISION_READERS: dict[str, Callable[[_Config, dict[str, Any]], Any]] = {
    "qwen2_vl": qwen2_vision,
    "qwen2_5_vl": qwen25_vision,
    "qwen3_vl": qwen3_vision,
    "qwen3_5": lambda c, out: qwen3_vision(c, out, deepstack=False),
    "pixtral": pixtral_vision,
    "siglip_gemma3": siglip_gemma3_vision,
    "moonvit": moonvit_vision,
    "glm4v": glm4v_vision,
    "gemma4": gemma4_vision,
}
