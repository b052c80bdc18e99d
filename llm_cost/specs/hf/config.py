"""Reading a config.json: typed access to its keys, the family defaults a missing key takes
(recorded for ``--verbose``), and the shape-changing keys a mapping must place (see
:mod:`llm_cost.hf`)."""

from __future__ import annotations

import builtins  # the getters int, str, float, bool, dict shadow the built-in names in _Config
import json
import math
from typing import Any, Optional

from llm_cost.core.errors import SpecError
from llm_cost.core.records import record
from llm_cost.core.types import LayerType
from llm_cost.specs.files import shown
from llm_cost.specs.hf.defaults import DefaultsTable
from llm_cost.specs.hf.quantization import MODELLED_METHODS, read_quantization
from llm_cost.specs.schema import MAX_LAYERS

_ABSENT = object()
_REQUIRED = object()

#: Keys that change weight shapes or the KV cache in some transformers family. A key from this set
#: that the family's mapping did not read, with a value that is not inert, is an error.
SHAPE_KEYS = frozenset(
    {
        # attention layout and biases
        "attention_bias",
        "qkv_bias",
        "o_proj_bias",
        "bias",
        "use_bias",
        "add_bias_linear",
        "head_dim",
        "num_key_value_heads",
        "num_kv_heads",
        "n_head_kv",
        "multi_query",
        "new_decoder_architecture",
        "parallel_attn",
        "num_ln_in_parallel_attn",
        "alibi",
        "use_qk_norm",
        "qk_layernorm",
        "qk_norm",
        "attn_output_gate",
        "kv_channels",
        "add_cross_attention",
        "attention_chunk_size",
        # feed-forward widths and biases
        "intermediate_size",
        "mlp_bias",
        "n_inner",
        "ffn_hidden_size",
        "ffn_dim",
        "d_ff",
        # mixture of experts
        "num_experts",
        "num_local_experts",
        "n_routed_experts",
        "moe_intermediate_size",
        "shared_expert_intermediate_size",
        "n_shared_experts",
        "num_shared_experts",
        "num_experts_per_tok",
        "experts_per_token",
        "first_k_dense_replace",
        "decoder_sparse_step",
        "mlp_only_layers",
        "moe_layer_freq",
        "topk_method",
        "moe_layer_start_index",
        "moe_layer_end_index",
        # MLA
        "q_lora_rank",
        "kv_lora_rank",
        "qk_nope_head_dim",
        "qk_rope_head_dim",
        "v_head_dim",
        "index_topk",
        "index_n_heads",
        "index_head_dim",
        # layer schedule, linear attention
        "layer_types",
        "full_attention_interval",
        "sliding_window_pattern",
        "_sliding_window_pattern",
        "linear_num_key_heads",
        "linear_num_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_conv_kernel_dim",
        # extra modules, embeddings
        "num_nextn_predict_layers",
        "mtp_num_hidden_layers",
        "mtp_use_dedicated_embeddings",
        "vision_config",
        "text_config",
        "audio_config",
        "tie_word_embeddings",
        "n_positions",
        "embedding_size",
        "word_embed_proj_dim",
        "projection_dim",
    }
)

#: Keys of a Qwen2-VL ``vision_config`` that belong to other vision towers (Qwen2.5-VL ...).
_VISION_SHAPE_KEYS = frozenset(
    {
        "intermediate_size",
        "out_hidden_size",
        "fullatt_block_indexes",
        "window_size",
        "num_position_embeddings",
        "deepstack_visual_indexes",
        "num_layers",
    }
)

_DTYPES = {
    "float32": "fp32",
    "float": "fp32",
    "fp32": "fp32",
    "bfloat16": "bf16",
    "bf16": "bf16",
    "float16": "fp16",
    "half": "fp16",
    "fp16": "fp16",
    "float8_e4m3fn": "fp8",
    "float8_e5m2": "fp8",
    "fp8": "fp8",
    "int8": "int8",
}

_LAYER_TYPE_REMAP: dict[str, LayerType] = {
    "attention": LayerType.FULL_ATTENTION,
    "full": LayerType.FULL_ATTENTION,
    "mamba": LayerType.LINEAR_ATTENTION,
    "linear": LayerType.LINEAR_ATTENTION,
}


class _Config:
    """A config.json mapping being read: typed getters that record the keys read and the defaults used."""

    def __init__(
        self,
        data: dict[str, Any],
        file: str,
        family: str,
        defaults: list[str],
        notes: list[str],
        prefix: str = "",
        table: Optional[DefaultsTable] = None,
    ) -> None:
        self.data = data
        self.file = file
        self.family = family
        self.defaults = defaults
        self.notes = notes
        self.prefix = prefix
        self.table = table  # transformers' defaults for a key the config leaves out
        self.table_first = False  # True: the table's default wins over the mapping's (a generic read)
        self.used: set[str] = set()
        self.synonyms: dict[str, str] = {}  # spellings of one attribute (transformers' attribute_map), both ways

    def read_aliases(self) -> None:
        """Make each spelling pair of the configuration class's ``attribute_map`` readable under
        both names (transformers 5 saves the attribute's name: Qwen3MoeConfig's ``num_experts`` as
        ``num_local_experts``, NemotronHConfig's ``layer_types`` as ``layers_block_type``); a config
        that gives both with different values is refused, naming both."""
        aliases = self.table.aliases if self.table is not None else {}
        for alias, attribute in aliases.items():
            if alias in self.data and attribute in self.data:
                if json.dumps(self.data[alias], sort_keys=True) != json.dumps(self.data[attribute], sort_keys=True):
                    assert self.table is not None
                    raise SpecError(
                        f"{self.file}: {self.prefix}{alias} = {shown(json.dumps(self.data[alias]), 40)} and "
                        f"{self.prefix}{attribute} = {shown(json.dumps(self.data[attribute]), 40)} disagree; "
                        f"{self.table.name} reads both as one attribute (attribute_map)"
                    )
            elif attribute in self.data:
                self.data[alias] = self.data[attribute]
            elif alias in self.data:
                self.data[attribute] = self.data[alias]
            else:
                continue
            self.synonyms[alias], self.synonyms[attribute] = attribute, alias

    def class_name(self) -> builtins.str:
        """The configuration class whose defaults this config takes (``transformers 5.24.0
        Qwen3MoeConfig``), or the model_type where the table has none."""
        name = self.table.name if self.table is not None else ""
        return name if " " in name.removeprefix("transformers ") else f"model_type {self.family}"

    def is_used(self, key: str) -> bool:
        """True when ``key`` (or its other spelling) was read or marked understood."""
        return key in self.used or self.synonyms.get(key) in self.used

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

    def known(self, key: str) -> bool:
        """True when ``key`` is present with a non-null value or the defaults table has one."""
        return self.has(key) or (key not in self.data and self.table is not None and self.table.get(key) is not None)

    def spelling(self, *keys: str) -> str:
        """:meth:`alias`, except that with none present the spelling the defaults table has wins."""
        key = self.alias(*keys)
        if not self.has(key) and self.table is not None:
            return next((k for k in keys if k not in self.data and self.table.get(k) is not None), key)
        return key

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
    def _default(self, key: str, default: Any, why: Optional[str], absent: bool = True) -> Any:
        known = self.table.get(key) if self.table is not None and absent else None
        if known is not None and (default is _REQUIRED or self.table_first or (known == default and why is None)):
            assert self.table is not None
            default, why = known, f"absent; {self.table.name} default"
        if default is _REQUIRED:
            raise self.error(key, f"is required for model_type '{self.family}' (missing or null)")
        shown = "null" if default is None else (str(default).lower() if isinstance(default, bool) else repr(default))
        why = why or f"absent; {self.family} default"
        if not absent:  # an explicit null that transformers accepts: say so, and what it stands for
            why = "null in the config" + why.removeprefix("absent").removeprefix(" or null")
        self.defaults.append(f"{self.prefix}{key} = {shown} ({why})")
        return default

    def int(
        self,
        key: str,
        default: Any = _REQUIRED,
        why: Optional[str] = None,
        minimum: int = 1,
        maximum: Optional[int] = None,
    ) -> Any:
        """An integer of at least ``minimum`` (and at most ``maximum``: a count the mapping expands,
        such as the layers, is bounded before anything is built from it)."""
        value = self.raw(key)
        if value is _ABSENT or value is None:
            return self._default(key, default, why, value is _ABSENT)
        if isinstance(value, bool) or not isinstance(value, int):
            if not (isinstance(value, float) and value.is_integer() and value >= minimum):
                raise self.error(key, f"must be an integer >= {minimum} (got {shown(repr(value), 60)})")
            value = int(value)
        if value < minimum:
            raise self.error(key, f"must be an integer >= {minimum} (got {shown(repr(value), 60)})")
        if maximum is not None and value > maximum:
            raise self.error(key, f"must be an integer <= {maximum:,} (got {shown(repr(value), 60)})")
        return value

    def opt_int(self, key: builtins.str, minimum: builtins.int = 1) -> Optional[builtins.int]:
        """An integer whose null (or absence) means "none" (e.g. ``sliding_window: null``); no default recorded."""
        if self.data.get(key) is None:
            self.used.add(key)
            return None
        return self.int(key, minimum=minimum)

    def int_or_null(
        self, key: builtins.str, default: Any, why: Optional[builtins.str] = None, minimum: builtins.int = 1
    ) -> Optional[builtins.int]:
        """An integer where an explicit null means "none" (``q_lora_rank: null``) and absence the default."""
        if key in self.data and self.data[key] is None:
            self.used.add(key)
            return None
        return self.int(key, default, why, minimum)

    def bool(self, key: str, default: Any = _REQUIRED, why: Optional[str] = None) -> Any:
        value = self.raw(key)
        if value is _ABSENT or value is None:
            return self._default(key, default, why, value is _ABSENT)
        if not isinstance(value, bool):
            raise self.error(key, f"must be true or false (got {value!r})")
        return value

    def float(self, key: str, default: Any = _REQUIRED, why: Optional[str] = None) -> Any:
        value = self.raw(key)
        if value is _ABSENT or value is None:
            return self._default(key, default, why, value is _ABSENT)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise self.error(key, f"must be a finite number > 0 (got {value!r})")
        return float(value)

    def str(self, key: str, default: Any = _REQUIRED, why: Optional[str] = None) -> Any:
        value = self.raw(key)
        if value is _ABSENT or value is None:
            return self._default(key, default, why, value is _ABSENT)
        if not isinstance(value, str):
            raise self.error(key, f"must be a string (got {value!r})")
        return value

    def int_list(
        self, key: builtins.str, default: Any = _REQUIRED, why: Optional[builtins.str] = None, minimum: builtins.int = 0
    ) -> Any:
        value = self.raw(key)
        if value is _ABSENT or value is None:
            return self._default(key, default, why, value is _ABSENT)
        if not isinstance(value, list) or any(
            isinstance(v, bool) or not isinstance(v, int) or v < minimum for v in value
        ):
            raise self.error(key, f"must be a list of integers >= {minimum} (got {value!r})")
        return list(value)

    def dict(self, key: builtins.str) -> Optional[builtins.dict[builtins.str, Any]]:
        value = self.raw(key)
        if value is _ABSENT or value is None:
            return None
        if not isinstance(value, dict):
            raise self.error(key, f"must be a mapping (got {type(value).__name__})")
        return value

    # -- the final check ---------------------------------------------------------------------------
    def check_unplaced(self, shape_keys: frozenset[builtins.str] = SHAPE_KEYS) -> None:
        """Raise for a shape-changing key that the mapping did not read (inert values are fine)."""
        for key in sorted(self.data):
            if self.is_used(key) or key not in shape_keys:
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


@record
class _Family:
    """Defaults of one family (its transformers config class)."""

    tie: bool
    max_pos: int
    rope_theta: Optional[float]
    head_dim: Optional[int] = None  # None: hidden_size / num_attention_heads
    dtype: str = "bf16"
    partial_rotary: float = 1.0


# -- shared pieces ----------------------------------------------------------------------------------


def _common(
    c: _Config,
    fam: _Family,
    *,
    hidden_key: str = "hidden_size",
    layers_key: str = "num_hidden_layers",
    rope: bool = True,
    nope: bool = False,
) -> dict[str, Any]:
    """vocab, width, depth, tying, positions, RoPE and dtype: the fields every family has
    (``nope``: no position encoding at all; RoPE keys are then read and ignored)."""
    out: dict[str, Any] = {
        "vocab_size": c.int("vocab_size"),
        "hidden_size": c.int(hidden_key),
        "num_hidden_layers": c.int(layers_key, maximum=MAX_LAYERS),
        "tie_word_embeddings": c.bool("tie_word_embeddings", fam.tie),
    }
    max_key = c.alias("max_position_embeddings", "n_positions") if not rope else "max_position_embeddings"
    out["max_position_embeddings"] = c.int(max_key, fam.max_pos)
    if nope:
        c.ignore("rope_theta", "rope_scaling", "rope_parameters", "partial_rotary_factor")
        out["position_embedding"] = "none"
    elif rope:
        out.update(_rope(c, fam))
    else:
        out["position_embedding"] = "learned"
    out["torch_dtype"] = _dtype(c, fam)
    out.update(read_quantization(c.dict("quantization_config"), out["torch_dtype"], c.notes, c.error))
    return out


def check_inert_keys(c: _Config) -> None:
    """SpecError for keys a family may not read but no checkpoint holds in these forms: a
    ``sliding_window`` that is neither null nor an integer >= 1, a ``quantization_config`` whose
    ``quant_method`` is not a method's name."""
    window = c.data.get("sliding_window")
    if window == 0 and c.data.get("use_sliding_window") is False and not isinstance(window, bool):
        c.data["sliding_window"] = None  # Qwen2MoeConfig (transformers 5) writes 0 when use_sliding_window is false
    elif window is not None and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
        raise c.error("sliding_window", f"must be null or an integer >= 1 (got {shown(repr(window), 40)})")
    quant = c.data.get("quantization_config")
    method = quant.get("quant_method") if isinstance(quant, dict) else None
    if method is not None and not isinstance(method, str):
        raise c.error("quantization_config.quant_method", f"must name a method (got {shown(repr(method), 40)})")


def _rope(c: _Config, fam: _Family) -> dict[str, Any]:
    """rope_theta, rope_scaling and partial_rotary_factor, from the classic keys or ``rope_parameters``."""
    from pydantic import ValidationError

    from llm_cost.specs.declare import field_names
    from llm_cost.specs.schema import RopeScaling

    params = c.dict("rope_parameters") or {}
    if isinstance(params.get(LayerType.FULL_ATTENTION), dict):  # per-layer-type parameters (Gemma 3 style)
        params = params[LayerType.FULL_ATTENTION]
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
            known = set(field_names(RopeScaling)) - {"rope_type"}
            kept = {k: v for k, v in scaling.items() if k in known and v is not None}
            dropped = sorted(k for k in scaling if k not in known | {"rope_type", "type"})
            if dropped:
                c.notes.append(f"rope_scaling keys not modelled (no effect on counts): {', '.join(dropped)}")
            try:
                out["rope_scaling"] = RopeScaling.checked(rope_type=rope_type, **kept)
            except ValidationError as exc:
                first = exc.errors()[0]
                where = ".".join(str(p) for p in first["loc"])
                if not where:  # a rule across fields (RopeScaling._check): its message names them
                    raise SpecError(f"{c.file}: {first['msg'].removeprefix('Value error, ')}") from None
                raise c.error(
                    f"rope_scaling.{where}", f"is invalid: {first['msg']} (got {first.get('input')!r})"
                ) from None
    return out


def _dtype(c: _Config, fam: _Family) -> str:
    key = c.alias("torch_dtype", "dtype")
    if not c.has(key):
        dtype = fam.dtype
        c.defaults.append(f"torch_dtype = {dtype} (absent; llm-cost's {c.family} default, as the checkpoints store it)")
    else:
        raw = c.str(key)
        known = _DTYPES.get(raw.lower().removeprefix("torch."))
        if known is None:
            raise c.error(key, f"{raw!r} is not a dtype this tool models; known: {', '.join(sorted(_DTYPES))}")
        dtype = known
    quant = c.dict("quantization_config")
    if quant:
        method = str(quant.get("quant_method", "unknown"))
        if method == "fp8":
            dtype = "fp8"
        elif method not in MODELLED_METHODS:
            c.notes.append(
                f"quantization_config {method}: counts are logical parameters; weight bytes use "
                f"torch_dtype {dtype} and do not model the packed format"
            )
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
            raise c.error(
                "head_dim", f"is required: hidden_size ({d}) is not a multiple of num_attention_heads ({n_q})"
            )
        how = "null in the config" if "head_dim" in c.data else "absent"
        c.defaults.append(f"head_dim = {d // n_q} ({how}; {c.class_name()}: hidden_size / num_attention_heads)")
        head_dim = None
    if n_q % n_kv:
        raise c.error("num_key_value_heads", f"({n_kv}) must divide num_attention_heads ({n_q})")
    return n_q, n_kv, head_dim


def _gqa(n_q: int, n_kv: int, head_dim: Optional[int], **kw: Any):
    from llm_cost.specs.schema import GQAAttention

    return GQAAttention.checked(num_attention_heads=n_q, num_key_value_heads=n_kv, head_dim=head_dim, **kw)


def _layer_types(c: _Config, L: int, allowed: tuple[LayerType, ...]) -> Optional[list[LayerType]]:
    """Explicit ``layer_types`` (legacy names remapped), or None when the config has none."""
    raw = c.raw("layer_types")
    if raw is _ABSENT or raw is None:
        return None
    if not isinstance(raw, list) or not all(isinstance(t, str) for t in raw):
        raise c.error("layer_types", f"must be a list of strings (got {raw!r})")
    types: list[str] = [_LAYER_TYPE_REMAP[t] if t in _LAYER_TYPE_REMAP else t for t in raw]
    bad = sorted({t for t in types if t not in allowed})
    if bad:
        raise c.error("layer_types", f"has {', '.join(bad)}; model_type '{c.family}' supports {', '.join(allowed)}")
    if len(types) != L:
        raise c.error("layer_types", f"has {len(types)} entries but num_hidden_layers is {L}")
    return [LayerType(t) for t in types]


def _place_layers(c: _Config, out: dict[str, Any], types: list[LayerType], window: Optional[int]) -> Optional[int]:
    """Store the layer schedule in ``out`` compactly; return the sliding window to keep (or None)."""
    kinds = set(types)
    if LayerType.SLIDING_ATTENTION in kinds and window is None:
        raise c.error("sliding_window", "is null, but layer_types has sliding_attention layers")
    if kinds == {LayerType.FULL_ATTENTION}:
        return None
    if kinds == {LayerType.SLIDING_ATTENTION}:
        return window
    out["layer_types"] = types
    return window if LayerType.SLIDING_ATTENTION in kinds else None


def _qwen_sliding(c: _Config, L: int, rule: str) -> tuple[list[LayerType], Optional[int]]:
    """The Qwen ``use_sliding_window`` / ``max_window_layers`` schedule (sliding_window only when
    use_sliding_window is true). ``rule``: "from_max" (Qwen2/Qwen3: layers i >= max_window_layers
    slide), "alternate_below_max" (Qwen2-MoE: odd-numbered i < max_window_layers), "all" (Qwen3-MoE)."""
    use = c.bool("use_sliding_window", False)
    if not use:
        c.ignore("sliding_window", "max_window_layers")
        return [LayerType.FULL_ATTENTION] * L, None
    window = c.int("sliding_window", 4096)
    if rule == "all":
        c.ignore("max_window_layers")
        return [LayerType.SLIDING_ATTENTION] * L, window
    mwl = c.int("max_window_layers", 28, minimum=0)
    if rule == "from_max":
        return [LayerType.SLIDING_ATTENTION if i >= mwl else LayerType.FULL_ATTENTION for i in range(L)], window
    return [
        LayerType.SLIDING_ATTENTION if (i + 1) % 2 and i < mwl else LayerType.FULL_ATTENTION for i in range(L)
    ], window


def _mlp(c: _Config, **kw: Any):
    """The dense gated MLP of width ``intermediate_size``."""
    from llm_cost.specs.schema import MLP

    return MLP.checked(intermediate_size=c.int("intermediate_size"), hidden_act=c.str("hidden_act", "silu"), **kw)


# -- families ---------------------------------------------------------------------------------------
