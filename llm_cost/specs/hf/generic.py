"""The standard config.json vocabulary read once, for any model_type that speaks it.

Most new families recombine a known vocabulary: GQA or MLA attention, sliding windows and
``layer_types``, Gated DeltaNet linear attention, MoE with shared experts and dense-first layers,
MTP layers, tied embeddings, a ``text_config`` nested in a multimodal wrapper. :func:`read_generic`
interprets those keys as transformers' modeling files use them:

* widths and depth: ``vocab_size``, ``hidden_size``, ``num_hidden_layers``, ``intermediate_size``,
  ``tie_word_embeddings``, RoPE keys (``rope_theta`` / ``rope_parameters`` / ``partial_rotary_factor``);
* attention: MLA when ``kv_lora_rank`` is set (``q_lora_rank``, ``qk_nope_head_dim``,
  ``qk_rope_head_dim``, ``v_head_dim``; models/deepseek_v3/modeling_deepseek_v3.py), else GQA
  (``num_attention_heads``, ``num_key_value_heads``, ``head_dim``; models/llama/modeling_llama.py),
  ``attention_bias`` on q/k/v/o, per-head q/k norms with ``use_qk_norm`` / ``qk_norm``, an output
  gate with ``attn_output_gate``;
* layer schedule: ``layer_types`` (full / sliding / linear attention), else
  ``full_attention_interval`` (linear attention between full layers,
  models/qwen3_next/modeling_qwen3_next.py), else ``sliding_window`` (with ``use_sliding_window``
  where the config has it) in every layer;
* linear attention: ``linear_num_key_heads`` / ``linear_num_value_heads`` / ``linear_key_head_dim`` /
  ``linear_value_head_dim`` / ``linear_conv_kernel_dim`` (Gated DeltaNet);
* MoE, every common spelling: experts ``num_experts`` / ``num_local_experts`` / ``n_routed_experts``,
  top-k ``num_experts_per_tok`` / ``experts_per_token``, expert width ``moe_intermediate_size``
  (else ``intermediate_size``), shared experts ``n_shared_experts`` x the expert width or
  ``shared_expert_intermediate_size``, dense layers ``first_k_dense_replace``, ``moe_layer_freq``
  (DeepSeek: layer i is MoE when i % freq == 0), ``decoder_sparse_step`` (Qwen: (i + 1) % step == 0),
  ``mlp_only_layers``, ``mlp_layer_types`` (dense / sparse per layer); the router's
  e_score_correction_bias with ``topk_method`` noaux_tc;
* MTP: ``num_nextn_predict_layers`` (DeepSeek-V3 layout: the checkpoint stores embedding and head
  copies) or ``mtp_num_hidden_layers`` (Qwen3-Next layout: it does not).

A modeling file that departs from this reading has one line in
:data:`~llm_cost.specs.hf.departures.DEPARTURES` citing it (a per-head q/k norm without a config
key, a gated shared expert, a vision tower). A model_type with no line is read only when every key of its config is understood
(read here, or known to change no weight: :data:`INERT_KEYS`), and is labelled "read generically:
not checked against a checkpoint of this family"; a key that is not understood is refused, named.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Optional

from llm_cost.core.errors import SpecError
from llm_cost.core.types import LayerType
from llm_cost.specs.files import shown
from llm_cost.specs.hf.config import (
    _ABSENT,
    _common,
    _Config,
    _Family,
    _gqa,
    _heads,
    _layer_types,
    _place_layers,
)
from llm_cost.specs.hf.departures import DEPARTURES, Departures

__all__ = [
    "Departures",
    "DEPARTURES",
    "INERT_KEYS",
    "READ_KEYS",
    "read_generic",
    "generic_mapper",
    "refuse_unknown_keys",
    "generic_family",
    "mlp_layer_types",
]

#: Keys that change no weight shape and no cache size: token ids, dropout, epsilons, initialisation,
#: caching and kernel switches, router losses and scaling factors (they weigh, they are not weights).
INERT_KEYS = frozenset(
    {
        "architectures",
        "model_type",
        "_name_or_path",
        "transformers_version",
        "torch_dtype",
        "dtype",
        "bos_token_id",
        "eos_token_id",
        "pad_token_id",
        "image_token_id",
        "video_token_id",
        "vision_start_token_id",
        "vision_end_token_id",
        "attention_dropout",
        "hidden_dropout",
        "dropout",
        "rms_norm_eps",
        "layer_norm_eps",
        "norm_eps",
        "initializer_range",
        "use_cache",
        "pretraining_tp",
        "rope_scaling",
        "rope_parameters",
        "rope_theta",
        "partial_rotary_factor",
        "rope_interleave",
        "use_mrope",
        "max_position_embeddings",
        "norm_topk_prob",
        "router_aux_loss_coef",
        "output_router_logits",
        "routed_scaling_factor",
        "n_group",
        "topk_group",
        "scoring_func",
        "aux_loss_alpha",
        "seq_aux",
        "ep_size",
        "hidden_act",
        "quantization_config",
        "output_attentions",
        "output_hidden_states",
        "return_dict",
        "use_return_dict",
        "tokenizer_class",
        "auto_map",
    }
)


def generic_family(model_type: str) -> _Family:
    """Family defaults of a model_type read generically: untied, bf16, positions and RoPE base
    taken from the config (transformers' class defaults where the table has them)."""
    return _Family(tie=False, max_pos=4096, rope_theta=10000.0)


def read_generic(c: _Config, fam: _Family, dep: Optional[Departures]) -> dict[str, Any]:
    """The ModelSpec fields of a config read through the standard vocabulary (module docstring)
    with ``dep``'s departures; SpecError naming the key for a value that cannot be placed."""
    dep = dep or Departures(cite="the standard config vocabulary")
    _restated(c, dep)
    if dep.declared_only:
        _undeclared(c, dep)
    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    types = [LayerType.FULL_ATTENTION] * L if dep.window_rule is not None else _schedule(c, L, dep)
    if c.has("kv_lora_rank"):
        if set(types) != {LayerType.FULL_ATTENTION}:
            raise c.error("layer_types", "has sliding or linear layers; MLA layers are read as full attention only")
        c.ignore("sliding_window", "use_sliding_window", "max_window_layers")
        out["attention"] = _mla(c)
    else:
        out["attention"] = _gqa_of(c, d, fam, dep, types, out)
    if LayerType.LINEAR_ATTENTION in types:
        out["layer_types"] = types
        out["linear_attention"] = _linear(c)
    _ffn(c, out, L, dep)
    _mtp(c, out, dep)
    if dep.norms_per_layer is not None:
        out["norms_per_layer"] = dep.norms_per_layer
    if dep.norm_type is not None:
        out["norm_type"] = dep.norm_type
    if dep.lm_head_bias_key is not None:
        out["lm_head_bias"] = c.bool(dep.lm_head_bias_key, False)
    if dep.vision is not None:
        from llm_cost.specs.hf.vision import VISION_READERS

        out["vision"] = VISION_READERS[dep.vision](c, out)
    if dep.extra is not None:
        dep.extra(c, out)
    return out


def generic_mapper(model_type: str) -> Callable[[_Config, _Family], dict[str, Any]]:
    """The mapping of a supported family read by :func:`read_generic` with its
    :data:`DEPARTURES` line (transformers' defaults first for absent keys)."""

    def mapper(c: _Config, fam: _Family) -> dict[str, Any]:
        c.table_first = True
        return read_generic(c, fam, DEPARTURES[model_type])

    mapper.__doc__ = DEPARTURES[model_type].cite
    return mapper


#: Keys every decoder's configuration has in substance, whether its class declares them or derives
#: them (``head_dim`` = hidden_size / heads where a class does not store it).
_EVERY_FAMILY = frozenset(
    {
        "vocab_size",
        "hidden_size",
        "num_hidden_layers",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "intermediate_size",
        "tie_word_embeddings",
    }
)


def _undeclared(c: _Config, dep: Departures) -> None:
    """SpecError for a shape key the family's configuration class does not declare (see
    :class:`Departures` ``declared_only``), in the words of the unplaced-key check."""
    from llm_cost.specs.hf.config import SHAPE_KEYS
    from llm_cost.specs.hf.defaults import family_keys

    declared = (
        family_keys(c.family)
        | family_keys(dep.declared_as or c.family)
        | _EVERY_FAMILY
        | set(dep.extra_keys)
        | {k for k, _ in dep.restates}
        | ({"vision_config"} if dep.vision is not None else set())
        | set(c.synonyms)
    )
    for key in sorted(c.data):
        value = c.data[key]
        if key in declared or key not in (READ_KEYS | SHAPE_KEYS) or key in INERT_KEYS:
            continue
        if value is None or value is False or value == 0 or value == [] or value == {}:
            c.ignore(key)
            continue
        shown = json.dumps(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise SpecError(
            f"{c.file}: {c.prefix}{key} = {shown} changes the weight shapes or the KV cache, and the "
            f"mapping for model_type '{c.family}' cannot place it; refusing to guess a count"
        )


def _restated(c: _Config, dep: Departures) -> None:
    for key, implied in dep.restates:
        if key in c.data:
            value = c.raw(key)
            if value != implied:
                raise c.error(key, f"= {value!r}: model_type '{c.family}' always has {key} = {implied!r} ({dep.cite})")


def _schedule(c: _Config, L: int, dep: Departures) -> list[LayerType]:
    """Each layer's token mixer: ``layer_types``, else ``full_attention_interval`` (linear
    attention between), else sliding attention everywhere when a window is in force, else full."""
    allowed = (LayerType.FULL_ATTENTION, LayerType.SLIDING_ATTENTION, LayerType.LINEAR_ATTENTION)
    types = _layer_types(c, L, allowed)
    if types is not None:
        c.ignore("full_attention_interval", *dep.window_every_keys)
        return types
    if dep.window_every is not None:
        key = c.alias(*dep.window_every_keys) if dep.window_every_keys else None
        k = c.int(key, dep.window_every) if key is not None else dep.window_every
        return [LayerType.FULL_ATTENTION if (i + 1) % k == 0 else LayerType.SLIDING_ATTENTION for i in range(L)]
    if c.known("full_attention_interval") or dep.full_attention_interval is not None:
        k = c.int("full_attention_interval", dep.full_attention_interval)
        return [LayerType.LINEAR_ATTENTION if (i + 1) % k else LayerType.FULL_ATTENTION for i in range(L)]
    if _window(c) is not None:
        return [LayerType.SLIDING_ATTENTION] * L
    return [LayerType.FULL_ATTENTION] * L


def _window(c: _Config) -> Optional[int]:
    """The sliding window in force: ``sliding_window`` (absent: the configuration class's default,
    Mistral's 4,096), unless ``use_sliding_window`` is false."""
    if "use_sliding_window" in c.data and not c.bool("use_sliding_window", False):
        c.ignore("sliding_window", "max_window_layers")
        return None
    if "sliding_window" not in c.data and c.known("sliding_window"):
        return c.int("sliding_window")
    return c.opt_int("sliding_window")


def _bias(c: _Config, key: str) -> bool:
    """A bias switch: the config's value, else the configuration class's default (recorded), else
    false where the class has no such switch (nothing recorded)."""
    if key in c.data or c.known(key):
        return bool(c.bool(key, False))
    c.ignore(key)
    return False


def _flag(c: _Config, *keys: str) -> bool:
    """A boolean that only a present key switches on (no default recorded when absent)."""
    key = c.alias(*keys)
    return bool(c.bool(key)) if c.has(key) else False


def _qwen_window(c: _Config, L: int, rule: str, out: dict[str, Any]) -> Optional[int]:
    """The Qwen schedule: explicit ``layer_types`` slide over ``sliding_window`` (default 4,096)
    when any layer slides or ``use_sliding_window`` is set; else ``use_sliding_window`` and
    ``max_window_layers`` by ``rule``. The schedule is stored in ``out``; returns the window."""
    from llm_cost.specs.hf.config import _qwen_sliding

    explicit = _layer_types(c, L, (LayerType.FULL_ATTENTION, LayerType.SLIDING_ATTENTION))
    if explicit is not None:
        use = c.bool("use_sliding_window", False)
        window = c.int("sliding_window", 4096) if use or LayerType.SLIDING_ATTENTION in explicit else None
        c.ignore("sliding_window", "max_window_layers")
        types = explicit
    else:
        types, window = _qwen_sliding(c, L, rule)
    return _place_layers(c, out, types, window)


def _gqa_of(c: _Config, d: int, fam: _Family, dep: Departures, types: list[LayerType], out: dict[str, Any]):
    n_q, n_kv, hd = _heads(c, d, fam)
    if dep.bias_key is None:
        bias = True
    elif dep.bias_default:
        bias = bool(c.bool(dep.bias_key, True))
    else:
        bias = _bias(c, dep.bias_key)
    window = None
    if dep.window_rule is not None:
        window = _qwen_window(c, out["num_hidden_layers"], dep.window_rule, out)
    elif LayerType.LINEAR_ATTENTION in types:
        if LayerType.SLIDING_ATTENTION in types:
            raise c.error("layer_types", "mixes sliding and linear attention, which the spec cannot place")
        c.ignore("sliding_window", "use_sliding_window", "max_window_layers")
    elif LayerType.SLIDING_ATTENTION in types:
        window = _place_layers(c, out, types, _window(c))
    else:
        c.ignore("sliding_window", "use_sliding_window", "max_window_layers")
    gate = dep.output_gate or _flag(c, "attn_output_gate")
    return _gqa(
        n_q,
        n_kv,
        hd,
        attention_bias=bias,
        o_proj_bias=bias and dep.o_proj_bias,
        qk_norm=dep.qk_norm or _flag(c, "use_qk_norm", "qk_norm"),
        qk_norm_width=dep.qk_norm_width,
        sinks=dep.sinks,
        output_gate=gate,
        sliding_window=window,
    )


def _mla(c: _Config):
    from llm_cost.specs.schema import MLAAttention

    c.ignore("num_key_value_heads", "head_dim")  # MLA: K/V heads = n_h; head_dim derived
    return MLAAttention.checked(
        num_attention_heads=c.int("num_attention_heads"),
        q_lora_rank=c.int_or_null("q_lora_rank", None),
        kv_lora_rank=c.int("kv_lora_rank"),
        qk_nope_head_dim=c.int("qk_nope_head_dim"),
        qk_rope_head_dim=c.int("qk_rope_head_dim"),
        v_head_dim=c.int("v_head_dim"),
        attention_bias=_bias(c, "attention_bias"),
    )


def _linear(c: _Config):
    from llm_cost.specs.schema import LinearAttention

    return LinearAttention.checked(
        linear_num_key_heads=c.int("linear_num_key_heads"),
        linear_num_value_heads=c.int("linear_num_value_heads"),
        linear_key_head_dim=c.int("linear_key_head_dim"),
        linear_value_head_dim=c.int("linear_value_head_dim"),
        linear_conv_kernel_dim=c.int("linear_conv_kernel_dim"),
    )


#: The spellings of a dense-or-MoE schedule other than ``mlp_layer_types`` (transformers 5 saves
#: the list it derives from them beside them).
_SCHEDULE_KEYS = ("first_k_dense_replace", "moe_layer_freq", "decoder_sparse_step", "mlp_only_layers")


def mlp_layer_types(c: _Config, L: int) -> Optional[list[int]]:
    """The dense layers an explicit ``mlp_layer_types`` list ('dense' / 'sparse' per layer) names,
    or None without one. Where the config also gives the older spellings (transformers 5 saves
    both), they must describe the same layers: SpecError naming both otherwise."""
    listed = c.raw("mlp_layer_types")
    if listed is None or listed is _ABSENT:
        return None
    if not isinstance(listed, list) or len(listed) != L or any(t not in ("dense", "sparse") for t in listed):
        raise c.error("mlp_layer_types", f"must list 'dense' or 'sparse' for each of the {L} layers")
    dense = [i for i, t in enumerate(listed) if t == "dense"]
    given = [k for k in _SCHEDULE_KEYS if c.has(k)]
    if given:
        only, first_k, step = _schedule_of(c, L, table=False)
        implied = sorted(set(only) | set(range(first_k)) | {i for i in range(L) if (i + 1) % step})
        if implied != dense:
            raise c.error(
                "mlp_layer_types",
                f"names dense layers {shown(str(dense), 40)}, but {', '.join(given)} name {shown(str(implied), 40)}",
            )
    c.ignore(*_SCHEDULE_KEYS)
    return dense


def _moe_layers(c: _Config, L: int) -> tuple[list[int], int, int]:
    """(the layers listed dense, first_k_dense_replace, decoder_sparse_step) from whichever of the
    dense-layer spellings the config uses."""
    listed = mlp_layer_types(c, L)
    if listed is not None:
        return listed, 0, 1
    return _schedule_of(c, L, table=True)


def _schedule_of(c: _Config, L: int, table: bool) -> tuple[list[int], int, int]:
    """(dense layers of ``mlp_only_layers`` and ``moe_layer_freq``, first_k_dense_replace,
    decoder_sparse_step) from the config's keys (and, with ``table``, the class defaults)."""
    first_k = min(_present_int(c, "first_k_dense_replace", 0, minimum=0, table=table), L)
    freq = _present_int(c, "moe_layer_freq", 1, table=table, maximum=max(L, 1))
    step = _present_int(c, "decoder_sparse_step", 1, table=table, maximum=max(L, 1))
    present = c.known("mlp_only_layers") if table else c.has("mlp_only_layers")
    only = set(c.int_list("mlp_only_layers") if present else [])
    if any(i >= L for i in only):
        raise c.error("mlp_only_layers", f"lists layers beyond the {L} layers (numbered 0..{L - 1})")
    c.ignore("mlp_only_layers")
    only |= {i for i in range(first_k, L) if i % freq}
    return sorted(only), first_k, step


def _present_int(
    c: _Config, key: str, absent: int, minimum: int = 1, table: bool = True, maximum: Optional[int] = None
) -> int:
    """``key`` when the config (or, with ``table``, the defaults table) has it, else ``absent``
    (the reading of a config without the key, not a family default: no default is recorded)."""
    c.ignore(key)
    present = c.known(key) if table else c.has(key)
    return c.int(key, minimum=minimum, maximum=maximum) if present else absent


def _dense_mlp(c: _Config, dep: Departures):
    """The dense gated MLP of ``intermediate_size``, its activation and bias as ``dep`` names them."""
    from llm_cost.specs.schema import MLP

    key = next((k for k in dep.act_keys if c.has(k)), dep.act_keys[0])
    c.ignore(*dep.act_keys)
    return MLP.checked(
        intermediate_size=c.int("intermediate_size"),
        hidden_act=c.str(key, dep.act_default),
        mlp_bias=_bias(c, dep.mlp_bias_key),
    )


def _check_experts(c: _Config, experts: int) -> None:
    """SpecError for expert fields no model is built from: ``n_routed_experts: 0`` (DeepSeek's
    spelling: its decoder layers build an MoE block from layer first_k_dense_replace on whatever the
    count, transformers models/deepseek_v3/modeling_deepseek_v3.py DeepseekV3DecoderLayer, and
    top-k routing over no experts cannot run; null is the dense form) and ``num_local_experts: 0``
    (Mixtral's, gpt-oss's and Llama 4's: every such layer is an MoE block, modeling_mixtral.py
    MixtralDecoderLayer; Qwen2-MoE's and Qwen3-MoE's ``num_experts: 0`` is their dense form and stays, as
    ``num_local_experts`` where Qwen3MoeConfig's attribute_map reads it as ``num_experts``), and an ``n_group`` that does
    not divide the experts (grouped top-k splits the experts into n_group equal groups,
    DeepseekV3TopkRouter / DeepseekV3MoE.route_tokens_to_experts)."""
    for key in ("n_routed_experts", "num_local_experts"):  # num_experts 0 is Qwen2-MoE's dense form
        if c.data.get(key) == 0:
            if c.family == "qwen3_moe" and c.synonyms.get(key) == "num_experts":  # saved so by transformers 5:
                continue  # dense at 0 as Qwen2-MoE (modeling_qwen3_moe.py Qwen3MoeDecoderLayer); Mixtral is not
            raise c.error(key, "= 0 leaves the MoE layers no routed expert to choose; give the expert count")
    if experts and c.has("n_group"):
        groups = c.int("n_group")
        if experts % groups:
            raise c.error("n_group", f"= {groups} does not divide the {experts} routed experts into equal groups")


def _ffn(c: _Config, out: dict[str, Any], L: int, dep: Departures) -> None:
    from llm_cost.specs.schema import MoE

    key = c.spelling("num_experts", "num_local_experts", "n_routed_experts")
    E = (c.int_or_null(key, 0, minimum=0) or 0) if key in c.data or c.known(key) else 0
    _check_experts(c, E)
    if not E:
        c.ignore(
            "num_experts_per_tok",
            "experts_per_token",
            "moe_intermediate_size",
            "n_shared_experts",
            "shared_expert_intermediate_size",
            "first_k_dense_replace",
            "moe_layer_freq",
            "decoder_sparse_step",
            "mlp_only_layers",
            "mlp_layer_types",
            "topk_method",
        )
        out["mlp"] = _dense_mlp(c, dep)
        return
    expert_width_key = "moe_intermediate_size" if c.known("moe_intermediate_size") else "intermediate_size"
    width = c.int(expert_width_key)
    c.ignore("moe_intermediate_size")
    if c.known("shared_expert_intermediate_size"):
        shared = c.int("shared_expert_intermediate_size", minimum=0)
        c.ignore("n_shared_experts")
    else:
        shared = (c.int_or_null("n_shared_experts", 0, minimum=0) or 0) * width if c.known("n_shared_experts") else 0
        c.ignore("n_shared_experts")
        c.ignore("shared_expert_intermediate_size")
    if dep.shared_expert_gate and not shared:
        raise c.error(
            "shared_expert_intermediate_size",
            f"= 0 leaves the always-present shared_expert_gate [1, d] that the spec cannot place ({dep.cite})",
        )
    dense, first_k, step = _moe_layers(c, L)
    topk = c.str("topk_method") if c.known("topk_method") else "greedy"
    c.ignore("topk_method")
    out["moe"] = MoE.checked(
        num_experts=E,
        num_experts_per_tok=c.int(c.spelling("num_experts_per_tok", "experts_per_token")),
        moe_intermediate_size=width,
        shared_expert_intermediate_size=shared,
        shared_expert_gate=dep.shared_expert_gate,
        router_bias=dep.router_bias or topk == "noaux_tc",
        expert_bias=dep.expert_bias,
        first_k_dense_replace=first_k,
        decoder_sparse_step=step,
        mlp_only_layers=[i for i in dense if i >= first_k],
    )
    if first_k or dense or any((i + 1) % step for i in range(L)):
        out["mlp"] = _dense_mlp(c, dep)
    else:
        c.ignore("intermediate_size", "hidden_act")
        if expert_width_key != "intermediate_size":
            c.notes.append("intermediate_size is unused: every layer is MoE")


def _mtp(c: _Config, out: dict[str, Any], dep: Departures) -> None:
    """The MTP layers: DeepSeek's ``num_nextn_predict_layers`` (``dep.mtp_stores_shared``: with
    embedding and head copies), Qwen3-Next's ``mtp_num_hidden_layers`` (none), or, for a config
    that declares neither, the ``dep.stored_mtp_layers`` its checkpoints store (stated in a note)."""
    from llm_cost.specs.schema import MTP

    key = c.alias("num_nextn_predict_layers", "num_mtp_layers")
    deepseek = c.int(key, 0, minimum=0) if c.has(key) else 0
    qwen = c.int("mtp_num_hidden_layers", 0, minimum=0) if c.has("mtp_num_hidden_layers") else 0
    if dep.stored_mtp_layers and not c.has(key) and "mtp_num_hidden_layers" not in c.data:
        qwen = dep.stored_mtp_layers
        c.notes.append(
            f"{qwen} MTP layer (mtp.*) counted in the checkpoint total as the checkpoints store it; the config "
            "does not declare it and transformers does not load it"
        )
    c.ignore("mtp_num_hidden_layers")
    if deepseek and qwen:
        raise c.error("mtp_num_hidden_layers", "and num_nextn_predict_layers are both set: two MTP layouts")
    if c.data.get("mtp_use_dedicated_embeddings") is True:
        raise c.error("mtp_use_dedicated_embeddings", "= true: dedicated MTP embeddings cannot be placed")
    if qwen > 1:
        raise c.error(
            "mtp_num_hidden_layers",
            f"= {qwen}: one fc with several MTP layers cannot be placed (the spec models one module per layer)",
        )
    if deepseek:
        out["mtp"] = MTP.checked(num_nextn_predict_layers=deepseek, checkpoint_stores_shared=dep.mtp_stores_shared)
    elif qwen:
        out["mtp"] = MTP.checked(num_nextn_predict_layers=qwen, checkpoint_stores_shared=False)


#: The keys :func:`read_generic` interprets (with :data:`INERT_KEYS`, its whole vocabulary).
READ_KEYS = frozenset(
    {
        "vocab_size",
        "hidden_size",
        "num_hidden_layers",
        "intermediate_size",
        "mlp_bias",
        "num_attention_heads",
        "num_key_value_heads",
        "head_dim",
        "attention_bias",
        "layer_types",
        "full_attention_interval",
        "kv_lora_rank",
        "q_lora_rank",
        "qk_nope_head_dim",
        "qk_rope_head_dim",
        "v_head_dim",
        "linear_num_key_heads",
        "linear_num_value_heads",
        "linear_key_head_dim",
        "linear_value_head_dim",
        "linear_conv_kernel_dim",
        "num_experts",
        "num_local_experts",
        "n_routed_experts",
        "num_experts_per_tok",
        "experts_per_token",
        "moe_intermediate_size",
        "shared_expert_intermediate_size",
        "n_shared_experts",
        "first_k_dense_replace",
        "moe_layer_freq",
        "decoder_sparse_step",
        "mlp_only_layers",
        "mlp_layer_types",
        "topk_method",
        "num_nextn_predict_layers",
        "num_mtp_layers",
        "mtp_num_hidden_layers",
        "mtp_use_dedicated_embeddings",
        "sliding_window",
        "use_sliding_window",
        "max_window_layers",
        "tie_word_embeddings",
        "use_qk_norm",
        "qk_norm",
        "attn_output_gate",
    }
)


def refuse_unknown_keys(data: dict[str, Any], file: str) -> None:
    """SpecError naming the first key of ``data`` (a config read generically, its ``text_config``
    merged in) outside the standard vocabulary: the reader cannot tell what it changes."""
    unknown = sorted(k for k in data if k not in READ_KEYS and k not in INERT_KEYS)
    if unknown:
        more = f" (and {len(unknown) - 1} more: {', '.join(unknown[1:4])}{', ...' if len(unknown) > 4 else ''})"
        raise SpecError(
            f"{file}: {unknown[0]} is not in the standard config vocabulary"
            f"{more if len(unknown) > 1 else ''}; refusing to guess what it changes"
        )
