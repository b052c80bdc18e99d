"""The departures table: one line per model_type whose modeling file departs from the standard
config vocabulary that :func:`llm_cost.specs.hf.generic.read_generic` interprets, each citing
the modeling file it was read from. A new family that recombines known pieces is one more line
here (and, when it brings a vision tower, a reader in :mod:`llm_cost.specs.hf.vision`); every line
is a supported family (:data:`llm_cost.specs.hf.families.FAMILIES` maps it to the generic reader).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Optional

from llm_cost.core.records import record
from llm_cost.specs.hf.gemma4 import GEMMA4_EXTRA_KEYS, gemma4_blocks


def smollm3_layers(c: Any, out: dict[str, Any]) -> None:
    """SmolLM3's layer schedule as SmolLM3Config.__post_init__ builds it (transformers
    models/smollm3/configuration_smollm3.py): ``no_rope_layers`` (1: RoPE, 0: NoPE; absent, every
    ``no_rope_layer_interval``-th layer is NoPE) and, only with ``use_sliding_window`` and a
    ``sliding_window``, sliding attention on the NoPE layers; ``max_window_layers`` (a Qwen2 key the
    Hub configs carry) means nothing to SmolLM3 and is read as inert."""
    from llm_cost.core.types import LayerType

    L = out["num_hidden_layers"]
    c.ignore("max_window_layers", "no_rope_layer_interval")
    flags = c.raw("no_rope_layers")
    if flags is None or not isinstance(flags, list):
        if flags is not None and not isinstance(flags, dict):
            c.int_list("no_rope_layers")  # refuses a value that is no list, naming the key
        k = c.int("no_rope_layer_interval", 4, maximum=max(L, 1))
        flags = [int((i + 1) % k != 0) for i in range(L)]
    elif len(flags) != L or any(f not in (0, 1) or isinstance(f, bool) for f in flags):
        raise c.error("no_rope_layers", f"must list 0 (NoPE) or 1 (RoPE) for each of the {L} layers")
    if c.data.get("max_window_layers") is not None and c.data.get("use_sliding_window"):
        c.notes.append("max_window_layers is not read by SmolLM3Config: the NoPE layers slide")
    window = out["attention"].sliding_window
    if window is not None and "layer_types" not in out:
        out["layer_types"] = [LayerType.FULL_ATTENTION if f else LayerType.SLIDING_ATTENTION for f in flags]


__all__ = ["Departures", "DEPARTURES"]


@record
class Departures:
    """How one model_type's modeling file departs from the standard vocabulary.

    ``cite``: the modeling file read. ``qk_norm``: per-head q/k RMSNorms that no config key
    announces (Qwen3). ``output_gate``: q_proj also emits a sigmoid output gate (Qwen3-Next).
    ``o_proj_bias``: ``attention_bias`` reaches o_proj too (False: q/k/v only, GLM-4-MoE).
    ``shared_expert_gate``: the shared expert has a sigmoid gate [1, d] (Qwen2-MoE, Qwen3-Next).
    ``router_bias``: the router stores e_score_correction_bias whatever ``topk_method`` says.
    ``restates``: keys whose value the family implies (``use_qk_norm: true`` on Qwen3-MoE):
    that value is accepted, another is refused. ``vision``: the reader of ``vision_config``
    (:mod:`llm_cost.specs.hf.vision`), None when the family has no tower. ``declared_only``: a
    key of the vocabulary that the family's transformers configuration class does not declare
    (``num_experts`` on llama, ``attention_bias`` on mistral) is refused rather than read, unless
    it is one of ``extra_keys`` (keys the checkpoints' configs carry beyond the class, DeepSeek's
    ``num_nextn_predict_layers``), or declared by the configuration class of ``declared_as`` (a
    wrapper's language model: mistral for mistral3). ``window_rule``: the Qwen ``use_sliding_window`` /
    ``max_window_layers`` schedule (see :func:`llm_cost.specs.hf.config._qwen_sliding`).
    ``bias_key``: the key switching the q/k/v (and o) biases (None: q/k/v biases always, Qwen2),
    ``bias_default`` its value when absent (Qwen2-MoE's ``qkv_bias``: true); ``mlp_bias_key`` the
    MLP's (ERNIE's ``use_bias`` switches both). ``qk_norm_width``: "projection" when the q/k norms
    span the whole projection (OLMoE) rather than one head. ``full_attention_interval``: the
    interval a config without ``layer_types`` or that key takes (Qwen3NextConfig's __post_init__: 4).
    ``window_every``: without ``layer_types``, every k-th layer attends globally and the others
    slide (Gemma 2: 2, Olmo 3: 4), k read from ``window_every_keys`` when the config has one
    (Gemma 3's ``sliding_window_pattern``, default 6). ``norms_per_layer``: RMSNorms per block
    when not two (Gemma 2/3: four). ``act_keys``: the activation's key (the first present, Gemma's
    ``hidden_activation`` before ``hidden_act``), ``act_default`` its default. ``sinks``: one
    learned attention-sink logit per head; ``expert_bias``: biased expert projections (gpt-oss).
    ``norm_type``: "layernorm" where the norms carry biases; ``lm_head_bias_key``: the key of an
    LM-head bias (Phi-3.5-MoE). ``extra``: a reader ``(config, fields)`` of the keys of a layer or
    block kind the vocabulary does not know (an indexer, a short convolution), run after the
    vocabulary's fields are read; it marks the keys it reads and adds or replaces fields (the way
    to bring a new kind to a family that otherwise speaks the vocabulary). ``mtp_stores_shared``
    false: the checkpoint's ``num_nextn_predict_layers`` MTP layers hold no copy of the embedding
    and LM head (MiMo-7B: they use the main model's). ``stored_mtp_layers``: MTP layers the
    checkpoints store when the config declares none (Qwen3-Next's ``mtp.*``, which transformers'
    Qwen3NextForCausalLM ignores on load: ``_keys_to_ignore_on_load_unexpected = [r"^mtp.*"]``).
    """

    cite: str
    qk_norm: bool = False
    output_gate: bool = False
    o_proj_bias: bool = True
    shared_expert_gate: bool = False
    router_bias: bool = False
    restates: tuple[tuple[str, Any], ...] = ()
    vision: Optional[str] = None
    declared_only: bool = False
    extra_keys: tuple[str, ...] = ()
    declared_as: Optional[str] = None
    window_rule: Optional[str] = None
    bias_key: Optional[str] = "attention_bias"
    bias_default: bool = False
    full_attention_interval: Optional[int] = None
    window_every: Optional[int] = None
    window_every_keys: tuple[str, ...] = ()
    norms_per_layer: Optional[int] = None
    act_keys: tuple[str, ...] = ("hidden_act",)
    act_default: str = "silu"
    sinks: bool = False
    expert_bias: bool = False
    norm_type: Optional[str] = None
    lm_head_bias_key: Optional[str] = None
    extra: Optional[Callable[[Any, dict[str, Any]], None]] = None
    mlp_bias_key: str = "mlp_bias"
    qk_norm_width: str = "head"
    mtp_stores_shared: bool = True
    stored_mtp_layers: int = 0


def _qwen_text(cite: str, **kw: Any) -> Departures:
    return Departures(cite=cite, qk_norm=True, restates=(("use_qk_norm", True),), **kw)


def _qwen3_next_text(cite: str, vision: Optional[str] = None, stored_mtp_layers: int = 0) -> Departures:
    """Qwen3-Next's text departures: per-head q/k norms, the gated q_proj, the gated shared expert."""
    return Departures(
        stored_mtp_layers=stored_mtp_layers,
        cite=cite,
        qk_norm=True,
        output_gate=True,
        shared_expert_gate=True,
        vision=vision,
        full_attention_interval=4,
        # the Hub configs restate the gate that Qwen3NextAttention always builds (vLLM reads the key)
        restates=(("attn_output_gate", True),),
    )


#: model_type -> how its modeling file departs from the standard vocabulary.
DEPARTURES: dict[str, Departures] = {
    "qwen3_vl_moe": _qwen_text(
        "transformers models/qwen3_vl_moe/modeling_qwen3_vl_moe.py (Qwen3-MoE text, Qwen3-VL vision with DeepStack)",
        vision="qwen3_vl",
    ),
    "qwen3_next": _qwen3_next_text(
        "transformers models/qwen3_next/modeling_qwen3_next.py: Gated DeltaNet linear attention between gated full "
        "attention layers (q_proj also emits the output gate; per-head q/k norms), MoE with a gated shared "
        "expert; mtp_num_hidden_layers is the checkpoint's MTP block (no embedding/head copies), reported apart; "
        "a config without it (the Hub's Qwen3-Next configs) still has the one MTP layer mtp.* in its checkpoint",
        stored_mtp_layers=1,
    ),
    "qwen3_5": _qwen3_next_text(
        "transformers models/qwen3_5/modeling_qwen3_5.py (Qwen3-Next text with a dense MLP; in_proj_qkv/z/b/a "
        "hold the elements of Qwen3-Next's in_proj_qkvz/ba; Qwen3-VL vision without DeepStack)",
        vision="qwen3_5",
    ),
    "qwen3_5_text": _qwen3_next_text("transformers models/qwen3_5/modeling_qwen3_5.py (Qwen3_5ForCausalLM)"),
    "qwen3_5_moe": _qwen3_next_text(
        "transformers models/qwen3_5_moe/modeling_qwen3_5_moe.py (Qwen3-Next text: gated attention, Gated "
        "DeltaNet, MoE with a gated shared expert; Qwen3-VL vision without DeepStack)",
        vision="qwen3_5",
    ),
    "qwen3_5_moe_text": _qwen3_next_text(
        "transformers models/qwen3_5_moe/modeling_qwen3_5_moe.py (Qwen3_5MoeForCausalLM)"
    ),
    "kimi_k25": Departures(
        cite="transformers models/kimi_k25/modeling_kimi_k25.py (a DeepSeek-V3 language model of text_config, "
        "model_type kimi_k2 or deepseek_v3, and the MoonViT tower with its patch-merger projector)",
        vision="moonvit",
    ),
    # -- supported families read through the vocabulary (FAMILIES maps them to generic_mapper) ------
    "qwen2": Departures(
        cite="transformers models/qwen2/modeling_qwen2.py: q/k/v biases always (o_proj none); sliding layers "
        "i >= max_window_layers when use_sliding_window",
        bias_key=None,
        o_proj_bias=False,
        window_rule="from_max",
        declared_only=True,
    ),
    "mimo": Departures(
        cite="the checkpoints' own modeling_mimo.py (MiMoForCausalLM, remote code: Qwen2ForCausalLM with "
        "MiMoMTPLayers): Qwen2 blocks, q/k/v biases and none on o_proj; num_nextn_predict_layers MTP layers "
        "model.mtp_layers.* of token_layernorm, hidden_layernorm, input_proj [2d -> d] without bias, a Qwen2 "
        "attention and MLP with their two norms and final_layernorm, using the main model's embedding and LM head",
        bias_key=None,
        o_proj_bias=False,
        restates=(("attention_bias", True),),  # Qwen2Attention's q/k/v biases, which the config restates
        window_rule="from_max",
        mtp_stores_shared=False,
    ),
    "qwen2_vl": Departures(
        cite="transformers models/qwen2_vl/modeling_qwen2_vl.py: the Qwen2 language model and "
        "Qwen2VisionTransformerPretrainedModel",
        bias_key=None,
        o_proj_bias=False,
        window_rule="from_max",
        vision="qwen2_vl",
    ),
    "qwen2_5_vl": Departures(
        cite="transformers models/qwen2_5_vl/modeling_qwen2_5_vl.py: the Qwen2 language model and the Qwen2.5-VL "
        "vision tower",
        bias_key=None,
        o_proj_bias=False,
        window_rule="from_max",
        vision="qwen2_5_vl",
    ),
    "qwen2_moe": Departures(
        cite="transformers models/qwen2_moe/modeling_qwen2_moe.py: q/k/v biases (qkv_bias, default true), MoE "
        "with a gated shared expert; sliding layers odd i < max_window_layers when use_sliding_window",
        bias_key="qkv_bias",
        bias_default=True,
        o_proj_bias=False,
        shared_expert_gate=True,
        window_rule="alternate_below_max",
        declared_only=True,
    ),
    "qwen3": _qwen_text(
        "transformers models/qwen3/modeling_qwen3.py: attention_bias on q/k/v/o, per-head q/k norms",
        window_rule="from_max",
        declared_only=True,
    ),
    "qwen3_moe": _qwen_text(
        "transformers models/qwen3_moe/modeling_qwen3_moe.py: Qwen3 attention, MoE every decoder_sparse_step-th "
        "layer outside mlp_only_layers; a window slides in every layer when use_sliding_window",
        window_rule="all",
        declared_only=True,
        extra_keys=("shared_expert_intermediate_size", "qkv_bias", "max_window_layers"),
    ),
    "qwen3_vl": _qwen_text(
        "transformers models/qwen3_vl/modeling_qwen3_vl.py: the Qwen3 language model and the Qwen3-VL vision tower "
        "with DeepStack mergers",
        window_rule="from_max",
        vision="qwen3_vl",
    ),
    "ernie4_5": Departures(
        cite="transformers models/ernie4_5/modeling_ernie4_5.py (and the checkpoints' remote modeling_ernie4_5.py): "
        "llama blocks where use_bias puts biases on q/k/v/o and on gate/up/down",
        bias_key="use_bias",
        mlp_bias_key="use_bias",
        declared_only=True,
    ),
    "internlm2": Departures(
        cite="the checkpoints' own modeling_internlm2.py (InternLM2ForCausalLM, remote code): a fused wqkv holding "
        "q/k/v's elements and wo, both with bias `bias`; gated feed_forward w1/w3/w2 without biases",
        bias_key="bias",
    ),
    "olmoe": Departures(
        cite="transformers models/olmoe/modeling_olmoe.py: q/k/v/o (attention_bias), RMSNorm q_norm / k_norm over "
        "the whole projections (clip_qkv has no weights), every FFN a MoE of intermediate_size experts",
        qk_norm=True,
        qk_norm_width="projection",
        declared_only=True,
    ),
    "granitemoe": Departures(
        cite="transformers models/granitemoe/modeling_granitemoe.py: q/k/v/o (attention_bias), every FFN a MoE: "
        "router [E, d] without bias, experts input_linear (gate and up fused) and output_linear of "
        "intermediate_size; the multipliers are scalars, not weights",
        declared_only=True,
    ),
    "phi3": Departures(
        cite="transformers models/phi3/modeling_phi3.py: fused qkv_proj / gate_up_proj holding q/k/v's and "
        "gate/up's elements, no biases; sliding_window (when set) in every layer",
        declared_only=True,
    ),
    "smollm3": Departures(
        cite="transformers models/smollm3/modeling_smollm3.py: llama weights (attention_bias, mlp_bias); "
        "no_rope_layers only switches RoPE off (no weights); with use_sliding_window and a sliding_window the "
        "NoPE layers slide (SmolLM3Config); max_window_layers, which the Hub configs carry, is not read",
        declared_only=True,
        extra_keys=("max_window_layers",),
        extra=smollm3_layers,
    ),
    "mistral3": Departures(
        cite="transformers models/mistral3/modeling_mistral3.py (Mistral3ForConditionalGeneration): the Mistral "
        "language model of text_config, the Pixtral encoder and the Mistral 3 projector",
        declared_only=True,
        declared_as="mistral",
        vision="pixtral",
    ),
    "gemma": Departures(
        cite="transformers models/gemma/modeling_gemma.py: GeGLU MLP, attention_bias on q/k/v/o, a tied "
        "embedding by default (its sqrt(d) normalizer is a buffer)",
        act_keys=("hidden_activation", "hidden_act"),
        act_default="gelu_pytorch_tanh",
        declared_only=True,
    ),
    "gemma2": Departures(
        cite="transformers models/gemma2/modeling_gemma2.py: Gemma's tensors with four norms per block (input, "
        "post-attention, pre- and post-feed-forward); even layers slide over sliding_window",
        act_keys=("hidden_activation", "hidden_act"),
        act_default="gelu_pytorch_tanh",
        norms_per_layer=4,
        window_every=2,
        declared_only=True,
    ),
    "gemma3_text": Departures(
        cite="transformers models/gemma3/modeling_gemma3.py (Gemma3ForCausalLM): Gemma 2's block with per-head "
        "q_norm / k_norm; all layers but every sliding_window_pattern-th (default 6) slide",
        qk_norm=True,
        act_keys=("hidden_activation", "hidden_act"),
        act_default="gelu_pytorch_tanh",
        norms_per_layer=4,
        window_every=6,
        window_every_keys=("sliding_window_pattern", "_sliding_window_pattern"),
        declared_only=True,
        extra_keys=("sliding_window_pattern", "_sliding_window_pattern"),
    ),
    "gemma3": Departures(
        cite="transformers models/gemma3/modeling_gemma3.py (Gemma3ForConditionalGeneration): the Gemma 3 text "
        "model of text_config, a SigLIP tower and Gemma3MultiModalProjector",
        qk_norm=True,
        act_keys=("hidden_activation", "hidden_act"),
        act_default="gelu_pytorch_tanh",
        norms_per_layer=4,
        window_every=6,
        window_every_keys=("sliding_window_pattern", "_sliding_window_pattern"),
        vision="siglip_gemma3",
    ),
    "gemma4_text": Departures(
        cite="transformers models/gemma4/modeling_gemma4.py (Gemma4ForCausalLM): Gemma 3's block (four norms, "
        "per-head q/k norms, GeGLU); full-attention layers of global_head_dim with num_global_key_value_heads "
        "and no v_proj under attention_k_eq_v; a stored layer_scalar per block; the MoE block, per-layer "
        "embeddings and KV-shared layers (llm_cost.specs.hf.gemma4)",
        qk_norm=True,
        act_keys=("hidden_activation", "hidden_act"),
        act_default="gelu_pytorch_tanh",
        norms_per_layer=4,
        window_every=6,
        declared_only=True,
        extra_keys=GEMMA4_EXTRA_KEYS,
        extra=gemma4_blocks,
    ),
    "gemma4": Departures(
        cite="transformers models/gemma4/modeling_gemma4.py (Gemma4ForConditionalGeneration): the Gemma 4 text "
        "model of text_config, Gemma4VisionModel, Gemma4AudioModel and their Gemma4MultimodalEmbedders "
        "(llm_cost.specs.hf.gemma4)",
        qk_norm=True,
        act_keys=("hidden_activation", "hidden_act"),
        act_default="gelu_pytorch_tanh",
        norms_per_layer=4,
        window_every=6,
        declared_only=True,
        extra_keys=(*GEMMA4_EXTRA_KEYS, "audio_config"),
        extra=gemma4_blocks,
        vision="gemma4",
    ),
    "olmo2": Departures(
        cite="transformers models/olmo2/modeling_olmo2.py: llama projections (attention_bias on q/k/v/o), RMSNorm "
        "q_norm / k_norm over the whole projections, two norms per block after their sublayers",
        qk_norm=True,
        qk_norm_width="projection",
        declared_only=True,
    ),
    "olmo3": Departures(
        cite="transformers models/olmo3/modeling_olmo3.py: Olmo 2's tensors; a sliding_window over the layers "
        "layer_types marks (Olmo3Config: all but every 4th)",
        qk_norm=True,
        qk_norm_width="projection",
        window_every=4,
        declared_only=True,
    ),
    "gpt_oss": Departures(
        cite="transformers models/gpt_oss/modeling_gpt_oss.py: q/k/v/o with biases (attention_bias, default true) "
        "and a learned sink per head; even layers slide (sliding_window, default 128); every FFN a MoE with a "
        "biased router and biased experts gate_up_proj / down_proj of intermediate_size",
        sinks=True,
        expert_bias=True,
        router_bias=True,
        window_every=2,
        declared_only=True,
        extra_keys=("experts_per_token",),
    ),
    "phimoe": Departures(
        cite="transformers models/phimoe/modeling_phimoe.py: q/k/v/o with biases (attention_bias), LayerNorms with "
        "biases, every FFN a MoE of num_local_experts gated experts of intermediate_size, an LM head with a bias "
        "(lm_head_bias)",
        norm_type="layernorm",
        lm_head_bias_key="lm_head_bias",
        declared_only=True,
    ),
    "llama": Departures(
        cite="transformers models/llama/modeling_llama.py: q/k/v/o (attention_bias on all four), gated MLP "
        "(mlp_bias on all three), two RMSNorms per layer",
        declared_only=True,
    ),
    "mistral": Departures(
        cite="transformers models/mistral/modeling_mistral.py: llama's tensors without biases; sliding_window "
        "(MistralConfig default 4,096) in every layer",
        declared_only=True,
    ),
    "mixtral": Departures(
        cite="transformers models/mixtral/modeling_mixtral.py: Mistral attention; every FFN num_local_experts "
        "gated experts of intermediate_size with a bias-free router",
        declared_only=True,
    ),
    "deepseek_v2": Departures(
        cite="transformers models/deepseek_v2/modeling_deepseek_v2.py (and the checkpoints' modeling_deepseek.py): "
        "MLA, MoE after first_k_dense_replace every moe_layer_freq-th layer with n_shared_experts shared experts; "
        "topk_method noaux_tc stores e_score_correction_bias",
        declared_only=True,
        extra_keys=("moe_layer_freq", "num_nextn_predict_layers", "q_lora_rank"),
    ),
    "deepseek_v3": Departures(
        cite="transformers models/deepseek_v3/modeling_deepseek_v3.py (and the checkpoints' modeling_deepseek.py): "
        "DeepSeek-V2's layout; DeepseekV3TopkRouter always stores e_score_correction_bias; "
        "num_nextn_predict_layers MTP modules (with embedding/head copies) reported apart",
        router_bias=True,
        declared_only=True,
        extra_keys=("moe_layer_freq", "num_nextn_predict_layers", "topk_method"),
    ),
    "deepseek_v32": Departures(
        cite="transformers models/deepseek_v32/modeling_deepseek_v32.py (DeepSeek-V3.2-Exp's inference/model.py): "
        "DeepSeek-V3's layout with DeepSeek Sparse Attention's lightning indexer on every MLA layer "
        "(read by specs.hf.new_kinds.with_sparse_indexer)",
        router_bias=True,
        extra_keys=("moe_layer_freq", "num_nextn_predict_layers", "topk_method"),
    ),
    "glm_moe_dsa": Departures(
        cite="transformers models/glm_moe_dsa/modeling_glm_moe_dsa.py (GLM-5): DeepSeek-V3-style MLA and MoE with "
        "e_score_correction_bias and shared experts, the lightning indexer on every layer (specs.hf.new_kinds."
        "with_sparse_indexer); the checkpoint's MTP layer stores no embedding or head copy",
        router_bias=True,
        extra_keys=("moe_layer_freq", "num_nextn_predict_layers", "topk_method"),
    ),
    "glm4_moe": Departures(
        cite="transformers models/glm4_moe/modeling_glm4_moe.py: attention_bias on q/k/v (never o_proj), optional "
        "per-head q/k norms (use_qk_norm), partial RoPE; MoE after first_k_dense_replace with "
        "e_score_correction_bias and n_shared_experts; the checkpoint's num_nextn_predict_layers MTP layers",
        o_proj_bias=False,
        router_bias=True,
        declared_only=True,
        extra_keys=("num_nextn_predict_layers", "topk_method"),
    ),
    "glm4v_moe": Departures(
        cite="transformers models/glm4v_moe/modeling_glm4v_moe.py (the GLM-4-MoE language model: q/k/v biases "
        "without an o_proj bias, the router's e_score_correction_bias, shared experts; the GLM-4V vision tower)",
        o_proj_bias=False,
        router_bias=True,
        vision="glm4v",
    ),
    "glm4_moe_lite": Departures(
        cite="transformers models/glm4_moe_lite/modeling_glm4_moe_lite.py (DeepSeek-V3 MLA, GLM-4-MoE router with "
        "e_score_correction_bias and shared experts)",
        router_bias=True,
    ),
}
