"""The schemas of model and GPU spec files: frozen dataclasses whose field types carry their
bounds (:mod:`llm_cost.specs.declare`), validated by pydantic v2 when a file is read
(:func:`llm_cost.specs.declare.validated`), unknown keys rejected.

Field names follow the Hugging Face ``config.json`` names (``hidden_size``,
``num_attention_heads``, ``num_key_value_heads``, ``head_dim``, ``intermediate_size``,
``vocab_size``, ``num_hidden_layers``, ``tie_word_embeddings``, ``kv_lora_rank`` ...), grouped
into sub-objects by the part of the model they describe. In formulas the seeds' notation is
used: d = ``hidden_size``, L = ``num_hidden_layers``, V = ``vocab_size``, n_q / n_kv = query /
key-value heads, d_head = ``head_dim``, d_kv = n_kv * d_head, d_ff = ``intermediate_size``.

Every count is an integer number of elements; every hardware figure carries its unit in its
name (``memory_gb`` is 10^9 bytes, ``memory_bandwidth_tb_s`` is 10^12 bytes per second,
``dense_tflops`` is 10^12 FLOP/s without sparsity).

Every number is bounded, and the bounds are checked before anything is expanded (a tensor list,
a per-layer loop). They lie far above any real model (Llama-3.1-405B: 126 layers, d = 16,384,
d_ff = 53,248, V = 128,256; the largest MoE ships a few hundred experts) and keep the work small
and every float finite: a per-layer loop runs at most 10,000 times, and the largest count, about
L x E x 3 d d_ff < 2^72, times the largest batch and context a flag accepts (10^15 each) stays far
below the float range (2^1024), so a byte count or time printed as a float never overflows.
GPU figures are bounded to physical ranges (1 GFLOP/s to 10^18 FLOP/s, 1 GB/s to 1,000 TB/s),
so no ratio of them divides by zero or overflows.

Field types are written as strings (``from __future__ import annotations``): pydantic evaluates
them when it first validates a file, and a command that reads only shipped specs never builds
the 60-odd ``Annotated`` and ``Optional`` types (about 2 ms of a start).
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Annotated, Literal, Optional, Union

from llm_cost.core.errors import InputError
from llm_cost.core.limits import (
    MAX_EXPERTS,
    MAX_HEADS,
    MAX_LAYERS,
    MAX_NAME,
    MAX_PLAN_GPUS,
    MAX_POSITIONS,
    MAX_SMALL,
    MAX_TEXT,
    MAX_VOCAB,
    MAX_WIDTH,
)
from llm_cost.core.notes import Note, note
from llm_cost.core.types import LayerType, MlpType, Topology
from llm_cost.specs.declare import DISCRIMINATED, Bounds, Spec, spec, spec_field

Small = Annotated[int, Bounds(ge=1, le=MAX_SMALL, strict=True)]
LayerIndex = Annotated[int, Bounds(ge=0, le=MAX_LAYERS, strict=True)]
Layers = Annotated[int, Bounds(ge=1, le=MAX_LAYERS, strict=True)]
Width = Annotated[int, Bounds(ge=1, le=MAX_WIDTH, strict=True)]
Heads = Annotated[int, Bounds(ge=1, le=MAX_HEADS, strict=True)]
Positions = Annotated[int, Bounds(ge=1, le=MAX_POSITIONS, strict=True)]
Experts = Annotated[int, Bounds(ge=1, le=MAX_EXPERTS, strict=True)]
OptionalWidth = Annotated[int, Bounds(ge=0, le=MAX_WIDTH, strict=True)]  #: a width that may be 0 (none)
SmallCount = Annotated[int, Bounds(ge=0, le=MAX_SMALL, strict=True)]
Vocab = Annotated[int, Bounds(ge=1, le=MAX_VOCAB, strict=True)]
NodeGpus = Annotated[int, Bounds(ge=1, le=MAX_PLAN_GPUS, strict=True)]
PcieGen = Annotated[int, Bounds(ge=1, le=16, strict=True)]
PositiveFloat = Annotated[float, Bounds(gt=0, le=1e6)]
Scale = Annotated[float, Bounds(ge=-1e6, le=1e6)]
#: No terminal control characters (C0 but tab and newline, DEL, C1) nor bidirectional overrides in a
#: spec's text: a name printed in a table could otherwise retitle the terminal, clear the screen or
#: reverse the rest of a line (a new user's trial: display_name "\e]0;pwned\a\e[2J...").
PRINTABLE = "^[^\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]*$"
Text = Annotated[str, Bounds(max_length=MAX_TEXT, pattern=PRINTABLE)]
StrictBool = Annotated[bool, Bounds(strict=True)]  #: true or false, not 1 or "yes"
Name = Annotated[str, Bounds(min_length=1, max_length=MAX_NAME, pattern=PRINTABLE)]
Names = Annotated[tuple[Name, ...], Bounds(max_length=64)]
if TYPE_CHECKING:
    LayerTypeName = str
    MlpTypeName = str
else:  # the values of the enums: a spec file is checked against them, and holds their text
    LayerTypeName = Literal[tuple(t.value for t in LayerType)]
    MlpTypeName = Literal[tuple(m.value for m in MlpType)]

Dtype = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4"]


@spec
class AppliedDefault(Spec):
    """A value a config.json left out (or wrote as null) that the reader supplied: ``field`` (the
    config key, ``text_config.`` / ``vision_config.`` prefixed where nested), ``value`` as read,
    ``source`` where it comes from (``transformers 5.24.0 Qwen3MoeConfig default``,
    ``hidden_size / num_attention_heads``)."""

    field: Text
    value: Text
    source: Text


@spec
class Source(Spec):
    """Where a spec's numbers come from."""

    url: Text = spec_field(description="The config.json or datasheet the values were read from.")
    retrieved: Text = spec_field(description="When the copy was read (ISO date).")
    note: Optional[Text] = spec_field(default=None, description="Anything a reader must know about the source.")
    defaults: Annotated[tuple[AppliedDefault, ...], Bounds(max_length=MAX_LAYERS)] = spec_field(
        default=(), description="Every default the reader applied to a config.json (its keys left out or null)."
    )


#: The sentence in the source note of a spec read from a config.json of a model_type that no
#: mapping was checked for, through the standard config vocabulary (llm_cost.specs.hf.generic).
READ_GENERICALLY = "Read generically: not checked against a checkpoint of this family."
#: The words before the reason in the source note of an offline-catalog entry its record marks
#: ``reader: pending`` that loads all the same (:func:`llm_cost.specs.catalog.load_catalog_model`).
CATALOG_PENDING = "Pending in the offline catalog:"


@spec
class SparseIndexer(Spec):
    """DeepSeek Sparse Attention's lightning indexer (DeepSeek-V3.2-Exp inference/model.py
    ``Indexer``; transformers models/deepseek_v32/modeling_deepseek_v32.py DeepseekV32Indexer, the
    same in models/glm_moe_dsa). Per MLA layer: wq_b [q_lora_rank -> H_i D_i] from the query latent,
    wk [d -> D_i], a LayerNorm k_norm (D_i weights and biases) and weights_proj [d -> H_i]. It keeps
    one D_i-wide key per token, stored as FP8 with one fp32 scale per 128 elements (D_i + 4 D_i / 128
    bytes: vLLM's and SGLang's indexer cache), scores every cached key (sum over H_i heads of
    w_h relu(q_h . k)) and hands the index_topk best to the attention, which then sees at most
    index_topk keys per query."""

    index_n_heads: Heads = spec_field(description="H_i, indexer heads.")
    index_head_dim: Width = spec_field(description="D_i, width of an indexer query head and of the cached key.")
    index_topk: Positions = spec_field(description="Keys (blocks, with index_block_size) each query's attention keeps.")
    kind: Literal["deepseek", "minimax_m3"] = spec_field(
        default="deepseek",
        description="deepseek: DeepSeek Sparse Attention's indexer on MLA layers (above); minimax_m3: MiniMax-M3's "
        "block indexer on GQA layers (transformers models/minimax_m3_vl/modeling_minimax_m3_vl.py "
        "MiniMaxM3VLIndexer: q_proj [d -> H_i D_i] from the hidden state, k_proj [d -> D_i], RMSNorm q_norm and "
        "k_norm of D_i; the cached key in the KV dtype, vLLM's MiniMaxM3IndexerCache bf16 by default; each query "
        "keeps its index_topk best blocks of index_block_size keys (a block scores the max over its keys and "
        "the index heads) plus the init and local blocks).",
    )
    index_block_size: Positions = spec_field(default=1, description="Keys per selected block (1: single keys).")
    index_init_blocks: SmallCount = spec_field(default=0, description="Leading blocks every query keeps.")
    index_local_blocks: SmallCount = spec_field(default=0, description="Blocks ending at the query's own, always kept.")
    moe_layers_only: bool = spec_field(
        default=False,
        description="The indexer (and its sparse attention) is on the MoE layers only; the dense layers attend "
        "to every key (MiniMax-M3: sparse_attention_freq equals moe_layer_freq).",
    )
    shared_layers: Annotated[tuple[LayerIndex, ...], Bounds(max_length=MAX_LAYERS)] = spec_field(
        default=(),
        description="Layers that reuse the previous indexed layer's top-k selection (GLM-5.2's indexer_types "
        "'shared'; transformers models/glm_moe_dsa/modeling_glm_moe_dsa.py GlmMoeDsaAttention builds no indexer "
        "there): no indexer weights, no indexer key cache, no indexer FLOPs; their attention still keeps "
        "index_topk keys per query.",
    )

    def _check(self) -> None:
        if self.kind == "deepseek" and (
            self.index_block_size != 1 or self.index_init_blocks or self.index_local_blocks or self.moe_layers_only
        ):
            raise ValueError("DeepSeek Sparse Attention's indexer picks single keys on every layer")

    @property
    def keys_per_query(self) -> int:
        """Most keys one query's sparse attention sees: (top-k + init + local) blocks of
        index_block_size keys (an init or local block that is also among the top-k makes it fewer)."""
        return (self.index_topk + self.index_init_blocks + self.index_local_blocks) * self.index_block_size


@spec
class GQAAttention(Spec):
    """Multi-head attention with n_kv key/value heads: MHA (n_kv = n_q), GQA, MQA (n_kv = 1).

    Per layer: W_Q [d, n_q*d_head], W_K and W_V [d, n_kv*d_head], W_O [n_q*d_head, d]
    (seed 000 §六). KV cache per token per layer: 2 * n_kv * d_head elements (seed 000 §七).
    """

    kind: Literal["gqa"] = "gqa"
    num_attention_heads: Heads = spec_field(description="n_q, query heads.")
    num_key_value_heads: Optional[Heads] = spec_field(
        default=None, description="n_kv, key/value heads; defaults to num_attention_heads (MHA)."
    )
    head_dim: Optional[Width] = spec_field(
        default=None, description="d_head, elements per head; defaults to hidden_size / num_attention_heads."
    )
    attention_bias: bool = spec_field(default=False, description="q, k and v projections carry biases.")
    o_proj_bias: bool = spec_field(default=False, description="The output projection carries a bias.")
    qk_norm: bool = spec_field(default=False, description="Per-head RMSNorm (d_head weights) on q and on k.")
    qk_norm_width: Literal["head", "projection"] = spec_field(
        default="head",
        description="head: q_norm/k_norm have d_head weights (Qwen3, Gemma 3); projection: they span the "
        "whole q (n_q d_head) and k (n_kv d_head) projections (OLMo 2, OLMoE).",
    )
    output_gate: bool = spec_field(
        default=False, description="Gated attention (Qwen3-Next): W_Q also emits a per-element output gate."
    )
    sinks: bool = spec_field(default=False, description="One learned attention-sink logit per query head (gpt-oss).")
    sink_layers: Literal["all", "sliding"] = spec_field(
        default="all",
        description="Which softmax layers hold the sinks: all, or only the sliding_attention layers "
        "(MiMo-V2-Flash: add_swa_attention_sink_bias without add_full_attention_sink_bias).",
    )
    v_head_dim: Optional[Width] = spec_field(
        default=None,
        description="d_v, elements per value head when it differs from head_dim (MiMo-V2-Flash: 128 against "
        "192): W_V is [d, n_kv d_v], W_O [n_q d_v, d] and the cache keeps n_kv (d_head + d_v) per token.",
    )
    sliding_num_key_value_heads: Optional[Heads] = spec_field(
        default=None,
        description="K/V heads of the sliding_attention layers when they differ from num_key_value_heads "
        "(MiMo-V2-Flash's swa_num_key_value_heads).",
    )
    sliding_window: Optional[Positions] = spec_field(
        default=None, description="Window W in tokens of the sliding-attention layers (see layer_types)."
    )
    attention_chunk_size: Optional[Positions] = spec_field(
        default=None,
        description="Chunk C of the chunked-attention layers (Llama 4): a token attends to the earlier tokens "
        "of its own C-token chunk, so the cache holds at most C tokens.",
    )
    global_head_dim: Optional[Width] = spec_field(
        default=None,
        description="d_head of the full_attention layers where it differs from head_dim (Gemma 4's "
        "global_head_dim); the sliding layers keep head_dim.",
    )
    global_num_key_value_heads: Optional[Heads] = spec_field(
        default=None,
        description="K/V heads of the full_attention layers where they differ (Gemma 4's num_global_key_value_heads).",
    )
    global_k_eq_v: bool = spec_field(
        default=False,
        description="The full_attention layers have no v_proj: V is read from k_proj's output (Gemma 4's "
        "attention_k_eq_v); K (normed, rotated) and V (normed) differ and both are cached.",
    )

    indexer: Optional[SparseIndexer] = spec_field(
        default=None,
        description="MiniMax-M3's block-sparse attention: the lightning indexer (kind minimax_m3) picking each "
        "query's key blocks; null: dense attention.",
    )

    def _check(self) -> None:
        if self.indexer is not None and self.indexer.kind != "minimax_m3":
            raise ValueError("attention.indexer on GQA layers is MiniMax-M3's (kind minimax_m3)")
        for key in ("num_key_value_heads", "sliding_num_key_value_heads", "global_num_key_value_heads"):
            n_kv = getattr(self, key)
            if n_kv is not None and self.num_attention_heads % n_kv:
                raise ValueError(
                    f"num_attention_heads ({self.num_attention_heads}) must be a multiple of {key} ({n_kv})"
                )
        if self.sliding_num_key_value_heads is not None and self.sliding_window is None:
            raise ValueError("sliding_num_key_value_heads is set but sliding_window is not")
        if self.has_global_geometry and (self.sliding_num_key_value_heads is not None or self.v_head_dim is not None):
            raise ValueError(
                "global geometry (Gemma 4) is not modelled beside sliding_num_key_value_heads or v_head_dim"
            )
        if self.has_global_geometry and self.attention_chunk_size is not None:
            raise ValueError("global geometry (Gemma 4) is not modelled beside chunked attention")

    @property
    def has_global_geometry(self) -> bool:
        """True when the full_attention layers differ from the others (Gemma 4)."""
        return self.global_head_dim is not None or self.global_num_key_value_heads is not None or self.global_k_eq_v


@spec
class MLAAttention(Spec):
    """Multi-head latent attention (DeepSeek-V2/V3).

    The cache holds the compressed latent c_KV (kv_lora_rank) and the decoupled RoPE key
    (qk_rope_head_dim) shared by all heads: (kv_lora_rank + qk_rope_head_dim) elements per
    token per layer (seed 003 §04).
    """

    kind: Literal["mla"] = "mla"
    num_attention_heads: Heads = spec_field(description="n_h, attention heads.")
    q_lora_rank: Optional[Width] = spec_field(
        default=None, description="Rank of the query down-projection; null means a full W_Q (DeepSeek-V2-Lite)."
    )
    kv_lora_rank: Width = spec_field(description="d_c, width of the cached KV latent.")
    qk_nope_head_dim: Width = spec_field(description="Per-head query/key width without RoPE.")
    qk_rope_head_dim: Width = spec_field(description="Width of the decoupled RoPE query/key.")
    v_head_dim: Width = spec_field(description="Per-head value width.")
    attention_bias: bool = spec_field(default=False, description="Projections carry biases.")
    indexer: Optional[SparseIndexer] = spec_field(
        default=None,
        description="DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): the lightning indexer choosing each "
        "query's top-k keys; null: dense MLA.",
    )

    def _check(self) -> None:
        if self.indexer is not None and not self.q_lora_rank:
            raise ValueError("attention.indexer reads the query latent, so q_lora_rank must be set")
        if self.indexer is not None and self.indexer.kind != "deepseek":
            raise ValueError("attention.indexer on MLA layers is DeepSeek Sparse Attention's (kind deepseek)")


@spec
class MLP(Spec):
    """Dense feed-forward block. Gated (SwiGLU/GeGLU): gate, up [d, d_ff] and down [d_ff, d];
    plain (GELU): up [d, d_ff] and down [d_ff, d] (seed 002, SwiGLU)."""

    intermediate_size: Width = spec_field(description="d_ff, the hidden width.")
    gated: bool = spec_field(default=True, description="Three matrices (gate, up, down) instead of two.")
    hidden_act: Text = spec_field(default="silu", description="Activation name as in config.json.")
    mlp_bias: bool = spec_field(default=False, description="The projections carry biases.")


@spec
class MoE(Spec):
    """Mixture-of-experts feed-forward (seed 003 §06).

    A MoE layer holds E routed experts (gated unless ``expert_gated`` is false, width
    moe_intermediate_size), a router [d, E], and optionally always-on shared experts of total width
    shared_expert_intermediate_size. A token runs k routed experts plus the shared ones. A latent MoE
    (``moe_latent_size`` l) projects the token to l before the routed experts and back after them.
    Layer i is a MoE layer when i >= first_k_dense_replace, (i + 1) % decoder_sparse_step == 0
    and i is not in mlp_only_layers; other layers use the dense ``mlp``.
    """

    num_experts: Experts = spec_field(description="E, routed experts per MoE layer.")
    num_experts_per_tok: Experts = spec_field(description="k, routed experts per token.")
    moe_intermediate_size: Width = spec_field(description="Hidden width of one routed expert.")
    shared_expert_intermediate_size: OptionalWidth = spec_field(
        default=0, description="Total hidden width of the shared expert(s) (n_shared * width); 0 if none."
    )
    shared_expert_gate: bool = spec_field(default=False, description="A sigmoid gate [d, 1] on the shared expert.")
    router_bias: bool = spec_field(
        default=False, description="The router has E bias terms (DeepSeek-V3 correction bias, gpt-oss)."
    )
    expert_bias: bool = spec_field(default=False, description="Each expert's projections carry biases (gpt-oss).")
    expert_gated: bool = spec_field(
        default=True,
        description="Routed and shared experts are gated (gate, up, down); false: up and down only (Nemotron-H's "
        "relu2 experts).",
    )
    moe_latent_size: Optional[Width] = spec_field(
        default=None,
        description="Latent MoE (Nemotron 3): fc1_latent_proj [d -> l] before the routed experts and "
        "fc2_latent_proj [l -> d] after them, the experts working at width l; null: at d.",
    )
    router_scales: bool = spec_field(
        default=False,
        description="The router also stores a scale [d] and a per_expert_scale [E] (Gemma 4's Gemma4TextRouter).",
    )
    extra_norms: Annotated[int, Bounds(ge=0, le=4, strict=True)] = spec_field(
        default=0,
        description="RMSNorms [d] the MoE block adds to each of its layers (Gemma 4: three, around the experts "
        "and the dense MLP beside them).",
    )
    first_k_dense_replace: LayerIndex = spec_field(default=0, description="The first k layers are dense.")
    decoder_sparse_step: Layers = spec_field(default=1, description="Every n-th layer is MoE (Qwen-MoE).")
    mlp_only_layers: Annotated[tuple[LayerIndex, ...], Bounds(max_length=MAX_LAYERS)] = spec_field(
        default=(), description="Dense layer indices."
    )

    def _check(self) -> None:
        if self.num_experts_per_tok > self.num_experts:
            raise ValueError(
                f"num_experts_per_tok (k = {self.num_experts_per_tok}) cannot exceed "
                f"num_experts (E = {self.num_experts})"
            )


@spec
class LinearAttention(Spec):
    """Gated DeltaNet linear attention (Qwen3-Next): a fixed-size recurrent state instead of a
    KV cache. State per sequence per layer: n_v * d_k * d_v elements (seed 003 §05), plus a
    causal-conv state of conv_dim * (kernel - 1) elements."""

    kind: Literal["gated_deltanet"] = "gated_deltanet"
    linear_num_key_heads: Heads = spec_field(description="n_k, key (and query) heads.")
    linear_num_value_heads: Heads = spec_field(description="n_v, value heads.")
    linear_key_head_dim: Width = spec_field(description="d_k per head.")
    linear_value_head_dim: Width = spec_field(description="d_v per head.")
    linear_conv_kernel_dim: Small = spec_field(description="Causal depthwise conv width.")

    @property
    def conv_dim(self) -> int:
        """Channels of the causal conv1d over q, k and v: 2 n_k d_k + n_v d_v."""
        return 2 * self.linear_num_key_heads * self.linear_key_head_dim + (
            self.linear_num_value_heads * self.linear_value_head_dim
        )

    @property
    def conv_kernel(self) -> int:
        """Taps of the causal conv1d."""
        return self.linear_conv_kernel_dim

    @property
    def state_heads(self) -> int:
        """Heads of the recurrent state (split over TP): n_v."""
        return self.linear_num_value_heads

    @property
    def recurrent_state(self) -> int:
        """Recurrent state elements per sequence per layer: n_v x d_k x d_v."""
        return self.linear_num_value_heads * self.linear_key_head_dim * self.linear_value_head_dim


@spec
class KimiDeltaAttention(Spec):
    """Kimi Delta Attention (Kimi Linear; the model repository's modeling_kimi.py
    KimiDeltaAttention, transformers models/kimi_linear/modeling_kimi_linear.py
    KimiLinearDeltaAttention): a gated delta rule with a per-channel decay. With H heads of width K
    (keys and values alike): q_proj, k_proj, v_proj [d -> H K], a causal depthwise conv of
    ``conv_kernel`` taps on each of q, k and v, the decay gate f_a_proj [d -> K] / f_b_proj
    [K -> H K] with dt_bias [H K] and A_log [H], b_proj [d -> H] (the rate beta), the output gate
    g_a_proj [d -> K] / g_b_proj [K -> H K], a gated RMSNorm o_norm [K] and o_proj [H K -> d]. No
    KV cache: a recurrent state of H x K x K elements per sequence per layer and a conv state of
    3 H K x (conv_kernel - 1)."""

    kind: Literal["kda"] = "kda"
    num_heads: Heads = spec_field(description="H, KDA heads (linear_attn_config.num_heads).")
    head_dim: Width = spec_field(description="K, key and value width per head (linear_attn_config.head_dim).")
    conv_kernel: Small = spec_field(description="Taps of the q/k/v short convolutions (short_conv_kernel_size).")

    @property
    def width(self) -> int:
        """H K, the width of q, k and v."""
        return self.num_heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the three short convolutions: 3 H K."""
        return 3 * self.width

    @property
    def state_heads(self) -> int:
        """Heads of the recurrent state (split over TP): H."""
        return self.num_heads

    @property
    def recurrent_state(self) -> int:
        """Recurrent state elements per sequence per layer: H x K x K."""
        return self.num_heads * self.head_dim * self.head_dim


#: The linear-attention mixer of the linear_attention layers, told apart by ``kind``.
LinearMixer = Union[LinearAttention, KimiDeltaAttention]


@spec
class Mamba2(Spec):
    """Mamba-2 mixer (transformers models/nemotron_h/modeling_nemotron_h.py NemotronHMamba2Mixer,
    models/granitemoehybrid/modeling_granitemoehybrid.py GraniteMoeHybridMambaLayer).

    With H heads of width P (inner width I = H P), G groups and state size N: in_proj
    [d, 2I + 2GN + H] (z, x, B, C, dt), a depthwise conv1d over x, B, C (conv_dim = I + 2GN,
    kernel k, optional bias), dt_bias, A_log and D (H each), a gated RMSNorm over I and out_proj
    [I, d]. No KV cache: a recurrent state of H x P x N elements per sequence per layer and a
    conv state of conv_dim x (k - 1)."""

    kind: Literal["mamba2"] = "mamba2"
    num_heads: Heads = spec_field(description="H, SSM heads.")
    head_dim: Width = spec_field(description="P, elements per head.")
    state_size: Width = spec_field(description="N, SSM state per head element.")
    n_groups: Heads = spec_field(default=1, description="G, groups sharing B and C.")
    conv_kernel: Small = spec_field(default=4, description="k, causal depthwise conv width.")
    conv_bias: bool = spec_field(default=True, description="The conv1d has a bias.")
    proj_bias: bool = spec_field(default=False, description="in_proj and out_proj have biases.")

    def _check(self) -> None:
        if self.num_heads % self.n_groups:
            raise ValueError(f"num_heads ({self.num_heads}) must be a multiple of n_groups ({self.n_groups})")

    @property
    def inner(self) -> int:
        """I = H x P."""
        return self.num_heads * self.head_dim

    @property
    def conv_dim(self) -> int:
        """Channels of the conv1d: I + 2 G N."""
        return self.inner + 2 * self.n_groups * self.state_size


#: The ``rope_type`` values of transformers' RoPE initialisers (``ROPE_INIT_FUNCTIONS``), its older
#: name ``su`` of longrope, ``mrope`` (Qwen2-VL's sections, default frequencies), and ``proportional``
#: (Gemma 4's full-attention layers, transformers modeling_rope_utils.py: partial rotation over
#: global_head_dim; no weights).
ROPE_TYPES = ("default", "linear", "dynamic", "yarn", "longrope", "llama3", "su", "mrope", "proportional")


@spec
class ShortConv(Spec):
    """LFM2's gated short convolution (transformers models/lfm2/modeling_lfm2.py Lfm2ShortConv):
    in_proj [d -> 3d] gives the gates B and C and the value x; B x goes through a depthwise causal
    conv1d of ``conv_kernel`` taps over the last tokens, C multiplies its output, out_proj [d -> d].
    No KV cache and no recurrent state: a conv state of d x (conv_kernel - 1) elements per sequence
    per layer (vLLM's ShortConv cache)."""

    kind: Literal["short_conv"] = "short_conv"
    conv_kernel: Small = spec_field(description="Taps of the depthwise conv (config.json conv_L_cache).")
    conv_bias: bool = spec_field(default=False, description="in_proj, conv and out_proj carry biases.")


@spec
class RopeScaling(Spec):
    """RoPE scaling as in config.json ``rope_scaling`` (llama3, yarn, linear, dynamic, mrope).
    Checked as transformers' ``rope_config_validation`` checks it, refusing where it only warns:
    a known ``rope_type``; a ``factor`` of at least 1 (a scaling stretches positions); llama3's
    ``low_freq_factor`` below its ``high_freq_factor``; YaRN's ``beta_fast`` above ``beta_slow``."""

    rope_type: Text = spec_field(description="llama3, yarn, linear, dynamic, longrope, mrope, default.")
    factor: Optional[PositiveFloat] = None
    original_max_position_embeddings: Optional[Positions] = None
    low_freq_factor: Optional[PositiveFloat] = None
    high_freq_factor: Optional[PositiveFloat] = None
    beta_fast: Optional[PositiveFloat] = None
    beta_slow: Optional[PositiveFloat] = None
    mscale: Optional[Scale] = None
    mscale_all_dim: Optional[Scale] = None
    mrope_section: Optional[Annotated[tuple[Width, ...], Bounds(max_length=64)]] = None

    def _check(self) -> None:
        if self.rope_type not in ROPE_TYPES:
            raise ValueError(f"rope_scaling.rope_type {self.rope_type[:40]!r} is not one of {', '.join(ROPE_TYPES)}")
        if self.factor is not None and self.factor < 1 and self.rope_type in ("linear", "dynamic", "yarn", "llama3"):
            raise ValueError(f"rope_scaling.factor {self.factor:g} is below 1; a {self.rope_type} scaling stretches")
        low, high = self.low_freq_factor, self.high_freq_factor
        # equal factors are what Llama 4 (1, 1) and Kimi K2 (beta 1, 1) publish; transformers accepts them
        if self.rope_type == "llama3" and low is not None and high is not None and low > high:
            raise ValueError(f"rope_scaling.low_freq_factor ({low:g}) must be at most high_freq_factor ({high:g})")
        fast, slow = self.beta_fast, self.beta_slow
        if self.rope_type == "yarn" and fast is not None and slow is not None and fast < slow:
            raise ValueError(f"rope_scaling.beta_fast ({fast:g}) must be at least beta_slow ({slow:g})")


@spec
class MTP(Spec):
    """DeepSeek-V3 multi-token-prediction modules (seed 003 §07): per module two RMSNorms
    (d each), a projection eh_proj [2d, d], one decoder block and a head norm (d); the
    embedding and LM head are shared with the main model (the checkpoint stores copies)."""

    num_nextn_predict_layers: Small = spec_field(description="D, the number of MTP modules.")
    checkpoint_stores_shared: bool = spec_field(
        default=True, description="The checkpoint stores its own copy of the embedding and LM head."
    )
    blocks: Annotated[int, Bounds(ge=1, le=2, strict=True)] = spec_field(
        default=1,
        description="Blocks in each module: 1 (a decoder layer), or 2 for Nemotron-H's *E module (an attention "
        "block then a MoE block, each with its own norms).",
    )
    block_layer_type: Literal["full_attention", "sliding_attention"] = spec_field(
        default="full_attention",
        description="The attention of each module's decoder block: full, or sliding (MiMo-V2-Flash's MTP "
        "layers use the sliding layers' K/V heads and sinks).",
    )
    block_mlp: Optional[Literal["dense", "moe"]] = spec_field(
        default=None,
        description="The feed-forward of each module's block: dense or moe; default moe when the model has "
        "experts (DeepSeek-V3), else dense. MiMo-V2-Flash's MTP layers are dense.",
    )


#: A format weights are stored in (llm_cost.core.types.WeightFormat).
WeightFormatName = Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "fp4", "fp8_block", "mxfp4", "nvfp4"]
#: A tensor group whose matmuls a quantization_config can leave unquantized.
KeptGroup = Literal[
    "attention", "indexer", "linear_attention", "mamba", "mlp", "routed_experts", "shared_experts", "mtp", "vision"
]


@spec
class Quantization(Spec):
    """Weight formats that differ by tensor group, as a checkpoint's ``quantization_config`` says
    (read by :mod:`llm_cost.specs.hf.quantization`): the matmul weights in ``weights_format``, except
    the groups in ``kept``, which stay in ``kept_dtype`` with every embedding, LM head, router, norm,
    bias and other vector."""

    method: Text = spec_field(description="quant_method of the quantization_config (fp8, mxfp4, modelopt, ...).")
    weights_format: WeightFormatName = spec_field(description="Format of the quantized matmul weights.")
    kept: Annotated[tuple[KeptGroup, ...], Bounds(max_length=16)] = spec_field(
        default=(), description="Matmul groups left unquantized (modules_to_not_convert, ignore, exclude_modules)."
    )
    kept_dtype: Dtype = spec_field(default="bf16", description="Dtype of the tensors not quantized.")
    group_size: Optional[Annotated[int, Bounds(ge=-1, le=2**20)]] = spec_field(
        default=None,
        description=(
            "int4/int8 weight-only checkpoints (AWQ, GPTQ): input rows per quantization group, -1 for one "
            "group over every input row; each group stores an FP16 scale and a zero point at the weight's bits."
        ),
    )

    def _check(self) -> None:
        if self.group_size == 0:
            raise ValueError("group_size must be -1 (one group per output channel) or at least 1")


@spec
class Qwen2Vision(Spec):
    """Qwen2-VL vision tower: a ViT over 14x14 (x2 frames) patches, then a 2x2 patch merger
    into the language model's width (seed 003 §09)."""

    title = "Qwen2-VL"  # the tower's name in messages (a class attribute, not a field: no annotation)
    kind: Literal["qwen2_vl"] = "qwen2_vl"
    depth: Layers = spec_field(description="Transformer blocks.")
    embed_dim: Width = spec_field(description="d_vit, block width.")
    num_heads: Heads = spec_field(description="Attention heads.")
    mlp_ratio: Small = spec_field(description="MLP width = mlp_ratio * embed_dim.")
    in_chans: Small = spec_field(default=3, description="Input channels.")
    patch_size: Small = spec_field(description="Spatial patch edge in pixels.")
    spatial_merge_size: Small = spec_field(description="Patches merged per side into one token.")
    temporal_patch_size: Small = spec_field(description="Frames per patch.")
    hidden_act: Text = spec_field(default="quick_gelu", description="Activation name.")
    out_hidden_size: Width = spec_field(description="Output width (the decoder's hidden_size).")

    def _check(self) -> None:
        if self.embed_dim % self.num_heads:
            raise ValueError(f"embed_dim ({self.embed_dim}) must be a multiple of num_heads ({self.num_heads})")


def _check_tower(hidden_size: int, heads: int, image_size: int, patch_size: int) -> None:
    """ValueError unless a ViT's heads divide its width and its patches tile its square input."""
    if hidden_size % heads:
        raise ValueError(f"hidden_size ({hidden_size}) must be a multiple of num_attention_heads ({heads})")
    if image_size % patch_size:
        raise ValueError(f"image_size ({image_size}) must be a multiple of patch_size ({patch_size})")


@spec
class SiglipVision(Spec):
    """SigLIP vision tower and the Gemma 3 multimodal projector (transformers
    models/siglip/modeling_siglip.py SiglipVisionModel, models/gemma3/modeling_gemma3.py
    Gemma3MultiModalProjector).

    Tower: Conv2d patch embedding [e, C, p, p] with bias, a learned position table
    [(image_size / p)^2, e], ``num_hidden_layers`` blocks (LayerNorm, q/k/v/o with biases, LayerNorm,
    fc1/fc2 with biases) and a post-LayerNorm. Projector: an RMSNorm over e and a bias-free
    [e, d_text] matrix; the 4x4 average pool has no weights."""

    title = "SigLIP (Gemma 3)"  # the tower's name in messages (a class attribute, not a field: no annotation)
    kind: Literal["siglip_gemma3"] = "siglip_gemma3"
    hidden_size: Width = spec_field(description="e, tower width.")
    intermediate_size: Width = spec_field(description="Tower MLP width.")
    num_hidden_layers: Layers = spec_field(description="Tower blocks.")
    num_attention_heads: Heads = spec_field(description="Tower attention heads.")
    image_size: Positions = spec_field(description="Square input edge in pixels.")
    patch_size: Small = spec_field(description="Patch edge in pixels.")
    num_channels: Small = spec_field(default=3, description="Input channels.")
    mm_tokens_per_image: Positions = spec_field(default=256, description="Soft tokens per image after pooling.")

    def _check(self) -> None:
        _check_tower(self.hidden_size, self.num_attention_heads, self.image_size, self.patch_size)


@spec
class Llama4Vision(Spec):
    """Llama 4 vision encoder, pixel-shuffle adapter and projector (transformers
    models/llama4/modeling_llama4.py Llama4VisionModel, Llama4MultiModalProjector).

    Patch embedding: an unfold + Linear [e, C p^2] without bias; class embedding [e]; learned
    positions [(image_size / p)^2 + 1, e]; LayerNorms before and after the encoder; blocks of
    LayerNorm, q/k/v/o with biases, LayerNorm, fc1/fc2 with biases. Adapter: fc1
    [projector_input_dim, intermediate_size] and fc2 [projector_output_dim, projector_output_dim]
    without biases; projector linear_1 [d_text, vision_output_dim] (bias only if
    ``multi_modal_projector_bias``)."""

    title = "Llama 4"  # the tower's name in messages (a class attribute, not a field: no annotation)
    kind: Literal["llama4"] = "llama4"
    hidden_size: Width
    intermediate_size: Width
    num_hidden_layers: Layers
    num_attention_heads: Heads
    image_size: Positions
    patch_size: Small
    num_channels: Small = 3
    projector_input_dim: Width
    projector_output_dim: Width
    vision_output_dim: Width
    multi_modal_projector_bias: bool = False

    def _check(self) -> None:
        _check_tower(self.hidden_size, self.num_attention_heads, self.image_size, self.patch_size)


@spec
class Qwen25Vision(Spec):
    """Qwen2.5-VL vision tower (transformers models/qwen2_5_vl/modeling_qwen2_5_vl.py,
    Qwen2_5_VisionTransformerPretrainedModel): Conv3d patch embedding without bias, ``depth`` blocks
    of RMSNorm, fused qkv with bias, proj with bias, RMSNorm and a gated MLP (gate/up/down with
    biases, ``intermediate_size``), then the merger: RMSNorm and MLP [4e -> 4e -> out_hidden_size]
    with biases. Window attention (``window_size``, ``fullatt_block_indexes``) adds no weights."""

    title = "Qwen2.5-VL"  # the tower's name in messages (a class attribute, not a field: no annotation)
    kind: Literal["qwen2_5_vl"] = "qwen2_5_vl"
    depth: Layers
    hidden_size: Width
    intermediate_size: Width
    num_heads: Heads
    in_channels: Small = 3
    patch_size: Small
    spatial_merge_size: Small
    temporal_patch_size: Small
    out_hidden_size: Width


@spec
class Qwen3Vision(Spec):
    """Qwen3-VL vision tower (transformers models/qwen3_vl/modeling_qwen3_vl.py,
    Qwen3VLVisionModel): Conv3d patch embedding with bias, a learned position table
    [num_position_embeddings, e], ``depth`` blocks of LayerNorm, fused qkv with bias, proj with bias,
    LayerNorm and an MLP linear_fc1/linear_fc2 with biases; the merger (LayerNorm over e, then
    [4e -> 4e -> out_hidden_size] with biases) and one DeepStack merger per
    ``deepstack_visual_indexes`` entry (LayerNorm over 4e, same MLP)."""

    title = "Qwen3-VL"  # the tower's name in messages (a class attribute, not a field: no annotation)
    kind: Literal["qwen3_vl"] = "qwen3_vl"
    depth: Layers
    hidden_size: Width
    intermediate_size: Width
    num_heads: Heads
    in_channels: Small = 3
    patch_size: Small
    spatial_merge_size: Small
    temporal_patch_size: Small
    out_hidden_size: Width
    num_position_embeddings: Positions
    deepstack_mergers: SmallCount = 0


@spec
class PixtralVision(Spec):
    """Pixtral vision encoder and the Mistral 3 projector (transformers models/pixtral/modeling_pixtral.py
    PixtralVisionModel, models/mistral3/modeling_mistral3.py Mistral3MultiModalProjector).

    Encoder: patch_conv [e, C, p, p] without bias, ln_pre RMSNorm, blocks of attention_norm, q/k/v/o
    without biases, ffn_norm and a gated feed_forward (gate/up/down, no biases); 2-D RoPE has no
    weights. Projector: RMSNorm over e, patch_merger merging_layer [e m^2 -> e] without bias, then
    linear_1 [e -> d] and linear_2 [d -> d] (biases if ``multimodal_projector_bias``)."""

    title = "Pixtral"  # the tower's name in messages (a class attribute, not a field: no annotation)
    kind: Literal["pixtral"] = "pixtral"
    hidden_size: Width
    intermediate_size: Width
    num_hidden_layers: Layers
    num_attention_heads: Heads
    head_dim: Width
    patch_size: Small
    num_channels: Small = 3
    spatial_merge_size: Small = 2
    multimodal_projector_bias: bool = False


@spec
class MoonVitVision(Spec):
    """Kimi-K2.5's MoonViT encoder and patch-merger projector (transformers
    models/kimi_k25/modeling_kimi_k25.py, Kimi_K25VisionModel and Kimi_K25MultimodalProjection).

    Encoder: a Conv2d patch embedding [e, C, p, p] with bias, a learned position grid
    [h, w, e] (resampled per image; the temporal sinusoid is a buffer), blocks of LayerNorm (with
    bias), q/k/v (one fused wqkv in the checkpoint) and o with biases, LayerNorm, an MLP fc0/fc1
    with biases; a final LayerNorm. Projector: LayerNorm over e, then [e m^2 -> e m^2] and
    [e m^2 -> d] with biases, m^2 = the merge kernel's patches."""

    title = "MoonViT (Kimi-K2.5)"  # the tower's name in messages (a class attribute, not a field: no annotation)
    kind: Literal["moonvit"] = "moonvit"
    hidden_size: Width
    intermediate_size: Width
    num_hidden_layers: Layers
    num_attention_heads: Heads
    patch_size: Small
    pos_emb_height: Positions
    pos_emb_width: Positions
    merge_patches: Small = spec_field(default=4, description="Patches merged into one token (2 x 2).")
    num_channels: Small = 3


@spec
class Glm4vVision(Spec):
    """The GLM-4V vision tower of GLM-4.5V (transformers models/glm4v/modeling_glm4v.py
    Glm4vVisionModel, which models/glm4v_moe/modeling_glm4v_moe.py reuses).

    A learned position embedding [(image / patch)^2, e]; a Conv3d patch embedding
    [e, C, T, p, p] with bias; blocks of two RMSNorms, a fused qkv [3e, e] (bias with
    ``attention_bias``), proj [e, e] without bias and a gated MLP of width ``out_hidden_size``
    without biases; post_conv_layernorm and post_layernorm (RMSNorm); a Conv2d downsample
    [o, e, m, m] with bias; the merger: proj [o, o], a LayerNorm, and a gated MLP of
    ``intermediate_size`` (gate/up/down, no biases)."""

    title = "GLM-4V"  # the tower's name in messages (a class attribute, not a field: no annotation)
    kind: Literal["glm4v"] = "glm4v"
    depth: Layers
    hidden_size: Width
    out_hidden_size: Width
    intermediate_size: Width
    num_heads: Heads
    image_size: Positions
    patch_size: Small
    temporal_patch_size: Small
    spatial_merge_size: Small
    in_channels: Small = 3
    attention_bias: bool = False


@spec
class Gemma4Vision(Spec):
    """The Gemma 4 vision encoder and its embedder into the decoder (transformers
    models/gemma4/modeling_gemma4.py Gemma4VisionModel, Gemma4MultimodalEmbedder).

    Patch embedder: input_proj [e, 3 p^2] without bias and a position_embedding_table
    [2, position_embedding_size, e] (one row per x and per y coordinate). Blocks: four RMSNorms
    (input, post-attention, pre- and post-feed-forward), q/k/v/o without biases (n_kv K/V heads of
    head_dim), q_norm and k_norm of head_dim (v_norm has no weights), a gated MLP (gate/up/down, no
    biases). With ``use_clipped_linears`` every linear of the tower (Gemma4ClippableLinear) stores four
    scalar bounds (input_min/max, output_min/max); with ``standardize`` the tower stores std_bias and
    std_scale [e]: persistent buffers, so checkpoint elements. 2-D RoPE and the pooler have no weights.
    Embedder: embedding_projection [d_text, e] without bias; its pre-projection RMSNorm has no scale."""

    title = "Gemma 4"  # the tower's name in messages (a class attribute, not a field: no annotation)
    kind: Literal["gemma4_vision"] = "gemma4_vision"
    hidden_size: Width = spec_field(description="e, tower width.")
    intermediate_size: Width = spec_field(description="Tower MLP width.")
    num_hidden_layers: Layers = spec_field(description="Tower blocks.")
    num_attention_heads: Heads = spec_field(description="Tower attention heads.")
    num_key_value_heads: Heads = spec_field(description="Tower K/V heads.")
    head_dim: Width = spec_field(description="Tower head width.")
    patch_size: Small = spec_field(description="Patch edge in pixels.")
    position_embedding_size: Positions = spec_field(description="Rows of each coordinate's position table.")
    use_clipped_linears: bool = spec_field(default=False, description="Each linear stores four clipping bounds.")
    standardize: bool = spec_field(default=False, description="The tower stores std_bias and std_scale [e].")
    pooling_kernel_size: Small = spec_field(default=3, description="Patches pooled per side into one soft token.")


@spec
class MiniMaxM3Vision(Spec):
    """The MiniMax-M3 vision tower and its two projectors (transformers
    models/minimax_m3_vl/modeling_minimax_m3_vl.py MiniMaxM3VLVisionModel, MiniMaxM3VLMultiModalProjector,
    MiniMaxM3VLPatchMerger).

    Tower (CLIP-style, 3-D RoPE: no position table): patch_embedding, a Conv3d [e, C, T, p, p] without
    bias; pre_layrnorm (a LayerNorm: weight and bias of e); per block layer_norm1 / layer_norm2
    (LayerNorms), q/k/v/out_proj [e, e] with biases, mlp.fc1 [f, e] and fc2 [e, f] with biases; no
    post-encoder norm. multi_modal_projector: linear_1 [P, e] and linear_2 [d, P], with biases (P =
    projector_hidden_size). patch_merge: linear_1 [P, d m^2] over m x m merged patches and linear_2
    [d, P], with biases."""

    title = "MiniMax-M3"  # the tower's name in messages (a class attribute, not a field)
    kind: Literal["minimax_m3_vl"] = "minimax_m3_vl"
    hidden_size: Width = spec_field(description="e, tower width.")
    intermediate_size: Width = spec_field(description="f, tower MLP width.")
    num_hidden_layers: Layers = spec_field(description="Tower blocks.")
    num_attention_heads: Heads = spec_field(description="Tower attention heads.")
    num_channels: Small = spec_field(default=3, description="Input channels.")
    patch_size: Small = spec_field(description="Patch edge in pixels.")
    temporal_patch_size: Small = spec_field(default=2, description="Frames per patch.")
    spatial_merge_size: Small = spec_field(default=2, description="m: patches merged per side by patch_merge.")
    projector_hidden_size: Width = spec_field(description="P, hidden width of both projectors.")

    def _check(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be a multiple of num_attention_heads ({self.num_attention_heads})"
            )


@spec
class Gemma4Audio(Spec):
    """The Gemma 4 audio encoder and its embedder into the decoder (transformers
    models/gemma4/modeling_gemma4.py Gemma4AudioModel, Gemma4MultimodalEmbedder): a USM-style
    Conformer over log-mel frames.

    Sub-sampling (Gemma4AudioSubSampleConvProjection): two Conv2d of kernel 3 x 3, stride 2, no bias
    ([c0, 1, 3, 3] and [c1, c0, 3, 3]), each followed by a LayerNorm with a weight and no bias, then
    input_proj_linear [e, (c0 // 4) c1] without bias (its input width as the modeling file computes
    it). Each of the L Conformer blocks (Gemma4AudioLayer): two half-step feed-forwards
    (ffw_layer_1 [4e, e], ffw_layer_2 [e, 4e], pre/post RMSNorms), chunked local self-attention
    (q/k/v [e, e], post [e, e], relative_k_proj [e, e] without biases, per_dim_scale [e / heads]), a
    light convolution (linear_start [2e, e], a depthwise causal Conv1d [e, 1, kernel] without bias,
    linear_end [e, e], pre_layer_norm and conv_norm) and three RMSNorms (norm_pre_attn,
    norm_post_attn, norm_out). With ``use_clipped_linears`` every Gemma4ClippableLinear (ten per
    block: the feed-forwards' four, q/k/v/post, linear_start and linear_end; not relative_k_proj)
    stores four scalar bounds: persistent buffers, so checkpoint elements. output_proj [o, e] with a
    bias (nn.Linear(..., bias=True)). Embedder: embed_audio.embedding_projection [d_text, o] without
    bias; its pre-projection RMSNorm has no scale. The sinusoidal relative positions have no weights."""

    title = "Gemma 4 audio"  # the tower's name in messages (a class attribute, not a field)
    kind: Literal["gemma4_audio"] = "gemma4_audio"
    hidden_size: Width = spec_field(description="e, encoder width.")
    num_hidden_layers: Layers = spec_field(description="Conformer blocks.")
    num_attention_heads: Heads = spec_field(description="Attention heads (head width e / heads).")
    subsampling_conv_channels: Annotated[tuple[Width, Width], Bounds(min_length=2, max_length=2)] = spec_field(
        description="Output channels (c0, c1) of the two sub-sampling convolutions."
    )
    conv_kernel_size: Small = spec_field(default=5, description="Kernel of the depthwise causal convolution.")
    output_proj_dims: Width = spec_field(description="o, width of output_proj (the embedder's input).")
    use_clipped_linears: bool = spec_field(default=True, description="Each clippable linear stores four bounds.")

    def _check(self) -> None:
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size ({self.hidden_size}) must be a multiple of num_attention_heads "
                f"({self.num_attention_heads}): Gemma4AudioAttention's head width is their quotient"
            )
        if self.subsampling_conv_channels[0] < 4:
            raise ValueError(
                f"subsampling_conv_channels[0] ({self.subsampling_conv_channels[0]}) must be at least 4: "
                "input_proj_linear reads (c0 // 4) x c1 features"
            )

    @property
    def head_dim(self) -> int:
        """Width of one attention head (Gemma4AudioAttention: hidden_size // num_attention_heads)."""
        return self.hidden_size // self.num_attention_heads


#: A vision encoder with its projector (``ModelSpec.vision``), told apart by ``kind``.
VisionTower = Union[
    Qwen2Vision,
    Qwen25Vision,
    Qwen3Vision,
    SiglipVision,
    Llama4Vision,
    PixtralVision,
    MoonVitVision,
    Glm4vVision,
    Gemma4Vision,
    MiniMaxM3Vision,
]


@spec
class ModelSpec(Spec):
    """A decoder-only model: every field needed to enumerate its weight tensors exactly."""

    name: Name = spec_field(description="Canonical lower-case name used on the command line.")
    display_name: Text = spec_field(description="Human-readable name.")
    aliases: Names = spec_field(default=(), description="Other accepted names.")
    model_type: Text = spec_field(description="Hugging Face model_type (llama, deepseek_v3, ...).")
    source: Source
    vocab_size: Vocab = spec_field(description="V, vocabulary size.")
    hidden_size: Width = spec_field(description="d, residual width.")
    num_hidden_layers: Layers = spec_field(description="L, decoder blocks.")
    tie_word_embeddings: StrictBool = spec_field(description="LM head shares the embedding matrix.")
    lm_head_bias: StrictBool = spec_field(default=False, description="The LM head has V bias terms (Phi-3.5-MoE).")
    attention: Annotated[Union[GQAAttention, MLAAttention], DISCRIMINATED]
    mlp: Optional[MLP] = spec_field(default=None, description="Dense MLP; required unless every layer is MoE.")
    moe: Optional[MoE] = None
    linear_attention: Optional[Annotated[LinearMixer, DISCRIMINATED]] = spec_field(
        default=None,
        description="The mixer of the linear_attention layers, told apart by kind: gated_deltanet (Qwen3-Next), "
        "kda (Kimi Linear).",
    )
    mamba: Optional[Mamba2] = spec_field(default=None, description="The Mamba-2 mixer of the mamba2 layers.")
    short_conv: Optional[ShortConv] = spec_field(
        default=None, description="The gated short convolution of the short_conv layers (LFM2)."
    )
    mlp_layer_types: Optional[Annotated[tuple[MlpTypeName, ...], Bounds(max_length=MAX_LAYERS)]] = spec_field(
        default=None,
        description="Feed-forward kind per layer (overrides the MoE layer rule); none for mixer-only blocks.",
    )
    layer_types: Optional[Annotated[tuple[LayerTypeName, ...], Bounds(max_length=MAX_LAYERS)]] = spec_field(
        default=None,
        description="Attention kind per layer; default: all sliding_attention if "
        "attention.sliding_window is set, else all full_attention.",
    )
    norm_type: Literal["rmsnorm", "layernorm"] = spec_field(
        default="rmsnorm", description="RMSNorm has d weights; LayerNorm d weights and d biases."
    )
    norms_per_layer: Annotated[int, Bounds(ge=1, le=4, strict=True)] = spec_field(
        default=2, description="Norms in each block: 1 (parallel attention), 2 (pre-norm), 4 (Gemma 2/3)."
    )
    layer_scalar: StrictBool = spec_field(
        default=False,
        description="Each block stores a one-element layer_scalar (Gemma 4: a persistent buffer, in the checkpoint).",
    )
    num_kv_shared_layers: LayerIndex = spec_field(
        default=0,
        description="The last n softmax layers reuse the K/V of the last earlier layer of their type: no k_proj, "
        "v_proj or k_norm, nothing cached (Gemma 4 E2B/E4B's num_kv_shared_layers).",
    )
    double_wide_shared_mlp: StrictBool = spec_field(
        default=False,
        description="The KV-shared layers' dense MLP is 2 x intermediate_size wide (Gemma 4's use_double_wide_mlp).",
    )
    per_layer_input_size: Optional[Width] = spec_field(
        default=None,
        description="p of Gemma 4's per-layer embeddings: a [per_layer_vocab_size, L p] table, a [d -> L p] "
        "projection and its norm [p], and in each block a gate [d -> p], a projection [p -> d] and a norm [d].",
    )
    per_layer_vocab_size: Optional[Vocab] = spec_field(
        default=None, description="Rows of the per-layer embedding table (vocab_size_per_layer_input)."
    )
    position_embedding: Literal["rope", "learned", "none"] = spec_field(
        default="rope",
        description="learned adds a [max_position_embeddings, d] table (GPT-2); none: no positions "
        "(NoPE, Nemotron-H and Granite 4.0-H attention).",
    )
    max_position_embeddings: Positions = spec_field(description="Longest position the config allows.")
    rope_theta: Optional[Annotated[float, Bounds(gt=1, le=1e15)]] = spec_field(
        default=None, description="RoPE base (above 1: each pair turns more slowly than the one before)."
    )
    partial_rotary_factor: Annotated[float, Bounds(gt=0, le=1)] = spec_field(
        default=1.0, description="Share of head_dim that is rotated."
    )
    rope_scaling: Optional[RopeScaling] = None
    mtp: Optional[MTP] = None
    vision: Optional[Annotated[VisionTower, DISCRIMINATED]] = spec_field(
        default=None,
        description="The vision encoder and its projector into the decoder, told apart by kind: qwen2_vl, "
        "qwen2_5_vl, qwen3_vl, siglip_gemma3 (Gemma 3), llama4, pixtral (Mistral 3), gemma4_vision (Gemma 4), "
        "minimax_m3_vl (MiniMax-M3).",
    )
    audio: Optional[Gemma4Audio] = spec_field(
        default=None, description="The audio encoder and its embedder into the decoder (Gemma 4 E2B / E4B)."
    )
    torch_dtype: Dtype = spec_field(default="bf16", description="The checkpoint's weight dtype.")
    quantization: Optional[Quantization] = spec_field(
        default=None, description="Formats by tensor group when the checkpoint quantizes some (quantization_config)."
    )

    def _check(self) -> None:
        att = self.attention
        L = self.num_hidden_layers
        if isinstance(att, GQAAttention) and att.head_dim is None and self.hidden_size % att.num_attention_heads:
            raise ValueError(
                f"attention.head_dim is required: hidden_size ({self.hidden_size}) is not a multiple of "
                f"num_attention_heads ({att.num_attention_heads})"
            )
        if self.layer_types is not None and len(self.layer_types) != L:
            raise ValueError(f"layer_types has {len(self.layer_types)} entries but num_hidden_layers is {L}")
        kinds = self._check_layer_kinds()
        if self.mlp_layer_types is not None:
            if len(self.mlp_layer_types) != L:
                raise ValueError(
                    f"mlp_layer_types has {len(self.mlp_layer_types)} entries but num_hidden_layers is {L}"
                )
            if MlpType.MOE in self.mlp_layer_types and self.moe is None:
                raise ValueError("mlp_layer_types names moe layers but moe is not set")
            if MlpType.DENSE in self.mlp_layer_types and self.mlp is None:
                raise ValueError("mlp_layer_types names dense layers but mlp is not set")
        if kinds & {LayerType.SLIDING_ATTENTION, LayerType.CHUNKED_ATTENTION} and isinstance(att, MLAAttention):
            raise ValueError("MLA attention has no sliding or chunked layers (its softmax layers are full_attention)")
        if self.moe is None and self.mlp is None:
            raise ValueError("a model needs mlp, moe, or both")
        self._check_moe_layers()
        if self.position_embedding == "rope" and self.rope_theta is None:
            raise ValueError("rope_theta is required when position_embedding is rope")
        indexer = getattr(att, "indexer", None)
        if indexer is not None and indexer.shared_layers:
            shared = indexer.shared_layers
            if min(shared) == 0 or max(shared) >= L or len(set(shared)) != len(shared):
                raise ValueError(
                    f"attention.indexer.shared_layers must name distinct layers 1..{L - 1} (a shared layer reuses an "
                    "earlier layer's selection)"
                )
        self._check_kv_sharing()
        self._check_rotary_width()

    def _check_layer_kinds(self) -> set[str]:
        """Each layer kind of ``layer_types`` has its block (linear attention, a sliding window, a
        chunk, Mamba-2, short convolution) and each block set has its layers; the kinds returned."""
        att = self.attention
        kinds = set(self.layer_types or [])
        if LayerType.LINEAR_ATTENTION in kinds and self.linear_attention is None:
            raise ValueError("layer_types names linear_attention layers but linear_attention is not set")
        if self.linear_attention is not None and LayerType.LINEAR_ATTENTION not in kinds:
            raise ValueError("linear_attention is set but no layer in layer_types is linear_attention")
        sliding = isinstance(att, GQAAttention) and att.sliding_window is not None
        if LayerType.SLIDING_ATTENTION in kinds and not sliding:
            raise ValueError("layer_types names sliding_attention layers but attention.sliding_window is not set")
        chunked = isinstance(att, GQAAttention) and att.attention_chunk_size is not None
        if LayerType.CHUNKED_ATTENTION in kinds and not chunked:
            raise ValueError("layer_types names chunked_attention layers but attention.attention_chunk_size is not set")
        if LayerType.MAMBA2 in kinds and self.mamba is None:
            raise ValueError("layer_types names mamba2 layers but mamba is not set")
        if self.mamba is not None and LayerType.MAMBA2 not in kinds:
            raise ValueError("mamba is set but no layer in layer_types is mamba2")
        if LayerType.SHORT_CONV in kinds and self.short_conv is None:
            raise ValueError("layer_types names short_conv layers but short_conv is not set")
        if self.short_conv is not None and LayerType.SHORT_CONV not in kinds:
            raise ValueError("short_conv is set but no layer in layer_types is short_conv")
        return kinds

    def _check_moe_layers(self) -> None:
        """The MoE's dense layers (``mlp_only_layers``, ``first_k_dense_replace``) are within the
        model and have an MLP."""
        L, moe = self.num_hidden_layers, self.moe
        if moe is None:
            return
        bad = [i for i in moe.mlp_only_layers if i >= L]
        if bad:
            raise ValueError(f"moe.mlp_only_layers {bad} are out of range for {L} layers")
        if moe.first_k_dense_replace > L:
            raise ValueError(f"moe.first_k_dense_replace ({moe.first_k_dense_replace}) exceeds {L} layers")
        dense_needed = any(self.mlp_kind(i) == MlpType.DENSE for i in range(L))
        if dense_needed and self.mlp is None:
            raise ValueError("some layers are dense (first_k_dense_replace/mlp_only_layers) but mlp is not set")

    def _check_kv_sharing(self) -> None:
        """KV-shared layers (Gemma4TextAttention): each is a softmax layer with an earlier layer of its
        type that owns K/V (the last such layer before the shared ones); not beside MoE or MLA."""
        n, L = self.num_kv_shared_layers, self.num_hidden_layers
        if self.double_wide_shared_mlp and not n:
            raise ValueError("double_wide_shared_mlp needs num_kv_shared_layers above 0")
        if (self.per_layer_input_size is None) != (self.per_layer_vocab_size is None):
            raise ValueError("per_layer_input_size and per_layer_vocab_size are set together")
        if not n:
            return
        if n >= L:
            raise ValueError(f"num_kv_shared_layers ({n}) must be below num_hidden_layers ({L})")
        if isinstance(self.attention, MLAAttention) or self.moe is not None:
            raise ValueError("num_kv_shared_layers is modelled for dense GQA models only")
        owners = {self.layer_type(i) for i in range(L - n)}
        for i in range(L - n, L):
            t = self.layer_type(i)
            if not t.caches_kv or t not in owners:
                raise ValueError(f"KV-shared layer {i} ({t.value}) has no earlier {t.value} layer to share with")

    def kv_shared(self, i: int) -> bool:
        """True when layer ``i`` reuses an earlier layer's K/V (the last num_kv_shared_layers layers)."""
        return i >= self.num_hidden_layers - self.num_kv_shared_layers and self.num_kv_shared_layers > 0

    def kv_shared_count(self, layer_type: LayerType) -> int:
        """KV-shared layers of ``layer_type`` (they cache nothing)."""
        L, n = self.num_hidden_layers, self.num_kv_shared_layers
        return sum(1 for i in range(L - n, L) if self.layer_type(i) == layer_type) if n else 0

    def _check_rotary_width(self) -> None:
        """RoPE turns pairs of elements: the rotated width of a head (head_dim x
        partial_rotary_factor, as transformers truncates it; MLA's qk_rope_head_dim) is even."""
        if self.position_embedding != "rope":
            return
        att = self.attention
        if isinstance(att, MLAAttention):
            rotated, what = att.qk_rope_head_dim, "attention.qk_rope_head_dim"
        else:
            rotated, what = (
                int(self.head_dim * self.partial_rotary_factor),
                "attention.head_dim x partial_rotary_factor",
            )
        if rotated % 2:
            raise ValueError(f"{what} = {rotated} is odd; RoPE rotates pairs of elements")

    def layer_type(self, i: int) -> LayerType:
        """Attention kind of layer ``i`` (0-based)."""
        if self.layer_types is not None:
            return LayerType(self.layer_types[i])  # a shipped spec, rebuilt without validation, holds the text
        att = self.attention
        if isinstance(att, GQAAttention) and att.sliding_window is not None:
            return LayerType.SLIDING_ATTENTION
        return LayerType.FULL_ATTENTION

    def is_moe_layer(self, i: int) -> bool:
        """True when layer ``i`` (0-based) uses the MoE feed-forward (HF Qwen-MoE / DeepSeek rule)."""
        if self.mlp_layer_types is not None:
            return self.mlp_layer_types[i] == MlpType.MOE
        moe = self.moe
        if moe is None:
            return False
        return (
            i >= moe.first_k_dense_replace and (i + 1) % moe.decoder_sparse_step == 0 and i not in moe.mlp_only_layers
        )

    def mlp_kind(self, i: int) -> MlpType:
        """Feed-forward kind of layer ``i``: dense, moe or none."""
        if self.mlp_layer_types is not None:
            return MlpType(self.mlp_layer_types[i])
        return MlpType.MOE if self.is_moe_layer(i) else MlpType.DENSE

    def context_note(self, contexts: list[int]) -> list[Note]:
        """A warning when any context exceeds ``max_position_embeddings`` (the numbers are then
        hypothetical: the model was not configured for such positions)."""
        over = [c for c in contexts if c > self.max_position_embeddings]
        if not over:
            return []
        return [
            note(
                "warning.context_over_max",
                contexts=over,
                model=self.name,
                max_position_embeddings=self.max_position_embeddings,
            )
        ]

    def with_kv_heads(self, n_kv: int) -> ModelSpec:
        """A copy with ``n_kv`` key/value heads (GQA models only), for MHA/MQA comparisons.

        Raises TypeError for MLA models, ValueError if n_kv does not divide the query heads."""
        att = self.attention
        if not isinstance(att, GQAAttention):
            raise TypeError("with_kv_heads applies to GQA/MHA/MQA attention only")
        if att.num_attention_heads % n_kv:
            raise ValueError(f"{n_kv} KV heads do not divide {att.num_attention_heads} query heads")
        return dataclasses.replace(self, attention=dataclasses.replace(att, num_key_value_heads=n_kv))

    @property
    def head_dim(self) -> int:
        """d_head of a GQA model (explicit or d / n_q); for MLA, qk_nope + qk_rope."""
        att = self.attention
        if isinstance(att, MLAAttention):
            return att.qk_nope_head_dim + att.qk_rope_head_dim
        return att.head_dim or self.hidden_size // att.num_attention_heads

    @property
    def v_head_dim(self) -> int:
        """d_v, elements per value head: GQA's v_head_dim (default head_dim); MLA's v_head_dim."""
        att = self.attention
        if isinstance(att, MLAAttention):
            return att.v_head_dim
        return att.v_head_dim or self.head_dim

    def kv_heads_of(self, layer_type: LayerType) -> int:
        """K/V heads of the softmax layers of ``layer_type``: a sliding layer's
        ``sliding_num_key_value_heads`` when set, a full layer's ``global_num_key_value_heads``
        (Gemma 4) when set, else :attr:`num_key_value_heads`."""
        att = self.attention
        if layer_type == LayerType.FULL_ATTENTION and isinstance(att, GQAAttention) and att.global_num_key_value_heads:
            return att.global_num_key_value_heads
        if (
            layer_type == LayerType.SLIDING_ATTENTION
            and isinstance(att, GQAAttention)
            and att.sliding_num_key_value_heads is not None
        ):
            return att.sliding_num_key_value_heads
        return self.num_key_value_heads

    @property
    def num_key_value_heads(self) -> int:
        """n_kv (MLA: n_h, the heads the up-projected K/V have)."""
        att = self.attention
        if isinstance(att, MLAAttention):
            return att.num_attention_heads
        return att.num_key_value_heads or att.num_attention_heads

    def heads_of(self, layer_type: LayerType) -> tuple[int, int]:
        """(n_kv, d_head) of a softmax layer of ``layer_type``: :meth:`kv_heads_of` and the global
        head width in the full_attention layers of a model with global geometry (Gemma 4), else
        head_dim."""
        att = self.attention
        if isinstance(att, GQAAttention) and layer_type == LayerType.FULL_ATTENTION and att.has_global_geometry:
            return self.kv_heads_of(layer_type), att.global_head_dim or self.head_dim
        return self.kv_heads_of(layer_type), self.head_dim


def link_share(topology: Topology, gpus: int, gpus_per_node: int) -> float:
    """The share of a GPU's node bandwidth a collective among ``gpus`` GPUs of one node of
    ``gpus_per_node`` runs at: all of it through a switch; over a mesh the links to the group's
    other ``gpus - 1`` members, each 1/(gpus_per_node - 1) of it (MI300X: 448 GB/s over 7 links, 64
    per peer, so a TP2 pair all-reduces at 64 GB/s and TP8 at 448)."""
    if topology == Topology.SWITCH or gpus_per_node <= 2 or gpus >= gpus_per_node:
        return 1.0
    return (max(gpus, 2) - 1) / (gpus_per_node - 1)


@spec
class Interconnect(Spec):
    """GPU-to-GPU link within a node."""

    type: Text = spec_field(description="NVLink 4, Infinity Fabric, none ...")
    bandwidth_gb_s_per_direction: Annotated[float, Bounds(ge=0, le=1e5)] = spec_field(
        description="Per-GPU bandwidth in one direction, 10^9 B/s (datasheets print the sum of both)."
    )
    gpus_per_node: NodeGpus = spec_field(description="GPUs joined by this link in one node/board.")
    topology: Topology = spec_field(
        default=Topology.SWITCH,
        description="switch (NVSwitch: any pair at the full bandwidth) or mesh (one direct link per peer, "
        "the bandwidth shared over gpus_per_node - 1 of them: MI300X's xGMI).",
    )

    def group_gb_s(self, gpus: int) -> float:
        """GB/s per direction per GPU of a collective among ``gpus`` GPUs of one node
        (:func:`link_share` of the bandwidth)."""
        return self.bandwidth_gb_s_per_direction * link_share(self.topology, gpus, self.gpus_per_node)

    def _check(self) -> None:
        bw = self.bandwidth_gb_s_per_direction
        if 0 < bw < 0.1:
            raise ValueError(
                f"bandwidth_gb_s_per_direction ({bw:g}) must be 0 (no GPU-to-GPU link) or at least 0.1 GB/s"
            )


#: Nominal PCIe x16 bandwidth per direction, 10^9 B/s, by generation (PCI-SIG: 2.5, 5, 8, 16, 32 and
#: 64 GT/s per lane; 16 lanes; 8b/10b coding to 2.0, 128b/130b from 3.0, PAM4 FLIT from 6.0; vendors
#: round to these figures: "PCIe Gen4 x16 64 GB/s" bidirectional in NVIDIA's L40S datasheet).
PCIE_X16_GB_S = {1: 4.0, 2: 8.0, 3: 16.0, 4: 32.0, 5: 64.0, 6: 128.0}


@spec
class HardwareSpec(Spec):
    """One accelerator's datasheet: dense peak throughput per dtype, memory, bandwidth, power."""

    name: Name = spec_field(description="Canonical lower-case name used on the command line.")
    display_name: Text
    aliases: Names = spec_field(default=())
    vendor: Text
    architecture: Text
    dense_tflops: Annotated[
        dict[
            Literal["fp64", "fp32", "tf32", "bf16", "fp16", "fp16_fp16acc", "fp8", "int8", "int4", "fp4"],
            Annotated[float, Bounds(ge=1e-3, le=1e6)],
        ],
        Bounds(min_length=1),
    ] = spec_field(
        description="Peak dense tensor throughput, 10^12 FLOP/s (TOP/s for int), no sparsity; at least one dtype. "
        "bf16/fp16 are the rates with FP32 accumulation; fp16_fp16acc, where the GPU has a faster one, FP16 "
        "inputs with FP16 accumulation (GeForce cards: twice their fp16)."
    )
    memory_gb: Annotated[float, Bounds(ge=1e-3, le=1e5)] = spec_field(
        description="HBM/GDDR capacity, 10^9 bytes, as the datasheet prints it."
    )
    memory_gib: Optional[Annotated[float, Bounds(ge=1e-3, le=1e5)]] = spec_field(
        default=None,
        description="The capacity a deployment gets, 2^30 bytes, as the card reports it (nvidia-smi's "
        "memory.total: an '80 GB' H100 reports 81,559 MiB = 79.65 GiB; rocm-smi's VRAM Total Memory), its "
        "report cited. Absent: the datasheet's memory_gb read as 10^9 bytes.",
    )
    memory_type: Text
    memory_bandwidth_tb_s: Annotated[float, Bounds(ge=1e-3, le=1e3)] = spec_field(
        description="Peak memory bandwidth, 10^12 B/s."
    )
    tdp_w: Annotated[float, Bounds(ge=1, le=1e5)] = spec_field(description="Board power limit, W.")
    sm_count: Optional[Annotated[int, Bounds(ge=1, le=4096, strict=True)]] = spec_field(
        default=None,
        description="Streaming multiprocessors (NVIDIA) or compute units (AMD) enabled on the product, from "
        "its datasheet or whitepaper: the thread-block slots a split-KV decode kernel fills. Absent: the "
        "decode attention of a split-KV profile is timed without splits.",
    )
    interconnect: Interconnect
    pcie_gen: PcieGen
    pcie_gb_s_per_direction: Optional[Annotated[float, Bounds(ge=0.1, le=1e4)]] = spec_field(
        default=None,
        description="Host link (PCIe x16) bandwidth in one direction, 10^9 B/s, as the datasheet prints it (it "
        "prints both directions' sum: 64 GB/s for PCIe 4.0 x16 is 32 each way). Absent: the PCI-SIG "
        "rate of pcie_gen at x16. Cards with no GPU-to-GPU link run tensor parallelism over it.",
    )
    source: Source

    @property
    def memory_bytes(self) -> int:
        """Capacity in bytes (memory_gb * 10^9, the datasheet's decimal gigabytes)."""
        return round(self.memory_gb * 10**9)

    def _check(self) -> None:
        """memory_gib and memory_gb describe one memory: GiB x 2^30 within 0.85-1.25x of GB x 10^9
        (an "80 GB" H100 reports 79.65 GiB = 1.07x; a typo such as 10 for 80 is refused)."""
        if self.memory_gib is not None:
            ratio = self.memory_gib * 2**30 / (self.memory_gb * 10**9)
            if not 0.85 <= ratio <= 1.25:
                raise ValueError(
                    f"memory_gib {self.memory_gib:g} and memory_gb {self.memory_gb:g} disagree "
                    f"({ratio:.2f}x); memory_gib is the capacity the card reports in 2^30 B, about memory_gb"
                )

    @property
    def capacity_bytes(self) -> int:
        """Physical capacity in bytes, as deployments see it: memory_gib x 2^30, or memory_bytes
        when the spec does not give memory_gib."""
        return round(self.memory_gib * 2**30) if self.memory_gib is not None else self.memory_bytes

    @property
    def pcie_bytes_s(self) -> float:
        """Host link bandwidth in one direction, B/s: ``pcie_gb_s_per_direction``, else the x16
        rate of ``pcie_gen`` (:data:`PCIE_X16_GB_S`, PCI-SIG's nominal rates)."""
        if self.pcie_gb_s_per_direction is not None:
            return self.pcie_gb_s_per_direction * 1e9
        return PCIE_X16_GB_S.get(self.pcie_gen, PCIE_X16_GB_S[max(PCIE_X16_GB_S)]) * 1e9

    @property
    def bandwidth_bytes_s(self) -> float:
        """Memory bandwidth in B/s."""
        return self.memory_bandwidth_tb_s * 1e12

    def peak_flops(self, dtype: str) -> float:
        """Dense peak FLOP/s for ``dtype``; InputError if the GPU has no such tensor-core path
        (FP8 on an A100 is an error, not a number)."""
        key = str(dtype).lower()
        if key not in self.dense_tflops:
            raise InputError(
                f"dtype: {self.name} ({self.display_name}) has no {dtype} tensor-core peak; "
                f"its datasheet lists: {', '.join(self.dense_tflops)}",
                fields=("dtype",),
            )
        return self.dense_tflops[key] * 1e12
