"""Speculative decoding: when drafting gamma tokens and verifying them in one pass pays (seed 003 §08).

With per-token acceptance rate alpha and gamma drafted tokens (Leviathan et al. 2023), a round
yields E = (1 - alpha^(gamma+1)) / (1 - alpha) tokens (gamma + 1 when alpha = 1). If a draft
step costs c target steps and verifying gamma + 1 tokens costs what one step costs (the
memory-bound regime), the speedup is E / (gamma c + 1). Verification stays almost free only
while B (gamma + 1) tokens per step stay below the ridge: the gain turns near
B = ridge / (gamma + 1). Fully compute-bound, the speedup falls to E / (gamma + 1 + gamma c).

The step model (seed 003 §08), from the step's operators (:mod:`llm_cost.workload.step`) on one
GPU or a layout, timed by the time model ``roofline`` predicts with (a :class:`~llm_cost.perf.timemodel.TimeModel`:
the GPU's calibrated profile, else the MFU/MBU estimate; :func:`llm_cost.api.choices.time_model`):
baseline, B sequences add one token each after the context; verification, B sequences score
gamma + 1 tokens each (the FLOPs and weights of B (gamma + 1) tokens, each sequence's KV read
once). Baseline: B tokens per step; speculative: B x E tokens per verify step + gamma x c x
baseline step. The documents' numbers use full bandwidth (MBU 1). Tokens per second are of one
replica (its B sequences, on the layout's GPUs).

Two batches answer "when does it stop paying": the knee, the smallest batch whose verify step
is compute-bound (from there the gain falls), and the break-even, the smallest batch whose
speedup is below 1x. Both come from the same step model as the table, so they agree with it at
every context (with long contexts the KV reads keep the verify step memory-bound: no knee).
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from fractions import Fraction

from llm_cost.analyses.roofline import banded, max_sequences_in_memory, memory_note
from llm_cost.core.choices import Logits, WeightBytes
from llm_cost.core.errors import InputError
from llm_cost.core.labels import Bound
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Dtype, Part, TensorGroup
from llm_cost.model.layout import ONE_GPU, Layout
from llm_cost.model.structure import build
from llm_cost.perf.calibrated import split_kv_notes
from llm_cost.perf.profile import Profile, profile_note
from llm_cost.perf.ridge import ridge
from llm_cost.perf.timemodel import (
    DEFAULT_MBU,
    DEFAULT_MFU,
    DEFAULT_NETWORK_GB_S,
    EfficiencyEstimate,
    RooflineBound,
    StepTime,
    TimeModel,
)
from llm_cost.specs.schema import HardwareSpec, ModelSpec
from llm_cost.workload.step import SeqGroup, Step, build_step

__all__ = ["expected_tokens", "SpecAtBatch", "SpecResult", "speculative", "mtp_draft_cost"]


def expected_tokens(alpha: float, gamma: int) -> float:
    """(1 - alpha^(gamma+1)) / (1 - alpha): tokens per round; gamma + 1 when alpha = 1."""
    if alpha == 1:
        return float(gamma + 1)
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


@record
class SpecAtBatch:
    """The step model at one batch."""

    batch: int
    baseline_step_s: float
    verify_step_s: float
    draft_s: float
    baseline_tokens_per_s: float
    speculative_tokens_per_s: float
    speedup: float
    verify_bound: Bound  # what limits the verify step (one GPU: compute or memory)
    fits_memory: bool = True  # weights + this batch's KV at the context fit the fullest GPU
    # a prediction's error band (roofline's): the fast and slow ends of each step; None unpredicted
    baseline_step_low_s: float | None = None
    baseline_step_high_s: float | None = None
    verify_step_low_s: float | None = None
    verify_step_high_s: float | None = None
    draft_low_s: float | None = None
    draft_high_s: float | None = None
    baseline_step_below: float | None = None  # the band's ends as shares of the step (roofline's predicted_below)
    baseline_step_above: float | None = None
    verify_step_below: float | None = None
    verify_step_above: float | None = None


@record
class SpecResult(Result):
    """Speculative decoding: the closed forms, and optionally the Roofline step model."""

    alpha: float
    gamma: int
    c: float
    c_source: str
    expected_tokens: float
    speedup_memory_bound: float
    speedup_compute_bound: float
    model: str | None
    gpu: str | None
    mfu: float | None
    mbu: float | None
    context: int
    layout: Layout | None
    time_model: str | None  # the label of what timed the steps, e.g. "prediction (profile h100)"
    time_kind: str | None  # bound, estimate or prediction
    weight_bytes_convention: WeightBytes | None
    ridge_flop_per_byte: float | None
    turning_batch: float | None  # ridge / (gamma + 1), at peak FLOP/s: the closed form
    turning_batch_at_mfu: float | None  # the same with the step model's MFU x peak / (MBU x bandwidth)
    knee_batch: int | None  # smallest batch whose verify step is compute-bound in the step model
    break_even_batch: int | None  # smallest batch whose speedup is below 1x in the step model
    batch_search_limit: int  # the knee and break-even are searched up to this batch
    max_batch_in_memory: int | None  # most sequences beside the weights, all dp ranks (None: no bound)
    rows: list[SpecAtBatch]
    conventions: list[Note] = field(default_factory=list)


def _validate(alpha: float, gamma: int, c: float) -> None:
    if not 0 <= alpha <= 1:
        raise InputError(f"alpha: {alpha:g} is not an acceptance rate; it must be in [0, 1]", fields=("alpha",))
    if gamma < 1:
        raise InputError(f"gamma: {gamma} must be at least 1 drafted token", fields=("gamma",))
    if c < 0:
        raise InputError(f"c: {c:g} must be >= 0 (draft step cost as a fraction of a target step)", fields=("c",))


def mtp_draft_cost(spec: ModelSpec) -> float:
    """c of an MTP module used as the draft: its active matmul weights over the main model's
    (one MTP block plus eh_proj and the shared LM head, against the whole model)."""
    s = build(spec)
    if spec.mtp is None:
        raise InputError(f"{spec.name} has no MTP modules; give c instead of mtp", fields=("c", "mtp"))
    mtp = sum(float(t.active_gemm) for t in s.tensors_of(Part.MTP))
    head = sum(float(t.active_gemm) for t in s.tensors_of(Part.DECODER) if t.group == TensorGroup.LM_HEAD)
    return (mtp + head) / spec.mtp.num_nextn_predict_layers / float(s.active_gemm)


#: Largest batch the knee and break-even searches look at.
BATCH_SEARCH_LIMIT = 2**20


def _smallest(predicate, limit: int = BATCH_SEARCH_LIMIT) -> int | None:
    """Smallest batch in [1, limit] where ``predicate`` holds, for a predicate that stays true
    once true (exponential then binary search); None if it does not hold at ``limit``."""
    if not predicate(limit):
        return None
    lo, hi = 1, 1
    while not predicate(hi):
        lo, hi = hi + 1, min(hi * 2, limit)
    while lo < hi:
        mid = (lo + hi) // 2
        if predicate(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


class _StepModel:
    """The baseline and verify steps of one model on one GPU or a layout, timed by ``time``."""

    def __init__(
        self,
        spec: ModelSpec,
        gpu: HardwareSpec,
        dtype: Dtype,
        bits: int | Fraction,
        context: int,
        time: TimeModel,
        weight_bytes: WeightBytes,
        gamma: int,
        c: float,
        expected: float,
        layout: Layout,
    ) -> None:
        self.dtype, self.bits, self.weight_bytes, self.layout = dtype, bits, weight_bytes, layout
        self.spec, self.gpu, self.context, self.gamma, self.c, self.E = spec, gpu, context, gamma, c, expected
        self.time = time
        self.steps: dict[tuple[int, int], Step] = {}  # built once: a row and its band time the same step

    def step(self, batch: int, tokens: int) -> StepTime:
        """A step of ``batch`` sequences adding ``tokens`` tokens each; verification scores every
        drafted position, so the LM head runs on all of them."""
        return self.time.step_time(self._build(batch, tokens), self.gpu, False)

    def _build(self, batch: int, tokens: int) -> Step:
        """The operators of a step of ``batch`` sequences adding ``tokens`` tokens each (built once)."""
        built = self.steps.get((batch, tokens))
        if built is None:
            built = self.steps[(batch, tokens)] = build_step(
                self.spec,
                [SeqGroup(batch, tokens, self.context)],
                logits=Logits.ALL,
                weight_bits=self.bits,
                compute_dtype=self.dtype,
                weight_bytes=self.weight_bytes,
                layout=self.layout,
            )
        return built

    def row(self, batch: int) -> SpecAtBatch:
        base, verify = self.step(batch, 1), self.step(batch, self.gamma + 1)
        draft = self.gamma * self.c * base.time_s
        base_rate = batch / base.time_s
        spec_rate = batch * self.E / (verify.time_s + draft)
        return SpecAtBatch(
            batch,
            base.time_s,
            verify.time_s,
            draft,
            base_rate,
            spec_rate,
            spec_rate / base_rate,
            verify.bound,
        )

    def banded(self, row: SpecAtBatch) -> SpecAtBatch:
        """``row`` with its steps' error bands when a profile predicted them
        (:func:`llm_cost.analyses.roofline.banded`, as roofline bands a decode step: the profile's
        held-out residuals at the batch and context, the fast end held at the step's Roofline
        bound); the draft's band is the baseline's, scaled by gamma x c."""
        profile = getattr(self.time, "profile", None)
        if profile is None:
            return row
        base_low, base_high = self._band(profile, row.batch, 1, row.baseline_step_s)
        verify_low, verify_high = self._band(profile, row.batch, self.gamma + 1, row.verify_step_s)
        scale = self.gamma * self.c
        return dataclasses.replace(
            row,
            baseline_step_low_s=base_low,
            baseline_step_high_s=base_high,
            verify_step_low_s=verify_low,
            verify_step_high_s=verify_high,
            draft_low_s=scale * base_low if base_low is not None else None,
            draft_high_s=scale * base_high if base_high is not None else None,
            baseline_step_below=_share(base_low, row.baseline_step_s),
            baseline_step_above=_share(base_high, row.baseline_step_s),
            verify_step_below=_share(verify_low, row.verify_step_s),
            verify_step_above=_share(verify_high, row.verify_step_s),
        )

    def _band(self, profile: Profile, batch: int, tokens: int, predicted_s: float) -> tuple[float | None, float | None]:
        """The (fast, slow) ends of a step of ``batch`` x ``tokens`` tokens predicted at ``predicted_s``."""
        step = self._build(batch, tokens)
        bound = RooflineBound(getattr(self.time, "network_gb_s", DEFAULT_NETWORK_GB_S))
        band = banded(profile, predicted_s, batch, self.context, batch, bound.step_time(step, self.gpu, False).time_s)
        return band.get("predicted_low_s"), band.get("predicted_high_s")


def _share(end_s: float | None, predicted_s: float) -> float | None:
    """How far a band's end lies from the prediction, as a share of it (positive both ways)."""
    return None if end_s is None else abs(end_s / predicted_s - 1)


def _decode(model: _StepModel, batch: int):
    """The operators of the baseline (one-token) step at ``batch``."""
    return build_step(
        model.spec,
        [SeqGroup(batch, 1, model.context)],
        weight_bits=model.bits,
        compute_dtype=model.dtype,
        weight_bytes=model.weight_bytes,
        layout=model.layout,
    )


def _draft_cost(c: float | None, spec: ModelSpec | None, use_mtp: bool) -> tuple[float, str]:
    """The draft's cost per step as a fraction of a target step, and where it comes from: ``c`` as
    given, or the MTP module's (``use_mtp``). InputError when neither is there."""
    c_source = "given"
    if use_mtp:
        if spec is None:
            raise InputError("mtp needs a model with MTP modules (e.g. deepseek-v3)", fields=("mtp",))
        c, c_source = mtp_draft_cost(spec), "MTP module's matmul weights / the model's active matmul weights"
    if c is None:
        raise InputError(
            "c is required (draft step cost as a fraction of a target step), or mtp with a model",
            fields=("c", "mtp"),
        )
    return c, c_source


def _step_notes(model: _StepModel, rows: list[SpecAtBatch], timer: TimeModel, weight_bytes: WeightBytes) -> list[Note]:
    """The step model's conventions: its GPU, dtype, time model, context and weights; the profile
    (and split-KV) notes of a calibrated time model; the bytes, the knee and break-even search and
    the memory it needs at its largest batch."""
    spec, gpu, dtype, context, bits, layout = (
        model.spec,
        model.gpu,
        model.dtype,
        model.context,
        model.bits,
        model.layout,
    )
    notes: list[Note] = []
    notes.append(
        note(
            "spec.step_model",
            gpu=gpu.name,
            dtype=dtype,
            time_model=timer.label,
            context=context,
            bits=float(bits),
            gpus=layout.gpus,
        )
    )
    profile = getattr(timer, "profile", None)
    if profile is not None:
        notes.append(profile_note(profile, gpu.name))
        if rows:
            notes += split_kv_notes(timer, _decode(model, min(r_.batch for r_ in rows)), gpu)
    notes.append(note(f"decode.bytes_{weight_bytes}", bits=float(bits), kv_bits=16))
    notes.append(note("spec.knee_and_break_even", limit=BATCH_SEARCH_LIMIT))
    largest = max(r_.batch for r_ in rows)
    notes += memory_note(spec, gpu, layout, Fraction(bits), 16, -(-largest // layout.dp), context)
    return notes + spec.context_note([context])


def speculative(
    alpha: float,
    gamma: int,
    c: float | None = None,
    spec: ModelSpec | None = None,
    gpu: HardwareSpec | None = None,
    batches: list[int] | None = None,
    mfu: float = DEFAULT_MFU,
    context: int = 0,
    dtype: Dtype = Dtype.BF16,
    weight_bytes: WeightBytes = WeightBytes.READ,
    use_mtp: bool = False,
    mbu: float = DEFAULT_MBU,
    time_model: TimeModel | None = None,
    layout: Layout = ONE_GPU,
    weight_bits: int | Fraction | None = None,
) -> SpecResult:
    """Closed forms for (alpha, gamma, c); with a model and GPU, the step model at each batch and
    its knee and break-even batches, its steps timed by ``time_model`` (default: the MFU/MBU
    estimate) per GPU of ``layout``, the weights at ``weight_bits`` (None: the checkpoint's
    ``torch_dtype``, the documents' reading; the API passes the checkpoint's formats, as
    ``roofline`` weighs them).

    InputError for alpha outside [0, 1], gamma < 1, c < 0, a missing c, a GPU lacking ``dtype``, or a
    layout that cannot hold the model."""
    c, c_source = _draft_cost(c, spec, use_mtp)
    _validate(alpha, gamma, c)
    E = expected_tokens(alpha, gamma)
    rows: list[SpecAtBatch] = []
    r = turning = turning_mfu = knee = even = most = None
    timer: TimeModel = EfficiencyEstimate(mfu, mbu)
    conventions = [note("spec.closed_forms")]
    if spec is not None and gpu is not None:
        r = ridge(gpu, dtype)
        turning = r / (gamma + 1)
        turning_mfu = turning * mfu / mbu
        bits = weight_bits if weight_bits is not None else Dtype(spec.torch_dtype).bits
        timer = time_model or EfficiencyEstimate(mfu, mbu)
        model = _StepModel(spec, gpu, dtype, bits, context, timer, weight_bytes, gamma, float(c), E, layout)
        per_rank = max_sequences_in_memory(spec, gpu, layout, Fraction(bits), 16, context)
        most = per_rank * layout.dp if per_rank is not None else None  # the batch splits over the dp ranks
        rows = [
            dataclasses.replace(model.banded(model.row(B)), fits_memory=most is None or B <= most)
            for B in batches or ()
        ]
        knee = _smallest(lambda b: model.row(b).verify_bound == Bound.COMPUTE)
        even = _smallest(lambda b: model.row(b).speedup < 1)
        conventions += _step_notes(model, rows, timer, weight_bytes)
    return SpecResult(
        alpha,
        gamma,
        float(c),
        c_source,
        E,
        E / (gamma * c + 1),
        E / (gamma + 1 + gamma * c),
        spec.name if spec else None,
        gpu.name if gpu else None,
        mfu if gpu else None,
        mbu if gpu else None,
        context,
        layout if gpu else None,
        timer.label if gpu is not None and spec is not None else None,
        str(timer.kind) if gpu is not None and spec is not None else None,
        weight_bytes if gpu else None,
        r,
        turning,
        turning_mfu,
        knee,
        even,
        BATCH_SEARCH_LIMIT,
        most,
        rows,
        conventions,
    )
