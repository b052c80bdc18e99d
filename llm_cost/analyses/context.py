"""The cost of long context (seed 003 §04-§05).

Per token, weights cost 2 x N FLOPs whatever the context; attention costs
2 n_q (d_qk + d_v) per position seen in every softmax layer (4 n_q d_head L s for a plain GQA
model), so beyond some context attention dominates. This module finds that crossover, the
attention/weight ratio, the prefill time at long context, the KV (and fixed state) per request,
and the size of one materialised score matrix S = QK^T per layer (n_q s^2 elements), which
FlashAttention never writes to HBM.

"Weight FLOPs" follow a stated convention (see :func:`llm_cost.flops.weight_flops_params`):
``gemm`` (2 x N_gemm, the default), ``non_embedding`` (seed 003 §02's "2 x 7.5B") or
``total`` (2 x N, seed 003 §05's 70B column).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_cost.workload.flops import forward_flops, weight_flops_params
from llm_cost.model.kv import kv_cache
from llm_cost.specs.schema import HardwareSpec, ModelSpec
from llm_cost.model.structure import build

__all__ = ["ContextRow", "ContextResult", "context_analysis", "attention_flops_per_token", "crossover_context"]


def attention_flops_per_token(spec: ModelSpec, positions: int) -> float:
    """Attention FLOPs (QK^T + AV, all layers, plus any linear-attention recurrence) of one token
    that sees ``positions`` positions, itself included (decode after positions - 1 cached)."""
    return forward_flops(spec, 1, cached=positions - 1, logits="last").attention_flops


def crossover_context(spec: ModelSpec, weight_flops: float, ceiling: int = 10**10) -> float | None:
    """The context s (real-valued) where a token's attention FLOPs reach ``weight_flops``; None if
    they never do (sliding windows or linear attention only). Attention per token is piecewise
    linear in s, so the crossing is interpolated between the integers around it."""
    f = lambda s: attention_flops_per_token(spec, s)  # noqa: E731
    if f(ceiling) < weight_flops:
        return None
    if f(1) >= weight_flops:
        return 1.0
    lo, hi = 1, 2
    while f(hi) < weight_flops:
        lo, hi = hi, hi * 2
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if f(mid) >= weight_flops:
            hi = mid
        else:
            lo = mid
    a, b = f(lo), f(hi)
    return lo + (weight_flops - a) / (b - a)


@dataclass(frozen=True)
class ContextRow:
    """Costs at one context length (tokens per request)."""

    context: int
    attention_flops_per_token: float  # a token seeing `context` positions
    weight_flops_per_token: float
    attention_to_weight: float
    prefill_flops: float  # causal, weight FLOPs under the convention, logits on every position
    prefill_time_s: float | None  # at MFU x peak
    kv_bytes: int | float  # per request, caching layers
    state_bytes: int | float  # per request, linear-attention recurrent + conv state
    all_attention_kv_bytes: int | float | None  # hybrid / sliding: every layer full attention
    scores_bytes_per_layer: int  # a materialised S = QK^T (n_q s^2 elements) at 16 bits


@dataclass(frozen=True)
class ContextResult:
    """Long-context costs of one model."""

    model: str
    weight_convention: str
    weight_flops_per_token: float
    crossover_context: float | None
    gpu: str | None
    mfu: float
    peak_flops: float | None
    kv_bits: int
    rows: list[ContextRow]
    conventions: list[str] = field(default_factory=list)


def context_analysis(spec: ModelSpec, contexts: list[int], gpu: HardwareSpec | None = None, mfu: float = 0.6,
                     dtype: str = "bf16", weight_convention: str = "gemm", kv_bits: int = 16) -> ContextResult:
    """Crossover, ratios, prefill time, KV per request and score-matrix size at each context."""
    from llm_cost.analyses.roofline import peak_flops

    structure = build(spec)
    w = 2 * weight_flops_params(structure, weight_convention)
    peak = peak_flops(gpu, dtype) if gpu is not None else None
    kv = kv_cache(spec, contexts, kv_bits)
    n_q = spec.attention.num_attention_heads
    rows = []
    for s, k in zip(contexts, kv.contexts):
        att = attention_flops_per_token(spec, s)
        prefill = w * s + forward_flops(spec, s, logits="last").attention_flops
        rows.append(ContextRow(
            context=s, attention_flops_per_token=att, weight_flops_per_token=w, attention_to_weight=att / w,
            prefill_flops=prefill, prefill_time_s=prefill / (mfu * peak) if peak else None,
            kv_bytes=k.kv_bytes, state_bytes=k.state_bytes + k.conv_state_bytes,
            all_attention_kv_bytes=k.all_attention_bytes, scores_bytes_per_layer=n_q * s * s * 2))
    conventions = [
        {"gemm": "weight FLOPs per token = 2 x N_gemm (matmul weights, LM head included)",
         "non_embedding": "weight FLOPs per token = 2 x (N - input embedding), seed 003's '2 x 7.5B'",
         "total": "weight FLOPs per token = 2 x N (every parameter), seed 003 §05's 70B convention"}[weight_convention],
        "attention per token: a token seeing s positions (itself included), QK^T + AV in every softmax layer",
        "prefill: weight FLOPs x s + causal attention; " + (f"time at {mfu:.0%} MFU of {peak / 1e12:g} TFLOP/s "
                                                            f"({dtype})" if peak else "no GPU given"),
        f"KV at {kv_bits} bits per element; scores S = n_q x s^2 elements at 2 B (BF16) per layer",
    ] + spec.context_note(contexts)
    return ContextResult(spec.name, weight_convention, w, crossover_context(spec, w), gpu.name if gpu else None,
                         mfu, peak, kv_bits, rows, conventions)
