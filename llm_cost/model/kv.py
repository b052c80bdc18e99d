"""KV-cache bytes: per token, per layer, per sequence, over contexts (seed 000 §七, seed 003 §04-§05).

Formulas (elements per token per layer, times bytes per element):

* GQA/MHA/MQA: 2 * n_kv * d_head (K and V); full-attention layers keep every token, sliding
  layers at most W tokens.
* MLA: kv_lora_rank + qk_rope_head_dim (the latent c_KV and the decoupled RoPE key, shared by
  all heads). DeepSeek Sparse Attention adds the lightning indexer's key per token per layer: D_i
  FP8 bytes and a 4-byte fp32 scale per 128 (132 B at D_i = 128), at that format whatever the KV
  dtype (vLLM's and SGLang's indexer cache); the attention still caches every token.
* Kimi Delta Attention: no per-token cache; a recurrent state of H x K x K elements per sequence
  per layer and a q/k/v short-conv state of 3 H K x (kernel - 1), like Gated DeltaNet's.
* Linear attention (Gated DeltaNet): no per-token cache; a fixed recurrent state of
  n_v * d_k * d_v elements per sequence per layer (seed 003 §05) plus a causal-conv state of
  (2 n_k d_k + n_v d_v) * (kernel - 1) elements, which the document leaves out and this
  module reports on its own line.

* Chunked attention (Llama 4): a token attends only to the earlier tokens of its own C-token chunk,
  so a chunked layer holds at most C tokens. Counted as min(context, C) per layer: the cache an
  engine must reserve (vLLM allocates it like a sliding window of C); right after a chunk boundary
  fewer tokens are live.
* Mamba-2 (Nemotron-H, Granite 4.0-H): no per-token cache; a recurrent SSM state of
  H x P x N elements (heads x head_dim x state size) per sequence per layer plus a conv state of
  (H P + 2 G N) x (kernel - 1), as vLLM's Mamba-2 cache holds them. Both are counted at the KV
  dtype (engines often keep the SSM state in fp32: pass ``--kv-dtype fp32`` for that).
* LFM2 short convolution: no per-token cache, no recurrent state; a conv state of d x (kernel - 1)
  per sequence per layer (vLLM's ShortConv cache), counted at the KV dtype.
* ``mlp_only`` layers (Nemotron-H feed-forward blocks) cache nothing.

Bytes are exact integers for whole-byte dtypes (exact fractions are rounded only for display).
"""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Optional

from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import LayerKind, LayerType
from llm_cost.core.units import to_bytes
from llm_cost.model.kvshape import (
    indexer_key_bytes,
    indexer_layers,
    kv_elements_per_token,
    kv_elements_per_token_per_layer,
    linear_state_elements,
    mamba_state_elements,
    short_conv_state_elements,
    sparse_indexer,
)
from llm_cost.model.layers import LayerCounts, layer_counts
from llm_cost.specs.schema import GQAAttention, KimiDeltaAttention, MLAAttention, ModelSpec

if TYPE_CHECKING:  # imported by kv_cache only for a layout: it and the tensor structure cost a cold start 4 ms
    from llm_cost.model.layout import Layout, PerGPU

__all__ = ["KVLayerKind", "KVAtContext", "KVResult", "kv_cache", "kv_bytes_per_token", "kv_bytes"]


@record
class KVLayerKind:
    """The cache of one kind of layer."""

    layer_type: LayerType
    layers: int
    elements_per_token: int  # per layer
    bytes_per_token: int | Fraction  # per layer
    window: int | None  # tokens kept at most (sliding layers)
    state_bytes: int | Fraction  # fixed per-sequence state per layer (linear attention)
    conv_state_bytes: int | Fraction
    formula: str


@record
class KVAtContext:
    """KV (and fixed state) of ``batch`` sequences of ``context`` tokens."""

    context: int
    kv_bytes: int | Fraction  # per sequence, attention layers only
    state_bytes: int | Fraction  # per sequence, linear-attention recurrent state
    conv_state_bytes: int | Fraction  # per sequence
    total_bytes: int | Fraction  # batch x (kv + state + conv)
    #: batch x, the same layers with n_kv = n_q (MLA: n_h K/V heads of v_head_dim)
    mha_equivalent_bytes: int | Fraction | None
    all_attention_bytes: int | Fraction | None  # batch x, hybrid: every layer full attention


@record
class KVResult(Result):
    """KV-cache sizes of a model at a KV dtype."""

    model: str
    kv_dtype: str
    bits_per_element: int
    batch: int
    layer_kinds: list[KVLayerKind]
    bytes_per_token: int | Fraction  # all layers that cache tokens, below any window
    mha_bytes_per_token: int | Fraction | None
    mha_ratio: float | None  # MHA-equivalent bytes / this model's bytes per token
    # FLOP per KV byte in decode attention (g = n_q/n_kv, or MLA absorbed)
    kv_read_intensity_flop_per_byte: float | None
    mla_absorbed_flop_ratio: float | None  # MLA: absorbed-form attention FLOPs / plain form (seed 003 §04: ~3.4x)
    contexts: list[KVAtContext]
    formula: str
    conventions: list[Note] = field(default_factory=list)
    layout: Layout | None = None  # when --tp/--pp/--ep/--dp were given
    per_gpu: PerGPU | None = None  # KV per token per GPU by pipeline stage
    per_gpu_sequence_bytes: list[list[int | Fraction]] | None = None  # [stage][context]: one sequence on one GPU
    all_gpus_bytes_per_token: int | Fraction | None = None  # summed over every GPU of a replica (KV heads replicated)
    #: bytes one more token adds once every sliding window and attention chunk is full (the
    #: full-attention layers alone); None when no layer has a window or chunk
    bytes_per_token_past_windows: int | Fraction | None = None


@lru_cache(maxsize=64)
def _layer_counts(spec: ModelSpec) -> LayerCounts:
    """:func:`~llm_cost.model.layers.layer_counts` of every layer, kept for the last specs (a spec
    is frozen and hashed by its fields): a grid of contexts asks for them per point."""
    counts = layer_counts(spec)
    return counts


def _state_layers(spec: ModelSpec, counts: LayerCounts) -> tuple[int, int]:
    """(SSM + linear-attention state, conv state) elements of one sequence over all layers
    (``counts``: :func:`_layer_counts`)."""
    la_state, la_conv = linear_state_elements(spec)
    m_state, m_conv = mamba_state_elements(spec)
    _, sc_conv = short_conv_state_elements(spec)
    n_la, n_m = counts.mixer(LayerType.LINEAR_ATTENTION), counts.mixer(LayerType.MAMBA2)
    n_sc = counts.mixer(LayerType.SHORT_CONV)
    return n_la * la_state + n_m * m_state, n_la * la_conv + n_m * m_conv + n_sc * sc_conv


def kv_bytes_per_token(spec: ModelSpec, bits: int = 16) -> int | Fraction:
    """KV bytes one token adds across all caching layers (below any sliding window)."""
    counts = _layer_counts(spec)
    elements = sum(_owners(spec, counts, t) * kv_elements_per_token(spec, t) for t in _SOFTMAX)
    return to_bytes(elements, bits) + indexer_layers(spec, counts) * indexer_key_bytes(spec)


def kv_bytes_per_token_past_windows(spec: ModelSpec, bits: int = 16) -> int | Fraction | None:
    """KV bytes one more token adds once every sliding window and attention chunk is full: the
    full-attention layers that own a cache (K/V, plus a lightning indexer's key), the slope of KV
    bytes in context past the longest window. None when no softmax layer has a window or chunk
    (then it equals :func:`kv_bytes_per_token`)."""
    counts = _layer_counts(spec)
    windowed = counts.mixer(LayerType.SLIDING_ATTENTION) + counts.mixer(LayerType.CHUNKED_ATTENTION)
    if not windowed:
        return None
    full = LayerType.FULL_ATTENTION
    elements = _owners(spec, counts, full) * kv_elements_per_token(spec, full)
    return to_bytes(elements, bits) + indexer_layers(spec, counts) * indexer_key_bytes(spec)


def _owners(spec: ModelSpec, counts: LayerCounts, layer_type: LayerType) -> int:
    """Layers of ``layer_type`` (of the whole model's ``counts``) that cache their own K/V: all but
    Gemma 4's KV-shared layers, which read an earlier layer's cache."""
    return counts.mixer(layer_type) - spec.kv_shared_count(layer_type)


def _indexer_bytes(spec: ModelSpec, counts: LayerCounts, context: int) -> int:
    """Lightning-indexer key bytes of one sequence of ``context`` tokens (0 without an indexer):
    every indexed layer (:func:`~llm_cost.model.kvshape.indexer_layers`) keeps every token's key."""
    return indexer_layers(spec, counts) * context * indexer_key_bytes(spec)


#: The softmax-attention layer types, which cache K/V per token.
_SOFTMAX = (LayerType.FULL_ATTENTION, LayerType.SLIDING_ATTENTION, LayerType.CHUNKED_ATTENTION)


def _attention_elements(
    spec: ModelSpec, counts: LayerCounts, context: int, per_token_per_layer: Optional[int | dict] = None
) -> int:
    """Cached elements of one sequence in the softmax-attention layers (windows honoured;
    ``counts``: :func:`_layer_counts`; ``per_token_per_layer`` None: each layer type's own,
    :func:`~llm_cost.model.kvshape.kv_elements_per_token`)."""
    att = spec.attention
    window = att.sliding_window if isinstance(att, GQAAttention) else None
    kept_sliding = min(context, window) if window else context
    chunk = att.attention_chunk_size if isinstance(att, GQAAttention) else None
    kept_chunked = min(context, chunk) if chunk else context
    kept = {LayerType.FULL_ATTENTION: context, LayerType.SLIDING_ATTENTION: kept_sliding}
    kept[LayerType.CHUNKED_ATTENTION] = kept_chunked
    if per_token_per_layer is None:
        per = {t: kv_elements_per_token(spec, t) for t in _SOFTMAX}
    elif isinstance(per_token_per_layer, dict):  # one per layer type
        per = per_token_per_layer
    else:
        per = dict.fromkeys(_SOFTMAX, per_token_per_layer)
    return sum(per[t] * _owners(spec, counts, t) * kept[t] for t in _SOFTMAX)


def kv_bytes(
    spec: ModelSpec, context: int, bits: int = 16, batch: int = 1, include_state: bool = True
) -> int | Fraction:
    """Bytes of cache (and, if ``include_state``, fixed linear-attention state) for ``batch``
    sequences of ``context`` tokens. Exact (an int, or a Fraction for sub-byte elements)."""
    counts = _layer_counts(spec)
    elements = _attention_elements(spec, counts, context)
    if include_state:
        elements += sum(_state_layers(spec, counts))
    return to_bytes(elements * batch, bits) + _indexer_bytes(spec, counts, context) * batch


def _kv_formula(spec: ModelSpec, counts: LayerCounts, bits: int) -> tuple[str, int, float, float | None]:
    """The KV formula's text, the MHA elements per token per layer it is compared with, the KV read
    intensity (FLOPs per byte of cache read in decode attention) and, for MLA, the absorbed form's
    FLOPs over the plain form's (None otherwise): (formula, mha_elements, intensity, absorbed_ratio)."""
    att = spec.attention
    per = kv_elements_per_token_per_layer(spec)
    n_q = att.num_attention_heads
    absorbed_ratio = None
    if isinstance(att, MLAAttention):
        # per cached position and head: absorbed QK^T over the latent + RoPE key and AV over the
        # latent, against the plain form's (qk_nope + qk_rope) and v_head_dim
        absorbed_ratio = (2 * att.kv_lora_rank + att.qk_rope_head_dim) / (
            att.qk_nope_head_dim + att.qk_rope_head_dim + att.v_head_dim
        )
        formula = (
            f"(kv_lora_rank + qk_rope_head_dim) x bytes = ({att.kv_lora_rank} + {att.qk_rope_head_dim})"
            f" x {bits / 8:g} B per token per layer"
        )
        if att.indexer is not None:
            formula += f", + indexer key {indexer_key_bytes(spec)} B (FP8 + fp32 scales)"
        mha_elements = 2 * n_q * att.v_head_dim
        intensity = 2 * n_q * (2 * att.kv_lora_rank + att.qk_rope_head_dim) / ((per * bits) / 8)
    else:
        n_kv, d_h, d_v = spec.num_key_value_heads, spec.head_dim, spec.v_head_dim
        if d_v == d_h:
            formula = f"2 x n_kv x d_head x bytes = 2 x {n_kv} x {d_h} x {bits / 8:g} B per token per layer"
        else:
            formula = f"n_kv x (d_head + d_v) x bytes = {n_kv} x ({d_h} + {d_v}) x {bits / 8:g} B per token per layer"
        if att.indexer is not None:  # MiniMax-M3's block indexer
            formula += (
                f", + indexer key {indexer_key_bytes(spec)} B (bf16) on the "
                f"{indexer_layers(spec, counts)} indexed layers"
            )
        n_swa = spec.kv_heads_of(LayerType.SLIDING_ATTENTION)
        if n_swa != n_kv and counts.mixer(LayerType.SLIDING_ATTENTION):
            formula += f" (sliding layers: n_kv = {n_swa})"
        mha_elements = n_q * (d_h + d_v)
        intensity = (2 * n_q * (d_h + d_v)) / (n_kv * (d_h + d_v) * bits / 8)
        if att.has_global_geometry and counts.mixer(LayerType.FULL_ATTENTION):
            g_kv, g_h = spec.heads_of(LayerType.FULL_ATTENTION)
            formula += f"; full-attention layers 2 x {g_kv} x {g_h} x {bits / 8:g} B"
            # over every caching layer: 4 n_q d_head FLOPs per cached token against its 2 n_kv d_head elements
            flops = sum(counts.mixer(t) * 4 * n_q * spec.heads_of(t)[1] for t in _SOFTMAX)
            cached_all = sum(_owners(spec, counts, t) * kv_elements_per_token(spec, t) for t in _SOFTMAX)
            intensity = flops / (cached_all * bits / 8)
    return formula, mha_elements, intensity, absorbed_ratio


def _layer_kinds(spec: ModelSpec, counts: LayerCounts, bits: int, formula: str) -> list[KVLayerKind]:
    """Each layer kind's cache: K/V per token of the softmax kinds (with their window or chunk
    cap), fixed state per sequence of the Mamba-2, short-convolution and linear-attention kinds."""
    att = spec.attention
    window = att.sliding_window if isinstance(att, GQAAttention) else None
    state, conv = linear_state_elements(spec)
    kinds = []
    chunk = att.attention_chunk_size if isinstance(att, GQAAttention) else None
    for kind, n in counts.mixers.items():
        if kind == LayerType.MLP_ONLY:
            continue
        if kind == LayerType.MAMBA2:
            assert spec.mamba is not None
            m = spec.mamba
            m_state, m_conv = mamba_state_elements(spec)
            kinds.append(
                KVLayerKind(
                    kind,
                    n,
                    0,
                    0,
                    None,
                    to_bytes(m_state, bits),
                    to_bytes(m_conv, bits),
                    f"SSM state H x P x N = {m.num_heads} x {m.head_dim} x {m.state_size} per sequence",
                )
            )
        elif kind == LayerType.SHORT_CONV:
            assert spec.short_conv is not None
            _, sc_conv = short_conv_state_elements(spec)
            kinds.append(
                KVLayerKind(
                    kind,
                    n,
                    0,
                    0,
                    None,
                    0,
                    to_bytes(sc_conv, bits),
                    f"conv state d x (kernel - 1) = {spec.hidden_size} x {spec.short_conv.conv_kernel - 1} per sequence",
                )
            )
        elif kind == LayerType.LINEAR_ATTENTION:
            assert spec.linear_attention is not None
            la = spec.linear_attention
            if isinstance(la, KimiDeltaAttention):
                shape = f"state H x K x K = {la.num_heads} x {la.head_dim} x {la.head_dim} per sequence"
            else:
                shape = (
                    f"state n_v x d_k x d_v = {la.linear_num_value_heads} x "
                    f"{la.linear_key_head_dim} x {la.linear_value_head_dim} per sequence"
                )
            kinds.append(KVLayerKind(kind, n, 0, 0, None, to_bytes(state, bits), to_bytes(conv, bits), shape))
        else:
            cap = {LayerType.SLIDING_ATTENTION: window, LayerType.CHUNKED_ATTENTION: chunk}.get(kind)
            per_kind = kv_elements_per_token(spec, kind)
            # an indexer key on every layer of the kind (DeepSeek); MiniMax-M3's sit on some full layers only
            whole_kind = indexer_layers(spec, counts) == counts.of(LayerKind.SOFTMAX_ATTENTION)
            per_bytes = to_bytes(per_kind, bits) + (indexer_key_bytes(spec) if whole_kind else 0)
            owners = _owners(spec, counts, kind)  # KV-shared layers (Gemma 4) cache nothing of their own
            if owners:
                kinds.append(KVLayerKind(kind, owners, per_kind, per_bytes, cap, 0, 0, formula))
    return kinds


def _kv_conventions(spec: ModelSpec, counts: LayerCounts, contexts: list[int], bits: int, kv_dtype: str) -> list[Note]:
    """The conventions a KV result prints: the dtype and context, then each state, indexer, chunk
    and window the model has, then the model's own context note."""
    att = spec.attention
    window = att.sliding_window if isinstance(att, GQAAttention) else None
    chunk = att.attention_chunk_size if isinstance(att, GQAAttention) else None
    state, _ = linear_state_elements(spec)
    conventions = [note("kv.dtype", dtype=str(kv_dtype), bits=bits), note("kv.context")]
    if state:
        conventions.append(note("kv.linear_state"))
    if counts.mixer(LayerType.MAMBA2):
        conventions.append(note("kv.mamba_state"))
    if counts.mixer(LayerType.SHORT_CONV):
        conventions.append(note("kv.short_conv_state"))
    idx = sparse_indexer(spec)
    if idx is not None and idx.kind == "minimax_m3":
        conventions.append(note("kv.indexer_block", bytes=indexer_key_bytes(spec), layers=indexer_layers(spec, counts)))
    elif idx is not None:
        conventions.append(note("kv.indexer", bytes=indexer_key_bytes(spec)))
    if chunk and counts.mixer(LayerType.CHUNKED_ATTENTION):
        conventions.append(note("kv.chunk", chunk=chunk))
    if window:
        conventions.append(note("kv.window", window=window))
    conventions += spec.context_note(contexts)
    return conventions


def _kv_per_gpu(
    spec: ModelSpec, layout: Layout | None, contexts: list[int], bits: int
) -> tuple[PerGPU | None, list[list[int | Fraction]] | None, int | Fraction | None]:
    """With ``layout``: the per-GPU shards, each pipeline stage's KV bytes of one sequence at each
    context (windows and state honoured) and the KV bytes per token over all GPUs; Nones without."""
    if layout is None:
        return None, None, None
    from llm_cost.model.layout import per_gpu, stage_kv_bytes

    shards = per_gpu(spec, layout, 16, bits)
    by_context = [stage_kv_bytes(spec, layout, c, bits) for c in contexts]
    sequence_bytes = [[row[i] for row in by_context] for i in range(layout.pp)]
    return shards, sequence_bytes, sum(shards.kv_bytes_per_token) * layout.tp


def kv_cache(
    spec: ModelSpec,
    contexts: list[int],
    bits: int = 16,
    kv_dtype: str = "bf16",
    batch: int = 1,
    layout: Layout | None = None,
) -> KVResult:
    """KV-cache sizes of ``spec`` at each context (tokens per sequence) for ``batch`` sequences;
    with ``layout``, also the KV per token on one GPU of each pipeline stage (InputError for a
    layout that cannot hold the model)."""
    counts = _layer_counts(spec)
    att = spec.attention
    per = kv_elements_per_token_per_layer(spec)
    L = spec.num_hidden_layers
    n_q = att.num_attention_heads
    formula, mha_elements, intensity, absorbed_ratio = _kv_formula(spec, counts, bits)
    kinds = _layer_kinds(spec, counts, bits, formula)
    caching = sum(_owners(spec, counts, t) for t in _SOFTMAX)  # layers with a cache of their own
    cached_per_token = sum(_owners(spec, counts, t) * kv_elements_per_token(spec, t) for t in _SOFTMAX)
    # every layer a full-attention one: softmax layers with their own K/V heads, the others with a full layer's
    every_layer = cached_per_token + (L - caching) * per
    mha_type = dict.fromkeys(_SOFTMAX, mha_elements)
    if isinstance(att, GQAAttention) and att.has_global_geometry:  # MHA of each layer type's own head width
        mha_type = {t: 2 * n_q * spec.heads_of(t)[1] for t in _SOFTMAX}
    mha_per_token = sum(_owners(spec, counts, t) * n for t, n in mha_type.items())
    show_mha = (
        isinstance(att, MLAAttention)
        or n_q != spec.num_key_value_heads
        or any(n_q != spec.kv_heads_of(t) for t in _SOFTMAX if counts.mixer(t))
    )
    rows = []
    hybrid = counts.mixer(LayerType.FULL_ATTENTION) != counts.total
    all_state, all_conv = _state_layers(spec, counts)
    st, cv = to_bytes(all_state, bits), to_bytes(all_conv, bits)
    for s in contexts:
        cached = _attention_elements(spec, counts, s)  # kv_bytes(spec, s, bits), the counts looked up once
        indexed = _indexer_bytes(spec, counts, s)
        kv = to_bytes(cached, bits) + indexed
        total = to_bytes((cached + all_state + all_conv) * batch, bits) + indexed * batch
        mha = to_bytes(_attention_elements(spec, counts, s, mha_type) * batch, bits) if show_mha else None
        every = to_bytes(every_layer * s * batch, bits) if hybrid else None
        rows.append(KVAtContext(s, kv, st, cv, total, mha, every))

    conventions = _kv_conventions(spec, counts, contexts, bits, kv_dtype)
    shards, sequence_bytes, all_gpus = _kv_per_gpu(spec, layout, contexts, bits)
    return KVResult(
        model=spec.name,
        kv_dtype=kv_dtype,
        bits_per_element=bits,
        batch=batch,
        layer_kinds=kinds,
        bytes_per_token=kv_bytes_per_token(spec, bits),
        mha_bytes_per_token=to_bytes(mha_per_token, bits) if show_mha else None,
        mha_ratio=mha_per_token / cached_per_token if show_mha and cached_per_token else None,
        kv_read_intensity_flop_per_byte=intensity,
        mla_absorbed_flop_ratio=absorbed_ratio,
        contexts=rows,
        formula=formula,
        conventions=conventions,
        layout=layout,
        per_gpu=shards,
        per_gpu_sequence_bytes=sequence_bytes,
        all_gpus_bytes_per_token=all_gpus,
        bytes_per_token_past_windows=kv_bytes_per_token_past_windows(spec, bits),
    )
