"""A step is a list of operators: what each GPU runs in one forward pass (seed 003 §02-§06).

:func:`build_step` is the one place that turns (model, layout, sequences, dtypes) into the
operators of a step; every FLOP, byte and (through :mod:`llm_cost.perf`) every time of a
decode step, a prefill, a chunked-prefill step, a speculative verification or a training pass
is a sum over its result.

A step runs groups of sequences (:class:`SeqGroup`): ``count`` sequences that each add
``new_tokens`` tokens after ``cached`` tokens already in the cache. A decode step is one group
with one new token; a prefill has ``cached = 0``; a mixed step (chunked prefill, as vLLM and
TensorRT-LLM run continuous batching) holds a prefill chunk beside decoding sequences.

Operators, per GPU (the layout's TP, EP and PP shares applied; one DP replica):

* GEMM, one per weight matrix: M = tokens multiplied (for the LM head: logits rows, one per
  sequence with ``Logits.LAST``, every position with ``Logits.ALL``; for a routed expert: rows
  per expert that runs), N x K = the GPU's share of the matrix. FLOPs = 2 M N K per layer
  (2 per multiply-add); weights read = the share at the weight format's bits (routed experts:
  the expected distinct experts hit, E(1 - (1 - k/E)^T), an expectation).
* attention, per softmax layer kind: QK^T = 2 n_q d_qk and AV = 2 n_q d_v per (query, key)
  pair; causal pairs sum_{i=1..s} (cached + i) per sequence (``AttentionMask.FULL``: s x
  (cached + s)); sliding layers see at most W keys. Reads the cached K/V of each sequence
  (sliding layers at most W tokens), writes the new tokens' K/V. MLA attends on the latent in
  the absorbed form (d_qk = kv_lora_rank + qk_rope, d_v = kv_lora_rank; DeepSeek-V2 §2.1.2).
  Chunked layers (Llama 4) see the earlier tokens of their own C-token chunk. DeepSeek Sparse
  Attention (DeepSeek-V3.2, GLM-5): the attention sees at most index_topk keys per query and reads
  only those, and a second operator, the lightning indexer, scores every causal (query, key) pair
  (2 H_i (D_i + 1) FLOPs each) and reads every cached indexer key.
* recurrence (Gated DeltaNet; Mamba-2: 6 H P N + 2 conv_dim x kernel per token; LFM2's short
  convolution: 2 d x kernel + 2 d per token): about 6 n_v d_k d_v + 2 conv_dim x kernel FLOPs per token;
  reads the fixed recurrent and conv state of each sequence (updated in place: the write is not
  counted).
* elementwise: the norm scales, biases and other vectors, read once.
* embedding: one row per new token read from an untied table (none when tied: the LM head
  reads the whole matrix anyway); with ``WeightBytes.RESIDENT`` (the source documents'
  convention) every stored weight is read once instead, so this operator takes the rest of the
  tables, and a second one any vision tower.
* elementwise kernels (``elementwise=True``, a training step's): the norms, the two residual adds,
  RoPE on the queries and keys, the MLP activation (dense, shared and routed experts), and for MoE
  the router's softmax/top-k and the permutation of the k token copies into expert order and back;
  the cross-entropy over every logit row on the last stage; under FP8 compute the casts of the
  decoder GEMMs' inputs. Each is memory-bound: its BF16 reads and writes are its activation
  bytes (below), no FLOPs. With ``sequence_parallel`` (Megatron's SP, which training with TP runs)
  the ops outside the TP-split GEMMs see 1/TP of the tokens.
* collectives: TP ring all-reduce of the hidden state after attention and after each MLP (and
  after each MoE layer without EP), EP all-to-all dispatch and combine per MoE layer, PP
  send/receive of the hidden state between stages; bytes per GPU per call.

Each operator has a ``kind`` (how a time model times it) and a ``role`` (:class:`~llm_cost.core.types.OpRole`: which
operator it is, what code looks it up by); its ``name`` is for display only.

Activation bytes (GEMM inputs and outputs at 16 bits) are recorded on each operator but are
not part of ``bytes``, the figure a Roofline bound divides by the bandwidth (the documents'
convention: weights and KV only).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from fractions import Fraction
from functools import lru_cache
from typing import Literal

from llm_cost.core.choices import AttentionMask, Logits, MLAForm, WeightBytes
from llm_cost.core.errors import InputError
from llm_cost.core.records import record
from llm_cost.core.types import (
    Dtype,
    LayerKind,
    LayerType,
    MlpType,
    OpKind,
    OpRole,
    Part,
    Phase,
    ShardRule,
    TensorGroup,
    TensorKind,
)
from llm_cost.core.units import Number, exact, quotient
from llm_cost.model.formats import tensor_bits, weight_bits_of
from llm_cost.model.kvshape import (
    indexer_key_bytes,
    indexer_layers,
    linear_state_elements,
    mamba_state_elements,
    short_conv_state_elements,
    sparse_indexer,
)
from llm_cost.model.layers import LayerCounts, layer_counts
from llm_cost.model.layout import (
    ONE_GPU,
    Layout,
    kv_elements_per_token_on_gpu,
    kv_heads_per_gpu,
    stage_layers,
    stage_range,
    tensor_layers_in_stage,
    tensor_share,
    validate_layout,
)
from llm_cost.model.structure import Structure, Tensor, build
from llm_cost.specs.schema import GQAAttention, MLAAttention, ModelSpec
from llm_cost.workload.routing import expert_hit_fraction

__all__ = [
    "SeqGroup",
    "Collective",
    "Operator",
    "Stage",
    "Step",
    "build_step",
    "split_step",
    "StageHead",
    "decode",
    "prefill",
    "attention_pairs",
    "chunked_pairs",
    "total_of",
    "sum_of",
    "ring_all_reduce_bytes",
    "ACTIVATION_BITS",
    "ELEMENTWISE_BYTES",
    "fp8_gemm",
]

#: Bits of an activation element (the hidden state between operators, collectives' payload).
ACTIVATION_BITS = 16


@record
class SeqGroup:
    """``count`` sequences that each add ``new_tokens`` tokens after ``cached`` cached ones."""

    count: int
    new_tokens: int
    cached: int

    @property
    def tokens(self) -> int:
        """New tokens of the group."""
        return self.count * self.new_tokens


def decode(batch: int, context: int) -> list[SeqGroup]:
    """One decode step: ``batch`` sequences each add one token after ``context`` cached."""
    return [SeqGroup(batch, 1, context)]


def prefill(batch: int, seq: int) -> list[SeqGroup]:
    """A prefill of ``batch`` prompts of ``seq`` tokens."""
    return [SeqGroup(batch, seq, 0)]


@record
class Collective:
    """A communication operator's payload: ``algorithm`` over ``ranks`` GPUs, ``bytes_per_call``
    sent by one GPU each time it runs."""

    algorithm: Literal["ring_all_reduce", "all_to_all", "send_recv"]
    ranks: int
    bytes_per_call: Number


@record
class Operator:
    """One operator of a step on one GPU, repeated over ``layers`` layers: ``name`` to show it,
    ``kind`` how it is timed, ``role`` which operator it is (what code asks for), ``group`` the
    tensor group of a GEMM's matrix.

    Figures are totals over the repeats. Shape per repeat: GEMM ``m`` x ``k`` @ ``k`` x ``n``
    (``m`` tokens, or rows per routed expert); attention ``batch`` sequences of ``heads`` query
    and ``kv_heads`` K/V heads over ``keys`` keys per new token on average, ``queries`` new tokens
    per sequence on average, ``head_dim`` the wider of the score (d_qk) and value (d_v) head widths
    (what a decode kernel's split-KV rule reads: :mod:`llm_cost.perf.kernels`).
    """

    name: str
    kind: OpKind
    role: OpRole
    group: str
    layers: int
    flops: Number
    weight_bytes: Number = 0
    kv_read_bytes: Number = 0
    kv_write_bytes: Number = 0
    activation_bytes: Number = 0
    m: Number | None = None
    n: int | None = None
    k: int | None = None
    batch: int | None = None
    heads: int | None = None
    kv_heads: int | None = None
    keys: Number | None = None
    collective: Collective | None = None
    queries: Number | None = None
    head_dim: int | None = None
    #: routed experts under expert parallelism: the EP ranks whose experts share the step's routed
    #: rows (the slowest of them sets the layer: :func:`~llm_cost.workload.routing.hottest_rank_factor`)
    ep_ranks: int = 1

    @property
    def bytes(self) -> Number:
        """Bytes a Roofline bound counts: weights and KV read and written (not activations)."""
        return self.weight_bytes + self.kv_read_bytes + self.kv_write_bytes

    @property
    def comm_bytes(self) -> Number:
        """Bytes one GPU sends over its links in this operator (all repeats)."""
        return self.collective.bytes_per_call * self.layers if self.collective else 0


@record
class Stage:
    """The operators one GPU of one pipeline stage runs."""

    index: int
    layers: int
    ops: tuple[Operator, ...]


def total_of(ops: Sequence[Operator], attr: str) -> Number:
    """Sum of one figure over ``ops``: exact (int or Fraction) unless a term is an expectation
    (a float, e.g. the expected routed experts), which makes the sum a float."""
    return sum_of([getattr(o, attr) for o in ops])


def sum_of(values: Sequence[Number]) -> Number:
    """Sum of figures, in order: exact (int or Fraction) unless a term is a float (an
    expectation), which makes the sum a float."""
    if set(map(type, values)) <= {int}:
        return sum(values)
    if any(isinstance(v, float) for v in values):
        return float(sum(values))
    return exact(sum((v for v in values if not isinstance(v, float)), Fraction(0)))


@record
class Step:
    """One step of ``groups`` under ``layout``: the operators of each pipeline stage's GPU.

    Totals sum over the stages (one GPU per stage of one DP replica): a token passes through every
    stage, so a decode step's latency is the sum of the stages' times.
    """

    model: str
    phase: Phase
    groups: tuple[SeqGroup, ...]
    layout: Layout
    compute_dtype: Dtype
    weight_bits: Fraction
    kv_bits: int
    logits: Logits
    attention: AttentionMask
    mla_form: MLAForm | None
    weight_bytes_convention: WeightBytes
    stages: tuple[Stage, ...]

    @property
    def ops(self) -> list[Operator]:
        """Every operator of every stage, stage by stage."""
        return [op for stage in self.stages for op in stage.ops]

    @property
    def tokens(self) -> int:
        """New tokens in flight in the step (one DP replica)."""
        return sum(g.tokens for g in self.groups)

    @property
    def sequences(self) -> int:
        """Sequences in the step (one DP replica)."""
        return sum(g.count for g in self.groups)

    def total(self, attr: str, kinds: tuple[OpKind, ...] | None = None) -> Number:
        """Sum of an operator figure (``flops``, ``weight_bytes``, ``bytes`` ...) over the
        operators of ``kinds`` (all by default); exact unless a term is an expectation."""
        return total_of([o for o in self.ops if kinds is None or o.kind in kinds], attr)

    @property
    def flops(self) -> Number:
        """FLOPs of the step on one GPU per stage, summed over the stages."""
        return self.total("flops")

    @property
    def bytes(self) -> Number:
        """Weight and KV bytes the step reads and writes (the Roofline's bytes)."""
        return self.total("bytes")


def attention_pairs(new_tokens: int, cached: int, causal: bool, window: int | None = None) -> int:
    """(query, key) pairs of one sequence: each new token i = 1..s sees cached + i keys (causal),
    or all cached + s keys (full); at most ``window`` keys on a sliding layer. Exact integer."""
    s, c = new_tokens, cached
    if not causal:
        keys = c + s
        return s * (min(keys, window) if window else keys)
    if not window or c + s <= window:
        return s * c + s * (s + 1) // 2
    # token i sees min(c + i, W) keys: the first (W - c) tokens grow, the rest are capped
    grow = max(0, min(s, window - c))
    return grow * c + grow * (grow + 1) // 2 + (s - grow) * window


def chunked_pairs(new_tokens: int, cached: int, causal: bool, chunk: int) -> int:
    """(query, key) pairs of one sequence on a chunked-attention layer (Llama 4): the token at
    position p (1-based) sees the ((p - 1) mod C) + 1 tokens of its chunk up to itself (causal);
    ``causal=False`` gives every new token its whole chunk, min(cached + s, C), an upper bound."""
    s, c = new_tokens, cached
    if not causal:
        return s * min(c + s, chunk)

    def upto(n: int) -> int:  # keys seen by positions 1..n
        q, r = divmod(n, chunk)
        return q * chunk * (chunk + 1) // 2 + r * (r + 1) // 2

    return upto(c + s) - upto(c)


def _flop_share(t: Tensor, spec: ModelSpec, layout: Layout) -> Fraction:
    """The fraction of a matmul's FLOPs one GPU does: its weight share, except that EP ranks split
    the routed experts' work (redundant copies add memory, not FLOPs)."""
    if t.shard == ShardRule.EXPERT and layout.ep > 1:
        return Fraction(1, layout.ep)
    return tensor_share(spec, t, layout)


def _gemm_dims(t: Tensor, spec: ModelSpec, layout: Layout) -> tuple[int, int]:
    """(N, K) of one GPU's share of a [d_out, d_in] matrix."""
    d_out, d_in = t.shape[0], math.prod(t.shape[1:])
    share = tensor_share(spec, t, layout) if t.shard != ShardRule.EXPERT else Fraction(1)
    if t.shard in (ShardRule.ROW,):
        return d_out, int(d_in * share)
    return int(d_out * share), d_in


def _times(c: int | Fraction, x: int) -> int | Fraction:
    """``c`` x ``x`` exactly, an int when whole (a figure per token or row times their count)."""
    return c * x if type(c) is int else exact(c * x)


def _eighths(bits: int) -> int | Fraction:
    """``bits`` / 8 bytes exactly, an int when whole."""
    whole, rest = divmod(bits, 8)
    return Fraction(bits, 8) if rest else whole


def ring_all_reduce_bytes(hidden_size: int, tp: int, bits: int = ACTIVATION_BITS) -> int | Fraction:
    """Bytes one GPU sends in a ring all-reduce of one token's hidden state over ``tp`` GPUs:
    2 (TP - 1) / TP x d elements at ``bits`` (reduce-scatter then all-gather; Patarasuk and Yuan
    2009, NCCL's ring). Exact; 0 at TP 1."""
    return exact(Fraction(2 * (tp - 1), tp) * hidden_size * bits / 8)


@record
class _Gemm:
    """What one weight matrix's GEMM on one stage's GPU costs per row multiplied (all its layers
    there): FLOPs per row, activation bits per row; its weight bytes are fixed."""

    name: str
    role: OpRole  # LM_HEAD multiplies the logits rows; ROUTED_EXPERTS reads weights at the expected hit fraction
    group: str
    layers: int
    flops_per_row: int | Fraction
    weight_bytes: int | Fraction  # this GPU's share of the matrix, all layers, every copy
    activation_bits_per_row: int  # input and output rows at ACTIVATION_BITS
    n: int
    k: int
    #: its input is its own (a row-parallel matrix, a down projection) rather than the input it shares
    #: with the other matrices of its group and width (q/k/v, gate/up: one FP8 cast serves them)
    own_input: bool = False


#: The attention operator of each softmax layer type, and its display name.
_SOFTMAX_OPS = {
    LayerType.FULL_ATTENTION: (OpRole.FULL_ATTENTION, "attention"),
    LayerType.SLIDING_ATTENTION: (OpRole.SLIDING_ATTENTION, "sliding attention"),
    LayerType.CHUNKED_ATTENTION: (OpRole.CHUNKED_ATTENTION, "chunked attention"),
}


@record
class _Softmax:
    """One softmax attention kind on a stage: ``layers`` layers of ``layer_type`` that see at most
    ``cap`` keys (a sliding window) or the tokens of their ``cap``-token chunk (chunked)."""

    layer_type: LayerType
    layers: int
    cap: int | None
    #: this kind's own head width of QK^T and AV where it differs from the plan's (Gemma 4's
    #: full-attention layers)
    d_head: int | None = None
    #: layers that write their own K/V (Gemma 4's KV-shared layers only read an earlier layer's)
    writers: int | None = None
    #: the layers' lightning indexer picks their keys (DeepSeek Sparse Attention, MiniMax-M3): ``cap``
    #: is then the most keys a query keeps, and an indexer operator scores every key
    indexed: bool = False
    #: of those layers, the ones that run an indexer (GLM-5.2's shared layers reuse an earlier
    #: layer's selection: sparse attention, no indexer of their own); None: all of them
    indexers: int | None = None

    @property
    def chunked(self) -> bool:
        """Chunked attention (Llama 4): each token sees the earlier tokens of its own chunk."""
        return self.layer_type == LayerType.CHUNKED_ATTENTION


@record
class _Recurrence:
    """One recurrent mixer on a stage: ``layers`` layers of ``per_token`` FLOPs per token each,
    a fixed state of ``state_elements`` per sequence and layer, ``heads`` heads split over TP."""

    role: OpRole
    name: str
    layers: int
    per_token: int
    state_elements: int
    heads: int


@record
class _StagePlan:
    """The parts of one stage's operators that do not depend on the sequences of a step."""

    index: int
    layers: int
    gemms: tuple[_Gemm, ...]
    softmax: tuple[_Softmax, ...]
    recurrences: tuple[_Recurrence, ...]
    resident: tuple[Operator, ...]  # by the resident convention, the first stage reads the tables whole
    vectors: tuple[Operator, ...]  # the norm/bias vectors
    embedding_tables: int  # input tables read one row per token (first stage, "read" convention)
    all_layers: int  # TP all-reduces after attention: every layer of the stage
    mlp_layers: int  # TP all-reduces after the MLP
    moe_layers: int  # EP all-to-all
    dense_layers: int  # layers with a dense MLP
    softmax_layers: int  # layers with softmax attention (RoPE on their queries and keys)
    last: bool  # the last stage: the final norm, the LM head and the loss
    #: the GEMMs before the LM head (all of them on a stage without it): with the embedding rows
    #: they depend on a step only through its tokens (:func:`split_step`)
    head_gemms: int = 0


@record
class _Plan:
    """The sequence-independent part of :func:`build_step` for one (model, layout, formats):
    matrices with their shares, shapes and layer counts; a step only multiplies by its counts."""

    spec: ModelSpec
    stages: tuple[_StagePlan, ...]
    heads: int  # query heads per GPU
    kv_heads: int
    kv_elements_per_token: int  # per full-attention layer, on one GPU
    #: (elements per token per layer, K/V heads) on one GPU, by softmax layer type
    kv_by_type: dict[LayerType, tuple[int, int]]
    d_qk: int
    d_v: int
    embedding_bytes_per_row: int | Fraction
    ring_bytes_per_token: int | Fraction  # TP ring all-reduce of one token's hidden state, per GPU
    all_to_all_bytes_per_token: int | Fraction  # EP dispatch + combine, per GPU


def _gemm_role(t: Tensor, spec: ModelSpec) -> OpRole:
    """The operator a weight matrix's GEMM is."""
    if t.group == TensorGroup.LM_HEAD:
        return OpRole.LM_HEAD
    if t.shard == ShardRule.EXPERT and spec.moe is not None:
        return OpRole.ROUTED_EXPERTS
    return OpRole.MATMUL


def _gemms(spec: ModelSpec, s: Structure, layout: Layout, stage: int, bits: Fraction) -> tuple[_Gemm, ...]:
    """One GEMM per weight matrix of the decoder on this stage's GPU, per row multiplied."""
    gemms = []
    for t in s.tensors_of(Part.DECODER):
        if t.kind != TensorKind.MATMUL:
            continue
        n_layers = tensor_layers_in_stage(spec, t, layout, stage)
        if not n_layers:
            continue
        elements = t.numel * t.copies * n_layers * tensor_share(spec, t, layout)  # this GPU's copy, all layers
        weight_bits = tensor_bits(bits, t)
        n, k = _gemm_dims(t, spec, layout)
        gemms.append(
            _Gemm(
                t.name.removeprefix("layers.*."),
                _gemm_role(t, spec),
                t.group,
                n_layers,
                exact(2 * t.numel * t.active * n_layers * _flop_share(t, spec, layout)),
                exact(elements * weight_bits / 8),
                (n + k) * n_layers * ACTIVATION_BITS,
                n,
                k,
                t.shard == ShardRule.ROW or "down_proj" in t.name,
            )
        )
    return tuple(gemms)


def _attention_dims(spec: ModelSpec, mla_form: MLAForm | None) -> tuple[int, int]:
    """(d_qk, d_v) per head of the score computation."""
    att = spec.attention
    if isinstance(att, MLAAttention):
        if mla_form == MLAForm.ABSORBED:
            return att.kv_lora_rank + att.qk_rope_head_dim, att.kv_lora_rank
        return att.qk_nope_head_dim + att.qk_rope_head_dim, att.v_head_dim
    return spec.head_dim, spec.v_head_dim  # QK^T over d_head, AV over d_v (MiMo-V2-Flash: 192 and 128)


def _softmax_kinds(spec: ModelSpec, counts: LayerCounts, tp: int = 1) -> tuple[_Softmax, ...]:
    """The softmax layer kinds (full, sliding, chunked) of a stage whose layers are ``counts``; a
    model with global geometry (Gemma 4) gives its full-attention kind its own heads at TP ``tp``."""
    att = spec.attention
    idx = sparse_indexer(spec)
    caps = {
        LayerType.SLIDING_ATTENTION: att.sliding_window if isinstance(att, GQAAttention) else None,
        LayerType.CHUNKED_ATTENTION: att.attention_chunk_size if isinstance(att, GQAAttention) else None,
        # DeepSeek Sparse Attention: each query attends to the index_topk keys its indexer picks
        LayerType.FULL_ATTENTION: idx.index_topk if isinstance(att, MLAAttention) and idx else None,
    }
    out = []
    for t, n in counts.mixers.items():
        if not t.caches_kv:
            continue
        writers = n - spec.kv_shared_count(t) if spec.num_kv_shared_layers else None  # one stage: validate_layout
        if idx is not None and t == LayerType.FULL_ATTENTION:
            # the indexed layers keep at most keys_per_query keys (DeepSeek: index_topk; MiniMax-M3: (top-k +
            # init + local) blocks); MiniMax-M3's dense layers (not MoE) attend to every key
            indexed = indexer_layers(spec, counts)
            sparse = n if isinstance(att, MLAAttention) else indexed  # GLM-5.2's shared layers attend sparsely too
            if n - sparse:
                out.append(_Softmax(t, n - sparse, None))
            if sparse:
                out.append(_Softmax(t, sparse, idx.keys_per_query, indexed=True, indexers=indexed))
            continue
        if isinstance(att, GQAAttention) and att.has_global_geometry and t == LayerType.FULL_ATTENTION:
            out.append(_Softmax(t, n, caps.get(t), spec.heads_of(t)[1], writers))
        else:
            out.append(_Softmax(t, n, caps.get(t), writers=writers))
    return tuple(out)


def _attention_ops(
    plan: _Plan, stage: _StagePlan, groups: Sequence[SeqGroup], causal: bool, kv_bits: int
) -> list[Operator]:
    """One attention operator per softmax layer kind (full, sliding, chunked) on this stage."""
    ops = []
    written = tokens = sum(g.tokens for g in groups)
    for kind in stage.softmax:
        layers, cap = kind.layers, kind.cap
        per_token, kv_heads = plan.kv_by_type[kind.layer_type]  # the layer type's own K/V heads on this GPU
        d_qk, d_v = (plan.d_qk, plan.d_v) if kind.d_head is None else (kind.d_head, kind.d_head)
        if kind.chunked:
            assert cap is not None
            pairs = sum(chunked_pairs(g.new_tokens, g.cached, causal, cap) * g.count for g in groups)
            cached = sum(g.count * (g.cached % cap) for g in groups)  # the earlier tokens of the current chunk
        else:
            pairs = sum(attention_pairs(g.new_tokens, g.cached, causal, cap) * g.count for g in groups)
            cached = sum(g.count * (min(g.cached, cap) if cap else g.cached) for g in groups)
        role, label = _SOFTMAX_OPS[kind.layer_type]
        if kind.indexed and isinstance(plan.spec.attention, GQAAttention):  # MiniMax-M3
            label = "block-sparse attention"
        ops.append(
            Operator(
                f"{label} (QK^T + AV)",
                OpKind.ATTENTION,
                role,
                "",
                layers,
                2 * plan.heads * (d_qk + d_v) * pairs * layers,
                kv_read_bytes=_eighths(cached * per_token * layers * kv_bits),
                kv_write_bytes=_eighths(
                    written * per_token * (layers if kind.writers is None else kind.writers) * kv_bits
                ),
                batch=sum(g.count for g in groups),
                heads=plan.heads,
                kv_heads=kv_heads,
                keys=quotient(pairs, tokens) if tokens else 0,
                queries=_per_sequence(tokens, groups),
                head_dim=max(plan.d_qk, plan.d_v),
            )
        )
        if kind.indexed and (layers if kind.indexers is None else kind.indexers):
            ops.append(_indexer_op(plan.spec, layers if kind.indexers is None else kind.indexers, groups, causal))
    return ops


def _indexer_op(spec: ModelSpec, layers: int, groups: Sequence[SeqGroup], causal: bool) -> Operator:
    """The lightning indexer on ``layers`` layers: every new token scores every key it may see (all
    causal pairs, no top-k cap). DeepSeek Sparse Attention: 2 H_i (D_i + 1) FLOPs per (query, key)
    pair (H_i dot products of D_i, then the weighted sum over heads: DeepSeek-V3.2-Exp
    inference/model.py Indexer); MiniMax-M3: 2 H_i D_i (H_i dot products; the block and head maxima
    are comparisons: transformers MiniMaxM3VLIndexer._block_bias). Reads each sequence's cached
    indexer keys once and writes the new tokens' keys (:func:`~llm_cost.model.kvshape.indexer_key_bytes`
    each). The top-k selection itself is not counted. Replicated across TP, as its weights are."""
    idx = sparse_indexer(spec)
    assert idx is not None
    H, D = idx.index_n_heads, idx.index_head_dim
    per_pair = 2 * H * D if idx.kind == "minimax_m3" else 2 * H * (D + 1)
    key = indexer_key_bytes(spec)
    pairs = sum(attention_pairs(g.new_tokens, g.cached, causal) * g.count for g in groups)
    tokens = sum(g.tokens for g in groups)
    return Operator(
        "sparse-attention indexer (scores every key)",
        OpKind.ATTENTION,
        OpRole.SPARSE_INDEXER,
        "",
        layers,
        per_pair * pairs * layers,
        kv_read_bytes=sum(g.count * g.cached for g in groups) * key * layers,
        kv_write_bytes=tokens * key * layers,
        batch=sum(g.count for g in groups),
        heads=H,
        kv_heads=1,
        keys=quotient(pairs, tokens) if tokens else 0,
        queries=_per_sequence(tokens, groups),
        head_dim=D,
    )


def _per_sequence(tokens: int, groups: Sequence[SeqGroup]) -> Number:
    """New tokens per sequence on average (0 for no sequences)."""
    seqs = sum(g.count for g in groups)
    return quotient(tokens, seqs) if seqs else 0


def _state_op(r: _Recurrence, layout: Layout, groups: Sequence[SeqGroup], kv_bits: int) -> Operator:
    """A recurrent mixer's update and read-out: ``per_token`` FLOPs per token and layer, one read of
    each sequence's fixed state (``state_elements`` per layer), both split with the heads over TP."""
    seqs = sum(g.count for g in groups)
    tokens = sum(g.tokens for g in groups)
    return Operator(
        r.name,
        OpKind.RECURRENCE,
        r.role,
        "",
        r.layers,
        quotient(r.per_token * tokens * r.layers, layout.tp),
        kv_read_bytes=quotient(seqs * r.state_elements * r.layers * kv_bits, 8 * layout.tp),
        batch=seqs,
        heads=r.heads // layout.tp,
    )


def _recurrences(spec: ModelSpec, counts: LayerCounts) -> tuple[_Recurrence, ...]:
    """The recurrent layer kinds of a stage whose layers are ``counts``. Gated DeltaNet: about
    6 n_v d_k d_v + 2 conv_dim x kernel FLOPs per token. Mamba-2: about 6 H P N (decay, rank-1
    update, C read-out over the H x P x N state) + 2 conv_dim x kernel, in the recurrent form. LFM2's
    short convolution: 2 d x kernel (the depthwise conv) + 2 d (the B and C gates, one multiply each)
    per token, over d channels split with TP. Kimi Delta Attention as Gated DeltaNet: 6 H K K (its
    decay is per channel, still one multiply per state element) + 2 x 3 H K x kernel. Each reads its
    state and conv state."""
    kinds = []
    la = spec.linear_attention
    if la is not None:
        kinds.append(
            _Recurrence(
                OpRole.LINEAR_ATTENTION,
                "linear-attention recurrence",
                counts.mixer(LayerType.LINEAR_ATTENTION),
                6 * la.recurrent_state + 2 * la.conv_dim * la.conv_kernel,
                sum(linear_state_elements(spec)),
                la.state_heads,
            )
        )
    m = spec.mamba
    if m is not None:
        per_token = 6 * m.num_heads * m.head_dim * m.state_size + 2 * m.conv_dim * m.conv_kernel
        kinds.append(
            _Recurrence(
                OpRole.MAMBA2,
                "Mamba-2 state update",
                counts.mixer(LayerType.MAMBA2),
                per_token,
                sum(mamba_state_elements(spec)),
                m.num_heads,
            )
        )
    sc = spec.short_conv
    if sc is not None:
        d = spec.hidden_size
        kinds.append(
            _Recurrence(
                OpRole.SHORT_CONV,
                "short convolution (gated)",
                counts.mixer(LayerType.SHORT_CONV),
                2 * d * sc.conv_kernel + 2 * d,
                sum(short_conv_state_elements(spec)),
                d,
            )
        )
    return tuple(kind for kind in kinds if kind.layers)


def _vector_op(spec: ModelSpec, s: Structure, layout: Layout, stage: int, bits: Fraction) -> list[Operator]:
    """Norm scales, biases and other vectors of the decoder on this stage, read once."""
    stored = Fraction(0)  # bits
    for t in s.tensors_of(Part.DECODER):
        if t.kind in (TensorKind.MATMUL, TensorKind.LOOKUP) or not t.stored:
            continue
        share = t.per_layer * tensor_layers_in_stage(spec, t, layout, stage) * tensor_share(spec, t, layout)
        stored += share * tensor_bits(bits, t)
    if not stored:
        return []
    return [
        Operator(
            "norms, biases and other vectors",
            OpKind.ELEMENTWISE,
            OpRole.VECTORS,
            "norms",
            1,
            0,
            weight_bytes=exact(stored / 8),
        )
    ]


def _resident_op(spec: ModelSpec, s: Structure, layout: Layout, bits: Fraction) -> list[Operator]:
    """By the resident convention, the first stage reads every stored weight no other operator
    reads: the decoder's whole embedding tables, and any vision or audio tower as an operator of its own."""
    tables = sum(
        (
            t.total * tensor_share(spec, t, layout) * tensor_bits(bits, t)
            for t in s.tensors
            if t.stored and t.part == Part.DECODER and t.kind == TensorKind.LOOKUP
        ),
        Fraction(0),
    )
    vision = sum(
        (t.total * tensor_share(spec, t, layout) * tensor_bits(bits, t) for t in s.tensors_of(Part.VISION) if t.stored),
        Fraction(0),
    )
    ops = [
        Operator(
            "embedding tables (resident)",
            OpKind.EMBEDDING,
            OpRole.RESIDENT_WEIGHTS,
            "embedding",
            1,
            0,
            weight_bytes=exact(tables / 8),
        )
    ]
    audio = sum(
        (t.total * tensor_share(spec, t, layout) * tensor_bits(bits, t) for t in s.tensors_of(Part.AUDIO) if t.stored),
        Fraction(0),
    )
    for name, group, held in (
        ("vision tower (resident)", "vision", vision),
        ("audio tower (resident)", "audio", audio),
    ):
        if held:
            ops.append(
                Operator(name, OpKind.EMBEDDING, OpRole.RESIDENT_WEIGHTS, group, 1, 0, weight_bytes=exact(held / 8))
            )
    return ops


def _stage_plan(
    spec: ModelSpec, s: Structure, layout: Layout, stage: int, n: int, bits: Fraction, resident: bool
) -> _StagePlan:
    """The sequence-independent part of one stage's operators."""
    first = stage == 0
    tables = (0 if spec.tie_word_embeddings else 1) + (1 if spec.position_embedding == "learned" else 0)
    counts = layer_counts(spec, stage_range(spec.num_hidden_layers, layout.pp, stage))
    moe_layers = counts.of(LayerKind.MOE)
    gemms = _gemms(spec, s, layout, stage, bits)
    return _StagePlan(
        stage,
        n,
        gemms,
        _softmax_kinds(spec, counts, layout.tp),
        _recurrences(spec, counts),
        tuple(_resident_op(spec, s, layout, bits) if first and resident else ()),
        tuple(_vector_op(spec, s, layout, stage, bits)),
        tables if first and not resident else 0,
        n,
        n - (moe_layers if layout.ep > 1 else 0),
        moe_layers,
        counts.mlp(MlpType.DENSE),
        sum(counts.mixer(t) for t in _SOFTMAX_OPS),
        stage == layout.pp - 1,
        next((i for i, g in enumerate(gemms) if g.role == OpRole.LM_HEAD), len(gemms)),
    )


def _stage_plans(
    spec: ModelSpec, s: Structure, layout: Layout, bits: Fraction, resident: bool
) -> tuple[_StagePlan, ...]:
    """Every stage's plan; stages alike (the same layers of each kind, neither first nor last) share
    one, built once (a planner asks for pipelines of up to 128 stages)."""
    plans, built = [], {}
    for i, n in enumerate(stage_layers(spec.num_hidden_layers, layout.pp)):
        counts = layer_counts(spec, stage_range(spec.num_hidden_layers, layout.pp, i))
        key = (tuple(counts.pairs.items()), n, i == 0, i == layout.pp - 1)
        if key not in built:
            built[key] = _stage_plan(spec, s, layout, i, n, bits, resident)
        plans.append(replace(built[key], index=i))
    return tuple(plans)


@lru_cache(maxsize=64)
def _plan(
    spec: ModelSpec,
    layout: Layout,
    bits: Fraction,
    mla_form: MLAForm | None,
    resident: bool,
    dispatch_bits: int,
    combine_bits: int,
) -> _Plan:
    """The plan of ``spec`` under a validated ``layout`` and these formats (the last few are kept for
    the next steps of a sweep: a spec is frozen, so its plan cannot change)."""
    s = build(spec)
    mla = isinstance(spec.attention, MLAAttention)
    kv_heads = 1 if mla else kv_heads_per_gpu(spec, layout.tp)
    softmax = (LayerType.FULL_ATTENTION, LayerType.SLIDING_ATTENTION, LayerType.CHUNKED_ATTENTION)
    kv_by_type = {
        t: (kv_elements_per_token_on_gpu(spec, layout.tp, t), 1 if mla else kv_heads_per_gpu(spec, layout.tp, t))
        for t in softmax
    }
    per_token = kv_by_type[LayerType.FULL_ATTENTION][0]
    d_qk, d_v = _attention_dims(spec, mla_form)
    d, tp = spec.hidden_size, layout.tp
    k = spec.moe.num_experts_per_tok if spec.moe is not None else 0
    dispatched = (spec.moe.moe_latent_size if spec.moe is not None else None) or d  # a latent MoE sends l wide
    return _Plan(
        spec,
        _stage_plans(spec, s, layout, bits, resident),
        spec.attention.num_attention_heads // tp,
        kv_heads,
        per_token,
        kv_by_type,
        d_qk,
        d_v,
        exact(spec.hidden_size * tensor_bits(bits, s.tensors[0]) / 8),  # one row of the embedding
        ring_all_reduce_bytes(d, tp),
        _all_to_all_bytes_per_token(k, dispatched, layout, dispatch_bits, combine_bits),
    )


def _all_to_all_bytes_per_token(
    top_k: int, width: int, layout: Layout, dispatch_bits: int, combine_bits: int
) -> int | Fraction:
    """Bytes one GPU sends in a MoE layer's EP dispatch and combine, per token of its replica.

    A replica's tokens are split over its ``tp`` ranks for the dispatch (DeepEP, vLLM's and SGLang's
    all-to-all backends), so a GPU dispatches 1/tp of them; each goes to k experts, (EP - 1)/EP of
    them on other GPUs, ``width`` elements at ``dispatch_bits`` (d, or a latent MoE's latent width). With balanced routing a GPU's experts
    compute as many rows for other GPUs as it sent away, and it sends their outputs back at
    ``combine_bits``. Per replica token: k d (dispatch + combine) / 8 x (EP - 1) / (EP x TP); at
    DP 1 (EP = TP) that is (EP - 1) / EP^2."""
    ep = layout.ep
    return exact(Fraction(top_k * width * (dispatch_bits + combine_bits), 8) * Fraction(ep - 1, ep * layout.tp))


def _gemm_ops(
    plan: _Plan, gemms: Sequence[_Gemm], tokens: int, logit_rows: int, routed_tokens: int, resident: bool, ep: int
) -> list[Operator]:
    """One GEMM per weight matrix ``gemms`` of the decoder on this stage's GPU. Routed experts: weights read
    at the expected hit fraction ("read"), M = every token routed to this GPU's experts (all DP
    replicas' under EP) over the experts that run; their FLOPs are the GPU's 1/EP share of the
    routed work of all ``routed_tokens``, which with balanced routing equals its own replica's
    share (``routed_tokens`` = replica tokens x DP, split over EP = TP x DP ranks). Their
    activations are those of every routed copy (k per token) this GPU multiplies, k
    ``routed_tokens`` / EP rows: each copy's input row is gathered and its output row written
    (vLLM's fused_moe, DeepGEMM's grouped layouts), where a dense GEMM moves one row per token."""
    if not gemms:
        return []
    moe = plan.spec.moe
    hit = m_routed = 0.0
    copies = Fraction(0)
    if moe is not None:
        hit = expert_hit_fraction(moe.num_experts, moe.num_experts_per_tok, routed_tokens)
        m_routed = routed_tokens * moe.num_experts_per_tok / (moe.num_experts * hit)
        copies = Fraction(routed_tokens * moe.num_experts_per_tok, ep)
    ops = []
    for g in gemms:
        rows = logit_rows if g.role == OpRole.LM_HEAD else tokens
        m: Number = rows
        weight: Number = g.weight_bytes
        multiplied = rows  # the rows whose FLOPs this GPU does
        moved: Number = _eighths(rows * g.activation_bits_per_row)
        if g.role == OpRole.ROUTED_EXPERTS:
            weight = float(weight) * (1.0 if resident else hit)
            m = m_routed
            multiplied = routed_tokens  # every replica's tokens reach this GPU's experts
            moved = exact(copies * g.activation_bits_per_row / 8)
        ops.append(
            Operator(
                g.name,
                OpKind.GEMM,
                g.role,
                g.group,
                g.layers,
                _times(g.flops_per_row, multiplied),
                weight_bytes=weight,
                activation_bytes=moved,
                m=m,
                n=g.n,
                k=g.k,
                ep_ranks=ep if g.role == OpRole.ROUTED_EXPERTS else 1,
            )
        )
    return ops


#: Bytes per element a memory-bound kernel moves, by operator: reads plus writes at BF16 (2 B), the
#: router's scores and the loss's softmax in FP32 (4 B). Norm: read x, write y (2 + 2). Residual add:
#: read two, write one (3 x 2). RoPE: read and write q and k (2 + 2). Gated activation: read gate and
#: up, write their product (3 x 2, per element of the width); ungated: read, write (2 + 2). Router:
#: read the FP32 scores, write the FP32 probabilities (4 + 4). Permute / un-permute: read and write
#: each of the k copies (2 + 2). Loss: read the BF16 logits, write the FP32 softmax (2 + 4). FP8 cast:
#: read BF16, write FP8 (2 + 1). Materialised attention scores (unfused attention, Megatron-LM 2021):
#: the QK^T GEMM writes them (2), the fused scale-mask-softmax reads and writes them (2 + 2), dropout
#: reads them and writes them and a 1-byte mask (2 + 2 + 1), the AV GEMM reads them (2): 13.
ELEMENTWISE_BYTES = {
    OpRole.NORM: 4,
    OpRole.RESIDUAL_ADD: 6,
    OpRole.ROPE: 4,
    OpRole.ROUTER_TOPK: 8,
    OpRole.MOE_PERMUTE: 4,
    OpRole.MOE_UNPERMUTE: 4,
    OpRole.CROSS_ENTROPY: 6,
    OpRole.FP8_CAST: 3,
    OpRole.ATTENTION_SCORES: 13,
}


def _elementwise(name: str, role: OpRole, layers: int, elements: int | Fraction, per_element: int) -> Operator:
    """A memory-bound kernel over ``elements`` elements (all its layers) moving ``per_element`` bytes each."""
    return Operator(name, OpKind.ELEMENTWISE, role, "", layers, 0, activation_bytes=exact(elements * per_element))


def _activation_widths(spec: ModelSpec, stage: _StagePlan, tp: int) -> Fraction:
    """Elements of the MLP activation per token on one GPU over the stage's layers: dense MLPs and
    shared experts at their width / TP, and k routed experts per token at theirs / TP (an EP rank
    holds whole experts but 1/TP of the tokens under sequence parallelism: the same elements)."""
    width = Fraction(0)
    if spec.mlp is not None and stage.dense_layers:
        width += Fraction(spec.mlp.intermediate_size * stage.dense_layers, tp)
    moe = spec.moe
    if moe is not None and stage.moe_layers:
        per_token = moe.num_experts_per_tok * moe.moe_intermediate_size + moe.shared_expert_intermediate_size
        width += Fraction(per_token * stage.moe_layers, tp)
    return width


def _elementwise_ops(
    plan: _Plan,
    stage: _StagePlan,
    layout: Layout,
    tokens: int,
    logit_rows: int,
    gemms: list[Operator],
    compute_dtype: Dtype,
    sequence_parallel: bool,
    scores: int,
) -> list[Operator]:
    """The memory-bound kernels between the GEMMs of this stage's GPU (module docstring): element
    counts from the model's widths, bytes per element from :data:`ELEMENTWISE_BYTES`. Under
    ``sequence_parallel`` the norms, residual adds, the router and the permutation see tokens / TP."""
    spec, tp, n = plan.spec, layout.tp, stage.layers
    d = spec.hidden_size
    local = Fraction(tokens, tp) if sequence_parallel else Fraction(tokens)
    b = ELEMENTWISE_BYTES
    ops = [
        _elementwise("norms", OpRole.NORM, n, local * d * (spec.norms_per_layer * n + stage.last), b[OpRole.NORM]),
        _elementwise("residual adds", OpRole.RESIDUAL_ADD, n, local * d * 2 * n, b[OpRole.RESIDUAL_ADD]),
    ]
    if spec.position_embedding == "rope" and stage.softmax_layers:
        att = spec.attention
        if isinstance(att, MLAAttention):
            rotated = (plan.heads + 1) * att.qk_rope_head_dim  # each query head's and the shared key's
        else:
            rotated = (plan.heads + plan.kv_heads) * int(spec.head_dim * spec.partial_rotary_factor)
        ops.append(_elementwise("RoPE", OpRole.ROPE, n, tokens * rotated * stage.softmax_layers, b[OpRole.ROPE]))
    gated = spec.mlp.gated if spec.mlp is not None else spec.moe is not None and spec.moe.expert_gated
    width = _activation_widths(spec, stage, tp)
    if width:
        ops.append(_elementwise("MLP activation", OpRole.MLP_ACTIVATION, n, tokens * width, 6 if gated else 4))
    moe = spec.moe
    if moe is not None and stage.moe_layers:
        copies = local * moe.num_experts_per_tok * stage.moe_layers
        wide = moe.moe_latent_size or d
        ops += [
            _elementwise("router softmax and top-k", OpRole.ROUTER_TOPK, n, local * moe.num_experts * stage.moe_layers,
                         b[OpRole.ROUTER_TOPK]),
            _elementwise("MoE permute (tokens to experts)", OpRole.MOE_PERMUTE, n, copies * wide, b[OpRole.MOE_PERMUTE]),
            _elementwise("MoE un-permute (experts to tokens)", OpRole.MOE_UNPERMUTE, n, copies * wide,
                         b[OpRole.MOE_UNPERMUTE]),
        ]  # fmt: skip
    if scores and stage.softmax_layers:
        ops.append(
            _elementwise("attention scores (materialised)", OpRole.ATTENTION_SCORES, n,
                         plan.heads * scores * stage.softmax_layers, b[OpRole.ATTENTION_SCORES])
        )  # fmt: skip
    if stage.last and logit_rows:
        vocab = Fraction(spec.vocab_size, tp)
        ops.append(_elementwise("cross-entropy", OpRole.CROSS_ENTROPY, 1, logit_rows * vocab, b[OpRole.CROSS_ENTROPY]))
    if compute_dtype == Dtype.FP8:
        # each distinct input of an FP8 GEMM (rows x K = FLOPs / 2N; q/k/v and gate/up share theirs);
        # the router and the LM head stay in BF16
        distinct: dict[object, Fraction] = {}
        for i, (g, op) in enumerate(zip(stage.gemms, gemms)):
            if fp8_gemm(op):
                distinct[i if g.own_input else (g.group, g.k)] = Fraction(int(op.flops), 2 * (op.n or 1))
        if inputs := sum(distinct.values(), Fraction(0)):
            ops.append(_elementwise("FP8 casts of the GEMM inputs", OpRole.FP8_CAST, n, inputs, b[OpRole.FP8_CAST]))
    return ops


def fp8_gemm(op: Operator) -> bool:
    """An FP8 training step runs this GEMM in FP8: the blocks' matrices and the routed experts; the
    router and the LM head stay in BF16 (Transformer Engine's FP8 covers the transformer layers;
    DeepSeek-V3 §3.3.1 keeps the embedding, output head, gating and attention in higher precision)."""
    return (
        op.kind == OpKind.GEMM and op.role in (OpRole.MATMUL, OpRole.ROUTED_EXPERTS) and op.group != TensorGroup.ROUTER
    )


def _embedding_op(plan: _Plan, stage: _StagePlan, tokens: int) -> list[Operator]:
    """Embedding rows read by the first stage: one per new token from each untied table (none when
    tied: the LM head reads the whole matrix anyway)."""
    if not stage.embedding_tables:
        return []
    rows = tokens * stage.embedding_tables
    return [
        Operator(
            "embedding rows",
            OpKind.EMBEDDING,
            OpRole.EMBEDDING_ROWS,
            "embedding",
            1,
            0,
            weight_bytes=_times(plan.embedding_bytes_per_row, rows),
            m=rows,
            n=plan.spec.hidden_size,
        )
    ]


def _collective(name: str, role: OpRole, layers: int, payload: Collective) -> Operator:
    """A communication operator: ``layers`` calls of ``payload``."""
    return Operator(name, OpKind.COLLECTIVE, role, "", layers, 0, collective=payload)


def _collective_ops(plan: _Plan, stage: _StagePlan, layout: Layout, tokens: int) -> list[Operator]:
    """TP all-reduces, EP all-to-all and the PP send of this stage's GPU."""
    ops = []
    tp = layout.tp
    if tp > 1:
        ring = Collective("ring_all_reduce", tp, _times(plan.ring_bytes_per_token, tokens))
        ops.append(_collective("TP all-reduce after attention", OpRole.TP_ALL_REDUCE_ATTENTION, stage.all_layers, ring))
        if stage.mlp_layers:
            ops.append(_collective("TP all-reduce after the MLP", OpRole.TP_ALL_REDUCE_MLP, stage.mlp_layers, ring))
    if plan.spec.moe is not None and layout.ep > 1 and stage.moe_layers:
        # two calls per MoE layer, the dispatch and the combine (DeepEP's and the engines' all-to-all
        # kernels), each sending half the layer's bytes on average
        payload = Collective(
            "all_to_all", layout.ep, exact(Fraction(_times(plan.all_to_all_bytes_per_token, tokens), 2))
        )
        ops.append(
            _collective("EP all-to-all (dispatch, combine)", OpRole.EP_ALL_TO_ALL, 2 * stage.moe_layers, payload)
        )
    if layout.pp > 1 and stage.index < layout.pp - 1:
        payload = Collective("send_recv", 2, _eighths(tokens * plan.spec.hidden_size * ACTIVATION_BITS))
        ops.append(_collective("PP send to the next stage", OpRole.PP_SEND, 1, payload))
    return ops


def _phase(groups: Sequence[SeqGroup]) -> Phase:
    if all(g.new_tokens == 1 for g in groups):
        return Phase.DECODE
    if all(g.cached == 0 for g in groups):
        return Phase.PREFILL
    return Phase.MIXED


def _rank_step(
    spec: ModelSpec, groups: Sequence[SeqGroup], layout: Layout, mla_form: MLAForm | None, valid: bool = False
) -> tuple[tuple[SeqGroup, ...], Phase, MLAForm | None]:
    """(groups of one DP replica, phase, MLA form) of a step (:func:`build_step`); InputError for an
    invalid layout (unless known ``valid``) or an empty step."""
    if not valid:
        validate_layout(spec, layout)
    groups = tuple(SeqGroup(math.ceil(g.count / layout.dp), g.new_tokens, g.cached) for g in groups if g.count)
    if not groups or any(g.new_tokens < 1 or g.cached < 0 for g in groups):
        raise InputError("a step needs at least one sequence adding at least one token")
    phase = _phase(groups)
    if isinstance(spec.attention, MLAAttention):
        mla_form = mla_form or (MLAForm.ABSORBED if phase == Phase.DECODE else MLAForm.PLAIN)
    else:
        mla_form = None
    return groups, phase, mla_form


def _mixer_ops(
    plan: _Plan, st: _StagePlan, layout: Layout, groups: Sequence[SeqGroup], causal: bool, kv_bits: int
) -> list[Operator]:
    """A stage's operators after its GEMMs that depend on the step's sequences: attention, then
    recurrences."""
    return _attention_ops(plan, st, groups, causal, kv_bits) + [
        _state_op(r, layout, groups, kv_bits) for r in st.recurrences
    ]


def _last_ops(plan: _Plan, st: _StagePlan, layout: Layout, tokens: int, extra: list[Operator]) -> list[Operator]:
    """A stage's last operators: vectors, ``extra`` (the memory-bound kernels of a training step),
    collectives."""
    return list(st.vectors) + extra + _collective_ops(plan, st, layout, tokens)


def dispatch_bits_of(compute_dtype: Dtype) -> int:
    """Bits of a token's hidden state in an EP all-to-all dispatch when the step computes in
    ``compute_dtype``: 8 when its GEMMs take FP8 (or FP4) activations, which the dispatch quantizes
    before sending (DeepEP's FP8 dispatch, as DeepSeek-V3 serves and trains); else the activations'
    16 bits (vLLM's and SGLang's all-to-all send a BF16 model's tokens as they are). The combine
    returns 16 bits either way."""
    return 8 if compute_dtype in (Dtype.FP8, Dtype.FP4) else 16


def build_step(
    spec: ModelSpec,
    groups: Sequence[SeqGroup],
    *,
    layout: Layout = ONE_GPU,
    weight_bits: int | Fraction = 16,
    kv_bits: int = 16,
    compute_dtype: Dtype = Dtype.BF16,
    logits: Logits = Logits.LAST,
    attention: AttentionMask = AttentionMask.CAUSAL,
    mla_form: MLAForm | None = None,
    weight_bytes: WeightBytes = WeightBytes.READ,
    dispatch_bits: int | None = None,
    combine_bits: int = 16,
    elementwise: bool = False,
    sequence_parallel: bool = False,
    materialised_scores: bool = False,
) -> Step:
    """The operators each GPU runs in one step of ``groups`` (one DP replica: each group's
    sequences are split over ``layout.dp`` replicas, rounded up).

    ``logits``: one LM-head row per sequence (LAST, as serving computes them) or every position
    (ALL: training, and the documents' prefill count); ``attention`` causal or full; ``mla_form``
    plain or absorbed (default: absorbed for decode, plain otherwise); ``weight_bytes`` read or
    resident (see the module docstring); ``elementwise`` adds the memory-bound kernels between the
    GEMMs (a training step's), ``sequence_parallel`` splits their tokens over TP. InputError for an
    invalid layout or an empty step; ``dispatch_bits`` (default :func:`dispatch_bits_of` the compute
    dtype) the EP dispatch's; ``materialised_scores`` (with ``elementwise``) times attention
    as it ran before FlashAttention, its s x s scores written and read in memory."""
    groups, phase, mla_form = _rank_step(spec, groups, layout, mla_form)
    bits = weight_bits_of(weight_bits)
    resident = weight_bytes == WeightBytes.RESIDENT
    dispatch = dispatch_bits if dispatch_bits is not None else dispatch_bits_of(compute_dtype)
    plan = _plan(spec, layout, bits, mla_form, resident, dispatch, combine_bits)
    tokens = sum(g.tokens for g in groups)
    logit_rows = tokens if logits == Logits.ALL else sum(g.count for g in groups)
    routed_tokens = tokens * (layout.dp if layout.ep > 1 else 1)  # EP ranks serve every replica's tokens
    causal = attention == AttentionMask.CAUSAL
    stages = []
    for st in plan.stages:
        gemms = _gemm_ops(plan, st.gemms, tokens, logit_rows, routed_tokens, resident, layout.ep)
        extra = (
            _elementwise_ops(
                plan,
                st,
                layout,
                tokens,
                logit_rows,
                gemms,
                compute_dtype,
                sequence_parallel,
                sum(g.count * g.new_tokens * (g.cached + g.new_tokens) for g in groups) if materialised_scores else 0,
            )
            if elementwise
            else []
        )
        ops = (
            list(st.resident)
            + _embedding_op(plan, st, tokens)
            + gemms
            + _mixer_ops(plan, st, layout, groups, causal, kv_bits)
            + _last_ops(plan, st, layout, tokens, extra)
        )
        stages.append(Stage(st.index, st.layers, tuple(ops)))
    return Step(
        spec.name,
        phase,
        groups,
        layout,
        compute_dtype,
        bits,
        kv_bits,
        logits,
        attention,
        mla_form,
        weight_bytes,
        tuple(stages),
    )


#: (id of a spec, held as the value, layout) pairs :func:`split_step` has validated.
_VALID: dict[tuple[int, Layout], ModelSpec] = {}


@record
class StageHead:
    """The operators of one stage of a step that depend on the step only through its ``tokens``
    (and so its ``routed_tokens``; :func:`split_step`): ``build()`` gives those before the stage's
    others (the embedding rows, every GEMM before the LM head) and those after them (the vectors,
    the collectives). ``part`` is the stage's sequence-independent plan they are built from, the
    same object for every step of a (model, layout, formats) in the process: with ``tokens`` it
    identifies them."""

    part: object
    tokens: int
    routed_tokens: int
    build: Callable[[], tuple[list[Operator], list[Operator]]]


def split_step(
    spec: ModelSpec,
    groups: Sequence[SeqGroup],
    *,
    layout: Layout = ONE_GPU,
    weight_bits: int | Fraction = 16,
    kv_bits: int = 16,
    compute_dtype: Dtype = Dtype.BF16,
) -> tuple[Step, tuple[StageHead, ...]]:
    """:func:`build_step` of a serving step (defaults otherwise) in two parts, for a caller that
    times many steps of few distinct token counts: the step with each stage's operators that
    depend on its sequences (the LM head on, attention, recurrences), and each stage's others,
    built on demand (:class:`StageHead`). A stage's operators in :func:`build_step`'s order are its
    head's first ones, the step's, then its head's last ones."""
    groups, phase, mla_form = _rank_step(spec, groups, layout, None, (id(spec), layout) in _VALID)
    if len(_VALID) >= 256:
        _VALID.clear()
    _VALID[(id(spec), layout)] = spec
    bits = weight_bits_of(weight_bits)
    plan = _plan(spec, layout, bits, mla_form, False, dispatch_bits_of(compute_dtype), 16)
    tokens = sum(g.tokens for g in groups)
    logit_rows = sum(g.count for g in groups)
    routed_tokens = tokens * (layout.dp if layout.ep > 1 else 1)  # EP ranks serve every replica's tokens
    stages, heads = [], []
    for st in plan.stages:
        middle = _gemm_ops(plan, st.gemms[st.head_gemms :], tokens, logit_rows, routed_tokens, False, layout.ep)
        middle += _mixer_ops(plan, st, layout, groups, True, kv_bits)
        stages.append(Stage(st.index, st.layers, tuple(middle)))

        def build(st: _StagePlan = st) -> tuple[list[Operator], list[Operator]]:
            head = _gemm_ops(plan, st.gemms[: st.head_gemms], tokens, logit_rows, routed_tokens, False, layout.ep)
            return list(st.resident) + _embedding_op(plan, st, tokens) + head, _last_ops(plan, st, layout, tokens, [])

        heads.append(StageHead(st, tokens, routed_tokens, build))
    step = Step(
        spec.name, phase, groups, layout, compute_dtype, bits, kv_bits, Logits.LAST, AttentionMask.CAUSAL, mla_form,
        WeightBytes.READ, tuple(stages),
    )  # fmt: skip
    return step, tuple(heads)
