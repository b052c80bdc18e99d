"""The supported Hugging Face model_types (:data:`FAMILIES`): most are read by the generic reader
with their line of departures (:func:`~llm_cost.specs.hf.generic.generic_mapper`,
:mod:`llm_cost.specs.hf.departures`); the mappings here are the families whose modeling files
depart from the standard vocabulary too far for a line (learned positions and fused projections
of GPT-2 and Falcon, the Mamba-2 hybrids, MiniMax-M2's projection-wide q/k norms and rotary_dim,
Llama 4's chunked attention and interleaved MoE), each mirroring the transformers modeling file
whose weight tensors it names (see :mod:`llm_cost.specs.hf`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from llm_cost.core.types import LayerType, MlpType
from llm_cost.specs.files import shown
from llm_cost.specs.hf.config import (
    _ABSENT as _ABSENT_MARK,
)
from llm_cost.specs.hf.config import (
    _common,
    _Config,
    _Family,
    _gqa,
    _heads,
    _layer_types,
)
from llm_cost.specs.hf.generic import DEPARTURES, generic_family, generic_mapper
from llm_cost.specs.hf.mimo import MIMO_FAMILIES
from llm_cost.specs.hf.minimax_m3 import MINIMAX_M3_FAMILIES
from llm_cost.specs.hf.new_kinds import NEW_KINDS, nemotron3_blocks, with_sparse_indexer


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
    n_kv = _falcon_kv_heads(c, kv_key, n_q, new_arch)
    n_ln = _falcon_norms(c, parallel, new_arch)
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


def _falcon_kv_heads(c: _Config, kv_key: str, n_q: int, new_arch: bool) -> int:
    """falcon's KV heads: ``num_kv_heads`` in the new decoder architecture (default n_q); else 1
    with ``multi_query`` (default) or n_q, a ``num_kv_heads`` that disagrees refused."""
    if new_arch:
        n_kv = c.int(kv_key, n_q, why="absent; = num_attention_heads")
        c.ignore("multi_query")
    else:
        multi_query = c.bool("multi_query", True)
        n_kv = 1 if multi_query else n_q
        # FalconConfig (transformers 5) writes num_kv_heads = num_attention_heads when a config has none;
        # the old architecture's query_key_value is sized by multi_query alone (FalconAttention)
        if c.has(kv_key) and c.int(kv_key) not in (n_kv, n_q):
            raise c.error(
                kv_key,
                f"({c.data[kv_key]}) disagrees with multi_query = {str(multi_query).lower()} "
                f"in the old decoder architecture ({n_kv} KV heads)",
            )
        if c.has(kv_key) and c.int(kv_key) != n_kv:
            c.notes.append(f"{kv_key} = {n_q} is not read by the old decoder architecture (multi_query decides)")
        c.ignore(kv_key)
    return n_kv


def _falcon_norms(c: _Config, parallel: bool, new_arch: bool) -> int:
    """falcon's LayerNorms per block: two without parallel attention; with it
    ``num_ln_in_parallel_attn`` (1 or 2; 2 in the new architecture), else one shared."""
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
    return n_ln


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


#: NemotronHConfig's block names (transformers 5 ``layers_block_type``, legacy names remapped) -> pattern letters.
_NEMOTRON_BLOCKS = {
    "linear_attention": "M",
    "mamba": "M",
    "moe": "E",
    "full_attention": "*",
    "attention": "*",
    "mlp": "-",
}


def _nemotron_pattern(c: _Config) -> str:
    """The block pattern of ``hybrid_override_pattern`` (transformers 4) or ``layers_block_type``
    (transformers 5, a list of block names); both present must agree. NemotronHConfig derives
    num_hidden_layers from the pattern: absent, it is filled in; present, it must agree."""
    listed = c.raw("layers_block_type")
    c.ignore("layer_types")
    if listed is not _ABSENT_MARK and listed is not None:
        if not isinstance(listed, list) or any(not isinstance(b, str) or b not in _NEMOTRON_BLOCKS for b in listed):
            raise c.error("layers_block_type", f"must list block names of {', '.join(_NEMOTRON_BLOCKS)}")
        pattern = "".join(_NEMOTRON_BLOCKS[b] for b in listed)
        if c.has("hybrid_override_pattern") and c.str("hybrid_override_pattern") != pattern:
            raise c.error("layers_block_type", "disagrees with hybrid_override_pattern")
        c.ignore("hybrid_override_pattern")
        key = "layers_block_type"
    else:
        pattern, key = c.str("hybrid_override_pattern"), "hybrid_override_pattern"
    layers = c.data.get("num_hidden_layers")
    if layers is None:
        c.data["num_hidden_layers"] = len(pattern)
        c.defaults.append(f"num_hidden_layers = {len(pattern)} (absent; the length of {key}, NemotronHConfig)")
    elif layers != len(pattern):
        raise c.error(key, f"has {len(pattern)} blocks but num_hidden_layers is {layers}")
    return pattern


def _nemotron_h(c: _Config, fam: _Family) -> dict[str, Any]:
    """nemotron_h (transformers models/nemotron_h/modeling_nemotron_h.py): one RMSNorm and one mixer
    per block, chosen by ``hybrid_override_pattern``: ``M`` a Mamba-2 mixer (in_proj / out_proj bias
    ``use_bias``, conv bias ``use_conv_bias``), ``*`` attention (q/k/v/o, bias ``attention_bias``, no
    position encoding), ``-`` an MLP up_proj / down_proj (relu2, not gated, bias ``mlp_bias``),
    ``E`` a MoE block (Nemotron 3, with its MTP module: :func:`~llm_cost.specs.hf.new_kinds.nemotron3_blocks`)."""
    from llm_cost.specs.schema import MLP

    pattern = _nemotron_pattern(c)
    out = _common(c, fam, nope=True)
    d = out["hidden_size"]
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
    if c.opt_int("sliding_window") is not None:
        raise c.error("sliding_window", "is set: sliding attention in nemotron_h cannot be placed")
    out["layer_types"] = [kinds[ch][0] for ch in pattern]
    out["mlp_layer_types"] = [kinds[ch][1] for ch in pattern]
    out["norms_per_layer"] = 1
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", False)
    out["attention"] = _gqa(n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias)
    out["mamba"] = _nemotron_mamba(c)
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


def _nemotron_mamba(c: _Config) -> Any:
    """nemotron_h's Mamba-2 mixer (in_proj / out_proj bias ``use_bias``, conv bias
    ``use_conv_bias``); the mixer's kernel and training settings ignored (they change no count)."""
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
    return _mamba2_spec(
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


def _granitemoehybrid(c: _Config, fam: _Family) -> dict[str, Any]:
    """granitemoehybrid (transformers models/granitemoehybrid/modeling_granitemoehybrid.py): each
    block is input_layernorm, a Mamba-2 mixer or attention (``layer_types`` mamba / attention; q/k/v/o
    bias ``attention_bias``; RoPE only with ``position_embedding_type`` rope), post_attention_layernorm,
    then a MoE (router layer [E, d] without bias, gated experts input_linear [E, 2 d_ff, d] and
    output_linear [E, d, d_ff]) when ``num_local_experts`` > 0, and the gated shared_mlp of
    ``shared_intermediate_size`` (a dense MLP when there are no experts). Mamba inner width is
    ``mamba_expand`` x d = ``mamba_n_heads`` x ``mamba_d_head``."""
    positions = c.str("position_embedding_type", "nope")
    if positions not in ("nope", "rope"):
        raise c.error("position_embedding_type", f"must be nope or rope (got {positions!r})")
    out = _common(c, fam, nope=positions == "nope")
    d, L = out["hidden_size"], out["num_hidden_layers"]
    out["layer_types"] = _granite_layer_types(c, L)
    raw = ["mamba" if t == LayerType.MAMBA2 else "attention" for t in out["layer_types"]]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", False)
    out["attention"] = _gqa(n_q, n_kv, hd, attention_bias=bias, o_proj_bias=bias)
    _granite_mamba(c, d, raw, out)
    _granite_ffn(c, out)
    return out


def _granite_layer_types(c: _Config, L: int) -> list[LayerType]:
    """granitemoehybrid's ``layer_types`` (or ``layers_block_type``): each layer Mamba-2 or full
    attention; all Mamba when absent, as GraniteMoeHybridConfig defaults."""
    key = c.alias("layer_types", "layers_block_type")
    raw = c.raw(key)
    if raw is None or raw is _ABSENT_MARK:
        raw = ["mamba"] * L  # GraniteMoeHybridConfig default: every layer Mamba
        c.defaults.append(f"{key} = all mamba (absent; granitemoehybrid default)")
    # GraniteMoeHybridConfig's names, and the ones transformers 5 saves them as
    remap = {
        "mamba": LayerType.MAMBA2,
        "linear_attention": LayerType.MAMBA2,
        "attention": LayerType.FULL_ATTENTION,
        "full_attention": LayerType.FULL_ATTENTION,
    }
    if not isinstance(raw, list) or any(not isinstance(t, str) or t not in remap for t in raw):
        raise c.error(key, f"must be a list of {' / '.join(map(repr, remap))} (got {shown(repr(raw), 60)})")
    if len(raw) != L:
        raise c.error(key, f"has {len(raw)} entries but num_hidden_layers is {L}")
    return [remap[t] for t in raw]


def _granite_mamba(c: _Config, d: int, raw: list[str], out: dict[str, Any]) -> None:
    """granitemoehybrid's Mamba-2 mixer in ``out["mamba"]`` when a layer is Mamba (its inner width
    ``mamba_expand`` x d = ``mamba_n_heads`` x ``mamba_d_head``); its keys ignored otherwise."""
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


def _granite_ffn(c: _Config, out: dict[str, Any]) -> None:
    """granitemoehybrid's feed-forward in ``out``: the MoE with its shared MLP when
    ``num_local_experts`` > 0, else the shared MLP as a dense one (the multipliers and the router's
    loss settings are ignored: they change no count)."""
    from llm_cost.specs.schema import MLP, MoE

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
    out = _common(c, fam)
    d, L = out["hidden_size"], out["num_hidden_layers"]
    n_q, n_kv, hd = _heads(c, d, fam)
    bias = c.bool("attention_bias", False)
    chunk = c.opt_int("attention_chunk_size")
    types = _llama4_layer_types(c, L, chunk)
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
    _llama4_ffn(c, L, out)
    if c.family == "llama4":
        from llm_cost.specs.hf.vision import llama4_vision

        out["vision"] = llama4_vision(c)
    return out


def _llama4_layer_types(c: _Config, L: int, chunk: int | None) -> list[LayerType]:
    """llama4's layer types: ``layer_types`` as given, else chunked attention on the RoPE layers
    (``no_rope_layers`` 1; when it is absent, null or ``[]``, all but every
    ``no_rope_layer_interval``-th, as Llama4TextConfig.__init__ defaults it: transformers
    models/llama4/configuration_llama4.py, ``no_rope_layers if no_rope_layers else default``) when
    ``attention_chunk_size`` is set, full attention on the others."""
    types = _layer_types(c, L, (LayerType.FULL_ATTENTION, LayerType.CHUNKED_ATTENTION))
    if types is None:
        if c.has("no_rope_layers") and c.raw("no_rope_layers") != []:  # [] or null: the default
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
    return types


def _llama4_ffn(c: _Config, L: int, out: dict[str, Any]) -> None:
    """llama4's feed-forward in ``out``: MoE on ``moe_layers`` (default every
    ``interleave_moe_layer_step``-th) with a shared expert of the same width, a dense gated MLP of
    ``intermediate_size_mlp`` on the others."""
    from llm_cost.specs.schema import MLP, MoE

    if c.has("moe_layers"):
        moe_layers = set(c.int_list("moe_layers"))
        if c.has("interleave_moe_layer_step"):
            c.int("interleave_moe_layer_step")  # unused beside moe_layers, but a step is at least 1
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


def _gemma4(model_type: str) -> Callable[[_Config, _Family], dict[str, Any]]:
    """Gemma 4: the blocks it does not model refused first (llm_cost.specs.hf.gemma4), then the
    vocabulary with its departures line."""
    from llm_cost.specs.hf.gemma4 import refuse_unmodelled

    read = generic_mapper(model_type)

    def mapper(c: _Config, fam: _Family) -> dict[str, Any]:
        refuse_unmodelled(c)
        return read(c, fam)

    mapper.__doc__ = read.__doc__
    return mapper


_F = _Family
#: model_type -> (mapping, family defaults the mapping falls back on where transformers' table has none).
FAMILIES: dict[str, tuple[Callable[[_Config, _Family], dict[str, Any]], _Family]] = {
    "llama": (generic_mapper("llama"), _F(tie=False, max_pos=2048, rope_theta=10000.0)),
    "mistral": (generic_mapper("mistral"), _F(tie=False, max_pos=131072, rope_theta=10000.0)),
    "mistral3": (generic_mapper("mistral3"), _F(tie=False, max_pos=131072, rope_theta=1e9)),
    "mixtral": (generic_mapper("mixtral"), _F(tie=False, max_pos=131072, rope_theta=1e6)),
    "qwen2": (generic_mapper("qwen2"), _F(tie=False, max_pos=32768, rope_theta=10000.0)),
    "qwen2_moe": (generic_mapper("qwen2_moe"), _F(tie=False, max_pos=32768, rope_theta=10000.0)),
    "qwen3": (generic_mapper("qwen3"), _F(tie=False, max_pos=32768, rope_theta=10000.0, head_dim=128)),
    "qwen3_moe": (generic_mapper("qwen3_moe"), _F(tie=False, max_pos=32768, rope_theta=10000.0)),
    "qwen3_next": (
        generic_mapper("qwen3_next"),
        _F(tie=False, max_pos=32768, rope_theta=10000.0, head_dim=256, partial_rotary=0.25),
    ),
    "qwen2_vl": (generic_mapper("qwen2_vl"), _F(tie=False, max_pos=32768, rope_theta=1e6)),
    "qwen3_vl": (generic_mapper("qwen3_vl"), _F(tie=False, max_pos=262144, rope_theta=5e6, head_dim=128)),
    "qwen2_5_vl": (generic_mapper("qwen2_5_vl"), _F(tie=False, max_pos=128000, rope_theta=1e6)),
    "deepseek_v2": (generic_mapper("deepseek_v2"), _F(tie=False, max_pos=2048, rope_theta=10000.0)),
    "deepseek_v3": (generic_mapper("deepseek_v3"), _F(tie=False, max_pos=4096, rope_theta=10000.0)),
    "deepseek_v32": (
        with_sparse_indexer(generic_mapper("deepseek_v32")),
        _F(tie=False, max_pos=163840, rope_theta=10000.0),
    ),
    "glm_moe_dsa": (
        with_sparse_indexer(generic_mapper("glm_moe_dsa"), mtp_stores_shared=False),
        _F(tie=False, max_pos=202752, rope_theta=10000.0),
    ),
    "gemma": (generic_mapper("gemma"), _F(tie=True, max_pos=8192, rope_theta=10000.0, head_dim=256)),
    "gemma2": (generic_mapper("gemma2"), _F(tie=True, max_pos=8192, rope_theta=10000.0, head_dim=256)),
    "gemma3_text": (generic_mapper("gemma3_text"), _F(tie=True, max_pos=131072, rope_theta=1e6, head_dim=256)),
    "phi3": (generic_mapper("phi3"), _F(tie=False, max_pos=4096, rope_theta=10000.0)),
    "gpt2": (_gpt2, _F(tie=True, max_pos=1024, rope_theta=None, dtype="fp32")),
    "falcon": (_falcon, _F(tie=True, max_pos=2048, rope_theta=10000.0)),
    "gpt_oss": (generic_mapper("gpt_oss"), _F(tie=False, max_pos=131072, rope_theta=150000.0, head_dim=64)),
    "gemma3": (generic_mapper("gemma3"), _F(tie=True, max_pos=131072, rope_theta=1e6, head_dim=256)),
    "gemma4": (_gemma4("gemma4"), _F(tie=True, max_pos=131072, rope_theta=1e6, head_dim=256)),
    "gemma4_text": (_gemma4("gemma4_text"), _F(tie=True, max_pos=131072, rope_theta=1e6, head_dim=256)),
    "smollm3": (generic_mapper("smollm3"), _F(tie=True, max_pos=32768, rope_theta=2000000.0)),
    "olmo2": (generic_mapper("olmo2"), _F(tie=False, max_pos=2048, rope_theta=10000.0)),
    "olmo3": (generic_mapper("olmo3"), _F(tie=False, max_pos=2048, rope_theta=10000.0)),
    "phimoe": (generic_mapper("phimoe"), _F(tie=False, max_pos=131072, rope_theta=1e6)),
    "granitemoe": (generic_mapper("granitemoe"), _F(tie=True, max_pos=4096, rope_theta=10000.0)),
    "nemotron_h": (_nemotron_h, _F(tie=False, max_pos=4096, rope_theta=None, head_dim=128)),
    "granitemoehybrid": (_granitemoehybrid, _F(tie=False, max_pos=2048, rope_theta=10000.0)),
    "minimax_m2": (_minimax_m2, _F(tie=False, max_pos=196608, rope_theta=5e6, head_dim=128)),
    "llama4": (_llama4, _F(tie=False, max_pos=131072, rope_theta=500000.0, head_dim=128)),
    "llama4_text": (_llama4, _F(tie=False, max_pos=131072, rope_theta=500000.0, head_dim=128)),
    "ernie4_5": (generic_mapper("ernie4_5"), _F(tie=True, max_pos=131072, rope_theta=500000.0, head_dim=128)),
    "internlm2": (generic_mapper("internlm2"), _F(tie=False, max_pos=2048, rope_theta=10000.0)),
    "olmoe": (generic_mapper("olmoe"), _F(tie=False, max_pos=4096, rope_theta=10000.0, dtype="fp32")),
    "glm4_moe": (
        generic_mapper("glm4_moe"),
        _F(tie=False, max_pos=131072, rope_theta=10000.0, head_dim=128, partial_rotary=0.5),
    ),
}
FAMILIES.update(NEW_KINDS)  # the families of new layer kinds (specs.hf.new_kinds)
FAMILIES.update(MIMO_FAMILIES)  # MiMo-V2 (specs.hf.mimo)
FAMILIES.update(MINIMAX_M3_FAMILIES)  # MiniMax-M3 (specs.hf.minimax_m3)

#: Legacy model_type names read by another family's mapping.
ALIASES = {
    "RefinedWebModel": "falcon",
    "RefinedWeb": "falcon",
    # Kimi K2 ships DeepseekV3ForCausalLM (remote code, the DeepSeek-V3 tensors) under its own model_type
    "kimi_k2": "deepseek_v3",
}
# Every other line of the departures table is a family read through the vocabulary alone.
for _model_type in DEPARTURES:
    FAMILIES.setdefault(_model_type, (generic_mapper(_model_type), generic_family(_model_type)))
#: Every model_type read by a mapping or by the generic reader with a departures line (each checked
#: against a checkpoint of the family); others are read generically when their keys allow.
SUPPORTED_MODEL_TYPES = tuple(FAMILIES)

_HEADS = ("ForCausalLM", "LMHeadModel", "ForConditionalGeneration")
