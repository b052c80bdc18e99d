"""One training step of a parallel layout as its framework runs it: compute from the step's
operators, communication on the links its ranks span, the pipeline schedule, the optimizer (the
time model behind ``llm-cost train``'s predicted mode).

**Compute.** The forward operators of one GPU of each pipeline stage come from
:func:`llm_cost.workload.step.build_step` (one sequence of ``seq`` tokens, every LM-head position,
causal attention, the layout's TP and PP shares, the elementwise kernels between the GEMMs, with
sequence parallelism under TP) and are timed with the calibrated functions of
:mod:`llm_cost.perf.calibrated` under the GPU's profile and the training rates of
:func:`~llm_cost.analyses.train_rates.training_rates` (one call picks them). A micro-batch of ``b`` sequences split over ``cp``
context-parallel ranks scales every operator's FLOPs, rows and activation bytes by b / cp
(load-balanced causal context parallelism gives each rank 1/cp of the (query, key) pairs).

* GEMMs: compute at the profile's GEMM efficiency x the training factor fitted on the published
  runs (:mod:`~llm_cost.analyses.train_rates`), the FP8 GEMMs at their own factor against the FP8
  peak (the router and the LM head in BF16); backward twice the forward (input and weight
  gradients, each the forward's FLOPs: Kaplan et al. 2020's 4ND). The routed experts are grouped
  GEMMs of the rows each
  expert receives: with EP, local tokens x k x ep / E rows per expert, each expert's rows in whole
  tiles (:func:`~llm_cost.perf.calibrated.grouped_gemm_factor`), the dense ones in whole tiles over
  the SMs, as the calibrated model times them.
* attention: FlashAttention at the profile's flash-attention efficiency, backward 2.5x its forward
  FLOPs (five matmuls for two: Dao 2023, FlashAttention-2 §3.2) at
  :data:`FLASH_BACKWARD_EFFICIENCY` of the forward's rate; BF16 under FP8 training (Transformer
  Engine keeps dot-product attention in BF16 unless asked). A stack before FlashAttention
  (``flash=False``: Megatron-LM 2021) also writes and reads the s x s scores.
* elementwise kernels (norms, residual adds, RoPE, activation, router top-k, MoE permutation, loss,
  FP8 casts): their bytes at the profile's streaming fraction of bandwidth; backward
  :data:`ELEMENTWISE_BACKWARD` x (FP8 casts: the gradients' casts, as many bytes again), the casts'
  bytes x the recipe's :data:`~llm_cost.analyses.train_rates.FP8_CAST_TRAFFIC`.
* recompute: ``full`` runs each layer's forward again; ``selective`` is the framework's: Megatron's
  (``--recompute-granularity selective``) recomputes the core attention, which FlashAttention
  recomputes anyway (no time); torchtitan's op-level selective checkpointing saves every other
  matmul's output and recomputes the rest of the block's forward (the other matmuls, the grouped
  expert GEMMs, every elementwise op); ``none`` keeps everything.

**Communication** on the groups of :func:`llm_cost.analyses.train_ranks.rank_groups` (the
framework's rank order), each on the link it spans (:class:`~llm_cost.analyses.train_ranks.Links`):

* TP with sequence parallelism (Korthikanti et al. 2022 §4.2.2): per layer two all-gathers and two
  reduce-scatters of the b x s/cp x h activations forward and as many backward (a MoE layer with
  expert-TP 1 only attention's: its tokens go to the experts by the all-to-all), again in a full
  recompute; hidden behind the GEMMs with ``tp_overlap`` (Megatron's ``--tp-comm-overlap``);
* CP, ring attention (Liu et al. 2023): each step's K/V chunk travels while the previous one is
  attended to; exposed beyond the attention kernel;
* EP: dispatch and combine forward and backward (4 all-to-alls per MoE layer) of the local tokens'
  k copies (padded to the capacity when a capacity factor drops tokens), each copy sent to its
  expert's GPU (Megatron-Core's ``alltoall`` dispatcher) or each token once per node (DeepEP),
  exposed, or with :class:`MoeRouting` ``overlap`` hidden behind another micro-batch's compute;
* PP: each virtual chunk sends its activations forward and receives their gradient back; exposed
  in 1F1B, overlapped with other chunks' compute when interleaved;
* DP: Megatron's distributed optimizer (ZeRO-1) reduce-scatters the FP32 gradients behind the
  last micro-batch's backward and all-gathers the BF16 weights behind the first forward (ZeRO-0 /
  DDP all-reduces them); FSDP2 with resharding (ZeRO-3) all-gathers each layer's BF16 weights for
  every micro-batch's forward and again for its backward, without (ZeRO-2, as torchtitan runs it
  under PP and Llama 3 did) once per step, and reduce-scatters its FP32 gradients after every
  micro-batch's backward, one layer ahead of the compute (the first gather and the last
  reduce-scatter are exposed); HSDP all-reduces the shards' gradients across replicas once per step.

**Schedule** (Narayanan et al. 2021 §2.2): m micro-batches over p stages with v virtual stages
take (m + (p - 1)/v) x the slowest stage's micro-batch time: the bubble (p - 1)/(m v).

**Optimizer**: Adam on each GPU's shard reads the FP32 master weights, m, v and the gradient and
writes the first three and the BF16 weights, 30 B per parameter, at the profile's bandwidth.

Left out: SM contention of overlapped communication, load imbalance across experts, stragglers,
failures and restarts, checkpoint writes, data loading.
"""

from __future__ import annotations

from dataclasses import fields
from functools import lru_cache

from llm_cost.analyses.train_ranks import Group, Links, RankGroups, rank_groups
from llm_cost.analyses.train_rates import TrainRates
from llm_cost.core.choices import Framework, Logits, MoeDispatcher, Recompute
from llm_cost.core.records import record
from llm_cost.core.types import Dtype, OpKind, OpRole, TensorGroup
from llm_cost.model.layout import Layout
from llm_cost.perf.calibrated import (
    DEFAULT_SMS,
    attention_terms,
    gemm_groups,
    gemm_shape_factor,
    grouped_gemm_factor,
    smooth_max,
)
from llm_cost.specs.schema import GQAAttention, HardwareSpec, ModelSpec
from llm_cost.workload.step import ACTIVATION_BITS, Operator, build_step, fp8_gemm, prefill

__all__ = [
    "TrainLayout",
    "MoeRouting",
    "StageWork",
    "StepBreakdown",
    "StageParams",
    "stage_ops",
    "stage_work",
    "step_breakdown",
    "FLASH_BACKWARD_FLOPS",
    "FLASH_BACKWARD_EFFICIENCY",
    "ELEMENTWISE_BACKWARD",
    "GRAD_REDUCE_BYTES",
    "WEIGHT_GATHER_BYTES",
    "ADAM_BYTES_PER_PARAM",
]

#: FlashAttention's backward FLOPs per forward FLOP: five matmuls (S and P recomputed, dV, dP, dQ, dK
#: with dS) for the forward's two (Dao 2023, FlashAttention-2 §3.2; its benchmark counts 2.5x).
FLASH_BACKWARD_FLOPS = 2.5
#: The backward's FLOP rate per forward FLOP rate: FlashAttention-2, causal, head dim 128, 2K tokens,
#: 99.23 / 151.19 TFLOP/s (apache/tvm ``tl_doc/flash_perf.md``, the ``Flash_attn`` column, RTX 4090).
FLASH_BACKWARD_EFFICIENCY = 99.23 / 151.19
#: Backward traffic of an elementwise kernel per forward byte: a norm reads x and writes y forward
#: (2 passes) and reads x and dy and writes dx backward (3); SwiGLU reads 2 and writes 1 forward,
#: reads 3 and writes 2 backward; a residual add passes its gradient on: about 1.5 on the whole.
ELEMENTWISE_BACKWARD = 1.5
#: Bytes per gradient element reduced across data-parallel ranks (FP32: Megatron's main gradients,
#: FSDP2's ``reduce_dtype=float32`` as torchtitan and AutoModel set it, Llama 3).
GRAD_REDUCE_BYTES = 4
#: Bytes per weight element gathered by the distributed optimizer and FSDP (BF16).
WEIGHT_GATHER_BYTES = 2
#: Adam's traffic per parameter of a GPU's shard: read FP32 master, m, v, gradient (16 B); write
#: master, m, v (12 B) and the BF16 weight (2 B).
ADAM_BYTES_PER_PARAM = 30
#: Operators outside the decoder layers (not recomputed, not TP-overlapped).
_OUTSIDE = (OpRole.LM_HEAD, OpRole.EMBEDDING_ROWS, OpRole.RESIDENT_WEIGHTS, OpRole.CROSS_ENTROPY)


@record
class TrainLayout:
    """A training layout: GPUs = tp x cp x pp x dp; ``vp`` virtual stages per pipeline stage (1:
    1F1B, more: interleaved); ``ep`` expert-parallel ranks (MoE only, folded into tp x cp x dp);
    ``zero``: Megatron's 0 (DDP) or 1 (distributed optimizer), FSDP2's 3 (resharded after the
    forward) or 2 (not); ``shard``: FSDP2's data-parallel ranks per FSDP group (dp: FSDP; fewer:
    HSDP); ``micro_batch`` sequences per micro-batch, ``micro_batches`` per step on each pipeline."""

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
    framework: Framework = Framework.MEGATRON
    shard: int = 0  # 0: dp (every data-parallel rank in one FSDP group)

    @property
    def gpus(self) -> int:
        """tp x cp x pp x dp."""
        return self.tp * self.cp * self.pp * self.dp

    @property
    def etp(self) -> int:
        """Expert tensor parallelism: 1 with EP (MoE parallel folding, the recipes' choice), else the
        experts split over TP like an MLP."""
        return 1 if self.ep > 1 else self.tp

    @property
    def fsdp_shard(self) -> int:
        """Data-parallel ranks per FSDP group (dp unless HSDP)."""
        return self.shard or self.dp

    def groups(self) -> RankGroups:
        """The rank groups of this layout in its framework's order."""
        return rank_groups(self.framework, self.tp, self.cp, self.pp, self.dp, self.ep, self.etp, self.fsdp_shard)

    def label(self) -> str:
        """``TP8 CP1 PP16 (v4) DP64 ZeRO-1 selective mb1 x 32`` (``FSDP`` / ``HSDP 8`` for FSDP2)."""
        ep = f" EP{self.ep}" if self.ep > 1 else ""
        v = f" (v{self.vp})" if self.vp > 1 else ""
        if self.framework == Framework.FSDP2:
            shard = "FSDP" if self.fsdp_shard == self.dp else f"HSDP{self.fsdp_shard}"
            state = f"{shard} ZeRO-{self.zero}"
        else:
            state = f"ZeRO-{self.zero}"
        return (
            f"TP{self.tp} CP{self.cp} PP{self.pp}{v} DP{self.dp}{ep} {state} {self.recompute} "
            f"mb{self.micro_batch} x {self.micro_batches}"
        )


@record
class MoeRouting:
    """How a MoE layer's tokens reach their experts in training: by ``dispatcher``; dropless
    (``capacity_factor`` None: each expert computes the rows it gets, balanced on average) or with
    a capacity of ``capacity_factor`` x its fair share, padded to it (Megatron-Core's
    ``--moe-expert-capacity-factor`` with ``--moe-pad-expert-input-to-capacity``: the expert GEMMs
    and the all-to-all carry the padding); the all-to-all exposed, or with ``overlap`` hidden behind
    another micro-batch's compute (Megatron-Core's ``--overlap-moe-expert-parallel-comm``,
    DeepSeek-V3's DualPipe), exposed only beyond it."""

    dispatcher: MoeDispatcher = MoeDispatcher.ALLTOALL
    capacity_factor: float | None = None
    overlap: bool = False

    @property
    def padding(self) -> float:
        """Rows computed and sent per row routed: the capacity factor, or 1 dropless."""
        return self.capacity_factor or 1.0


#: Dropless routing by all-to-all, not overlapped (Megatron-Core's defaults).
DROPLESS = MoeRouting()


@record
class StageWork:
    """One micro-batch of ``micro_batch`` sequences on one GPU of a pipeline stage, seconds (and
    FLOPs as the GPU runs them)."""

    layers: int
    forward_s: float
    backward_s: float
    recompute_s: float
    gemm_s: float  # forward + backward GEMM time of the layers: what TP collectives can hide behind
    attention_s: float  # forward + backward attention time: what ring attention can hide behind
    elementwise_s: float  # forward + backward elementwise kernels (included in forward_s, backward_s)
    overhead_s: float  # fixed kernel-launch time per layer and pass
    hardware_flops: float  # forward + backward (+ recompute) FLOPs run

    @property
    def compute_s(self) -> float:
        """Forward, backward, recompute and fixed time."""
        return self.forward_s + self.backward_s + self.recompute_s + self.overhead_s


@record
class StageParams:
    """Parameters on one GPU of a stage: the dense ones (sharded over the DP group) and the routed
    experts' (over the expert-DP group)."""

    dense: float
    experts: float

    @property
    def total(self) -> float:
        """Both."""
        return self.dense + self.experts


@record
class StepBreakdown:
    """Seconds of one training step on the slowest pipeline stage, by term; ``step_s`` their sum."""

    compute_s: float  # m micro-batches' forward, backward and recompute
    bubble_s: float  # pipeline fill and drain: (p - 1)/v chunks' worth of the micro-batch time
    tp_s: float  # exposed TP (sequence-parallel) collectives
    cp_s: float  # exposed ring-attention traffic
    ep_s: float  # MoE all-to-all
    pp_s: float  # exposed pipeline sends
    dp_s: float  # exposed data-parallel (ZeRO / FSDP) collectives
    optimizer_s: float
    overhead_s: float  # the profile's per-step engine overhead (step_overhead_s: launches, Python, sync)
    step_s: float
    microbatch_s: float  # one micro-batch on the slowest stage, its exposed communication included

    def terms(self) -> dict[str, float]:
        """The terms that add up to ``step_s`` (every field but the sums)."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("step_s", "microbatch_s")}


@lru_cache(maxsize=256)
def stage_ops(
    spec: ModelSpec, tp: int, pp: int, seq: int, dtype: Dtype, flash: bool = True
) -> tuple[tuple[Operator, ...], ...]:
    """The compute operators of one sequence of ``seq`` tokens on one GPU of each of ``pp`` stages
    at TP ``tp`` with sequence parallelism, the elementwise kernels included (no collectives: this
    module times its own); without ``flash``, attention's scores materialised in memory (the
    stacks before FlashAttention). InputError for an invalid layout."""
    step = build_step(
        spec,
        prefill(1, seq),
        layout=Layout(tp, pp),
        logits=Logits.ALL,
        compute_dtype=dtype,
        elementwise=True,
        sequence_parallel=tp > 1,
        materialised_scores=not flash,
    )
    return tuple(tuple(op for op in st.ops if op.kind != OpKind.COLLECTIVE) for st in step.stages)


@record
class _Context:
    """What timing one operator needs besides the operator."""

    spec: ModelSpec
    share: float  # b / cp of the sequence
    layout: TrainLayout
    gemm_peak: float  # FP8 peak under FP8 compute, else the dtype's
    peak: float  # the 16-bit peak (attention, the BF16 GEMMs of an FP8 step)
    bw: float
    rates: TrainRates
    padding: float  # rows per routed row (a capacity factor's padding)
    sms: int  # the GPU's SMs (tile waves)


def _routed_rows(op: Operator, c: _Context) -> float:
    """Rows one expert's grouped GEMM multiplies per micro-batch on this GPU: the op's rows per
    expert (all tokens at EP 1, experts split over TP) x b/cp, x ep / tp under EP with expert-TP 1
    (each GPU dispatches its 1/tp of the tokens and holds E/ep whole experts)."""
    lay = c.layout
    rows = float(op.m or 1) * c.share * c.padding
    return rows * lay.ep / lay.tp if lay.ep > 1 else rows


def _gemm_seconds(op: Operator, c: _Context) -> tuple[float, float]:
    """(forward, backward) seconds of a GEMM by the calibrated model's forms
    (:mod:`llm_cost.perf.calibrated`): FLOPs in whole tiles over the SMs (grouped expert GEMMs each
    expert's rows in whole tiles: :func:`~llm_cost.perf.calibrated.grouped_gemm_factor`) at the profile's GEMM
    share x the training factor, its weights and activations at the engine's stream share, combined
    by the profile's p-norm."""
    q, r = c.rates.q, c.rates
    fp8 = c.gemm_peak != c.peak and fp8_gemm(op)
    share = q["gemm_efficiency_8" if fp8 else "gemm_efficiency_16"] * (r.fp8_gemm if fp8 else r.gemm)
    e_max = min(1.0, share)
    weights = float(op.weight_bytes)
    activations = float(op.activation_bytes) * c.share
    routed = op.role == OpRole.ROUTED_EXPERTS
    if routed:
        rows = _routed_rows(op, c)
        experts = gemm_groups(op) * (c.layout.tp / c.layout.ep if c.layout.ep > 1 else 1.0)  # this GPU's
        shape = grouped_gemm_factor(rows, op.n, experts, c.sms) / q["moe_gemm_share"]
        if c.layout.ep > 1:
            weights *= c.layout.tp / c.layout.ep
    else:
        shape = gemm_shape_factor(float(op.m or 1) * c.share, op.n, gemm_groups(op), c.sms)
    padding = c.padding if routed else 1.0
    compute = float(op.flops) * c.share * padding * shape / ((c.gemm_peak if fp8 else c.peak) * e_max)
    memory = (weights + activations) / (c.bw * q["bandwidth_efficiency"] * q["stream_share"])
    forward = smooth_max(compute, memory, q["overlap_p"])
    return forward, 2 * forward


def _op_seconds(op: Operator, c: _Context) -> tuple[float, float]:
    """(forward, backward) seconds of ``op`` for b/cp of its sequence (module docstring)."""
    q, r = c.rates.q, c.rates
    if op.kind == OpKind.GEMM:
        return _gemm_seconds(op, c)
    p = q["overlap_p"]
    if op.kind == OpKind.ATTENTION:
        comp, mem = attention_terms(float(op.flops) * c.share, 0.0, float(op.kv_write_bytes) * c.share, 1.0,
                                    c.peak, c.bw, q["flash_efficiency"], 1.0, q["bandwidth_efficiency"])  # fmt: skip
        backward = FLASH_BACKWARD_FLOPS * comp / FLASH_BACKWARD_EFFICIENCY
        return smooth_max(comp, mem, p), smooth_max(backward, 2 * mem, p)
    rate = c.bw * r.elementwise
    if op.role == OpRole.FP8_CAST:
        forward = float(op.activation_bytes) * c.share * r.cast_traffic / rate
        return forward, forward
    moved = float(op.activation_bytes) * c.share / rate + float(op.weight_bytes) / (c.bw * q["bandwidth_efficiency"])
    comp = float(op.flops) * c.share / (c.peak * q["gemm_efficiency_16"])
    forward = smooth_max(comp, moved, p)
    return forward, ELEMENTWISE_BACKWARD * forward


def _recomputed(ops: tuple[Operator, ...], framework: Framework, recompute: Recompute) -> list[bool]:
    """Which operators a recompute policy runs again before the backward (module docstring):
    ``full`` every layer operator; torchtitan's op-level ``selective`` every other matmul of the
    layers (the 2nd, 4th, ... in the block's order), the grouped expert GEMMs and every elementwise
    kernel of the layers; Megatron's ``selective`` and ``none`` nothing (FlashAttention recomputes
    its scores itself)."""
    inside = [op.role not in _OUTSIDE and op.group not in (TensorGroup.LM_HEAD, TensorGroup.EMBEDDING) for op in ops]
    if recompute == Recompute.FULL:
        return inside
    if recompute != Recompute.SELECTIVE or framework != Framework.FSDP2:
        return [False] * len(ops)
    out, matmuls = [], 0
    for op, layer in zip(ops, inside):
        again = False
        if layer and op.kind == OpKind.GEMM and op.role == OpRole.MATMUL:
            matmuls += 1
            again = matmuls % 2 == 0
        elif layer and (op.role == OpRole.ROUTED_EXPERTS or op.kind == OpKind.ELEMENTWISE):
            again = op.role != OpRole.VECTORS
        out.append(again)
    return out


def stage_work(
    spec: ModelSpec,
    ops: tuple[Operator, ...],
    layers: int,
    layout: TrainLayout,
    gpu: HardwareSpec,
    dtype: Dtype,
    rates: TrainRates,
    padding: float = 1.0,
) -> StageWork:
    """One micro-batch on one stage's GPU: ``ops`` (:func:`stage_ops`) at b / cp of their sequence,
    timed with the training ``rates``; GEMMs at the ``dtype`` peak (FP8: the FP8 GEMMs of
    :func:`~llm_cost.workload.step.fp8_gemm`), attention and the rest at the 16-bit peak; the routed
    experts' rows x ``padding`` (:attr:`MoeRouting.padding`)."""
    peak = gpu.peak_flops(Dtype.BF16 if dtype == Dtype.FP8 else dtype)
    share = layout.micro_batch / layout.cp
    c = _Context(
        spec,
        share,
        layout,
        gpu.peak_flops(dtype),
        peak,
        gpu.bandwidth_bytes_s,
        rates,
        padding,
        gpu.sm_count or DEFAULT_SMS,
    )
    forward = backward = gemm = attention = elementwise = recompute = flops = 0.0
    for op, again in zip(ops, _recomputed(ops, layout.framework, layout.recompute)):
        f, b = _op_seconds(op, c)
        forward, backward = forward + f, backward + b
        op_flops = float(op.flops) * c.share
        if op.kind == OpKind.GEMM:
            gemm += (f + b) if op.role not in _OUTSIDE else 0.0
            flops += 3 * op_flops
        elif op.kind == OpKind.ATTENTION:
            attention += f + b
            flops += (1 + FLASH_BACKWARD_FLOPS) * op_flops
        elif op.kind == OpKind.ELEMENTWISE:
            elementwise += f + b
        if again:
            recompute += f
            flops += op_flops
    passes = 3 + (1 if layout.recompute == Recompute.FULL else 0)  # forward, backward (two kernels per op), recompute
    return StageWork(
        layers,
        forward,
        backward,
        recompute,
        gemm,
        attention,
        elementwise,
        rates.q["layer_overhead_s"] * layers * passes,
        flops,
    )


@record
class _Payloads:
    """Per-micro-batch bytes of the layer-wise collectives of one GPU (whole tensors)."""

    tp_bytes: float  # one sequence-parallel all-gather or reduce-scatter: b x s/cp x h x 2
    cp_bytes: float  # the whole sequence's K and V of this GPU's KV heads
    ep_bytes: float  # one all-to-all's tokens on one GPU, one copy each: b x s/cp/tp x width x 2
    pp_bytes: float  # one pipeline send: b x s/cp x h x 2 / tp


def _payloads(spec: ModelSpec, layout: TrainLayout, seq: int) -> _Payloads:
    h = spec.hidden_size
    element = ACTIVATION_BITS // 8
    tokens = layout.micro_batch * seq / layout.cp
    kv_heads = max(1, spec.num_key_value_heads // layout.tp) if spec.num_key_value_heads else 1
    head_dim = spec.head_dim
    d_v = spec.v_head_dim if isinstance(spec.attention, GQAAttention) else head_dim  # K and V per head
    moe = spec.moe
    width = (moe.moe_latent_size or h) if moe is not None else 0
    return _Payloads(
        tokens * h * element,
        layout.micro_batch * seq * kv_heads * (head_dim + d_v) * element,
        tokens / layout.tp * width * element,
        tokens * h * element / layout.tp,
    )


def _tp_exposed(
    spec: ModelSpec, work: StageWork, moe_layers: int, layout: TrainLayout, links: Links, pay: _Payloads, overlap: bool
) -> float:
    """Exposed TP collectives of one micro-batch: 4 per layer each way (2 all-gathers and 2
    reduce-scatters; a MoE layer under EP 2, attention's, unless it has shared experts), again in a
    full recompute; hidden behind the stage's GEMMs when ``overlap``."""
    if layout.tp == 1:
        return 0.0
    shared = spec.moe is not None and spec.moe.shared_expert_intermediate_size > 0
    per_way = 4 * work.layers - (2 * moe_layers if layout.ep > 1 and not shared else 0)
    calls = per_way * (3 if layout.recompute == Recompute.FULL else 2)
    total = calls * links.ring(pay.tp_bytes, layout.groups().tp)
    return max(0.0, total - work.gemm_s) if overlap else total


def _cp_exposed(work: StageWork, layout: TrainLayout, links: Links, pay: _Payloads) -> float:
    """Ring attention's exposed K/V traffic in one micro-batch: each layer's attention runs in cp
    steps, each on one rank's K/V chunk while the next chunk travels; the first chunk's transfer is
    exposed, and each later one beyond its step's compute. Three passes per layer: forward, and
    backward (the chunks again, and their gradients)."""
    cp = layout.cp
    if cp == 1:
        return 0.0
    group = layout.groups().cp
    chunk = links.latency_s + pay.cp_bytes / cp / links.rate(group)
    step = work.attention_s / (3 * work.layers * cp)  # one step of one pass of one layer
    return 3 * work.layers * (chunk + (cp - 1) * max(0.0, chunk - step))


def _ep_exposed(
    spec: ModelSpec, work: StageWork, layout: TrainLayout, links: Links, pay: _Payloads, moe_layers: int,
    moe: MoeRouting,
) -> float:  # fmt: skip
    """MoE all-to-all: dispatch and combine forward and backward, per MoE layer of the stage, on
    the links the EP group spans, each token's k copies (padded to capacity) sent by the dispatcher
    (:meth:`~llm_cost.analyses.train_ranks.Links.all_to_all`); overlapped, only what the
    micro-batch's compute cannot cover."""
    if layout.ep == 1 or not moe_layers or spec.moe is None:
        return 0.0
    once = moe.dispatcher == MoeDispatcher.DEEPEP
    call = links.all_to_all(pay.ep_bytes * moe.padding, spec.moe.num_experts_per_tok, layout.groups().ep, once)
    total = 4 * moe_layers * call
    return max(0.0, total - work.compute_s) if moe.overlap else total


def _pp_exposed(work: StageWork, layout: TrainLayout, links: Links, pay: _Payloads) -> float:
    """Pipeline sends of one micro-batch: each virtual chunk's activation forward and gradient back;
    hidden behind the other chunks' compute when interleaved (v > 1)."""
    if layout.pp == 1:
        return 0.0
    group = layout.groups().pp
    send = links.latency_s + pay.pp_bytes / links.rate(Group(2, group.stride))
    sends = 2 * layout.vp
    if layout.vp == 1:
        return sends * send
    return sends * links.latency_s + max(0.0, sends * send - work.compute_s)


def _megatron_dp(work: StageWork, params: StageParams, layout: TrainLayout, links: Links) -> float:
    """Exposed seconds per step of Megatron's data-parallel collectives (module docstring): the
    dense parameters over the dp x cp group, the experts' over the expert-DP group."""
    groups = layout.groups()
    grads = weights = 0.0
    for count, group in ((params.dense, groups.dp), (params.experts, groups.expert_dp)):
        grads += links.ring(count * GRAD_REDUCE_BYTES, group)
        weights += links.ring(count * WEIGHT_GATHER_BYTES, group)
    back = work.backward_s + work.recompute_s
    if layout.zero == 0:
        return max(0.0, 2 * grads - back)
    return max(0.0, weights - work.forward_s) + max(0.0, grads - back)


def _fsdp_dp(work: StageWork, params: StageParams, layout: TrainLayout, links: Links) -> tuple[float, float]:
    """(exposed seconds once per step, per micro-batch) of FSDP2's collectives (module docstring):
    the gathers and reduce-scatters of a micro-batch share one link and run beside its compute (a
    layer ahead), so what they take beyond the micro-batch's compute is exposed, and the first
    layer's gather and the last one's reduce-scatter always are."""
    groups = layout.groups()
    gather = reduce = 0.0
    for count, group in ((params.dense, groups.dp), (params.experts, groups.expert_dp)):
        gather += links.ring(count * WEIGHT_GATHER_BYTES, group)
        reduce += links.ring(count * GRAD_REDUCE_BYTES, group)
    replicas = 2 * links.ring(params.total / layout.fsdp_shard * GRAD_REDUCE_BYTES, groups.replicate)
    window = work.compute_s
    edges = (gather + reduce) / max(1, work.layers)  # the first layer's gather and the last one's reduce-scatter
    if layout.zero == 2:  # not resharded: gathered once per step, kept over its micro-batches
        return max(0.0, replicas + gather - window), edges + max(0.0, reduce - window)
    return max(0.0, replicas - window), edges + max(0.0, 2 * gather + reduce - window)


def _optimizer_s(params: StageParams, layout: TrainLayout, bandwidth_bytes_s: float, efficiency: float) -> float:
    """Adam over this GPU's shard of its parameters."""
    groups = layout.groups()
    sharded = layout.framework == Framework.FSDP2 or layout.zero > 0
    shard = params.dense / groups.dp.size + params.experts / groups.expert_dp.size if sharded else params.total
    return shard * ADAM_BYTES_PER_PARAM / (bandwidth_bytes_s * efficiency)


def step_breakdown(
    spec: ModelSpec,
    layout: TrainLayout,
    seq: int,
    works: list[StageWork],
    params: list[StageParams],
    moe_layers: list[int],
    links: Links,
    bandwidth_bytes_s: float,
    rates: TrainRates,
    tp_overlap: bool = False,
    moe: MoeRouting = DROPLESS,
) -> StepBreakdown:
    """The step time of ``layout`` from each stage's micro-batch work ``works``, its parameters on
    one GPU and its MoE layers: the slowest stage's micro-batch (compute and exposed TP/CP/EP/PP
    traffic) x (m + (p - 1)/v), plus its exposed DP collectives and optimizer step."""
    pay = _payloads(spec, layout, seq)
    m, p, v = layout.micro_batches, layout.pp, layout.vp
    q = rates.q
    best: StepBreakdown | None = None
    for work, stage_params, moe_count in zip(works, params, moe_layers):
        tp = _tp_exposed(spec, work, moe_count, layout, links, pay, tp_overlap)
        cp = _cp_exposed(work, layout, links, pay)
        ep = _ep_exposed(spec, work, layout, links, pay, moe_count, moe)
        pp = _pp_exposed(work, layout, links, pay)
        micro = work.compute_s + tp + cp + ep + pp
        if layout.framework == Framework.FSDP2:
            dp_once, dp_mb = _fsdp_dp(work, stage_params, layout, links)
        else:
            dp_once, dp_mb = _megatron_dp(work, stage_params, layout, links), 0.0
        optimizer = _optimizer_s(stage_params, layout, bandwidth_bytes_s, q["bandwidth_efficiency"])
        fill = (p - 1) / v * micro
        total = m * micro + fill + dp_once + m * dp_mb + optimizer + q["step_overhead_s"]
        row = StepBreakdown(
            m * work.compute_s, fill, m * tp, m * cp, m * ep, m * pp, dp_once + m * dp_mb, optimizer,
            q["step_overhead_s"], total, micro,
        )  # fmt: skip
        if best is None or row.step_s > best.step_s:
            best = row
    assert best is not None  # a layout has at least one stage
    return best
