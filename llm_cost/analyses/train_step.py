"""One training step of a parallel layout: compute from the operators, communication by link, the
pipeline schedule, the optimizer (the time model behind ``llm-cost train``'s predicted mode).

**Compute.** The forward operators of one GPU of each pipeline stage come from
:func:`llm_cost.workload.step.build_step` (one sequence of ``seq`` tokens, every LM-head position,
causal attention, the layout's TP and PP shares) and are timed with the calibrated functions of
:mod:`llm_cost.perf.calibrated` under the GPU's profile (GEMM efficiency by tokens in flight,
flash-attention efficiency, bandwidth efficiency, the p-norm overlap). A micro-batch of ``b``
sequences split over ``cp`` context-parallel ranks multiplies every operator's FLOPs, rows and
activation bytes by b / cp (load-balanced causal context parallelism gives each rank 1/cp of the
(query, key) pairs; weights are read once either way).

* backward: each GEMM twice (the input gradient and the weight gradient, each as many FLOPs as the
  forward GEMM: Kaplan et al. 2020's 4ND); attention 2.5x its forward FLOPs, as FlashAttention
  counts its backward (five matmuls for the forward's two: S and P recomputed, dV, dP, dQ, dK;
  Dao 2023, FlashAttention-2 §3.2), at :data:`FLASH_BACKWARD_EFFICIENCY` of the forward's rate;
* recompute: "selective" stores no score matrix (FlashAttention recomputes it inside its backward:
  no extra time), "none" stores every activation (the same time; more memory), "full" runs each
  layer's forward again before its backward (Korthikanti et al. 2022);
* FP8 (``dtype="fp8"``): the GEMMs at the FP8 peak, attention at the BF16 peak (FP8 training keeps
  attention in BF16, as DeepSeek-V3 §3.3 and Transformer Engine do).

**Communication**, per GPU, ring algorithm over ``n`` ranks: (n - 1) x latency + (n - 1)/n x
bytes / (link GB/s x link efficiency), the latency and efficiency the profile's. Groups are nested
TP (innermost), CP, PP, DP (outermost), as the Llama 3 paper orders them (§3.3.2); EP groups are
consecutive DP ranks. A group whose ranks share a node uses NVLink (the GPU spec's per-direction
bandwidth), else the network (``network_gb_s`` per GPU per direction: 50 GB/s is 400 Gb/s
InfiniBand or RoCE), k members per node driving k NICs (:meth:`Links.rate`); the ZeRO group's rate
is its DP ranks'.

* TP with sequence parallelism (Korthikanti et al. 2022 §4.2.2): per layer and micro-batch, two
  all-gathers and two reduce-scatters of the b x s/cp x h activations forward and as many backward;
  exposed unless ``tp_overlap`` (Megatron's ``--tp-comm-overlap``: each collective hidden behind the
  GEMM that consumes or produces it, only what the layer's GEMM time cannot cover is exposed);
* CP, ring attention (Liu et al. 2023): forward the other ranks' K and V pass round the ring
  (an all-gather of (cp - 1)/cp of the sequence's K/V), backward again plus their gradients;
  overlapped with the attention kernel, exposed only beyond it;
* EP (MoE): all-to-all dispatch and combine of each routed token's hidden state, forward and
  backward (4 per MoE layer), exposed;
* PP: per micro-batch each of the v virtual chunks sends its output forward and receives its
  gradient back, 1/TP of the activations per GPU (Narayanan et al. 2021's scatter/gather);
  exposed in the 1F1B schedule, overlapped with the other chunks' compute when interleaved;
* DP over the dp x cp ranks that hold the same weights (ZeRO; Rajbhandari et al. 2020), gradients
  in FP32 (4 B, as Megatron's distributed optimizer and Llama 3 reduce them), weights gathered in
  BF16: ZeRO-0 all-reduces the gradients once, overlapped with the last micro-batch's backward;
  ZeRO-1 reduce-scatters them there and all-gathers the updated weights behind the first forward;
  ZeRO-2 reduce-scatters after every micro-batch's backward; ZeRO-3 / FSDP also all-gathers the
  weights for every micro-batch's forward and again for its backward. Only what the overlapped
  compute cannot cover is exposed.

**Schedule** (Narayanan et al. 2021 §2.2): m micro-batches per step over p stages with v virtual
stages each take (m + (p - 1)/v) x the slowest stage's micro-batch time: the bubble (p - 1)/(m v).

**Optimizer**: Adam on each GPU's shard of the parameters reads the FP32 master weights, m, v and
the gradient and writes the first three and the BF16 weights, 30 B per parameter, at the profile's
bandwidth efficiency.

Left out: elementwise kernels between the GEMMs (norms, activations, residual adds, the loss's
softmax; fused or small beside 8K-token GEMMs), SM contention of overlapped communication,
stragglers, failures and restarts, checkpoint writes, data loading.
"""

from __future__ import annotations

import math
from dataclasses import fields
from typing import Any

from llm_cost.core.choices import Logits, Recompute
from llm_cost.core.records import record
from llm_cost.core.types import Dtype, OpKind, OpRole
from llm_cost.model.layout import Layout
from llm_cost.perf.calibrated import (
    DEFAULT_SMS,
    attention_terms,
    gemm_groups,
    gemm_shape_factor,
    gemm_terms,
    other_terms,
    smooth_max,
    width_class,
)
from llm_cost.specs.schema import GQAAttention, HardwareSpec, ModelSpec
from llm_cost.workload.step import ACTIVATION_BITS, Operator, build_step, prefill

__all__ = [
    "TrainLayout",
    "Links",
    "StageWork",
    "StepBreakdown",
    "stage_ops",
    "stage_work",
    "step_breakdown",
    "profile_parameters",
    "FLASH_BACKWARD_FLOPS",
    "FLASH_BACKWARD_EFFICIENCY",
    "GRAD_REDUCE_BYTES",
    "ADAM_BYTES_PER_PARAM",
]

#: FlashAttention's backward FLOPs per forward FLOP: five matmuls (S and P recomputed, dV, dP, dQ, dK
#: with dS) for the forward's two (Dao 2023, FlashAttention-2 §3.2; its benchmark counts 2.5x).
FLASH_BACKWARD_FLOPS = 2.5
#: The backward's FLOP rate per forward FLOP rate: FlashAttention-2, causal, head dim 128, 2K tokens,
#: 99.23 / 151.19 TFLOP/s (apache/tvm ``tl_doc/flash_perf.md``, the ``Flash_attn`` column, RTX 4090).
FLASH_BACKWARD_EFFICIENCY = 99.23 / 151.19
#: Bytes per gradient element reduced across data-parallel ranks (FP32, Megatron's and Llama 3's).
GRAD_REDUCE_BYTES = 4
#: Adam's traffic per parameter of a GPU's shard: read FP32 master, m, v, gradient (16 B); write
#: master, m, v (12 B) and the BF16 weight (2 B).
ADAM_BYTES_PER_PARAM = 30
#: Bytes per weight element gathered by ZeRO-1/3 (BF16).
WEIGHT_GATHER_BYTES = 2


@record
class TrainLayout:
    """A training layout: GPUs = tp x cp x pp x dp; ``vp`` virtual stages per pipeline stage (1:
    1F1B, more: interleaved); ``ep`` expert-parallel ranks among the dp x cp (MoE only); ZeRO stage
    over the dp x cp ranks; ``micro_batch`` sequences per micro-batch, ``micro_batches`` per step
    on each pipeline."""

    tp: int
    cp: int
    pp: int
    vp: int
    dp: int
    ep: int
    zero: int
    recompute: Recompute
    micro_batch: int
    micro_batches: int

    @property
    def gpus(self) -> int:
        """tp x cp x pp x dp."""
        return self.tp * self.cp * self.pp * self.dp

    def label(self) -> str:
        """``TP8 CP1 PP16 (v4) DP64 ZeRO-1 selective mb1 x 32``."""
        ep = f" EP{self.ep}" if self.ep > 1 else ""
        v = f" (v{self.vp})" if self.vp > 1 else ""
        return (
            f"TP{self.tp} CP{self.cp} PP{self.pp}{v} DP{self.dp}{ep} ZeRO-{self.zero} {self.recompute} "
            f"mb{self.micro_batch} x {self.micro_batches}"
        )


def node_links(gpu: HardwareSpec) -> tuple[float, int]:
    """(GB/s per direction, GPUs) of the link inside one node: the GPU link (NVLink, xGMI) of the
    spec's interconnect, or, for a card without one (RTX, L4, L40S, A10), PCIe x16 between up to
    :data:`~llm_cost.perf.timemodel.PCIE_TP_MAX` cards of one host (``pcie_bytes_s``), as serving's
    collectives take it (:func:`~llm_cost.perf.timemodel.link_of`)."""
    from llm_cost.perf.timemodel import PCIE_TP_MAX

    ic = gpu.interconnect
    if ic.bandwidth_gb_s_per_direction > 0:
        return ic.bandwidth_gb_s_per_direction, ic.gpus_per_node
    return gpu.pcie_bytes_s / 1e9, PCIE_TP_MAX


@record
class Links:
    """The cluster's links: NVLink (or xGMI) inside a node of ``gpus_per_node`` GPUs, the network
    between nodes, both GB/s per direction per GPU; the profile's per-call latency and efficiency."""

    node_gb_s: float
    network_gb_s: float
    gpus_per_node: int
    latency_s: float
    efficiency: float

    def rate(self, inner: int, ranks: int) -> float:
        """Bytes/s per GPU of a ring over ``ranks`` GPUs whose consecutive ranks are ``inner`` GPUs
        apart: NVLink while the whole group sits in one node; else the network, each node's k =
        gpus_per_node / inner members driving k NICs in parallel (NCCL runs one ring per NIC, so the
        ring's per-GPU rate is k x the per-GPU network rate, at most NVLink's)."""
        node = self.gpus_per_node
        if ranks <= 1:  # no collective: nothing to wait for
            return math.inf
        if inner * ranks <= node and self.node_gb_s > 0:
            return self.node_gb_s * 1e9 * self.efficiency
        members = max(1, min(ranks, node // max(1, inner)))
        return min(self.node_gb_s or math.inf, members * self.network_gb_s) * 1e9 * self.efficiency

    def ring(self, payload_bytes: float, ranks: int, rate: float) -> float:
        """Seconds of a ring all-gather or reduce-scatter of ``payload_bytes`` (the whole tensor)
        over ``ranks`` GPUs: (n - 1) steps of latency, (n - 1)/n of the bytes sent by each GPU."""
        if ranks <= 1 or not payload_bytes:
            return 0.0
        return (ranks - 1) * self.latency_s + (ranks - 1) / ranks * payload_bytes / rate


@record
class StageWork:
    """One micro-batch of ``micro_batch`` sequences on one GPU of a pipeline stage, seconds (and
    FLOPs as the GPU runs them)."""

    layers: int
    forward_s: float
    backward_s: float
    recompute_s: float
    gemm_s: float  # forward + backward GEMM time: what TP collectives can hide behind
    attention_s: float  # forward + backward attention time: what ring attention can hide behind
    overhead_s: float  # fixed kernel-launch time per layer and pass
    hardware_flops: float  # forward + backward (+ recompute) FLOPs run

    @property
    def compute_s(self) -> float:
        """Forward, backward, recompute and fixed time."""
        return self.forward_s + self.backward_s + self.recompute_s + self.overhead_s


@record
class StepBreakdown:
    """Seconds of one training step on the slowest pipeline stage, by term; ``step_s`` their sum."""

    compute_s: float  # m micro-batches' forward, backward and recompute
    bubble_s: float  # pipeline fill and drain: (p - 1)/v chunks' worth of the micro-batch time
    tp_s: float  # exposed TP (sequence-parallel) collectives
    cp_s: float  # exposed ring-attention traffic
    ep_s: float  # MoE all-to-all
    pp_s: float  # exposed pipeline sends
    dp_s: float  # exposed data-parallel (ZeRO) collectives
    optimizer_s: float
    step_s: float
    microbatch_s: float  # one micro-batch on the slowest stage, its exposed communication included

    def terms(self) -> dict[str, float]:
        """The terms that add up to ``step_s`` (every field but the sums)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("step_s", "microbatch_s")}


def stage_ops(spec: ModelSpec, tp: int, pp: int, seq: int) -> list[list[Operator]]:
    """The compute operators of one sequence of ``seq`` tokens on one GPU of each of ``pp`` stages
    at TP ``tp`` (no collectives: this module times its own). InputError for an invalid layout."""
    step = build_step(spec, prefill(1, seq), layout=Layout(tp, pp), logits=Logits.ALL)
    return [[op for op in st.ops if op.kind != OpKind.COLLECTIVE] for st in step.stages]


def _op_seconds(
    op: Operator, share: float, ep: int, gemm_peak: float, peak: float, bw: float, q: dict[str, float], sms: int
) -> tuple[float, float]:
    """(forward, backward) seconds of ``op`` scaled to ``share`` of its sequence (b / cp), by the
    formulas of :mod:`llm_cost.perf.calibrated` (a GEMM's FLOPs tile- and wave-quantised at its rows
    per expert; ``q`` the training parameters, :func:`profile_parameters`)."""
    p = q["overlap_p"]
    if op.kind == OpKind.GEMM:
        routed = op.role == OpRole.ROUTED_EXPERTS
        rows = float(op.m or 1) * share * (ep if routed else 1)
        flops = float(op.flops) * share
        shaped = flops * gemm_shape_factor(rows, op.n, gemm_groups(op), sms)
        c, m = gemm_terms(
            shaped,
            float(op.weight_bytes),
            float(op.activation_bytes) * share,
            gemm_peak,
            bw,
            q["gemm_efficiency"],
            q["bandwidth_efficiency"],
            1.0,
            q["moe_gemm_share"] if routed else 1.0,
        )
        forward = smooth_max(c, m, p)
        return forward, 2 * forward
    if op.kind == OpKind.ATTENTION:
        c, m = attention_terms(
            float(op.flops) * share, 0.0, float(op.kv_write_bytes) * share, 1.0, peak, bw,
            q["flash_efficiency"], 1.0, q["bandwidth_efficiency"],
        )  # fmt: skip
        backward = FLASH_BACKWARD_FLOPS * c / FLASH_BACKWARD_EFFICIENCY
        return smooth_max(c, m, p), smooth_max(backward, 2 * m, p)
    c, m = other_terms(float(op.flops) * share, float(op.bytes), peak, bw, q["gemm_efficiency_16"], q["bandwidth_efficiency"])
    forward = smooth_max(c, m, p)
    return forward, 2 * forward


def stage_work(
    ops: list[Operator],
    layers: int,
    share: float,
    ep: int,
    recompute: str,
    gpu: HardwareSpec,
    dtype: Dtype,
    q: dict[str, float],
) -> StageWork:
    """One micro-batch on one stage's GPU: ``ops`` (:func:`stage_ops`) at ``share`` = micro-batch /
    CP of their sequence, timed with the profile's parameters ``q``; GEMMs at the ``dtype`` peak,
    attention at it too, except under FP8, where attention runs at the BF16 peak."""
    peak = gpu.peak_flops(Dtype.BF16 if dtype == Dtype.FP8 else dtype)
    gemm_peak = gpu.peak_flops(dtype)
    bw = gpu.bandwidth_bytes_s
    sms = gpu.sm_count or DEFAULT_SMS
    q = q | {"gemm_efficiency": q[f"gemm_efficiency_{width_class(dtype)}"]}
    forward = backward = gemm = attention = flops = 0.0
    layer_forward = 0.0
    for op in ops:
        f, b = _op_seconds(op, share, ep, gemm_peak, peak, bw, q, sms)
        forward, backward = forward + f, backward + b
        op_flops = float(op.flops) * share
        if op.kind == OpKind.GEMM:
            gemm += f + b
            flops += 3 * op_flops
        elif op.kind == OpKind.ATTENTION:
            attention += f + b
            flops += (1 + FLASH_BACKWARD_FLOPS) * op_flops
        if op.group not in ("lm_head", "embedding"):
            layer_forward += f
            flops += op_flops if recompute == Recompute.FULL else 0.0
    passes = 3 + (1 if recompute == Recompute.FULL else 0)  # forward, backward (two kernels per op), recompute
    return StageWork(
        layers,
        forward,
        backward,
        layer_forward if recompute == Recompute.FULL else 0.0,
        gemm,
        attention,
        q["layer_overhead_s"] * layers * passes,
        flops,
    )


@record
class _Payloads:
    """Per-micro-batch bytes of the layer-wise collectives of one GPU (whole tensors)."""

    tp_bytes: float  # one sequence-parallel all-gather or reduce-scatter: b x s/cp x h x 2
    cp_bytes: float  # the whole sequence's K and V of this GPU's KV heads
    ep_bytes: float  # one all-to-all: routed token copies x h x 2
    pp_bytes: float  # one pipeline send: b x s/cp x h x 2 / tp


def _payloads(spec: ModelSpec, layout: TrainLayout, seq: int) -> _Payloads:
    h = spec.hidden_size
    element = ACTIVATION_BITS // 8
    tokens = layout.micro_batch * seq / layout.cp
    kv_heads = max(1, spec.num_key_value_heads // layout.tp) if spec.num_key_value_heads else 1
    head_dim = spec.head_dim
    d_v = spec.v_head_dim if isinstance(spec.attention, GQAAttention) else head_dim  # K and V per head
    routed = spec.moe.num_experts_per_tok if spec.moe is not None else 0
    return _Payloads(
        tokens * h * element,
        layout.micro_batch * seq * kv_heads * (head_dim + d_v) * element,
        tokens * routed * h * element / layout.tp,
        tokens * h * element / layout.tp,
    )


def _tp_exposed(work: StageWork, layout: TrainLayout, links: Links, pay: _Payloads, overlap: bool) -> float:
    """Exposed TP collectives of one micro-batch: 8 per layer (2 all-gathers and 2 reduce-scatters
    each way), hidden behind the stage's GEMMs when ``overlap``."""
    if layout.tp == 1:
        return 0.0
    total = 8 * work.layers * links.ring(pay.tp_bytes, layout.tp, links.rate(1, layout.tp))
    return max(0.0, total - work.gemm_s) if overlap else total


def _cp_exposed(work: StageWork, layout: TrainLayout, links: Links, pay: _Payloads) -> float:
    """Ring attention's exposed K/V traffic in one micro-batch: each layer's attention runs in cp
    steps, each on one rank's K/V chunk while the next chunk travels; the first chunk's transfer is
    exposed, and each later one beyond its step's compute. Three passes per layer: forward, and
    backward (the chunks again, and their gradients)."""
    cp = layout.cp
    if cp == 1:
        return 0.0
    rate = links.rate(layout.tp, cp)
    chunk = links.latency_s + pay.cp_bytes / cp / rate
    step = work.attention_s / (3 * work.layers * cp)  # one step of one pass of one layer
    return 3 * work.layers * (chunk + (cp - 1) * max(0.0, chunk - step))


def _ep_exposed(layout: TrainLayout, links: Links, pay: _Payloads, moe_layers: int) -> float:
    """MoE all-to-all: dispatch and combine forward and backward, per MoE layer of the stage."""
    if layout.ep == 1 or not moe_layers:
        return 0.0
    rate = links.rate(layout.tp * layout.cp * layout.pp, layout.ep)
    one = links.latency_s * (layout.ep - 1) + (layout.ep - 1) / layout.ep * pay.ep_bytes / rate
    return 4 * moe_layers * one


def _pp_exposed(work: StageWork, layout: TrainLayout, links: Links, pay: _Payloads) -> float:
    """Pipeline sends of one micro-batch: each virtual chunk's activation forward and gradient back;
    hidden behind the other chunks' compute when interleaved (v > 1)."""
    if layout.pp == 1:
        return 0.0
    rate = links.rate(layout.tp * layout.cp, 2)
    send = links.latency_s + pay.pp_bytes / rate
    sends = 2 * layout.vp
    if layout.vp == 1:
        return sends * send
    return sends * links.latency_s + max(0.0, sends * send - work.compute_s)


def _dp_exposed(work: StageWork, params: float, layout: TrainLayout, links: Links) -> tuple[float, float]:
    """(exposed seconds per step, of which per micro-batch x m) of the ZeRO collectives over the
    dp x cp ranks for ``params`` parameters on this GPU (see the module docstring)."""
    n = layout.dp * layout.cp
    if n == 1:
        return 0.0, 0.0
    rate = links.rate(layout.tp * layout.cp * layout.pp, layout.dp)
    grads = links.ring(params * GRAD_REDUCE_BYTES, n, rate)
    weights = links.ring(params * WEIGHT_GATHER_BYTES, n, rate)
    back = work.backward_s + work.recompute_s
    if layout.zero == 0:
        return max(0.0, 2 * grads - back), 0.0
    once = max(0.0, weights - work.forward_s)
    if layout.zero == 1:
        return once + max(0.0, grads - back), 0.0
    if layout.zero == 2:
        return once, layout.micro_batches * max(0.0, grads - back)
    per_mb = max(0.0, weights - work.forward_s) + max(0.0, weights + grads - back)
    return 0.0, layout.micro_batches * per_mb


def step_breakdown(
    spec: ModelSpec,
    layout: TrainLayout,
    seq: int,
    works: list[StageWork],
    params_per_gpu: list[float],
    moe_layers: list[int],
    links: Links,
    bandwidth_bytes_s: float,
    q: dict[str, float],
    tp_overlap: bool = False,
) -> StepBreakdown:
    """The step time of ``layout`` from each stage's micro-batch work ``works`` (one entry per
    pipeline stage), its parameters on one GPU and MoE layers: the slowest stage's micro-batch
    (compute and exposed TP/CP/EP/PP traffic) x (m + (p - 1)/v), plus its exposed DP collectives
    and optimizer step."""
    pay = _payloads(spec, layout, seq)
    m, p, v = layout.micro_batches, layout.pp, layout.vp
    best: StepBreakdown | None = None
    for i, work in enumerate(works):
        tp = _tp_exposed(work, layout, links, pay, tp_overlap)
        cp = _cp_exposed(work, layout, links, pay)
        ep = _ep_exposed(layout, links, pay, moe_layers[i])
        pp = _pp_exposed(work, layout, links, pay)
        micro = work.compute_s + tp + cp + ep + pp
        dp_once, dp_mb = _dp_exposed(work, params_per_gpu[i], layout, links)
        shard = params_per_gpu[i] / (layout.dp * layout.cp if layout.zero else 1)
        optimizer = shard * ADAM_BYTES_PER_PARAM / (bandwidth_bytes_s * q["bandwidth_efficiency"])
        fill = (p - 1) / v * micro
        total = m * micro + fill + dp_once + dp_mb + optimizer + q["step_overhead_s"]
        row = StepBreakdown(
            m * work.compute_s, fill, m * tp, m * cp, m * ep, m * pp, dp_once + dp_mb, optimizer, total, micro
        )
        if best is None or row.step_s > best.step_s:
            best = row
    assert best is not None  # a layout has at least one stage
    return best


def profile_parameters(profile: Any, efficiency: float = 1.0) -> dict[str, float]:
    """The calibrated model's parameters for training, by name (family's and engine's): the
    profile's (every parameter's prior without one), its GEMM and flash-attention shares x
    ``efficiency`` (at most each share's upper bound), the training kernels' rate relative to the
    measurements the profile was fitted on."""
    from llm_cost.perf.profile import PARAMETERS
    from llm_cost.specs.declare import to_data

    if profile is None:
        q = {name: x.prior for name, x in PARAMETERS.items()}
    else:
        q = dict(to_data(profile.parameters.family)) | dict(to_data(profile.parameters.engine))
    for name in ("gemm_efficiency_16", "gemm_efficiency_8", "gemm_efficiency_4", "flash_efficiency"):
        q[name] = min(PARAMETERS[name].upper, q[name] * efficiency)
    return q
