"""Gemma 4 (``gemma4``, ``gemma4_text``): where its modeling file departs from the vocabulary.

Read from transformers ``models/gemma4/modeling_gemma4.py`` and ``configuration_gemma4.py``
(transformers 5.24.0). Gemma 3's block (four RMSNorms, per-head q/k norms, GeGLU, sliding layers
with one full layer in six) with:

* global geometry: the full-attention layers have heads of ``global_head_dim`` (absent: 512,
  Gemma4TextConfig.__post_init__ ``kwargs.pop("global_head_dim", 512)``) and, with
  ``attention_k_eq_v``, ``num_global_key_value_heads`` K/V heads and no v_proj (V is k_proj's
  output: Gemma4TextAttention ``use_alternative_attention``); v_norm has no weights;
* a stored one-element ``layer_scalar`` per block (Gemma4TextDecoderLayer ``register_buffer``,
  persistent: in the checkpoint);
* the last layer is always full attention (Gemma4TextConfig.__post_init__ forces it);
* the MoE block of ``enable_moe_block`` (Gemma 4 26B-A4B): every layer keeps its dense MLP and adds
  Gemma4TextRouter (proj [E, d], scale [d], per_expert_scale [E]; its norm has no scale),
  Gemma4TextExperts (gate_up_proj [E, 2 w, d], down_proj [E, d, w] of ``moe_intermediate_size`` w,
  ``top_k_experts`` per token) and three RMSNorms (post_feedforward_layernorm_1 / _2,
  pre_feedforward_layernorm_2); the dense MLP is the MoE's always-on shared expert (same tensors);
* the Gemma 4 vision encoder and embedder (:class:`~llm_cost.specs.schema.Gemma4Vision`).

* per-layer embeddings (``hidden_size_per_layer_input`` p above 0; transformers' default is 256):
  Gemma4TextModel's embed_tokens_per_layer [vocab_size_per_layer_input, L p], per_layer_model_projection
  [d -> L p] and per_layer_projection_norm [p], and in each block per_layer_input_gate [d -> p],
  per_layer_projection [p -> d] and post_per_layer_input_norm [d] (Gemma 4 E2B/E4B);
* KV sharing: the last ``num_kv_shared_layers`` layers reuse the K/V of the last earlier layer of
  their type (no k_proj, v_proj or k_norm; nothing cached), and with ``use_double_wide_mlp`` their
  MLP is twice as wide (Gemma4TextMLP).

* the Gemma 4 audio encoder and embedder of ``audio_config`` (:class:`~llm_cost.specs.schema.Gemma4Audio`,
  the wrapper only: Gemma4ForCausalLM builds no audio tower). Its parameters and weight memory are
  counted; what an audio clip costs (its soft tokens, the encoder's FLOPs) is not modelled, as for
  every tower but Qwen2-VL's.

Google's released E2B / E4B safetensors (google/gemma-4-E2B-it, -E4B-it) also serialize the
KV-shared layers' k_proj, v_proj and k_norm, which transformers drops on load
(Gemma4TextModel ``_keys_to_ignore_on_load_unexpected``): they are not counted (a note says so).

Not modelled, refused naming the key: fully bidirectional attention (``use_bidirectional_attention``
"all", which changes the window).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Optional

from llm_cost.core.errors import SpecError
from llm_cost.core.types import LayerType
from llm_cost.specs.files import shown
from llm_cost.specs.hf.config import _Config

__all__ = ["gemma4_blocks", "gemma4_vision", "gemma4_audio", "refuse_unmodelled", "GEMMA4_EXTRA_KEYS"]

#: Keys Gemma4TextConfig reads from its kwargs rather than declaring as fields, and the vocabulary's
#: spelling of top_k_experts that :func:`refuse_unmodelled` writes (a config's own is refused).
GEMMA4_EXTRA_KEYS = ("global_head_dim", "num_global_key_value_heads", "num_experts_per_tok")

_CITE = "transformers models/gemma4/modeling_gemma4.py"


def refuse_unmodelled(c: _Config) -> None:
    """SpecError naming the key for a Gemma 4 block this reading does not model (module docstring),
    checked before anything is read: fully bidirectional attention.
    With ``enable_moe_block`` the vocabulary reads ``top_k_experts`` as the top-k; without it the
    expert keys are dropped (no router or experts are built)."""
    if c.bool("enable_moe_block", False):
        # the vocabulary's spelling of the top-k; the dense MLP beside the experts is placed in gemma4_blocks
        if "num_experts_per_tok" in c.data or "experts_per_token" in c.data:
            raise c.error("num_experts_per_tok", "is not a Gemma4TextConfig key (top_k_experts is)")
        c.data["num_experts_per_tok"] = c.data.get("top_k_experts")
        c.ignore("top_k_experts")
    else:  # Gemma4TextDecoderLayer builds no router or experts without enable_moe_block
        for key in ("num_experts", "top_k_experts", "moe_intermediate_size"):
            if c.data.get(key) is not None:
                c.notes.append(f"{key} is unused: enable_moe_block is false")
            c.data.pop(key, None)
    if c.data.get("use_bidirectional_attention") == "all":
        raise c.error(
            "use_bidirectional_attention",
            "= 'all': bidirectional attention (its window becomes sliding_window // 2 + 1) is not modelled",
        )


def gemma4_blocks(c: _Config, out: dict[str, Any]) -> None:
    """The Gemma 4 departures of the fields :func:`~llm_cost.specs.hf.generic.read_generic` read
    (see the module docstring; :func:`refuse_unmodelled` has run first): the full-attention layers'
    geometry, the stored layer scalars, the forced full last layer; the wrapper's audio tower."""
    if c.family == "gemma4":
        audio = gemma4_audio(c, out)
        if audio is not None:
            out["audio"] = audio
    c.ignore("audio_config")
    ple = c.int("hidden_size_per_layer_input", 256, minimum=0) if c.known("hidden_size_per_layer_input") else 0
    if ple:  # Gemma4TextModel's per-layer embeddings
        out["per_layer_input_size"] = ple
        out["per_layer_vocab_size"] = c.int("vocab_size_per_layer_input", 262_144)
    else:
        c.ignore("vocab_size_per_layer_input")
    shared = c.int("num_kv_shared_layers", 0, minimum=0) if c.known("num_kv_shared_layers") else 0
    if shared:
        out["num_kv_shared_layers"] = shared
        c.notes.append(
            f"the {shared} KV-shared layers have no k_proj, v_proj or k_norm of their own (Gemma4TextAttention); "
            "Google's released safetensors still store them, and transformers ignores them on load "
            "(_keys_to_ignore_on_load_unexpected): not counted"
        )
        # Gemma4TextMLP: only the KV-shared layers double their MLP
        out["double_wide_shared_mlp"] = bool(c.bool("use_double_wide_mlp", False))
    else:
        c.ignore("use_double_wide_mlp")
    c.ignore("enable_moe_block", "top_k_experts", "moe_intermediate_size", "expert_intermediate_size")
    moe = out.get("moe")
    if moe is not None:  # Gemma4TextDecoderLayer with enable_moe_block: the dense MLP runs beside the experts
        if out.get("mlp") is not None:
            raise c.error("enable_moe_block", "with dense-only layers: every Gemma 4 layer has the MoE block")
        width = c.int("intermediate_size")
        c.notes[:] = [n for n in c.notes if n != "intermediate_size is unused: every layer is MoE"]
        out["moe"] = dataclasses.replace(moe, shared_expert_intermediate_size=width, router_scales=True, extra_norms=3)
        c.notes.append(
            f"the dense MLP (gate/up/down of intermediate_size {width}) beside the experts is counted as a "
            "shared expert: the same tensors, run by every token"
        )
    c.ignore("use_bidirectional_attention", "final_logit_softcapping")
    att = out["attention"]
    L = out["num_hidden_layers"]
    types = out.get("layer_types") or [LayerType.SLIDING_ATTENTION] * L
    if types[-1] != LayerType.FULL_ATTENTION:
        types = [*types[:-1], LayerType.FULL_ATTENTION]
        c.notes.append("the last layer is full attention (Gemma4TextConfig forces it)")
    k_eq_v = bool(c.bool("attention_k_eq_v", False))
    head_dim, global_kv = _global_geometry(c, types, k_eq_v)
    out["attention"] = dataclasses.replace(
        att, global_head_dim=head_dim, global_num_key_value_heads=global_kv, global_k_eq_v=k_eq_v
    )
    out["layer_types"] = types
    out["layer_scalar"] = True
    c.notes.append(
        "each block's layer_scalar [1] (and a standardizing vision tower's std_bias / std_scale) is a persistent "
        "buffer stored in the checkpoint: counted with its tensors"
    )


def _global_geometry(c: _Config, types: list[LayerType], k_eq_v: bool) -> tuple[int, Optional[int]]:
    """(head width, K/V heads or None) of the full-attention layers: ``global_head_dim`` (absent:
    512) and, with ``attention_k_eq_v``, ``num_global_key_value_heads`` (transformers 4 and the Hub
    configs), or the ``per_layer_config`` overrides Gemma4TextConfig.__post_init__ builds from them
    (transformers 5 saves those instead: ``{"05": {"head_dim": 512, "num_key_value_heads": 2}, ...}``
    on every full-attention layer). Both given must agree; overrides on other layers, of other
    keys or unequal across layers are refused, naming per_layer_config."""
    overrides = c.dict("per_layer_config")
    if overrides is None:
        global_kv = c.opt_int("num_global_key_value_heads") if k_eq_v else None
        c.ignore("num_global_key_value_heads")  # read only with attention_k_eq_v (Gemma4TextConfig)
        return c.int(
            "global_head_dim", 512, why="absent; Gemma4TextConfig kwargs.pop('global_head_dim', 512)"
        ), global_kv
    full = [i for i, t in enumerate(types) if t == LayerType.FULL_ATTENTION]
    try:
        layers = sorted(int(k) for k in overrides)
    except ValueError:
        raise c.error("per_layer_config", "must be keyed by layer numbers") from None
    values = {json.dumps(v, sort_keys=True) for v in overrides.values()}
    one: Any = next(iter(overrides.values()), {})
    if (
        layers != full
        or len(values) != 1
        or not isinstance(one, dict)
        or not set(one) <= {"head_dim", "num_key_value_heads"}
    ):
        raise c.error(
            "per_layer_config",
            f"overrides layers {shown(str(layers), 40)}; only one head_dim / num_key_value_heads override on each "
            f"full-attention layer ({shown(str(full), 40)}) is modelled",
        )
    sub = _Config(one, c.file, c.family, c.defaults, c.notes, prefix=f"per_layer_config.{next(iter(overrides))}.")
    head_dim = sub.int("head_dim", 512, why="absent; Gemma4TextConfig's global_head_dim default")
    global_kv = sub.opt_int("num_key_value_heads")
    for key, value in (("global_head_dim", head_dim), ("num_global_key_value_heads", global_kv)):
        if c.has(key) and value is not None and c.data[key] != value:
            raise c.error(key, f"= {c.data[key]!r} disagrees with per_layer_config ({value})")
    c.ignore("global_head_dim", "num_global_key_value_heads")
    return head_dim, global_kv


def gemma4_vision(c: _Config, out: dict[str, Any]):
    """The Gemma 4 vision encoder of ``vision_config`` (Gemma4VisionConfig defaults of transformers
    5.24.0 for absent keys), or None when the wrapper has no vision_config (Gemma4Model then builds
    no vision tower)."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import Gemma4Vision

    raw = c.dict("vision_config")
    if raw is None:
        return None
    v = _Config(raw, c.file, c.family, c.defaults, c.notes, prefix="vision_config.")
    why = "absent; transformers 5.24.0 Gemma4VisionConfig default"
    v.ignore("model_type", "hidden_activation", "rms_norm_eps", "attention_dropout", "initializer_range")
    v.ignore("torch_dtype", "dtype", "rope_parameters", "max_position_embeddings", "default_output_length")
    if v.data.get("attention_bias"):
        raise v.error("attention_bias", "= true: Gemma4ClippableLinear has no biases")
    v.ignore("attention_bias")
    kw = dict(
        hidden_size=v.int("hidden_size", 768, why),
        intermediate_size=v.int("intermediate_size", 3072, why),
        num_hidden_layers=v.int("num_hidden_layers", 16, why),
        num_attention_heads=v.int("num_attention_heads", 12, why),
        num_key_value_heads=v.int("num_key_value_heads", 12, why),
        head_dim=v.int("head_dim", 64, why),
        patch_size=v.int("patch_size", 16, why),
        position_embedding_size=v.int("position_embedding_size", 10240, why),
        use_clipped_linears=bool(v.bool("use_clipped_linears", False, why)),
        standardize=bool(v.bool("standardize", False, why)),
        pooling_kernel_size=v.int("pooling_kernel_size", 3, why),
    )
    # google/gemma-4-E2B-it's vision_config writes global_head_dim 64 (= head_dim); Gemma4VisionConfig
    # declares no such field and its attention is of head_dim: accepted when it equals head_dim
    if v.has("global_head_dim") and v.int("global_head_dim") != kw["head_dim"]:
        raise v.error(
            "global_head_dim", f"must equal head_dim ({kw['head_dim']}): Gemma4VisionAttention has one head width"
        )
    v.ignore("global_head_dim")
    v.check_unplaced(frozenset({"global_head_dim", "num_global_key_value_heads", "layer_types", "num_kv_heads"}))
    c.ignore("vision_soft_tokens_per_image", "image_token_id", "video_token_id", "boi_token_id", "eoi_token_id")
    try:
        return Gemma4Vision.checked(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: vision_config is invalid: {exc.errors()[0]['msg']}") from None


def gemma4_audio(c: _Config, out: dict[str, Any]):
    """The Gemma 4 audio encoder of the wrapper's ``audio_config`` (Gemma4AudioConfig defaults of
    transformers 5.24.0 for absent keys), or None when audio_config is null or absent (Gemma4Model
    then builds no audio tower: ``self.audio_tower = ... if config.audio_config is not None else None``).
    The keys that set no weight shape (chunking, context, logit cap, clipping values) are read as inert."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import Gemma4Audio

    raw = c.dict("audio_config")
    if raw is None:
        return None
    a = _Config(raw, c.file, c.family, c.defaults, c.notes, prefix="audio_config.")
    why = "absent; transformers 5.24.0 Gemma4AudioConfig default"
    a.ignore("model_type", "hidden_act", "rms_norm_eps", "initializer_range", "torch_dtype", "dtype")
    a.ignore("residual_weight", "attention_chunk_size", "attention_context_left", "attention_context_right")
    a.ignore("attention_logit_cap", "attention_invalid_logits_value", "gradient_clipping", "num_mel_bins")
    a.ignore("_name_or_path", "architectures")
    channels = a.int_list("subsampling_conv_channels", [128, 32], minimum=1)
    if len(channels) != 2:
        raise a.error("subsampling_conv_channels", f"must list two channel counts (got {channels!r})")
    kw = dict(
        hidden_size=a.int("hidden_size", 1024, why),
        num_hidden_layers=a.int("num_hidden_layers", 12, why),
        num_attention_heads=a.int("num_attention_heads", 8, why),
        subsampling_conv_channels=tuple(channels),
        conv_kernel_size=a.int("conv_kernel_size", 5, why),
        output_proj_dims=a.int("output_proj_dims", 1536, why),
        use_clipped_linears=bool(a.bool("use_clipped_linears", True, why)),
    )
    if a.has("intermediate_size"):  # not a Gemma4AudioConfig key; Gemma4AudioFeedForward is 4 x hidden_size wide
        if a.int("intermediate_size") != 4 * kw["hidden_size"]:
            raise a.error(
                "intermediate_size", f"must be 4 x hidden_size ({4 * kw['hidden_size']}): Gemma4AudioFeedForward"
            )
    a.check_unplaced()
    c.ignore("audio_token_id", "boa_token_id", "eoa_token_id", "eoa_token_index")
    try:
        return Gemma4Audio.checked(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: audio_config is invalid: {exc.errors()[0]['msg']}") from None
