"""config.json -> ModelSpec fields for the families whose blocks are new kinds of layer:

* LFM2's gated short convolutions (``lfm2``);
* Nemotron 3's MoE and latent-MoE blocks and its MTP module (``nemotron_h``'s ``E`` blocks, read by
  :func:`nemotron3_blocks` for the nemotron_h mapping);
* DeepSeek Sparse Attention (``deepseek_v32``, ``glm_moe_dsa``: :func:`with_sparse_indexer` around
  the DeepSeek MLA mapping);
* Kimi Linear's hybrid of Kimi Delta Attention and MLA layers (``kimi_linear``).

Each mapping names the modeling file whose weight tensors it mirrors (transformers 5.x,
``src/transformers/models/<family>/``, or the checkpoint's own); the table :data:`NEW_KINDS` is
merged into :data:`llm_cost.specs.hf.families.FAMILIES`."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from llm_cost.core.types import LayerType
from llm_cost.specs.files import shown
from llm_cost.specs.hf.config import _ABSENT, _common, _Config, _Family, _gqa, _heads
from llm_cost.specs.hf.generic import mlp_layer_types
from llm_cost.specs.schema import MAX_WIDTH

__all__ = ["NEW_KINDS", "nemotron3_blocks", "with_sparse_indexer"]

FamilyMapping = Callable[[_Config, _Family], dict[str, Any]]


def _lfm2_ffn_width(c: _Config) -> int:
    """The MLP width Lfm2MLP builds (modeling_lfm2.py): ``intermediate_size`` (or the original
    ``block_ff_dim``, Lfm2Config reads either), and with ``block_auto_adjust_ff_dim`` two thirds of
    it, times ``block_ffn_dim_multiplier`` and rounded up to ``block_multiple_of`` when the
    multiplier is set."""
    width = c.int(c.alias("block_ff_dim", "intermediate_size"), 12288)
    if not c.bool("block_auto_adjust_ff_dim", True):
        c.ignore("block_ffn_dim_multiplier", "block_multiple_of")
        return width
    width = int(2 * width / 3)
    multiplier = c.raw("block_ffn_dim_multiplier")
    if multiplier is _ABSENT:  # Lfm2Config's default, 1.0 (llm_cost/data/hf_defaults.json)
        multiplier = c._default("block_ffn_dim_multiplier", 1.0, "absent; Lfm2Config default")
    if multiplier is None:
        c.ignore("block_multiple_of")
        return width
    given = shown(json.dumps(multiplier), 40)  # as config.json writes it: Infinity, NaN, "x", 1e+308
    if isinstance(multiplier, bool) or not isinstance(multiplier, (int, float)) or not 0 < multiplier < math.inf:
        raise c.error("block_ffn_dim_multiplier", f"must be a finite number > 0 (got {given})")
    if not multiplier * width <= MAX_WIDTH:  # 1e308 x the width is no float: int() would overflow
        raise c.error(
            "block_ffn_dim_multiplier",
            f"= {given} times the adjusted width {width} is above the largest MLP width, {MAX_WIDTH:,}",
        )
    width = int(multiplier * width)
    multiple = c.int("block_multiple_of", 256)
    return multiple * ((width + multiple - 1) // multiple)


def _lfm2_layers(c: _Config, L: int) -> list[LayerType]:
    """``layer_types`` (full_attention / conv), else ``full_attn_idxs`` (absent: every layer is
    attention), as Lfm2Config builds them."""
    kinds = {LayerType.FULL_ATTENTION.value: LayerType.FULL_ATTENTION, "conv": LayerType.SHORT_CONV}
    if isinstance(c.data.get("layer_types"), list):
        c.ignore("full_attn_idxs")
        names = c.raw("layer_types")
        bad = sorted({repr(t) for t in names if not isinstance(t, str) or t not in kinds})
        if bad:
            raise c.error("layer_types", f"has {', '.join(bad)}; lfm2 layers are full_attention or conv")
        if len(names) != L:
            raise c.error("layer_types", f"has {len(names)} entries but num_hidden_layers is {L}")
        return [kinds[t] for t in names]
    c.ignore("layer_types")
    idxs = c.int_list("full_attn_idxs", list(range(L)), why="absent; every layer attention (Lfm2Config)")
    bad_idx = [i for i in idxs if i >= L]
    if bad_idx:
        raise c.error("full_attn_idxs", f"{bad_idx} are out of range for {L} layers")
    return [LayerType.FULL_ATTENTION if i in idxs else LayerType.SHORT_CONV for i in range(L)]


def _lfm2(c: _Config, fam: _Family) -> dict[str, Any]:
    """lfm2 (transformers models/lfm2/modeling_lfm2.py, Lfm2ForCausalLM): each block is
    operator_norm, a mixer and ffn_norm with a SwiGLU MLP (w1, w3, w2; width per
    :func:`_lfm2_ffn_width`). The mixer is attention (q/k/v/out_proj without biases, q_layernorm
    and k_layernorm of head_dim) or Lfm2ShortConv (in_proj [d -> 3d], a depthwise conv of
    ``conv_L_cache`` taps, out_proj; biases ``conv_bias``). The final norm is embedding_norm; the
    LM head is tied unless ``tie_word_embeddings`` (or the original ``tie_embedding``) is false."""
    from llm_cost.specs.schema import MLP, ShortConv

    if c.alias("tie_word_embeddings", "tie_embedding") == "tie_embedding":  # Lfm2Config reads either
        c.data["tie_word_embeddings"] = c.data["tie_embedding"]
    c.ignore("block_dim", "conv_dim", "conv_dim_out", "num_heads", "block_use_swiglu")
    c.ignore("block_norm_eps", "norm_eps", "use_pos_enc", "theta")
    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    for key, value in (("block_dim", d), ("conv_dim", d), ("conv_dim_out", d)):
        if c.data.get(key) not in (None, value):
            raise c.error(key, f"= {c.data[key]!r} differs from hidden_size ({d}); Lfm2 builds every block at d")
    if c.data.get("block_use_swiglu") is False:
        raise c.error("block_use_swiglu", "= false: Lfm2MLP is always SwiGLU (w1, w3, w2)")
    types = _lfm2_layers(c, L)
    n_q, n_kv, hd = _heads(c, d, fam)
    out["attention"] = _gqa(n_q, n_kv, hd, qk_norm=True)
    if LayerType.SHORT_CONV in types:
        out["layer_types"] = types
        out["short_conv"] = ShortConv.checked(
            conv_kernel=c.int("conv_L_cache", 3), conv_bias=c.bool("conv_bias", False)
        )
    else:
        c.ignore("conv_L_cache", "conv_bias")
    out["mlp"] = MLP.checked(intermediate_size=_lfm2_ffn_width(c), hidden_act="silu")
    return out


#: The names a DeepSeek-Sparse-Attention config gives its MLA layers in ``layer_types``.
_DSA_LAYER_NAMES = frozenset({"indexed_attention", "deepseek_sparse_attention", "full_attention"})


def _indexer_schedule(c: _Config, L: int) -> dict[str, list[str]]:
    """Each spelling of the indexer schedule the config gives, as GlmMoeDsaConfig.__post_init__
    reads it: ``indexer_types`` ("full" / "shared" per layer), ``index_topk_pattern`` ("F" / "S"
    per layer, a string or a list), ``index_topk_freq`` f with ``index_skip_topk_offset`` o (layer
    i full when max(i - o + 1, 0) % f == 0; o defaults to 2)."""
    found: dict[str, list[str]] = {}
    listed = c.raw("indexer_types")
    if listed is not None and listed is not _ABSENT:
        if not isinstance(listed, list) or any(t not in ("full", "shared") for t in listed) or len(listed) != L:
            raise c.error("indexer_types", f"must list 'full' or 'shared' for each of the {L} layers")
        found["indexer_types"] = list(listed)
    pattern = c.raw("index_topk_pattern")
    if pattern is not None and pattern is not _ABSENT:
        letters = list(pattern) if isinstance(pattern, (str, list)) else None
        if letters is None or len(letters) != L or any(t not in ("F", "S", "full", "shared") for t in letters):
            raise c.error("index_topk_pattern", f"must give F or S for each of the {L} layers")
        found["index_topk_pattern"] = [{"F": "full", "S": "shared"}.get(t, t) for t in letters]
    c.ignore("index_skip_topk_offset")
    if c.has("index_topk_freq") or c.has("index_skip_topk_offset"):
        freq = c.int("index_topk_freq", 1, maximum=max(L, 1))
        offset = c.int("index_skip_topk_offset", 2, minimum=0, maximum=L) if c.has("index_skip_topk_offset") else 2
        found["index_topk_freq"] = ["full" if max(i - offset + 1, 0) % freq == 0 else "shared" for i in range(L)]
    return found


def _shared_indexer_layers(c: _Config, L: int) -> tuple[int, ...]:
    """The layers that reuse an earlier layer's top-k (GLM-5.2, transformers
    models/glm_moe_dsa/modeling_glm_moe_dsa.py GlmMoeDsaAttention: ``indexer_types[i] == "shared"``
    builds no indexer); the spellings given must agree, and layer 0 must run its own."""
    found = _indexer_schedule(c, L)
    if not found:
        return ()
    (first, types), *others = found.items()
    for key, other in others:
        if other != types:
            raise c.error(key, f"disagrees with {first}")
    if types[0] != "full":
        raise c.error(first, "makes layer 0 shared, but no earlier layer has an indexer to share")
    return tuple(i for i, t in enumerate(types) if t == "shared")


def with_sparse_indexer(mla_mapping: FamilyMapping, mtp_stores_shared: bool = True) -> FamilyMapping:
    """``mla_mapping`` (a DeepSeek-V3-layout mapping) plus DeepSeek Sparse Attention's lightning
    indexer on every MLA layer: ``index_n_heads``, ``index_head_dim``, ``index_topk`` (transformers
    models/deepseek_v32/modeling_deepseek_v32.py DeepseekV32Indexer; models/glm_moe_dsa's
    GlmMoeDsaIndexer is the same). GLM-5.2's shared-indexer layers (``indexer_types``,
    ``index_topk_pattern``, ``index_topk_freq`` above 1: layers that reuse an earlier layer's
    selection and hold no indexer) are refused, naming the key. ``mtp_stores_shared`` false: the
    checkpoint's MTP layer holds no copy of the embedding and LM head (GLM-5: its Hub total is the
    main model plus the MTP layer's own tensors, 753,864,139,008)."""

    def mapping(c: _Config, fam: _Family) -> dict[str, Any]:
        import dataclasses

        from llm_cost.specs.schema import MLAAttention, SparseIndexer

        L = c.data.get("num_hidden_layers")
        shared = _shared_indexer_layers(c, L) if isinstance(L, int) and not isinstance(L, bool) else ()
        if shared and not mtp_stores_shared:  # glm_moe_dsa: GlmMoeDsaAttention builds no indexer on them
            c.notes.append(f"{len(shared)} layers reuse an earlier layer's top-k and hold no indexer (indexer_types)")
        elif shared:
            raise c.error("indexer_types", f"has shared layers, which model_type '{c.family}' does not build")
        c.ignore("indexer_rope_interleave", "index_share_for_mtp_iteration")
        types = c.data.get("layer_types")
        if isinstance(types, list) and types and set(types) <= _DSA_LAYER_NAMES:
            # GlmMoeDsaConfig saves every layer as indexed_attention (vLLM's GLM-5.2 configs: deepseek_sparse_attention)
            del c.data["layer_types"]
        out = mla_mapping(c, fam)
        if not isinstance(out["attention"], MLAAttention):
            raise c.error("kv_lora_rank", "must be a positive integer: the lightning indexer sits on MLA layers")
        indexer = SparseIndexer.checked(
            index_n_heads=c.int("index_n_heads", 64),
            index_head_dim=c.int("index_head_dim", 128),
            index_topk=c.int("index_topk", 2048),
            shared_layers=shared,
        )
        out["attention"] = dataclasses.replace(out["attention"], indexer=indexer)
        if "mtp" in out and not mtp_stores_shared:
            out["mtp"] = dataclasses.replace(out["mtp"], checkpoint_stores_shared=False)
        return out

    return mapping


def nemotron3_blocks(c: _Config, pattern: str) -> dict[str, Any]:
    """The ``moe`` and ``mtp`` fields of a nemotron_h config from Nemotron 3, read for the
    nemotron_h mapping (``pattern``: its ``hybrid_override_pattern``).

    MoE (``E`` blocks; their MoE keys are read and ignored without them): transformers
    models/nemotron_h/modeling_nemotron_h.py NemotronHMoE, a router gate [E, d] with an
    e_score_correction_bias [E] (NemotronHTopkRouter; stored in the checkpoint), E routed experts
    of up_proj / down_proj only (NemotronHExperts: relu2, not gated, no biases) of width
    moe_intermediate_size, one shared NemotronHMLP of width moe_shared_expert_intermediate_size,
    and with ``moe_latent_size`` l the fc1_latent_proj [d -> l] / fc2_latent_proj [l -> d] around
    the routed experts (which then work at l). Biases ``mlp_bias`` on the shared expert and the
    latent projections are refused (no released checkpoint has them).

    MTP (``num_nextn_predict_layers`` 1 with ``mtp_hybrid_override_pattern`` "*E" or
    ``mtp_layers_block_type`` [attention, moe]; transformers does not load it, vLLM's
    nemotron_h_mtp.py does): one module of enorm, hnorm, eh_proj [2d -> d], an attention block and a
    MoE block (one norm each) and a final norm, without its own embedding or head (Nemotron-3-Super's
    Hub total holds exactly that). Other MTP shapes are refused, naming the key."""
    from llm_cost.specs.schema import MTP, MoE

    keys = (
        "n_routed_experts",
        "num_experts_per_tok",
        "moe_intermediate_size",
        "moe_shared_expert_intermediate_size",
        "n_shared_experts",
        "moe_latent_size",
    )
    c.ignore("n_group", "topk_group", "norm_topk_prob", "routed_scaling_factor", "moe_shared_expert_overlap")
    out: dict[str, Any] = {}
    if "E" not in pattern:
        c.ignore(*keys)
    else:
        if c.data.get("mlp_bias") is True:
            raise c.error(
                "mlp_bias", "= true with E blocks: biases on the shared expert and latent projections are not modelled"
            )
        c.ignore("n_shared_experts")  # NemotronHMoE builds one shared MLP of the shared width whatever it says
        out["moe"] = MoE.checked(
            num_experts=c.int("n_routed_experts", 8),
            num_experts_per_tok=c.int("num_experts_per_tok", 2),
            moe_intermediate_size=c.int("moe_intermediate_size", 7688),
            shared_expert_intermediate_size=c.int("moe_shared_expert_intermediate_size", 7688),
            router_bias=True,
            expert_gated=False,
            moe_latent_size=c.opt_int("moe_latent_size"),
        )
    n_mtp = c.int("num_nextn_predict_layers", 0, minimum=0) if c.has("num_nextn_predict_layers") else 0
    block_key = c.alias("mtp_hybrid_override_pattern", "mtp_layers_block_type")
    c.ignore("keep_mtp_spec_in_bf16", "mtp_use_repeated_layer")
    if n_mtp:
        blocks = c.data.get(block_key, "*E")
        known = ("*E", ["attention", "moe"], [LayerType.FULL_ATTENTION.value, "moe"])
        if n_mtp != 1 or blocks not in known or "E" not in pattern:
            raise c.error(
                block_key if n_mtp == 1 else "num_nextn_predict_layers",
                f"({n_mtp} x {blocks!r}): only one *E module after a model with E blocks is modelled",
            )
        out["mtp"] = MTP.checked(num_nextn_predict_layers=1, checkpoint_stores_shared=False, blocks=2)
    return out


def _kda_key(c: _Config, kda: dict[str, Any], key: str, flat: str, default: int) -> int:
    """A KDA size from ``linear_attn_config`` (the checkpoints) or its flat spelling (KimiLinearConfig,
    which transformers 5 saves beside it); both present must agree."""
    if key in kda:
        value = kda[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise c.error(f"linear_attn_config.{key}", f"must be an integer >= 1 (got {shown(repr(value), 40)})")
        if c.has(flat) and c.data[flat] != value:
            raise c.error(flat, f"= {shown(repr(c.data[flat]), 40)} disagrees with linear_attn_config.{key} ({value})")
        return int(value)
    return c.int(flat, default)


def _kimi_schedule(c: _Config, L: int, kda: dict[str, Any]) -> list[LayerType]:
    """The mixers of ``linear_attn_config`` (:func:`_kimi_layers`) or, without its lists, of
    ``layer_types`` (linear_attention / full_attention, as KimiLinearConfig saves them), else
    KimiLinearConfig's default (full attention at every 4th layer from layer 4, 0-based); both
    given must agree."""
    listed = c.raw("layer_types")
    names = {LayerType.LINEAR_ATTENTION.value: LayerType.LINEAR_ATTENTION, "full_attention": LayerType.FULL_ATTENTION}
    if listed is not _ABSENT and listed is not None:
        if not isinstance(listed, list) or len(listed) != L or any(t not in names for t in listed):
            raise c.error("layer_types", f"must list linear_attention or full_attention for each of the {L} layers")
        types = [names[t] for t in listed]
        if ("kda_layers" in kda or "full_attn_layers" in kda) and _kimi_layers(c, L, kda) != types:
            raise c.error("layer_types", "disagrees with linear_attn_config's kda_layers / full_attn_layers")
        return types
    if "kda_layers" in kda or "full_attn_layers" in kda:
        return _kimi_layers(c, L, kda)
    c.defaults.append("layer_types = full attention at layers 4, 8, ... (absent; KimiLinearConfig default)")
    return [LayerType.FULL_ATTENTION if i and i % 4 == 0 else LayerType.LINEAR_ATTENTION for i in range(L)]


def _kimi_layers(c: _Config, L: int, kda: dict[str, Any]) -> list[LayerType]:
    """The layer schedule of ``linear_attn_config``: 1-based ``kda_layers`` and ``full_attn_layers``
    (KimiLinearConfig numbers them from 1), which together must name every layer once."""
    kinds: dict[int, LayerType] = {}
    for key, kind in (("kda_layers", LayerType.LINEAR_ATTENTION), ("full_attn_layers", LayerType.FULL_ATTENTION)):
        value = kda.get(key)
        if not isinstance(value, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in value):
            raise c.error(f"linear_attn_config.{key}", f"must be a list of 1-based layer numbers (got {value!r})")
        for i in value:
            if not 1 <= i <= L or i in kinds:
                raise c.error(f"linear_attn_config.{key}", f"has {i}: layers are numbered 1..{L}, each once")
            kinds[i] = kind
    if len(kinds) != L:
        missing = sorted(set(range(1, L + 1)) - set(kinds))
        raise c.error("linear_attn_config", f"places no mixer in layers {missing} (1-based)")
    return [kinds[i + 1] for i in range(L)]


def _kimi_linear(c: _Config, fam: _Family) -> dict[str, Any]:
    """kimi_linear (the checkpoint's own modeling_kimi.py, KimiLinearForCausalLM; transformers
    models/kimi_linear/modeling_kimi_linear.py): each block is input_layernorm, a mixer and
    post_attention_layernorm with a feed-forward. The mixer is Kimi Delta Attention on the
    ``linear_attn_config.kda_layers`` and MLA on its ``full_attn_layers`` (1-based): q_proj [d ->
    n_h (nope + rope)] when ``q_lora_rank`` is null, kv_a_proj_with_mqa, kv_a_layernorm, kv_b_proj,
    o_proj, no position encoding when ``mla_use_nope``. The first ``first_k_dense_replace`` layers
    have a gated MLP of intermediate_size, the others a MoE block_sparse_moe: a router with its
    e_score_correction_bias (KimiLinearTopkRouter), ``num_experts`` gated experts (w1, w2, w3) of
    moe_intermediate_size, ``num_experts_per_token`` per token, and ``num_shared_experts`` x
    moe_intermediate_size of shared expert. A full-rank decay gate (``use_full_rank_gate``) and MoE
    layers other than every layer (``moe_layer_freq`` above 1) are refused."""
    from llm_cost.specs.schema import MLP, KimiDeltaAttention, MLAAttention, MoE

    nope = c.bool("mla_use_nope", False)
    out = _common(c, fam, nope=nope)
    L = out["num_hidden_layers"]
    kda = c.dict("linear_attn_config") or {}
    if kda.get("use_full_rank_gate"):
        raise c.error("linear_attn_config.use_full_rank_gate", "= true: a full-rank KDA gate is not modelled")
    types = _kimi_schedule(c, L, kda)
    if LayerType.LINEAR_ATTENTION in types:
        out["layer_types"] = types
        out["linear_attention"] = KimiDeltaAttention.checked(
            num_heads=_kda_key(c, kda, "num_heads", "linear_num_heads", 32),
            head_dim=_kda_key(c, kda, "head_dim", "linear_head_dim", 128),
            conv_kernel=_kda_key(c, kda, "short_conv_kernel_size", "linear_conv_kernel_dim", 4),
        )
    c.ignore("linear_num_heads", "linear_head_dim", "linear_conv_kernel_dim")
    c.ignore("head_dim", "num_key_value_heads", "model_max_length")  # MLA derives its head widths
    out["attention"] = MLAAttention.checked(
        num_attention_heads=c.int("num_attention_heads"),
        q_lora_rank=c.int_or_null("q_lora_rank", None),
        kv_lora_rank=c.int("kv_lora_rank", 512),
        qk_nope_head_dim=c.int("qk_nope_head_dim", 128),
        qk_rope_head_dim=c.int("qk_rope_head_dim", 64),
        v_head_dim=c.int("v_head_dim", 128),
        attention_bias=c.bool("attention_bias", False),
    )
    if c.int("moe_layer_freq", 1, maximum=max(L, 1)) != 1:
        raise c.error("moe_layer_freq", "is above 1: MoE layers other than every layer are not modelled")
    c.ignore("moe_renormalize", "moe_router_activation_func", "routed_scaling_factor", "use_grouped_topk")
    c.ignore("num_expert_group", "topk_group", "num_nextn_predict_layers")
    dense = mlp_layer_types(c, L)
    if dense is not None and dense != list(range(len(dense))):
        raise c.error("mlp_layer_types", "has dense layers after a MoE layer: KimiLinearConfig's are the first ones")
    first_k = len(dense) if dense is not None else min(c.int("first_k_dense_replace", 1, minimum=0), L)
    width = c.int("moe_intermediate_size", 1024)
    out["moe"] = MoE.checked(
        num_experts=c.int(c.alias("num_experts", "n_routed_experts"), 256),
        num_experts_per_tok=c.int(c.alias("num_experts_per_token", "num_experts_per_tok"), 8),
        moe_intermediate_size=width,
        shared_expert_intermediate_size=c.int(c.alias("num_shared_experts", "n_shared_experts"), 1, minimum=0) * width,
        router_bias=True,
        first_k_dense_replace=first_k,
    )
    if first_k:
        out["mlp"] = MLP.checked(intermediate_size=c.int("intermediate_size"), hidden_act=c.str("hidden_act", "silu"))
    else:
        c.ignore("intermediate_size", "hidden_act")
    return out


_F = _Family
#: model_type -> (mapping, defaults of its transformers configuration class).
NEW_KINDS: dict[str, tuple[FamilyMapping, _Family]] = {
    "lfm2": (_lfm2, _F(tie=True, max_pos=128000, rope_theta=1e6)),
    "kimi_linear": (_kimi_linear, _F(tie=False, max_pos=1048576, rope_theta=10000.0)),
}
