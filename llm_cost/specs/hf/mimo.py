"""config.json -> ModelSpec fields for Xiaomi's MiMo-V2 family (``mimo_v2_flash``: MiMo-V2-Flash;
``mimo_v2``: the text model of the MiMo-V2.5 configs, the same keys).

Everything standard (widths, heads, routed experts, the sigmoid router with its
e_score_correction_bias under ``topk_method: noaux_tc``, the dense first layer, RoPE, FP8 block
quantization) is read by the generic reader (:func:`llm_cost.specs.hf.generic.read_generic`).
The departures, each from transformers 5.x ``src/transformers/models/mimo_v2_flash/
modeling_mimo_v2_flash.py`` (MiMoV2FlashAttention, MiMoV2FlashSparseMoeBlock, MiMoV2FlashConfig)
unless said otherwise:

* the layer schedule is ``hybrid_layer_pattern`` (1 = sliding, 0 = full; MiMoV2FlashConfig turns it
  into ``layer_types``) and the MoE schedule ``moe_layer_freq`` as a per-layer list (1 = MoE);
* value heads are ``v_head_dim`` wide (128) against ``head_dim`` (192) for queries and keys:
  v_proj [d -> n_kv d_v], o_proj [n_q d_v -> d];
* the sliding layers have their own K/V heads, ``swa_num_key_value_heads`` (transformers, which
  strips the ``swa_*`` keys, builds ``2 x num_key_value_heads``: the default here); the other
  ``swa_*`` shapes must equal the full layers' (transformers builds both from one set);
* a learned sink logit per query head on the sliding layers only (``add_swa_attention_sink_bias``
  true, ``add_full_attention_sink_bias`` false, as MiMoV2FlashAttention's ``sinks`` exist only
  when ``is_swa``); sinks on full layers alone are refused;
* no shared expert (``n_shared_experts`` null: MiMoV2FlashSparseMoeBlock deletes it);
* three MTP layers ``model.mtp.layers.{0,1,2}`` that the config does not declare and transformers
  does not load (``_keys_to_ignore_on_load_unexpected``); llama.cpp's convert_hf_to_gguf.py
  MimoV2Model: "MiMo V2-Flash, V2.5 and V2.5-Pro all ship 3 trained MTP layers", each with
  "SWA-style attention dims" (the sliding layers' K/V heads and sinks), a dense MLP, enorm, hnorm,
  eh_proj [2d -> d] and its own norms, without an embedding or head copy.
  ``num_nextn_predict_layers`` overrides the 3 where a config states it.

A config with a ``vision_config`` or ``audio_config`` (MiMo-V2.5's omni checkpoints) is refused,
naming the key: their towers are not modelled."""

from __future__ import annotations

import dataclasses
from typing import Any

from llm_cost.core.types import LayerType
from llm_cost.specs.hf.config import _ABSENT, _Config, _Family
from llm_cost.specs.hf.departures import Departures

__all__ = ["MIMO_FAMILIES", "MIMO_MTP_LAYERS"]

#: The MTP layers a MiMo-V2 checkpoint ships when its config does not say (llama.cpp
#: convert_hf_to_gguf.py MimoV2Model ``_n_nextn``).
MIMO_MTP_LAYERS = 3

_CITE = (
    "transformers models/mimo_v2_flash/modeling_mimo_v2_flash.py (MiMoV2FlashAttention, "
    "MiMoV2FlashSparseMoeBlock); MTP layers: llama.cpp convert_hf_to_gguf.py MimoV2Model"
)
_DEPARTURES = Departures(cite=_CITE, router_bias=True)


def _schedules(c: _Config) -> None:
    """``hybrid_layer_pattern`` -> ``layer_types`` and a per-layer ``moe_layer_freq`` ->
    ``mlp_layer_types``, in the vocabulary the generic reader reads (explicit ``layer_types`` /
    ``mlp_layer_types`` win, as in MiMoV2FlashConfig)."""
    L = c.data.get("num_hidden_layers")
    pattern = c.raw("hybrid_layer_pattern")
    if isinstance(pattern, list) and c.data.get("layer_types") is None:
        if any(p not in (0, 1) or isinstance(p, bool) for p in pattern):
            raise c.error("hybrid_layer_pattern", "must list 0 (full attention) or 1 (sliding) per layer")
        if isinstance(L, int) and len(pattern) != L:
            raise c.error("hybrid_layer_pattern", f"has {len(pattern)} entries but num_hidden_layers is {L}")
        c.data["layer_types"] = [LayerType.SLIDING_ATTENTION.value if p else "full_attention" for p in pattern]
    elif pattern is not None and pattern is not _ABSENT and not isinstance(pattern, list):
        raise c.error("hybrid_layer_pattern", f"must be a list (got {pattern!r})")
    c.ignore("hybrid_block_size")
    freq = c.data.get("moe_layer_freq")
    if isinstance(freq, list):
        c.ignore("moe_layer_freq")
        if c.data.get("mlp_layer_types") is None:
            if any(f not in (0, 1) or isinstance(f, bool) for f in freq):
                raise c.error("moe_layer_freq", "must list 0 (dense) or 1 (MoE) per layer")
            if isinstance(L, int) and len(freq) != L:
                raise c.error("moe_layer_freq", f"has {len(freq)} entries but num_hidden_layers is {L}")
            c.data["mlp_layer_types"] = ["sparse" if f else "dense" for f in freq]
        del c.data["moe_layer_freq"]
    if c.data.get("layer_types") is None:  # MiMoV2FlashConfig: full at layer 0 and every 6th, else sliding
        n = L if isinstance(L, int) else 48
        c.data["layer_types"] = [
            "full_attention" if i == 0 or not (i + 1) % 6 else LayerType.SLIDING_ATTENTION.value for i in range(n)
        ]
        c.defaults.append("layer_types = full at 0 and every 6th layer (absent; MiMoV2FlashConfig)")
    if c.data.get("mlp_layer_types") is None:  # MiMoV2FlashConfig: the first layer dense, the rest MoE
        n = L if isinstance(L, int) else 48
        c.data["mlp_layer_types"] = ["dense"] + ["sparse"] * (n - 1)
        c.defaults.append("mlp_layer_types = dense first, then MoE (absent; MiMoV2FlashConfig)")


def _window_size(c: _Config) -> Any:
    """The previous tokens a sliding layer attends to (the query attends to itself too):
    ``sliding_window_size``, which MiMoV2FlashConfig turns into ``sliding_window`` = size + 1
    (transformers' window counts the query; "the reference SGLang implementation attends to
    sliding_window_size previous tokens plus the query"), else ``sliding_window`` - 1 as
    transformers 5 saves it. ``c.data["sliding_window"]`` is left in transformers' convention."""
    c.ignore("sliding_window_size")
    if not c.has("sliding_window_size"):
        window = c.opt_int("sliding_window", minimum=2)
        return None if window is None else window - 1
    size = c.int("sliding_window_size")
    if c.data.get("sliding_window") not in (None, size, size + 1):
        raise c.error("sliding_window", f"= {c.data['sliding_window']!r} disagrees with sliding_window_size ({size})")
    if c.data.get("sliding_window") == size:
        c.notes.append(
            f"sliding_window = {size + 1}: sliding_window_size {size} previous tokens and the query "
            f"(MiMoV2FlashConfig overrides sliding_window {size})"
        )
    c.data["sliding_window"] = size + 1
    return size


def _same_as(c: _Config, key: str, value: int, full_key: str) -> None:
    """A ``swa_*`` shape that transformers builds from the full layers' key must equal it."""
    if c.has(key) and c.int(key) != value:
        raise c.error(key, f"= {c.data[key]} differs from {full_key} ({value}); MiMoV2FlashAttention builds both alike")
    c.ignore(key)


def _mimo_v2(c: _Config, fam: _Family) -> dict[str, Any]:
    """mimo_v2_flash / mimo_v2 (module docstring): the generic reader's fields, then the
    departures of MiMoV2FlashAttention and the three MTP layers."""
    from llm_cost.specs.hf.generic import read_generic
    from llm_cost.specs.schema import GQAAttention

    c.table_first = True  # transformers' MiMoV2FlashConfig defaults first, as the generic reader has them
    _check_keys(c)
    out = read_generic(c, fam, _DEPARTURES)
    att = out["attention"]
    assert isinstance(att, GQAAttention)
    n_q, n_kv = att.num_attention_heads, att.num_key_value_heads or att.num_attention_heads
    head_dim = att.head_dim or out["hidden_size"] // n_q
    v_head_dim = c.int("v_head_dim", 128)
    _same_as(c, "swa_num_attention_heads", n_q, "num_attention_heads")
    _same_as(c, "swa_head_dim", head_dim, "head_dim")
    _same_as(c, "swa_qk_head_dim", head_dim, "head_dim")
    _same_as(c, "swa_v_head_dim", v_head_dim, "v_head_dim")
    sliding = LayerType.SLIDING_ATTENTION in (out.get("layer_types") or []) or (
        att.sliding_window is not None and "layer_types" not in out
    )
    swa_kv = c.int("swa_num_key_value_heads", 2 * n_kv, why="absent; 2 x num_key_value_heads (MiMoV2FlashAttention)")
    swa_sinks = c.bool("add_swa_attention_sink_bias", True)
    full_sinks = c.bool("add_full_attention_sink_bias", False)
    if full_sinks and not swa_sinks:
        raise c.error("add_full_attention_sink_bias", "= true without sliding-layer sinks is not modelled")
    fields = {f.name: getattr(att, f.name) for f in dataclasses.fields(att)}
    fields.update(
        v_head_dim=None if v_head_dim == head_dim else v_head_dim,
        sliding_num_key_value_heads=swa_kv if sliding and swa_kv != n_kv else None,
        sinks=swa_sinks,
        sink_layers="all" if full_sinks else "sliding",
    )
    out["attention"] = GQAAttention.checked(**fields)
    _with_mtp(c, out, sliding)
    return out


def _check_keys(c: _Config) -> None:
    """MiMo-V2's keys before the generic read: no vision or audio tower, no shared expert, a chunk
    equal to the window, a split or fused q/k/v layout; the keys that change no count ignored."""
    for key in ("vision_config", "audio_config"):
        if c.data.get(key):
            raise c.error(key, "is set: MiMo-V2.5's vision and audio towers are not modelled (text checkpoints only)")
    _schedules(c)
    size = _window_size(c)
    if c.has("attention_chunk_size") and size is not None and c.data["attention_chunk_size"] != size:
        raise c.error(
            "attention_chunk_size",
            f"= {c.data['attention_chunk_size']} differs from the window's {size} previous tokens; "
            "MiMo's chunk is its window",
        )
    c.ignore("attention_chunk_size")
    if c.data.get("n_shared_experts"):
        raise c.error("n_shared_experts", "is set: MiMoV2FlashSparseMoeBlock has no shared expert")
    c.ignore("n_shared_experts", "swa_rope_theta", "attention_value_scale", "layernorm_epsilon", "moe_router_dtype")
    c.ignore("attention_projection_layout")  # q/k/v fused in one tensor (MiMo-V2.5) or split: the same weights
    layout = c.data.get("attention_projection_layout", "split")
    if layout not in ("split", "fused_qkv"):
        raise c.error("attention_projection_layout", f"must be split or fused_qkv (got {layout!r})")


def _with_mtp(c: _Config, out: dict[str, Any], sliding: bool) -> None:
    """``out["mtp"]``: ``num_nextn_predict_layers`` MTP layers, else the
    :data:`MIMO_MTP_LAYERS` the checkpoint ships (noted); dense blocks, sliding when the model's are."""
    from llm_cost.specs.schema import MTP

    if c.has("num_nextn_predict_layers"):
        n_mtp = c.int("num_nextn_predict_layers", minimum=0)
    else:
        n_mtp = MIMO_MTP_LAYERS
        c.notes.append(
            f"{MIMO_MTP_LAYERS} MTP layers (model.mtp.layers.*) counted as the checkpoint ships them; "
            "the config does not declare them"
        )
    out.pop("mtp", None)
    if n_mtp:
        out["mtp"] = MTP.checked(
            num_nextn_predict_layers=n_mtp,
            checkpoint_stores_shared=False,
            block_layer_type="sliding_attention" if sliding else "full_attention",
            block_mlp="dense",
        )


_F = _Family
#: model_type -> (mapping, family defaults): merged into :data:`llm_cost.specs.hf.families.FAMILIES`.
MIMO_FAMILIES: dict[str, tuple[Any, _Family]] = {
    "mimo_v2_flash": (_mimo_v2, _F(tie=False, max_pos=131072, rope_theta=5e6, head_dim=192, partial_rotary=0.334)),
    "mimo_v2": (_mimo_v2, _F(tie=False, max_pos=131072, rope_theta=5e6, head_dim=192, partial_rotary=0.334)),
}
