"""Roofline of a decode step and of a prefill (time to first token), on one GPU or a layout
(seed 003 §02).

Both are views of one :class:`~llm_cost.workload.step.Step` (its operators give every FLOP and
byte) timed by two :mod:`llm_cost.perf.timemodel` models: the Roofline bound (datasheet peaks)
and the estimate at MFU/MBU. With a layout the figures are those of the layout's step: per GPU,
summed over the pipeline stages, communication included.

Bytes of a decode step ("read", the default): the matmul weights a step multiplies by (for MoE
the non-routed ones plus the expected distinct routed experts), the norm/bias vectors, one row
of the input embedding per sequence, the KV cache of the cached tokens (and any linear-attention
state) and the new tokens' K/V. "resident" reads every stored weight once instead, the source
documents' convention (16.06 GB / 3.35 TB/s = 4.8 ms for Llama-3-8B; the matmul weights alone
give 4.48 ms); it includes a vision tower, as ``params`` and ``fit`` count it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import field
from fractions import Fraction
from math import gcd
from operator import attrgetter
from typing import Any

from llm_cost.core.choices import AttentionMask, Logits, MLAForm, WeightBytes
from llm_cost.core.labels import Bound
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Dtype, OpKind, OpRole
from llm_cost.core.units import Number, exact, to_bytes
from llm_cost.model.formats import weight_bits_of
from llm_cost.model.layout import ONE_GPU, Layout, PerGPU, per_gpu, stage_kv_bytes
from llm_cost.model.structure import build
from llm_cost.perf.calibrated import CalibratedModel, band_for, fast_end_s, split_kv_notes
from llm_cost.perf.profile import Profile, Situation, profile_note
from llm_cost.perf.timemodel import (
    DEFAULT_MBU,
    DEFAULT_MFU,
    DEFAULT_NETWORK_GB_S,
    EfficiencyEstimate,
    RooflineBound,
    StepTime,
    pp_hop_leaves_node,
)
from llm_cost.specs.schema import HardwareSpec, ModelSpec, MoE
from llm_cost.workload.routing import expert_hit_fraction
from llm_cost.workload.step import SeqGroup, Step, build_step, decode, prefill, sum_of

__all__ = ["OpRow", "DecodeStep", "decode_step", "decode_steps", "PrefillStep", "prefill_step", "memory_note"]


@record
class OpRow:
    """One operator of a step: FLOPs, bytes, intensity, and its bound and estimate."""

    name: str
    kind: OpKind
    stage: int
    layers: int
    flops: Number
    weight_bytes: Number
    kv_bytes: Number  # read + written
    bytes: Number  # weights + KV: what the bound divides by the bandwidth
    comm_bytes: Number
    intensity_flop_per_byte: float | None  # FLOP per counted byte
    bound: Bound
    bound_s: float
    estimate_s: float


def _op_rows(step: Step, bound: StepTime, estimate: StepTime) -> list[OpRow]:
    rows = []
    for op, b, e in zip(step.ops, bound.ops, estimate.ops):
        nbytes = op.bytes
        rows.append(
            OpRow(
                op.name,
                op.kind,
                b.stage,
                op.layers,
                op.flops,
                op.weight_bytes,
                op.kv_read_bytes + op.kv_write_bytes,
                nbytes,
                op.comm_bytes,
                float(op.flops) / float(nbytes) if nbytes else None,
                b.bound,
                b.time_s,
                e.time_s,
            )
        )
    return rows


def memory_note(
    spec: ModelSpec,
    gpu: HardwareSpec,
    layout: Layout,
    weight_bits: Fraction,
    kv_bits: int,
    sequences: int,
    context: int,
    takes_layout: bool = True,
) -> list[Note]:
    """A warning when the fullest GPU's weights and KV exceed its physical memory (not counting
    what an engine keeps for itself: ``llm-cost fit`` does); ``takes_layout``: whether the asking
    analysis accepts a layout (``context`` does not), so the advice names where one is given."""
    return _fit_note(
        per_gpu(spec, layout, weight_bits, kv_bits),
        stage_kv_bytes(spec, layout, context, kv_bits),
        gpu,
        layout,
        sequences,
        takes_layout,
    )


def max_sequences_in_memory(
    spec: ModelSpec, gpu: HardwareSpec, layout: Layout, weight_bits: Fraction, kv_bits: int, context: int
) -> int | None:
    """The most sequences of ``context`` tokens whose KV fits beside the weights on every GPU of
    ``layout`` in the card's physical memory (the same bytes as :func:`memory_note`; an engine's
    own reserve is ``llm-cost fit``'s), per data-parallel rank (a layout's ``dp`` ranks hold as
    many again); 0 when the weights and one sequence do not fit, None when the weights fit and a
    sequence keeps no KV (nothing but the weights bounds the batch)."""
    return _most(per_gpu(spec, layout, weight_bits, kv_bits), stage_kv_bytes(spec, layout, context, kv_bits), gpu)


def _most(held: PerGPU, kv: list[int | Fraction], gpu: HardwareSpec) -> int | None:
    """:func:`max_sequences_in_memory` from each stage's weight bytes and KV bytes of one sequence:
    the least over the stages whose sequences keep KV (a stage that keeps none bounds nothing)."""
    room = [gpu.capacity_bytes - w for w in held.weight_bytes]
    if any(r < 0 for r in room):
        return 0
    bounds = [int(r // k) for r, k in zip(room, kv) if k > 0]
    return min(bounds) if bounds else None


def _fits(held: PerGPU, kv_per_sequence: list[int | Fraction], gpu: HardwareSpec, sequences: int) -> bool:
    """Whether every GPU holds its weights and the KV of ``sequences`` sequences in its physical
    memory (:func:`memory_note`'s bytes): at most :func:`_most` of them."""
    most = _most(held, kv_per_sequence, gpu)
    return most is None or sequences <= most


def _fit_note(
    held: PerGPU,
    kv_per_sequence: list[int | Fraction],
    gpu: HardwareSpec,
    layout: Layout,
    sequences: int,
    takes_layout: bool = True,
) -> list[Note]:
    """:func:`memory_note` from each stage's weight bytes and KV bytes of one sequence."""
    if _fits(held, kv_per_sequence, gpu, sequences):
        return []
    need = max(w + sequences * k for w, k in zip(held.weight_bytes, kv_per_sequence))
    return [
        note(
            "warning.does_not_fit",
            need_bytes=need,
            gpu=gpu.name,
            capacity_bytes=gpu.capacity_bytes,
            one_gpu=layout == ONE_GPU,
            takes_layout=takes_layout,
        )
    ]


def _first_batch(intensity: Callable[[int], float], ridge: float, limit: int = 10**9) -> int | None:
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


def banded(
    profile: Profile | None,
    predicted: float | None,
    batch: int,
    context: int,
    tokens: int,
    bound_s: float,
    prefill: bool = False,
) -> dict[str, Any]:
    """The fields of a prediction beside ``predicted_s``: its error band
    (:func:`llm_cost.perf.calibrated.band_for`: the held-out residuals of predictions in the
    profile's situation and the step's regime, widened for a shape outside the fitted rows), its
    fast end never under ``bound_s`` (the step's Roofline bound: no measured step beats it, as
    tests/perf/test_measurement_files.py checks of every shipped row), ``tokens`` per predicted
    second, and the profile's engine, situation and rows of its own family and engine; empty
    without a prediction."""
    if profile is None or predicted is None:
        return {}
    band = band_for(profile, batch, context, prefill)
    low_s = fast_end_s(predicted, band.low, bound_s) if band is not None else None
    return dict(
        predicted_low_s=low_s,
        predicted_high_s=predicted * band.high if band is not None else None,
        predicted_tokens_per_s=tokens / predicted,
        predicted_below=1 - low_s / predicted if low_s is not None else None,
        predicted_above=band.high - 1 if band is not None else None,
        engine=str(profile.engine),
        profile_kind=str(profile.situation),
        profile_rows=profile.rows if profile.situation is Situation.FITTED else None,
    )


def _prediction(
    step: Step, gpu: HardwareSpec, profile: Profile | None, network_gb_s: float, conventions: list[Note]
) -> tuple[float | None, str | None]:
    """(predicted seconds, profile name) under ``profile`` (the one the API chose), else (None,
    None); appends what the prediction rests on to ``conventions``."""
    if profile is None:
        return None, None
    conventions.append(profile_note(profile, gpu.name))
    return CalibratedModel(profile, network_gb_s).step_time(step, gpu).time_s, profile.name


@record
class DecodeStep(Result):
    """One decode step of ``batch`` sequences with ``context`` cached tokens each, on ``layout``.

    Byte and FLOP counts are exact integers, except expectations (MoE expert reads), which are
    floats; per GPU and summed over the pipeline stages when a layout is given."""

    model: str
    gpu: str
    layout: Layout
    batch: int
    context: int
    compute_dtype: Dtype
    weight_bits: float
    kv_bits: int
    weight_bytes_convention: WeightBytes
    peak_flops_per_s: float
    bandwidth_bytes_s: float
    ridge_flop_per_byte: float
    flops: Number
    weight_flops: Number
    attention_flops: Number
    matmul_weight_bytes: Number
    other_weight_bytes: Number  # norm/bias vectors, and by the resident convention the untouched tables
    embedding_row_bytes: Number
    #: Every stored weight (vision tower included) on one GPU: the model's (the documents'
    #: convention), or with a layout its fullest GPU's, as the other bytes are per GPU.
    resident_weight_bytes: Number
    kv_read_bytes: Number
    kv_write_bytes: Number
    comm_bytes: Number
    bytes: Number
    intensity_flop_per_byte: float
    weight_intensity_flop_per_byte: float
    kv_intensity_flop_per_byte: float | None
    compute_time_s: float
    memory_time_s: float
    comm_time_s: float
    link: str
    bound_s: float
    bound: Bound
    tokens_per_s: float
    resident_read_time_s: float
    matmul_weights_time_s: float
    mfu: float
    mbu: float
    estimate_s: float
    estimate_tokens_per_s: float
    #: The batches (sequences per data-parallel rank, as ``max_batch_in_memory``) at which the
    #: weights', and the whole step's, intensity reaches the ridge; None: never.
    compute_bound_batch_weights_only: int | None
    compute_bound_batch: int | None
    kv_bytes_at_compute_bound_batch_weights_only: Number | None  # the KV a GPU reads at that batch
    intensity_limit_flop_per_byte: float | None
    ops: list[OpRow] = field(default_factory=list)
    conventions: list[Note] = field(default_factory=list)
    predicted_s: float | None = None  # the calibrated prediction, when a profile applies
    profile: str | None = None  # its profile's name
    predicted_low_s: float | None = None  # the prediction's error band (band_for), seconds
    predicted_high_s: float | None = None
    predicted_tokens_per_s: float | None = None  # tokens the step produces (decode) or reads (prefill) per second
    predicted_below: float | None = None  # the band's lower end as a share below the prediction (0.08: -8%)
    predicted_above: float | None = None  # its upper end as a share above it (0.12: +12%)
    engine: str | None = None  # the profile's engine
    profile_kind: str | None = None  # fitted or transferred
    profile_rows: int | None = None  # rows the profile (or its source) was fitted on
    total_flops: Number = 0  # the step's FLOPs on all GPUs of the layout (the model's count; = flops on one GPU)
    #: Whether the fullest GPU holds the weights and the step's KV in its physical memory (False:
    #: the figures are hypothetical; ``llm-cost fit`` counts an engine's own reserve too).
    fits_in_memory: bool = True
    #: The most sequences of ``context`` tokens per data-parallel rank that fit so
    #: (:func:`max_sequences_in_memory`; None: a sequence keeps no KV).
    max_batch_in_memory: int | None = None


def _bits(weight_bits: int | float | Fraction | None, dtype: Dtype) -> Fraction:
    return weight_bits_of(weight_bits, limit=True) if weight_bits is not None else Fraction(dtype.bits)


def decode_step(
    spec: ModelSpec,
    gpu: HardwareSpec,
    batch: int = 1,
    context: int = 0,
    dtype: Dtype = Dtype.BF16,
    weight_bits: Number | None = None,
    kv_bits: int = 16,
    mfu: float = DEFAULT_MFU,
    mbu: float = DEFAULT_MBU,
    weight_bytes: WeightBytes = WeightBytes.READ,
    layout: Layout = ONE_GPU,
    network_gb_s: float = DEFAULT_NETWORK_GB_S,
    profile: Profile | None = None,
) -> DecodeStep:
    """Roofline of one decode step: every sequence adds one token after ``context`` cached ones.

    ``dtype`` selects the peak (and the weight storage unless ``weight_bits`` is given);
    ``weight_bytes`` read or resident (see the module docstring). InputError if the GPU
    lacks ``dtype`` or the layout cannot hold the model. ``predicted_s`` is the calibrated prediction
    under ``profile`` (default: the GPU's shipped profile; None for a GPU without one)."""
    return decode_steps(
        spec,
        gpu,
        [(batch, context)],
        dtype,
        weight_bits,
        kv_bits,
        mfu,
        mbu,
        weight_bytes,
        layout,
        network_gb_s,
        profile,
    )[0]


def _layout_notes(layout: Layout, bound: StepTime, spec: ModelSpec, gpu: HardwareSpec) -> list[Note]:
    """The layout's degrees and the link its collectives use, for a step on more than one GPU (the
    pipeline hops that leave a node: the network's); how expert parallelism shares the routed work."""
    if layout == ONE_GPU:
        return []
    hops = [s + 1 for s in range(layout.pp - 1) if pp_hop_leaves_node(layout, gpu, s)]
    network = [note("layout.pp_network", hops=hops, nodes=len(hops) + 1)] if hops else []
    experts = []
    if spec.moe is not None and layout.ep > 1:
        slots = Fraction(spec.moe.num_experts + layout.redundant_experts, layout.ep)
        experts = [note("layout.expert_parallel", ep=layout.ep, experts=exact(slots), tp=layout.tp)]
    step = note(
        "layout.step",
        tp=layout.tp,
        pp=layout.pp,
        dp=layout.dp,
        ep=layout.ep,
        gpus=layout.gpus,
        link=bound.link,
        link_gb_s=bound.link_gb_s,
    )
    return [*experts, step, *network]


def decode_steps(
    spec: ModelSpec,
    gpu: HardwareSpec,
    points: Sequence[tuple[int, int]],
    dtype: Dtype = Dtype.BF16,
    weight_bits: Number | None = None,
    kv_bits: int = 16,
    mfu: float = DEFAULT_MFU,
    mbu: float = DEFAULT_MBU,
    weight_bytes: WeightBytes = WeightBytes.READ,
    layout: Layout = ONE_GPU,
    network_gb_s: float = DEFAULT_NETWORK_GB_S,
    profile: Profile | None = None,
    detail: bool = True,
    ops: bool = True,
) -> list[DecodeStep]:
    """:func:`decode_step` at each (batch, context) of ``points``, in order: a sweep. What does not
    depend on the point (formats, peaks, the model's resident bytes, the profile, the per-GPU
    weights) is worked out once; each result equals that point's :func:`decode_step`. Without
    ``detail`` the results leave the operator table and the conventions empty (rows of figures
    only, as a CSV prints them); with ``detail`` but without ``ops``, the operator table only. Every
    figure is the same. A sweep of more than :data:`GRID_POINTS` points without operator tables is
    worked out a context at a time over all its batches (:mod:`llm_cost.analyses.decode_grid`)."""
    compute = dtype
    bits = _bits(weight_bits, compute)
    bound_model = RooflineBound(network_gb_s)
    estimate_model = EfficiencyEstimate(mfu, mbu, network_gb_s)
    peak, bw = gpu.peak_flops(compute), gpu.bandwidth_bytes_s
    ridge = peak / bw
    held = per_gpu(spec, layout, bits, kv_bits)
    # every stored weight (one GPU: the model's, the documents' convention; a layout: its fullest GPU's)
    resident = to_bytes(build(spec).total_params, bits) if layout == ONE_GPU else held.max_weight_bytes
    chosen = profile
    predictor = CalibratedModel(chosen, network_gb_s) if chosen is not None else None
    predicted_note = profile_note(chosen, gpu.name) if chosen is not None and detail else None
    moe = spec.moe
    searched: dict[tuple, tuple[int | None, int | None]] = {}  # the batches by the figures they depend on
    bits_f, resident_s = float(bits), float(resident) / bw
    profile_name = chosen.name if chosen is not None else None
    kv_at: dict[int, list[int | Fraction]] = {}  # per-stage KV of one sequence by context

    def row(
        batch: int,
        context: int,
        t: dict[str, Any],
        bound: tuple[float, float, float, float, Bound],
        link: StepTime,
        estimate_s: float,
        predicted: float | None,
        op_rows: list[OpRow],
        step: Step | None,
    ) -> DecodeStep:
        """The result of one point from its totals ``t`` and its times."""
        flops, weight_flops, matmul, rows, other = t["flops"], t["weight_flops"], t["matmul"], t["rows"], t["other"]
        kv_read, kv_write, seqs = t["kv_read"], t["kv_write"], t["seqs"]
        other = other - rows
        weights_b = matmul + other + rows

        # FLOPs grow linearly with the batch; so do embedding rows and KV; only the routed experts'
        # expected reads grow otherwise. Intensity rises with B towards a limit.
        flops_1, weight_flops_1 = float(flops) / seqs, float(weight_flops) / seqs
        rows_1 = float(rows) / seqs
        per_seq = float(rows + kv_read + kv_write) / seqs
        expert_bytes = t["expert_bytes"]
        fixed = float(weights_b - rows) - expert_bytes
        routed_tokens = t["tokens"] * (layout.dp if layout.ep > 1 else 1)
        common = gcd(routed_tokens, seqs)  # routed tokens per sequence: routed_tokens / seqs in lowest terms
        if moe is not None and weight_bytes == WeightBytes.READ:
            expert_bytes /= expert_hit_fraction(moe.num_experts, moe.num_experts_per_tok, routed_tokens)
        key = (weight_flops_1, flops_1, rows_1, per_seq, fixed, expert_bytes, routed_tokens // common, seqs // common)
        if key not in searched:
            routed = Fraction(routed_tokens, seqs)
            searched[key] = _compute_bound_batches(
                weight_flops_1,
                flops_1,
                rows_1,
                per_seq,
                fixed,
                expert_bytes,
                routed,
                moe if weight_bytes == WeightBytes.READ else None,
                ridge,
            )
        b_weights, b_all = searched[key]
        limit = flops_1 / per_seq if per_seq else None
        compute_s, memory_s, link_s, bound_s, bound_by = bound

        conventions = []
        if detail and step is not None:
            conventions = _decode_notes(spec, gpu, step, link, held, kv_at, batch, context, kv_bits, seqs)
            if predicted_note is not None:
                conventions.append(predicted_note)
                conventions += t["split_kv_notes"]
        total_bytes = t["bytes"]
        if context not in kv_at:
            kv_at[context] = stage_kv_bytes(spec, layout, context, kv_bits)
        return DecodeStep(
            model=spec.name,
            gpu=gpu.name,
            layout=layout,
            batch=batch,
            context=context,
            compute_dtype=compute,
            weight_bits=bits_f,
            kv_bits=kv_bits,
            weight_bytes_convention=weight_bytes,
            peak_flops_per_s=peak,
            bandwidth_bytes_s=bw,
            ridge_flop_per_byte=ridge,
            flops=flops,
            weight_flops=weight_flops,
            attention_flops=flops - weight_flops,
            matmul_weight_bytes=matmul,
            other_weight_bytes=other,
            embedding_row_bytes=rows,
            resident_weight_bytes=resident,
            kv_read_bytes=kv_read,
            kv_write_bytes=kv_write,
            comm_bytes=t["sent"],
            bytes=total_bytes,
            intensity_flop_per_byte=float(flops) / float(total_bytes),
            weight_intensity_flop_per_byte=float(weight_flops) / float(weights_b),
            kv_intensity_flop_per_byte=float(flops - weight_flops) / float(kv_read) if kv_read else None,
            compute_time_s=compute_s,
            memory_time_s=memory_s,
            comm_time_s=link_s,
            link=link.link,
            bound_s=bound_s,
            bound=bound_by,
            tokens_per_s=batch / bound_s,
            resident_read_time_s=resident_s,
            matmul_weights_time_s=float(matmul) / bw,
            mfu=mfu,
            mbu=mbu,
            estimate_s=estimate_s,
            estimate_tokens_per_s=batch / estimate_s,
            compute_bound_batch_weights_only=b_weights,
            compute_bound_batch=b_all,
            kv_bytes_at_compute_bound_batch_weights_only=(
                exact(
                    Fraction(kv_read * b_weights, seqs)
                    if type(kv_read) is int
                    else Fraction(kv_read) * b_weights / seqs
                )
                if (b_weights and kv_read)
                else None
            ),
            intensity_limit_flop_per_byte=limit,
            ops=op_rows,
            conventions=conventions,
            predicted_s=predicted,
            profile=profile_name,
            **banded(chosen, predicted, batch, context, batch, bound_s),
            total_flops=t["total_flops"],
            fits_in_memory=_fits(held, kv_at[context], gpu, seqs),
            max_batch_in_memory=_most(held, kv_at[context], gpu),
        )

    if len(points) > GRID_POINTS and not (detail and ops):
        from llm_cost.analyses.decode_grid import decode_columns

        columns = decode_columns(
            spec,
            gpu,
            points,
            compute=compute,
            bits=bits,
            kv_bits=kv_bits,
            weight_bytes=weight_bytes,
            layout=layout,
            rates=(peak, bw, peak * mfu, bw * mbu),
            network_gb_s=network_gb_s,
            predictor=predictor,
            detail=detail,
        )
        if columns is not None:
            link = bound_model.step_time(columns[0][4], gpu, False)
            return [
                row(b, c, t, bound, link, estimate_s, predicted, [], probe)
                for (b, c), (t, bound, estimate_s, predicted, probe) in zip(points, columns)
            ]
    results = []
    for batch, context in points:
        step = build_step(
            spec,
            decode(batch, context),
            layout=layout,
            weight_bits=bits,
            kv_bits=kv_bits,
            compute_dtype=compute,
            weight_bytes=weight_bytes,
        )
        operators = detail and ops
        bound = bound_model.step_time(step, gpu, operators)
        estimate = estimate_model.step_time(step, gpu, operators)
        figures = list(map(_FIGURES, step.ops))  # per operator: (kind, flops, weight, KV read, KV write, bytes, sent)
        gemms = [f for f in figures if f[0] == OpKind.GEMM]
        totals: dict[str, Any] = dict(
            zip(
                ("flops", "kv_read", "kv_write", "bytes", "sent"),
                (sum_of([f[i] for f in figures]) for i in (1, 3, 4, 5, 6)),
            )
        )
        totals["weight_flops"], totals["matmul"] = sum_of([f[1] for f in gemms]), sum_of([f[2] for f in gemms])
        totals["rows"] = sum_of([op.weight_bytes for op in step.ops if op.role == OpRole.EMBEDDING_ROWS])
        totals["other"] = sum_of([f[2] for f in figures if f[0] in (OpKind.ELEMENTWISE, OpKind.EMBEDDING)])
        totals["expert_bytes"] = sum(float(op.weight_bytes) for op in step.ops if op.role == OpRole.ROUTED_EXPERTS)
        totals["seqs"], totals["tokens"] = step.sequences, step.tokens
        totals["total_flops"] = _total_flops(
            spec,
            step,
            layout,
            decode(batch, context),
            weight_bits=bits,
            kv_bits=kv_bits,
            compute_dtype=compute,
            weight_bytes=weight_bytes,
        )
        totals["split_kv_notes"] = split_kv_notes(predictor, step, gpu) if detail and predictor is not None else []
        predicted = predictor.step_time(step, gpu, operators).time_s if predictor is not None else None
        results.append(
            row(
                batch,
                context,
                totals,
                (bound.compute_s, bound.memory_s, bound.link_s, bound.time_s, bound.bound),
                bound,
                estimate.time_s,
                predicted,
                _op_rows(step, bound, estimate) if operators else [],
                step,
            )
        )
    return results


#: Sweeps of more points than this are worked out by columns (one context at a time).
GRID_POINTS = 8


def _physical_fit_note(gpu: HardwareSpec) -> Note:
    """What the fits column reads: the GPU's capacity, as the card reports it where its spec says so."""
    return note(
        "memory.physical_fit", gpu=gpu.name, capacity_bytes=gpu.capacity_bytes, reported=gpu.memory_gib is not None
    )


def _embedding_bits(step: Step) -> float | None:
    """Bits per element of the embedding rows ``step`` reads (their operator's bytes over its rows
    x d): a checkpoint's kept dtype where its matmuls are quantized (None: no rows read, a tied
    table)."""
    for op in step.ops:
        if op.role == OpRole.EMBEDDING_ROWS and op.m and op.n:
            return float(op.weight_bytes * 8 / (op.m * op.n))
    return None


def _decode_notes(
    spec: ModelSpec,
    gpu: HardwareSpec,
    step: Step,
    bound: StepTime,
    held: PerGPU,
    kv_at: dict[int, list[int | Fraction]],
    batch: int,
    context: int,
    kv_bits: int,
    sequences: int,
) -> list[Note]:
    """The conventions of a decode step of ``batch`` sequences (``sequences`` per replica) after
    ``context`` tokens (before the prediction's); ``step`` any step of the sweep's context, ``bound``
    any bound of the sweep (for its link); ``kv_at`` keeps each context's per-stage KV bytes of one sequence for the next
    point."""
    layout, compute = step.layout, step.compute_dtype
    conventions = [
        note("decode.step", batch=batch, context=context),
        note("gpu.peak", tflops=gpu.dense_tflops[compute.value], dtype=str(compute), tb_s=gpu.memory_bandwidth_tb_s),
        note(
            f"decode.bytes_{step.weight_bytes_convention}",
            bits=float(step.weight_bits),
            kv_bits=kv_bits,
            embedding_bits=_embedding_bits(step),
        ),  # fmt: skip
        note("time.bound_and_estimate"),
        _physical_fit_note(gpu),
    ]
    conventions += _layout_notes(layout, bound, spec, gpu)
    if spec.moe is not None:
        conventions.append(note("moe.expected_experts"))
    if step.mla_form == MLAForm.ABSORBED:
        conventions.append(note("mla.absorbed_decode"))
    if context not in kv_at:
        kv_at[context] = stage_kv_bytes(spec, layout, context, kv_bits)
    return conventions + _fit_note(held, kv_at[context], gpu, layout, sequences)


#: The figures of an operator a decode step's result sums.
_FIGURES = attrgetter("kind", "flops", "weight_bytes", "kv_read_bytes", "kv_write_bytes", "bytes", "comm_bytes")


def _compute_bound_batches(
    weight_flops_1: float,
    flops_1: float,
    rows_1: float,
    per_seq: float,
    fixed: float,
    all_experts: float,
    routed: Fraction,
    moe: MoE | None,
    ridge: float,
) -> tuple[int | None, int | None]:
    """(smallest batch whose weight reads alone, smallest whose whole step reaches ``ridge``), from
    a step's figures per sequence (FLOPs, embedding-row bytes, row + KV bytes), its fixed weight
    bytes, the bytes of every routed expert (read at the expected hit fraction of ``routed``
    tokens per sequence when ``moe`` is given) and the ridge (FLOP per byte)."""

    def weights_at(b: int) -> float:
        """Weight bytes of the step at ``b`` sequences per replica."""
        hit = 1.0
        if moe is not None:
            hit = expert_hit_fraction(
                moe.num_experts, moe.num_experts_per_tok, b * routed.numerator // routed.denominator
            )
        return fixed + all_experts * hit + b * rows_1

    return (
        _first_batch(lambda b: b * weight_flops_1 / weights_at(b), ridge),
        _first_batch(lambda b: b * flops_1 / (weights_at(b) - b * rows_1 + b * per_seq), ridge),
    )


@record
class PrefillStep(Result):
    """A prefill of ``batch`` prompts of ``seq`` tokens: its time is the time to first token
    (TTFT) of a request that waits for nothing else."""

    model: str
    gpu: str
    layout: Layout
    batch: int
    seq: int
    compute_dtype: Dtype
    attention: AttentionMask
    logits: Logits
    flops: Number
    weight_flops: Number
    attention_flops: Number
    weight_bytes: Number
    kv_write_bytes: Number
    comm_bytes: Number
    bytes: Number
    intensity_flop_per_byte: float
    peak_flops_per_s: float
    bandwidth_bytes_s: float
    compute_time_s: float
    memory_time_s: float
    comm_time_s: float
    bound_s: float
    bound: Bound
    mfu: float
    mbu: float
    estimate_s: float
    tokens_per_s_at_mfu: float
    ops: list[OpRow] = field(default_factory=list)
    conventions: list[Note] = field(default_factory=list)
    predicted_s: float | None = None  # the calibrated prediction, when a profile applies
    profile: str | None = None  # its profile's name
    predicted_low_s: float | None = None  # the prediction's error band (band_for), seconds
    predicted_high_s: float | None = None
    predicted_tokens_per_s: float | None = None  # tokens the step produces (decode) or reads (prefill) per second
    predicted_below: float | None = None  # the band's lower end as a share below the prediction (0.08: -8%)
    predicted_above: float | None = None  # its upper end as a share above it (0.12: +12%)
    engine: str | None = None  # the profile's engine
    profile_kind: str | None = None  # fitted or transferred
    profile_rows: int | None = None  # rows the profile (or its source) was fitted on
    total_flops: Number = 0  # the step's FLOPs on all GPUs of the layout (the model's count; = flops on one GPU)
    #: Whether the fullest GPU holds the weights and the step's KV in its physical memory (False:
    #: the figures are hypothetical; ``llm-cost fit`` counts an engine's own reserve too).
    fits_in_memory: bool = True


def _total_flops(spec: ModelSpec, step: Step, layout: Layout, groups: Sequence[SeqGroup], **build: Any) -> Number:
    """The FLOPs of ``step``'s sequences summed over every GPU of ``layout``: the same step built on
    one GPU (the model's count for those tokens; replicated operators such as norms counted once),
    or ``step.flops`` when the layout is one GPU. ``flops`` of a step on a layout is per GPU."""
    if layout == ONE_GPU:
        return step.flops
    return build_step(spec, groups, **build).flops


def prefill_step(
    spec: ModelSpec,
    gpu: HardwareSpec,
    seq: int,
    batch: int = 1,
    dtype: Dtype = Dtype.BF16,
    weight_bits: Number | None = None,
    kv_bits: int = 16,
    mfu: float = DEFAULT_MFU,
    attention: AttentionMask = AttentionMask.CAUSAL,
    logits: Logits = Logits.LAST,
    mbu: float = DEFAULT_MBU,
    layout: Layout = ONE_GPU,
    network_gb_s: float = DEFAULT_NETWORK_GB_S,
    profile: Profile | None = None,
) -> PrefillStep:
    """Roofline of a prefill (TTFT): the operators of ``batch`` prompts of ``seq`` tokens, LM head
    on the last position by default (as serving computes it; ``Logits.ALL`` is the documents'
    count). The bound is at the datasheet's peaks; the estimate at ``mfu`` and ``mbu``; the prediction
    under ``profile`` (default: the GPU's shipped one)."""
    compute = dtype
    bits = _bits(weight_bits, compute)
    build: dict[str, Any] = dict(
        weight_bits=bits, kv_bits=kv_bits, compute_dtype=compute, logits=logits, attention=attention
    )
    step = build_step(spec, prefill(batch, seq), layout=layout, **build)
    bound = RooflineBound(network_gb_s).step_time(step, gpu)
    est = EfficiencyEstimate(mfu, mbu, network_gb_s).step_time(step, gpu)
    flops, weight_flops = step.flops, step.total("flops", (OpKind.GEMM,))
    conventions = [
        note("prefill.step", batch=batch, seq=seq),
        note(f"attention.{attention}"),
        note(f"logits.{logits}"),
        note("flops.counting"),
        note("flops.not_counted"),
        note("gpu.peak", tflops=gpu.dense_tflops[compute.value], dtype=str(compute), tb_s=gpu.memory_bandwidth_tb_s),
        note("time.bound_and_estimate"),
        note("prefill.bytes"),
        _physical_fit_note(gpu),
    ]
    conventions += _layout_notes(layout, bound, spec, gpu)
    held, kv = per_gpu(spec, layout, bits, kv_bits), stage_kv_bytes(spec, layout, seq, kv_bits)
    conventions += _fit_note(held, kv, gpu, layout, step.sequences)
    predicted = _prediction(step, gpu, profile, network_gb_s, conventions)[0]
    return PrefillStep(
        spec.name,
        gpu.name,
        layout,
        batch,
        seq,
        compute,
        attention,
        logits,
        flops,
        weight_flops,
        flops - weight_flops,
        step.total("weight_bytes"),
        step.total("kv_write_bytes"),
        step.total("comm_bytes"),
        step.bytes,
        float(flops) / float(step.bytes),
        gpu.peak_flops(compute),
        gpu.bandwidth_bytes_s,
        bound.compute_s,
        bound.memory_s,
        bound.link_s,
        bound.time_s,
        bound.bound,
        mfu,
        mbu,
        est.time_s,
        batch * seq / est.time_s,
        _op_rows(step, bound, est),
        conventions,
        predicted,
        profile.name if profile is not None else None,
        **banded(profile, predicted, batch, seq, batch * seq, bound.time_s, prefill=True),
        total_flops=_total_flops(spec, step, layout, prefill(batch, seq), **build),
        fits_in_memory=_fits(held, kv, gpu, step.sequences),
    )
