"""The shape of a model's cache: elements one token adds to a layer's KV cache, and the fixed
state of a linear-attention layer (seed 000 §七, seed 003 §04-§05).

* GQA/MHA/MQA: 2 x n_kv x d_head (K and V) per token per layer; n_kv x (d_head + d_v) when the value
  heads are d_v wide, with the sliding layers' own n_kv when they have one (MiMo-V2-Flash: 4 x (192 +
  128) on its full layers, 8 x (192 + 128) on its sliding ones; transformers
  models/mimo_v2_flash/modeling_mimo_v2_flash.py MiMoV2FlashAttention).
* MLA: kv_lora_rank + qk_rope_head_dim (the latent c_KV and the decoupled RoPE key). With DeepSeek
  Sparse Attention each layer also keeps the indexer's key: D_i FP8 bytes and one fp32 scale per
  128 of them, whatever the KV dtype (:func:`indexer_key_bytes`). MiniMax-M3's block indexer keeps a
  D_i-wide bf16 key on each of its sparse layers (vLLM vllm/models/minimax_m3/common/indexer.py
  MiniMaxM3IndexerCache, indexer_kv_dtype "bf16" by default; transformers'
  MiniMaxM3VLSparseCacheLayer keeps idx_keys in the activations' dtype).
* Mamba-2: an SSM state of H x P x N (heads x head_dim x state size) per sequence per layer and a
  conv state of conv_dim x (kernel - 1), as vLLM's Mamba-2 cache holds them.
* LFM2 short convolution: no per-token cache and no recurrent state; a conv state of
  d x (kernel - 1) per sequence per layer (vLLM's ShortConv cache).
* Kimi Delta Attention: no per-token cache; a recurrent state of H x K x K elements per sequence
  per layer plus the q/k/v short-conv state of 3 H K x (kernel - 1).
* Gated DeltaNet: no per-token cache; a recurrent state of n_v x d_k x d_v elements per sequence
  per layer plus a causal-conv state of (2 n_k d_k + n_v d_v) x (kernel - 1) elements.
"""

from __future__ import annotations

from typing import Protocol

from llm_cost.core.types import LayerKind, LayerType
from llm_cost.specs.schema import GQAAttention, MLAAttention, ModelSpec, SparseIndexer

__all__ = [
    "INDEXER_SCALE_BLOCK",
    "indexer_key_bytes",
    "indexer_layers",
    "sparse_indexer",
    "kv_elements_per_token",
    "kv_elements_per_token_per_layer",
    "kv_elements_by_type",
    "linear_state_elements",
    "mamba_state_elements",
    "short_conv_state_elements",
]


#: Elements of an indexer key that share one fp32 scale (DeepSeek-V3.2-Exp inference/model.py
#: ``block_size``; vLLM's and SGLang's ``quant_block_size``).
INDEXER_SCALE_BLOCK = 128


class _Counts(Protocol):
    def of(self, kind: LayerKind) -> int: ...


def sparse_indexer(spec: ModelSpec) -> SparseIndexer | None:
    """The lightning indexer of ``spec``'s attention (DeepSeek Sparse Attention on MLA, MiniMax-M3's
    on GQA), or None."""
    att = spec.attention
    return att.indexer if isinstance(att, (MLAAttention, GQAAttention)) else None


def indexer_key_bytes(spec: ModelSpec) -> int:
    """Bytes one token adds to one indexed layer's lightning-indexer key cache: DeepSeek's D_i FP8
    bytes plus 4 bytes of fp32 scale per 128 elements (D_i = 128: 132 B, vLLM's "128 fp8 + 4 fp32
    scale"); MiniMax-M3's D_i bf16 elements (D_i = 128: 256 B); 0 without an indexer. Exact."""
    idx = sparse_indexer(spec)
    if idx is None:
        return 0
    if idx.kind == "minimax_m3":
        return 2 * idx.index_head_dim
    return idx.index_head_dim + 4 * -(-idx.index_head_dim // INDEXER_SCALE_BLOCK)


def indexer_layers(spec: ModelSpec, counts: _Counts) -> int:
    """How many of the layers ``counts`` describes hold an indexer and its key cache: every softmax
    layer (DeepSeek Sparse Attention), or the MoE layers only (MiniMax-M3's ``moe_layers_only``:
    its sparse_attention_freq equals moe_layer_freq), less the layers that share an earlier layer's
    selection (GLM-5.2's ``shared_layers``); 0 without an indexer."""
    return counts.of(LayerKind.INDEXED) if sparse_indexer(spec) is not None else 0


def kv_elements_per_token(spec: ModelSpec, layer_type: LayerType) -> int:
    """Elements one token adds to the cache of one softmax-attention layer of ``layer_type``
    (full, sliding, chunked): MLA kv_lora_rank + qk_rope_head_dim; GQA n_kv x (d_head + d_v), n_kv
    the layer type's K/V heads (:meth:`ModelSpec.kv_heads_of`); a full layer of a model with global
    geometry (Gemma 4) at its own head width (:meth:`ModelSpec.heads_of`; K and V both, even where
    V is k_proj's output)."""
    att = spec.attention
    if isinstance(att, MLAAttention):
        return att.kv_lora_rank + att.qk_rope_head_dim
    n_kv, d_h = spec.heads_of(layer_type)
    d_v = d_h if att.has_global_geometry else spec.v_head_dim
    return n_kv * (d_h + d_v)


def kv_elements_per_token_per_layer(spec: ModelSpec) -> int:
    """Elements one token adds to one full-attention layer's cache (every softmax layer's, unless
    the sliding layers have K/V heads of their own: :func:`kv_elements_per_token`)."""
    return kv_elements_per_token(spec, LayerType.FULL_ATTENTION)


def kv_elements_by_type(spec: ModelSpec) -> dict[LayerType, int]:
    """:func:`kv_elements_per_token` of each softmax layer type (full, sliding, chunked)."""
    return {t: kv_elements_per_token(spec, t) for t in LayerType if t.caches_kv}


def linear_state_elements(spec: ModelSpec) -> tuple[int, int]:
    """(recurrent state, conv state) elements of one linear-attention layer for one sequence: Gated
    DeltaNet n_v x d_k x d_v and (2 n_k d_k + n_v d_v) x (kernel - 1); Kimi Delta Attention
    H x K x K and 3 H K x (kernel - 1)."""
    la = spec.linear_attention
    if la is None:
        return 0, 0
    return la.recurrent_state, la.conv_dim * (la.conv_kernel - 1)


def mamba_state_elements(spec: ModelSpec) -> tuple[int, int]:
    """(SSM state, conv state) elements of one Mamba-2 layer for one sequence."""
    m = spec.mamba
    if m is None:
        return 0, 0
    return m.num_heads * m.head_dim * m.state_size, m.conv_dim * (m.conv_kernel - 1)


def short_conv_state_elements(spec: ModelSpec) -> tuple[int, int]:
    """(recurrent state, conv state) elements of one LFM2 short-convolution layer for one sequence:
    no recurrent state, d x (kernel - 1) of conv state (the last kernel - 1 inputs of B x)."""
    sc = spec.short_conv
    if sc is None:
        return 0, 0
    return 0, spec.hidden_size * (sc.conv_kernel - 1)
