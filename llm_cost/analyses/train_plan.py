"""The training planner: predicted step time, MFU, days, GPU-hours, energy, dollars and memory of a
parallel layout, and the search for the best layout of a cluster under one framework
(``llm-cost train`` without ``--mfu`` or ``--gpu-hours``).

The step model is :mod:`llm_cost.analyses.train_step` (timed by :func:`~llm_cost.analyses.
train_rates.training_rates`), the rank placement :mod:`llm_cost.analyses.train_ranks`, the memory
:mod:`llm_cost.analyses.train_memory`. The search tries only layouts the framework runs:

* Megatron-Core: TP within a node (with sequence parallelism), CP, PP with virtual stages
  (interleaved 1F1B needs at least p micro-batches), EP folded into tp x cp x dp (dividing the
  experts), the distributed optimizer (ZeRO-1; DDP, ZeRO-0, only when asked), selective or full
  recompute;
* FSDP2 / HSDP (torchtitan, NeMo AutoModel): the same TP, CP, PP and EP on the device mesh, FSDP
  with (ZeRO-3) or without (ZeRO-2) resharding after the forward, none, op-level selective or full
  activation checkpointing.

For each shape (tp, cp, pp, v, dp, ep, micro-batch) it keeps the fastest option that fits (the
recompute and sharding levels in order of their cost: less recompute, less resharding first), so
a knob costs memory or time, never neither; context parallelism is tried only where each rank
keeps at least :data:`CP_MIN_TOKENS` tokens.

MFU is quoted two ways, both against the dense peak of the compute dtype: ``mfu`` = 6 N D (N the
parameters a token uses) over GPU-seconds x peak; ``mfu_with_attention`` = 3 x the forward FLOPs
of the step's operators (causal attention and every LM-head position included:
Megatron-LM's and PaLM's count, causal) over the same. ``hfu`` counts what the GPUs run:
recompute and FlashAttention's 2.5x backward, over every stage's GPUs (the last stage, with the LM
head, runs more than the others).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import field, replace
from typing import Any, Optional

from llm_cost.analyses.capacity import tight_memory_note
from llm_cost.analyses.train_memory import DEFAULT_RESERVE_BYTES, LayoutMemory, MemoryModel
from llm_cost.analyses.train_ranks import GROUP_NAMES, Links
from llm_cost.analyses.train_rates import TrainRates
from llm_cost.analyses.train_step import (
    DROPLESS,
    MoeRouting,
    StageParams,
    StageWork,
    StepBreakdown,
    TrainLayout,
    stage_ops,
    stage_work,
    step_breakdown,
)
from llm_cost.core.choices import Framework, Logits, Recompute
from llm_cost.core.errors import InputError
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Dtype
from llm_cost.model.layout import Layout, stage_first_layers, stage_layers, validate_layout
from llm_cost.model.structure import build
from llm_cost.perf.calibrated import RANGE_WIDEN_MAX, RANGE_WIDEN_PER_OCTAVE
from llm_cost.specs.schema import HardwareSpec, ModelSpec
from llm_cost.workload.step import build_step, prefill

__all__ = [
    "Candidate",
    "TrainPlan",
    "SearchSpace",
    "Cluster",
    "Costs",
    "Reason",
    "plan_training",
    "model_flops_per_sequence",
    "CONVENTIONS",
    "CP_MIN_TOKENS",
    "search",
    "evaluate",
    "default_space",
    "fixed",
    "band_widening",
    "interleavable",
    "bubble_note",
    "BUBBLE_WARN",
    "BUBBLE_TARGET",
]

#: Tokens each context-parallel rank keeps at least, for the search to try CP (Megatron-Core's
#: guidance: context parallelism for long sequences; below 4K tokens a rank's attention chunks are
#: too small to hide the ring's K/V exchange).
CP_MIN_TOKENS = 8192

#: FLOPs per sequence by the conventions published runs quote (``forward`` = the forward FLOPs of
#: the step's operators, causal, every LM-head position).
CONVENTIONS = {
    "6nd": "6 N s (Kaplan et al. 2020; N every parameter a token uses)",
    "operators": "3 x the forward operators' FLOPs: 6 N_gemm s + causal attention x 3 (this tool's)",
    "palm": "s (6 N + 12 L d_attn s): PaLM appendix B's count, attention non-causal (MosaicML's too)",
    "megatron_hardware": "96 s L h^2 (1 + s/6h + V/16Lh): Narayanan et al. 2021 §5.1, full recompute included",
    "megatron_model": "72 s L h^2 (1 + s/6h + V/12Lh): Korthikanti et al. 2022 §6, no recompute",
    "megatron_core": "12 s L h^2 ((1 + g/a + s/h) a d/h + k f/h x 3/2 if gated + V/2Lh): Megatron-LM's "
    "num_floating_point_operations (megatron/training/training.py @d737deb362; g KV heads of a, k experts of f)",
}


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
    if convention == "megatron_core":
        a, g = spec.attention.num_attention_heads, spec.num_key_value_heads or spec.attention.num_attention_heads
        moe, mlp = spec.moe, spec.mlp
        if moe is not None:
            k, f, gated = moe.num_experts_per_tok, moe.moe_intermediate_size, moe.expert_gated
        else:
            assert mlp is not None
            k, f, gated = 1, mlp.intermediate_size, mlp.gated
        attention = (1 + g / a + s / h) * a * spec.head_dim / h
        return 12 * s * L * h * h * (attention + f / h * k * (1.5 if gated else 1.0) + V / (2 * L * h))
    raise ValueError(f"unknown FLOP convention {convention!r}; known: {', '.join(CONVENTIONS)}")


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
    """The values the search tries for each knob; a knob the user gave has one value. ``zero`` and
    ``recompute`` in the order they are tried for each shape (the first that fits is kept)."""

    framework: Framework
    tp: tuple[int, ...]
    cp: tuple[int, ...]
    pp: tuple[int, ...]
    vp: tuple[int, ...]
    ep: tuple[int, ...]
    zero: tuple[int, ...]
    recompute: tuple[Recompute, ...]
    micro_batch: tuple[int, ...]
    dp: Optional[int] = None
    shard: int = 0  # FSDP2: data-parallel ranks per FSDP group (0: all; HSDP otherwise)


@record
class Cluster:
    """What the step is timed on: ``gpus`` GPUs of one kind, their links, the training rates
    (:func:`~llm_cost.analyses.train_rates.training_rates`), the compute dtype, the memory reserve
    per GPU, whether TP collectives overlap the GEMMs and how MoE tokens reach their experts."""

    gpu: HardwareSpec
    gpus: int
    links: Links
    rates: TrainRates
    dtype: Dtype = Dtype.BF16
    reserve_bytes: int = DEFAULT_RESERVE_BYTES
    tp_overlap: bool = False
    moe: MoeRouting = DROPLESS
    flash_attention: bool = True  # False: a stack before FlashAttention (the published 2021 rows)


@record
class Reason:
    """Why the best layout beats the best one with another value of ``knob``."""

    knob: str
    value: object  # the other value
    other: str  # its layout label
    fits: bool  # False: nothing with that value fits; the other layout is the smallest in memory
    other_mfu: float
    delta_step_s: float  # its step time less the best's
    term: str  # the term of the step (StepBreakdown field) that grows most
    term_delta_s: float
    other_total_bytes: float
    rest_delta_s: float = 0.0  # the other terms' net change: delta_step_s = term_delta_s + rest_delta_s


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
    framework: str
    peak_flops_per_s: float
    time_model: str  # the profile and training factors' label
    layout: dict[str, object]
    layout_label: str
    links: dict[str, str]  # each collective group of the layout: the link it runs on
    mfu: float  # 6 N D convention, against the peak of ``dtype`` (peak_flops_per_s)
    mfu_vs_bf16_peak: float | None  # the same FLOPs against the BF16 peak, for a plan in another dtype (else None)
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
    cost_usd: float | None
    grid_kg_per_kwh: float | None
    co2_tonnes: float | None
    #: How far below and above the predicted step time the measured one lay for 8 of 10 published
    #: runs out of source (10th and 90th percentiles; of the search's picks when the layout was
    #: searched), as shares of the prediction (0.05: -5%), widened out of range, the fast end at
    #: most what runs the GPUs at peak.
    step_time_below: float
    step_time_above: float
    band_widen: float  # the widening (1: inside the published runs' range)
    mfu_range: tuple[float, float]
    days_range: tuple[float, float]
    #: The totals at the band's fast and slow ends (days x GPUs; energy, cost and emissions in
    #: proportion): a new user read GPU-hours, energy and cost as point values beside a band on days.
    gpu_hours_range: tuple[float, float]
    energy_kwh_range: tuple[float, float]
    cost_usd_range: tuple[float, float] | None
    co2_tonnes_range: tuple[float, float] | None
    breakdown: dict[str, float]
    memory: LayoutMemory
    gpu_capacity_bytes: int  # the card's memory (the fullest GPU's use: memory.total_bytes)
    top: list[LayoutSummary]
    reasons: list[Reason]
    searched: int
    fitting: int
    defaults: dict[str, str] = field(default_factory=dict)  # each default taken: the value and where from
    conventions: list[Note] = field(default_factory=list)


def _divisors(n: int) -> list[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def default_space(spec: ModelSpec, gpu: HardwareSpec, gpus: int, seq: int, framework: Framework) -> SearchSpace:
    """The knobs searched by default under ``framework``: TP within a node, CP in powers of 2 while
    each rank keeps at least :data:`CP_MIN_TOKENS` tokens, PP up to the layers (and 128), v from 1
    to 8, EP in powers of 2 dividing the experts (up to 256), micro-batches of 1, 2, 4 or 8
    sequences; Megatron: the distributed optimizer, selective then full recompute; FSDP2: ZeRO-2
    then ZeRO-3, no, op-level selective, then full checkpointing."""
    node = max(1, gpu.interconnect.gpus_per_node)
    tp = tuple(t for t in _divisors(node) if gpus % t == 0)
    cp = tuple(c for c in (1, 2, 4, 8, 16, 32) if seq % c == 0 and (c == 1 or seq // c >= CP_MIN_TOKENS))
    pp = tuple(p for p in range(1, min(spec.num_hidden_layers, 128) + 1) if gpus % p == 0)
    experts = spec.moe.num_experts if spec.moe is not None else 1
    ep = tuple(e for e in (1, 2, 4, 8, 16, 32, 64, 128, 256) if experts % e == 0 and e <= gpus)
    zero: tuple[int, ...] = (1,) if framework == Framework.MEGATRON else (2, 3)
    recompute: tuple[Recompute, ...] = (Recompute.SELECTIVE, Recompute.FULL)
    if framework == Framework.FSDP2:
        recompute = (Recompute.NONE, *recompute)
    return SearchSpace(framework, tp, cp, pp, (1, 2, 3, 4, 5, 6, 7, 8), ep, zero, recompute, (1, 2, 4, 8))


class _Evaluator:
    """Evaluates layouts of one (model, cluster, sequence length), with the per-(TP, PP) operators,
    the per-stage work and the memory model kept between layouts."""

    def __init__(self, spec: ModelSpec, cluster: Cluster, seq: int) -> None:
        gpu = cluster.gpu
        self.spec, self.gpu, self.seq, self.dtype = spec, gpu, seq, cluster.dtype
        self.rates, self.links, self.tp_overlap = cluster.rates, cluster.links, cluster.tp_overlap
        self.moe, self.flash = cluster.moe, cluster.flash_attention
        self.model = MemoryModel(spec, seq, gpu.capacity_bytes - cluster.reserve_bytes)
        self.memory = self.model.memory
        self.peak = gpu.peak_flops(cluster.dtype)
        self.forward_flops = float(build_step(spec, prefill(1, seq), logits=Logits.ALL).flops)
        self.active = float(build(spec).active_params)
        self._stages: dict[int, tuple[list[tuple[int, int, int]], list[int]]] = {}
        self._work: dict[tuple, StageWork] = {}
        self._moe = [spec.is_moe_layer(i) for i in range(spec.num_hidden_layers)]

    def stages(self, pp: int) -> list[tuple[int, int, int]]:
        """(stage index, layers, MoE layers) of the distinct stages of an even split: the first, the
        last and one of each other (layers, MoE layers) kind."""
        return self._split(pp)[0]

    def stage_counts(self, pp: int) -> list[int]:
        """How many of the ``pp`` stages each of :meth:`stages` stands for (a middle stage by the
        first distinct stage of its kind)."""
        return self._split(pp)[1]

    def _split(self, pp: int) -> tuple[list[tuple[int, int, int]], list[int]]:
        if pp not in self._stages:
            counts = stage_layers(self.spec.num_hidden_layers, pp)
            firsts = stage_first_layers(self.spec.num_hidden_layers, pp)
            kinds: dict[tuple[int, int], int] = {}  # (layers, MoE layers): the first chosen stage of it
            chosen: list[tuple[int, int, int]] = []
            stands: list[int] = []
            for i, (n, start) in enumerate(zip(counts, firsts)):
                moe = sum(self._moe[start : start + n])
                if i in (0, pp - 1) or (n, moe) not in kinds:
                    kinds.setdefault((n, moe), len(chosen))
                    chosen.append((i, n, moe))
                    stands.append(1)
                else:
                    stands[kinds[(n, moe)]] += 1
            self._stages[pp] = (chosen, stands)
        return self._stages[pp]

    def works(self, layout: TrainLayout) -> tuple[list[StageWork], list[StageParams], list[int]]:
        """Each distinct stage's micro-batch work, parameters on one GPU and MoE layers."""
        works, params, moe_layers = [], [], []
        ops = stage_ops(self.spec, layout.tp, layout.pp, self.seq, self.dtype, self.flash)
        model = self.model
        for i, n, moe in self.stages(layout.pp):
            key = (
                layout.tp,
                layout.pp,
                i,
                layout.cp,
                layout.micro_batch,
                layout.ep,
                layout.recompute,
                layout.framework,
            )
            if key not in self._work:
                self._work[key] = stage_work(
                    self.spec, ops[i], n, layout, self.gpu, self.dtype, self.rates, self.moe.padding
                )
            works.append(self._work[key])
            params.append(model.stage_params(layout, n, i == 0, i == layout.pp - 1))
            moe_layers.append(moe)
        return works, params, moe_layers

    def evaluate(self, layout: TrainLayout, memory: LayoutMemory | None = None) -> Candidate:
        """The predicted step and memory of ``layout`` (a layout that does not fit is not timed)."""
        memory = memory or self.memory(layout)
        if not memory.fits:
            return Candidate(layout, math.inf, 0.0, 0.0, 0.0, None, memory)
        works, params, moe_layers = self.works(layout)
        breakdown = step_breakdown(
            self.spec, layout, self.seq, works, params, moe_layers, self.links, self.gpu.bandwidth_bytes_s,
            self.rates, self.tp_overlap, self.moe,
        )  # fmt: skip
        step = breakdown.step_s
        sequences = layout.micro_batch * layout.micro_batches * layout.dp
        gpu_seconds = step * layout.gpus * self.peak
        run = sum(w.hardware_flops * k for w, k in zip(works, self.stage_counts(layout.pp)))  # one GPU per stage
        return Candidate(
            layout,
            step,
            6 * self.active * self.seq * sequences / gpu_seconds,
            3 * self.forward_flops * sequences / gpu_seconds,
            run * layout.micro_batches / (layout.pp * step * self.peak),
            breakdown,
            memory,
        )

    def first_fitting(self, layouts: list[TrainLayout]) -> Candidate:
        """The first of ``layouts`` (the options of one shape, cheapest first) that fits, timed; or,
        when none does, the smallest in memory."""
        smallest: tuple[LayoutMemory, TrainLayout] | None = None
        for layout in layouts:
            memory = self.memory(layout)
            if memory.fits:
                return self.evaluate(layout, memory)
            if smallest is None or memory.total_bytes < smallest[0].total_bytes:
                smallest = (memory, layout)
        assert smallest is not None  # a shape has at least one option
        return Candidate(smallest[1], math.inf, 0.0, 0.0, 0.0, None, smallest[0])


def _one_line_divides(what: str, value: int, of: str, total: int, flag: str) -> InputError:
    """InputError: ``flag`` ``value`` does not divide ``total`` ``of``; the values that do."""
    options = [d for d in _divisors(total) if d <= 1024]
    shown = ", ".join(str(d) for d in options[:12]) + (", ..." if len(options) > 12 else "")
    return InputError(f"{flag}: {value} does not divide the {total:,} {of}; {what} one of {shown}", fields=(flag,))


def check_space(spec: ModelSpec, space: SearchSpace, seq: int, gpus: int) -> None:
    """InputError naming the knob when one the user fixed cannot run ``spec`` at ``seq`` tokens on
    ``gpus`` GPUs under the space's framework (a searched knob's invalid values are skipped)."""
    heads = spec.attention.num_attention_heads
    if len(space.tp) == 1 and heads % space.tp[0]:
        raise _one_line_divides("give", space.tp[0], "query heads", heads, "tp")
    if len(space.tp) == 1:
        validate_layout(spec, Layout(space.tp[0], 1))
    if len(space.pp) == 1 and space.pp[0] > spec.num_hidden_layers:
        raise InputError(
            f"pp: {space.pp[0]} stages exceed the {spec.num_hidden_layers} layers; give at most {spec.num_hidden_layers}",
            fields=("pp",),
        )
    if len(space.cp) == 1 and seq % space.cp[0]:
        raise _one_line_divides("give", space.cp[0], "tokens of a sequence", seq, "cp")
    for name in ("tp", "cp", "pp"):
        values = getattr(space, name)
        if len(values) == 1 and gpus % values[0]:
            raise _one_line_divides("give", values[0], "GPUs", gpus, name)
    _check_experts(spec, space)
    _check_framework(space)
    _check_interleaving(spec, space)
    if (
        len(space.vp) == 1
        and len(space.pp) == 1
        and space.vp[0] > min(stage_layers(spec.num_hidden_layers, space.pp[0]))
    ):
        fewest = min(stage_layers(spec.num_hidden_layers, space.pp[0]))
        raise InputError(
            f"vp: {space.vp[0]} virtual stages exceed the {fewest} layers of a {space.pp[0]}-stage pipeline's "
            f"stage; give at most {fewest}",
            fields=("vp", "pp"),
        )


def interleavable(spec: ModelSpec, pp: int, vp: int) -> bool:
    """Whether Megatron-Core's interleaved schedule runs ``vp`` virtual stages on ``pp`` pipeline
    stages: the layers in equal chunks, the layer count divisible by pp x vp (Megatron-LM
    ``megatron/training/arguments.py`` @000c4ac24f, ``validate_args``: "number of layers of the model
    must be divisible pipeline model parallel size" and "number of layers per pipeline stage must be
    divisible number of layers per virtual pipeline stage")."""
    return vp == 1 or spec.num_hidden_layers % (pp * vp) == 0


def _check_interleaving(spec: ModelSpec, space: SearchSpace) -> None:
    """InputError for a --vp (with --pp fixed) Megatron's interleaved schedule cannot run: one line
    naming the vp (or pp) values that divide the layers."""
    if space.framework != Framework.MEGATRON or len(space.vp) != 1 or space.vp[0] == 1:
        return
    if len(space.pp) != 1:
        _check_interleaving_any_pp(spec, space)
        return
    layers, pp, vp = spec.num_hidden_layers, space.pp[0], space.vp[0]
    if interleavable(spec, pp, vp):
        return
    vps = [v for v in range(2, layers // pp + 1) if interleavable(spec, pp, v)]
    pps = [p for p in range(2, layers // vp + 1) if layers % (p * vp) == 0]
    other = f"vp one of {', '.join(map(str, vps[:8]))}" if vps else "vp 1"
    also = f", or pp one of {', '.join(map(str, pps[:8]))} with vp {vp}" if pps else ""
    raise InputError(
        f"vp: Megatron's interleaved schedule needs the {layers} layers divisible by pp x vp = {pp * vp}; "
        f"with pp {pp} give {other}{also}",
        fields=("vp", "pp"),
    )


def _check_interleaving_any_pp(spec: ModelSpec, space: SearchSpace) -> None:
    """InputError for a --vp that no pipeline size of the search interleaves (the pp searched,
    not given): one line naming the vp values some of them would."""
    layers, vp = spec.num_hidden_layers, space.vp[0]
    stages = [p for p in space.pp if p > 1]
    if any(interleavable(spec, p, vp) for p in stages):
        return
    vps = [v for v in range(2, 17) if any(interleavable(spec, p, v) for p in stages)]
    raise InputError(
        f"vp: Megatron's interleaved schedule needs the {layers} layers divisible by pp x vp, and no pp searched "
        f"({', '.join(map(str, stages[:8])) or 'none above 1'}) makes it so with vp {vp}; "
        + (f"give vp one of {', '.join(map(str, vps[:8]))}" if vps else "give vp 1"),
        fields=("vp", "pp"),
    )


def _check_experts(spec: ModelSpec, space: SearchSpace) -> None:
    """InputError for an EP the model cannot take: none without experts, more ranks than experts,
    or one that does not divide them."""
    if len(space.ep) != 1 or space.ep[0] == 1:
        return
    ep = space.ep[0]
    if spec.moe is None:
        raise InputError(f"ep: {spec.name} has no experts; ep must be 1", fields=("ep",))
    experts = spec.moe.num_experts
    if ep > experts:
        raise InputError(f"ep: {ep} ranks exceed the {experts} experts; give at most {experts}", fields=("ep",))
    if experts % ep:
        raise _one_line_divides("give", ep, "experts", experts, "ep")


def _check_framework(space: SearchSpace) -> None:
    """InputError for a ZeRO stage or a sharding the framework does not run."""
    allowed = (0, 1) if space.framework == Framework.MEGATRON else (2, 3)
    bad = [z for z in space.zero if z not in allowed]
    if bad:
        other = "fsdp2" if space.framework == Framework.MEGATRON else "megatron"
        raise InputError(
            f"zero: {space.framework} runs ZeRO {' or '.join(map(str, allowed))}, not {bad[0]}; give one of those, "
            f"or framework {other}",
            fields=("zero", "framework"),
        )
    if space.shard and space.framework != Framework.FSDP2:
        raise InputError("fsdp_shard: HSDP is FSDP2's; give framework fsdp2 or leave it out", fields=("fsdp_shard",))


def _check_fixed_knobs(space: SearchSpace, gpus: int, dps: list[int]) -> None:
    """InputError naming a given ep, vp or fsdp_shard that no layout of ``gpus`` GPUs (with the
    data-parallel sizes ``dps`` the other knobs leave) can take: expert parallelism splits the
    data-parallel ranks (Megatron's expert groups within DP), interleaving needs a pipeline, and an
    FSDP group holds at most the data-parallel ranks. An attack found each refused as 'no layout
    of the knobs given fits', naming neither."""
    if len(space.ep) == 1 and space.ep[0] > 1 and not any(d % space.ep[0] == 0 for d in dps):
        raise InputError(
            f"ep: {space.ep[0]:,} does not divide the data-parallel ranks any layout of {gpus:,} GPUs leaves "
            f"({', '.join(f'{d:,}' for d in dps[:6])}); give ep a divisor of one of them",
            fields=("ep", "gpus"),
        )
    if len(space.vp) == 1 and space.vp[0] > 1 and max(space.pp) < 2:
        raise InputError(
            f"vp: {space.vp[0]} interleaved chunks need a pipeline; give pp 2 or more", fields=("vp", "pp")
        )
    if space.shard and not any(d % space.shard == 0 for d in dps):
        raise InputError(
            f"fsdp_shard: {space.shard:,} ranks per FSDP group do not divide the data-parallel ranks any layout of "
            f"{gpus:,} GPUs leaves ({', '.join(f'{d:,}' for d in dps[:6])})",
            fields=("fsdp_shard", "gpus"),
        )


def _check_divides(spec: ModelSpec, gpus: int, sequences: int, space: SearchSpace, default_seq: int = 0) -> None:
    """InputError naming the knobs when no layout exists: tp x cp x pp that does not divide the GPUs,
    a dp that no tp x cp x pp leaves, or a batch no dp x micro-batch divides (``default_seq``: the
    sequence length when the batch is the default one, which the user never gave)."""
    triples = [
        (t, c, p) for t in space.tp for c in space.cp for p in space.pp
        if p <= spec.num_hidden_layers and gpus % (t * c * p) == 0
    ]  # fmt: skip
    fixed_ = {k: getattr(space, k)[0] for k in ("tp", "cp", "pp") if len(getattr(space, k)) == 1}
    named = [k for k, v in fixed_.items() if v > 1]
    if not triples and named:
        product = " x ".join(f"{k} {fixed_[k]}" for k in named)
        raise InputError(
            f"{product}: {math.prod(fixed_[k] for k in named):,} GPUs per replica do not divide the {gpus:,} GPUs; "
            "give gpus a multiple of it",
            fields=(*named, "gpus"),
        )
    dps = sorted({gpus // (t * c * p) for t, c, p in triples})
    if space.dp is not None and space.dp not in dps:
        raise InputError(f"dp: {space.dp:,} replicas of tp x cp x pp do not make {gpus:,} GPUs", fields=("dp", "gpus"))
    if space.dp is not None:
        dps = [space.dp]
    _check_fixed_knobs(space, gpus, dps)
    steps = sorted({d * b for d in dps for b in space.micro_batch})
    if min(space.micro_batch) > sequences:
        raise InputError(
            f"micro_batch: {min(space.micro_batch):,} sequences exceed the {sequences:,} sequences of a step; "
            f"give micro_batch at most {sequences:,} or a larger global_batch",
            fields=("micro_batch", "global_batch"),
        )
    if steps and not any(sequences % s == 0 for s in steps):
        unit = steps[0]
        if default_seq and sequences < unit:
            raise _default_batch_too_small(gpus, sequences, default_seq, unit, triples, spec, space)
        given = [k for k, v in (("dp", space.dp), ("micro_batch", space.micro_batch)) if _given(v)]
        unit_text = " x ".join(k if k in given else {"dp": "replicas", "micro_batch": "micro-batch"}[k]
                               for k in ("dp", "micro_batch"))  # fmt: skip
        raise InputError(
            f"global_batch: {sequences:,} sequences per step are not a multiple of {unit_text} = {unit:,} (the "
            f"fewest {'the knobs given allow' if given else f'any layout of {gpus:,} GPUs takes'}); give a multiple "
            f"of {unit:,} sequences "
            f"({(sequences // unit + 1) * unit:,} is the next)",
            fields=("global_batch", *given),
        )
    _check_interleaved_micro_batches(sequences, space, dps)


def _given(value: object) -> bool:
    """Whether a search knob was fixed by the caller: a dp given (not None), a one-value tuple."""
    return value is not None and (not isinstance(value, tuple) or len(value) == 1)


def _check_interleaved_micro_batches(sequences: int, space: SearchSpace, dps: list[int]) -> None:
    """InputError when only interleaved schedules are allowed (every vp > 1) and no dp x
    micro_batch leaves a replica the pp micro-batches interleaved 1F1B runs at least (Megatron-LM's
    interleaved schedule: the micro-batches a multiple of, and at least, pp)."""
    if min(space.vp) <= 1:
        return
    pp = min(space.pp)
    counts = [sequences // d // b for d in dps for b in space.micro_batch if sequences % (d * b) == 0]
    if not counts or max(counts) >= pp:
        return
    d, b = dps[0], min(space.micro_batch)
    raise InputError(
        f"vp: interleaved 1F1B (vp {min(space.vp)}) needs at least pp = {pp} micro-batches per replica; "
        f"{sequences:,} sequences over dp {d:,} in micro-batches of {b} give {sequences // d // b}; give a smaller "
        f"micro_batch, a global_batch of at least {d * b * pp:,} sequences, or vp 1",
        fields=("vp", "micro_batch", "global_batch"),
    )


def _default_batch_too_small(
    gpus: int,
    sequences: int,
    seq: int,
    unit: int,
    triples: list[tuple[int, int, int]],
    spec: ModelSpec,
    space: SearchSpace,
) -> InputError:
    """The refusal of a cluster whose fewest data-parallel replicas (times the least micro-batch)
    outnumber the default batch's sequences: it names the GPUs the user gave, the batch that would
    do, and the most GPUs the default batch keeps busy (one sequence per replica of the largest
    tp x cp x pp the space has)."""
    widest = max(t * c * p for t in space.tp for c in space.cp for p in space.pp if p <= spec.num_hidden_layers)
    replica = gpus // (unit // min(space.micro_batch))
    return InputError(
        f"gpus: the default global batch, {sequences:,} sequences of {seq:,} tokens, is too small for {gpus:,} "
        f"GPUs: they make at least {unit // min(space.micro_batch):,} data-parallel replicas "
        f"(tp x cp x pp {replica:,}), each taking whole sequences; give global_batch {unit * seq:,} tokens "
        f"({unit:,} sequences) or more, or fewer gpus, such as {sequences * widest:,} ({sequences:,} replicas of "
        f"tp x cp x pp {widest:,})",
        fields=("gpus", "global_batch"),
    )


def _options(space: SearchSpace, shape: dict[str, int]) -> list[TrainLayout]:
    """The (recompute, ZeRO) options of one shape, in the order they are tried."""
    return [
        TrainLayout(**shape, zero=z, recompute=r, framework=space.framework, shard=space.shard)
        for r in space.recompute
        for z in space.zero
    ]


def _shapes(spec: ModelSpec, gpus: int, sequences: int, space: SearchSpace) -> Iterator[dict[str, int]]:
    """Every (tp, cp, pp, vp, dp, ep, micro-batch) of ``space`` the framework runs on ``gpus`` GPUs
    for ``sequences`` sequences per step (module docstring)."""
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
                if space.shard and dp % space.shard:
                    continue
                fewest = min(stage_layers(spec.num_hidden_layers, pp))
                for b in space.micro_batch:
                    if (sequences // dp) % b:
                        continue
                    m = sequences // dp // b
                    for vp in space.vp:
                        if vp > 1 and (pp == 1 or vp > fewest or m < pp):
                            continue
                        if vp > 1 and space.framework == Framework.MEGATRON and not interleavable(spec, pp, vp):
                            continue
                        for ep in space.ep:
                            if ep > 1 and (tp * cp * dp) % ep:
                                continue
                            yield dict(tp=tp, cp=cp, pp=pp, vp=vp, dp=dp, ep=ep, micro_batch=b, micro_batches=m)


#: Two layouts whose predicted MFU (or step time) is within this share of each other's tie: closer
#: than the model can tell (:func:`mfu_tier`).
TIE_SHARE = 0.0025


def mfu_tier(mfu: float) -> int:
    """The tier of an MFU for ranking: MFUs within :data:`TIE_SHARE` of each other share one (a
    relative grid: at 40% MFU 0.1 point wide; at 2% MFU, where an absolute 0.1 point was 5% of the
    step, 0.005 points: an attack found a layout 24% faster ranked below a slower one as a tie)."""
    return round(math.log(mfu) / math.log1p(TIE_SHARE)) if mfu > 0 else -(10**9)


def _rank(c: Candidate) -> tuple:
    """Fitting layouts first, by predicted MFU to :data:`TIE_SHARE` (closer than the model can tell:
    :func:`mfu_tier`), then the simpler: less context, pipeline, interleaving, expert and tensor
    parallelism, a lower ZeRO stage, no full recompute, fewer sequences per micro-batch; layouts that
    do not fit by their memory."""
    lay = c.layout
    if not c.memory.fits:
        return (1, c.memory.total_bytes)
    return (
        0,
        -mfu_tier(c.mfu),
        lay.cp,
        lay.pp,
        lay.vp,
        lay.ep,
        lay.tp,
        lay.zero,
        lay.recompute == Recompute.FULL,
        lay.micro_batch,
    )


def search(spec: ModelSpec, cluster: Cluster, seq: int, sequences: int, space: SearchSpace) -> list[Candidate]:
    """For every shape of ``space`` on the cluster, its fastest fitting option (or its smallest),
    for ``sequences`` sequences of ``seq`` tokens per step; ranked (:func:`_rank`)."""
    check_space(spec, space, seq, cluster.gpus)
    ev = _Evaluator(spec, cluster, seq)
    out = [ev.first_fitting(_options(space, shape)) for shape in _shapes(spec, cluster.gpus, sequences, space)]
    out.sort(key=_rank)
    return out


def evaluate(spec: ModelSpec, cluster: Cluster, seq: int, layout: TrainLayout) -> Candidate:
    """One layout's predicted step and memory (timed even when it does not fit: a published run
    did fit, so its time is still the prediction to check)."""
    ev = _Evaluator(spec, cluster, seq)
    memory = ev.memory(layout)
    return ev.evaluate(layout, replace(memory, fits=True))


def _reasons(best: Candidate, everything: list[Candidate], alternatives: list[Candidate]) -> list[Reason]:
    """For each knob, the best layout with another value of it (the smallest in memory when none
    fits) and the term of its step that grows most; ``alternatives`` add the best layout with each
    other recompute and ZeRO option (the search keeps only one of them per shape)."""
    out = []
    assert best.breakdown is not None  # the best layout fits
    mine = best.breakdown.terms()
    pool = sorted(everything + alternatives, key=_rank)
    for knob in ("tp", "cp", "pp", "vp", "dp", "ep", "zero", "recompute", "micro_batch"):
        others = [c for c in pool if getattr(c.layout, knob) != getattr(best.layout, knob)]
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
                knob, value, label, True, rival.mfu, rival.step_time_s - best.step_time_s, term,
                theirs[term] - mine[term], rival.memory.total_bytes,
                rival.step_time_s - best.step_time_s - (theirs[term] - mine[term]),
            )
        )  # fmt: skip
    return out


@record
class LayoutSummary:
    """One of a plan's top layouts."""

    layout: str
    mfu: float
    mfu_with_attention: float
    step_time_s: float
    memory_bytes: int  # on its fullest GPU
    fits: bool


def _summary(c: Candidate) -> LayoutSummary:
    return LayoutSummary(
        c.layout.label(), c.mfu, c.mfu_with_attention, c.step_time_s, c.memory.total_bytes, c.memory.fits
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


def band_widening(spec: ModelSpec, layout: TrainLayout, dtype: Dtype, seq: int, calibrated: dict) -> float:
    """How many times wider the band is for a layout outside the published runs' range
    (``calibrated``: the fitted family's ``range`` in the efficiency table): 1 + 1 for each of the
    framework, the dtype and MoE-ness the runs did not cover, + :data:`~llm_cost.perf.calibrated.
    RANGE_WIDEN_PER_OCTAVE` x the octaves the GPUs, TP, PP, CP, EP and sequence length lie outside
    theirs; at most :data:`~llm_cost.perf.calibrated.RANGE_WIDEN_MAX`. A convention, as the
    serving bands' (the held-out errors say nothing of layouts no run had)."""
    if not calibrated:
        return 1.0
    widen = 1.0
    widen += str(layout.framework) not in calibrated["frameworks"]
    widen += str(dtype) not in calibrated["dtypes"]
    widen += (spec.moe is not None) and not calibrated["moe"]
    for name, value in (("gpus", layout.gpus), ("tp", layout.tp), ("pp", layout.pp), ("cp", layout.cp),
                        ("ep", layout.ep), ("seq", seq)):  # fmt: skip
        low, high = calibrated[name]
        if value > high:
            widen += RANGE_WIDEN_PER_OCTAVE * math.log2(value / high)
        elif value < low:
            widen += RANGE_WIDEN_PER_OCTAVE * math.log2(low / value)
    return min(RANGE_WIDEN_MAX, widen)


def _memory_remedies(space: SearchSpace, cluster: Cluster, smallest: Candidate) -> str:
    """What could still make a layout fit: more GPUs, and each knob the user held below what could
    help within these GPUs: a larger tp or pp where tp x cp x pp can still grow, cp where the
    activations are the largest part, full recompute, micro-batch 1, the state sharded further
    over the data-parallel ranks (ZeRO-1 under Megatron, ZeRO-3 under FSDP2, or FSDP2 for a
    Megatron plan whose state is the largest part); when none is left, says every knob was tried."""
    node = max(1, cluster.gpu.interconnect.gpus_per_node)
    tp, cp, pp = min(space.tp), min(space.cp), min(space.pp)
    room = space.dp is None and tp * cp * pp * 2 <= cluster.gpus
    m = smallest.memory
    megatron = space.framework == Framework.MEGATRON
    sharded = (1 if megatron else 3) in space.zero
    # sharding helps only across data-parallel ranks, and most where the state is the largest part
    shardable = smallest.layout.dp > 1 and m.state_bytes >= max(m.activation_bytes, m.buffer_bytes)
    remedies = (
        ("recompute full", Recompute.FULL not in space.recompute),
        ("a larger tp", room and len(space.tp) == 1 and tp * 2 <= node),
        ("a larger pp", room and len(space.pp) == 1),
        ("a larger cp", room and len(space.cp) == 1 and m.activation_bytes > max(m.state_bytes, m.buffer_bytes)),
        ("micro_batch 1", 1 not in space.micro_batch),
        (f"zero {1 if megatron else 3}", not sharded and smallest.layout.dp > 1),
        ("framework fsdp2 (ZeRO-3 shards the weights too)", megatron and sharded and shardable),
    )
    narrowed = [name for name, applies in remedies if applies]
    if not narrowed:
        return "add GPUs (every knob that could shrink it was searched)"
    return "add GPUs, or try " + ", ".join(narrowed)


def plan_training(
    spec: ModelSpec,
    cluster: Cluster,
    tokens: int,
    global_batch_tokens: int,
    seq: int,
    space: SearchSpace,
    costs: Costs = NO_PRICES,
    top: int = 5,
    defaults: Optional[dict[str, str]] = None,
) -> TrainPlan:
    """The best predicted layout of ``space`` on the cluster for steps of ``global_batch_tokens``
    tokens (whole sequences of ``seq``) and the cost of ``tokens`` training tokens with it, each
    figure with the relative error band of the published runs (widened out of their range).
    InputError naming the arguments when no layout of the space applies or none fits, saying by
    how much the smallest misses."""
    sequences = global_batch_tokens // seq
    if sequences and global_batch_tokens % seq and "global_batch" not in (defaults or {}):
        raise InputError(
            f"global_batch: {global_batch_tokens:,} tokens are {global_batch_tokens / seq:,.3g} sequences of "
            f"{seq:,}; give whole sequences, e.g. {sequences * seq:,} or {(sequences + 1) * seq:,} tokens",
            fields=("global_batch", "seq"),
        )
    if sequences < 1:
        raise InputError(
            f"global_batch: {global_batch_tokens:,} tokens hold no whole {seq:,}-token sequence",
            fields=("global_batch", "seq"),
        )
    if tokens < sequences * seq:  # a helper: 1 token "trained" in 13 us with a 54 s step
        raise InputError(
            f"tokens: {tokens:,} is less than one step, a global batch of {sequences:,} sequence"
            f"{'s' if sequences > 1 else ''} of {seq:,} ({sequences * seq:,}); give tokens at least "
            f"{sequences * seq:,}" + (" or a smaller global_batch" if sequences > 1 else " or a shorter seq"),
            fields=("tokens", "global_batch" if sequences > 1 else "seq"),
        )
    ranked = search(spec, cluster, seq, sequences, space)
    if not ranked:
        _check_divides(spec, cluster.gpus, sequences, space, seq if "global_batch" in (defaults or {}) else 0)
        raise InputError(
            f"gpus: no layout of the knobs given fits {cluster.gpus:,} GPU(s) and {sequences:,} sequences per "
            "step: dp must divide the sequences, and micro_batch the sequences of one replica",
            fields=("gpus", "global_batch", "tp", "pp", "cp", "dp", "micro_batch"),
        )
    best = ranked[0]
    if not best.memory.fits:
        need, room = best.memory.total_bytes, best.memory.room_bytes
        raise InputError(
            f"gpus: no layout searched fits {cluster.gpu.name}'s memory; the smallest needs "
            f"{need / 2**30:,.1f} GiB of {room / 2**30:,.1f} GiB, {(need - room) / 2**30:,.1f} GiB over "
            f"({best.layout.label()}); {_memory_remedies(space, cluster, best)}",
            fields=("gpus", "recompute", "tp", "pp", "cp", "micro_batch", "zero", "framework"),
        )
    ev = _Evaluator(spec, cluster, seq)
    alternatives = [
        ev.first_fitting([replace(best.layout, zero=z, recompute=r)])
        for r in space.recompute
        for z in space.zero
        if (r, z) != (best.layout.recompute, best.layout.zero)
    ]
    return _plan(spec, cluster, tokens, seq, best, ranked, alternatives, top, costs, defaults or {})


def _plan(
    spec: ModelSpec,
    cluster: Cluster,
    tokens: int,
    seq: int,
    best: Candidate,
    ranked: list[Candidate],
    alternatives: list[Candidate],
    top: int,
    costs: Costs,
    defaults: dict[str, str],
) -> TrainPlan:
    gpu, gpus, dtype, rates = cluster.gpu, cluster.gpus, cluster.dtype, cluster.rates
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
    from llm_cost.analyses.train_rates import training_efficiency

    family = training_efficiency()["families"].get(rates.family, {})
    widen = band_widening(spec, lay, dtype, seq, family.get("range", {}))
    searched = len(ranked) > 1  # a layout the search picked is off as the search's picks are
    low, high = rates.search_time_ratio if searched else rates.time_ratio
    # the fast end is never past the peak: the step cannot take less than its hardware FLOPs at peak (HFU 1),
    # nor print a 6ND MFU over 100% (6ND counts the embedding, which no GEMM runs: short sequences put it over HFU)
    fast, slow = max(1 - min(0.95, (1 - low) * widen), best.hfu, best.mfu), 1 + (high - 1) * widen
    groups = lay.groups()
    links = {
        GROUP_NAMES[name]: cluster.links.describe(g)
        for name, g in groups.items()
        if spec.moe is not None or name not in ("ep", "expert_dp")
    }
    conventions = [
        note("train_plan.step", time_model=rates.label, framework=str(lay.framework)),
        note("train_plan.mfu", tflops=gpu.peak_flops(dtype) / 1e12, dtype=dtype.value),
        note("train_plan.memory", reserve_gib=cluster.reserve_bytes / 2**30, framework=str(lay.framework)),
        *tight_memory_note(best.memory.room_bytes - best.memory.total_bytes, f"the layout {lay.label()}"),
        *bubble_note(
            lay, best.breakdown, seq, MemoryModel(spec, seq, gpu.capacity_bytes - cluster.reserve_bytes).memory
        ),
        *uneven_stages_note(spec, lay),
        note("train_plan.band", low=low, high=high, widen=widen, searched=searched, own=rates.has_runs),
        note("train_plan.left_out"),
    ]
    return TrainPlan(
        spec.name, gpu.name, gpus, tokens, seq, step_tokens, step_tokens // seq, dtype.value, str(lay.framework),
        gpu.peak_flops(dtype), rates.label,
        {f: getattr(lay, f) for f in ("tp", "cp", "pp", "vp", "dp", "ep", "zero", "recompute", "micro_batch",
                                      "micro_batches")} | {"fsdp_shard": lay.fsdp_shard},
        lay.label(), links, best.mfu, _mfu_vs_bf16_peak(best.mfu, gpu, dtype), best.mfu_with_attention, best.hfu,
        best.step_time_s, tokens_per_s / gpus,
        days, gpu_hours, energy, power, costs.pue, price, gpu_hours * price if price is not None else None,
        grid, energy * grid / 1000 if grid is not None else None, round(1 - fast, 6), round(slow - 1, 6), widen,
        (best.mfu / slow, best.mfu / fast), (days * fast, days * slow), (gpu_hours * fast, gpu_hours * slow),
        (energy * fast, energy * slow), (gpu_hours * price * fast, gpu_hours * price * slow) if price is not None else None,
        (energy * grid / 1000 * fast, energy * grid / 1000 * slow) if grid is not None else None,
        best.breakdown.terms(), best.memory, gpu.capacity_bytes, [_summary(c) for c in fitting[:top]],
        _reasons(best, ranked, alternatives), len(ranked), len(fitting), defaults, conventions,
    )  # fmt: skip


def _mfu_vs_bf16_peak(mfu: float, gpu: HardwareSpec, dtype: Dtype) -> float | None:
    """An MFU against the ``dtype`` peak restated against the BF16 dense peak, so that an FP8 plan
    compares with BF16 ones (NVIDIA's training tables quote model TFLOP/s, not a ratio to the FP8
    peak); None for a BF16 plan."""
    if dtype == Dtype.BF16:
        return None
    return mfu * gpu.peak_flops(dtype) / gpu.peak_flops(Dtype.BF16)


#: The pipeline bubble, as a fraction of the step's compute, above which a plan warns that the
#: global batch is small for the cluster.
BUBBLE_WARN = 0.25
#: The bubble fraction the warning's suggested batch keeps to.
BUBBLE_TARGET = 0.10


def uneven_stages_note(spec: ModelSpec, layout: TrainLayout) -> list[Note]:
    """A note when ``layout``'s pipeline stages split the layers unevenly (:func:`~llm_cost.model.
    layout.stage_layers`: the first stages take one more), as DeepSeek-V3's published PP16 over 61
    layers does; the stage of most layers sets the step (a new user: Llama-3-70B's 80 layers on PP25
    were planned without a word)."""
    split = stage_layers(spec.num_hidden_layers, layout.pp)
    if layout.pp == 1 or len(set(split)) == 1:
        return []
    most = max(split)
    return [
        note(
            "train_plan.uneven_stages", pp=layout.pp, layers=spec.num_hidden_layers, most=most,
            more=split.count(most), fewest=min(split), framework=str(layout.framework),
        )
    ]  # fmt: skip


def bubble_note(
    layout: TrainLayout, breakdown: StepBreakdown, seq: int, memory_of: Callable[[TrainLayout], LayoutMemory]
) -> list[Note]:
    """A warning when the pipeline bubble of ``layout`` exceeds :data:`BUBBLE_WARN` of its compute
    (too few micro-batches per pipeline: the global batch is small for the cluster), naming the
    global batch that keeps it to at most :data:`BUBBLE_TARGET` with the same layout, m micro-batches
    of its size on each of its dp replicas: the bubble, (p - 1)/v micro-batch times (Narayanan et
    al. 2021 §2.2, each with its exposed communication), stays as the compute grows with m, so the
    share falls as 1/m: m >= share x m_now / target, and at least (p - 1)/(v target). When that
    batch would not fit this layout's memory (``memory_of``: 1F1B keeps up to p micro-batches'
    activations in flight, a small batch fewer), the warning says what it would need."""
    if layout.pp == 1 or breakdown.bubble_s <= BUBBLE_WARN * breakdown.compute_s:
        return []
    share = breakdown.bubble_s / breakdown.compute_s
    micro_batches = max(
        math.ceil((layout.pp - 1) / (BUBBLE_TARGET * layout.vp) - 1e-9),
        math.ceil(share * layout.micro_batches / BUBBLE_TARGET - 1e-9),
    )
    sequences = micro_batches * layout.micro_batch * layout.dp
    at_batch = replace(layout, micro_batches=micro_batches)
    filled = memory_of(at_batch)
    return [
        note(
            "warning.train_bubble",
            layout=at_batch.label(),
            need_bytes=None if filled.fits else filled.total_bytes,
            room_bytes=filled.room_bytes,
            bubble=share,
            micro_batches=layout.micro_batches,
            dp=layout.dp,
            pp=layout.pp,
            target=BUBBLE_TARGET,
            sequences=sequences,
            tokens=sequences * seq,
        )
    ]


def fixed(space: SearchSpace, **given: Any) -> SearchSpace:
    """``space`` with each knob given (not None) fixed to its value (``dp`` and ``shard`` as
    themselves, the others as one-value tuples)."""
    changes: dict[str, Any] = {k: (v,) for k, v in given.items() if v is not None and k not in ("dp", "shard")}
    for k in ("dp", "shard"):
        if given.get(k) is not None:
            changes[k] = given[k]
    return replace(space, **changes)
