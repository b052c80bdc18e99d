"""One mapping per Hugging Face model_type: config keys -> ModelSpec fields, each mirroring the
transformers modeling file whose weight tensors it names (see :mod:`llm_cost.hf`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llm_cost.core.errors import SpecError
from llm_cost.core.types import LayerType, MlpType
from llm_cost.specs.hf.config import (
    _ABSENT as _ABSENT_MARK,
)
from llm_cost.specs.hf.config import (
    _REQUIRED,
    _VISION_SHAPE_KEYS,
    _common,
    _Config,
    _Family,
    _gqa,
    _heads,
    _layer_types,
    _mlp,
    _place_layers,
    _qwen_sliding,
)
from llm_cost.specs.hf.new_kinds import NEW_KINDS, nemotron3_blocks, with_sparse_indexer


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
    bias = c.bool("attention_bias", False) if c.family in ("llama", "smollm3") else False
    mlp_bias = c.bool("mlp_bias", False) if c.family in ("llama", "smollm3") else False
    window = None
    if c.family == "mistral":
        window = c.int_or_null("sliding_window", 4096)
    elif c.family == "phi3":
        window = c.opt_int("sliding_window")
    elif c.family == "smollm3":
        window = _smollm3_window(c)
    types = _layer_types(c, L, (LayerType.FULL_ATTENTION, LayerType.SLIDING_ATTENTION)) or (
        [LayerType.SLIDING_ATTENTION] * L if window else [LayerType.FULL_ATTENTION] * L
    )
    window = _place_layers(c, out, types, window)
    out["attention"] = _gqa(n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias, sliding_window=window)
    out["mlp"] = _mlp(c, mlp_bias=mlp_bias)
    return out


def _mixtral(c: _Config, fam: _Family) -> dict[str, Any]:
    """mixtral (transformers models/mixtral/modeling_mixtral.py): Mistral attention; every FFN is
    ``num_local_experts`` gated experts of width ``intermediate_size`` with a bias-free router."""
    from llm_cost.specs.schema import MoE

    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, hd = _heads(c, d, fam)
    window = c.opt_int("sliding_window")
    types = _layer_types(c, L, (LayerType.FULL_ATTENTION, LayerType.SLIDING_ATTENTION)) or (
        [LayerType.SLIDING_ATTENTION] * L if window else [LayerType.FULL_ATTENTION] * L
    )
    window = _place_layers(c, out, types, window)
    out["attention"] = _gqa(n_q, n_kv, hd, sliding_window=window)
    c.ignore("hidden_act")
    out["moe"] = MoE.checked(
        num_experts=c.int("num_local_experts", 8),
        num_experts_per_tok=c.int("num_experts_per_tok", 2),
        moe_intermediate_size=c.int("intermediate_size"),
    )
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
    from llm_cost.specs.schema import MoE

    fam_name = c.family
    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, hd = _heads(c, d, fam)
    qwen3 = fam_name in ("qwen3", "qwen3_moe", "qwen3_vl")
    if qwen3:
        bias = c.bool("attention_bias", False)
        att_kw = dict(attention_bias=bias, o_proj_bias=bias, qk_norm=True)
    elif fam_name == "qwen2_moe":
        att_kw = dict(attention_bias=c.bool("qkv_bias", True))
    else:
        att_kw = dict(attention_bias=True)
    rule = {"qwen2_moe": "alternate_below_max", "qwen3_moe": "all"}.get(fam_name, "from_max")
    explicit = _layer_types(c, L, (LayerType.FULL_ATTENTION, LayerType.SLIDING_ATTENTION))
    if explicit is not None:
        use = c.bool("use_sliding_window", False)
        window = c.int("sliding_window", 4096) if use or LayerType.SLIDING_ATTENTION in explicit else None
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
                raise c.error(
                    "shared_expert_intermediate_size",
                    "= 0 leaves the always-present shared_expert_gate [1, d] that the spec cannot place",
                )
            moe_kw = dict(shared_expert_intermediate_size=shared, shared_expert_gate=True)
        step = c.int("decoder_sparse_step", 1)
        only = c.int_list("mlp_only_layers", [])
        c.ignore("norm_topk_prob", "router_aux_loss_coef", "output_router_logits")
        if E:
            out["moe"] = MoE.checked(
                num_experts=E,
                num_experts_per_tok=c.int("num_experts_per_tok", moe_defaults[1]),
                moe_intermediate_size=c.int("moe_intermediate_size", moe_defaults[2]),
                decoder_sparse_step=step,
                mlp_only_layers=sorted(set(only)),
                **moe_kw,
            )
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

    from llm_cost.specs.schema import Qwen2Vision

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
        out["vision"] = Qwen2Vision.checked(**kw)
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
    from llm_cost.specs.schema import MTP, LinearAttention, MoE

    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", False)
    types = _layer_types(c, L, (LayerType.FULL_ATTENTION, LayerType.LINEAR_ATTENTION))
    if types is None:
        k = c.int("full_attention_interval", 4)
        types = [LayerType.LINEAR_ATTENTION if (i + 1) % k else LayerType.FULL_ATTENTION for i in range(L)]
    else:
        c.ignore("full_attention_interval")
    c.ignore("use_sliding_window", "sliding_window", "max_window_layers")
    out["layer_types"] = types
    out["attention"] = _gqa(n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias, qk_norm=True, output_gate=True)
    if LayerType.LINEAR_ATTENTION in types:
        out["linear_attention"] = LinearAttention.checked(
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
            raise c.error(
                "shared_expert_intermediate_size",
                "= 0 leaves the always-present shared_expert_gate [1, d] that the spec cannot place",
            )
        out["moe"] = MoE.checked(
            num_experts=E,
            num_experts_per_tok=c.int("num_experts_per_tok", 10),
            moe_intermediate_size=c.int("moe_intermediate_size", 512),
            shared_expert_intermediate_size=shared,
            shared_expert_gate=True,
            decoder_sparse_step=step,
            mlp_only_layers=sorted(set(only)),
        )
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
        raise c.error(
            "mtp_num_hidden_layers",
            f"= {n_mtp}: one fc with several MTP layers cannot be placed (the spec models one module per layer)",
        )
    if n_mtp:
        out["mtp"] = MTP.checked(num_nextn_predict_layers=n_mtp, checkpoint_stores_shared=False)
    return out


def _deepseek(c: _Config, fam: _Family) -> dict[str, Any]:
    """deepseek_v2 / deepseek_v3 (transformers models/deepseek_v2/modeling_deepseek_v2.py,
    models/deepseek_v3/modeling_deepseek_v3.py, and the checkpoints' modeling_deepseek.py): MLA
    (q_lora_rank null: a full q_proj), ``attention_bias`` on q_a_proj, kv_a_proj_with_mqa and o_proj.
    Layer i is MoE when n_routed_experts is set, i >= first_k_dense_replace and
    i % moe_layer_freq == 0 (other layers: dense MLP of intermediate_size); shared experts
    n_shared_experts x moe_intermediate_size; ``topk_method`` noaux_tc stores a per-expert
    e_score_correction_bias. ``num_nextn_predict_layers`` MTP modules are reported apart."""
    from llm_cost.specs.schema import MTP, MLAAttention, MoE

    v3 = c.family != "deepseek_v2"  # deepseek_v32 and glm_moe_dsa default as deepseek_v3 does
    out = _common(c, fam)
    L = out["num_hidden_layers"]
    n = c.int("num_attention_heads")
    c.ignore("num_key_value_heads", "head_dim", "rope_interleave")  # MLA: K/V heads = n_h; head_dim derived
    out["attention"] = MLAAttention.checked(
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
    c.ignore(
        "n_group",
        "topk_group",
        "routed_scaling_factor",
        "scoring_func",
        "norm_topk_prob",
        "aux_loss_alpha",
        "seq_aux",
        "ep_size",
    )
    if E:
        topk = c.str("topk_method", "noaux_tc" if v3 else "greedy")
        shared = c.int_or_null("n_shared_experts", 1 if v3 else None, minimum=0) or 0
        width = c.int("moe_intermediate_size", 2048 if v3 else 1407)
        moe_layers = [i for i in range(L) if i >= first_k and i % freq == 0]
        only = [i for i in range(first_k, L) if i not in moe_layers]
        out["moe"] = MoE.checked(
            num_experts=E,
            num_experts_per_tok=c.int("num_experts_per_tok", 8 if v3 else _REQUIRED),
            moe_intermediate_size=width,
            shared_expert_intermediate_size=shared * width,
            router_bias=topk == "noaux_tc",
            first_k_dense_replace=min(first_k, L),
            mlp_only_layers=only,
        )
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
            out["mtp"] = MTP.checked(num_nextn_predict_layers=mtp)
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
        types = _layer_types(c, L, (LayerType.FULL_ATTENTION, LayerType.SLIDING_ATTENTION))
        if types is None and c.family == "gemma2":
            types = [LayerType.SLIDING_ATTENTION if (i + 1) % 2 else LayerType.FULL_ATTENTION for i in range(L)]
        elif types is None:
            k = c.int(c.alias("sliding_window_pattern", "_sliding_window_pattern"), 6)
            types = [LayerType.SLIDING_ATTENTION if (i + 1) % k else LayerType.FULL_ATTENTION for i in range(L)]
        else:
            c.ignore("sliding_window_pattern", "_sliding_window_pattern")
        window = _place_layers(c, out, types, window)
    c.ignore("rope_local_base_freq", "query_pre_attn_scalar")
    out["attention"] = _gqa(
        n_q,
        n_kv,
        hd,
        attention_bias=bias,
        o_proj_bias=bias,
        sliding_window=window,
        qk_norm=c.family in ("gemma3_text", "gemma3"),
    )
    act_key = "hidden_activation" if c.has("hidden_activation") else "hidden_act"
    c.ignore("hidden_act", "hidden_activation")
    from llm_cost.specs.schema import MLP

    out["mlp"] = MLP.checked(
        intermediate_size=c.int("intermediate_size"), hidden_act=c.str(act_key, "gelu_pytorch_tanh")
    )
    return out


def _gpt2(c: _Config, fam: _Family) -> dict[str, Any]:
    """gpt2 (transformers models/gpt2/modeling_gpt2.py, GPT2LMHeadModel): wte, learned wpe
    [n_positions, d], per block ln_1, c_attn (fused q/k/v with bias), c_proj (bias), ln_2, mlp c_fc /
    c_proj (biases, width n_inner or 4d), all LayerNorms with biases; ln_f; LM head tied. The
    causal-mask ``attn.bias`` / ``attn.masked_bias`` tensors are buffers, not parameters."""
    from llm_cost.specs.schema import MLP

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
    out["mlp"] = MLP.checked(
        intermediate_size=width, gated=False, mlp_bias=True, hidden_act=c.str("activation_function", "gelu_new")
    )
    return out


def _falcon(c: _Config, fam: _Family) -> dict[str, Any]:
    """falcon (transformers models/falcon/modeling_falcon.py; legacy model_type RefinedWebModel =
    the 7B layout, RefinedWeb = the 40B "new decoder architecture"). Fused query_key_value:
    new architecture n_q + 2 n_kv heads (n_kv = num_kv_heads); multi_query n_q + 2; else 3 n_q.
    ``bias`` on query_key_value, dense and the MLP (dense_h_to_4h [d, ffn_hidden_size] and back,
    not gated). LayerNorms with biases: one per block with parallel attention (two if
    num_ln_in_parallel_attn = 2, the new architecture's default), two without. LM head tied."""
    from llm_cost.specs.schema import MLP

    legacy = c.data.get("model_type") in ("RefinedWeb", "RefinedWebModel")
    hidden = c.alias("hidden_size", "n_embed")
    layers = c.alias("num_hidden_layers", "n_layer")
    out = _common(c, fam, hidden_key=hidden, layers_key=layers)
    d = out["hidden_size"]
    n_q = c.int(c.alias("num_attention_heads", "n_head"))
    if c.bool("alibi", False):
        raise c.error("alibi", "= true: ALiBi positions cannot be placed (the spec models RoPE or learned positions)")
    new_default = c.data.get("model_type") == "RefinedWeb"
    new_arch = c.bool(
        "new_decoder_architecture",
        new_default,
        why="absent; legacy RefinedWeb = new architecture" if new_default else None,
    )
    parallel = c.bool("parallel_attn", True)
    kv_key = c.alias("num_kv_heads", "n_head_kv")
    if new_arch:
        n_kv = c.int(kv_key, n_q, why="absent; = num_attention_heads")
        c.ignore("multi_query")
    else:
        multi_query = c.bool("multi_query", True)
        n_kv = 1 if multi_query else n_q
        if c.has(kv_key) and c.int(kv_key) != n_kv:
            raise c.error(
                kv_key,
                f"({c.data[kv_key]}) disagrees with multi_query = {str(multi_query).lower()} "
                f"in the old decoder architecture ({n_kv} KV heads)",
            )
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
    out["mlp"] = MLP.checked(
        intermediate_size=width, gated=False, mlp_bias=bias, hidden_act=c.str("activation", "gelu")
    )
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
    from llm_cost.specs.schema import MoE

    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", True)
    window = c.int("sliding_window", 128)
    types = _layer_types(c, L, (LayerType.FULL_ATTENTION, LayerType.SLIDING_ATTENTION)) or [
        LayerType.SLIDING_ATTENTION if (i + 1) % 2 else LayerType.FULL_ATTENTION for i in range(L)
    ]
    window = _place_layers(c, out, types, window)
    out["attention"] = _gqa(n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias, sinks=True, sliding_window=window)
    k = c.int(c.alias("num_experts_per_tok", "experts_per_token"), 4)
    c.ignore("hidden_act", "swiglu_limit", "router_aux_loss_coef", "output_router_logits", "initial_context_length")
    out["moe"] = MoE.checked(
        num_experts=c.int("num_local_experts", 128),
        num_experts_per_tok=k,
        moe_intermediate_size=c.int("intermediate_size"),
        router_bias=True,
        expert_bias=True,
    )
    return out


def _smollm3_window(c: _Config):
    """smollm3 (transformers models/smollm3/modeling_smollm3.py): llama weights; ``no_rope_layers``
    only switches RoPE off in some layers (no weights). The window applies only with
    ``use_sliding_window`` (then through ``layer_types``)."""
    c.ignore("no_rope_layers", "no_rope_layer_interval", "max_window_layers")
    if not c.bool("use_sliding_window", False):
        c.ignore("sliding_window")
        return None
    return c.opt_int("sliding_window")


def _gemma3_vlm(c: _Config, fam: _Family) -> dict[str, Any]:
    """gemma3 (transformers models/gemma3/modeling_gemma3.py, Gemma3ForConditionalGeneration): the
    Gemma 3 text model of ``text_config`` (as gemma3_text), a SigLIP vision tower
    (models/siglip/modeling_siglip.py, ``vision_config``; SiglipVisionConfig defaults for absent keys)
    and Gemma3MultiModalProjector (RMSNorm + [e, d] matrix). ``vision_use_head`` true would add
    SigLIP's attention-pooling head, which Gemma 3 does not use: refused."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import SiglipVision

    out = _gemma(c, fam)
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
        out["vision"] = SiglipVision.checked(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: vision_config is invalid: {exc.errors()[0]['msg']}") from None
    side = kw["image_size"] // kw["patch_size"]
    tokens = int(round(kw["mm_tokens_per_image"] ** 0.5))
    if tokens * tokens != kw["mm_tokens_per_image"] or side % tokens:
        raise c.error(
            "mm_tokens_per_image",
            f"({kw['mm_tokens_per_image']}) must be a square whose side divides image_size / patch_size ({side})",
        )
    return out


def _olmo2(c: _Config, fam: _Family) -> dict[str, Any]:
    """olmo2 (transformers models/olmo2/modeling_olmo2.py): llama projections (``attention_bias`` on
    q/k/v/o), RMSNorm q_norm over the whole q projection (n_q d_head) and k_norm over k
    (n_kv d_head), and two norms per block, both after their sublayer (post_attention_layernorm,
    post_feedforward_layernorm; no input norm). olmo3 (models/olmo3/modeling_olmo3.py) has the same
    tensors and slides a ``sliding_window`` over the layers ``layer_types`` marks (default: all but
    every 4th)."""
    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", False)
    window = None
    if c.family == "olmo3":  # Olmo3Config: sliding layers except every 4th unless layer_types says otherwise
        window = c.int_or_null("sliding_window", 4096)
        types = _layer_types(c, L, (LayerType.FULL_ATTENTION, LayerType.SLIDING_ATTENTION)) or [
            LayerType.FULL_ATTENTION if (i + 1) % 4 == 0 else LayerType.SLIDING_ATTENTION for i in range(L)
        ]
        window = _place_layers(c, out, types, window)
    out["attention"] = _gqa(
        n_q,
        n_kv,
        hd,
        attention_bias=bias,
        o_proj_bias=bias,
        qk_norm=True,
        qk_norm_width="projection",
        sliding_window=window,
    )
    out["mlp"] = _mlp(c)
    return out


def _glm4_moe(c: _Config, fam: _Family) -> dict[str, Any]:
    """glm4_moe (transformers models/glm4_moe/modeling_glm4_moe.py): GQA with ``attention_bias`` on
    q/k/v (o_proj never has one), optional per-head q/k norms (``use_qk_norm``), partial RoPE; layers
    i >= ``first_k_dense_replace`` are MoE: Glm4MoeTopkRouter weight [E, d] plus its
    e_score_correction_bias [E], E routed experts of ``moe_intermediate_size``, and
    ``n_shared_experts`` x that width of shared expert. The checkpoint also stores
    ``num_nextn_predict_layers`` MTP layers (DeepSeek-V3 layout with embedding/head copies), which
    transformers skips on load; they are reported apart."""
    from llm_cost.specs.schema import MTP, MoE

    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, hd = _heads(c, d, fam)
    out["attention"] = _gqa(
        n_q, n_kv, hd, attention_bias=c.bool("attention_bias", False), qk_norm=c.bool("use_qk_norm", False)
    )
    first_k = c.int("first_k_dense_replace", 1, minimum=0)
    width = c.int("moe_intermediate_size", 1408)
    shared = c.int("n_shared_experts", 1, minimum=0)
    c.ignore("n_group", "topk_group", "routed_scaling_factor", "norm_topk_prob", "topk_method", "scoring_func")
    out["moe"] = MoE.checked(
        num_experts=c.int("n_routed_experts", 128),
        num_experts_per_tok=c.int("num_experts_per_tok", 8),
        moe_intermediate_size=width,
        shared_expert_intermediate_size=shared * width,
        router_bias=True,
        first_k_dense_replace=min(first_k, L),
    )
    if first_k:
        out["mlp"] = _mlp(c)
    else:
        c.ignore("intermediate_size", "hidden_act")
    mtp = c.int("num_nextn_predict_layers", 0, minimum=0) if c.has("num_nextn_predict_layers") else 0
    if mtp:
        out["mtp"] = MTP.checked(num_nextn_predict_layers=mtp)
    return out


def _mamba2_spec(
    c: _Config,
    *,
    heads: str,
    head_dim: Any,
    state: str,
    groups: str,
    kernel: str,
    conv_bias: bool,
    proj_bias: bool,
    defaults: tuple[int, int, int, int],
):
    """A Mamba2 spec from a config's Mamba keys (names differ per family; the first of each
    tuple of synonyms is canonical)."""
    from llm_cost.specs.schema import Mamba2

    n_heads = c.int(heads, defaults[0])
    return Mamba2.checked(
        num_heads=n_heads,
        head_dim=head_dim(n_heads) if callable(head_dim) else c.int(head_dim),
        state_size=c.int(c.alias(*state.split("|")), defaults[1]),
        n_groups=c.int(c.alias(*groups.split("|")), defaults[2]),
        conv_kernel=c.int(c.alias(*kernel.split("|")), defaults[3]),
        conv_bias=conv_bias,
        proj_bias=proj_bias,
    )


def _nemotron_h(c: _Config, fam: _Family) -> dict[str, Any]:
    """nemotron_h (transformers models/nemotron_h/modeling_nemotron_h.py): one RMSNorm and one mixer
    per block, chosen by ``hybrid_override_pattern``: ``M`` a Mamba-2 mixer (in_proj / out_proj bias
    ``use_bias``, conv bias ``use_conv_bias``), ``*`` attention (q/k/v/o, bias ``attention_bias``, no
    position encoding), ``-`` an MLP up_proj / down_proj (relu2, not gated, bias ``mlp_bias``),
    ``E`` a MoE block (Nemotron 3, with its MTP module: :func:`~llm_cost.specs.hf.new_kinds.nemotron3_blocks`)."""
    from llm_cost.specs.schema import MLP

    out = _common(c, fam, nope=True)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    pattern = c.str("hybrid_override_pattern")
    kinds = {
        "M": (LayerType.MAMBA2, MlpType.NONE),
        "*": (LayerType.FULL_ATTENTION, MlpType.NONE),
        "-": (LayerType.MLP_ONLY, MlpType.DENSE),
        "E": (LayerType.MLP_ONLY, MlpType.MOE),
    }
    bad = sorted(set(pattern) - set(kinds))
    if bad:
        raise c.error(
            "hybrid_override_pattern",
            f"has {', '.join(map(repr, bad))}; the nemotron_h mapping places "
            "M (Mamba-2), * (attention), - (MLP) and E (MoE) blocks",
        )
    if len(pattern) != L:
        raise c.error("hybrid_override_pattern", f"has {len(pattern)} blocks but num_hidden_layers is {L}")
    if c.opt_int("sliding_window") is not None:
        raise c.error("sliding_window", "is set: sliding attention in nemotron_h cannot be placed")
    out["layer_types"] = [kinds[ch][0] for ch in pattern]
    out["mlp_layer_types"] = [kinds[ch][1] for ch in pattern]
    out["norms_per_layer"] = 1
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", False)
    out["attention"] = _gqa(n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias)
    proj_bias = c.bool("use_bias", False)
    if c.data.get("mamba_proj_bias") is True and not proj_bias:
        raise c.error("mamba_proj_bias", "= true disagrees with use_bias = false (the mixer's projection bias)")
    c.ignore(
        "mamba_proj_bias",
        "mamba_hidden_act",
        "chunk_size",
        "mamba_chunk_size",
        "expand",
        "mamba_expand",
        "time_step_limit",
        "time_step_min",
        "time_step_max",
        "time_step_floor",
        "residual_in_fp32",
        "rescale_prenorm_residual",
        "use_mamba_kernels",
        "num_logits_to_keep",
        "layer_norm_epsilon",
    )
    out["mamba"] = _mamba2_spec(
        c,
        heads="mamba_num_heads",
        head_dim="mamba_head_dim",
        state="ssm_state_size|mamba_state_dim",
        groups="n_groups|mamba_num_groups",
        kernel="conv_kernel|mamba_d_conv",
        conv_bias=c.bool("use_conv_bias", True),
        proj_bias=proj_bias,
        defaults=(128, 128, 8, 4),
    )
    act = c.str(c.alias("mlp_hidden_act", "hidden_act"), "relu2")
    out.update(nemotron3_blocks(c, pattern))
    if "-" in pattern or "E" not in pattern:
        out["mlp"] = MLP.checked(
            intermediate_size=c.int("intermediate_size"),
            gated=False,
            hidden_act=act,
            mlp_bias=c.bool("mlp_bias", False),
        )
    else:
        c.ignore("intermediate_size")
    return out


def _granitemoehybrid(c: _Config, fam: _Family) -> dict[str, Any]:
    """granitemoehybrid (transformers models/granitemoehybrid/modeling_granitemoehybrid.py): each
    block is input_layernorm, a Mamba-2 mixer or attention (``layer_types`` mamba / attention; q/k/v/o
    bias ``attention_bias``; RoPE only with ``position_embedding_type`` rope), post_attention_layernorm,
    then a MoE (router layer [E, d] without bias, gated experts input_linear [E, 2 d_ff, d] and
    output_linear [E, d, d_ff]) when ``num_local_experts`` > 0, and the gated shared_mlp of
    ``shared_intermediate_size`` (a dense MLP when there are no experts). Mamba inner width is
    ``mamba_expand`` x d = ``mamba_n_heads`` x ``mamba_d_head``."""
    from llm_cost.specs.schema import MLP, MoE

    positions = c.str("position_embedding_type", "nope")
    if positions not in ("nope", "rope"):
        raise c.error("position_embedding_type", f"must be nope or rope (got {positions!r})")
    out = _common(c, fam, nope=positions == "nope")
    d, L = out["hidden_size"], out["num_hidden_layers"]
    key = c.alias("layer_types", "layers_block_type")
    raw = c.raw(key)
    if raw is None or raw is _ABSENT_MARK:
        raw = ["mamba"] * L  # GraniteMoeHybridConfig default: every layer Mamba
        c.defaults.append(f"{key} = all mamba (absent; granitemoehybrid default)")
    remap = {"mamba": LayerType.MAMBA2, "attention": LayerType.FULL_ATTENTION}
    if not isinstance(raw, list) or any(t not in remap for t in raw):
        raise c.error(key, f"must be a list of 'mamba' / 'attention' (got {raw!r})")
    if len(raw) != L:
        raise c.error(key, f"has {len(raw)} entries but num_hidden_layers is {L}")
    out["layer_types"] = [remap[t] for t in raw]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", False)
    out["attention"] = _gqa(n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias)
    if "mamba" in raw:
        expand = c.int("mamba_expand", 2)
        heads = c.int("mamba_n_heads", 128)
        d_head = c.data.get("mamba_d_head", "auto")
        c.ignore("mamba_d_head")
        if d_head == "auto" or d_head is None:
            d_head = expand * d // heads
        elif isinstance(d_head, bool) or not isinstance(d_head, int) or d_head < 1:
            raise c.error("mamba_d_head", f"must be an integer >= 1 or 'auto' (got {d_head!r})")
        if heads * d_head != expand * d:
            raise c.error(
                "mamba_d_head",
                f"({d_head}) x mamba_n_heads ({heads}) must equal mamba_expand x hidden_size ({expand} x {d})",
            )
        out["mamba"] = _mamba2_spec(
            c,
            heads="mamba_n_heads",
            head_dim=lambda n: d_head,
            state="mamba_d_state",
            groups="mamba_n_groups",
            kernel="mamba_d_conv",
            conv_bias=c.bool("mamba_conv_bias", True),
            proj_bias=c.bool("mamba_proj_bias", False),
            defaults=(128, 256, 1, 4),
        )
    else:
        c.ignore(
            "mamba_expand",
            "mamba_n_heads",
            "mamba_d_head",
            "mamba_d_state",
            "mamba_n_groups",
            "mamba_d_conv",
            "mamba_conv_bias",
            "mamba_proj_bias",
        )
    c.ignore(
        "mamba_chunk_size",
        "embedding_multiplier",
        "attention_multiplier",
        "residual_multiplier",
        "logits_scaling",
        "normalization_function",
        "router_aux_loss_coef",
        "output_router_logits",
        "init_method",
        "time_step_limit",
    )
    E = c.int("num_local_experts", 0, minimum=0)
    shared = c.int("shared_intermediate_size", 1024, minimum=0)
    act = c.str("hidden_act", "silu")
    if E:
        out["moe"] = MoE.checked(
            num_experts=E,
            num_experts_per_tok=c.int("num_experts_per_tok", 2),
            moe_intermediate_size=c.int("intermediate_size"),
            shared_expert_intermediate_size=shared,
        )
    else:
        c.ignore("intermediate_size", "num_experts_per_tok")
        if not shared:
            raise c.error("shared_intermediate_size", "= 0 with no experts leaves the blocks without a feed-forward")
        out["mlp"] = MLP.checked(intermediate_size=shared, hidden_act=act)
    return out


def _minimax_m2(c: _Config, fam: _Family) -> dict[str, Any]:
    """minimax_m2 (transformers models/minimax_m2/modeling_minimax_m2.py): q/k/v/o without biases,
    q_norm / k_norm over the whole projections (``qk_norm_type`` per_layer) or per head (per_head),
    partial RoPE (``rotary_dim`` of ``head_dim``), every layer a MoE: block_sparse_moe.gate [E, d]
    without bias, e_score_correction_bias [E] (``use_routing_bias``), E gated experts (w1, w2, w3)
    of ``intermediate_size``. ``attn_type_list`` must be all 1 (softmax attention; 0 is MiniMax-01's
    lightning attention). The MTP modules (``num_mtp_modules``) are not in the checkpoint."""
    from llm_cost.specs.schema import MoE

    out = _common(c, fam)
    d = out["hidden_size"]
    n_q, n_kv, hd = _heads(c, d, fam)
    head_dim = hd or d // n_q
    if c.has("rotary_dim"):
        rot = c.int("rotary_dim")
        prf = out.get("partial_rotary_factor", 1.0)
        if "partial_rotary_factor" not in c.data:
            out["partial_rotary_factor"] = prf = rot / head_dim
        if rot != round(prf * head_dim):
            raise c.error(
                "rotary_dim", f"({rot}) disagrees with partial_rotary_factor x head_dim ({prf:g} x {head_dim})"
            )
    types = c.raw("attn_type_list")
    if isinstance(types, list) and any(t != 1 for t in types):
        raise c.error("attn_type_list", "has 0 (lightning attention) layers; only softmax attention (1) is placed")
    if c.opt_int("sliding_window") is not None:
        raise c.error("sliding_window", "is set: sliding attention in minimax_m2 cannot be placed")
    qk = c.bool("use_qk_norm", True)
    scope = c.str("qk_norm_type", "per_layer")
    if scope not in ("per_layer", "per_head"):
        raise c.error("qk_norm_type", f"must be per_layer or per_head (got {scope!r})")
    out["attention"] = _gqa(n_q, n_kv, hd, qk_norm=qk, qk_norm_width="projection" if scope == "per_layer" else "head")
    if c.int("shared_intermediate_size", 0, minimum=0):
        raise c.error("shared_intermediate_size", "> 0: a shared expert in minimax_m2 cannot be placed")
    c.ignore(
        "scoring_func",
        "norm_topk_prob",
        "router_jitter_noise",
        "use_mtp",
        "num_mtp_modules",
        "mtp_transformer_layers",
        "hidden_act",
        "router_aux_loss_coef",
        "output_router_logits",
        "swa_rope_theta",
        "layernorm_full_attention_beta",
        "layernorm_mlp_beta",
        "layernorm_linear_attention_beta",
    )
    out["moe"] = MoE.checked(
        num_experts=c.int("num_local_experts", 256),
        num_experts_per_tok=c.int("num_experts_per_tok", 8),
        moe_intermediate_size=c.int("intermediate_size"),
        router_bias=c.bool("use_routing_bias", True),
    )
    c.notes.append("MTP modules (num_mtp_modules) are not stored in the checkpoint and not counted")
    return out


def _llama4(c: _Config, fam: _Family) -> dict[str, Any]:
    """llama4_text / llama4 (transformers models/llama4/modeling_llama4.py, Llama4ForCausalLM and
    Llama4ForConditionalGeneration). Text: q/k/v/o (bias ``attention_bias``); ``use_qk_norm`` is an
    L2 norm without weights; layers with RoPE (``no_rope_layers`` 1, default all but every 4th)
    attend in chunks of ``attention_chunk_size`` (``layer_types`` chunked_attention), the NoPE layers
    globally. Layers in ``moe_layers`` (default every ``interleave_moe_layer_step``-th) are MoE:
    router [E, d] without bias, E gated experts of ``intermediate_size`` and an ungated shared
    expert of the same width; the others a dense gated MLP of ``intermediate_size_mlp``. The wrapper
    adds the vision encoder of ``vision_config`` (Llama4VisionModel) and the projector."""
    from llm_cost.specs.schema import MLP, MoE

    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", False)
    chunk = c.opt_int("attention_chunk_size")
    types = _layer_types(c, L, (LayerType.FULL_ATTENTION, LayerType.CHUNKED_ATTENTION))
    if types is None:
        if c.has("no_rope_layers"):
            rope_layers = c.int_list("no_rope_layers")
            if len(rope_layers) < L or any(v not in (0, 1) for v in rope_layers):
                raise c.error("no_rope_layers", f"must list 0 or 1 for each of the {L} layers (got {rope_layers!r})")
        else:
            k = c.int("no_rope_layer_interval", 4)
            rope_layers = [int((i + 1) % k != 0) for i in range(L)]
        types = [
            LayerType.CHUNKED_ATTENTION if rope_layers[i] and chunk else LayerType.FULL_ATTENTION for i in range(L)
        ]
    else:
        c.ignore("no_rope_layers")
    c.ignore(
        "no_rope_layer_interval",
        "use_qk_norm",
        "attn_temperature_tuning",
        "floor_scale",
        "attn_scale",
        "for_llm_compressor",
        "router_aux_loss_coef",
        "router_jitter_noise",
        "output_router_logits",
        "cache_implementation",
    )
    if LayerType.CHUNKED_ATTENTION in types and chunk is None:
        raise c.error("attention_chunk_size", "is null, but layer_types has chunked_attention layers")
    if set(types) != {LayerType.FULL_ATTENTION}:
        out["layer_types"] = types
    out["attention"] = _gqa(
        n_q,
        n_kv,
        hd,
        attention_bias=bias,
        o_proj_bias=bias,
        attention_chunk_size=chunk if LayerType.CHUNKED_ATTENTION in types else None,
    )
    if c.has("moe_layers"):
        moe_layers = set(c.int_list("moe_layers"))
        c.ignore("interleave_moe_layer_step")
        if any(i >= L for i in moe_layers):
            raise c.error("moe_layers", f"lists layers beyond the {L} layers")
    else:
        step = c.int("interleave_moe_layer_step", 1)
        moe_layers = set(range(step - 1, L, step))
    width = c.int("intermediate_size", 8192)
    out["mlp_layer_types"] = [MlpType.MOE if i in moe_layers else MlpType.DENSE for i in range(L)]
    if moe_layers:
        out["moe"] = MoE.checked(
            num_experts=c.int("num_local_experts", 16),
            num_experts_per_tok=c.int("num_experts_per_tok", 1),
            moe_intermediate_size=width,
            shared_expert_intermediate_size=width,
        )
    act = c.str("hidden_act", "silu")
    if len(moe_layers) < L:
        out["mlp"] = MLP.checked(intermediate_size=c.int("intermediate_size_mlp", 16384), hidden_act=act)
    else:
        c.ignore("intermediate_size_mlp")
    if c.family == "llama4":
        out["vision"] = _llama4_vision(c)
    return out


def _llama4_vision(c: _Config):
    """The Llama4VisionConfig keys (its defaults for absent ones) of a llama4 wrapper config."""
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


def _olmoe(c: _Config, fam: _Family) -> dict[str, Any]:
    """olmoe (transformers models/olmoe/modeling_olmoe.py): q/k/v/o (bias ``attention_bias``), RMSNorm
    q_norm over the whole q projection and k_norm over k (``clip_qkv`` has no weights), pre-norm
    blocks, every FFN a MoE: gate [E, d] without bias and E gated experts of ``intermediate_size``."""
    from llm_cost.specs.schema import MoE

    out = _common(c, fam)
    d = out["hidden_size"]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", False)
    out["attention"] = _gqa(
        n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias, qk_norm=True, qk_norm_width="projection"
    )
    c.ignore("clip_qkv", "norm_topk_prob", "router_aux_loss_coef", "output_router_logits", "hidden_act")
    out["moe"] = MoE.checked(
        num_experts=c.int("num_experts", 64),
        num_experts_per_tok=c.int("num_experts_per_tok", 8),
        moe_intermediate_size=c.int("intermediate_size"),
    )
    return out


def _internlm2(c: _Config, fam: _Family) -> dict[str, Any]:
    """internlm2 (the checkpoints' own modeling_internlm2.py, InternLM2ForCausalLM; remote code, not
    in transformers): tok_embeddings, per layer a fused wqkv [(n_q + 2 n_kv) d_head, d] (the elements
    of separate q/k/v) and wo, both with bias ``bias``, attention_norm, feed_forward w1/w3/w2 (gated,
    no bias), ffn_norm; norm and an untied output head by default."""
    out = _common(c, fam)
    d = out["hidden_size"]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("bias", False)
    out["attention"] = _gqa(n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias)
    c.ignore("pretraining_tp", "attn_implementation")
    out["mlp"] = _mlp(c)
    return out


def _ernie4_5(c: _Config, fam: _Family) -> dict[str, Any]:
    """ernie4_5 (transformers models/ernie4_5/modeling_ernie4_5.py, and the checkpoints' remote
    modeling_ernie4_5.py with the same tensors): llama blocks where ``use_bias`` puts biases on q/k/v/o
    and on gate/up/down."""
    out = _common(c, fam)
    d = out["hidden_size"]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("use_bias", False)
    out["attention"] = _gqa(n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias)
    out["mlp"] = _mlp(c, mlp_bias=bias)
    return out


def _qwen2_5_vl(c: _Config, fam: _Family) -> dict[str, Any]:
    """qwen2_5_vl (transformers models/qwen2_5_vl/modeling_qwen2_5_vl.py): the Qwen2 language model
    (q/k/v biases; keys at the top level or under ``text_config``) and the Qwen2.5-VL vision tower of
    ``vision_config`` (RMSNorm, gated MLP; Qwen2_5_VLVisionConfig defaults for absent keys)."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import Qwen25Vision

    out = _qwen(c, fam)
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
        out["vision"] = Qwen25Vision.checked(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: vision_config is invalid: {exc.errors()[0]['msg']}") from None
    return out


def _granitemoe(c: _Config, fam: _Family) -> dict[str, Any]:
    """granitemoe (transformers models/granitemoe/modeling_granitemoe.py): q/k/v/o (bias
    ``attention_bias``), pre-norm blocks, every FFN a MoE: router layer [E, d] without bias, experts
    input_linear [E, 2 d_ff, d] (gate and up fused) and output_linear [E, d, d_ff]; the embedding,
    residual, attention and logit multipliers are scalars, not weights."""
    from llm_cost.specs.schema import MoE

    out = _common(c, fam)
    d = out["hidden_size"]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", False)
    out["attention"] = _gqa(n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias)
    c.ignore(
        "embedding_multiplier",
        "residual_multiplier",
        "attention_multiplier",
        "logits_scaling",
        "hidden_act",
        "router_aux_loss_coef",
        "output_router_logits",
    )
    out["moe"] = MoE.checked(
        num_experts=c.int("num_local_experts", 8),
        num_experts_per_tok=c.int("num_experts_per_tok", 2),
        moe_intermediate_size=c.int("intermediate_size"),
    )
    return out


def _phimoe(c: _Config, fam: _Family) -> dict[str, Any]:
    """phimoe (transformers models/phimoe/modeling_phimoe.py): q/k/v/o with biases
    (``attention_bias``), LayerNorms with biases (input, post-attention, final), every FFN a MoE
    of ``num_local_experts`` gated experts (w1, w3, w2) of ``intermediate_size`` with a bias-free
    router, and an LM head with a bias (``lm_head_bias``)."""
    from llm_cost.specs.schema import MoE

    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", False)
    window = c.opt_int("sliding_window")
    types = [LayerType.SLIDING_ATTENTION] * L if window else [LayerType.FULL_ATTENTION] * L
    window = _place_layers(c, out, types, window)
    out["attention"] = _gqa(n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias, sliding_window=window)
    out["norm_type"] = "layernorm"
    out["lm_head_bias"] = c.bool("lm_head_bias", False)
    c.ignore("router_jitter_noise", "input_jitter_noise", "router_aux_loss_coef", "output_router_logits", "hidden_act")
    out["moe"] = MoE.checked(
        num_experts=c.int("num_local_experts", 16),
        num_experts_per_tok=c.int("num_experts_per_tok", 2),
        moe_intermediate_size=c.int("intermediate_size"),
    )
    return out


def _qwen3_vl(c: _Config, fam: _Family) -> dict[str, Any]:
    """qwen3_vl (transformers models/qwen3_vl/modeling_qwen3_vl.py): the Qwen3 language model of
    ``text_config`` (per-head q/k norms) and the Qwen3-VL vision tower of ``vision_config`` with
    one DeepStack merger per ``deepstack_visual_indexes`` entry."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import Qwen3Vision

    out = _qwen(c, fam)
    raw = c.dict("vision_config")
    if raw is None:
        raise c.error("vision_config", "is required for model_type 'qwen3_vl' (the vision tower's shapes)")
    v = _Config(raw, c.file, c.family, c.defaults, c.notes, prefix="vision_config.")
    v.ignore("model_type", "hidden_act", "initializer_range", "torch_dtype", "dtype")
    deepstack = v.int_list("deepstack_visual_indexes", [8, 16, 24])
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
        deepstack_mergers=len(deepstack),
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
        out["vision"] = Qwen3Vision.checked(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: vision_config is invalid: {exc.errors()[0]['msg']}") from None
    return out


def _mistral3(c: _Config, fam: _Family) -> dict[str, Any]:
    """mistral3 (transformers models/mistral3/modeling_mistral3.py, Mistral3ForConditionalGeneration):
    the Mistral language model of ``text_config`` (read as mistral), the Pixtral encoder of
    ``vision_config`` (models/pixtral/modeling_pixtral.py) and the projector (RMSNorm, 2x2 patch
    merger, linear_1, linear_2; biases only with ``multimodal_projector_bias``)."""
    from pydantic import ValidationError

    from llm_cost.specs.schema import PixtralVision

    c.family = "mistral"
    try:
        out = _llama_like(c, fam)
    finally:
        c.family = "mistral3"
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
        out["vision"] = PixtralVision.checked(**kw)
    except ValidationError as exc:
        raise SpecError(f"{c.file}: vision_config is invalid: {exc.errors()[0]['msg']}") from None
    return out


_F = _Family
FAMILIES: dict[str, tuple[Callable[[_Config, _Family], dict[str, Any]], _Family]] = {
    "llama": (_llama_like, _F(tie=False, max_pos=2048, rope_theta=10000.0)),
    "mistral": (_llama_like, _F(tie=False, max_pos=131072, rope_theta=10000.0)),
    "mistral3": (_mistral3, _F(tie=False, max_pos=131072, rope_theta=1e9)),
    "mixtral": (_mixtral, _F(tie=False, max_pos=131072, rope_theta=1e6)),
    "qwen2": (_qwen, _F(tie=False, max_pos=32768, rope_theta=10000.0)),
    "qwen2_moe": (_qwen, _F(tie=False, max_pos=32768, rope_theta=10000.0)),
    "qwen3": (_qwen, _F(tie=False, max_pos=32768, rope_theta=10000.0, head_dim=128)),
    "qwen3_moe": (_qwen, _F(tie=False, max_pos=32768, rope_theta=10000.0)),
    "qwen3_next": (_qwen3_next, _F(tie=False, max_pos=32768, rope_theta=10000.0, head_dim=256, partial_rotary=0.25)),
    "qwen2_vl": (_qwen2_vl, _F(tie=False, max_pos=32768, rope_theta=1e6)),
    "qwen3_vl": (_qwen3_vl, _F(tie=False, max_pos=262144, rope_theta=5e6, head_dim=128)),
    "qwen2_5_vl": (_qwen2_5_vl, _F(tie=False, max_pos=128000, rope_theta=1e6)),
    "deepseek_v2": (_deepseek, _F(tie=False, max_pos=2048, rope_theta=10000.0)),
    "deepseek_v3": (_deepseek, _F(tie=False, max_pos=4096, rope_theta=10000.0)),
    "deepseek_v32": (with_sparse_indexer(_deepseek), _F(tie=False, max_pos=163840, rope_theta=10000.0)),
    "glm_moe_dsa": (
        with_sparse_indexer(_deepseek, mtp_stores_shared=False),
        _F(tie=False, max_pos=202752, rope_theta=10000.0),
    ),
    "gemma": (_gemma, _F(tie=True, max_pos=8192, rope_theta=10000.0, head_dim=256)),
    "gemma2": (_gemma, _F(tie=True, max_pos=8192, rope_theta=10000.0, head_dim=256)),
    "gemma3_text": (_gemma, _F(tie=True, max_pos=131072, rope_theta=1e6, head_dim=256)),
    "phi3": (_llama_like, _F(tie=False, max_pos=4096, rope_theta=10000.0)),
    "gpt2": (_gpt2, _F(tie=True, max_pos=1024, rope_theta=None, dtype="fp32")),
    "falcon": (_falcon, _F(tie=True, max_pos=2048, rope_theta=10000.0)),
    "gpt_oss": (_gpt_oss, _F(tie=False, max_pos=131072, rope_theta=150000.0, head_dim=64)),
    "gemma3": (_gemma3_vlm, _F(tie=True, max_pos=131072, rope_theta=1e6, head_dim=256)),
    "smollm3": (_llama_like, _F(tie=True, max_pos=32768, rope_theta=2000000.0)),
    "olmo2": (_olmo2, _F(tie=False, max_pos=2048, rope_theta=10000.0)),
    "olmo3": (_olmo2, _F(tie=False, max_pos=2048, rope_theta=10000.0)),
    "phimoe": (_phimoe, _F(tie=False, max_pos=131072, rope_theta=1e6)),
    "granitemoe": (_granitemoe, _F(tie=True, max_pos=4096, rope_theta=10000.0)),
    "nemotron_h": (_nemotron_h, _F(tie=False, max_pos=4096, rope_theta=None, head_dim=128)),
    "granitemoehybrid": (_granitemoehybrid, _F(tie=False, max_pos=2048, rope_theta=10000.0)),
    "minimax_m2": (_minimax_m2, _F(tie=False, max_pos=196608, rope_theta=5e6, head_dim=128)),
    "llama4": (_llama4, _F(tie=False, max_pos=131072, rope_theta=500000.0, head_dim=128)),
    "llama4_text": (_llama4, _F(tie=False, max_pos=131072, rope_theta=500000.0, head_dim=128)),
    "ernie4_5": (_ernie4_5, _F(tie=True, max_pos=131072, rope_theta=500000.0, head_dim=128)),
    "internlm2": (_internlm2, _F(tie=False, max_pos=2048, rope_theta=10000.0)),
    "olmoe": (_olmoe, _F(tie=False, max_pos=4096, rope_theta=10000.0, dtype="fp32")),
    "glm4_moe": (_glm4_moe, _F(tie=False, max_pos=131072, rope_theta=10000.0, head_dim=128, partial_rotary=0.5)),
}
FAMILIES.update(NEW_KINDS)  # the families of new layer kinds (specs.hf.new_kinds)

#: Legacy model_type names read by another family's mapping.
ALIASES = {
    "RefinedWebModel": "falcon",
    "RefinedWeb": "falcon",
    # Kimi K2 ships DeepseekV3ForCausalLM (remote code, the DeepSeek-V3 tensors) under its own model_type
    "kimi_k2": "deepseek_v3",
}
SUPPORTED_MODEL_TYPES = tuple(FAMILIES)

_HEADS = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")
