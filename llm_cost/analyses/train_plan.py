"""The training planner: predicted step time, MFU, days, GPU-hours, energy, dollars and memory of a
parallel layout, and the search for the best layout of a cluster (``llm-cost train`` without
``--mfu`` or ``--gpu-hours``).

The step model is :mod:`llm_cost.analyses.train_step`; memory per GPU follows
:mod:`llm_cost.analyses.training`'s accounting (16 B of mixed-precision Adam state per parameter,
sharded by ZeRO) and :func:`llm_cost.analyses.memory.activation_memory` (Korthikanti et al. 2022,
the model's own block), on the fullest pipeline stage:

* state: the stage's parameters on one TP shard (routed experts also split over EP), ZeRO-1 shards
  the 12 B of optimizer state over the dp x cp ranks holding the same weights, ZeRO-2 also the 2 B
  of gradients, ZeRO-3 also the 2 B of weights;
* activations: the layer's bytes at s/cp tokens (sequence-parallel when TP > 1) x the stage's
  layers x the micro-batches 1F1B keeps in flight on it (min(m, p - stage)), x (1 + (p - 1)/(p v))
  when interleaved (Korthikanti et al. 2022 §4.2.3);
* buffers: on the last stage the FP32 logits of a micro-batch and their gradient (b s/cp V/tp x
  8 B); with ZeRO-3 two layers' gathered weights (the one running and the one prefetched);
* all of it within the physical capacity less a reserve (CUDA context, NCCL buffers, allocator).

MFU is quoted two ways, both against the dense peak of the compute dtype: ``mfu`` = 6 N D (N the
parameters a token uses) over GPU-seconds x peak; ``mfu_with_attention`` = 3 x the forward FLOPs
of the step's operators (causal attention and every LM-head position included: Megatron-LM's and
PaLM's count, causal) over the same. ``hfu`` counts what the GPUs run: recompute and
FlashAttention's 2.5x backward.
"""

from __future__ import annotations

import math
from dataclasses import field, replace
from typing import Any, Optional

from llm_cost.analyses.capacity import tight_memory_note
from llm_cost.analyses.memory import activation_memory
from llm_cost.analyses.train_step import (
    Links,
    StageWork,
    StepBreakdown,
    TrainLayout,
    profile_parameters,
    stage_ops,
    stage_work,
    step_breakdown,
)
from llm_cost.analyses.training import STATE_BYTES
from llm_cost.core.choices import Logits, Recompute
from llm_cost.core.errors import InputError
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Dtype, Part, TensorKind
from llm_cost.model.layout import Layout, stage_first_layers, stage_layers, tensor_share, validate_layout
from llm_cost.model.structure import build
from llm_cost.specs.schema import HardwareSpec, ModelSpec
from llm_cost.workload.step import build_step, prefill

__all__ = [
    "LayoutMemory",
    "Candidate",
    "TrainPlan",
    "SearchSpace",
    "plan_training",
    "model_flops_per_sequence",
    "CONVENTIONS",
    "DEFAULT_RESERVE_BYTES",
    "TRAINING_EFFICIENCY",
    "Cluster",
    "Costs",
    "search",
    "default_space",
    "fixed",
    "memory_split",
]

#: Memory a training process cannot use for tensors: CUDA context, NCCL buffers, allocator
#: fragmentation (the same 2 GiB vLLM keeps back; PyTorch's context alone is about 0.5 GiB).
DEFAULT_RESERVE_BYTES = 2 * 2**30

#: The training kernels' compute rate relative to a GPU's serving profile (the profile's GEMM and
#: flash-attention efficiencies are multiplied by ``factor``), by profile family (the profile a GPU's
#: own is transferred from, or its own): fitted on the reference rows of
#: ``llm_cost/data/measurements/training/published-runs.yaml`` (the newest stack on that GPU that
#: runs the kernels the step model assumes); ``loo_median`` / ``loo_max`` are those rows'
#: leave-one-out relative errors (each row predicted with the factor fitted on the others). Written
#: by ``python scripts/fit_training.py``; a test refits it.
TRAINING_EFFICIENCY: dict[str, dict[str, Any]] = {
    "h200": {"factor": 1.099, "source": "llama3", "rows": 3, "loo_median": 0.03, "loo_max": 0.051},
    "a100": {"factor": 0.826, "source": "mosaicml", "rows": 7, "loo_median": 0.078, "loo_max": 0.135},
}

#: FLOPs per sequence by the conventions published runs quote (``forward`` = the forward FLOPs of
#: the step's operators, causal, every LM-head position).
CONVENTIONS = {
    "6nd": "6 N s (Kaplan et al. 2020; N every parameter a token uses)",
    "operators": "3 x the forward operators' FLOPs: 6 N_gemm s + causal attention x 3 (this tool's)",
    "palm": "s (6 N + 12 L d_attn s): PaLM appendix B's count, attention non-causal (MosaicML's too)",
    "megatron_hardware": "96 s L h^2 (1 + s/6h + V/16Lh): Narayanan et al. 2021 §5.1, full recompute included",
    "megatron_model": "72 s L h^2 (1 + s/6h + V/12Lh): Korthikanti et al. 2022 §6, no recompute",
}


def efficiency_family(gpu_name: str, profile: Any) -> str:
    """The key of :data:`TRAINING_EFFICIENCY` for a GPU: the profile its own is transferred from,
    else its profile's name, else the GPU's name."""
    if profile is None:
        return gpu_name
    return str(profile.transferred_from or profile.name)


def model_flops_per_sequence(spec: ModelSpec, seq: int, convention: str, forward_flops: float) -> float:
    """FLOPs of one sequence of ``seq`` tokens in one training step under ``convention`` (a key of
    :data:`CONVENTIONS`), ``forward_flops`` the operators' forward count. ValueError otherwise."""
    n = float(build(spec).active_params)
    L, h, V = spec.num_hidden_layers, spec.hidden_size, spec.vocab_size
    d_attn = spec.attention.num_attention_heads * spec.head_dim
    s = float(seq)
    if convention == "6nd":
        return 6 * n * s
    if convention == "operators":
        return 3 * forward_flops
    if convention == "palm":
        return s * (6 * n + 12 * L * d_attn * s)
    if convention == "megatron_hardware":
        return 96 * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))
    if convention == "megatron_model":
        return 72 * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h))
    raise ValueError(f"unknown FLOP convention {convention!r}; known: {', '.join(CONVENTIONS)}")


@record
class LayoutMemory:
    """Bytes on the fullest GPU of a layout."""

    state_bytes: float
    activation_bytes: float
    buffer_bytes: float
    total_bytes: float
    room_bytes: int  # capacity less the reserve
    fits: bool


@record
class Candidate:
    """One evaluated layout: its predicted step, utilisation and memory."""

    layout: TrainLayout
    step_time_s: float
    mfu: float
    mfu_with_attention: float
    hfu: float
    breakdown: StepBreakdown | None  # None: it does not fit, so it is not timed
    memory: LayoutMemory


@record
class SearchSpace:
    """The values the search tries for each knob; a knob the user gave has one value."""

    tp: tuple[int, ...]
    cp: tuple[int, ...]
    pp: tuple[int, ...]
    vp: tuple[int, ...]
    ep: tuple[int, ...]
    zero: tuple[int, ...]
    recompute: tuple[Recompute, ...]
    micro_batch: tuple[int, ...]
    dp: Optional[int] = None


@record
class Cluster:
    """What the step is timed on: ``gpus`` GPUs of one kind, their links, the calibration profile
    (None: its parameters' priors) with the training-efficiency factor, the compute dtype, the
    memory reserve per GPU and whether TP collectives overlap the GEMMs."""

    gpu: HardwareSpec
    gpus: int
    links: Links
    profile: Any
    efficiency: float
    dtype: Dtype = Dtype.BF16
    reserve_bytes: int = DEFAULT_RESERVE_BYTES
    tp_overlap: bool = False


@record
class Reason:
    """Why the best layout beats the best one with another value of ``knob``."""

    knob: str
    value: Any  # the other value
    other: str  # its layout label
    fits: bool  # False: nothing with that value fits; the other layout is the smallest in memory
    other_mfu: float
    delta_step_s: float  # its step time less the best's
    term: str  # the term of the step (StepBreakdown field) that grows most
    term_delta_s: float
    other_total_bytes: float


@record
class TrainPlan(Result):
    """A predicted training plan: the best layout found (or the one given) and its cost."""

    model: str
    gpu: str
    gpus: int
    tokens: int
    seq: int
    global_batch_tokens: int  # sequences per step x seq (the batch asked, in whole sequences)
    sequences_per_step: int
    dtype: str
    peak_flops: float
    time_model: str  # the profile's label
    layout: dict[str, Any]
    layout_label: str
    mfu: float  # 6 N D convention
    mfu_with_attention: float  # the operators' convention (causal attention, every LM-head position)
    hfu: float
    step_time_s: float
    tokens_per_s_per_gpu: float
    days: float
    gpu_hours: float
    energy_kwh: float
    power_w: float
    pue: float
    usd_per_gpu_hour: float | None
    usd: float | None
    grid_kg_per_kwh: float | None
    co2_tonnes: float | None
    error_band: float  # relative: measured MFU within predicted / (1 +- band) on the published rows
    mfu_range: tuple[float, float]
    days_range: tuple[float, float]
    breakdown: dict[str, float]
    memory: LayoutMemory
    memory_bytes: int
    top: list[dict[str, Any]]
    reasons: list[Reason]
    searched: int
    fitting: int
    conventions: list[Note] = field(default_factory=list)


def _zero_split() -> dict[int, tuple[int, int]]:
    """(replicated, sharded) bytes per parameter of :data:`~llm_cost.analyses.training.STATE_BYTES`
    by ZeRO stage: 1 shards the optimizer states, 2 also the gradients, 3 also the weights."""
    weights, grads = STATE_BYTES["bf16 weights"], STATE_BYTES["bf16 gradients"]
    total = sum(STATE_BYTES.values())
    return {0: (total, 0), 1: (weights + grads, total - weights - grads), 2: (weights, total - weights), 3: (0, total)}


#: Bytes per parameter kept whole and sharded over the DP x CP ranks, by ZeRO stage.
ZERO_SPLIT = _zero_split()


def memory_split(num_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage as the planner places them for memory: as even as possible, the
    remainder on the middle stages, so that the first stage (the most micro-batches in flight) and
    the last (the LM head and its logits) carry one layer less, as Llama 3 did (Dubey et al. 2024
    §3.3.2: 126 layers on 16 stages as 7, 14 x 8, 7). The slowest stage has as many layers as the
    even split's, so the step time is the same."""
    base, extra = divmod(num_layers, pp)
    order = list(range(1, pp - 1)) + [0, pp - 1] if pp > 2 else list(range(pp))
    counts = [base] * pp
    for i in order[:extra]:
        counts[i] += 1
    return counts


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def default_space(spec: ModelSpec, gpu: HardwareSpec, gpus: int, seq: int) -> SearchSpace:
    """The knobs searched by default: TP within a node, CP in powers of 2 down to 1K-token shards,
    PP up to the layers (and 128), v from 1 to 8, EP powers of 2 up to 64 for MoE, ZeRO
    0-3, selective or full recompute, micro-batches of 1, 2, 4 or 8 sequences."""
    node = max(1, gpu.interconnect.gpus_per_node)
    tp = tuple(t for t in _divisors(node) if gpus % t == 0)
    cp = tuple(c for c in (1, 2, 4, 8, 16, 32) if seq % c == 0 and (c == 1 or seq // c >= 1024))
    pp = tuple(p for p in range(1, min(spec.num_hidden_layers, 128) + 1) if gpus % p == 0)
    ep = (1,) if spec.moe is None else tuple(e for e in (1, 2, 4, 8, 16, 32, 64) if spec.moe.num_experts % e == 0)
    return SearchSpace(
        tp, cp, pp, (1, 2, 3, 4, 5, 6, 7, 8), ep, (0, 1, 2, 3), (Recompute.SELECTIVE, Recompute.FULL), (1, 2, 4, 8)
    )


class _Evaluator:
    """Evaluates layouts of one (model, cluster, batch) with the per-(TP, PP) operators, the
    per-stage work and the activation bytes kept between layouts."""

    def __init__(self, spec: ModelSpec, cluster: Cluster, seq: int) -> None:
        gpu = cluster.gpu
        self.spec, self.gpu, self.seq, self.dtype = spec, gpu, seq, cluster.dtype
        self.q = profile_parameters(cluster.profile, cluster.efficiency)
        self.links, self.tp_overlap = cluster.links, cluster.tp_overlap
        self.room = gpu.capacity_bytes - cluster.reserve_bytes
        self.peak = gpu.peak_flops(cluster.dtype)
        self.forward_flops = float(build_step(spec, prefill(1, seq), logits=Logits.ALL).flops)
        self.active = float(build(spec).active_params)
        self._ops: dict[tuple[int, int], list[tuple[int, list, int, int]]] = {}
        self._work: dict[tuple, StageWork] = {}
        self._act: dict[tuple, float] = {}
        self._params: dict[int, tuple[float, float, float, float]] = {}
        self._moe = {i for i in range(spec.num_hidden_layers) if spec.is_moe_layer(i)}

    def _stages(self, tp: int, pp: int) -> list[tuple[int, list, int, int]]:
        """(stage index, operators, layers, MoE layers) of the distinct stages: the first, the last
        and one of each other (layers, MoE layers) kind."""
        key = (tp, pp)
        if key not in self._ops:
            ops = stage_ops(self.spec, tp, pp, self.seq)
            counts = stage_layers(self.spec.num_hidden_layers, pp)
            firsts = stage_first_layers(self.spec.num_hidden_layers, pp)
            seen: set[tuple[int, int]] = set()
            chosen = []
            for i, (n, start) in enumerate(zip(counts, firsts)):
                moe = sum(1 for j in range(start, start + n) if j in self._moe)
                kind = (n, moe)
                if i in (0, pp - 1) or kind not in seen:
                    chosen.append((i, ops[i], n, moe))
                    seen.add(kind)
            self._ops[key] = chosen
        return self._ops[key]

    def _shard_params(self, tp: int) -> tuple[float, float, float, float]:
        """(per decoder layer, of it routed experts, input tables, output side) parameters of one
        TP shard: per layer averaged over the layers; the input embedding sits on the first stage,
        the final norm, LM head and MTP modules on the last."""
        if tp not in self._params:
            layout = Layout(tp, 1)
            layer = experts = first = last = 0.0
            for t in build(self.spec).tensors:
                if t.part in (Part.VISION, Part.AUDIO, Part.MTP_COPY) or not t.stored:
                    continue
                elements = float(t.total * tensor_share(self.spec, t, layout))
                if t.layers and t.part == Part.DECODER:
                    layer += elements
                    experts += elements if t.group == "routed_experts" else 0.0
                elif t.kind == TensorKind.LOOKUP and t.part == Part.DECODER:
                    first += elements
                else:
                    last += elements
            L = self.spec.num_hidden_layers
            self._params[tp] = (layer / L, experts / L, first, last)
        return self._params[tp]

    def _activation_per_layer(self, layout: TrainLayout) -> float:
        key = (layout.tp, layout.cp, layout.micro_batch, layout.recompute)
        if key not in self._act:
            act = activation_memory(
                self.spec, self.seq // layout.cp, layout.micro_batch, layout.recompute, layout.tp, layout.tp > 1
            )
            self._act[key] = float(act.bytes_per_layer)
        return self._act[key]

    def _works(self, layout: TrainLayout) -> tuple[list[StageWork], list[int]]:
        works, moe_layers = [], []
        share = layout.micro_batch / layout.cp
        for i, ops, n, moe in self._stages(layout.tp, layout.pp):
            key = (layout.tp, layout.pp, i, layout.cp, layout.micro_batch, layout.ep, layout.recompute)
            if key not in self._work:
                self._work[key] = stage_work(ops, n, share, layout.ep, layout.recompute, self.gpu, self.dtype, self.q)
            works.append(self._work[key])
            moe_layers.append(moe)
        return works, moe_layers

    def memory(self, layout: TrainLayout) -> tuple[LayoutMemory, float]:
        """The fullest GPU's memory under the planner's split (:func:`memory_split`), and the
        parameters per GPU of the largest stage (what the DP collectives and the optimizer move)."""
        p, v, m = layout.pp, layout.vp, layout.micro_batches
        counts = memory_split(self.spec.num_hidden_layers, p)
        per_layer = self._activation_per_layer(layout)
        interleave = 1 + (p - 1) / (p * v) if v > 1 else 1.0
        n = layout.dp * layout.cp
        replicated, sharded = ZERO_SPLIT[layout.zero]
        layer, experts, first, last = self._shard_params(layout.tp)
        layer_params = layer - experts + experts / layout.ep
        if self.spec.tie_word_embeddings and p > 1:
            last += self.spec.vocab_size * self.spec.hidden_size / layout.tp  # the LM head's own copy
        best: LayoutMemory | None = None
        for i in {0, p - 1, counts.index(max(counts))}:  # the fullest middle stage: its first
            params = layer_params * counts[i] + (first if i == 0 else 0.0) + (last if i == p - 1 else 0.0)
            state = params * (replicated + sharded / n)
            activations = per_layer * counts[i] * min(m, p - i) * (interleave if i == 0 else 1.0)
            buffers = 0.0
            if i == p - 1:
                tokens = layout.micro_batch * self.seq / layout.cp
                buffers += tokens * self.spec.vocab_size / layout.tp * 8
            if layout.zero == 3:
                buffers += 2 * layer_params * 2
            total = state + activations + buffers
            row = LayoutMemory(state, activations, buffers, total, self.room, total <= self.room)
            if best is None or row.total_bytes > best.total_bytes:
                best = row
        assert best is not None
        return best, layer_params * max(counts) + max(first, last)

    def evaluate(self, layout: TrainLayout) -> Candidate:
        """The predicted step and memory of ``layout`` (a layout that does not fit is not timed)."""
        memory, params = self.memory(layout)
        if not memory.fits:
            return Candidate(layout, math.inf, 0.0, 0.0, 0.0, None, memory)
        works, moe_layers = self._works(layout)
        breakdown = step_breakdown(
            self.spec,
            layout,
            self.seq,
            works,
            [params] * len(works),
            moe_layers,
            self.links,
            self.gpu.bandwidth_bytes_s,
            self.q,
            self.tp_overlap,
        )
        step = breakdown.step_s
        sequences = layout.micro_batch * layout.micro_batches * layout.dp
        gpu_seconds = step * layout.gpus * self.peak
        slowest = max(works, key=lambda w: w.compute_s)
        return Candidate(
            layout,
            step,
            6 * self.active * self.seq * sequences / gpu_seconds,
            3 * self.forward_flops * sequences / gpu_seconds,
            slowest.hardware_flops * layout.micro_batches / (step * self.peak),
            breakdown,
            memory,
        )


def check_space(spec: ModelSpec, space: SearchSpace, seq: int) -> None:
    """InputError naming the argument when a knob the user fixed cannot run ``spec`` at ``seq``
    tokens (a searched knob's invalid values are skipped)."""
    if len(space.tp) == 1:
        validate_layout(spec, Layout(space.tp[0], 1))
    if len(space.pp) == 1:
        validate_layout(spec, Layout(1, space.pp[0]))
    if len(space.cp) == 1 and seq % space.cp[0]:
        raise InputError(f"cp: {space.cp[0]} does not divide the {seq:,}-token sequence", fields=("cp", "seq"))
    if len(space.ep) == 1 and space.ep[0] > 1:
        if spec.moe is None:
            raise InputError(f"ep: {spec.name} has no experts; ep must be 1", fields=("ep",))
        if spec.moe.num_experts % space.ep[0]:
            raise InputError(f"ep: {space.ep[0]} does not divide the {spec.moe.num_experts} experts", fields=("ep",))
    if (
        len(space.vp) == 1
        and len(space.pp) == 1
        and space.vp[0] > min(stage_layers(spec.num_hidden_layers, space.pp[0]))
    ):
        raise InputError(
            f"vp: {space.vp[0]} virtual stages exceed the layers of a {space.pp[0]}-stage pipeline's stage",
            fields=("vp", "pp"),
        )


def _check_divides(spec: ModelSpec, gpus: int, space: SearchSpace) -> None:
    """InputError naming the knobs fixed when no tp x cp x pp of the space divides ``gpus`` (so no
    layout exists whatever the batch), or when none leaves the ``dp`` fixed."""
    triples = [
        (t, c, p)
        for t in space.tp
        for c in space.cp
        for p in space.pp
        if p <= spec.num_hidden_layers and gpus % (t * c * p) == 0
    ]
    fixed = {k: getattr(space, k)[0] for k in ("tp", "cp", "pp") if len(getattr(space, k)) == 1}
    named = [k for k, v in fixed.items() if v > 1]
    if not triples and named:
        product = " x ".join(f"{k} {fixed[k]}" for k in named)
        raise InputError(
            f"{product}: {math.prod(fixed[k] for k in named):,} GPUs per replica do not divide the {gpus:,} GPUs; "
            "give gpus a multiple of it",
            fields=(*named, "gpus"),
        )
    if space.dp is not None and not any(gpus // (t * c * p) == space.dp for t, c, p in triples):
        raise InputError(
            f"dp: {space.dp:,} replicas of tp x cp x pp do not make {gpus:,} GPUs",
            fields=("dp", "gpus", "tp", "cp", "pp"),
        )


def _layouts(spec: ModelSpec, gpus: int, sequences: int, space: SearchSpace):  # noqa: ANN202 - a generator
    """Every layout of ``space`` on ``gpus`` GPUs for ``sequences`` sequences per step."""
    for tp in space.tp:
        try:
            validate_layout(spec, Layout(tp, 1))
        except InputError:
            continue
        for cp in space.cp:
            for pp in space.pp:
                if pp > spec.num_hidden_layers or gpus % (tp * cp * pp):
                    continue
                dp = gpus // (tp * cp * pp)
                if (space.dp is not None and dp != space.dp) or sequences % dp:
                    continue
                per_replica = sequences // dp
                fewest = min(stage_layers(spec.num_hidden_layers, pp))
                for b in space.micro_batch:
                    if per_replica % b:
                        continue
                    m = per_replica // b
                    for vp in space.vp:
                        if vp > 1 and (pp == 1 or vp > fewest or m < pp):
                            continue
                        for ep in space.ep:
                            if ep > 1 and (dp * cp) % ep:
                                continue
                            for zero in space.zero:
                                for recompute in space.recompute:
                                    yield TrainLayout(tp, cp, pp, vp, dp, ep, zero, recompute, b, m)


def _reasons(best: Candidate, everything: list[Candidate]) -> list[Reason]:
    """For each knob, the best layout with another value of it (the smallest in memory when none
    fits) and the term of its step that grows most."""
    out = []
    assert best.breakdown is not None  # the best layout fits
    mine = best.breakdown.terms()
    for knob in ("tp", "cp", "pp", "vp", "dp", "ep", "zero", "recompute", "micro_batch"):
        others = [c for c in everything if getattr(c.layout, knob) != getattr(best.layout, knob)]
        if not others:
            continue
        rival = others[0]  # ranked: the best fitting one, else the smallest
        value, label = getattr(rival.layout, knob), rival.layout.label()
        if rival.breakdown is None:
            out.append(Reason(knob, value, label, False, 0.0, 0.0, "", 0.0, rival.memory.total_bytes))
            continue
        theirs = rival.breakdown.terms()
        term = max(theirs, key=lambda k: theirs[k] - mine[k])
        out.append(
            Reason(
                knob,
                value,
                label,
                True,
                rival.mfu,
                rival.step_time_s - best.step_time_s,
                term,
                theirs[term] - mine[term],
                rival.memory.total_bytes,
            )
        )
    return out


def _summary(c: Candidate) -> dict[str, Any]:
    return {
        "layout": c.layout.label(),
        "mfu": c.mfu,
        "mfu_with_attention": c.mfu_with_attention,
        "step_time_s": c.step_time_s,
        "memory_bytes": c.memory.total_bytes,
        "fits": c.memory.fits,
    }


def search(spec: ModelSpec, cluster: Cluster, seq: int, sequences: int, space: SearchSpace) -> list[Candidate]:
    """Every layout of ``space`` on the cluster for ``sequences`` sequences of ``seq`` tokens per
    step, evaluated and ranked (:func:`_rank`)."""
    check_space(spec, space, seq)
    ev = _Evaluator(spec, cluster, seq)
    out = [ev.evaluate(layout) for layout in _layouts(spec, cluster.gpus, sequences, space)]
    out.sort(key=_rank)
    return out


def _rank(c: Candidate) -> tuple:
    """Fitting layouts first, by predicted MFU to 0.1% (closer than the model can tell), then the
    simpler: less context, pipeline, interleaving, expert and tensor parallelism, a lower ZeRO stage,
    no full recompute, fewer sequences per micro-batch; layouts that do not fit by their memory."""
    lay = c.layout
    if not c.memory.fits:
        return (1, c.memory.total_bytes)
    return (
        0,
        -round(c.mfu, 3),
        lay.cp,
        lay.pp,
        lay.vp,
        lay.ep,
        lay.tp,
        lay.zero,
        lay.recompute == Recompute.FULL,
        lay.micro_batch,
    )


@record
class Costs:
    """What a GPU-hour costs: power per GPU (None: the TDP), PUE, dollars, grid carbon."""

    power_w: float | None = None
    pue: float = 1.0
    usd_per_gpu_hour: float | None = None
    grid_kg_per_kwh: float | None = None


#: Costs of a plan without a price, power or grid intensity given.
NO_PRICES = Costs()


def plan_training(
    spec: ModelSpec,
    cluster: Cluster,
    tokens: int,
    global_batch_tokens: int,
    seq: int,
    space: SearchSpace,
    time_model: str,
    error_band: float,
    costs: Costs = NO_PRICES,
    top: int = 5,
) -> TrainPlan:
    """The best predicted layout of ``space`` on the cluster for steps of ``global_batch_tokens``
    tokens (whole sequences of ``seq``) and the cost of ``tokens`` training tokens with it, each
    figure with the relative ``error_band`` of the published runs. InputError naming the arguments
    when no layout of the space applies or none fits."""
    sequences = global_batch_tokens // seq
    if sequences < 1:
        raise InputError(
            f"global_batch: {global_batch_tokens:,} tokens hold no whole {seq:,}-token sequence",
            fields=("global_batch", "seq"),
        )
    ranked = search(spec, cluster, seq, sequences, space)
    if not ranked:
        _check_divides(spec, cluster.gpus, space)
        raise InputError(
            f"gpus: no layout of the knobs given fits {cluster.gpus:,} GPU(s) and {sequences:,} sequences per "
            "step: dp must divide the sequences, and micro_batch the sequences of one replica",
            fields=("gpus", "global_batch", "tp", "pp", "cp", "dp", "micro_batch"),
        )
    best = ranked[0]
    if not best.memory.fits:
        raise InputError(
            f"gpus: no layout searched fits {cluster.gpu.name}'s memory; the smallest needs "
            f"{best.memory.total_bytes / 2**30:,.1f} GiB of {best.memory.room_bytes / 2**30:,.1f} GiB "
            f"({best.layout.label()}); add GPUs, recompute, TP, PP or CP",
            fields=("gpus", "recompute", "tp", "pp", "cp"),
        )
    return _plan(spec, cluster, tokens, seq, time_model, error_band, best, ranked, top, costs)


def _plan(
    spec: ModelSpec,
    cluster: Cluster,
    tokens: int,
    seq: int,
    time_model: str,
    band: float,
    best: Candidate,
    ranked: list[Candidate],
    top: int,
    costs: Costs,
) -> TrainPlan:
    gpu, gpus, dtype = cluster.gpu, cluster.gpus, cluster.dtype
    fitting = [c for c in ranked if c.memory.fits]
    assert best.breakdown is not None  # the best layout fits, so it was timed
    lay = best.layout
    step_tokens = lay.micro_batch * lay.micro_batches * lay.dp * seq
    tokens_per_s = step_tokens / best.step_time_s
    seconds = tokens / tokens_per_s
    gpu_hours = seconds * gpus / 3600
    power = costs.power_w if costs.power_w is not None else gpu.tdp_w
    energy = gpu_hours * power / 1000 * costs.pue
    price, grid = costs.usd_per_gpu_hour, costs.grid_kg_per_kwh
    days = seconds / 86400
    conventions = [
        note("train_plan.step", time_model=time_model),
        note("train_plan.mfu", tflops=gpu.peak_flops(dtype) / 1e12, dtype=dtype.value),
        note("train_plan.memory", reserve_gib=(gpu.capacity_bytes - best.memory.room_bytes) / 2**30),
        *tight_memory_note(best.memory.room_bytes - best.memory.total_bytes, f"the layout {lay.label()}"),
        note("train_plan.band", band=band),
        *([note("train_plan.moe_unchecked")] if spec.moe is not None else []),
        note("train_plan.left_out"),
    ]
    return TrainPlan(
        spec.name,
        gpu.name,
        gpus,
        tokens,
        seq,
        step_tokens,
        step_tokens // seq,
        dtype.value,
        gpu.peak_flops(dtype),
        time_model,
        {
            f: getattr(lay, f)
            for f in ("tp", "cp", "pp", "vp", "dp", "ep", "zero", "recompute", "micro_batch", "micro_batches")
        },
        lay.label(),
        best.mfu,
        best.mfu_with_attention,
        best.hfu,
        best.step_time_s,
        tokens_per_s / gpus,
        days,
        gpu_hours,
        energy,
        power,
        costs.pue,
        price,
        gpu_hours * price if price is not None else None,
        grid,
        energy * grid / 1000 if grid is not None else None,
        band,
        (best.mfu / (1 + band), best.mfu / (1 - band) if band < 1 else math.inf),
        (days * (1 - band), days * (1 + band)),
        best.breakdown.terms(),
        best.memory,
        gpu.capacity_bytes,
        [_summary(c) for c in fitting[:top]],
        _reasons(best, ranked),
        len(ranked),
        len(fitting),
        conventions,
    )


def fixed(space: SearchSpace, **given: Any) -> SearchSpace:
    """``space`` with each knob given (not None) fixed to its value."""
    changes: dict[str, Any] = {k: (v,) for k, v in given.items() if v is not None and k != "dp"}
    if given.get("dp") is not None:
        changes["dp"] = given["dp"]
    return replace(space, **changes)
