"""One description of a model's structure: its named weight tensors.

A :class:`~llm_cost.spec.ModelSpec` expands into the list of weight tensors a checkpoint holds
(names as in Hugging Face checkpoints, ``layers.*`` standing for every layer of a kind). Each
tensor knows its shape, its breakdown group, whether it is a matmul operand, and how many
copies a token uses (``k`` of ``E`` routed experts). Parameter counts, N_gemm, active
parameters, weight FLOPs per token and weight bytes per decode step are all sums over this one
list, so they cannot disagree. The closed form of seed 003 §01,
``N = L[d(2d + 2d_kv) + 3 d d_ff + 2d] + 2Vd + d``, is a test of this list, not a second
implementation.

Counting convention (design notes): a parameter is an element of a stored trainable tensor.
The embedding counts once when tied (the LM head is then a matmul with no storage of its own);
buffers such as rotary ``inv_freq`` are not parameters. A persistent buffer the checkpoint stores
(Gemma 4's ``layer_scalar``, its vision tower's ``std_bias`` / ``std_scale`` and clipping bounds) is
listed with the tensors: the checkpoint's totals count it.
"""

from __future__ import annotations

from fractions import Fraction
from functools import cached_property, lru_cache
from math import prod

from llm_cost.core.records import record
from llm_cost.core.types import LayerKind, LayerType, MlpType, Part, ShardRule, TensorGroup, TensorKind
from llm_cost.model.layers import layer_counts
from llm_cost.specs.schema import (
    Gemma4Audio,
    Gemma4Vision,
    Glm4vVision,
    GQAAttention,
    KimiDeltaAttention,
    LinearAttention,
    Llama4Vision,
    MiniMaxM3Vision,
    MLAAttention,
    ModelSpec,
    MoonVitVision,
    PixtralVision,
    Qwen2Vision,
    Qwen3Vision,
    Qwen25Vision,
    SiglipVision,
    SparseIndexer,
    VisionTower,
)

__all__ = ["Tensor", "Structure", "build", "kv_shared_unloaded_params"]

# Breakdown groups, in display order.
GROUPS = (
    "embedding",
    "position_embedding",
    "attention",
    "indexer",
    "linear_attention",
    "mamba",
    "short_conv",
    "mlp",
    "router",
    "routed_experts",
    "shared_experts",
    "moe_latent",
    "per_layer_embedding",
    "norms",
    "biases",
    "final_norm",
    "lm_head",
)


@record
class Tensor:
    """One weight tensor (or a family of identical ones across layers/experts).

    ``shape`` is in elements; ``layers`` is how many blocks hold it (0 for tensors outside the
    blocks); ``copies`` is how many per block (E for routed experts); ``active`` is how many of
    those copies one token uses (k for routed experts). ``stored`` is False for a tied LM head,
    which is a matmul over the embedding's storage. ``layer_kind`` says which decoder layers hold
    a per-layer tensor; ``shard`` is how tensor parallelism splits it, declared where the tensor
    is built (Megatron-LM / vLLM parallel layers) and applied by :mod:`llm_cost.model.layout`.
    """

    name: str
    shape: tuple[int, ...]
    group: str
    kind: TensorKind
    layers: int = 0
    copies: int = 1
    active: Fraction = Fraction(1)
    stored: bool = True
    part: Part = Part.DECODER
    layer_kind: LayerKind = LayerKind.ANY
    shard: ShardRule = ShardRule.REPLICATED

    @property
    def numel(self) -> int:
        """Elements in one copy."""
        return prod(self.shape)

    @property
    def per_layer(self) -> int:
        """Elements in one block (all copies)."""
        return self.numel * self.copies

    @property
    def total(self) -> int:
        """Elements across all blocks and copies (0 if not stored)."""
        return self.per_layer * max(self.layers, 1) if self.stored else 0

    @property
    def gemm_total(self) -> int:
        """Matmul elements a token multiplies by if every copy were used (stored or tied)."""
        return self.per_layer * max(self.layers, 1) if self.kind == TensorKind.MATMUL else 0

    @property
    def active_gemm(self) -> Fraction:
        """Matmul elements one token actually multiplies by (routed experts scaled by k/E)."""
        if self.kind != TensorKind.MATMUL:
            return Fraction(0)
        return self.numel * self.active * max(self.layers, 1)


class Structure:
    """All weight tensors of a model, with the sums every metric is built from (computed on
    first use). Not a record: it is compared by identity and shown by the default ``repr`` (it
    holds hundreds of tensors), and :func:`build` makes one per spec."""

    def __init__(self, spec: ModelSpec, tensors: tuple[Tensor, ...]) -> None:
        self.spec = spec
        self.tensors = tensors

    def _sum(self, part: Part, attr: str = "total") -> int:
        return sum(getattr(t, attr) for t in self.tensors if t.part == part)

    @cached_property
    def total_params(self) -> int:
        """Parameters of the main model: decoder plus vision and audio towers (MTP reported apart)."""
        return self._sum(Part.DECODER) + self._sum(Part.VISION) + self._sum(Part.AUDIO)

    @cached_property
    def decoder_params(self) -> int:
        """Parameters of the language model alone."""
        return self._sum(Part.DECODER)

    @cached_property
    def vision_params(self) -> int:
        """Parameters of the vision tower (0 if none)."""
        return self._sum(Part.VISION)

    @cached_property
    def audio_params(self) -> int:
        """Parameters of the audio tower and its embedder (0 if none)."""
        return self._sum(Part.AUDIO)

    @cached_property
    def mtp_params(self) -> int:
        """Unique parameters of the MTP modules (their embedding/LM-head copies excluded)."""
        return self._sum(Part.MTP)

    @cached_property
    def mtp_copies(self) -> int:
        """Elements of the embedding and LM head copies a checkpoint stores with its MTP modules."""
        return self._sum(Part.MTP_COPY)

    @cached_property
    def n_gemm(self) -> int:
        """N_gemm: matmul parameters of the decoder a token passes through (no embedding lookup,
        no norms, biases or other vectors; LM head included, tied or not; all experts)."""
        return sum(t.gemm_total for t in self.tensors if t.part == Part.DECODER)

    @cached_property
    def active_gemm(self) -> Fraction:
        """Matmul parameters one token uses: routed experts scaled by k/E (= n_gemm for dense)."""
        return sum((t.active_gemm for t in self.tensors if t.part == Part.DECODER), Fraction(0))

    @cached_property
    def active_params(self) -> Fraction:
        """Parameters a token touches: all decoder parameters less the routed experts it skips
        (the convention of DeepSeek's "37B activated" and Mixtral's "12.9B active")."""
        skipped = sum(
            (t.numel * (t.copies - t.active) * max(t.layers, 1) for t in self.tensors if t.part == Part.DECODER),
            Fraction(0),
        )
        return self.decoder_params - skipped

    @cached_property
    def routed_expert_params(self) -> int:
        """Parameters of all routed experts (all MoE layers)."""
        return sum(t.total for t in self.tensors if t.part == Part.DECODER and t.group == "routed_experts")

    def tensors_of(self, part: Part = Part.DECODER) -> list[Tensor]:
        """The tensors of one part (decoder, vision, audio, mtp, mtp_copy)."""
        return [t for t in self.tensors if t.part == part]


M, L_, N, B, O = TensorKind.MATMUL, TensorKind.LOOKUP, TensorKind.NORM, TensorKind.BIAS, TensorKind.OTHER
COL, ROW, KV, REP = ShardRule.COLUMN, ShardRule.ROW, ShardRule.KV, ShardRule.REPLICATED
SOFTMAX, LINEAR, DENSE, MOE = LayerKind.SOFTMAX_ATTENTION, LayerKind.LINEAR_ATTENTION, LayerKind.DENSE, LayerKind.MOE
SLIDING, GLOBAL = LayerKind.SLIDING_ATTENTION, LayerKind.GLOBAL_ATTENTION
MAMBA, SHORT = LayerKind.MAMBA, LayerKind.SHORT_CONV


def _norm(name: str, d: int, spec: ModelSpec, layers: int, part: Part, group: str = "norms") -> list[Tensor]:
    out = [Tensor(f"{name}.weight", (d,), group, N, layers, part=part)]
    if spec.norm_type == "layernorm":
        out.append(Tensor(f"{name}.bias", (d,), group, N, layers, part=part))
    return out


def _linear(
    name: str,
    d_in: int,
    d_out: int,
    group: str,
    layers: int,
    bias: bool,
    part: Part,
    layer_kind: LayerKind = LayerKind.ANY,
    shard: ShardRule = REP,
    copies: int = 1,
    active: Fraction = Fraction(1),
) -> list[Tensor]:
    """A Linear layer: weight [d_out, d_in] (a matmul), optional bias [d_out] (group "biases").
    A row-parallel layer's bias is replicated (added once after the all-reduce); any other bias
    is split like its weight."""
    out = [
        Tensor(
            f"{name}.weight",
            (d_out, d_in),
            group,
            M,
            layers,
            copies,
            active,
            part=part,
            layer_kind=layer_kind,
            shard=shard,
        )
    ]
    if bias:
        out.append(
            Tensor(
                f"{name}.bias",
                (d_out,),
                "biases",
                B,
                layers,
                copies,
                active,
                part=part,
                layer_kind=layer_kind,
                shard=ShardRule.ROW_BIAS if shard == ROW else shard,
            )
        )
    return out


def _gqa(
    spec: ModelSpec, att: GQAAttention, layers: int, part: Part, sliding: int = 0, sliding_att: bool = False
) -> list[Tensor]:
    """q/k/v/o projections of ``layers`` softmax-attention layers, ``sliding`` of them sliding.

    W_V is [d, n_kv d_v] and W_O [n_q d_v, d] (``v_head_dim`` d_v, default d_head; transformers
    models/mimo_v2_flash/modeling_mimo_v2_flash.py MiMoV2FlashAttention). When the sliding layers
    have their own K/V heads (``sliding_num_key_value_heads``) their k/v projections are separate
    tensors held by the sliding layers only (``self_attn[sliding]``); sinks with ``sink_layers``
    sliding are held by the sliding layers only (MiMo-V2-Flash). ``sliding_att``: every one of the
    ``layers`` is sliding (an MTP block of sliding attention)."""
    d = spec.hidden_size
    n_q, n_kv, d_h, d_v = att.num_attention_heads, spec.num_key_value_heads, spec.head_dim, spec.v_head_dim
    p = "layers.*.self_attn"
    q_out = n_q * d_h * (2 if att.output_gate else 1)
    n_sliding = layers if sliding_att else sliding
    n_kv_sliding = spec.kv_heads_of(LayerType.SLIDING_ATTENTION)
    split_kv = n_kv_sliding != n_kv and n_sliding
    t = _linear(f"{p}.q_proj", d, q_out, "attention", layers, att.attention_bias, part, SOFTMAX, COL)
    if sliding_att:
        kv_parts = [(p, n_kv_sliding, layers, SOFTMAX)]
    elif split_kv:
        kv_parts = [(p, n_kv, layers - n_sliding, GLOBAL), (f"{p}[sliding]", n_kv_sliding, n_sliding, SLIDING)]
    else:
        kv_parts = [(p, n_kv, layers, SOFTMAX)]
    for prefix, heads, n, kind in kv_parts:
        if n:
            t += _linear(f"{prefix}.k_proj", d, heads * d_h, "attention", n, att.attention_bias, part, kind, KV)
            t += _linear(f"{prefix}.v_proj", d, heads * d_v, "attention", n, att.attention_bias, part, kind, KV)
    t += _linear(f"{p}.o_proj", n_q * d_v, d, "attention", layers, att.o_proj_bias, part, SOFTMAX, ROW)
    if att.qk_norm:
        t += _qk_norms(p, att, n_q, n_kv, d_h, layers, part)
    sinks, sink_kind = (layers, SOFTMAX) if att.sink_layers == "all" or sliding_att else (n_sliding, SLIDING)
    if att.sinks and sinks:
        t.append(
            Tensor(
                f"{p}.sinks", (n_q,), "attention", O, sinks, part=part, layer_kind=sink_kind, shard=ShardRule.HEADWISE
            )
        )
    return t


def _gqa_geometry(
    spec: ModelSpec,
    att: GQAAttention,
    layers: int,
    part: Part,
    kind: LayerKind = SOFTMAX,
    layer_type: LayerType = LayerType.SLIDING_ATTENTION,
    kv: bool = True,
) -> list[Tensor]:
    """q/k/v/o (and q/k norms, sinks) of ``layers`` softmax layers holding tensors of ``kind``,
    with the heads of ``layer_type`` (:meth:`ModelSpec.heads_of`). Gemma 4's full-attention
    layers with ``global_k_eq_v`` have no v_proj (transformers models/gemma4/modeling_gemma4.py
    Gemma4TextAttention: ``v_proj = None`` when ``use_alternative_attention``); its KV-shared
    layers (``kv`` false) only q_proj, q_norm and o_proj ("Layers sharing kv states don't need any
    weight matrices")."""
    d = spec.hidden_size
    n_q = att.num_attention_heads
    n_kv, d_h = spec.heads_of(layer_type)
    p = "layers.*.self_attn"
    q_out = n_q * d_h * (2 if att.output_gate else 1)
    no_v = att.global_k_eq_v and layer_type == LayerType.FULL_ATTENTION
    t = _linear(f"{p}.q_proj", d, q_out, "attention", layers, att.attention_bias, part, kind, COL)
    if kv:
        t += _linear(f"{p}.k_proj", d, n_kv * d_h, "attention", layers, att.attention_bias, part, kind, KV)
    if kv and not no_v:
        t += _linear(f"{p}.v_proj", d, n_kv * d_h, "attention", layers, att.attention_bias, part, kind, KV)
    t += _linear(f"{p}.o_proj", n_q * d_h, d, "attention", layers, att.o_proj_bias, part, kind, ROW)
    if att.qk_norm:
        norms = _qk_norms(p, att, n_q, n_kv, d_h, layers, part, kind)
        t += norms if kv else norms[:1]
    if att.sinks:
        t.append(
            Tensor(f"{p}.sinks", (n_q,), "attention", O, layers, part=part, layer_kind=kind, shard=ShardRule.HEADWISE)
        )
    return t


def _qk_norms(
    p: str, att: GQAAttention, n_q: int, n_kv: int, d_h: int, layers: int, part: Part, kind: LayerKind = SOFTMAX
) -> list[Tensor]:
    """q_norm / k_norm: d_head weights each (a per-head norm, replicated across TP), or the whole q
    and k widths (``qk_norm_width`` projection: OLMo 2 and OLMoE normalise the full projections,
    split with the heads)."""
    if att.qk_norm_width == "head":
        q, k, q_shard, k_shard = d_h, d_h, REP, REP
    else:
        q, k, q_shard, k_shard = n_q * d_h, n_kv * d_h, ShardRule.HEADWISE, KV
    return [
        Tensor(f"{p}.q_norm.weight", (q,), "norms", N, layers, part=part, layer_kind=kind, shard=q_shard),
        Tensor(f"{p}.k_norm.weight", (k,), "norms", N, layers, part=part, layer_kind=kind, shard=k_shard),
    ]


def _mla(spec: ModelSpec, att: MLAAttention, layers: int, part: Part) -> list[Tensor]:
    """DeepSeek-V2/V3 MLA: q down/up (or full W_Q), joint KV down-projection with the RoPE key,
    KV up-projection to n_h (nope + v) and W_O (DeepSeek-V2 paper, §2.1). The small
    down-projections are replicated across TP; the per-head up-projections are column-parallel."""
    d, n = spec.hidden_size, att.num_attention_heads
    qk = att.qk_nope_head_dim + att.qk_rope_head_dim
    p = "layers.*.self_attn"
    b = att.attention_bias
    if att.q_lora_rank:
        t = _linear(f"{p}.q_a_proj", d, att.q_lora_rank, "attention", layers, b, part, SOFTMAX, REP)
        t.append(
            Tensor(f"{p}.q_a_layernorm.weight", (att.q_lora_rank,), "norms", N, layers, part=part, layer_kind=SOFTMAX)
        )
        t += _linear(f"{p}.q_b_proj", att.q_lora_rank, n * qk, "attention", layers, False, part, SOFTMAX, COL)
    else:
        t = _linear(f"{p}.q_proj", d, n * qk, "attention", layers, False, part, SOFTMAX, COL)
    t += _linear(
        f"{p}.kv_a_proj_with_mqa",
        d,
        att.kv_lora_rank + att.qk_rope_head_dim,
        "attention",
        layers,
        b,
        part,
        SOFTMAX,
        REP,
    )
    t.append(
        Tensor(f"{p}.kv_a_layernorm.weight", (att.kv_lora_rank,), "norms", N, layers, part=part, layer_kind=SOFTMAX)
    )
    t += _linear(
        f"{p}.kv_b_proj",
        att.kv_lora_rank,
        n * (att.qk_nope_head_dim + att.v_head_dim),
        "attention",
        layers,
        False,
        part,
        SOFTMAX,
        COL,
    )
    t += _linear(f"{p}.o_proj", n * att.v_head_dim, d, "attention", layers, b, part, SOFTMAX, ROW)
    if att.indexer is not None:  # the MTP blocks keep their own indexer; GLM-5.2's shared layers hold none
        t += _indexer(spec, att, layers - (len(att.indexer.shared_layers) if part == Part.DECODER else 0), part)
    return t


def _indexer(spec: ModelSpec, att: MLAAttention, layers: int, part: Part) -> list[Tensor]:
    """DeepSeek Sparse Attention's lightning indexer (transformers modeling_deepseek_v32.py
    DeepseekV32Indexer): wq_b [q_lora_rank -> H_i D_i], wk [d -> D_i], k_norm (a LayerNorm: weight
    and bias of D_i) and weights_proj [d -> H_i]. Replicated across TP (vLLM's ReplicatedLinear):
    every rank scores all keys for its queries."""
    idx = att.indexer
    assert idx is not None and att.q_lora_rank
    d, H, D = spec.hidden_size, idx.index_n_heads, idx.index_head_dim
    p, g, kind = "layers.*.self_attn.indexer", "indexer", LayerKind.INDEXED
    t = _linear(f"{p}.wq_b", att.q_lora_rank, H * D, g, layers, False, part, kind, REP)
    t += _linear(f"{p}.wk", d, D, g, layers, False, part, kind, REP)
    t += [Tensor(f"{p}.k_norm.{n}", (D,), "norms", N, layers, part=part, layer_kind=kind) for n in ("weight", "bias")]
    t += _linear(f"{p}.weights_proj", d, H, g, layers, False, part, kind, REP)
    return t


def _block_indexer(spec: ModelSpec, idx: SparseIndexer, layers: int, part: Part) -> list[Tensor]:
    """MiniMax-M3's lightning indexer on ``layers`` indexed layers (transformers
    models/minimax_m3_vl/modeling_minimax_m3_vl.py MiniMaxM3VLIndexer): q_proj [d -> H_i D_i] and
    k_proj [d -> D_i] without biases, from the hidden state (not a query latent as DeepSeek's wq_b);
    q_norm and k_norm, RMSNorms of D_i (weights only); no weights_proj (the block score is a max over
    the index heads). Replicated across TP, as DeepSeek's."""
    d, H, D = spec.hidden_size, idx.index_n_heads, idx.index_head_dim
    p, g, kind = "layers.*.self_attn.indexer", "indexer", LayerKind.INDEXED
    t = _linear(f"{p}.q_proj", d, H * D, g, layers, False, part, kind, REP)
    t += _linear(f"{p}.k_proj", d, D, g, layers, False, part, kind, REP)
    t += [Tensor(f"{p}.{n}.weight", (D,), "norms", N, layers, part=part, layer_kind=kind) for n in ("q_norm", "k_norm")]
    return t


def _linear_attention(spec: ModelSpec, layers: int, part: Part) -> list[Tensor]:
    """The linear-attention mixer's tensors: Gated DeltaNet or Kimi Delta Attention."""
    if isinstance(spec.linear_attention, KimiDeltaAttention):
        return _kda(spec, spec.linear_attention, layers, part)
    return _gated_deltanet(spec, layers, part)


def _kda(spec: ModelSpec, kda: KimiDeltaAttention, layers: int, part: Part) -> list[Tensor]:
    """Kimi Delta Attention (the checkpoint's modeling_kimi.py KimiDeltaAttention; transformers
    modeling_kimi_linear.py KimiLinearDeltaAttention, which fuses the three convs into one of the
    same elements): q/k/v_proj [d -> H K], q/k/v_conv1d [H K, 1, kernel], f_a_proj [d -> K] and
    f_b_proj [K -> H K], dt_bias [H K], A_log [H], b_proj [d -> H], g_a_proj [d -> K] and g_b_proj
    [K -> H K], o_norm [K], o_proj [H K -> d]; no biases. Sharded as vLLM's KimiDeltaAttention: the
    per-head projections, convs and vectors split with the heads, the rank-K gate inputs
    (f_a_proj, g_a_proj) replicated, o_proj row-parallel."""
    d, K, w = spec.hidden_size, kda.head_dim, kda.width
    p, g = "layers.*.self_attn", "linear_attention"
    HEAD = ShardRule.HEADWISE
    t: list[Tensor] = []
    for name in ("q_proj", "k_proj", "v_proj"):
        t += _linear(f"{p}.{name}", d, w, g, layers, False, part, LINEAR, COL)
    for name in ("q_conv1d", "k_conv1d", "v_conv1d"):
        t.append(
            Tensor(f"{p}.{name}.weight", (w, 1, kda.conv_kernel), g, O, layers, part=part, layer_kind=LINEAR, shard=COL)
        )
    t += _linear(f"{p}.f_a_proj", d, K, g, layers, False, part, LINEAR, REP)
    t += _linear(f"{p}.f_b_proj", K, w, g, layers, False, part, LINEAR, COL)
    t.append(Tensor(f"{p}.dt_bias", (w,), g, O, layers, part=part, layer_kind=LINEAR, shard=HEAD))
    t.append(Tensor(f"{p}.A_log", (kda.num_heads,), g, O, layers, part=part, layer_kind=LINEAR, shard=HEAD))
    t += _linear(f"{p}.b_proj", d, kda.num_heads, g, layers, False, part, LINEAR, COL)
    t += _linear(f"{p}.g_a_proj", d, K, g, layers, False, part, LINEAR, REP)
    t += _linear(f"{p}.g_b_proj", K, w, g, layers, False, part, LINEAR, COL)
    t.append(Tensor(f"{p}.o_norm.weight", (K,), "norms", N, layers, part=part, layer_kind=LINEAR))
    t += _linear(f"{p}.o_proj", w, d, g, layers, False, part, LINEAR, ROW)
    return t


def _gated_deltanet(spec: ModelSpec, layers: int, part: Part) -> list[Tensor]:
    """Qwen3-Next Gated DeltaNet: in_proj_qkvz [d, 2 n_k d_k + 2 n_v d_v], in_proj_ba [d, 2 n_v],
    depthwise conv1d over q, k, v (conv_dim x kernel), dt_bias and A_log (n_v each), a gated
    RMSNorm over d_v and out_proj [n_v d_v, d] (transformers modeling_qwen3_next)."""
    la = spec.linear_attention
    assert isinstance(la, LinearAttention)
    d = spec.hidden_size
    key_dim = la.linear_num_key_heads * la.linear_key_head_dim
    value_dim = la.linear_num_value_heads * la.linear_value_head_dim
    p = "layers.*.linear_attn"
    g = "linear_attention"
    heads = la.linear_num_value_heads
    t = _linear(f"{p}.in_proj_qkvz", d, 2 * key_dim + 2 * value_dim, g, layers, False, part, LINEAR, COL)
    t += _linear(f"{p}.in_proj_ba", d, 2 * heads, g, layers, False, part, LINEAR, COL)
    t.append(
        Tensor(
            f"{p}.conv1d.weight",
            (la.conv_dim, 1, la.linear_conv_kernel_dim),
            g,
            O,
            layers,
            part=part,
            layer_kind=LINEAR,
            shard=COL,
        )
    )
    for name in ("dt_bias", "A_log"):
        t.append(Tensor(f"{p}.{name}", (heads,), g, O, layers, part=part, layer_kind=LINEAR, shard=ShardRule.HEADWISE))
    t.append(Tensor(f"{p}.norm.weight", (la.linear_value_head_dim,), "norms", N, layers, part=part, layer_kind=LINEAR))
    t += _linear(f"{p}.out_proj", value_dim, d, g, layers, False, part, LINEAR, ROW)
    return t


def _mamba2(spec: ModelSpec, layers: int, part: Part) -> list[Tensor]:
    """Mamba-2 mixer (transformers modeling_nemotron_h.py NemotronHMamba2Mixer): in_proj
    [d -> 2I + 2GN + H], depthwise conv1d [conv_dim, 1, k] (+ bias), dt_bias, A_log, D [H], gated
    RMSNorm [I], out_proj [I -> d]. Sharded as vLLM's MambaMixer2: in_proj, conv1d and the
    per-head vectors split with the heads, out_proj row-parallel."""
    m = spec.mamba
    assert m is not None
    d, inner, H = spec.hidden_size, m.inner, m.num_heads
    p, g = "layers.*.mamba", "mamba"
    t = _linear(
        f"{p}.in_proj", d, 2 * inner + 2 * m.n_groups * m.state_size + H, g, layers, m.proj_bias, part, MAMBA, COL
    )
    t.append(
        Tensor(
            f"{p}.conv1d.weight", (m.conv_dim, 1, m.conv_kernel), g, O, layers, part=part, layer_kind=MAMBA, shard=COL
        )
    )
    if m.conv_bias:
        t.append(Tensor(f"{p}.conv1d.bias", (m.conv_dim,), "biases", B, layers, part=part, layer_kind=MAMBA, shard=COL))
    for name in ("dt_bias", "A_log", "D"):
        t.append(Tensor(f"{p}.{name}", (H,), g, O, layers, part=part, layer_kind=MAMBA, shard=ShardRule.HEADWISE))
    t.append(
        Tensor(f"{p}.norm.weight", (inner,), "norms", N, layers, part=part, layer_kind=MAMBA, shard=ShardRule.HEADWISE)
    )
    t += _linear(f"{p}.out_proj", inner, d, g, layers, m.proj_bias, part, MAMBA, ROW)
    return t


def _short_conv(spec: ModelSpec, layers: int, part: Part) -> list[Tensor]:
    """LFM2's gated short convolution (transformers modeling_lfm2.py Lfm2ShortConv): in_proj
    [d -> 3d], a depthwise conv [d, 1, k] and out_proj [d -> d], biases if ``conv_bias``. Sharded
    as vLLM's ShortConv: in_proj and the conv split by channel, out_proj row-parallel."""
    sc = spec.short_conv
    assert sc is not None
    d, b = spec.hidden_size, sc.conv_bias
    p, g = "layers.*.conv", "short_conv"
    t = _linear(f"{p}.in_proj", d, 3 * d, g, layers, b, part, SHORT, COL)
    t.append(Tensor(f"{p}.conv.weight", (d, 1, sc.conv_kernel), g, O, layers, part=part, layer_kind=SHORT, shard=COL))
    if b:
        t.append(Tensor(f"{p}.conv.bias", (d,), "biases", B, layers, part=part, layer_kind=SHORT, shard=COL))
    t += _linear(f"{p}.out_proj", d, d, g, layers, b, part, SHORT, ROW)
    return t


def _ffn(
    prefix: str,
    d: int,
    width: int,
    gated: bool,
    bias: bool,
    group: str,
    layers: int,
    part: Part,
    kind: LayerKind,
    experts: bool = False,
    copies: int = 1,
    active: Fraction = Fraction(1),
) -> list[Tensor]:
    """Gate and up (column-parallel) and down (row-parallel); routed experts are split whole."""
    names = ("gate_proj", "up_proj", "down_proj") if gated else ("up_proj", "down_proj")
    t: list[Tensor] = []
    for n in names:
        d_in, d_out = (width, d) if n == "down_proj" else (d, width)
        shard = ShardRule.EXPERT if experts else (ROW if n == "down_proj" else COL)
        t += _linear(f"{prefix}.{n}", d_in, d_out, group, layers, bias, part, kind, shard, copies, active)
    return t


def _dense_mlp(spec: ModelSpec, layers: int, part: Part, widen: int = 1) -> list[Tensor]:
    mlp = spec.mlp
    assert mlp is not None
    width = mlp.intermediate_size * widen
    return _ffn("layers.*.mlp", spec.hidden_size, width, mlp.gated, mlp.mlp_bias, "mlp", layers, part, DENSE)


def _moe(spec: ModelSpec, layers: int, part: Part) -> list[Tensor]:
    """Router [E, d] (+ E bias terms; + Gemma 4's scales), E routed experts (gated or up/down only)
    and the shared experts (Gemma 4's dense MLP beside its experts is one), the block's extra
    norms. A latent MoE (transformers modeling_nemotron_h.py NemotronHMoE) adds fc1_latent_proj
    [d -> l] and fc2_latent_proj [l -> d], run by every token (replicated, as vLLM's
    ReplicatedLinear), and its routed experts work at width l."""
    moe = spec.moe
    assert moe is not None
    d, E, k = spec.hidden_size, moe.num_experts, moe.num_experts_per_tok
    p = "layers.*.mlp"
    t = [Tensor(f"{p}.gate.weight", (E, d), "router", M, layers, part=part, layer_kind=MOE)]
    if moe.router_bias:
        t.append(Tensor(f"{p}.gate.bias", (E,), "router", B, layers, part=part, layer_kind=MOE))
    if moe.router_scales:  # Gemma4TextRouter: scale [d] on the normed input, per_expert_scale [E] on the weights
        t.append(Tensor(f"{p}.router.scale", (d,), "router", O, layers, part=part, layer_kind=MOE))
        t.append(Tensor(f"{p}.router.per_expert_scale", (E,), "router", O, layers, part=part, layer_kind=MOE))
    for i in range(moe.extra_norms):  # Gemma 4: post_feedforward_layernorm_1 / _2, pre_feedforward_layernorm_2
        t += [Tensor(f"{p}.moe_norm{i + 1}.weight", (d,), "norms", N, layers, part=part, layer_kind=MOE)]
    latent = moe.moe_latent_size
    if latent:
        t += _linear(f"{p}.fc1_latent_proj", d, latent, "moe_latent", layers, False, part, MOE, REP)
        t += _linear(f"{p}.fc2_latent_proj", latent, d, "moe_latent", layers, False, part, MOE, REP)
    t += _ffn(
        f"{p}.experts.*",
        latent or d,
        moe.moe_intermediate_size,
        moe.expert_gated,
        moe.expert_bias,
        "routed_experts",
        layers,
        part,
        MOE,
        experts=True,
        copies=E,
        active=Fraction(k),
    )
    if moe.shared_expert_intermediate_size:
        t += _ffn(
            f"{p}.shared_experts",
            d,
            moe.shared_expert_intermediate_size,
            moe.expert_gated,
            False,
            "shared_experts",
            layers,
            part,
            MOE,
        )
        if moe.shared_expert_gate:
            t.append(
                Tensor(f"{p}.shared_expert_gate.weight", (1, d), "shared_experts", M, layers, part=part, layer_kind=MOE)
            )
    return t


def _blocks(
    spec: ModelSpec,
    attention_counts: dict[LayerType, int],
    mlp_counts: dict[MlpType, int],
    part: Part,
    sliding_mtp: bool = False,
) -> list[Tensor]:
    """Tensors of decoder blocks, given how many blocks have each attention / feed-forward kind
    (``sliding_mtp``: MTP blocks of sliding attention, whose K/V heads and sinks are the sliding
    layers')."""
    t: list[Tensor] = []
    att = spec.attention
    softmax_layers = sum(n for k, n in attention_counts.items() if k.caches_kv)
    if softmax_layers:
        if isinstance(att, MLAAttention):
            t += _mla(spec, att, softmax_layers, part)
        else:
            if att.has_global_geometry or spec.num_kv_shared_layers:  # Gemma 4
                t += _softmax_tensors(spec, att, attention_counts, part)
            else:
                sliding = attention_counts.get(LayerType.SLIDING_ATTENTION, 0)
                t += _gqa(spec, att, softmax_layers, part, sliding, sliding_att=part == Part.MTP and sliding_mtp)
            if att.indexer is not None and part == Part.DECODER:  # MiniMax-M3's block indexer
                t += _block_indexer(spec, att.indexer, layer_counts(spec).of(LayerKind.INDEXED), part)
    if attention_counts.get(LayerType.LINEAR_ATTENTION):
        t += _linear_attention(spec, attention_counts[LayerType.LINEAR_ATTENTION], part)
    if attention_counts.get(LayerType.MAMBA2):
        t += _mamba2(spec, attention_counts[LayerType.MAMBA2], part)
    if attention_counts.get(LayerType.SHORT_CONV):
        t += _short_conv(spec, attention_counts[LayerType.SHORT_CONV], part)
    if mlp_counts.get(MlpType.DENSE):
        wide = spec.num_kv_shared_layers if spec.double_wide_shared_mlp and part == Part.DECODER else 0
        if mlp_counts[MlpType.DENSE] - wide:
            t += _dense_mlp(spec, mlp_counts[MlpType.DENSE] - wide, part)
        if wide:  # Gemma4TextMLP: intermediate_size x 2 in the KV-shared layers with use_double_wide_mlp
            t += _dense_mlp(spec, wide, part, 2)
    if mlp_counts.get(MlpType.MOE):
        t += _moe(spec, mlp_counts[MlpType.MOE], part)
    layers = sum(attention_counts.values())
    for i in range(spec.norms_per_layer):
        t += _norm(f"layers.*.norm{i + 1}", spec.hidden_size, spec, layers, part)
    if spec.layer_scalar:  # Gemma4TextDecoderLayer's register_buffer("layer_scalar", torch.ones(1)): stored
        t.append(Tensor("layers.*.layer_scalar", (1,), "norms", O, layers, part=part))
    ple = spec.per_layer_input_size
    if ple and part == Part.DECODER:  # Gemma4TextDecoderLayer: the per-layer input's gate, projection, norm
        g = "per_layer_embedding"
        t += _linear("layers.*.per_layer_input_gate", spec.hidden_size, ple, g, layers, False, part, LayerKind.ANY, REP)
        t += _linear("layers.*.per_layer_projection", ple, spec.hidden_size, g, layers, False, part, LayerKind.ANY, REP)
        t += _norm("layers.*.post_per_layer_input_norm", spec.hidden_size, spec, layers, part, g)
    return t


def _softmax_tensors(
    spec: ModelSpec, att: GQAAttention, attention_counts: dict[LayerType, int], part: Part, unloaded: bool = False
) -> list[Tensor]:
    """The GQA tensors of the softmax layers: one set for all of them, or (Gemma 4's global
    geometry) one for the windowed layers and one for the full layers with their own heads; in the
    decoder, the KV-shared layers of each set without k/v projections. ``unloaded``: instead, only
    the k/v projections and k norms the KV-shared layers would have (:func:`kv_shared_unloaded_params`)."""
    softmax_layers = sum(n for k, n in attention_counts.items() if k.caches_kv)
    windowed = (LayerType.SLIDING_ATTENTION, LayerType.CHUNKED_ATTENTION)
    if att.has_global_geometry:
        full = attention_counts.get(LayerType.FULL_ATTENTION, 0)
        sets = [
            (softmax_layers - full, LayerKind.SLIDING_ATTENTION, LayerType.SLIDING_ATTENTION, windowed),
            (full, LayerKind.GLOBAL_ATTENTION, LayerType.FULL_ATTENTION, (LayerType.FULL_ATTENTION,)),
        ]
    else:
        sets = [(softmax_layers, SOFTMAX, LayerType.SLIDING_ATTENTION, (*windowed, LayerType.FULL_ATTENTION))]
    t: list[Tensor] = []
    for n, kind, layer_type, types in sets:
        shared = sum(spec.kv_shared_count(x) for x in types) if part == Part.DECODER else 0
        if n - shared and not unloaded:
            t += _gqa_geometry(spec, att, n - shared, part, kind, layer_type)
        if shared and not unloaded:
            t += _gqa_geometry(spec, att, shared, part, kind, layer_type, kv=False)
        if shared and unloaded:
            without = {x.name for x in _gqa_geometry(spec, att, shared, part, kind, layer_type, kv=False)}
            t += [x for x in _gqa_geometry(spec, att, shared, part, kind, layer_type) if x.name not in without]
    return t


def kv_shared_unloaded_params(spec: ModelSpec) -> int:
    """Elements a Gemma 4 checkpoint file stores for its KV-shared layers' k_proj, v_proj and
    k_norm, which the model never uses: transformers drops them on load
    (models/gemma4/modeling_gemma4.py, Gemma4TextModel ``_keys_to_ignore_on_load_unexpected``), so
    :attr:`Structure.total_params` leaves them out and the file's total is this much larger
    (google/gemma-4-E2B-it: 5,123,178,979 = 5,104,298,467 + 18,880,512). 0 without KV sharing."""
    att = spec.attention
    if not spec.num_kv_shared_layers or not isinstance(att, GQAAttention):
        return 0
    counts = layer_counts(spec)
    return sum(x.total for x in _softmax_tensors(spec, att, counts.mixers, Part.DECODER, unloaded=True))


def _qwen2_vision(v: Qwen2Vision) -> list[Tensor]:
    """Qwen2-VL vision tower (transformers Qwen2VisionTransformerPretrainedModel): Conv3d patch
    embedding without bias, ``depth`` blocks (LayerNorm, fused qkv with bias, proj, fc1/fc2 with
    biases) and the merger (LayerNorm, then MLP [4 d_vit -> 4 d_vit -> d_model]). Sharded as
    vLLM's Qwen2-VL: qkv and fc1 column-parallel, proj and fc2 row-parallel, the merger's first
    linear column- and its second row-parallel."""
    e, L = v.embed_dim, v.depth
    patch = v.in_chans * v.temporal_patch_size * v.patch_size**2
    merged = e * v.spatial_merge_size**2
    p = Part.VISION
    t = [Tensor("visual.patch_embed.proj.weight", (e, patch), "vision.patch_embed", M, part=p)]
    for norm in ("norm1", "norm2"):
        t.append(Tensor(f"visual.blocks.*.{norm}.weight", (e,), "vision.blocks", N, L, part=p))
        t.append(Tensor(f"visual.blocks.*.{norm}.bias", (e,), "vision.blocks", N, L, part=p))
    for name, d_in, d_out, shard in (
        ("attn.qkv", e, 3 * e, COL),
        ("attn.proj", e, e, ROW),
        ("mlp.fc1", e, v.mlp_ratio * e, COL),
        ("mlp.fc2", v.mlp_ratio * e, e, ROW),
    ):
        t.append(Tensor(f"visual.blocks.*.{name}.weight", (d_out, d_in), "vision.blocks", M, L, part=p, shard=shard))
        t.append(
            Tensor(
                f"visual.blocks.*.{name}.bias",
                (d_out,),
                "vision.blocks",
                B,
                L,
                part=p,
                shard=ShardRule.ROW_BIAS if shard == ROW else shard,
            )
        )
    t.append(Tensor("visual.merger.ln_q.weight", (e,), "vision.merger", N, part=p))
    t.append(Tensor("visual.merger.ln_q.bias", (e,), "vision.merger", N, part=p))
    for name, d_in, d_out, shard in (("mlp.0", merged, merged, COL), ("mlp.2", merged, v.out_hidden_size, ROW)):
        t.append(Tensor(f"visual.merger.{name}.weight", (d_out, d_in), "vision.merger", M, part=p, shard=shard))
        t.append(
            Tensor(
                f"visual.merger.{name}.bias",
                (d_out,),
                "vision.merger",
                B,
                part=p,
                shard=ShardRule.ROW_BIAS if shard == ROW else shard,
            )
        )
    return t


def _siglip(v: SiglipVision, d_text: int) -> list[Tensor]:
    """SigLIP tower + Gemma 3 projector (transformers models/siglip/modeling_siglip.py
    SiglipVisionTransformer without the pooling head, models/gemma3/modeling_gemma3.py
    Gemma3MultiModalProjector). Names as in the Gemma 3 checkpoint."""
    e, L, f = v.hidden_size, v.num_hidden_layers, v.intermediate_size
    p, pv, emb = Part.VISION, "vision_tower.vision_model", "vision_tower.vision_model.embeddings"
    positions = (v.image_size // v.patch_size) ** 2
    t = [
        Tensor(
            f"{emb}.patch_embedding.weight",
            (e, v.num_channels, v.patch_size, v.patch_size),
            "vision.patch_embed",
            M,
            part=p,
        ),
        Tensor(f"{emb}.patch_embedding.bias", (e,), "vision.patch_embed", B, part=p),
        Tensor(f"{emb}.position_embedding.weight", (positions, e), "vision.patch_embed", L_, part=p),
    ]
    blk = f"{pv}.encoder.layers.*"
    for norm in ("layer_norm1", "layer_norm2"):
        t.append(Tensor(f"{blk}.{norm}.weight", (e,), "vision.blocks", N, L, part=p))
        t.append(Tensor(f"{blk}.{norm}.bias", (e,), "vision.blocks", N, L, part=p))
    for name, d_in, d_out in (
        ("self_attn.q_proj", e, e),
        ("self_attn.k_proj", e, e),
        ("self_attn.v_proj", e, e),
        ("self_attn.out_proj", e, e),
        ("mlp.fc1", e, f),
        ("mlp.fc2", f, e),
    ):
        t.append(Tensor(f"{blk}.{name}.weight", (d_out, d_in), "vision.blocks", M, L, part=p))
        t.append(Tensor(f"{blk}.{name}.bias", (d_out,), "vision.blocks", B, L, part=p))
    t.append(Tensor(f"{pv}.post_layernorm.weight", (e,), "vision.blocks", N, part=p))
    t.append(Tensor(f"{pv}.post_layernorm.bias", (e,), "vision.blocks", N, part=p))
    t.append(Tensor("multi_modal_projector.mm_soft_emb_norm.weight", (e,), "vision.merger", N, part=p))
    t.append(Tensor("multi_modal_projector.mm_input_projection_weight", (e, d_text), "vision.merger", M, part=p))
    return t


def _llama4_vision(v: Llama4Vision, d_text: int) -> list[Tensor]:
    """Llama 4 vision encoder + adapter + projector (transformers models/llama4/modeling_llama4.py
    Llama4VisionModel, Llama4VisionPixelShuffleMLP, Llama4MultiModalProjector)."""
    e, L, f = v.hidden_size, v.num_hidden_layers, v.intermediate_size
    p, vm = Part.VISION, "vision_model"
    positions = (v.image_size // v.patch_size) ** 2 + 1  # + the class token
    t = [
        Tensor(
            f"{vm}.patch_embedding.linear.weight",
            (e, v.num_channels * v.patch_size**2),
            "vision.patch_embed",
            M,
            part=p,
        ),
        Tensor(f"{vm}.class_embedding", (e,), "vision.patch_embed", O, part=p),
        Tensor(f"{vm}.positional_embedding_vlm", (positions, e), "vision.patch_embed", L_, part=p),
    ]
    for norm in ("layernorm_pre", "layernorm_post"):
        t.append(Tensor(f"{vm}.{norm}.weight", (e,), "vision.blocks", N, part=p))
        t.append(Tensor(f"{vm}.{norm}.bias", (e,), "vision.blocks", N, part=p))
    blk = f"{vm}.model.layers.*"
    for norm in ("input_layernorm", "post_attention_layernorm"):
        t.append(Tensor(f"{blk}.{norm}.weight", (e,), "vision.blocks", N, L, part=p))
        t.append(Tensor(f"{blk}.{norm}.bias", (e,), "vision.blocks", N, L, part=p))
    for name, d_in, d_out in (
        ("self_attn.q_proj", e, e),
        ("self_attn.k_proj", e, e),
        ("self_attn.v_proj", e, e),
        ("self_attn.o_proj", e, e),
        ("mlp.fc1", e, f),
        ("mlp.fc2", f, e),
    ):
        t.append(Tensor(f"{blk}.{name}.weight", (d_out, d_in), "vision.blocks", M, L, part=p))
        t.append(Tensor(f"{blk}.{name}.bias", (d_out,), "vision.blocks", B, L, part=p))
    t.append(Tensor(f"{vm}.vision_adapter.mlp.fc1.weight", (v.projector_input_dim, f), "vision.merger", M, part=p))
    t.append(
        Tensor(
            f"{vm}.vision_adapter.mlp.fc2.weight",
            (v.projector_output_dim, v.projector_output_dim),
            "vision.merger",
            M,
            part=p,
        )
    )
    t.append(Tensor("multi_modal_projector.linear_1.weight", (d_text, v.vision_output_dim), "vision.merger", M, part=p))
    if v.multi_modal_projector_bias:
        t.append(Tensor("multi_modal_projector.linear_1.bias", (d_text,), "vision.merger", B, part=p))
    return t


def _qwen25_vision(v: Qwen25Vision) -> list[Tensor]:
    """Qwen2.5-VL vision tower (transformers modeling_qwen2_5_vl.py): patch_embed, blocks (norm1,
    attn.qkv, attn.proj, norm2, mlp gate/up/down), merger (ln_q, mlp.0, mlp.2)."""
    e, L, f = v.hidden_size, v.depth, v.intermediate_size
    p = Part.VISION
    patch = v.in_channels * v.temporal_patch_size * v.patch_size**2
    merged = e * v.spatial_merge_size**2
    t = [Tensor("visual.patch_embed.proj.weight", (e, patch), "vision.patch_embed", M, part=p)]
    for norm in ("norm1", "norm2"):
        t.append(Tensor(f"visual.blocks.*.{norm}.weight", (e,), "vision.blocks", N, L, part=p))
    for name, d_in, d_out in (
        ("attn.qkv", e, 3 * e),
        ("attn.proj", e, e),
        ("mlp.gate_proj", e, f),
        ("mlp.up_proj", e, f),
        ("mlp.down_proj", f, e),
    ):
        t.append(Tensor(f"visual.blocks.*.{name}.weight", (d_out, d_in), "vision.blocks", M, L, part=p))
        t.append(Tensor(f"visual.blocks.*.{name}.bias", (d_out,), "vision.blocks", B, L, part=p))
    t.append(Tensor("visual.merger.ln_q.weight", (e,), "vision.merger", N, part=p))
    for name, d_in, d_out in (("mlp.0", merged, merged), ("mlp.2", merged, v.out_hidden_size)):
        t.append(Tensor(f"visual.merger.{name}.weight", (d_out, d_in), "vision.merger", M, part=p))
        t.append(Tensor(f"visual.merger.{name}.bias", (d_out,), "vision.merger", B, part=p))
    return t


def _qwen3_vision(v: Qwen3Vision) -> list[Tensor]:
    """Qwen3-VL vision tower (transformers modeling_qwen3_vl.py): patch_embed (with bias), pos_embed,
    blocks (norm1, attn.qkv, attn.proj, norm2, mlp.linear_fc1/2, LayerNorms with biases), merger and
    DeepStack mergers (norm, linear_fc1, linear_fc2)."""
    e, L, f = v.hidden_size, v.depth, v.intermediate_size
    p = Part.VISION
    merged = e * v.spatial_merge_size**2
    t = [
        Tensor(
            "visual.patch_embed.proj.weight",
            (e, v.in_channels * v.temporal_patch_size * v.patch_size**2),
            "vision.patch_embed",
            M,
            part=p,
        ),
        Tensor("visual.patch_embed.proj.bias", (e,), "vision.patch_embed", B, part=p),
        Tensor("visual.pos_embed.weight", (v.num_position_embeddings, e), "vision.patch_embed", L_, part=p),
    ]
    for norm in ("norm1", "norm2"):
        t.append(Tensor(f"visual.blocks.*.{norm}.weight", (e,), "vision.blocks", N, L, part=p))
        t.append(Tensor(f"visual.blocks.*.{norm}.bias", (e,), "vision.blocks", N, L, part=p))
    for name, d_in, d_out in (
        ("attn.qkv", e, 3 * e),
        ("attn.proj", e, e),
        ("mlp.linear_fc1", e, f),
        ("mlp.linear_fc2", f, e),
    ):
        t.append(Tensor(f"visual.blocks.*.{name}.weight", (d_out, d_in), "vision.blocks", M, L, part=p))
        t.append(Tensor(f"visual.blocks.*.{name}.bias", (d_out,), "vision.blocks", B, L, part=p))
    for prefix, norm_width, n in (
        ("visual.merger", e, 1),
        ("visual.deepstack_merger_list.*", merged, v.deepstack_mergers),
    ):
        if not n:
            continue
        t.append(Tensor(f"{prefix}.norm.weight", (norm_width,), "vision.merger", N, n if n > 1 else 0, part=p))
        t.append(Tensor(f"{prefix}.norm.bias", (norm_width,), "vision.merger", N, n if n > 1 else 0, part=p))
        for name, d_in, d_out in (("linear_fc1", merged, merged), ("linear_fc2", merged, v.out_hidden_size)):
            t.append(Tensor(f"{prefix}.{name}.weight", (d_out, d_in), "vision.merger", M, n if n > 1 else 0, part=p))
            t.append(Tensor(f"{prefix}.{name}.bias", (d_out,), "vision.merger", B, n if n > 1 else 0, part=p))
    return t


def _pixtral(v: PixtralVision, d_text: int) -> list[Tensor]:
    """Pixtral encoder + Mistral 3 projector (transformers modeling_pixtral.py, modeling_mistral3.py)."""
    e, L, f, inner = v.hidden_size, v.num_hidden_layers, v.intermediate_size, v.num_attention_heads * v.head_dim
    p, vt = Part.VISION, "vision_tower"
    t = [
        Tensor(
            f"{vt}.patch_conv.weight", (e, v.num_channels, v.patch_size, v.patch_size), "vision.patch_embed", M, part=p
        ),
        Tensor(f"{vt}.ln_pre.weight", (e,), "vision.blocks", N, part=p),
    ]
    blk = f"{vt}.transformer.layers.*"
    for norm in ("attention_norm", "ffn_norm"):
        t.append(Tensor(f"{blk}.{norm}.weight", (e,), "vision.blocks", N, L, part=p))
    for name, d_in, d_out in (
        ("attention.q_proj", e, inner),
        ("attention.k_proj", e, inner),
        ("attention.v_proj", e, inner),
        ("attention.o_proj", inner, e),
        ("feed_forward.gate_proj", e, f),
        ("feed_forward.up_proj", e, f),
        ("feed_forward.down_proj", f, e),
    ):
        t.append(Tensor(f"{blk}.{name}.weight", (d_out, d_in), "vision.blocks", M, L, part=p))
    mp, b = "multi_modal_projector", v.multimodal_projector_bias
    t.append(Tensor(f"{mp}.norm.weight", (e,), "vision.merger", N, part=p))
    t.append(
        Tensor(f"{mp}.patch_merger.merging_layer.weight", (e, e * v.spatial_merge_size**2), "vision.merger", M, part=p)
    )
    for name, d_in, d_out in (("linear_1", e, d_text), ("linear_2", d_text, d_text)):
        t.append(Tensor(f"{mp}.{name}.weight", (d_out, d_in), "vision.merger", M, part=p))
        if b:
            t.append(Tensor(f"{mp}.{name}.bias", (d_out,), "vision.merger", B, part=p))
    return t


def _moonvit(v: MoonVitVision, d_text: int) -> list[Tensor]:
    """MoonViT + Kimi-K2.5 projector (transformers models/kimi_k25/modeling_kimi_k25.py). Names as
    in the Kimi-K2.5 checkpoint (q/k/v fused in ``wqkv``, the same elements)."""
    e, L, f = v.hidden_size, v.num_hidden_layers, v.intermediate_size
    p, vt, blk = Part.VISION, "vision_tower", "vision_tower.encoder.blocks.*"
    t = [
        Tensor(
            f"{vt}.patch_embed.proj.weight",
            (e, v.num_channels, v.patch_size, v.patch_size),
            "vision.patch_embed",
            M,
            part=p,
        ),
        Tensor(f"{vt}.patch_embed.proj.bias", (e,), "vision.patch_embed", B, part=p),
        Tensor(
            f"{vt}.patch_embed.pos_emb.weight", (v.pos_emb_height, v.pos_emb_width, e), "vision.patch_embed", L_, part=p
        ),
    ]
    for norm in ("norm0", "norm1"):
        t.append(Tensor(f"{blk}.{norm}.weight", (e,), "vision.blocks", N, L, part=p))
        t.append(Tensor(f"{blk}.{norm}.bias", (e,), "vision.blocks", N, L, part=p))
    for name, d_in, d_out in (("wqkv", e, 3 * e), ("wo", e, e), ("mlp.fc0", e, f), ("mlp.fc1", f, e)):
        t.append(Tensor(f"{blk}.{name}.weight", (d_out, d_in), "vision.blocks", M, L, part=p))
        t.append(Tensor(f"{blk}.{name}.bias", (d_out,), "vision.blocks", B, L, part=p))
    t.append(Tensor(f"{vt}.encoder.final_layernorm.weight", (e,), "vision.blocks", N, part=p))
    t.append(Tensor(f"{vt}.encoder.final_layernorm.bias", (e,), "vision.blocks", N, part=p))
    merged = e * v.merge_patches
    t.append(Tensor("mm_projector.pre_norm.weight", (e,), "vision.merger", N, part=p))
    t.append(Tensor("mm_projector.pre_norm.bias", (e,), "vision.merger", N, part=p))
    for name, d_out in (("proj.0", merged), ("proj.2", d_text)):
        t.append(Tensor(f"mm_projector.{name}.weight", (d_out, merged), "vision.merger", M, part=p))
        t.append(Tensor(f"mm_projector.{name}.bias", (d_out,), "vision.merger", B, part=p))
    return t


def _glm4v_vision(v: Glm4vVision) -> list[Tensor]:
    """GLM-4V vision tower and merger (transformers models/glm4v/modeling_glm4v.py Glm4vVisionModel)."""
    e, o, f, L, m = v.hidden_size, v.out_hidden_size, v.intermediate_size, v.depth, v.spatial_merge_size
    p, vt, blk = Part.VISION, "visual", "visual.blocks.*"
    patch = (e, v.in_channels, v.temporal_patch_size, v.patch_size, v.patch_size)
    t = [
        Tensor(
            f"{vt}.embeddings.position_embedding.weight",
            ((v.image_size // v.patch_size) ** 2, e),
            "vision.patch_embed",
            L_,
            part=p,
        ),
        Tensor(f"{vt}.patch_embed.proj.weight", patch, "vision.patch_embed", M, part=p),
        Tensor(f"{vt}.patch_embed.proj.bias", (e,), "vision.patch_embed", B, part=p),
    ]
    for norm in ("norm1", "norm2"):
        t.append(Tensor(f"{blk}.{norm}.weight", (e,), "vision.blocks", N, L, part=p))
    t.append(Tensor(f"{blk}.attn.qkv.weight", (3 * e, e), "vision.blocks", M, L, part=p))
    if v.attention_bias:
        t.append(Tensor(f"{blk}.attn.qkv.bias", (3 * e,), "vision.blocks", B, L, part=p))
    for name, d_in, d_out in (
        ("attn.proj", e, e),
        ("mlp.gate_proj", e, o),
        ("mlp.up_proj", e, o),
        ("mlp.down_proj", o, e),
    ):
        t.append(Tensor(f"{blk}.{name}.weight", (d_out, d_in), "vision.blocks", M, L, part=p))
    for norm in ("post_conv_layernorm", "post_layernorm"):
        t.append(Tensor(f"{vt}.{norm}.weight", (e,), "vision.blocks", N, part=p))
    t.append(Tensor(f"{vt}.downsample.weight", (o, e, m, m), "vision.merger", M, part=p))
    t.append(Tensor(f"{vt}.downsample.bias", (o,), "vision.merger", B, part=p))
    t.append(Tensor(f"{vt}.merger.post_projection_norm.weight", (o,), "vision.merger", N, part=p))
    t.append(Tensor(f"{vt}.merger.post_projection_norm.bias", (o,), "vision.merger", N, part=p))
    for name, d_in, d_out in (("proj", o, o), ("gate_proj", o, f), ("up_proj", o, f), ("down_proj", f, o)):
        t.append(Tensor(f"{vt}.merger.{name}.weight", (d_out, d_in), "vision.merger", M, part=p))
    return t


def _gemma4_vision(v: Gemma4Vision, d_text: int) -> list[Tensor]:
    """Gemma 4 vision encoder + embedder (transformers models/gemma4/modeling_gemma4.py
    Gemma4VisionModel, Gemma4MultimodalEmbedder; see :class:`~llm_cost.specs.schema.Gemma4Vision`).
    Names as in the checkpoint (``model.vision_tower``, ``model.embed_vision``)."""
    e, L, f = v.hidden_size, v.num_hidden_layers, v.intermediate_size
    q, kv = v.num_attention_heads * v.head_dim, v.num_key_value_heads * v.head_dim
    p, vt = Part.VISION, "vision_tower"
    t = [
        Tensor(f"{vt}.patch_embedder.input_proj.weight", (e, 3 * v.patch_size**2), "vision.patch_embed", M, part=p),
        Tensor(
            f"{vt}.patch_embedder.position_embedding_table",
            (2, v.position_embedding_size, e),
            "vision.patch_embed",
            L_,
            part=p,
        ),
    ]
    blk = f"{vt}.encoder.layers.*"
    for norm in (
        "input_layernorm",
        "post_attention_layernorm",
        "pre_feedforward_layernorm",
        "post_feedforward_layernorm",
    ):
        t.append(Tensor(f"{blk}.{norm}.weight", (e,), "vision.blocks", N, L, part=p))
    for norm in ("q_norm", "k_norm"):
        t.append(Tensor(f"{blk}.self_attn.{norm}.weight", (v.head_dim,), "vision.blocks", N, L, part=p))
    linears = (
        ("self_attn.q_proj", e, q),
        ("self_attn.k_proj", e, kv),
        ("self_attn.v_proj", e, kv),
        ("self_attn.o_proj", q, e),
        ("mlp.gate_proj", e, f),
        ("mlp.up_proj", e, f),
        ("mlp.down_proj", f, e),
    )
    for name, d_in, d_out in linears:
        t.append(Tensor(f"{blk}.{name}.linear.weight", (d_out, d_in), "vision.blocks", M, L, part=p))
        if v.use_clipped_linears:  # input_min, input_max, output_min, output_max: scalar buffers, stored
            for bound in ("input_min", "input_max", "output_min", "output_max"):
                t.append(Tensor(f"{blk}.{name}.{bound}", (), "vision.blocks", O, L, part=p))
    if v.standardize:  # Gemma4VisionModel's std_bias / std_scale buffers, stored
        t += [Tensor(f"{vt}.{n}", (e,), "vision.blocks", O, part=p) for n in ("std_bias", "std_scale")]
    t.append(Tensor("embed_vision.embedding_projection.weight", (d_text, e), "vision.merger", M, part=p))
    return t


def _minimax_m3_vision(v: MiniMaxM3Vision, d_text: int) -> list[Tensor]:
    """MiniMax-M3 vision tower, multi_modal_projector and patch_merge (transformers
    models/minimax_m3_vl/modeling_minimax_m3_vl.py; see :class:`~llm_cost.specs.schema.MiniMaxM3Vision`).
    Names as in the checkpoint (``model.vision_tower.vision_model``)."""
    e, f, L, P, m = (
        v.hidden_size,
        v.intermediate_size,
        v.num_hidden_layers,
        v.projector_hidden_size,
        v.spatial_merge_size,
    )
    p, vm = Part.VISION, "vision_tower.vision_model"
    patch = (e, v.num_channels, v.temporal_patch_size, v.patch_size, v.patch_size)
    t = [Tensor(f"{vm}.embeddings.patch_embedding.weight", patch, "vision.patch_embed", M, part=p)]  # bias=False
    t += [Tensor(f"{vm}.pre_layrnorm.{n}", (e,), "vision.patch_embed", N, part=p) for n in ("weight", "bias")]
    blk = f"{vm}.encoder.layers.*"
    for norm in ("layer_norm1", "layer_norm2"):
        t += [Tensor(f"{blk}.{norm}.{n}", (e,), "vision.blocks", N, L, part=p) for n in ("weight", "bias")]
    for name, d_in, d_out in (
        ("self_attn.q_proj", e, e),
        ("self_attn.k_proj", e, e),
        ("self_attn.v_proj", e, e),
        ("self_attn.out_proj", e, e),
        ("mlp.fc1", e, f),
        ("mlp.fc2", f, e),
    ):
        t.append(Tensor(f"{blk}.{name}.weight", (d_out, d_in), "vision.blocks", M, L, part=p))
        t.append(Tensor(f"{blk}.{name}.bias", (d_out,), "vision.blocks", B, L, part=p))
    for prefix, d_in in (("multi_modal_projector", e), ("patch_merge", d_text * m * m)):
        for name, a, b in (("linear_1", d_in, P), ("linear_2", P, d_text)):
            t.append(Tensor(f"{prefix}.{name}.weight", (b, a), "vision.merger", M, part=p))
            t.append(Tensor(f"{prefix}.{name}.bias", (b,), "vision.merger", B, part=p))
    return t


def _gemma4_audio(a: Gemma4Audio, d_text: int) -> list[Tensor]:
    """Gemma 4 audio encoder + embedder (transformers models/gemma4/modeling_gemma4.py
    Gemma4AudioModel, Gemma4MultimodalEmbedder; see :class:`~llm_cost.specs.schema.Gemma4Audio`).
    Names as in the checkpoint (``model.audio_tower``, ``model.embed_audio``)."""
    e, L, o, (c0, c1) = a.hidden_size, a.num_hidden_layers, a.output_proj_dims, a.subsampling_conv_channels
    p, at = Part.AUDIO, "audio_tower"
    sub, blocks, proj = TensorGroup.AUDIO_SUBSAMPLE, TensorGroup.AUDIO_BLOCKS, TensorGroup.AUDIO_PROJECTION
    ssc = f"{at}.subsample_conv_projection"
    t = [
        # Gemma4AudioSubSampleConvProjectionLayer: Conv2d(bias=False), LayerNorm(bias=False)
        Tensor(f"{ssc}.layer0.conv.weight", (c0, 1, 3, 3), sub, M, part=p),
        Tensor(f"{ssc}.layer0.norm.weight", (c0,), sub, N, part=p),
        Tensor(f"{ssc}.layer1.conv.weight", (c1, c0, 3, 3), sub, M, part=p),
        Tensor(f"{ssc}.layer1.norm.weight", (c1,), sub, N, part=p),
        Tensor(f"{ssc}.input_proj_linear.weight", (e, (c0 // 4) * c1), sub, M, part=p),
    ]
    blk = f"{at}.layers.*"
    clipped = (
        ("feed_forward1.ffw_layer_1", e, 4 * e),
        ("feed_forward1.ffw_layer_2", 4 * e, e),
        ("feed_forward2.ffw_layer_1", e, 4 * e),
        ("feed_forward2.ffw_layer_2", 4 * e, e),
        ("self_attn.q_proj", e, e),
        ("self_attn.k_proj", e, e),
        ("self_attn.v_proj", e, e),
        ("self_attn.post", e, e),
        ("lconv1d.linear_start", e, 2 * e),
        ("lconv1d.linear_end", e, e),
    )
    for name, d_in, d_out in clipped:  # Gemma4ClippableLinear: .linear.weight, and four bounds when clipped
        t.append(Tensor(f"{blk}.{name}.linear.weight", (d_out, d_in), blocks, M, L, part=p))
        if a.use_clipped_linears:
            for bound in ("input_min", "input_max", "output_min", "output_max"):
                t.append(Tensor(f"{blk}.{name}.{bound}", (), blocks, O, L, part=p))
    t.append(Tensor(f"{blk}.self_attn.relative_k_proj.weight", (e, e), blocks, M, L, part=p))  # a plain nn.Linear
    t.append(Tensor(f"{blk}.self_attn.per_dim_scale", (a.head_dim,), blocks, O, L, part=p))
    t.append(Tensor(f"{blk}.lconv1d.depthwise_conv1d.weight", (e, 1, a.conv_kernel_size), blocks, O, L, part=p))
    for norm in (
        "feed_forward1.pre_layer_norm",
        "feed_forward1.post_layer_norm",
        "feed_forward2.pre_layer_norm",
        "feed_forward2.post_layer_norm",
        "lconv1d.pre_layer_norm",
        "lconv1d.conv_norm",
        "norm_pre_attn",
        "norm_post_attn",
        "norm_out",
    ):
        t.append(Tensor(f"{blk}.{norm}.weight", (e,), blocks, N, L, part=p))
    t.append(Tensor(f"{at}.output_proj.weight", (o, e), proj, M, part=p))
    t.append(Tensor(f"{at}.output_proj.bias", (o,), proj, B, part=p))  # nn.Linear(..., bias=True)
    t.append(Tensor("embed_audio.embedding_projection.weight", (d_text, o), proj, M, part=p))
    return t


def _vision(v: VisionTower, d_text: int) -> list[Tensor]:
    """The tensors of a vision tower and its projector into the decoder's width ``d_text``."""
    if isinstance(v, Qwen2Vision):
        return _qwen2_vision(v)
    if isinstance(v, Qwen25Vision):
        return _qwen25_vision(v)
    if isinstance(v, Qwen3Vision):
        return _qwen3_vision(v)
    if isinstance(v, SiglipVision):
        return _siglip(v, d_text)
    if isinstance(v, Llama4Vision):
        return _llama4_vision(v, d_text)
    if isinstance(v, MoonVitVision):
        return _moonvit(v, d_text)
    if isinstance(v, Glm4vVision):
        return _glm4v_vision(v)
    if isinstance(v, Gemma4Vision):
        return _gemma4_vision(v, d_text)
    if isinstance(v, MiniMaxM3Vision):
        return _minimax_m3_vision(v, d_text)
    return _pixtral(v, d_text)


def _mtp(spec: ModelSpec) -> list[Tensor]:
    """DeepSeek-V3 MTP modules (seed 003 §07; DeepSeek-V3 report §2.2): per module enorm, hnorm,
    eh_proj [2d -> d], one decoder block (MoE feed-forward) and the shared head's norm; a
    two-block module (Nemotron-H's *E, transformers modeling_nemotron_h.py) has an attention block
    and a MoE block, each with its norms. ``block_mlp`` and ``block_layer_type`` override the
    block's feed-forward and attention (MiMo-V2-Flash: a dense MLP and sliding attention; its
    final_layernorm is the head norm here). With ``checkpoint_stores_shared`` the checkpoint also
    stores a copy of the embedding and of the LM head with each module."""
    mtp = spec.mtp
    assert mtp is not None
    D, d, V = mtp.num_nextn_predict_layers, spec.hidden_size, spec.vocab_size
    mlp_kind = MlpType.MOE if spec.moe is not None else MlpType.DENSE
    if mtp.block_mlp is not None:
        mlp_kind = MlpType(mtp.block_mlp)
    sliding = mtp.block_layer_type == LayerType.SLIDING_ATTENTION.value
    t = [Tensor(f"mtp.*.{n}.weight", (d,), "mtp", N, D, part=Part.MTP) for n in ("enorm", "hnorm")]
    t.append(Tensor("mtp.*.eh_proj.weight", (d, 2 * d), "mtp", M, D, part=Part.MTP))
    t.append(Tensor("mtp.*.shared_head.norm.weight", (d,), "mtp", N, D, part=Part.MTP))
    block = _blocks(spec, {LayerType.FULL_ATTENTION: D}, {mlp_kind: D}, Part.MTP, sliding_mtp=sliding)
    for b in range(2, mtp.blocks + 1):  # Nemotron-H's *E module: the MoE block's own norms
        for i in range(spec.norms_per_layer):
            block += _norm(f"layers.*.block{b}.norm{i + 1}", d, spec, D, Part.MTP)
    t += [
        Tensor(
            b.name.replace("layers.*", "mtp.*.block"),
            b.shape,
            "mtp",
            b.kind,
            b.layers,
            b.copies,
            b.active,
            part=Part.MTP,
            shard=b.shard,
        )
        for b in block
    ]
    if mtp.checkpoint_stores_shared:
        t.append(Tensor("mtp.*.embed_tokens.weight", (V, d), "mtp", L_, D, part=Part.MTP_COPY, shard=ShardRule.VOCAB))
        t.append(
            Tensor("mtp.*.shared_head.head.weight", (V, d), "mtp", M, D, part=Part.MTP_COPY, shard=ShardRule.VOCAB)
        )
    return t


@lru_cache(maxsize=64)
def build(spec: ModelSpec) -> Structure:
    """Expand ``spec`` into its weight tensors (a few dozen tensors). Pure: the structures of the
    last specs are kept (a spec is frozen and hashed by its fields, so its structure cannot
    change), as sweeps and searches ask for the same spec's tensors thousands of times."""
    d, V = spec.hidden_size, spec.vocab_size
    counts = layer_counts(spec)
    attention_counts, mlp_counts = counts.mixers, counts.mlps
    t = [Tensor("embed_tokens.weight", (V, d), "embedding", L_, shard=ShardRule.VOCAB)]
    if spec.position_embedding == "learned":
        t.append(Tensor("embed_positions.weight", (spec.max_position_embeddings, d), "position_embedding", L_))
    if spec.per_layer_input_size:  # Gemma4TextModel's per-layer embeddings (PLE)
        assert spec.per_layer_vocab_size is not None
        Lp = spec.num_hidden_layers * spec.per_layer_input_size
        g = "per_layer_embedding"
        t.append(Tensor("embed_tokens_per_layer.weight", (spec.per_layer_vocab_size, Lp), g, L_, shard=ShardRule.VOCAB))
        t += _linear("per_layer_model_projection", d, Lp, g, 0, False, Part.DECODER, LayerKind.ANY, REP)
        t.append(Tensor("per_layer_projection_norm.weight", (spec.per_layer_input_size,), g, N))
    t += _blocks(spec, attention_counts, mlp_counts, Part.DECODER)
    t += _norm("norm", d, spec, 0, Part.DECODER, "final_norm")
    t.append(Tensor("lm_head.weight", (V, d), "lm_head", M, stored=not spec.tie_word_embeddings, shard=ShardRule.VOCAB))
    if spec.lm_head_bias:
        t.append(Tensor("lm_head.bias", (V,), "biases", B, shard=ShardRule.VOCAB))
    if spec.vision is not None:
        t += _vision(spec.vision, d)
    if spec.audio is not None:
        t += _gemma4_audio(spec.audio, d)
    if spec.mtp is not None:
        t += _mtp(spec)
    return Structure(spec, tuple(t))
