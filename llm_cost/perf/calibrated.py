"""The calibrated time model: a prediction of a step's time from its operators and a profile.

Every term is physical, with a unit; none depends on the model (a profile is per GPU and engine).
Per operator, with P the dense peak FLOP/s of the step's compute dtype and BW the datasheet bandwidth:

* GEMM: compute t_c = FLOPs / (P x e_gemm(M)), e_gemm(M) = e_max x M / (M + M_half) (tokens in flight
  M; a tile of M rows fills the tensor cores as M grows, saturating at ``gemm_efficiency_max``);
  memory t_m = weight bytes / (BW x e_w) + activation bytes (GEMM inputs and outputs) / (BW x e_bw),
  e_w the bandwidth efficiency of the weight format (native 16-bit/fp8, weight-only int8, weight-only
  int4 with its group scales: dequantising kernels reach their own share of bandwidth, fitted where
  rows of that format exist) and e_bw the native one.
  t = (t_c^p + t_m^p)^(1/p), a p-norm: max(t_c, t_m) as p -> inf, their sum at p = 1 (compute and
  memory overlap imperfectly near the ridge).
* attention: compute FLOPs / (P x e_flash) (flash-attention efficiency, prefill) and KV read /
  (BW x e_kv(x)) + KV written / (BW x e_bw), with x the thread blocks in flight: sequences x KV
  heads per GPU for a kernel without split-KV, those of FlashAttention's split-KV launch for a
  profile with ``decode_split_kv`` on a GPU spec with ``sm_count`` (:mod:`llm_cost.perf.kernels`),
  e_kv(x) = e_kv,max x x / (x^4 + x_sat^4)^(1/4): linear in x until it saturates near x_sat;
  combined by the same p-norm.
* recurrence, norms/vectors and embedding rows: FLOPs at the GEMM ceiling and bytes at e_bw, p-norm.
* collectives: per call, latency + bytes / (link GB/s x e_link); one call per layer repeat.
* per step: ``layer_overhead_s`` x layers + ``step_overhead_s`` per pipeline stage (kernel launches,
  CUDA-graph replay, synchronisation; smaller with torch.compile than with eager kernels).

The stage's time is the sum of its operators' times and its fixed time (kernels run one after another;
overlap is inside an operator, through the p-norm); the step's time sums the stages, as the bound does.

The formulas below use only arithmetic, so :mod:`llm_cost.analyses.calibration` evaluates the same
functions on numpy arrays when it fits a profile (one implementation).
"""

from __future__ import annotations

import dataclasses
from fractions import Fraction
from functools import lru_cache
from typing import Any

from llm_cost.core.labels import Bound, TimeKind
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.types import DTYPE_BITS, OpKind
from llm_cost.perf.kernels import attention_blocks
from llm_cost.perf.profile import Parameters, Profile, default_profile
from llm_cost.perf.timemodel import (
    DEFAULT_NETWORK_GB_S,
    EfficiencyEstimate,
    OpTime,
    StageTime,
    StepTime,
    link_of,
    sum_stages,
)
from llm_cost.specs.declare import to_data
from llm_cost.specs.schema import HardwareSpec
from llm_cost.workload.step import Operator, Step

__all__ = [
    "CalibratedModel",
    "prediction_model",
    "weight_format",
    "gemm_efficiency",
    "kv_efficiency",
    "smooth_max",
    "gemm_terms",
    "attention_terms",
    "other_terms",
    "collective_time",
    "KV_KNEE_POWER",
    "Band",
    "band_factors",
    "widened",
    "RANGE_WIDEN_PER_OCTAVE",
    "RANGE_WIDEN_MAX",
    "SplitKvGap",
    "SPLIT_KV_GAP",
    "split_kv_gap",
    "split_kv_notes",
]

#: Sharpness of the knee of the decode-attention efficiency (a 4-norm: within 16% of the linear ramp
#: and the ceiling away from x_sat); a fixed shape, not a fitted parameter.
KV_KNEE_POWER = 4


def weight_format(weight_bits: Fraction | float, compute_bits: int) -> str:
    """ "native" when weights are stored at least as wide as the compute dtype (bf16 weights with bf16
    compute, fp8 with fp8); else weight-only "int8" (8 to 15 bits per weight incl. scales) or "int4"
    (below 8 bits: 4.25 or 5 with group scales and zeros)."""
    bits = float(weight_bits)
    if bits >= compute_bits:
        return "native"
    return "int8" if bits >= 8 else "int4"


def gemm_efficiency(m: Any, e_max: float, m_half: float) -> Any:
    """Fraction of peak FLOP/s a GEMM of ``m`` rows (tokens) reaches: e_max x m / (m + m_half)."""
    return e_max * m / (m + m_half)


def kv_efficiency(x: Any, e_max: float, x_sat: float) -> Any:
    """Fraction of bandwidth decode attention reads the KV cache at, with ``x`` = sequences x KV
    heads in flight: e_max x x / (x^4 + x_sat^4)^(1/4)."""
    q = KV_KNEE_POWER
    return e_max * x / (x**q + x_sat**q) ** (1.0 / q)


def smooth_max(a: Any, b: Any, p: float) -> Any:
    """(a^p + b^p)^(1/p), seconds: between max(a, b) (p -> inf) and a + b (p = 1). Scaled by the
    larger term so that it never overflows."""
    top = a + b + 1e-30  # a positive scale; the terms are non-negative
    return top * ((a / top) ** p + (b / top) ** p) ** (1.0 / p)


def gemm_terms(
    flops: Any, weight_bytes: Any, activation_bytes: Any, m: Any, e_w: Any, peak: float, bw: float, q: dict[str, float]
) -> tuple[Any, Any]:
    """(compute, memory) seconds of a GEMM (see the module docstring); ``q`` the profile's parameters."""
    compute = flops / (peak * gemm_efficiency(m, q["gemm_efficiency_max"], q["gemm_half_tokens"]))
    memory = weight_bytes / (bw * e_w) + activation_bytes / (bw * q["bandwidth_efficiency_native"])
    return compute, memory


def attention_terms(
    flops: Any, kv_read: Any, kv_write: Any, x: Any, peak: float, bw: float, q: dict[str, float]
) -> tuple[Any, Any]:
    """(compute, memory) seconds of an attention operator: FLOPs at the flash-attention efficiency,
    KV read at the in-flight efficiency of ``x`` = sequences x KV heads, KV written at the native
    bandwidth efficiency."""
    compute = flops / (peak * q["attention_efficiency_flash"])
    memory = kv_read / (bw * kv_efficiency(x, q["kv_efficiency_max"], q["kv_saturation_heads"])) + kv_write / (
        bw * q["bandwidth_efficiency_native"]
    )
    return compute, memory


def other_terms(flops: Any, nbytes: Any, peak: float, bw: float, q: dict[str, float]) -> tuple[Any, Any]:
    """(compute, memory) seconds of a recurrence, the norm/bias vectors or embedding rows: FLOPs at
    the GEMM ceiling, bytes at the native bandwidth efficiency."""
    return flops / (peak * q["gemm_efficiency_max"]), nbytes / (bw * q["bandwidth_efficiency_native"])


def collective_time(calls: Any, bytes_per_call: Any, link_bytes_s: float, q: dict[str, float]) -> Any:
    """Seconds of ``calls`` collectives of ``bytes_per_call`` each: latency + bytes / achieved link rate."""
    return calls * (q["collective_latency_s"] + bytes_per_call / (link_bytes_s * q["link_efficiency"]))


def _format_efficiency(step: Step, q: dict[str, float]) -> float:
    fmt = weight_format(step.weight_bits, DTYPE_BITS[step.compute_dtype])
    return q[f"bandwidth_efficiency_{fmt}"]


def _op_time(
    op: Operator, e_w: float, peak: float, bw: float, link_bytes_s: float, q: dict[str, float], blocks: float
) -> tuple[float, float, float, float]:
    """(compute, memory, link, time) seconds of one operator under the profile's parameters, GEMM
    weights read at bandwidth efficiency ``e_w`` (their format's), an attention operator's KV at
    the efficiency of ``blocks`` thread blocks in flight (:func:`~llm_cost.perf.kernels.attention_blocks`)."""
    if op.kind == OpKind.COLLECTIVE:
        assert op.collective is not None  # every collective operator carries its payload
        t = collective_time(op.layers, float(op.collective.bytes_per_call), link_bytes_s, q)
        return 0.0, 0.0, t, t
    if op.kind == OpKind.GEMM:
        c, m = gemm_terms(
            float(op.flops), float(op.weight_bytes), float(op.activation_bytes), float(op.m or 1), e_w, peak, bw, q
        )
    elif op.kind == OpKind.ATTENTION:
        c, m = attention_terms(
            float(op.flops),
            float(op.kv_read_bytes),
            float(op.kv_write_bytes),
            blocks,
            peak,
            bw,
            q,
        )
    else:  # recurrence, vectors, embedding rows
        c, m = other_terms(float(op.flops), float(op.bytes), peak, bw, q)
    return c, m, 0.0, smooth_max(c, m, q["overlap_p"])


@lru_cache(maxsize=16)
def _values(parameters: Parameters) -> dict[str, float]:
    """A profile's parameters by name (read once: a sweep times many steps); not to be changed."""
    return to_data(parameters)


@record
class CalibratedModel:
    """The calibrated prediction of a step's time under ``profile`` (a :class:`TimeModel`)."""

    profile: Profile
    network_gb_s: float = DEFAULT_NETWORK_GB_S
    kind: TimeKind = TimeKind.PREDICTION

    @property
    def label(self) -> str:
        """``prediction (profile h200)``."""
        return f"prediction (profile {self.profile.name})"

    def step_time(self, step: Step, gpu: HardwareSpec, operators: bool = True) -> StepTime:
        """The predicted time of ``step`` on ``gpu`` (without ``operators``: no per-operator times, the
        same stages and totals); InputError if the GPU lacks the compute dtype."""
        q = _values(self.profile.parameters)
        peak, bw = gpu.peak_flops(step.compute_dtype), gpu.bandwidth_bytes_s
        link, link_gb_s = link_of(step, gpu, self.network_gb_s)
        e_w = _format_efficiency(step, q)
        ops: list[OpTime] = []
        stages: list[StageTime] = []
        for stage in step.stages:
            split, sms = self.profile.decode_split_kv, gpu.sm_count
            times = [
                _op_time(op, e_w, peak, bw, link_gb_s * 1e9, q, attention_blocks(op, sms, split)) for op in stage.ops
            ]
            for op, (c, m, l_, t) in zip(stage.ops, times) if operators else ():
                ops.append(OpTime(op.name, op.kind, stage.index, c, m, l_, t, Bound.of(c, m, l_, t)))
            fixed = q["layer_overhead_s"] * stage.layers + q["step_overhead_s"]
            c = sum(t[0] for t in times)
            m = sum(t[1] for t in times)
            l_ = sum(t[2] for t in times)
            stages.append(StageTime(stage.index, c, m, l_, sum(t[3] for t in times) + fixed))
        return sum_stages(self.label, self.kind, ops, stages, link, link_gb_s)


#: How much an error band widens per octave (factor 2) that a step's batch or context lies outside
#: the fitted rows' range (summed over the two): a quarter of the band per doubling, at most
#: :data:`RANGE_WIDEN_MAX` times. A stated convention, not a measurement: the held-out residuals say
#: nothing of shapes no row had, and the terms that extrapolate (the GEMM ramp at larger batches, the
#: KV reads at longer contexts) grow with the distance.
RANGE_WIDEN_PER_OCTAVE = 0.25
RANGE_WIDEN_MAX = 3.0
#: The least half-width of a band: rounding of the published figures (often to 2 or 3 digits).
BAND_FLOOR = 0.01


@record
class Band:
    """The error band of a prediction: predicted x ``low`` to predicted x ``high`` (``low`` <= 1 <=
    ``high``), from ``rows`` held-out residuals of profile ``profile`` widened ``widen`` times
    (``transfer`` for a transferred profile, ``range`` outside the fitted shapes)."""

    low: float
    high: float
    profile: str
    engine: str
    kind: str
    rows: int
    widen: float
    transfer: float
    range: float


def _octaves(value: int, span: tuple[int, ...], below: bool = True) -> float:
    """Octaves (log2) that ``value`` lies outside ``span`` = (least, greatest), counting below the
    least only if ``below``; 0 inside or for an unknown span."""
    import math

    if len(span) != 2:
        return 0.0
    lo, hi = max(span[0], 1), max(span[1], 1)
    v = max(value, 1)
    return math.log2(lo / v) if (v < lo and below) else (math.log2(v / hi) if v > hi else 0.0)


def widened(factor: float, widen: float) -> float:
    """A band end ``factor`` (measured / predicted) widened ``widen`` times in log ratio:
    ``factor ** widen``. Multiplying the residual itself (1 / factor - 1) runs a low end's residual
    past -1 (a measured time infinitely above the prediction) once a band of -25% is widened 4x,
    which needed a clamp (+900% printed for h100-vllm carried to another GPU); in log ratio a
    widening is symmetric for an over- and an under-prediction, and ``widen`` 1 is the fitted band."""
    return float(factor**widen)


def band_factors(profile: Profile, batch: int | None = None, context: int | None = None) -> Band | None:
    """The error band of a prediction under ``profile`` of a step of ``batch`` sequences at
    ``context`` tokens (decode: cached per sequence; prefill: the prompt), or None for a profile
    without held-out residuals.

    Source: the profile's leave-one-out residuals r = predicted / measured - 1 at their 10th and
    90th percentiles (r_low <= 0 <= r_high; the least and greatest with fewer than 10 rows:
    :class:`~llm_cost.perf.profile.FitError`); the measured time then lies in [predicted / (1 +
    r_high), predicted / (1 + r_low)] for 8 of 10 held-out rows. Each side at least
    :data:`BAND_FLOOR`. Widened (:func:`widened`: each end's log ratio multiplied) by the profile's
    ``transfer_widen`` (:data:`~llm_cost.perf.profile.TRANSFER_WIDEN` for a transferred profile, 1
    for a fitted one) and by 1 + :data:`RANGE_WIDEN_PER_OCTAVE` x the octaves ``batch`` lies outside
    the fitted rows' batches and ``context`` above their longest (a shorter context only shrinks the
    KV term the rows did time), at most :data:`RANGE_WIDEN_MAX`."""
    error = profile.error if profile.kind == "fitted" else profile.source_error
    if error is None:
        return None
    transfer = float(profile.transfer_widen) if profile.kind == "transferred" else 1.0
    octaves = (_octaves(batch, profile.fitted_batch) if batch is not None else 0.0) + (
        _octaves(context, profile.fitted_context, below=False) if context is not None else 0.0
    )
    range_ = min(1.0 + RANGE_WIDEN_PER_OCTAVE * octaves, RANGE_WIDEN_MAX)
    widen = transfer * range_
    r_low, r_high = min(error.loo_low, -BAND_FLOOR), max(error.loo_high, BAND_FLOOR)
    return Band(
        widened(1.0 / (1.0 + r_high), widen),
        widened(1.0 / (1.0 + r_low), widen),
        profile.name,
        str(profile.engine),
        profile.kind,
        error.rows,
        widen,
        transfer,
        range_,
    )


def prediction_model(
    gpu_name: str, profile: Profile | None = None, network_gb_s: float = DEFAULT_NETWORK_GB_S
) -> CalibratedModel | EfficiencyEstimate:
    """The time model a prediction uses: ``profile``, else the GPU's shipped profile (calibrated),
    else the MFU/MBU estimate (labelled as such) for a GPU without one."""
    chosen = profile or default_profile(gpu_name)
    return (
        CalibratedModel(chosen, network_gb_s) if chosen is not None else EfficiencyEstimate(network_gb_s=network_gb_s)
    )


@record
class SplitKvGap:
    """What a profile without split-KV misses on one decode step: the thread blocks its decode
    attention runs (``blocks``: sequences x KV heads) and those of FlashAttention's split-KV launch
    (``split_blocks``), the step's predicted time as the profile times it (``time_s``) and with the
    same parameters and split-KV (``split_time_s``)."""

    profile: str
    engine: str
    blocks: int
    split_blocks: int
    time_s: float
    split_time_s: float


#: A step's prediction with split-KV this much faster is flagged (:func:`split_kv_gap`).
SPLIT_KV_GAP = 0.20


def split_kv_gap(model: Any, step: Step, gpu: HardwareSpec) -> SplitKvGap | None:
    """The gap when ``model`` is a :class:`CalibratedModel` whose profile has no split-KV, ``gpu``
    has an ``sm_count`` and the same profile with split-KV predicts ``step`` more than
    :data:`SPLIT_KV_GAP` faster (a long-context decode at small batch); else None. The blocks are
    those of the step's attention operator that reads the most KV."""
    if not isinstance(model, CalibratedModel) or model.profile.decode_split_kv or gpu.sm_count is None:
        return None
    reads = [op for op in step.ops if op.kind == OpKind.ATTENTION and op.kv_read_bytes]
    if not reads:
        return None
    split = CalibratedModel(dataclasses.replace(model.profile, decode_split_kv=True), model.network_gb_s)
    now, then = model.step_time(step, gpu, False).time_s, split.step_time(step, gpu, False).time_s
    if now <= then * (1 + SPLIT_KV_GAP):
        return None
    op = max(reads, key=lambda o: float(o.kv_read_bytes))
    return SplitKvGap(
        model.profile.name,
        model.profile.engine,
        int(attention_blocks(op, gpu.sm_count, False)),
        int(attention_blocks(op, gpu.sm_count, True)),
        now,
        then,
    )


def split_kv_notes(model: Any, step: Step, gpu: HardwareSpec) -> list[Note]:
    """A warning (``prediction.no_split_kv``) when :func:`split_kv_gap` finds one, else none."""
    gap = split_kv_gap(model, step, gpu)
    if gap is None:
        return []
    return [
        note(
            "prediction.no_split_kv",
            profile=gap.profile,
            engine=gap.engine,
            blocks=gap.blocks,
            split_blocks=gap.split_blocks,
            time_s=gap.time_s,
            split_time_s=gap.split_time_s,
        )
    ]
