"""Roofline: ridge points, and the time bounds of a decode step and of a prefill (seed 003 §02).

The Roofline model (Williams, Waterman, Patterson 2009): a kernel doing F FLOPs over B bytes
takes at least T = max(F / P_peak, B / BW). The ridge point P_peak / BW (FLOP per byte) is the
arithmetic intensity at which the two terms meet; H100 BF16: 989.4 TFLOP/s / 3.35 TB/s = 295.

Decode step at batch B and context c (tokens already cached per sequence); bytes counted:

* weights read ("read", the default): the matmul weights a step multiplies by (for MoE the
  non-routed ones plus the expected distinct routed experts, see :mod:`llm_cost.moe`), the
  norm/bias vectors, and B rows of the input embedding;
* "resident" instead reads every stored weight once, the source documents' convention (16.06 GB / 3.35
  TB/s = 4.8 ms for Llama-3-8B; the matmul weights alone give 4.48 ms);
* the KV cache of the c cached tokens of each sequence (and any linear-attention state), plus
  the new token's K/V written. Activations are not counted.

Estimates divide the peak by an efficiency: MFU for FLOP/s, MBU for bandwidth; they are
labelled estimates, never bounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from llm_cost.workload.flops import ForwardFlops, forward_flops
from llm_cost.model.kv import kv_bytes, kv_bytes_per_token
from llm_cost.specs.schema import HardwareSpec, MLAAttention, ModelSpec
from llm_cost.model.structure import Structure, build
from llm_cost.core.units import to_bytes
from llm_cost.core.errors import InputError

__all__ = ["Ridge", "ridge_points", "default_compute_dtype", "peak_flops", "DecodeStep", "decode_step", "PrefillStep", "prefill_step",
           "OpRow", "WeightBytes", "weights_read"]

COMPUTE_DTYPES = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "int8", "int4", "fp4")


@dataclass(frozen=True)
class Ridge:
    """Ridge point of one dtype: peak FLOP/s over bandwidth B/s."""

    dtype: str
    peak_tflops: float
    bandwidth_tb_s: float
    ridge_flop_per_byte: float


def peak_flops(gpu: HardwareSpec, dtype: str) -> float:
    """Dense peak FLOP/s of ``gpu`` at ``dtype``; InputError if the GPU has no such path
    (FP8 on an A100 is an error, not a number)."""
    key = dtype.lower()
    if key not in gpu.dense_tflops:
        have = ", ".join(gpu.dense_tflops)
        raise InputError(f"{gpu.name} ({gpu.display_name}) has no {dtype} tensor-core peak for the compute dtype "
                         f"(--dtype); its datasheet lists: {have}")
    return gpu.peak_flops(key)


def default_compute_dtype(weights_dtype: str, gpu: HardwareSpec) -> str:
    """The dtype a step runs at when the user names none: FP8 for FP8 weights on a GPU with FP8
    tensor cores (DeepSeek-V3 serves this way), BF16 otherwise (weights are upcast)."""
    return "fp8" if weights_dtype == "fp8" and "fp8" in gpu.dense_tflops else "bf16"


def ridge_points(gpu: HardwareSpec) -> list[Ridge]:
    """Ridge point for every dtype the GPU's datasheet lists."""
    return [Ridge(d, t, gpu.memory_bandwidth_tb_s, t / gpu.memory_bandwidth_tb_s)
            for d, t in gpu.dense_tflops.items()]


@dataclass(frozen=True)
class OpRow:
    """One operator of a step: FLOPs, bytes, intensity, bound and its time at peak."""

    name: str
    flops: float
    bytes: float
    intensity: float | None
    bound: str
    time_s: float


@dataclass(frozen=True)
class DecodeStep:
    """One decode step of ``batch`` sequences with ``context`` cached tokens each."""

    model: str
    gpu: str
    batch: int
    context: int
    compute_dtype: str
    weight_bits: float
    kv_bits: int
    weight_bytes_convention: str
    peak_flops: float
    bandwidth_bytes_s: float
    ridge: float
    flops: float
    weight_flops: float
    attention_flops: float
    matmul_weight_bytes: float
    other_weight_bytes: float
    embedding_row_bytes: float
    resident_weight_bytes: float
    kv_read_bytes: float
    kv_write_bytes: float
    bytes: float
    intensity: float
    weight_intensity: float
    kv_intensity: float | None
    compute_time_s: float
    memory_time_s: float
    bound_s: float
    bound: str
    tokens_per_s: float
    resident_read_time_s: float
    matmul_weights_time_s: float
    mfu: float
    mbu: float
    estimate_s: float
    estimate_tokens_per_s: float
    compute_bound_batch_weights_only: int | None
    compute_bound_batch: int | None
    kv_bytes_at_compute_bound_batch: float | None
    intensity_limit: float | None
    ops: list[OpRow] = field(default_factory=list)
    conventions: list[str] = field(default_factory=list)
    deployment: object | None = None  # llm_cost.parallel.Deployment when a layout was given


@dataclass(frozen=True)
class WeightBytes:
    """Weight bytes one decode step reads at batch B: per matmul group, vectors, embedding rows."""

    by_group: dict[str, float]
    vectors: float
    embedding_rows: float

    @property
    def matmul(self) -> float:
        """Matmul weight bytes of the step (all groups)."""
        return sum(self.by_group.values())

    @property
    def total(self) -> float:
        """Every weight byte the step reads."""
        return self.matmul + self.vectors + self.embedding_rows


def weights_read(structure: Structure, batch: int, bits: Fraction) -> WeightBytes:
    """Weights a decode step of ``batch`` tokens reads: every matmul weight (routed experts: the
    expected distinct ones, E(1 - (1 - k/E)^B) per layer), the norm/bias vectors, and one
    embedding row per token (none when tied: the LM head reads the whole table anyway)."""
    from llm_cost.analyses.moe import expected_experts

    spec = structure.spec
    moe = spec.moe
    by_group: dict[str, float] = {}
    vectors = 0.0
    for t in structure.tensors_of("decoder"):
        if t.kind == "lookup":
            continue
        copies: float = t.copies
        if t.group == "routed_experts" and moe is not None:
            copies = expected_experts(moe.num_experts, moe.num_experts_per_tok, batch)
        elements = t.numel * copies * max(t.layers, 1)
        if t.kind == "matmul":
            by_group[t.group] = by_group.get(t.group, 0.0) + elements * float(bits) / 8
        elif t.stored:
            vectors += elements * float(bits) / 8
    rows = 0 if spec.tie_word_embeddings else batch * spec.hidden_size
    if spec.position_embedding == "learned":
        rows += batch * spec.hidden_size
    return WeightBytes(by_group, vectors, rows * float(bits) / 8)


def _fit_note(gpu: HardwareSpec, needed_bytes: float) -> list[str]:
    """A warning line when the weights and KV of a one-GPU bound exceed that GPU's memory."""
    if needed_bytes <= gpu.memory_bytes:
        return []
    return [f"note: weights + KV need {needed_bytes / 1e9:,.1f} GB, more than one {gpu.name}'s {gpu.memory_gb:g} GB; "
            "this one-GPU bound is hypothetical: give --tp/--pp for a layout, or see `llm-cost fit`"]


def _first_batch(intensity, ridge: float, limit: int = 10**9) -> int | None:
    """Smallest batch whose intensity reaches ``ridge`` (intensity grows with batch), or None."""
    if intensity(limit) < ridge:
        return None
    lo, hi = 1, 1
    while intensity(hi) < ridge:
        lo, hi = hi, hi * 2
    while lo < hi:
        mid = (lo + hi) // 2
        if intensity(mid) >= ridge:
            hi = mid
        else:
            lo = mid + 1
    return lo


def _op_rows(f: ForwardFlops, w: WeightBytes, kv_read: float, extra: float, peak: float, bw: float) -> list[OpRow]:
    """Per-operator rows whose FLOPs and bytes sum to the step's totals (KV bytes split over the
    attention operators in proportion to their FLOPs; vectors, rows and writes on one line)."""
    kv_flops = sum(op.flops for op in f.ops if op.kind in ("attention", "recurrence")) or 1.0
    rows = []
    for op in f.ops:
        nbytes = w.by_group.get(op.group, 0.0) if op.kind == "matmul" else kv_read * op.flops / kv_flops
        t_c, t_m = op.flops / peak, nbytes / bw
        rows.append(OpRow(op.name, op.flops, nbytes, op.flops / nbytes if nbytes else None,
                          "compute" if t_c >= t_m else "memory", max(t_c, t_m)))
    if extra:
        rows.append(OpRow("other bytes (vectors, embedding rows, KV write)", 0.0, extra, 0.0, "memory", extra / bw))
    return rows


def decode_step(spec: ModelSpec, gpu: HardwareSpec, batch: int = 1, context: int = 0, dtype: str = "bf16",
                weight_bits: float | Fraction | None = None, kv_bits: int = 16, mfu: float = 1.0, mbu: float = 1.0,
                weight_bytes: str = "read") -> DecodeStep:
    """Roofline of one decode step: every sequence adds one token after ``context`` cached ones.

    ``dtype`` selects the peak (and the weight storage unless ``weight_bits`` is given);
    ``weight_bytes`` is "read" or "resident" (see the module docstring). InputError if the GPU
    lacks ``dtype``."""
    from llm_cost.core.units import DTYPE_BITS

    if weight_bytes not in ("read", "resident"):
        raise InputError(f"weight bytes convention must be read or resident, not {weight_bytes!r}")
    peak = peak_flops(gpu, dtype)
    bw = gpu.bandwidth_bytes_s
    ridge = peak / bw
    bits = Fraction(weight_bits if weight_bits is not None else DTYPE_BITS[dtype.lower()]).limit_denominator(1000)
    structure = build(spec)
    resident = float(to_bytes(structure.decoder_params, bits))

    def weights_at(b: int) -> float:
        return resident if weight_bytes == "resident" else weights_read(structure, b, bits).total

    mla = isinstance(spec.attention, MLAAttention)
    # MLA decodes in the absorbed form: attention runs on the cached latent (DeepSeek-V2 §2.1.2)
    f = forward_flops(spec, 1, context, batch, logits="last", mla_form="absorbed" if mla else "plain")
    w = weights_read(structure, batch, bits)
    kv_seq = float(kv_bytes(spec, context, kv_bits))  # read per sequence (cache + any fixed state)
    kv_new = float(kv_bytes_per_token(spec, kv_bits))  # written per sequence
    weights_b = weights_at(batch)
    total_bytes = weights_b + batch * (kv_seq + kv_new)
    weight_flops = sum(op.flops for op in f.ops if op.kind == "matmul")
    kv_flops = f.total_flops - weight_flops
    t_c, t_m = f.total_flops / peak, total_bytes / bw
    bound = max(t_c, t_m)
    estimate = max(f.total_flops / (peak * mfu), total_bytes / (bw * mbu))

    # Decode FLOPs grow linearly with the batch; weight bytes grow only by embedding rows
    # (and, for MoE, by newly touched experts), so intensity rises with B towards a limit.
    flops_1, weight_flops_1 = f.total_flops / batch, weight_flops / batch
    b_weights = _first_batch(lambda b: b * weight_flops_1 / weights_at(b), ridge)
    b_all = _first_batch(lambda b: b * flops_1 / (weights_at(b) + b * (kv_seq + kv_new)), ridge)
    rows_1 = 0.0 if weight_bytes == "resident" else weights_read(structure, 1, bits).embedding_rows
    limit = flops_1 / (rows_1 + kv_seq + kv_new)

    extra = total_bytes - w.matmul - batch * kv_seq  # vectors, embedding rows (or the rest if resident), KV write
    conventions = [
        f"decode step: {batch} sequence(s), each adding 1 token after {context:,} cached tokens; "
        "the new token attends to itself and every cached token",
        f"peak {gpu.dense_tflops[dtype.lower()]:g} TFLOP/s dense {dtype}, bandwidth {gpu.memory_bandwidth_tb_s:g} "
        "TB/s (10^12 B/s), from the GPU spec",
        ("bytes: every stored weight once (resident, the source documents' convention)" if weight_bytes == "resident" else
         "bytes: matmul weights used + norm/bias vectors + B embedding rows") +
        f" at {float(bits):g} bits, KV read at {kv_bits} bits + the new K/V written; activations not counted",
        "a bound is max(FLOPs / peak, bytes / bandwidth); an estimate divides peak by MFU and bandwidth by MBU",
    ]
    if spec.moe is not None:
        conventions.append("MoE: routed expert weights read = expected distinct experts E(1 - (1 - k/E)^B) per layer")
    if mla:
        conventions.append("MLA: decode attention in the absorbed form, on the cached latent and RoPE key")
    conventions += _fit_note(gpu, resident + batch * (kv_seq + kv_new))
    return DecodeStep(
        model=spec.name, gpu=gpu.name, batch=batch, context=context, compute_dtype=dtype.lower(),
        weight_bits=float(bits), kv_bits=kv_bits, weight_bytes_convention=weight_bytes,
        peak_flops=peak, bandwidth_bytes_s=bw, ridge=ridge,
        flops=f.total_flops, weight_flops=weight_flops, attention_flops=kv_flops,
        matmul_weight_bytes=w.matmul, other_weight_bytes=w.vectors, embedding_row_bytes=w.embedding_rows,
        resident_weight_bytes=resident, kv_read_bytes=batch * kv_seq, kv_write_bytes=batch * kv_new,
        bytes=total_bytes, intensity=f.total_flops / total_bytes, weight_intensity=weight_flops / weights_b,
        kv_intensity=kv_flops / (batch * kv_seq) if kv_seq else None,
        compute_time_s=t_c, memory_time_s=t_m, bound_s=bound, bound="compute" if t_c >= t_m else "memory",
        tokens_per_s=batch / bound, resident_read_time_s=resident / bw, matmul_weights_time_s=w.matmul / bw,
        mfu=mfu, mbu=mbu, estimate_s=estimate, estimate_tokens_per_s=batch / estimate,
        compute_bound_batch_weights_only=b_weights, compute_bound_batch=b_all,
        kv_bytes_at_compute_bound_batch=b_weights * kv_seq if b_weights else None, intensity_limit=limit,
        ops=_op_rows(f, w, batch * kv_seq, extra, peak, bw), conventions=conventions,
    )


@dataclass(frozen=True)
class PrefillStep:
    """A prefill of ``batch`` prompts of ``seq`` tokens: FLOPs, bytes and times."""

    model: str
    gpu: str
    batch: int
    seq: int
    compute_dtype: str
    attention: str
    logits: str
    flops: float
    weight_flops: float
    attention_flops: float
    weight_bytes: float
    kv_write_bytes: float
    bytes: float
    intensity: float
    peak_flops: float
    bandwidth_bytes_s: float
    compute_time_s: float
    memory_time_s: float
    bound_s: float
    bound: str
    mfu: float
    estimate_s: float
    tokens_per_s_at_mfu: float
    conventions: list[str] = field(default_factory=list)


def prefill_step(spec: ModelSpec, gpu: HardwareSpec, seq: int, batch: int = 1, dtype: str = "bf16",
                 weight_bits: float | None = None, kv_bits: int = 16, mfu: float = 0.6, attention: str = "causal",
                 logits: str = "last") -> PrefillStep:
    """Roofline of a prefill: FLOPs from :func:`forward_flops`; bytes = every stored weight once
    plus the K/V written. Time at peak is a bound; at ``mfu`` an estimate."""
    from llm_cost.core.units import DTYPE_BITS

    peak = peak_flops(gpu, dtype)
    bw = gpu.bandwidth_bytes_s
    bits = Fraction(weight_bits if weight_bits is not None else DTYPE_BITS[dtype.lower()]).limit_denominator(1000)
    f = forward_flops(spec, seq, 0, batch, attention=attention, logits=logits)
    weights = float(to_bytes(build(spec).decoder_params, bits))
    kv_write = float(kv_bytes(spec, seq, kv_bits, batch))
    total = weights + kv_write
    weight_flops = sum(op.flops for op in f.ops if op.kind == "matmul")
    t_c, t_m = f.total_flops / peak, total / bw
    est = max(f.total_flops / (peak * mfu), t_m)
    conventions = f.conventions + [
        f"peak {gpu.dense_tflops[dtype.lower()]:g} TFLOP/s dense {dtype}; estimate at MFU {mfu:.0%}",
        "bytes: every stored weight once + the K/V written; activations not counted",
    ] + _fit_note(gpu, total)
    return PrefillStep(spec.name, gpu.name, batch, seq, dtype.lower(), attention, logits, f.total_flops,
                       weight_flops, f.total_flops - weight_flops, weights, kv_write, total, f.total_flops / total,
                       peak, bw, t_c, t_m, max(t_c, t_m), "compute" if t_c >= t_m else "memory", mfu, est,
                       batch * seq / est, conventions)

