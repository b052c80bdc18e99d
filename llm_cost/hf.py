"""Hugging Face ``config.json`` -> :class:`~llm_cost.spec.ModelSpec`, exactly as transformers builds the weights.

Every command accepts MODEL as a path to a ``config.json`` (or a folder holding one); the spec made
here is then counted by :mod:`llm_cost.structure` like any shipped spec. One mapping function per
family (or per group of families that share a modeling file's layout), each naming the transformers
modeling file whose weight tensors it mirrors.

Rules (design notes, "config.json import"):

* Only keys that change weight shapes (or the KV cache) matter. Unknown keys are fine: configs carry
  many irrelevant ones (dropout, token ids, ``pretraining_tp`` ...). But a key that is known to change
  weight shapes (:data:`SHAPE_KEYS`) and that the family's mapping does not place raises
  :class:`~llm_cost.load.SpecError` naming it (unless its value is inert: null, false, 0, empty), so
  a count is never silently wrong.
* A missing optional field takes the family's default (the transformers config class default) and
  is reported in the list of defaults applied (``--verbose``). The core sizes (``vocab_size``,
  ``hidden_size``, ``num_hidden_layers``, ``num_attention_heads`` and the FFN width that is used)
  are required: a config without them is not a model description.
* A parameter is an element of a checkpoint weight tensor; buffers (rotary ``inv_freq``, GPT-2's
  causal-mask ``attn.bias``, Gemma's embedding ``normalizer``) are not parameters.
* Fused projections (GPT-2 ``c_attn``, Falcon ``query_key_value``, Phi-3 ``qkv_proj`` and
  ``gate_up_proj``) hold exactly the elements of the separate q/k/v (gate/up) tensors the spec
  enumerates, so they map onto the unfused fields with equal counts.

Errors name the file and the key: ``config.json: model_type 'bert' is not supported; supported: ...``.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Any, Callable, Optional

from .load import MAX_SPEC_BYTES, SpecError

__all__ = [
    "SUPPORTED_MODEL_TYPES",
    "SHAPE_KEYS",
    "load_hf_config",
    "load_hf_config_verbose",
    "hf_to_spec",
    "spec_to_yaml",
    "find_config",
    "is_hf_path",
    "defaults_used",
    "ImportResult",
    "import_config",
]

_ABSENT = object()
_REQUIRED = object()

#: Keys that change weight shapes or the KV cache in some transformers family. A key from this set
#: that the family's mapping did not read, with a value that is not inert, is an error.
SHAPE_KEYS = frozenset({
    # attention layout and biases
    "attention_bias", "qkv_bias", "o_proj_bias", "bias", "use_bias", "add_bias_linear", "head_dim",
    "num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query", "new_decoder_architecture",
    "parallel_attn", "num_ln_in_parallel_attn", "alibi", "use_qk_norm", "qk_layernorm", "qk_norm",
    "attn_output_gate", "kv_channels", "add_cross_attention", "attention_chunk_size",
    # feed-forward widths and biases
    "intermediate_size", "mlp_bias", "n_inner", "ffn_hidden_size", "ffn_dim", "d_ff",
    # mixture of experts
    "num_experts", "num_local_experts", "n_routed_experts", "moe_intermediate_size",
    "shared_expert_intermediate_size", "n_shared_experts", "num_shared_experts", "num_experts_per_tok",
    "experts_per_token", "first_k_dense_replace", "decoder_sparse_step", "mlp_only_layers",
    "moe_layer_freq", "topk_method", "moe_layer_start_index", "moe_layer_end_index",
    # MLA
    "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
    "index_topk", "index_n_heads", "index_head_dim",
    # layer schedule, linear attention
    "layer_types", "full_attention_interval", "sliding_window_pattern", "_sliding_window_pattern",
    "linear_num_key_heads", "linear_num_value_heads", "linear_key_head_dim", "linear_value_head_dim",
    "linear_conv_kernel_dim",
    # extra modules, embeddings
    "num_nextn_predict_layers", "mtp_num_hidden_layers", "mtp_use_dedicated_embeddings",
    "vision_config", "text_config", "audio_config", "tie_word_embeddings", "n_positions",
    "embedding_size", "word_embed_proj_dim", "projection_dim",
})

#: Keys of a Qwen2-VL ``vision_config`` that belong to other vision towers (Qwen2.5-VL ...).
_VISION_SHAPE_KEYS = frozenset({
    "intermediate_size", "out_hidden_size", "fullatt_block_indexes", "window_size",
    "num_position_embeddings", "deepstack_visual_indexes", "num_layers",
})

_DTYPES = {
    "float32": "fp32", "float": "fp32", "fp32": "fp32",
    "bfloat16": "bf16", "bf16": "bf16",
    "float16": "fp16", "half": "fp16", "fp16": "fp16",
    "float8_e4m3fn": "fp8", "float8_e5m2": "fp8", "fp8": "fp8",
    "int8": "int8",
}

_LAYER_TYPE_REMAP = {"attention": "full_attention", "full": "full_attention", "mamba": "linear_attention",
                     "linear": "linear_attention"}


class _Config:
    """A config.json mapping being read: typed getters that record the keys read and the defaults used."""

    def __init__(self, data: dict[str, Any], file: str, family: str, defaults: list[str], notes: list[str],
                 prefix: str = "") -> None:
        self.data = data
        self.file = file
        self.family = family
        self.defaults = defaults
        self.notes = notes
        self.prefix = prefix
        self.used: set[str] = set()

    # -- errors ------------------------------------------------------------------------------------
    def error(self, key: str, message: str) -> SpecError:
        return SpecError(f"{self.file}: {self.prefix}{key} {message}")

    # -- raw access --------------------------------------------------------------------------------
    def has(self, key: str) -> bool:
        """True when ``key`` is present with a non-null value (does not mark it read)."""
        return self.data.get(key) is not None

    def ignore(self, *keys: str) -> None:
        """Mark keys as read: they are understood and do not change the count for this family."""
        self.used.update(keys)

    def raw(self, key: str) -> Any:
        self.used.add(key)
        return self.data.get(key, _ABSENT)

    def alias(self, *keys: str) -> str:
        """The one of ``keys`` (synonyms, the first is the canonical name) that the config uses.
        All are marked read; two present with different values is an error."""
        present = [k for k in keys if self.data.get(k) is not None]
        self.used.update(keys)
        if len(present) > 1:
            values = {json.dumps(self.data[k], sort_keys=True) for k in present}
            if len(values) > 1:
                shown = ", ".join(f"{self.prefix}{k} = {self.data[k]!r}" for k in present)
                raise SpecError(f"{self.file}: synonyms disagree ({shown}); cannot tell which one the weights use")
        return present[0] if present else keys[0]

    # -- typed getters -----------------------------------------------------------------------------
    def _default(self, key: str, default: Any, why: Optional[str]) -> Any:
        if default is _REQUIRED:
            raise self.error(key, f"is required for model_type '{self.family}' (missing or null)")
        shown = "null" if default is None else (str(default).lower() if isinstance(default, bool) else repr(default))
        self.defaults.append(f"{self.prefix}{key} = {shown} ({why or f'absent; {self.family} default'})")
        return default

    def int(self, key: str, default: Any = _REQUIRED, why: Optional[str] = None, minimum: int = 1) -> Any:
        value = self.raw(key)
        if value is _ABSENT or value is None:
            return self._default(key, default, why)
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer() and value >= minimum:
                return int(value)
            raise self.error(key, f"must be an integer >= {minimum} (got {value!r})")
        if value < minimum:
            raise self.error(key, f"must be an integer >= {minimum} (got {value!r})")
        return value

    def opt_int(self, key: str, minimum: int = 1) -> Optional[int]:
        """An integer whose null (or absence) means "none" (e.g. ``sliding_window: null``); no default recorded."""
        if self.data.get(key) is None:
            self.used.add(key)
            return None
        return self.int(key, minimum=minimum)

    def int_or_null(self, key: str, default: Any, why: Optional[str] = None, minimum: int = 1) -> Optional[int]:
        """An integer where an explicit null means "none" (``q_lora_rank: null``) and absence the default."""
        if key in self.data and self.data[key] is None:
            self.used.add(key)
            return None
        return self.int(key, default, why, minimum)

    def bool(self, key: str, default: Any = _REQUIRED, why: Optional[str] = None) -> Any:
        value = self.raw(key)
        if value is _ABSENT or value is None:
            return self._default(key, default, why)
        if not isinstance(value, bool):
            raise self.error(key, f"must be true or false (got {value!r})")
        return value

    def float(self, key: str, default: Any = _REQUIRED, why: Optional[str] = None) -> Any:
        value = self.raw(key)
        if value is _ABSENT or value is None:
            return self._default(key, default, why)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise self.error(key, f"must be a finite number > 0 (got {value!r})")
        return float(value)

    def str(self, key: str, default: Any = _REQUIRED, why: Optional[str] = None) -> Any:
        value = self.raw(key)
        if value is _ABSENT or value is None:
            return self._default(key, default, why)
        if not isinstance(value, str):
            raise self.error(key, f"must be a string (got {value!r})")
        return value

    def int_list(self, key: str, default: Any = _REQUIRED, why: Optional[str] = None, minimum: int = 0) -> Any:
        value = self.raw(key)
        if value is _ABSENT or value is None:
            return self._default(key, default, why)
        if not isinstance(value, list) or any(isinstance(v, bool) or not isinstance(v, int) or v < minimum
                                              for v in value):
            raise self.error(key, f"must be a list of integers >= {minimum} (got {value!r})")
        return list(value)

    def dict(self, key: str) -> Optional[dict[str, Any]]:
        value = self.raw(key)
        if value is _ABSENT or value is None:
            return None
        if not isinstance(value, dict):
            raise self.error(key, f"must be a mapping (got {type(value).__name__})")
        return value

    # -- the final check ---------------------------------------------------------------------------
    def check_unplaced(self, shape_keys: frozenset[str] = SHAPE_KEYS) -> None:
        """Raise for a shape-changing key that the mapping did not read (inert values are fine)."""
        for key in sorted(self.data):
            if key in self.used or key not in shape_keys:
                continue
            value = self.data[key]
            if value is None or value is False or value == 0 or value == [] or value == {}:
                continue
            shown = json.dumps(value)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise SpecError(
                f"{self.file}: {self.prefix}{key} = {shown} changes the weight shapes or the KV cache, and the "
                f"mapping for model_type '{self.family}' cannot place it; refusing to guess a count"
            )


@dataclass(frozen=True)
class _Family:
    """Defaults of one family (its transformers config class)."""

    tie: bool
    max_pos: int
    rope_theta: Optional[float]
    head_dim: Optional[int] = None  # None: hidden_size / num_attention_heads
    dtype: str = "bf16"
    partial_rotary: float = 1.0


# -- shared pieces ----------------------------------------------------------------------------------

def _common(c: _Config, fam: _Family, *, hidden_key: str = "hidden_size", layers_key: str = "num_hidden_layers",
            rope: bool = True) -> dict[str, Any]:
    """vocab, width, depth, tying, positions, RoPE and dtype: the fields every family has."""
    out: dict[str, Any] = {
        "vocab_size": c.int("vocab_size"),
        "hidden_size": c.int(hidden_key),
        "num_hidden_layers": c.int(layers_key),
        "tie_word_embeddings": c.bool("tie_word_embeddings", fam.tie),
    }
    max_key = c.alias("max_position_embeddings", "n_positions") if not rope else "max_position_embeddings"
    out["max_position_embeddings"] = c.int(max_key, fam.max_pos)
    if rope:
        out.update(_rope(c, fam))
    else:
        out["position_embedding"] = "learned"
    out["torch_dtype"] = _dtype(c, fam)
    return out


def _rope(c: _Config, fam: _Family) -> dict[str, Any]:
    """rope_theta, rope_scaling and partial_rotary_factor, from the classic keys or ``rope_parameters``."""
    from pydantic import ValidationError

    from .spec import RopeScaling

    params = c.dict("rope_parameters") or {}
    if isinstance(params.get("full_attention"), dict):  # per-layer-type parameters (Gemma 3 style)
        params = params["full_attention"]
        c.notes.append("rope_parameters per layer type: the full-attention layers' values are used")
    out: dict[str, Any] = {}
    if c.has("rope_theta"):
        out["rope_theta"] = c.float("rope_theta")
    elif params.get("rope_theta") is not None:
        theta = params["rope_theta"]
        if isinstance(theta, bool) or not isinstance(theta, (int, float)) or not theta > 0:
            raise c.error("rope_parameters.rope_theta", f"must be a number > 0 (got {theta!r})")
        c.ignore("rope_theta")
        out["rope_theta"] = float(theta)
    else:
        out["rope_theta"] = c.float("rope_theta", fam.rope_theta)
    if c.has("partial_rotary_factor"):
        prf = c.float("partial_rotary_factor")
    elif params.get("partial_rotary_factor") is not None:
        prf = params["partial_rotary_factor"]
        if isinstance(prf, bool) or not isinstance(prf, (int, float)):
            raise c.error("rope_parameters.partial_rotary_factor", f"must be a number (got {prf!r})")
        prf = float(prf)
    elif fam.partial_rotary != 1.0:
        prf = c.float("partial_rotary_factor", fam.partial_rotary)
    else:
        c.ignore("partial_rotary_factor")
        prf = 1.0
    if not 0 < prf <= 1:
        raise c.error("partial_rotary_factor", f"must be in (0, 1] (got {prf!r})")
    if prf != 1.0:
        out["partial_rotary_factor"] = prf
    scaling = c.dict("rope_scaling")
    if scaling is None and params:
        scaling = {k: v for k, v in params.items() if k not in ("rope_theta", "partial_rotary_factor")}
    if scaling:
        rope_type = scaling.get("rope_type") or scaling.get("type") or "default"
        if rope_type == "default" and scaling.get("mrope_section"):
            rope_type = "mrope"
        if rope_type != "default":
            known = set(RopeScaling.model_fields) - {"rope_type"}
            kept = {k: v for k, v in scaling.items() if k in known and v is not None}
            dropped = sorted(k for k in scaling if k not in known | {"rope_type", "type"})
            if dropped:
                c.notes.append(f"rope_scaling keys not modelled (no effect on counts): {', '.join(dropped)}")
            try:
                out["rope_scaling"] = RopeScaling(rope_type=rope_type, **kept)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                raise c.error(f"rope_scaling.{where}", f"is invalid: {first['msg']} (got {first.get('input')!r})") \
                    from None
    return out


def _dtype(c: _Config, fam: _Family) -> str:
    key = c.alias("torch_dtype", "dtype")
    if not c.has(key):
        dtype = fam.dtype
        c.defaults.append(f"torch_dtype = {dtype} (absent; {c.family} default)")
    else:
        raw = c.str(key)
        dtype = _DTYPES.get(raw.lower().removeprefix("torch."))
        if dtype is None:
            raise c.error(key, f"{raw!r} is not a dtype this tool models; known: {', '.join(sorted(_DTYPES))}")
    quant = c.dict("quantization_config")
    if quant:
        method = str(quant.get("quant_method", "unknown"))
        if method == "fp8":
            dtype = "fp8"
            c.notes.append("quantization_config fp8: weights stored as FP8 with block scales (scales not counted)")
        else:
            c.notes.append(f"quantization_config {method}: counts are logical parameters; weight bytes use "
                           f"torch_dtype {dtype} and do not model the packed format")
    return dtype


def _heads(c: _Config, d: int, fam: _Family) -> tuple[int, int, Optional[int]]:
    """(n_q, n_kv, head_dim or None when it is d / n_q)."""
    n_q = c.int("num_attention_heads")
    n_kv = c.int("num_key_value_heads", n_q, why="absent; = num_attention_heads (MHA)")
    if fam.head_dim is not None:
        head_dim = c.int("head_dim", fam.head_dim)
    elif c.has("head_dim"):
        head_dim = c.int("head_dim")
    else:
        c.ignore("head_dim")
        if d % n_q:
            raise c.error("head_dim", f"is required: hidden_size ({d}) is not a multiple of "
                                      f"num_attention_heads ({n_q})")
        c.defaults.append(f"head_dim = {d // n_q} (absent; hidden_size / num_attention_heads)")
        head_dim = None
    if n_q % n_kv:
        raise c.error("num_key_value_heads", f"({n_kv}) must divide num_attention_heads ({n_q})")
    return n_q, n_kv, head_dim


def _gqa(n_q: int, n_kv: int, head_dim: Optional[int], **kw: Any):
    from .spec import GQAAttention

    return GQAAttention(num_attention_heads=n_q, num_key_value_heads=n_kv, head_dim=head_dim, **kw)


def _layer_types(c: _Config, L: int, allowed: tuple[str, ...]) -> Optional[list[str]]:
    """Explicit ``layer_types`` (legacy names remapped), or None when the config has none."""
    raw = c.raw("layer_types")
    if raw is _ABSENT or raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(t, str) for t in raw):
        raise c.error("layer_types", f"must be a list of strings (got {raw!r})")
    types = [_LAYER_TYPE_REMAP.get(t, t) for t in raw]
    bad = sorted({t for t in types if t not in allowed})
    if bad:
        raise c.error("layer_types", f"has {', '.join(bad)}; model_type '{c.family}' supports {', '.join(allowed)}")
    if len(types) != L:
        raise c.error("layer_types", f"has {len(types)} entries but num_hidden_layers is {L}")
    return types


def _place_layers(c: _Config, out: dict[str, Any], types: list[str], window: Optional[int]) -> Optional[int]:
    """Store the layer schedule in ``out`` compactly; return the sliding window to keep (or None)."""
    kinds = set(types)
    if "sliding_attention" in kinds and window is None:
        raise c.error("sliding_window", "is null, but layer_types has sliding_attention layers")
    if kinds == {"full_attention"}:
        return None
    if kinds == {"sliding_attention"}:
        return window
    out["layer_types"] = types
    return window if "sliding_attention" in kinds else None


def _qwen_sliding(c: _Config, L: int, rule: str) -> tuple[list[str], Optional[int]]:
    """The Qwen ``use_sliding_window`` / ``max_window_layers`` schedule (sliding_window only when
    use_sliding_window is true). ``rule``: "from_max" (Qwen2/Qwen3: layers i >= max_window_layers
    slide), "alternate_below_max" (Qwen2-MoE: odd-numbered i < max_window_layers), "all" (Qwen3-MoE)."""
    use = c.bool("use_sliding_window", False)
    if not use:
        c.ignore("sliding_window", "max_window_layers")
        return ["full_attention"] * L, None
    window = c.int("sliding_window", 4096)
    if rule == "all":
        c.ignore("max_window_layers")
        return ["sliding_attention"] * L, window
    mwl = c.int("max_window_layers", 28, minimum=0)
    if rule == "from_max":
        return ["sliding_attention" if i >= mwl else "full_attention" for i in range(L)], window
    return ["sliding_attention" if (i + 1) % 2 and i < mwl else "full_attention" for i in range(L)], window


def _mlp(c: _Config, **kw: Any):
    """The dense gated MLP of width ``intermediate_size``."""
    from .spec import MLP

    return MLP(intermediate_size=c.int("intermediate_size"), hidden_act=c.str("hidden_act", "silu"), **kw)


# -- families ---------------------------------------------------------------------------------------

def _llama_like(c: _Config, fam: _Family) -> dict[str, Any]:
    """llama (transformers models/llama/modeling_llama.py), mistral (modeling_mistral.py),
    phi3 (modeling_phi3.py; fused qkv_proj / gate_up_proj hold the same elements).

    Per layer: q/k/v/o projections (llama: ``attention_bias`` on all four), gated MLP (llama:
    ``mlp_bias`` on all three), two RMSNorms. Mistral and Phi-3 use ``sliding_window`` (when set) in
    every layer; Mistral's default window is 4096, Phi-3's none.
    """
    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", False) if c.family == "llama" else False
    mlp_bias = c.bool("mlp_bias", False) if c.family == "llama" else False
    window = None
    if c.family == "mistral":
        window = c.int_or_null("sliding_window", 4096)
    elif c.family == "phi3":
        window = c.opt_int("sliding_window")
    types = _layer_types(c, L, ("full_attention", "sliding_attention")) or \
        (["sliding_attention"] * L if window else ["full_attention"] * L)
    window = _place_layers(c, out, types, window)
    out["attention"] = _gqa(n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias, sliding_window=window)
    out["mlp"] = _mlp(c, mlp_bias=mlp_bias)
    return out


def _mixtral(c: _Config, fam: _Family) -> dict[str, Any]:
    """mixtral (transformers models/mixtral/modeling_mixtral.py): Mistral attention; every FFN is
    ``num_local_experts`` gated experts of width ``intermediate_size`` with a bias-free router."""
    from .spec import MoE

    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, hd = _heads(c, d, fam)
    window = c.opt_int("sliding_window")
    types = _layer_types(c, L, ("full_attention", "sliding_attention")) or \
        (["sliding_attention"] * L if window else ["full_attention"] * L)
    window = _place_layers(c, out, types, window)
    out["attention"] = _gqa(n_q, n_kv, hd, sliding_window=window)
    c.ignore("hidden_act")
    out["moe"] = MoE(num_experts=c.int("num_local_experts", 8), num_experts_per_tok=c.int("num_experts_per_tok", 2),
                     moe_intermediate_size=c.int("intermediate_size"))
    return out


def _qwen(c: _Config, fam: _Family) -> dict[str, Any]:
    """qwen2 (transformers models/qwen2/modeling_qwen2.py), qwen2_moe (modeling_qwen2_moe.py),
    qwen3 (modeling_qwen3.py), qwen3_moe (modeling_qwen3_moe.py), qwen2_vl's language model
    (modeling_qwen2_vl.py).

    Qwen2 / Qwen2-VL / Qwen2-MoE: q, k, v biases (Qwen2-MoE: ``qkv_bias``, default true), no o bias.
    Qwen3 / Qwen3-MoE: ``attention_bias`` on q, k, v and o, per-head q_norm / k_norm.
    MoE (Qwen2-MoE, Qwen3-MoE): layer i is MoE unless i is in ``mlp_only_layers`` or
    (i + 1) % ``decoder_sparse_step`` != 0; Qwen2-MoE adds a shared expert and its sigmoid gate.
    """
    from .spec import MoE

    fam_name = c.family
    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, hd = _heads(c, d, fam)
    qwen3 = fam_name in ("qwen3", "qwen3_moe")
    if qwen3:
        bias = c.bool("attention_bias", False)
        att_kw = dict(attention_bias=bias, o_proj_bias=bias, qk_norm=True)
    elif fam_name == "qwen2_moe":
        att_kw = dict(attention_bias=c.bool("qkv_bias", True))
    else:
        att_kw = dict(attention_bias=True)
    rule = {"qwen2_moe": "alternate_below_max", "qwen3_moe": "all"}.get(fam_name, "from_max")
    explicit = _layer_types(c, L, ("full_attention", "sliding_attention"))
    if explicit is not None:
        use = c.bool("use_sliding_window", False)
        window = c.int("sliding_window", 4096) if use or "sliding_attention" in explicit else None
        c.ignore("sliding_window", "max_window_layers")
        types = explicit
    else:
        types, window = _qwen_sliding(c, L, rule)
    window = _place_layers(c, out, types, window)
    out["attention"] = _gqa(n_q, n_kv, hd, sliding_window=window, **att_kw)

    if fam_name in ("qwen2_moe", "qwen3_moe"):
        moe_defaults = {"qwen2_moe": (60, 4, 1408), "qwen3_moe": (128, 8, 768)}[fam_name]
        E = c.int("num_experts", moe_defaults[0], minimum=0)
        moe_kw: dict[str, Any] = {}
        if fam_name == "qwen2_moe":
            shared = c.int("shared_expert_intermediate_size", 5632, minimum=0)
            if shared == 0:
                raise c.error("shared_expert_intermediate_size",
                              "= 0 leaves the always-present shared_expert_gate [1, d] that the spec cannot place")
            moe_kw = dict(shared_expert_intermediate_size=shared, shared_expert_gate=True)
        step = c.int("decoder_sparse_step", 1)
        only = c.int_list("mlp_only_layers", [])
        c.ignore("norm_topk_prob", "router_aux_loss_coef", "output_router_logits")
        if E:
            out["moe"] = MoE(num_experts=E, num_experts_per_tok=c.int("num_experts_per_tok", moe_defaults[1]),
                             moe_intermediate_size=c.int("moe_intermediate_size", moe_defaults[2]),
                             decoder_sparse_step=step, mlp_only_layers=sorted(set(only)), **moe_kw)
        dense = (not E) or any(i in only or (i + 1) % step for i in range(L))
        if dense:
            out["mlp"] = _mlp(c)
        else:
            c.ignore("intermediate_size", "hidden_act")
            c.notes.append("intermediate_size is unused: every layer is MoE")
    else:
        out["mlp"] = _mlp(c)
    return out


def _qwen2_vl(c: _Config, fam: _Family) -> dict[str, Any]:
    """qwen2_vl (transformers models/qwen2_vl/modeling_qwen2_vl.py): a Qwen2 language model plus
    Qwen2VisionTransformerPretrainedModel (``vision_config``; Qwen2VLVisionConfig defaults for absent
    keys; legacy ``in_chans`` / ``spatial_patch_size`` are synonyms of ``in_channels`` / ``patch_size``)."""
    from pydantic import ValidationError

    from .spec import Vision

    out = _qwen(c, fam)
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
        out_hidden_size=v.int("hidden_size", out["hidden_size"],
                              why="absent; the language model's hidden_size, which the merger must output"),
    )
    v.check_unplaced(_VISION_SHAPE_KEYS)
    if kw["out_hidden_size"] != out["hidden_size"]:
        raise v.error("hidden_size", f"({kw['out_hidden_size']}) must equal the language model's hidden_size "
                                     f"({out['hidden_size']})")
    try:
        out["vision"] = Vision(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: vision_config is invalid: {exc.errors()[0]['msg']}") from None
    return out


def _qwen3_next(c: _Config, fam: _Family) -> dict[str, Any]:
    """qwen3_next (transformers models/qwen3_next/modeling_qwen3_next.py): Gated DeltaNet linear
    attention in most layers, gated full attention (q_proj emits an output gate; q/k norms) every
    ``full_attention_interval``-th layer (or ``layer_types``), MoE with a gated shared expert.
    ``mtp_num_hidden_layers`` (the checkpoint's MTP block, which transformers does not load) maps to
    a DeepSeek-style MTP module without embedding/head copies (fc [2d -> d], two input norms, one
    decoder layer, a final norm), reported apart from the main model."""
    from .spec import MTP, LinearAttention, MoE

    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", False)
    types = _layer_types(c, L, ("full_attention", "linear_attention"))
    if types is None:
        k = c.int("full_attention_interval", 4)
        types = ["linear_attention" if (i + 1) % k else "full_attention" for i in range(L)]
    else:
        c.ignore("full_attention_interval")
    c.ignore("use_sliding_window", "sliding_window", "max_window_layers")
    out["layer_types"] = types
    out["attention"] = _gqa(n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias, qk_norm=True, output_gate=True)
    if "linear_attention" in types:
        out["linear_attention"] = LinearAttention(
            linear_num_key_heads=c.int("linear_num_key_heads", 16),
            linear_num_value_heads=c.int("linear_num_value_heads", 32),
            linear_key_head_dim=c.int("linear_key_head_dim", 128),
            linear_value_head_dim=c.int("linear_value_head_dim", 128),
            linear_conv_kernel_dim=c.int("linear_conv_kernel_dim", 4),
        )
    E = c.int("num_experts", 512, minimum=0)
    step = c.int("decoder_sparse_step", 1)
    only = c.int_list("mlp_only_layers", [])
    c.ignore("norm_topk_prob", "router_aux_loss_coef", "output_router_logits")
    if E:
        shared = c.int("shared_expert_intermediate_size", 512, minimum=0)
        if shared == 0:
            raise c.error("shared_expert_intermediate_size",
                          "= 0 leaves the always-present shared_expert_gate [1, d] that the spec cannot place")
        out["moe"] = MoE(num_experts=E, num_experts_per_tok=c.int("num_experts_per_tok", 10),
                         moe_intermediate_size=c.int("moe_intermediate_size", 512),
                         shared_expert_intermediate_size=shared, shared_expert_gate=True,
                         decoder_sparse_step=step, mlp_only_layers=sorted(set(only)))
    if (not E) or any(i in only or (i + 1) % step for i in range(L)):
        out["mlp"] = _mlp(c)
    else:
        c.ignore("intermediate_size", "hidden_act")
        c.notes.append("intermediate_size is unused: every layer is MoE")
    n_mtp = c.int("mtp_num_hidden_layers", minimum=0) if c.has("mtp_num_hidden_layers") else 0
    c.ignore("mtp_num_hidden_layers", "mtp_use_dedicated_embeddings")
    if c.data.get("mtp_use_dedicated_embeddings") and c.bool("mtp_use_dedicated_embeddings"):
        raise c.error("mtp_use_dedicated_embeddings", "= true: dedicated MTP embeddings cannot be placed")
    if n_mtp > 1:
        raise c.error("mtp_num_hidden_layers", f"= {n_mtp}: one fc with several MTP layers cannot be placed "
                                               "(the spec models one module per layer)")
    if n_mtp:
        out["mtp"] = MTP(num_nextn_predict_layers=n_mtp, checkpoint_stores_shared=False)
    return out


def _deepseek(c: _Config, fam: _Family) -> dict[str, Any]:
    """deepseek_v2 / deepseek_v3 (transformers models/deepseek_v2/modeling_deepseek_v2.py,
    models/deepseek_v3/modeling_deepseek_v3.py, and the checkpoints' modeling_deepseek.py): MLA
    (q_lora_rank null: a full q_proj), ``attention_bias`` on q_a_proj, kv_a_proj_with_mqa and o_proj.
    Layer i is MoE when n_routed_experts is set, i >= first_k_dense_replace and
    i % moe_layer_freq == 0 (other layers: dense MLP of intermediate_size); shared experts
    n_shared_experts x moe_intermediate_size; ``topk_method`` noaux_tc stores a per-expert
    e_score_correction_bias. ``num_nextn_predict_layers`` MTP modules are reported apart."""
    from .spec import MLAAttention, MoE, MTP

    v3 = c.family == "deepseek_v3"
    out = _common(c, fam)
    L = out["num_hidden_layers"]
    n = c.int("num_attention_heads")
    c.ignore("num_key_value_heads", "head_dim", "rope_interleave")  # MLA: K/V heads = n_h; head_dim derived
    out["attention"] = MLAAttention(
        num_attention_heads=n,
        q_lora_rank=c.int_or_null("q_lora_rank", 1536),
        kv_lora_rank=c.int("kv_lora_rank", 512),
        qk_nope_head_dim=c.int("qk_nope_head_dim", 128),
        qk_rope_head_dim=c.int("qk_rope_head_dim", 64),
        v_head_dim=c.int("v_head_dim", 128),
        attention_bias=c.bool("attention_bias", False),
    )
    E = c.int_or_null("n_routed_experts", 256 if v3 else None)
    first_k = c.int("first_k_dense_replace", 3 if v3 else 0, minimum=0)
    freq = c.int("moe_layer_freq", 1)
    c.ignore("n_group", "topk_group", "routed_scaling_factor", "scoring_func", "norm_topk_prob", "aux_loss_alpha",
             "seq_aux", "ep_size")
    if E:
        topk = c.str("topk_method", "noaux_tc" if v3 else "greedy")
        shared = c.int_or_null("n_shared_experts", 1 if v3 else None, minimum=0) or 0
        width = c.int("moe_intermediate_size", 2048 if v3 else 1407)
        moe_layers = [i for i in range(L) if i >= first_k and i % freq == 0]
        only = [i for i in range(first_k, L) if i not in moe_layers]
        out["moe"] = MoE(num_experts=E, num_experts_per_tok=c.int("num_experts_per_tok", 8 if v3 else _REQUIRED),
                         moe_intermediate_size=width, shared_expert_intermediate_size=shared * width,
                         router_bias=topk == "noaux_tc", first_k_dense_replace=min(first_k, L), mlp_only_layers=only)
        dense = len(moe_layers) < L
    else:
        c.ignore("topk_method", "n_shared_experts", "moe_intermediate_size", "num_experts_per_tok")
        dense = True
    if dense:
        out["mlp"] = _mlp(c)
    else:
        c.ignore("intermediate_size", "hidden_act")
    if "num_nextn_predict_layers" in c.data:
        mtp = c.int("num_nextn_predict_layers", 0, minimum=0)
        if mtp:
            out["mtp"] = MTP(num_nextn_predict_layers=mtp)
    return out


def _gemma(c: _Config, fam: _Family) -> dict[str, Any]:
    """gemma (transformers models/gemma/modeling_gemma.py), gemma2 (modeling_gemma2.py), gemma3_text
    (models/gemma3/modeling_gemma3.py, Gemma3ForCausalLM): GeGLU MLP, ``attention_bias`` on q/k/v/o,
    tied embedding by default (its sqrt(d) normalizer is a buffer). Gemma 2/3 have four norms per
    block (input, post-attention, pre- and post-feed-forward) and alternate sliding / global layers
    (Gemma 2: even layers slide; Gemma 3: all but every ``sliding_window_pattern``-th); Gemma 3 adds
    per-head q_norm / k_norm."""
    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", False)
    window = None
    if c.family != "gemma":
        out["norms_per_layer"] = 4
        window = c.int("sliding_window", 4096)
        c.ignore("sliding_window_size")
        types = _layer_types(c, L, ("full_attention", "sliding_attention"))
        if types is None and c.family == "gemma2":
            types = ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(L)]
        elif types is None:
            k = c.int(c.alias("sliding_window_pattern", "_sliding_window_pattern"), 6)
            types = ["sliding_attention" if (i + 1) % k else "full_attention" for i in range(L)]
        else:
            c.ignore("sliding_window_pattern", "_sliding_window_pattern")
        window = _place_layers(c, out, types, window)
    c.ignore("rope_local_base_freq", "query_pre_attn_scalar")
    out["attention"] = _gqa(n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias, sliding_window=window,
                            qk_norm=c.family == "gemma3_text")
    act_key = "hidden_activation" if c.has("hidden_activation") else "hidden_act"
    c.ignore("hidden_act", "hidden_activation")
    from .spec import MLP

    out["mlp"] = MLP(intermediate_size=c.int("intermediate_size"),
                     hidden_act=c.str(act_key, "gelu_pytorch_tanh"))
    return out


def _gpt2(c: _Config, fam: _Family) -> dict[str, Any]:
    """gpt2 (transformers models/gpt2/modeling_gpt2.py, GPT2LMHeadModel): wte, learned wpe
    [n_positions, d], per block ln_1, c_attn (fused q/k/v with bias), c_proj (bias), ln_2, mlp c_fc /
    c_proj (biases, width n_inner or 4d), all LayerNorms with biases; ln_f; LM head tied. The
    causal-mask ``attn.bias`` / ``attn.masked_bias`` tensors are buffers, not parameters."""
    from .spec import MLP

    n_embd = c.alias("n_embd", "hidden_size")
    n_layer = c.alias("n_layer", "num_hidden_layers")
    out = _common(c, fam, hidden_key=n_embd, layers_key=n_layer, rope=False)
    c.ignore("n_ctx", "add_cross_attention")  # n_ctx: legacy; transformers sizes wpe by n_positions
    if c.data.get("add_cross_attention"):
        c.ignore("add_cross_attention")
        raise c.error("add_cross_attention", "= true adds cross-attention weights the spec cannot place")
    d = out["hidden_size"]
    n_q = c.int(c.alias("n_head", "num_attention_heads"))
    if d % n_q:
        raise c.error("n_head", f"({n_q}) must divide n_embd ({d})")
    out["norm_type"] = "layernorm"
    out["attention"] = _gqa(n_q, n_q, None, attention_bias=True, o_proj_bias=True)
    width = c.int("n_inner", 4 * d, why="absent or null; 4 x n_embd")
    out["mlp"] = MLP(intermediate_size=width, gated=False, mlp_bias=True,
                     hidden_act=c.str("activation_function", "gelu_new"))
    return out


def _falcon(c: _Config, fam: _Family) -> dict[str, Any]:
    """falcon (transformers models/falcon/modeling_falcon.py; legacy model_type RefinedWebModel =
    the 7B layout, RefinedWeb = the 40B "new decoder architecture"). Fused query_key_value:
    new architecture n_q + 2 n_kv heads (n_kv = num_kv_heads); multi_query n_q + 2; else 3 n_q.
    ``bias`` on query_key_value, dense and the MLP (dense_h_to_4h [d, ffn_hidden_size] and back,
    not gated). LayerNorms with biases: one per block with parallel attention (two if
    num_ln_in_parallel_attn = 2, the new architecture's default), two without. LM head tied."""
    from .spec import MLP

    legacy = c.data.get("model_type") in ("RefinedWeb", "RefinedWebModel")
    hidden = c.alias("hidden_size", "n_embed")
    layers = c.alias("num_hidden_layers", "n_layer")
    out = _common(c, fam, hidden_key=hidden, layers_key=layers)
    d = out["hidden_size"]
    n_q = c.int(c.alias("num_attention_heads", "n_head"))
    if c.bool("alibi", False):
        raise c.error("alibi", "= true: ALiBi positions cannot be placed (the spec models RoPE or learned positions)")
    new_default = c.data.get("model_type") == "RefinedWeb"
    new_arch = c.bool("new_decoder_architecture", new_default,
                      why="absent; legacy RefinedWeb = new architecture" if new_default else None)
    parallel = c.bool("parallel_attn", True)
    kv_key = c.alias("num_kv_heads", "n_head_kv")
    if new_arch:
        n_kv = c.int(kv_key, n_q, why="absent; = num_attention_heads")
        c.ignore("multi_query")
    else:
        multi_query = c.bool("multi_query", True)
        n_kv = 1 if multi_query else n_q
        if c.has(kv_key) and c.int(kv_key) != n_kv:
            raise c.error(kv_key, f"({c.data[kv_key]}) disagrees with multi_query = {str(multi_query).lower()} "
                                  f"in the old decoder architecture ({n_kv} KV heads)")
        c.ignore(kv_key)
    if not parallel:
        c.ignore("num_ln_in_parallel_attn")
        n_ln = 2  # input_layernorm + post_attention_layernorm
    elif c.has("num_ln_in_parallel_attn") or new_arch:
        n_ln = c.int("num_ln_in_parallel_attn", 2, why="absent; 2 with the new decoder architecture")
        if n_ln not in (1, 2):
            raise c.error("num_ln_in_parallel_attn", f"must be 1 or 2 (got {n_ln})")
    else:
        c.ignore("num_ln_in_parallel_attn")
        n_ln = 1  # input_layernorm shared by attention and MLP
    if d % n_q:
        raise c.error("num_attention_heads", f"({n_q}) must divide hidden_size ({d})")
    if n_q % n_kv:
        raise c.error(kv_key, f"({n_kv}) must divide num_attention_heads ({n_q})")
    bias = c.bool("bias", False)
    out["norm_type"] = "layernorm"
    out["norms_per_layer"] = n_ln
    out["attention"] = _gqa(n_q, n_kv, None, attention_bias=bias, o_proj_bias=bias)
    width = c.int("ffn_hidden_size", 4 * d, why="absent; 4 x hidden_size")
    out["mlp"] = MLP(intermediate_size=width, gated=False, mlp_bias=bias, hidden_act=c.str("activation", "gelu"))
    c.ignore("apply_residual_connection_post_layernorm")
    if legacy:
        c.notes.append(f"legacy model_type {c.data.get('model_type')!r} read as falcon")
    return out


def _gpt_oss(c: _Config, fam: _Family) -> dict[str, Any]:
    """gpt_oss (transformers models/gpt_oss/modeling_gpt_oss.py): q/k/v/o with biases
    (``attention_bias``, default true) and one learned sink logit per head; layers alternate sliding
    (window ``sliding_window``, default 128) and full attention unless ``layer_types`` says otherwise;
    every FFN is a MoE: router Linear with bias [E, d] + [E], experts gate_up_proj [E, d, 2 d_ff] +
    bias, down_proj [E, d_ff, d] + bias."""
    from .spec import MoE

    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", True)
    window = c.int("sliding_window", 128)
    types = _layer_types(c, L, ("full_attention", "sliding_attention")) or \
        ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(L)]
    window = _place_layers(c, out, types, window)
    out["attention"] = _gqa(n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias, sinks=True, sliding_window=window)
    k = c.int(c.alias("num_experts_per_tok", "experts_per_token"), 4)
    c.ignore("hidden_act", "swiglu_limit", "router_aux_loss_coef", "output_router_logits", "initial_context_length")
    out["moe"] = MoE(num_experts=c.int("num_local_experts", 128), num_experts_per_tok=k,
                     moe_intermediate_size=c.int("intermediate_size"), router_bias=True, expert_bias=True)
    return out


_F = _Family
FAMILIES: dict[str, tuple[Callable[[_Config, _Family], dict[str, Any]], _Family]] = {
    "llama": (_llama_like, _F(tie=False, max_pos=2048, rope_theta=10000.0)),
    "mistral": (_llama_like, _F(tie=False, max_pos=131072, rope_theta=10000.0)),
    "mixtral": (_mixtral, _F(tie=False, max_pos=131072, rope_theta=1e6)),
    "qwen2": (_qwen, _F(tie=False, max_pos=32768, rope_theta=10000.0)),
    "qwen2_moe": (_qwen, _F(tie=False, max_pos=32768, rope_theta=10000.0)),
    "qwen3": (_qwen, _F(tie=False, max_pos=32768, rope_theta=10000.0, head_dim=128)),
    "qwen3_moe": (_qwen, _F(tie=False, max_pos=32768, rope_theta=10000.0)),
    "qwen3_next": (_qwen3_next, _F(tie=False, max_pos=32768, rope_theta=10000.0, head_dim=256,
                                   partial_rotary=0.25)),
    "qwen2_vl": (_qwen2_vl, _F(tie=False, max_pos=32768, rope_theta=1e6)),
    "deepseek_v2": (_deepseek, _F(tie=False, max_pos=2048, rope_theta=10000.0)),
    "deepseek_v3": (_deepseek, _F(tie=False, max_pos=4096, rope_theta=10000.0)),
    "gemma": (_gemma, _F(tie=True, max_pos=8192, rope_theta=10000.0, head_dim=256)),
    "gemma2": (_gemma, _F(tie=True, max_pos=8192, rope_theta=10000.0, head_dim=256)),
    "gemma3_text": (_gemma, _F(tie=True, max_pos=131072, rope_theta=1e6, head_dim=256)),
    "phi3": (_llama_like, _F(tie=False, max_pos=4096, rope_theta=10000.0)),
    "gpt2": (_gpt2, _F(tie=True, max_pos=1024, rope_theta=None, dtype="fp32")),
    "falcon": (_falcon, _F(tie=True, max_pos=2048, rope_theta=10000.0)),
    "gpt_oss": (_gpt_oss, _F(tie=False, max_pos=131072, rope_theta=150000.0, head_dim=64)),
}
#: Legacy model_type names read by another family's mapping.
ALIASES = {"RefinedWebModel": "falcon", "RefinedWeb": "falcon"}
SUPPORTED_MODEL_TYPES = tuple(FAMILIES)

_HEADS = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")


# -- public API -------------------------------------------------------------------------------------

def _display_name(config: dict[str, Any]) -> Optional[str]:
    raw = config.get("_name_or_path")
    if not isinstance(raw, str) or not raw.strip():
        return None
    raw = raw.strip().rstrip("/")
    m = re.search(r"models--([^/]+?)--([^/]+)", raw)
    if m:
        return f"{m.group(1)}/{m.group(2)}"
    if raw.startswith(("/", ".", "~")) or "\\" in raw or raw.count("/") > 1:
        return re.split(r"[/\\]", raw)[-1] or None
    return raw


def _stem_of(source: str) -> str:
    """The folder of ``.../NAME/config.json``, else the file stem."""
    p = Path(source)
    return (p.parent.resolve().name if p.name == "config.json" else p.stem).strip() or "model"


def _name_from(source: str) -> str:
    return re.sub(r"\s+", "-", _stem_of(source)).lower()


def hf_to_spec(config: dict[str, Any], source: str, name: Optional[str] = None):
    """Map a parsed config.json to ``(ModelSpec, defaults applied)``.

    ``source`` names the file in messages and in ``spec.source.url``; ``name`` defaults to the
    folder (for ``.../NAME/config.json``) or file stem. Raises SpecError naming the key for an
    unsupported model_type, a missing required size, a wrong type, or a shape key it cannot place.
    """
    from pydantic import ValidationError

    from .load import _validation_message
    from .spec import ModelSpec, Source

    if not isinstance(config, dict):
        raise SpecError(f"{source}: the top level must be a JSON object, not {type(config).__name__}")
    model_type = config.get("model_type")
    if not isinstance(model_type, str) or not model_type:
        raise SpecError(f"{source}: model_type is missing; supported: {', '.join(SUPPORTED_MODEL_TYPES)}")
    family = ALIASES.get(model_type, model_type)
    if family not in FAMILIES:
        hint = " (the text-only model_type is gemma3_text)" if model_type == "gemma3" else ""
        raise SpecError(f"{source}: model_type {model_type!r} is not supported{hint}; supported: "
                        f"{', '.join(SUPPORTED_MODEL_TYPES)}")
    archs = config.get("architectures")
    if isinstance(archs, list):
        bad = [a for a in archs if isinstance(a, str) and not a.endswith(_HEADS)]
        if bad:
            raise SpecError(f"{source}: architectures {bad} carry a head other than the LM head; only causal-LM "
                            "checkpoints (…ForCausalLM, …LMHeadModel) are modelled")
    mapper, fam = FAMILIES[family]
    data = dict(config)
    text = data.get("text_config")
    if family == "qwen2_vl" and isinstance(text, dict):
        data.update({k: v for k, v in text.items() if k not in ("model_type", "architectures")})
        data.pop("text_config")
    defaults: list[str] = []
    notes: list[str] = []
    c = _Config(data, source, family, defaults, notes)
    c.ignore("model_type", "architectures", "_name_or_path")
    try:
        fields = mapper(c, fam)
    except ValidationError as exc:
        raise SpecError(_validation_message(Path(source), exc)) from None
    c.check_unplaced()

    shown = _display_name(config)
    note = [f"Imported from a Hugging Face config.json (model_type {model_type}"
            + (f", _name_or_path {config['_name_or_path']}" if shown else "") + ") by llm-cost."]
    if defaults:
        note.append("Defaults applied: " + "; ".join(defaults) + ".")
    if notes:
        note.append("Notes: " + "; ".join(notes) + ".")
    spec_name = name or _name_from(source)
    try:
        spec = ModelSpec(
            name=spec_name,
            display_name=shown or _stem_of(source),
            model_type=family,
            source=Source(url=source, retrieved=date.today().isoformat(), note=" ".join(note)),
            **fields,
        )
    except ValidationError as exc:
        raise SpecError(_validation_message(Path(source), exc)) from None
    return spec, defaults


def find_config(path: Path) -> Path:
    """The config.json that ``path`` names: the file itself, or ``config.json`` inside a folder."""
    if path.is_dir():
        inner = path / "config.json"
        if not inner.is_file():
            raise SpecError(f"{path}: folder has no config.json (give the path of a config.json or its folder)")
        return inner
    if not path.exists():
        raise SpecError(f"{path}: no such file")
    if not path.is_file():
        raise SpecError(f"{path}: not a regular file")
    return path


def _read_json(path: Path) -> Any:
    size = path.stat().st_size
    if size > MAX_SPEC_BYTES:
        raise SpecError(f"{path}: {size:,} bytes is too large for a config (limit {MAX_SPEC_BYTES:,} bytes)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise SpecError(f"{path}: not a UTF-8 text file") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot be read ({exc.strerror})") from None
    if not text.strip():
        raise SpecError(f"{path}: empty file; a config.json is a JSON object")

    def no_constants(name: str) -> Any:
        raise ValueError(f"{name} is not a valid JSON number")

    def no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise ValueError(f"duplicate key {key!r}")
            out[key] = value
        return out

    try:
        return json.loads(text, parse_constant=no_constants, object_pairs_hook=no_duplicates)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except ValueError as exc:
        raise SpecError(f"{path}: invalid JSON: {exc}") from None


def load_hf_config_verbose(path: Path, name: Optional[str] = None):
    """``(ModelSpec, defaults applied)`` from a config.json or a folder holding one; ``name``
    overrides the spec name (default: the folder of a ``config.json``, else the file stem)."""
    file = find_config(Path(path))
    return hf_to_spec(_read_json(file), str(file), name)


def load_hf_config(path: Path):
    """A :class:`~llm_cost.spec.ModelSpec` from a config.json or a folder holding one; SpecError
    (naming the file and the key) when it cannot be mapped exactly."""
    return load_hf_config_verbose(path)[0]


def is_hf_path(name_or_path: str) -> bool:
    """True when MODEL names a config.json (any ``.json`` file) or an existing folder (other than
    one named like a YAML spec, which load.read_yaml reports as "not a regular file")."""
    path = Path(name_or_path)
    suffix = path.suffix.lower()
    return suffix == ".json" or (path.is_dir() and suffix not in (".yaml", ".yml"))


def defaults_used(name_or_path: str) -> Optional[list[str]]:
    """For ``--verbose``: the defaults a config.json MODEL took (None for a shipped or YAML spec)."""
    if not is_hf_path(name_or_path):
        return None
    return load_hf_config_verbose(Path(name_or_path))[1]


def spec_to_yaml(spec) -> str:
    """Our YAML spec text for ``spec``: fields that differ from the schema defaults, plus the
    discriminators; ``ModelSpec.model_validate(yaml.safe_load(text)) == spec``."""
    import yaml

    data = spec.model_dump(mode="json", exclude_defaults=True)
    for key in ("attention", "linear_attention", "vision"):
        part = getattr(spec, key)
        if part is not None:
            data[key] = {"kind": part.kind, **{k: v for k, v in data.get(key, {}).items() if k != "kind"}}
    data["torch_dtype"] = spec.torch_dtype
    order = list(type(spec).model_fields)
    data = {k: data[k] for k in order if k in data}
    class Dumper(yaml.SafeDumper):
        """Mappings in block style, lists in flow style (as the shipped specs are written)."""

    Dumper.add_representer(list, lambda d, v: d.represent_sequence("tag:yaml.org,2002:seq", v, flow_style=True))
    Dumper.add_representer(dict, lambda d, v: d.represent_mapping("tag:yaml.org,2002:map", v, flow_style=False))
    header = f"# {spec.display_name}: written by `llm-cost import` from {spec.source.url}\n"
    body = yaml.dump(data, Dumper=Dumper, sort_keys=False, allow_unicode=True, width=100)
    return header + body


@dataclass(frozen=True)
class ImportResult:
    """What ``llm-cost import`` wrote."""

    path: str
    name: str
    display_name: str
    model_type: str
    total_params: int
    defaults: list[str]
    source: str


_NAME_RE = re.compile(r"[a-z0-9][a-z0-9._+-]*")


def import_config(config: Path, out: Path, name: Optional[str] = None, force: bool = False) -> ImportResult:
    """Write our YAML spec for the config.json ``config`` (or its folder) to ``out``, atomically.

    The spec's name is ``name`` or ``out``'s stem (the catalogue finds a spec by its file stem).
    The text is validated by loading it back (it must give the same spec) before anything is
    written; ``out`` is never overwritten unless ``force``; the file appears whole or not at all
    (temporary file in the same folder, then rename). Raises SpecError / InputError (exit 2).
    """
    import os
    import tempfile

    import yaml

    from .params import count_params
    from .spec import ModelSpec
    from .units import InputError

    out = Path(out)
    if out.suffix.lower() not in (".yaml", ".yml"):
        raise InputError(f"--out: {str(out)!r} must end in .yaml or .yml")
    spec_name = (name if name is not None else out.stem).strip().lower()
    if not _NAME_RE.fullmatch(spec_name):
        raise InputError(f"--name: {spec_name!r} is not a valid spec name (lower-case letters, digits, . _ + -)")
    if out.is_dir():
        raise InputError(f"--out: {out} is a folder; give a file path such as {out / (spec_name + '.yaml')}")
    if not out.parent.is_dir():
        raise InputError(f"--out: folder {out.parent} does not exist")
    if out.exists() and not force:
        raise InputError(f"{out}: already exists; pass --force to overwrite it")
    spec, defaults = load_hf_config_verbose(Path(config), spec_name)
    text = spec_to_yaml(spec)
    if ModelSpec.model_validate(yaml.safe_load(text)) != spec:  # pragma: no cover - a bug, not a user error
        raise SpecError(f"{out}: the YAML written for {spec_name} would not load back to the same spec")
    total = count_params(spec).total_params
    fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        if force:
            os.replace(tmp, out)
        else:
            try:
                os.link(tmp, out)  # fails if out appeared meanwhile: never clobber without --force
            except FileExistsError:
                raise InputError(f"{out}: already exists; pass --force to overwrite it") from None
            except OSError:  # filesystems without hard links
                if out.exists():
                    raise InputError(f"{out}: already exists; pass --force to overwrite it") from None
                os.replace(tmp, out)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    return ImportResult(str(out), spec.name, spec.display_name, spec.model_type, total, defaults, spec.source.url)
