"""The calibrated time model: a prediction of a step's time from its operators and a profile.

Every term is physical, with a unit, and every parameter is bounded (:mod:`llm_cost.perf.profile`):
none depends on the model, and none can make a small operator cost more than its shape allows.
Per operator, with P the dense peak FLOP/s of the step's compute dtype, P16 the 16-bit peak and BW
the datasheet bandwidth of the GPU:

* GEMM: compute t_c = FLOPs x q_M / w / (P x e_gemm), with q_M = ceil(M / m_tile) m_tile / M the
  tile quantisation of its rows (m_tile 1 up to 8 rows, 16 up to 16, else 64:
  :func:`~llm_cost.perf.families.gemm_tile_m`)
  and w the wave efficiency of its output tiles over the GPU's SMs (tiles / (ceil(tiles / SMs)
  SMs) once there are at least SMs tiles; below that split-K or stream-K fills the SMs); e_gemm the
  family's share of peak for the dtype's width (16, 8 or 4 bits). So a GEMM of M = 2 costs 64 rows
  of compute, which stays below its weight read on every GPU here, and never hundreds of tokens.
  Memory t_m = weight bytes / (BW x e_bw x s_eng x s_fmt) + activation bytes / (BW x e_bw), e_bw
  the family's stream share, s_eng the engine's kernels' share of it and s_fmt the engine's share
  for weight-only int8/int4 kernels (1 for native weights). Routed experts (grouped GEMMs, M the
  rows per expert: :func:`grouped_gemm_factor`, every expert's rows in whole tiles of 16 or 64)
  divide both terms by the engine's ``moe_gemm_share``; under expert parallelism their compute and
  activations are the most loaded rank's (:func:`routed_load`: a layer waits for its slowest rank).
* attention: compute FLOPs / (P16 x e_flash) and KV read / (BW x e_kv(x)) + KV written / (BW x
  e_bw), with x the thread blocks in flight (sequences x KV heads without split-KV; FlashAttention's
  split-KV launch with it: :mod:`llm_cost.perf.kernels`) and e_kv(x) = e_kv,max x / (x^4 +
  x_sat^4)^(1/4), x_sat = blocks per SM at saturation x SMs.
* recurrences, norms and vectors, embedding rows: FLOPs at P16 x e_gemm16, bytes at BW x e_bw.
* an operator's time: (t_c^p + t_m^p)^(1/p), between max(t_c, t_m) (p -> inf) and their sum
  (p = 1): compute and memory overlap imperfectly near the ridge.
* collectives: per call, the family's latency x the engine's latency share (a custom one-shot
  all-reduce or NCCL's) x its steps (one within a node, 1 + log2(nodes) across nodes:
  :func:`latency_hops`) + bytes / (link GB/s x e_link).
* fixed: per layer ``layer_overhead_s``, per MoE layer ``moe_layer_overhead_s``, and once per step
  ``step_overhead_s`` + ``sequence_overhead_s`` x the step's sequences.

A stage's time is the sum of its operators' times and its fixed time (kernels run one after another;
overlap is inside an operator, through the p-norm); the step sums its stages, as the bound does.

The formula functions use only arithmetic, so they evaluate a float or a numpy array alike: the fit
(:mod:`llm_cost.analyses.calibration`) and the decode sweep (:mod:`llm_cost.analyses.decode_grid`)
call the same functions on arrays of many operators. One implementation.
"""

from __future__ import annotations

import dataclasses
import math
from fractions import Fraction
from functools import lru_cache
from typing import Any

from llm_cost.core.labels import Bound, TimeKind
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.types import DTYPE_BITS, Dtype, OpKind, OpRole
from llm_cost.perf.families import GEMM_TILE_N, gemm_tile_m
from llm_cost.perf.kernels import attention_blocks
from llm_cost.perf.profile import Parameters, Profile, Regime, RegimeBand, Situation
from llm_cost.perf.timemodel import (
    DEFAULT_NETWORK_GB_S,
    OpTime,
    RooflineBound,
    StageTime,
    StepTime,
    hop_rate,
    host_gpus,
    link_of,
    sum_stages,
)
from llm_cost.specs.schema import HardwareSpec
from llm_cost.workload.routing import hottest_rank_factor
from llm_cost.workload.step import Operator, StageHead, Step, build_step, split_step

__all__ = [
    "CalibratedModel",
    "fast_end_s",
    "weight_format",
    "width_class",
    "gemm_shape_factor",
    "grouped_gemm_factor",
    "grouped_tile_m",
    "routed_load",
    "kv_efficiency",
    "smooth_max",
    "maximum",
    "gemm_terms",
    "attention_terms",
    "other_terms",
    "collective_time",
    "latency_hops",
    "fixed_time",
    "KV_KNEE_POWER",
    "DEFAULT_SMS",
    "gemm_groups",
    "rates_of",
    "Rates",
    "moe_layers",
    "Band",
    "band_for",
    "regime_of",
    "widened",
    "RANGE_WIDEN_PER_OCTAVE",
    "RANGE_WIDEN_MAX",
    "SplitKvGap",
    "SPLIT_KV_GAP",
    "split_kv_gap",
    "split_kv_notes",
    "step_seconds",
]

#: Sharpness of the knee of the decode-attention efficiency (a 4-norm: within 16% of the linear ramp
#: and the ceiling away from x_sat); a fixed shape, not a fitted parameter.
KV_KNEE_POWER = 4
#: SMs assumed for a GPU spec without ``sm_count`` (an H100 SXM's 132).
DEFAULT_SMS = 132


def weight_format(weight_bits: Fraction | float, compute_bits: int) -> str:
    """ "native" when weights are stored at least as wide as the compute dtype (bf16 weights with bf16
    compute, fp8 with fp8); else weight-only "int8" (8 to 15 bits per weight incl. scales) or "int4"
    (below 8 bits: 4.25 or 5 with group scales and zeros)."""
    bits = float(weight_bits)
    if bits >= compute_bits:
        return "native"
    return "int8" if bits >= 8 else "int4"


def width_class(dtype: Dtype) -> int:
    """The GEMM width class of a compute dtype: 4 (fp4), 8 (fp8, int8) or 16 (16 bits and wider:
    fp32/tf32 steps use the 16-bit share of their own peak)."""
    bits = DTYPE_BITS[dtype]
    return 4 if bits <= 4 else 8 if bits <= 8 else 16


def gemm_shape_factor(m: float, n: int | None, groups: float, sms: int, tile: int | None = None) -> float:
    """q_M / w of a GEMM of ``m`` rows, ``n`` columns per GPU and ``groups`` independent matrices
    per launch (routed experts: the experts that run), on ``sms`` SMs, its rows in tiles of
    ``tile`` (default :func:`~llm_cost.perf.families.gemm_tile_m`): its FLOPs' multiplier for tile
    and wave quantisation (module docstring). At least 1."""
    tile = tile or gemm_tile_m(m)
    rows = max(m, 1e-9)
    row_tiles = math.ceil(rows / tile)
    pad = row_tiles * tile / rows
    if n is None:
        return pad
    tiles = row_tiles * math.ceil(n / GEMM_TILE_N) * max(groups, 1.0)
    waves = math.ceil(tiles / sms) * sms if tiles >= sms else tiles
    return pad * waves / tiles


def grouped_tile_m(m: float) -> int:
    """The row granularity of a grouped (routed-expert) GEMM of ``m`` rows per expert: 16 up to 16
    rows (the smallest BLOCK_SIZE_M of vLLM's fused_moe Triton configurations, to which
    ``moe_align_block_size`` pads each expert's rows: vllm/model_executor/layers/fused_moe/
    fused_moe.py; no GEMV path: every expert that runs computes a whole tile), else 64 (a
    warpgroup's M, as for a dense GEMM)."""
    return 16 if m <= 16 else 64


def grouped_gemm_factor(m: float, n: int | None, groups: float, sms: int) -> float:
    """The FLOPs multiplier of a grouped (routed-expert) GEMM of ``m`` rows per expert and ``groups``
    experts: each expert's rows in whole tiles (:func:`grouped_tile_m`), the tiles of every expert
    in waves over the SMs (:func:`gemm_shape_factor`). Beyond that a grouped GEMM runs as a dense
    one of its shape: DeepGEMM's masked grouped FP8 GEMMs on an H800 (github.com/deepseek-ai/DeepGEMM
    README @ 55ab91f; N 4096, K 7168) reach 1,233 TFLOP/s at 1 group of 1,024 rows, 1,040 at 2 of
    512 and 932 at 4 of 256, the times of their compute at the large-M rate and their weight
    stream overlapped (4 x 256 rows: 512 FLOP per weight byte, at the FP8 ridge), with no
    per-group cost beyond it."""
    return gemm_shape_factor(m, n, groups, sms, grouped_tile_m(m))


def routed_load(flops: float, n: int | None, k: int | None, layers: int, ranks: int) -> float:
    """The rows of the most loaded EP rank over the mean (:func:`~llm_cost.workload.routing.hottest_rank_factor`)
    for a routed-expert GEMM of ``flops`` on this GPU (its copies: FLOPs / 2 N K per layer) whose
    experts are spread over ``ranks`` EP ranks; 1 without EP. It multiplies the GEMM's compute and
    activations (a layer waits for its slowest rank), not its weights (each rank reads its own)."""
    if ranks <= 1 or not (n and k and layers):
        return 1.0
    copies = flops / (2.0 * n * k * layers)
    return hottest_rank_factor(copies * ranks, ranks)


def maximum(a: Any, b: Any) -> Any:
    """max(a, b) for floats and arrays alike."""
    return (a + b + abs(a - b)) / 2


def kv_efficiency(x: Any, e_max: Any, x_sat: Any) -> Any:
    """Fraction of bandwidth decode attention reads the KV cache at, with ``x`` thread blocks in
    flight: e_max x x / (x^4 + x_sat^4)^(1/4)."""
    q = KV_KNEE_POWER
    return e_max * x / (x**q + x_sat**q) ** (1.0 / q)


def smooth_max(a: Any, b: Any, p: Any) -> Any:
    """(a^p + b^p)^(1/p), seconds: between max(a, b) (p -> inf) and a + b (p = 1). Scaled by the
    larger term so that it never overflows."""
    top = a + b + 1e-30  # a positive scale; the terms are non-negative
    return top * ((a / top) ** p + (b / top) ** p) ** (1.0 / p)


def gemm_terms(
    flops_shaped: Any,
    weight_bytes: Any,
    activation_bytes: Any,
    peak: Any,
    bw: Any,
    e_gemm: Any,
    e_bw: Any,
    format_share: Any,
    moe_share: Any,
) -> tuple[Any, Any]:
    """(compute, memory) seconds of a GEMM whose FLOPs times :func:`gemm_shape_factor` are
    ``flops_shaped`` (module docstring); ``moe_share`` 1 for a dense GEMM."""
    compute = flops_shaped / (peak * e_gemm * moe_share)
    memory = weight_bytes / (bw * e_bw * format_share * moe_share) + activation_bytes / (bw * e_bw)
    return compute, memory


def attention_terms(
    flops: Any, kv_read: Any, kv_write: Any, x: Any, peak16: Any, bw: Any, e_flash: Any, e_kv: Any, e_bw: Any
) -> tuple[Any, Any]:
    """(compute, memory) seconds of an attention operator: FLOPs at the flash share of the 16-bit
    peak, KV read at ``e_kv`` (:func:`kv_efficiency` of its blocks in flight), KV written at the stream
    share."""
    return flops / (peak16 * e_flash), kv_read / (bw * e_kv) + kv_write / (bw * e_bw)


def other_terms(flops: Any, nbytes: Any, peak16: Any, bw: Any, e_gemm16: Any, e_bw: Any) -> tuple[Any, Any]:
    """(compute, memory) seconds of a recurrence, the norm/bias vectors or embedding rows."""
    return flops / (peak16 * e_gemm16), nbytes / (bw * e_bw)


def latency_hops(ranks: int, node_gpus: int) -> float:
    """The latency steps of one collective over ``ranks`` GPUs of nodes of ``node_gpus``
    (:func:`~llm_cost.perf.timemodel.host_gpus`: a host of PCIe cards is one node): one
    within a node (the engines' one-shot all-reduce reads every peer's buffer at once over the
    node's links, and its latency does not grow with the ranks: vLLM's custom all-reduce of 512 B
    on H100s takes 9.5, 9.1 and 10.1 us at TP 2, 4 and 8, SGLang PR #2904), plus log2 of the nodes
    beyond one (a tree across the network); 1 for a point-to-point send."""
    nodes = math.ceil(max(ranks, 1) / max(node_gpus, 1))
    return 1.0 + math.log2(nodes) if nodes > 1 else 1.0


def collective_time(
    calls: Any, bytes_per_call: Any, link_bytes_s: Any, latency_s: Any, e_link: Any, hops: Any = 1.0
) -> Any:
    """Seconds of ``calls`` collectives of ``bytes_per_call`` each: latency x ``hops``
    (:func:`latency_hops`) + bytes / achieved link rate."""
    return calls * (latency_s * hops + bytes_per_call / (link_bytes_s * e_link))


def fixed_time(layers: Any, moe_layers: Any, first_stage: Any, sequences: Any, e: dict[str, Any]) -> Any:
    """A stage's fixed seconds: per layer and per MoE layer, and on the first stage (``first_stage``
    1, else 0) the step's and its sequences' (module docstring); ``e`` the engine's parameters."""
    per_step = e["step_overhead_s"] + e["sequence_overhead_s"] * sequences
    return e["layer_overhead_s"] * layers + e["moe_layer_overhead_s"] * moe_layers + first_stage * per_step


def gemm_groups(op: Operator) -> float:
    """Matrices per launch of a GEMM: its FLOPs over 2 M N K per layer (routed experts: the experts
    that run), at least 1."""
    if not (op.m and op.n and op.k and op.layers):
        return 1.0
    return max(float(op.flops) / (2.0 * float(op.m) * op.n * op.k * op.layers), 1.0)


@record
class Rates:
    """A profile's parameters as the formulas read them, with the GPU's rates."""

    f: dict[str, float]
    e: dict[str, float]
    peak: float
    peak16: float
    bw: float
    sms: int
    e_gemm: float
    format_share: float
    x_sat: float
    node_gpus: int  # GPUs of one node: host_gpus (a host of PCIe cards is one node)


@lru_cache(maxsize=64)
def _as_data(parameters: Parameters) -> tuple[dict[str, float], dict[str, float]]:
    """A profile's family and engine parameters by name (read once: a sweep times many steps); not
    to be changed."""
    from llm_cost.specs.declare import to_data

    return to_data(parameters.family), to_data(parameters.engine)


def rates_of(profile: Profile, step: Step, gpu: HardwareSpec) -> Rates:
    """The profile's parameters and the GPU's rates for ``step`` (its compute dtype's peak and
    GEMM share, its weight format's bandwidth share, the KV saturation in blocks)."""
    f, e = _as_data(profile.parameters)
    width = width_class(step.compute_dtype)
    fmt = weight_format(step.weight_bits, DTYPE_BITS[step.compute_dtype])
    sms = gpu.sm_count or DEFAULT_SMS
    return Rates(
        f,
        e,
        gpu.peak_flops(step.compute_dtype),
        gpu.peak_flops(Dtype.BF16) if "bf16" in gpu.dense_tflops else gpu.peak_flops(step.compute_dtype),
        gpu.bandwidth_bytes_s,
        sms,
        f[f"gemm_efficiency_{width}"],
        1.0 if fmt == "native" else e[f"{fmt}_bandwidth_share"],
        f["kv_saturation_blocks_per_sm"] * sms,
        host_gpus(gpu),
    )


def _op_time(op: Operator, v: Rates, link_bytes_s: float, split_kv: bool) -> tuple[float, float, float, float]:
    """(compute, memory, link, time) seconds of one operator (module docstring)."""
    f, e = v.f, v.e
    if op.kind == OpKind.COLLECTIVE:
        assert op.collective is not None  # every collective operator carries its payload
        t = collective_time(
            op.layers,
            float(op.collective.bytes_per_call),
            link_bytes_s,
            f["collective_latency_s"] * e["collective_latency_share"],
            f["link_efficiency"],
            latency_hops(op.collective.ranks, v.node_gpus),
        )
        return 0.0, 0.0, t, t
    if op.kind == OpKind.GEMM:
        m = float(op.m or 1)
        routed = op.role == OpRole.ROUTED_EXPERTS
        groups = gemm_groups(op)
        shape = grouped_gemm_factor(m, op.n, groups, v.sms) if routed else gemm_shape_factor(m, op.n, groups, v.sms)
        load = routed_load(float(op.flops), op.n, op.k, op.layers, op.ep_ranks) if routed else 1.0
        moe = e["moe_gemm_share"] if routed else 1.0
        c, mem = gemm_terms(
            float(op.flops) * shape * load,
            float(op.weight_bytes),
            float(op.activation_bytes) * load,
            v.peak,
            v.bw,
            v.e_gemm,
            f["bandwidth_efficiency"],
            v.format_share * e["stream_share"],
            moe,
        )
    elif op.kind == OpKind.ATTENTION:
        x = attention_blocks(op, v.sms, split_kv)
        e_kv = kv_efficiency(x, f["kv_efficiency_max"], v.x_sat)
        c, mem = attention_terms(
            float(op.flops),
            float(op.kv_read_bytes),
            float(op.kv_write_bytes),
            x,
            v.peak16,
            v.bw,
            f["flash_efficiency"],
            e_kv,
            f["bandwidth_efficiency"],
        )
    else:  # recurrence, vectors, embedding rows
        c, mem = other_terms(
            float(op.flops), float(op.bytes), v.peak16, v.bw, f["gemm_efficiency_16"], f["bandwidth_efficiency"]
        )
    return c, mem, 0.0, smooth_max(c, mem, f["overlap_p"])


def moe_layers(ops: tuple[Operator, ...] | list[Operator]) -> int:
    """The MoE layers among ``ops`` (one stage's): the repeats of its routed-expert GEMMs, counted
    once per layer (the largest repeat count of a routed-expert operator)."""
    return max((op.layers for op in ops if op.role == OpRole.ROUTED_EXPERTS), default=0)


@record
class CalibratedModel:
    """The calibrated prediction of a step's time under ``profile`` (a :class:`TimeModel`)."""

    profile: Profile
    network_gb_s: float = DEFAULT_NETWORK_GB_S
    kind: TimeKind = TimeKind.PREDICTION

    @property
    def label(self) -> str:
        """``prediction (profile hopper-vllm)``."""
        return f"prediction (profile {self.profile.name})"

    def step_time(self, step: Step, gpu: HardwareSpec, operators: bool = True) -> StepTime:
        """The predicted time of ``step`` on ``gpu`` (without ``operators``: no per-operator times, the
        same stages and totals); InputError if the GPU lacks the compute dtype."""
        v = rates_of(self.profile, step, gpu)
        link, link_gb_s = link_of(step, gpu, self.network_gb_s)
        ops: list[OpTime] = []
        stages: list[StageTime] = []
        split = self.profile.decode_split_kv
        for i, stage in enumerate(step.stages):
            hop = hop_rate(step, gpu, stage.index, link_gb_s * 1e9, self.network_gb_s)
            times = [_op_time(op, v, hop if op.role == OpRole.PP_SEND else link_gb_s * 1e9, split) for op in stage.ops]
            for op, (c, m, l_, t) in zip(stage.ops, times) if operators else ():
                ops.append(OpTime(op.name, op.kind, stage.index, c, m, l_, t, Bound.of(c, m, l_, t)))
            stages.append(_stage_time(stage.index, times, stage.layers, moe_layers(stage.ops), i == 0, step, v))
        return sum_stages(self.label, self.kind, ops, stages, link, link_gb_s)

    def split_step_time(self, step: Step, heads: tuple[StageHead, ...], gpu: HardwareSpec) -> StepTime:
        """:meth:`step_time` (without ``operators``) of a step split by
        :func:`~llm_cost.workload.step.split_step`: each stage's head timed once per token count at
        these rates (:data:`_HEADS`), its times then summed with the others' in the stage's order,
        as :meth:`step_time` sums them: the same figures."""
        tp_dp = step.layout.tp * step.layout.dp
        at = (id(self.profile), id(gpu), step.compute_dtype, step.weight_bits, tp_dp, self.network_gb_s)
        held = _RATES.get(at)
        if held is None:  # rates_of and link_of read the profile, the GPU, the formats, TP x DP, the network
            if len(_RATES) >= 64:
                _RATES.clear()
            rates, link_ = rates_of(self.profile, step, gpu), link_of(step, gpu, self.network_gb_s)
            held = _RATES[at] = (self.profile, gpu, rates, link_)
        v, (link, link_gb_s) = held[2], held[3]
        split, link_bytes_s = self.profile.decode_split_kv, link_gb_s * 1e9
        memo = _heads_at(v, link_bytes_s, split)
        stages: list[StageTime] = []
        for i, (stage, head) in enumerate(zip(step.stages, heads)):
            hop = hop_rate(step, gpu, stage.index, link_bytes_s, self.network_gb_s)  # as step_time times it

            def timed(op: Operator, hop: float = hop) -> tuple[float, float, float, float]:
                return _op_time(op, v, hop if op.role == OpRole.PP_SEND else link_bytes_s, split)

            key = (id(head.part), head.tokens, head.routed_tokens, hop)
            hit = memo.get(key)
            if hit is None:
                if len(memo) >= _HEADS_SIZE:
                    memo.clear()
                first, last = head.build()
                hit = memo[key] = (
                    head.part,
                    tuple(timed(op) for op in first),
                    tuple(timed(op) for op in last),
                    max(moe_layers(first), moe_layers(last)),
                )
            times = [*hit[1], *(timed(op) for op in stage.ops), *hit[2]]
            moe = max(hit[3], moe_layers(stage.ops))
            stages.append(_stage_time(stage.index, times, stage.layers, moe, i == 0, step, v))
        return sum_stages(self.label, self.kind, [], stages, link, link_gb_s)


def _stage_time(
    index: int, times: list[tuple[float, float, float, float]], layers: int, moe: int, first: bool, step: Step, v: Rates
) -> StageTime:
    """A stage's time from its operators' (compute, memory, link, time) in order and its fixed time
    (:func:`fixed_time`: ``moe`` MoE layers, the step's sequences on the ``first`` stage)."""
    fixed = fixed_time(layers, moe, 1 if first else 0, step.sequences, v.e)
    c, m, l_, t = (sum(column) for column in zip(*times)) if times else (0, 0, 0, 0)  # each in the operators' order
    return StageTime(index, c, m, l_, t + fixed)


#: The rates and link of :meth:`CalibratedModel.split_step_time`'s steps, by (id of the profile and
#: of the GPU, held with them, the compute dtype, the weight bits, TP x DP, the network GB/s).
_RATES: dict[tuple, tuple[Profile, HardwareSpec, Rates, tuple[str, float]]] = {}

#: Times of stage heads (:class:`~llm_cost.workload.step.StageHead`) already timed: by the rates
#: they were timed at (the profile's parameter tables, held so that their ids are not reused, the
#: GPU's rates, the link and split-KV), then by (id of the head's stage plan, held with it, its
#: tokens): (plan, the times of its first and of its last operators, its MoE layers). A plan's screen and simulations time
#: thousands of steps of a few hundred token counts. Each rates' memo is emptied past
#: :data:`_HEADS_SIZE` heads.
_HEADS: dict[tuple, tuple[dict, dict, dict[tuple, tuple[object, tuple, tuple, int]]]] = {}
_HEADS_SIZE = 1 << 13


def _heads_at(v: Rates, link_bytes_s: float, split_kv: bool) -> dict[tuple, tuple[object, tuple, tuple, int]]:
    """The memo of stage heads timed at these rates (:data:`_HEADS`)."""
    key = (id(v.f), id(v.e), v.peak, v.peak16, v.bw, v.sms, v.e_gemm, v.format_share, v.x_sat, link_bytes_s, split_kv)
    hit = _HEADS.get(key)
    if hit is None:
        if len(_HEADS) >= 64:
            _HEADS.clear()
        hit = _HEADS[key] = (v.f, v.e, {})
    return hit[2]


def step_seconds(
    model: Any,
    spec: Any,
    groups: Any,
    gpu: HardwareSpec,
    *,
    layout: Any,
    weight_bits: int | Fraction,
    kv_bits: int,
    compute_dtype: Dtype,
) -> StepTime:
    """``model.step_time(build_step(spec, groups, ...), gpu, operators=False)`` (a serving step:
    :func:`~llm_cost.workload.step.build_step`'s defaults otherwise), each stage's head timed once
    per token count under a :class:`CalibratedModel` (:meth:`CalibratedModel.split_step_time`): the
    same figures."""
    if isinstance(model, (CalibratedModel, RooflineBound)):
        step, heads = split_step(
            spec, groups, layout=layout, weight_bits=weight_bits, kv_bits=kv_bits, compute_dtype=compute_dtype
        )
        return model.split_step_time(step, heads, gpu)
    built = build_step(
        spec, groups, layout=layout, weight_bits=weight_bits, kv_bits=kv_bits, compute_dtype=compute_dtype
    )
    return model.step_time(built, gpu, operators=False)


#: How much an error band widens per octave (factor 2) that a step's batch or context lies outside
#: the fitted rows' range (summed over the two): a quarter of the band per doubling, at most
#: :data:`RANGE_WIDEN_MAX` times. A stated convention, not a measurement: the held-out residuals say
#: nothing of shapes no row had.
RANGE_WIDEN_PER_OCTAVE = 0.25
RANGE_WIDEN_MAX = 3.0
#: The least half-width of a band: rounding of the published figures (often to 2 or 3 digits).
BAND_FLOOR = 0.01


@record
class Band:
    """The error band of a prediction: the measured time lies between predicted x ``low`` and
    predicted x ``high`` for 8 of 10 held-out rows like it. From ``rows`` out-of-source residuals of
    ``sources`` sources in its ``situation`` and ``regime``, widened ``widen`` times outside the
    fitted shapes (``range``)."""

    low: float
    high: float
    profile: str
    engine: str
    situation: str
    regime: str
    rows: int
    sources: int
    widen: float
    range: float


def _octaves(value: int, span: tuple[int, ...], below: bool = True) -> float:
    """Octaves (log2) that ``value`` lies outside ``span`` = (least, greatest), counting below the
    least only if ``below``; 0 inside or for an unknown span."""
    if len(span) != 2:
        return 0.0
    lo, hi = max(span[0], 1), max(span[1], 1)
    v = max(value, 1)
    return math.log2(lo / v) if (v < lo and below) else (math.log2(v / hi) if v > hi else 0.0)


def widened(factor: float, widen: float) -> float:
    """A band end ``factor`` (measured / predicted) widened ``widen`` times in log ratio:
    ``factor ** widen`` (symmetric for an over- and an under-prediction; ``widen`` 1 is the band)."""
    return float(factor**widen)


def regime_of(prefill: bool, batch: int | None) -> Regime:
    """The :class:`~llm_cost.perf.profile.Regime` of a step: prefill, or decode at ``batch``."""
    if prefill:
        return Regime.PREFILL
    return Regime.DECODE_SMALL if (batch or 1) <= 8 else Regime.DECODE_LARGE


def _chosen_band(bands: tuple[RegimeBand, ...], situation: Situation, regime: Regime) -> RegimeBand | None:
    """The band of ``situation`` and ``regime``, else of the situation over all regimes, else the
    widest situation's (transferred) for the regime or all."""
    by = {(b.situation, b.regime): b for b in bands}
    for key in ((situation, regime), (situation, Regime.ALL), (Situation.TRANSFERRED, regime)):
        if key in by:
            return by[key]
    return by.get((Situation.TRANSFERRED, Regime.ALL))


def fast_end_s(predicted_s: float, low: float, bound_s: float | None) -> float:
    """A band's fast end: ``predicted_s`` x its ``low`` factor, never under ``bound_s`` (the same
    step's or configuration's Roofline bound) unless the prediction itself is: no shipped
    measurement beats its step's bound (tests/perf/test_measurement_files.py checks every row),
    so neither may a band's end. The one rule of ``roofline``'s band, the simulated plan's
    fast-end re-simulation (:class:`llm_cost.simulate.steptime.ScaledTimer`) and the analytic
    plan's band (:mod:`llm_cost.analyses.serving.band`)."""
    scaled = predicted_s * low
    return scaled if bound_s is None else max(scaled, min(bound_s, predicted_s))


def band_for(
    profile: Profile, batch: int | None = None, context: int | None = None, prefill: bool = False
) -> Band | None:
    """The error band of a prediction under ``profile`` of a step of ``batch`` sequences at
    ``context`` tokens (decode: cached per sequence; prefill: the prompt), or None for a profile
    without bands (a user's profile fitted on one source).

    Source: the shipped fit's leave-one-source-out residuals (:mod:`llm_cost.analyses.calibration`):
    measured / predicted of every row predicted by a fit without its source, at the 10th and 90th
    percentiles, for the profile's situation (fitted, combined, transferred) and the step's regime
    (:func:`regime_of`), each side at least :data:`BAND_FLOOR`; widened (:func:`widened`) by 1 +
    :data:`RANGE_WIDEN_PER_OCTAVE` x the octaves ``batch`` lies outside the fitted rows' batches and
    ``context`` above their longest, at most :data:`RANGE_WIDEN_MAX`."""
    regime = regime_of(prefill, batch)
    chosen = _chosen_band(profile.bands, profile.situation, regime)
    if chosen is None:
        return None
    octaves = (_octaves(batch, profile.fitted_batch) if batch is not None else 0.0) + (
        _octaves(context, profile.fitted_context, below=False) if context is not None else 0.0
    )
    range_ = min(1.0 + RANGE_WIDEN_PER_OCTAVE * octaves, RANGE_WIDEN_MAX)
    low, high = min(chosen.low, 1.0 / (1.0 + BAND_FLOOR)), max(chosen.high, 1.0 + BAND_FLOOR)
    return Band(
        widened(low, range_),
        widened(high, range_),
        profile.name,
        str(profile.engine),
        str(chosen.situation),
        str(chosen.regime),
        chosen.rows,
        chosen.sources,
        range_,
        range_,
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
