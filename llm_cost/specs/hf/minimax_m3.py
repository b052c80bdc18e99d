"""config.json -> ModelSpec fields for MiniMax-M3 (``minimax_m3_vl``: MiniMaxM3SparseForConditionalGeneration).

Read from transformers ``src/transformers/models/minimax_m3_vl/modeling_minimax_m3_vl.py`` and
``configuration_minimax_m3_vl.py`` (MiniMaxM3VLTextConfig / MiniMaxM3VLVisionConfig defaults for
absent keys). The language model of ``text_config``:

* GQA (``num_attention_heads`` / ``num_key_value_heads`` of ``head_dim``) without biases, per-head
  Gemma-style q_norm / k_norm (``qk_norm_type`` per_head; MiniMaxM3VLRMSNorm scales by 1 + w: the
  same weights), partial RoPE of ``rotary_dim``, no attention output gate;
* the feed-forward of ``moe_layer_freq``: a dense SwiGLU-OAI MLP of ``dense_intermediate_size`` where
  the flag is 0 (MiniMaxM3VLDenseMLP: a fused gate_up_proj [2 w, d] and down_proj, the weights of a
  gated MLP), else MiniMaxM3VLSparseMoeBlock: the router gate [E, d], the persistent
  e_score_correction_bias [E] buffer (stored, counted; ``use_routing_bias``), E experts of
  ``intermediate_size`` and a shared expert of ``shared_intermediate_size`` x ``n_shared_experts``;
* MiniMax Sparse Attention (``sparse_attention_config``): on the layers of ``sparse_attention_freq``,
  MiniMaxM3VLSparseAttention adds MiniMaxM3VLIndexer (q_proj [d -> H_i D_i], k_proj [d -> D_i],
  RMSNorm q_norm / k_norm of D_i) and each query attends to its ``sparse_topk_blocks`` best blocks of
  ``sparse_block_size`` keys plus ``sparse_init_block`` leading and ``sparse_local_block`` local
  blocks. Modelled when the sparse layers are the MoE layers (as in MiniMax-M3) and the index-value
  path is disabled on every sparse layer (``sparse_disable_index_value``; the indexer then has no
  value projection); otherwise refused, naming the key;
* untied embedding and LM head, the final norm.

The vision side (:class:`~llm_cost.specs.schema.MiniMaxM3Vision`): ``vision_config``'s CLIP-style
tower with 3-D RoPE (``position_embedding_type`` must be rope: a learned position table is not
built), the multi_modal_projector and the patch_merge over ``spatial_merge_size``^2 patches, both of
``projector_hidden_size`` with biases.

The MTP modules (``num_mtp_modules``, ``num_nextn_predict_layers``) are not in the published
safetensors (23,416 tensors of language model, vision tower and projectors) and transformers ignores
``mtp.*`` keys: not counted (a note says so). Reward heads (``num_reward_heads`` above 0) are refused.
"""

from __future__ import annotations

from typing import Any

from llm_cost.core.errors import SpecError
from llm_cost.specs.hf.config import _ABSENT, _common, _Config, _Family, _gqa, _heads

__all__ = ["MINIMAX_M3_FAMILIES"]

_WHY = "absent; transformers MiniMaxM3VLTextConfig default"
_VWHY = "absent; transformers MiniMaxM3VLVisionConfig default"


def _flags(c: _Config, key: str, L: int) -> list[int]:
    """A per-layer 0/1 list of ``L`` entries."""
    raw = c.raw(key)
    if not isinstance(raw, list) or len(raw) != L or any(v not in (0, 1) or isinstance(v, bool) for v in raw):
        raise c.error(key, f"must list {L} flags of 0 or 1, one per layer (got {str(raw)[:60]})")
    return list(raw)


def _moe_flags(c: _Config, L: int) -> list[int]:
    """1 for a MoE layer, 0 for a dense one: ``moe_layer_freq`` (the Hub config) or ``mlp_layer_types``
    (sparse / dense: MiniMaxM3VLTextConfig builds it from moe_layer_freq, and transformers 5 saves
    it); both given must agree; neither: every layer MoE (the class's default)."""
    listed = c.raw("mlp_layer_types")
    flags = _flags(c, "moe_layer_freq", L) if c.has("moe_layer_freq") else None
    if listed is None or listed is _ABSENT:
        return flags if flags is not None else [1] * L
    if not isinstance(listed, list) or len(listed) != L or any(t not in ("dense", "sparse") for t in listed):
        raise c.error("mlp_layer_types", f"must list 'dense' or 'sparse' for each of the {L} layers")
    from_list = [int(t == "sparse") for t in listed]
    if flags is not None and flags != from_list:
        raise c.error("mlp_layer_types", "disagrees with moe_layer_freq")
    return from_list


#: The flat index keys of MiniMaxM3VLTextConfig (transformers 5) and the sparse_attention_config
#: keys of the Hub config they are read from (MiniMaxM3VLTextConfig.__post_init__).
_INDEX_KEYS = {
    "index_n_heads": "sparse_num_index_heads",
    "index_head_dim": "sparse_index_dim",
    "index_block_size": "sparse_block_size",
    "index_topk_blocks": "sparse_topk_blocks",
    "index_local_blocks": "sparse_local_block",
}


def _sparse_layers(c: _Config, sparse: dict[str, Any], s: _Config, L: int) -> list[int]:
    """1 for a layer with the block indexer: ``sparse_attention_config.sparse_attention_freq`` or
    ``layer_types`` (minimax_m3_sparse / full_attention, as transformers 5 saves them); both given
    must agree; neither: no sparse layer."""
    listed = c.raw("layer_types")
    where = _flags(s, "sparse_attention_freq", L) if "sparse_attention_freq" in sparse else None
    if listed is None or listed is _ABSENT:
        return where if where is not None else [0] * L
    names = ("full_attention", "minimax_m3_sparse")
    if not isinstance(listed, list) or len(listed) != L or any(t not in names for t in listed):
        raise c.error("layer_types", f"must list full_attention or minimax_m3_sparse for each of the {L} layers")
    from_list = [names.index(t) for t in listed]
    if where is not None and where != from_list:
        raise c.error("layer_types", "disagrees with sparse_attention_config.sparse_attention_freq")
    return from_list


def _sparse_indexer(c: _Config, L: int, freq: list[int]):
    """MiniMax-M3's block indexer (module docstring) from ``sparse_attention_config`` or from the
    flat ``index_*`` keys and ``layer_types`` of transformers 5 (both given must agree); None when no
    layer is sparse."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import SparseIndexer

    sparse = c.dict("sparse_attention_config") or {}
    c.ignore(*_INDEX_KEYS)
    if not sparse.get("use_sparse_attention", True):
        c.ignore("layer_types")
        return None
    s = _Config(sparse, c.file, c.family, c.defaults, c.notes, prefix="sparse_attention_config.")
    s.ignore("use_sparse_attention", "sparse_score_type")
    where = _sparse_layers(c, sparse, s, L)
    if any(where) and where != freq:
        raise s.error(
            "sparse_attention_freq", "differs from moe_layer_freq: sparse attention off the MoE layers is not modelled"
        )
    if s.has("sparse_disable_index_value") and _flags(s, "sparse_disable_index_value", L) != where:
        raise s.error(
            "sparse_disable_index_value",
            "must equal sparse_attention_freq: an index-value path (MiniMaxM3VLIndexer has none) is not modelled",
        )
    s.ignore("sparse_disable_index_value")
    sizes = {}
    for flat, nested in _INDEX_KEYS.items():
        if nested in sparse and c.has(flat) and sparse[nested] != c.data[flat]:
            raise c.error(
                flat, f"= {c.data[flat]!r} disagrees with sparse_attention_config.{nested} ({sparse[nested]!r})"
            )
        minimum = 0 if flat == "index_local_blocks" else 1
        sizes[flat] = (
            s.int(nested, minimum=minimum) if nested in sparse else c.int(flat, _TEXT_DEFAULTS[flat], _WHY, minimum)
        )
    if not any(where):
        s.check_unplaced(frozenset(s.data))
        return None
    try:
        indexer = SparseIndexer.checked(
            kind="minimax_m3",
            index_n_heads=sizes["index_n_heads"],
            index_head_dim=sizes["index_head_dim"],
            index_topk=sizes["index_topk_blocks"],
            index_block_size=sizes["index_block_size"],
            index_init_blocks=s.int("sparse_init_block", 0, minimum=0),
            index_local_blocks=sizes["index_local_blocks"],
            moe_layers_only=True,
        )
    except ValidationError as exc:
        raise SpecError(f"{c.file}: sparse_attention_config is invalid: {exc.errors()[0]['msg']}") from None
    s.check_unplaced(frozenset(s.data))
    return indexer


#: MiniMaxM3VLTextConfig's defaults of the flat index keys (transformers 5.24.0).
_TEXT_DEFAULTS = {
    "index_n_heads": 4,
    "index_head_dim": 128,
    "index_block_size": 128,
    "index_topk_blocks": 16,
    "index_local_blocks": 1,
}


def _minimax_m3_vl(c: _Config, fam: _Family) -> dict[str, Any]:
    """minimax_m3_vl (module docstring): the language model, its block-sparse attention and the
    vision tower with both projectors."""

    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, head_dim = _heads(c, d, fam)
    hd = head_dim or d // n_q
    _attention_keys(c, out, hd)

    freq = _feed_forward(c, out, L)

    # MiniMax Sparse Attention
    indexer = _sparse_indexer(c, L, freq)
    out["attention"] = _gqa(n_q, n_kv, head_dim, qk_norm=True, qk_norm_width="head", indexer=indexer)
    out["vision"] = _vision(c, out)
    return out


def _attention_keys(c: _Config, out: dict[str, Any], hd: int) -> None:
    """MiniMaxM3VLAttention's keys checked: ``rotary_dim`` against ``partial_rotary_factor`` x
    head_dim (setting the factor when absent), no output gate, per-head q/k norms, no reward heads;
    the keys that change no count ignored, and the unpublished MTP modules noted."""
    if c.has("rotary_dim"):
        rot = c.int("rotary_dim")
        prf = out.get("partial_rotary_factor", 1.0)
        if "partial_rotary_factor" not in c.data:
            out["partial_rotary_factor"] = prf = rot / hd
        if rot != round(prf * hd):
            raise c.error("rotary_dim", f"({rot}) disagrees with partial_rotary_factor x head_dim ({prf:g} x {hd})")
    if c.bool("attention_output_gate", False):
        raise c.error("attention_output_gate", "= true: MiniMaxM3VLAttention has no output gate")
    if not c.bool("use_qk_norm", True):
        raise c.error("use_qk_norm", "= false: MiniMaxM3VLAttention always builds its per-head q_norm and k_norm")
    if c.str("qk_norm_type", "per_head") != "per_head":
        raise c.error("qk_norm_type", "must be per_head: MiniMaxM3VLAttention's norms are per head")
    if c.int("num_reward_heads", 0, minimum=0):
        raise c.error("num_reward_heads", "> 0: reward heads are not modelled")
    c.ignore(
        "use_gemma_norm",
        "hidden_act",
        "swiglu_alpha",
        "swiglu_limit",
        "scoring_func",
        "routed_scaling_factor",
        "rms_norm_eps",
        "router_aux_loss_coef",
        "router_jitter_noise",
        "output_router_logits",
        "initializer_range",
        "attention_dropout",
        "num_mtp_modules",
        "num_nextn_predict_layers",
    )
    mtp = c.data.get("num_mtp_modules") or c.data.get("num_nextn_predict_layers")
    if mtp:
        c.notes.append(
            "the MTP modules (num_mtp_modules) are not in the published safetensors and transformers ignores "
            "mtp.* keys: not counted"
        )


def _feed_forward(c: _Config, out: dict[str, Any], L: int) -> list[int]:
    """The feed-forward schedule in ``out`` (each layer MoE or dense, :func:`_moe_flags`): the
    dense MLP and the MoE with its shared experts; the schedule returned."""
    from llm_cost.specs.schema import MLP, MoE

    freq = _moe_flags(c, L)
    dense = [i for i, f in enumerate(freq) if not f]
    lead = next((i for i, f in enumerate(freq) if f), L)
    if dense:
        out["mlp"] = MLP.checked(
            intermediate_size=c.int("dense_intermediate_size", 12288, _WHY), hidden_act="swigluoai"
        )
    else:
        c.ignore("dense_intermediate_size")
    if len(dense) < L:
        shared = c.int("shared_intermediate_size", 3072, _WHY, minimum=0) * c.int("n_shared_experts", 1, _WHY, 0)
        out["moe"] = MoE.checked(
            num_experts=c.int("num_local_experts", 128, _WHY),
            num_experts_per_tok=c.int("num_experts_per_tok", 4, _WHY),
            moe_intermediate_size=c.int("intermediate_size", 3072, _WHY),
            shared_expert_intermediate_size=shared,
            router_bias=True,  # e_score_correction_bias: a persistent buffer MiniMaxM3VLSparseMoeBlock always registers
            first_k_dense_replace=lead,
            mlp_only_layers=tuple(i for i in dense if i >= lead),
        )
        c.ignore("use_routing_bias")
    else:
        c.ignore("num_local_experts", "num_experts_per_tok", "intermediate_size", "shared_intermediate_size")
        c.ignore("n_shared_experts", "use_routing_bias")
    return freq


def _vision(c: _Config, out: dict[str, Any]):
    """The MiniMax-M3 vision tower of ``vision_config`` and the projectors of the wrapper's
    ``projector_hidden_size`` (module docstring)."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import MiniMaxM3Vision

    raw = c.dict("vision_config")
    if raw is None:
        raise c.error("vision_config", "is required for model_type 'minimax_m3_vl' (the vision tower's shapes)")
    v = _Config(raw, c.file, c.family, c.defaults, c.notes, prefix="vision_config.")
    if v.str("position_embedding_type", "rope") != "rope":
        raise v.error("position_embedding_type", "must be rope: MiniMaxM3VLVisionModel has no position table")
    v.ignore(
        "model_type",
        "hidden_act",
        "layer_norm_eps",
        "attention_dropout",
        "initializer_factor",
        "initializer_range",
        "rope_mode",
        "rope_theta",
        "vocab_size",
        "image_size",
        "vision_segment_max_frames",
        "projection_dim",
        "torch_dtype",
        "dtype",
    )
    temporal, merge = _merge_sizes(c, v)
    if c.has("multimodal_projector_bias") and not c.bool("multimodal_projector_bias"):
        raise c.error("multimodal_projector_bias", "= false: MiniMaxM3VL's projectors always carry biases")
    kw = dict(
        hidden_size=v.int("hidden_size", 1280, _VWHY),
        intermediate_size=v.int("intermediate_size", 5120, _VWHY),
        num_hidden_layers=v.int("num_hidden_layers", 32, _VWHY),
        num_attention_heads=v.int("num_attention_heads", 16, _VWHY),
        num_channels=v.int("num_channels", 3, _VWHY),
        patch_size=v.int("patch_size", 14, _VWHY),
        temporal_patch_size=temporal,
        spatial_merge_size=merge,
        projector_hidden_size=c.int("projector_hidden_size", 6144, "absent; transformers MiniMaxM3VLConfig default"),
    )
    v.check_unplaced()
    c.ignore(
        "multimodal_projector_bias",
        "image_grid_pinpoints",
        "image_seq_length",
        "image_token_index",
        "video_token_index",
        "process_image_mode",
        "projector_hidden_act",
        "vision_feature_layer",
        "vision_feature_select_strategy",
        "auto_map",
        "transformers_version",
    )
    try:
        return MiniMaxM3Vision.checked(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: vision_config is invalid: {exc.errors()[0]['msg']}") from None


def _merge_sizes(c: _Config, v: _Config) -> tuple[int, int]:
    """(temporal patch size, spatial merge size) of the vision tower ``v``: its
    ``img_token_compression_config``'s (patch_merge only; the wrapper's copy must agree), else its own."""
    merge_cfg = v.dict("img_token_compression_config") or {}
    wrapper_merge = c.dict("img_token_compression_config")
    if wrapper_merge is not None and merge_cfg and wrapper_merge != merge_cfg:
        raise c.error("img_token_compression_config", "differs from vision_config.img_token_compression_config")
    c.ignore("img_token_compression_config")
    m = _Config(merge_cfg, c.file, c.family, c.defaults, c.notes, prefix="vision_config.img_token_compression_config.")
    method = m.str("image_token_compression_method", "patch_merge")
    if method != "patch_merge":
        raise m.error("image_token_compression_method", f"must be patch_merge (got {method!r})")
    v.ignore("img_token_compression_config")
    temporal = (
        m.int("temporal_patch_size", 2) if m.has("temporal_patch_size") else v.int("temporal_patch_size", 2, _VWHY)
    )
    merge = m.int("spatial_merge_size", 2) if m.has("spatial_merge_size") else v.int("spatial_merge_size", 2, _VWHY)
    v.ignore("temporal_patch_size", "spatial_merge_size")
    return temporal, merge


_F = _Family
#: model_type -> (mapping, family defaults): merged into :data:`llm_cost.specs.hf.families.FAMILIES`.
MINIMAX_M3_FAMILIES: dict[str, tuple[Any, _Family]] = {
    "minimax_m3_vl": (
        _minimax_m3_vl,
        _F(tie=False, max_pos=524288, rope_theta=5e6, head_dim=128),
    ),
}
