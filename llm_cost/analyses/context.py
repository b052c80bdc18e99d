"""The cost of long context (seed 003 §04-§05).

Per token, weights cost 2 x N FLOPs whatever the context; attention costs
2 n_q (d_qk + d_v) per position seen in every softmax layer (4 n_q d_head L s for a plain GQA
model), so beyond some context attention dominates. This module finds that crossover, the
attention/weight ratio, the prefill (time to first token) at long context, the KV (and fixed
state) per request, and the size of one materialised score matrix S = QK^T per layer
(n_q s^2 elements), which FlashAttention never writes to HBM.

Every FLOP comes from the step's operators (:mod:`llm_cost.workload.step`): attention per token
is a one-token decode step's attention operators; the prefill is the same step
``roofline --phase prefill`` times (LM head on the last position unless ``Logits.ALL``), bound
and estimate from :mod:`llm_cost.perf.timemodel`. "Weight FLOPs per token" follow a stated
convention (:func:`llm_cost.workload.flops.weight_flops_params`): ``gemm`` (2 x N_gemm, the
default), ``non_embedding`` (seed 003 §02's "2 x 7.5B") or ``total`` (2 x N, seed 003 §05's 70B
column); ``document_prefill_flops`` is seed 003 §05's closed form under that convention,
2 N s + attention, a labelled alternative to the step's count.
"""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction

from llm_cost.analyses.roofline import memory_note
from llm_cost.core.choices import Logits, MLAForm, WeightFlops
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Dtype, OpKind
from llm_cost.core.units import Number
from llm_cost.model.kv import KVAtContext, kv_cache
from llm_cost.model.layout import ONE_GPU
from llm_cost.model.structure import build
from llm_cost.perf.timemodel import DEFAULT_MBU, DEFAULT_MFU, EfficiencyEstimate, RooflineBound
from llm_cost.specs.schema import HardwareSpec, ModelSpec
from llm_cost.workload.flops import weight_flops_params
from llm_cost.workload.step import SeqGroup, build_step, prefill

__all__ = ["ContextRow", "ContextResult", "context_analysis", "attention_flops_per_token", "crossover_context"]

_ATTENTION = (OpKind.ATTENTION, OpKind.RECURRENCE)


def attention_flops_per_token(spec: ModelSpec, positions: int) -> int:
    """Attention FLOPs (QK^T + AV, all layers, plus any linear-attention recurrence) of one token
    that sees ``positions`` positions, itself included (decode after positions - 1 cached), in the
    plain form for MLA."""
    step = build_step(spec, [SeqGroup(1, 1, positions - 1)], mla_form=MLAForm.PLAIN)
    return int(step.total("flops", _ATTENTION))


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


@record
class ContextRow:
    """Costs at one context length (tokens per request)."""

    context: int
    attention_flops_per_token: int  # a token seeing `context` positions
    weight_flops_per_token: int
    attention_to_weight: float
    prefill_flops: int  # the step's operators: the prefill of one `context`-token prompt
    document_prefill_flops: int  # seed 003 §05: weight FLOPs per token x s + causal attention
    prefill_bound_s: float | None  # time to first token at the GPU's peak
    prefill_estimate_s: float | None  # at MFU x peak, MBU x bandwidth
    document_prefill_time_s: float | None  # document_prefill_flops at MFU x peak (seed 003 §05)
    kv_bytes: Number  # per request, caching layers
    state_bytes: Number  # per request, linear-attention recurrent + conv state
    kv_plus_state_bytes: Number
    all_attention_kv_bytes: Number | None  # hybrid / sliding: every layer full attention
    scores_bytes_per_layer: int  # a materialised S = QK^T (n_q s^2 elements) at 16 bits


@record
class ContextResult(Result):
    """Long-context costs of one model."""

    model: str
    weight_convention: WeightFlops
    weight_flops_per_token: int
    crossover_context: float | None
    gpu: str | None
    compute_dtype: Dtype
    mfu: float
    mbu: float
    logits: Logits
    peak_flops_per_s: float | None
    kv_bits: int
    rows: list[ContextRow]
    conventions: list[Note] = field(default_factory=list)


def _row(
    spec: ModelSpec, s: int, k: KVAtContext, w: int, gpu: HardwareSpec | None, peak: float | None, mfu: float, mbu: float,
    dtype: Dtype, kv_bits: int, logits: Logits, weight_bits: int | Fraction,
) -> ContextRow:  # fmt: skip
    """The figures at context ``s`` (``k``: its KV-cache row): attention and weight FLOPs per token,
    a prefill's FLOPs and times (the step's bound and estimate; the document's at MFU), KV and state
    bytes, and one layer's score matrix."""
    n_q = spec.attention.num_attention_heads
    att = attention_flops_per_token(spec, s)
    step = build_step(
        spec,
        prefill(1, s),
        kv_bits=kv_bits,
        compute_dtype=dtype,
        logits=logits,
        mla_form=MLAForm.PLAIN,
        weight_bits=weight_bits,
    )
    document = w * s + int(step.total("flops", _ATTENTION))
    bound = RooflineBound().step_time(step, gpu).time_s if gpu is not None else None
    estimate = EfficiencyEstimate(mfu, mbu).step_time(step, gpu).time_s if gpu is not None else None
    state = k.state_bytes + k.conv_state_bytes
    return ContextRow(
        context=s,
        attention_flops_per_token=att,
        weight_flops_per_token=w,
        attention_to_weight=att / w,
        prefill_flops=int(step.flops),
        document_prefill_flops=document,
        prefill_bound_s=bound,
        prefill_estimate_s=estimate,
        document_prefill_time_s=document / (mfu * peak) if peak else None,
        kv_bytes=k.kv_bytes,
        state_bytes=state,
        kv_plus_state_bytes=k.kv_bytes + state,
        all_attention_kv_bytes=k.all_attention_bytes,
        scores_bytes_per_layer=n_q * s * s * 2,
    )


def context_analysis(
    spec: ModelSpec,
    contexts: list[int],
    gpu: HardwareSpec | None = None,
    mfu: float = DEFAULT_MFU,
    dtype: Dtype = Dtype.BF16,
    weight_convention: WeightFlops = WeightFlops.GEMM,
    kv_bits: int = 16,
    mbu: float = DEFAULT_MBU,
    logits: Logits = Logits.LAST,
    weight_bits: int | Fraction | None = None,
) -> ContextResult:
    """Crossover, ratios, prefill (TTFT), KV per request and score-matrix size at each context,
    the weights at ``weight_bits`` (None: the checkpoint's ``torch_dtype``, the documents' reading;
    the API passes the checkpoint's formats, as ``roofline`` weighs them).
    InputError for a GPU lacking ``dtype``."""
    bits = weight_bits if weight_bits is not None else Dtype(spec.torch_dtype).bits
    structure = build(spec)
    w = 2 * weight_flops_params(structure, weight_convention)
    peak = gpu.peak_flops(dtype) if gpu is not None else None
    kv = kv_cache(spec, contexts, kv_bits)
    rows = [
        _row(spec, s, k, w, gpu, peak, mfu, mbu, dtype, kv_bits, logits, bits) for s, k in zip(contexts, kv.contexts)
    ]
    conventions = [
        note(f"weight_flops.{weight_convention}"),
        note("context.attention_per_token"),
        note("context.prefill", dtype=dtype, mfu=mfu, mbu=mbu, gpu=gpu is not None),
        note(f"logits.{logits}"),
        note("context.document_prefill", mfu=mfu, peak_tflops=peak / 1e12 if peak else None),
        note("context.scores", kv_bits=kv_bits),
    ] + spec.context_note(contexts)
    if gpu is not None:
        conventions += memory_note(spec, gpu, ONE_GPU, Fraction(bits), kv_bits, 1, max(contexts), takes_layout=False)
    return ContextResult(
        spec.name,
        weight_convention,
        w,
        crossover_context(spec, w),
        gpu.name if gpu else None,
        dtype,
        mfu,
        mbu,
        logits,
        peak,
        kv_bits,
        rows,
        conventions,
    )
