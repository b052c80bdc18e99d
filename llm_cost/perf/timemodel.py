"""The time-model interface and its two analytical implementations (seed 003 §02).

The Roofline model (Williams, Waterman, Patterson 2009): work of F FLOPs over B bytes takes at
least max(F / P_peak, B / BW). The ridge point P_peak / BW (FLOP per byte) is the arithmetic
intensity at which the two terms meet; H100 BF16: 989.4 TFLOP/s / 3.35 TB/s = 295.

A time model turns a :class:`~llm_cost.workload.step.Step` into a :class:`StepTime`:

* per operator: compute time = FLOPs / FLOP rate, memory time = bytes / byte rate, link time =
  bytes sent / link rate; an operator's time is max(compute, memory) + link;
* per pipeline stage: max(sum of compute, sum of memory) + sum of link times (compute and memory
  of one GPU overlap across its operators; communication is not overlapped);
* per step: the sum of the stages (a token passes through every stage in turn).

:class:`RooflineBound` uses the datasheet's peaks: a lower bound, never a prediction.
:class:`EfficiencyEstimate` divides them by MFU and MBU (defaults :data:`DEFAULT_MFU`,
:data:`DEFAULT_MBU`, the one place that defines them): an estimate, labelled with both.
Links: the GPU's per-direction NVLink/xGMI bandwidth while TP x DP GPUs fit in one node, else
``network_gb_s`` per GPU per direction; no latency (the calibrated model adds it).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from llm_cost.core.errors import InputError
from llm_cost.core.labels import Bound, TimeKind
from llm_cost.core.records import record
from llm_cost.core.types import OpKind, OpRole, Topology
from llm_cost.core.units import Number
from llm_cost.model.layout import Layout
from llm_cost.specs.schema import HardwareSpec
from llm_cost.workload.step import Operator, StageHead, Step, sum_of

__all__ = [
    "OpTime",
    "StageTime",
    "StepTime",
    "TimeModel",
    "RooflineBound",
    "EfficiencyEstimate",
    "DEFAULT_MFU",
    "DEFAULT_MBU",
    "DEFAULT_NETWORK_GB_S",
    "link_of",
    "pp_hop_leaves_node",
    "hop_rate",
    "host_gpus",
    "sum_stages",
]

#: Model FLOP utilisation of estimates when none is given (a typical dense-GEMM share of peak).
DEFAULT_MFU = 0.6
#: Memory bandwidth utilisation of estimates when none is given.
DEFAULT_MBU = 0.8
#: Per-GPU network bandwidth between nodes, GB/s per direction (400 Gb/s InfiniBand NDR per GPU).
DEFAULT_NETWORK_GB_S = 50.0


@record
class OpTime:
    """One operator's time: compute, memory and link terms and the operator's time, seconds."""

    name: str
    kind: OpKind
    stage: int
    compute_s: float
    memory_s: float
    link_s: float
    time_s: float
    bound: Bound


@record
class StageTime:
    """One pipeline stage's time on its GPU."""

    index: int
    compute_s: float
    memory_s: float
    link_s: float
    time_s: float


@record
class StepTime:
    """A step's time under one time model of ``kind``."""

    model: str  # the time model's label, e.g. "Roofline bound" or "estimate at MFU 60%, MBU 80%"
    kind: TimeKind
    ops: list[OpTime]
    stages: list[StageTime]
    compute_s: float
    memory_s: float
    link_s: float
    time_s: float
    bound: Bound  # what dominates the step
    link: str  # the link collectives use
    link_gb_s: float


class TimeModel(Protocol):
    """Turns a step's operators into seconds on one GPU type (``label`` and ``kind`` read-only:
    frozen dataclasses and properties implement them)."""

    @property
    def label(self) -> str:
        """What the model is, e.g. "Roofline bound"."""
        ...  # pragma: no cover - a protocol

    @property
    def kind(self) -> TimeKind:
        """A bound, an estimate or a prediction."""
        ...  # pragma: no cover - a protocol

    def step_time(self, step: Step, gpu: HardwareSpec, operators: bool = True) -> StepTime:
        """The step's time, per operator (unless not ``operators``), per stage and in all."""
        ...  # pragma: no cover - a protocol


#: The most GPUs of a card without a GPU-to-GPU link (one GPU per node in its spec) that tensor
#: parallelism joins over PCIe: one host's x16 slots, as vLLM and SGLang run L40S and RTX 4090 boxes.
PCIE_TP_MAX = 8


def host_gpus(gpu: HardwareSpec) -> int:
    """GPUs of one node: the spec's ``gpus_per_node``; for a card with no GPU-to-GPU link (one per
    node in its spec), one host of :data:`PCIE_TP_MAX` cards over PCIe."""
    node = max(1, gpu.interconnect.gpus_per_node)
    return PCIE_TP_MAX if node == 1 else node


def pcie_tp(gpu: HardwareSpec, gpus: int) -> bool:
    """Whether ``gpus`` GPUs of ``gpu`` talk over PCIe: a card with no GPU-to-GPU link (one per node
    in its spec), 2 to :data:`PCIE_TP_MAX` of them in one host."""
    ic = gpu.interconnect
    return ic.gpus_per_node <= 1 and 1 < gpus <= PCIE_TP_MAX


def link_of(step: Step, gpu: HardwareSpec, network_gb_s: float) -> tuple[str, float]:
    """(name, GB/s per direction) of the link a step's collectives use: the node's GPU link while
    TP x DP GPUs fit in one node; on a card without one, PCIe for up to :data:`PCIE_TP_MAX` GPUs
    (its ``pcie_bytes_s``, each collective also paying the time model's latency per call); else
    the network."""
    ic = gpu.interconnect
    gpus = step.layout.tp * step.layout.dp
    if gpus <= ic.gpus_per_node and ic.bandwidth_gb_s_per_direction > 0:
        if ic.topology == Topology.MESH:  # the links to the group's other GPUs
            peers = ic.gpus_per_node - 1
            return f"{ic.type}, {min(gpus, ic.gpus_per_node) - 1} of {peers} peer links", ic.group_gb_s(gpus)
        return ic.type, ic.bandwidth_gb_s_per_direction
    if pcie_tp(gpu, gpus):
        return f"PCIe {gpu.pcie_gen}.0 x16", gpu.pcie_bytes_s / 1e9
    return "network", network_gb_s


def pp_hop_leaves_node(layout: Layout, gpu: HardwareSpec, stage: int) -> bool:
    """Whether pipeline stage ``stage``'s send to the next stage crosses nodes: stages in order, as
    Megatron-LM's and vLLM's rank order places them (pipeline outermost), each on TP x DP
    consecutive GPUs; the hop leaves the node when the stage's last GPU and the next stage's first
    lie in different nodes of ``gpus_per_node`` (a card without a GPU link keeps the step's link)."""
    n, width = gpu.interconnect.gpus_per_node, layout.tp * layout.dp
    if n <= 1 or stage + 1 >= layout.pp:
        return False
    return (stage * width + width - 1) // n != (stage + 1) * width // n


def hop_rate(step: Step, gpu: HardwareSpec, stage: int, link_bytes_s: float, network_gb_s: float) -> float:
    """Bytes/s of stage ``stage``'s pipeline send: the network's when it leaves the node
    (:func:`pp_hop_leaves_node`), else the step's link's (over a mesh, at most the one link between
    the two GPUs)."""
    if stage + 1 >= step.layout.pp:
        return link_bytes_s  # the last stage sends nothing on
    if pp_hop_leaves_node(step.layout, gpu, stage):
        return network_gb_s * 1e9
    ic = gpu.interconnect
    return min(link_bytes_s, ic.group_gb_s(2) * 1e9) if ic.bandwidth_gb_s_per_direction > 0 else link_bytes_s


def sum_stages(
    label: str, kind: TimeKind, ops: list[OpTime], stages: list[StageTime], link: str, link_gb_s: float
) -> StepTime:
    """A step's time from its stages': a token passes through every stage in turn, so each term
    and the time are the sums over the stages; the bound is :meth:`Bound.of` those sums. The one
    aggregation of every time model."""
    compute = sum(s.compute_s for s in stages)
    memory = sum(s.memory_s for s in stages)
    comm = sum(s.link_s for s in stages)
    total = sum(s.time_s for s in stages)
    return StepTime(
        label, kind, ops, stages, compute, memory, comm, total, Bound.of(compute, memory, comm, total), link, link_gb_s
    )


def _divide(amount: Number, rate: float, what: str) -> float:
    """``amount / rate`` seconds; InputError when a rate is zero or the result is not finite."""
    if not amount:
        return 0.0
    seconds = float(amount) / rate
    if seconds != seconds or seconds == float("inf"):
        raise InputError(f"{what}: the time is too large to represent; check the GPU spec's peaks and bandwidth")
    return seconds


def _time(
    step: Step,
    gpu: HardwareSpec,
    flop_rate: float,
    byte_rate: float,
    network_gb_s: float,
    label: str,
    kind: TimeKind,
    operators: bool,
) -> StepTime:
    link, link_gb_s = link_of(step, gpu, network_gb_s)
    ops: list[OpTime] = []
    stages: list[StageTime] = []
    link_rate = link_gb_s * 1e9
    for stage in step.stages:
        flops, nbytes = [op.flops for op in stage.ops], [op.bytes for op in stage.ops]
        hop = hop_rate(step, gpu, stage.index, link_rate, network_gb_s)
        # a hop that leaves the node is timed on its own; otherwise every byte sent in one sum, as ever
        apart = hop != link_rate
        sent = [op.comm_bytes if not (apart and op.role == OpRole.PP_SEND) else 0 for op in stage.ops]
        handed = [op.comm_bytes for op in stage.ops if apart and op.role == OpRole.PP_SEND] or [0]
        for op, f, b in zip(stage.ops, flops, nbytes) if operators else ():
            # as _divide: an operator's terms are at most its stage's, which _divide checks
            s, rate = op.comm_bytes, hop if op.role == OpRole.PP_SEND else link_rate
            oc = float(f) / flop_rate if f else 0.0
            om = float(b) / byte_rate if b else 0.0
            ol = float(s) / rate if s else 0.0
            t = (oc if oc >= om else om) + ol
            ops.append(OpTime(op.name, op.kind, stage.index, oc, om, ol, t, Bound.of(oc, om, ol, t)))
        # the stage's terms from its exact totals, divided once
        totals = (sum_of(flops), sum_of(nbytes), sum_of(sent), sum_of(handed))
        stages.append(_stage_time(stage.index, totals, flop_rate, byte_rate, link_rate, hop))
    return sum_stages(label, kind, ops, stages, link, link_gb_s)


def _stage_time(
    index: int,
    totals: tuple[Number, Number, Number, Number],
    flop_rate: float,
    byte_rate: float,
    link_rate: float,
    hop: float,
) -> StageTime:
    """A stage's time from its ``totals`` (FLOPs, bytes, bytes sent, bytes handed to the next
    stage): compute and memory overlapped, the larger of the two, plus the link time (hand-offs at
    the ``hop`` rate); the one formula of :func:`_time` and :func:`_bound_split_time`."""
    flops, nbytes, sent, handed = totals
    c, m = _divide(flops, flop_rate, "FLOPs"), _divide(nbytes, byte_rate, "bytes")
    l_ = _divide(sent, link_rate, "communication") + _divide(handed, hop, "communication")
    return StageTime(index, c, m, l_, max(c, m) + l_)


@record
class RooflineBound:
    """The Roofline lower bound: datasheet peak FLOP/s at the step's compute dtype, datasheet
    bandwidth, links at their nominal bandwidth; no latency, perfect overlap within a GPU."""

    network_gb_s: float = DEFAULT_NETWORK_GB_S
    label: str = "Roofline bound"
    kind: TimeKind = TimeKind.BOUND

    def split_step_time(self, step: Step, heads: Sequence[StageHead], gpu: HardwareSpec) -> StepTime:
        """:meth:`step_time` (without operators) of a step split by
        :func:`~llm_cost.workload.step.split_step` (:func:`_bound_split_time`)."""
        return _bound_split_time(self, step, heads, gpu)

    def step_time(self, step: Step, gpu: HardwareSpec, operators: bool = True) -> StepTime:
        """The bound of ``step`` on ``gpu`` (without ``operators``: no per-operator times, the same
        stages and totals); InputError if the GPU lacks the compute dtype."""
        return _time(
            step,
            gpu,
            gpu.peak_flops(step.compute_dtype),
            gpu.bandwidth_bytes_s,
            self.network_gb_s,
            self.label,
            self.kind,
            operators,
        )


#: The sums of each stage head's operators (:meth:`RooflineBound.split_step_time`), by head.
_BOUND_HEADS: dict[tuple[int, int, int], tuple[object, tuple[float, float, float, float]]] = {}


def _sums(ops: Sequence[Operator]) -> tuple[float, float, float, float]:
    """FLOPs, bytes, bytes sent (not pipeline hand-offs) and bytes handed to the next stage of ``ops``."""
    flops = nbytes = sent = handed = 0.0
    for op in ops:
        flops += float(op.flops)
        nbytes += float(op.bytes)
        if op.role == OpRole.PP_SEND:
            handed += float(op.comm_bytes)
        else:
            sent += float(op.comm_bytes)
    return flops, nbytes, sent, handed


def _bound_split_time(model: RooflineBound, step: Step, heads: Sequence[StageHead], gpu: HardwareSpec) -> StepTime:
    """:meth:`RooflineBound.step_time` (without operators) of a step split by
    :func:`~llm_cost.workload.step.split_step`: each stage head's sums taken once per token count
    (a serving band's fast end times many steps of few token counts against their bound); the same
    terms as the whole step's, summed in another order (a test holds them within 1e-9)."""
    link, link_gb_s = link_of(step, gpu, model.network_gb_s)
    link_rate, peak, bw = link_gb_s * 1e9, gpu.peak_flops(step.compute_dtype), gpu.bandwidth_bytes_s
    stages: list[StageTime] = []
    for stage, head in zip(step.stages, heads):
        key = (id(head.part), head.tokens, head.routed_tokens)
        hit = _BOUND_HEADS.get(key)
        if hit is None or hit[0] is not head.part:
            if len(_BOUND_HEADS) >= 1 << 13:
                _BOUND_HEADS.clear()
            first, last = head.build()
            hit = _BOUND_HEADS[key] = (head.part, _sums([*first, *last]))
        flops, nbytes, sent, handed = (a + b for a, b in zip(hit[1], _sums(stage.ops)))
        hop = hop_rate(step, gpu, stage.index, link_rate, model.network_gb_s)
        stages.append(_stage_time(stage.index, (flops, nbytes, sent, handed), peak, bw, link_rate, hop))
    return sum_stages(model.label, model.kind, [], stages, link, link_gb_s)


@record
class EfficiencyEstimate:
    """An estimate: peak FLOP/s x MFU, bandwidth x MBU (links at nominal bandwidth)."""

    mfu: float = DEFAULT_MFU
    mbu: float = DEFAULT_MBU
    network_gb_s: float = DEFAULT_NETWORK_GB_S
    kind: TimeKind = TimeKind.ESTIMATE

    @property
    def label(self) -> str:
        """``estimate at MFU 60%, MBU 80%``."""
        return f"estimate at MFU {self.mfu:.0%}, MBU {self.mbu:.0%}"

    def step_time(self, step: Step, gpu: HardwareSpec, operators: bool = True) -> StepTime:
        """The estimate of ``step`` on ``gpu`` (without ``operators``: no per-operator times, the
        same stages and totals); InputError if the GPU lacks the compute dtype."""
        return _time(
            step,
            gpu,
            gpu.peak_flops(step.compute_dtype) * self.mfu,
            gpu.bandwidth_bytes_s * self.mbu,
            self.network_gb_s,
            self.label,
            self.kind,
            operators,
        )
