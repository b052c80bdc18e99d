"""Memory on the fullest GPU of a training layout, as its framework holds it.

**State** per parameter on a GPU (its stage's share, its TP shard; the routed experts' over EP):

* Megatron-Core (``megatron/training/theoretical_memory_usage.py``): BF16 weights (2 B) and FP32
  main gradients (4 B) on every data-parallel rank, FP32 master weights and Adam's m and v (12 B)
  sharded over the dp x cp ranks by the distributed optimizer (ZeRO-1; the experts' over their
  expert-DP ranks); without it (ZeRO-0) all 18 B everywhere.
* FSDP2 (torchtitan, NeMo AutoModel; ``MixedPrecisionPolicy(param_dtype=bfloat16,
  reduce_dtype=float32)``): FP32 parameters, FP32 gradients and Adam's m and v (16 B) sharded over
  the FSDP group (ZeRO-3, Rajbhandari et al. 2020: 16 Psi / N_d). In flight: each layer's weights
  gathered in BF16 (the running layer and the one prefetched) and, in the backward, its unsharded
  FP32 gradient before the reduce-scatter; the root module (embedding, final norm, LM head, an MTP
  module's dense part and its share of routed experts) gathered whole while it runs. Not resharded after the forward (ZeRO-2): every layer of the
  stage's BF16 weights stay gathered from its forward to its backward.

**Activations** per layer on one GPU (16-bit; sequence-parallel under TP; FlashAttention keeps no
s x s scores, so ``none`` keeps what ``selective`` does where selective only recomputes the core
attention): Megatron's ``none``/``selective`` and FSDP2's ``none``: the model's block as Korthikanti
et al. 2022 count it (:func:`llm_cost.analyses.memory.activation_memory`); FSDP2's ``selective``:
torchtitan's op-level checkpointing (:func:`~llm_cost.analyses.memory.op_sac_bytes_per_layer`);
``full``: each layer's input. The first stage keeps the micro-batches 1F1B has in flight,
min(m, p - stage), x (1 + (p - 1)/(p v)) when interleaved (Korthikanti et al. 2022 §4.2.3).

**Buffers** on the last stage: a micro-batch's logits: Megatron's fused vocabulary-parallel
cross-entropy keeps them in BF16 with their BF16 gradient (4 B per logit); torchtitan's
``cross_entropy(logits.float())`` keeps the FP32 log-softmax and its FP32 gradient (8 B).

All of it within the physical capacity less a reserve (CUDA context, NCCL buffers, the caching
allocator's fragmentation).
"""

from __future__ import annotations

import math

from llm_cost.analyses.memory import activation_memory, op_sac_bytes_per_layer
from llm_cost.analyses.train_step import StageParams, TrainLayout
from llm_cost.core.choices import Framework, Recompute
from llm_cost.core.records import record
from llm_cost.core.types import Part, ShardRule, TensorGroup, TensorKind
from llm_cost.model.layout import Layout, tensor_share
from llm_cost.model.structure import build
from llm_cost.specs.schema import ModelSpec

__all__ = [
    "LayoutMemory",
    "MemoryModel",
    "memory_split",
    "DEFAULT_RESERVE_BYTES",
    "MEGATRON_STATE_BYTES",
    "FSDP_STATE_BYTES",
    "LOGIT_BYTES",
]

#: Memory a training process cannot use for tensors: CUDA context, NCCL buffers, allocator
#: fragmentation (the same 2 GiB vLLM keeps back; PyTorch's context alone is about 0.5 GiB).
DEFAULT_RESERVE_BYTES = 2 * 2**30
#: Megatron-Core's bytes per parameter: (kept on every DP rank, sharded by the distributed
#: optimizer): BF16 weight + FP32 main gradient, FP32 master + Adam m + v
#: (``theoretical_memory_usage.py``: 18 without the distributed optimizer, 6 + 12/DP with it).
MEGATRON_STATE_BYTES = (6, 12)
#: FSDP2's bytes per parameter, all sharded: FP32 parameter, FP32 gradient, Adam m and v.
FSDP_STATE_BYTES = 16
#: Bytes per logit element on the last stage, by framework (module docstring).
LOGIT_BYTES = {Framework.MEGATRON: 4, Framework.FSDP2: 8}


@record
class LayoutMemory:
    """Bytes on the fullest GPU of a layout, each part rounded up to whole bytes (shares over TP,
    EP and the data-parallel ranks need not divide evenly)."""

    state_bytes: int
    activation_bytes: int
    buffer_bytes: int  # logits; FSDP's gathered weights and gradients in flight
    total_bytes: int
    room_bytes: int  # capacity less the reserve
    fits: bool


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


def _over_ep(experts: float, layout: TrainLayout) -> float:
    """One GPU's share of a TP shard's routed experts: whole experts over EP (expert-TP 1), else
    the TP shard as it is."""
    return experts * layout.tp / layout.ep if layout.ep > 1 else experts


@record
class _Shard:
    """Parameters of one TP shard: per decoder layer (averaged), of it routed experts, the input
    tables (first stage) and the output side (last stage: final norm, LM head, MTP modules), of it
    routed experts (an MTP module's MoE layer: DeepSeek-V3's holds 256 experts, 11.3 B parameters)."""

    layer: float
    experts: float
    first: float
    last: float
    last_experts: float = 0.0


class MemoryModel:
    """The memory of layouts of one model at one sequence length, with the per-TP parameter shares
    and the per-(TP, CP, micro-batch, recompute) activation bytes kept between layouts."""

    def __init__(self, spec: ModelSpec, seq: int, room_bytes: int) -> None:
        self.spec, self.seq, self.room = spec, seq, room_bytes
        self._shards: dict[int, _Shard] = {}
        self._act: dict[tuple, float] = {}
        self._params: dict[tuple, StageParams] = {}

    def shard(self, tp: int) -> _Shard:
        """The parameters of one TP shard (:class:`_Shard`)."""
        if tp not in self._shards:
            layout = Layout(tp, 1)
            layer = experts = first = last = last_experts = 0.0
            for t in build(self.spec).tensors:
                if t.part in (Part.VISION, Part.AUDIO, Part.MTP_COPY) or not t.stored:
                    continue
                elements = float(t.total * tensor_share(self.spec, t, layout))
                routed = elements if t.group == TensorGroup.ROUTED_EXPERTS or t.shard == ShardRule.EXPERT else 0.0
                if t.layers and t.part == Part.DECODER:
                    layer += elements
                    experts += routed
                elif t.kind == TensorKind.LOOKUP and t.part == Part.DECODER:
                    first += elements
                else:
                    last += elements
                    last_experts += routed
            L = self.spec.num_hidden_layers
            self._shards[tp] = _Shard(layer / L, experts / L, first, last, last_experts)
        return self._shards[tp]

    def layer_params(self, layout: TrainLayout) -> StageParams:
        """One decoder layer's parameters on one GPU: dense (TP-split) and routed experts (whole
        experts over EP with expert-TP 1, else TP-split)."""
        s = self.shard(layout.tp)
        return StageParams(s.layer - s.experts, _over_ep(s.experts, layout))

    def outer_params(self, layout: TrainLayout, first: bool, last: bool) -> StageParams:
        """The input tables' (``first``) and the output side's (``last``) parameters on one GPU, an
        MTP module's routed experts over EP as a layer's are."""
        s = self.shard(layout.tp)
        dense = (s.first if first else 0.0) + (s.last - s.last_experts if last else 0.0)
        return StageParams(dense, _over_ep(s.last_experts, layout) if last else 0.0)

    def stage_params(self, layout: TrainLayout, layers: int, first: bool, last: bool) -> StageParams:
        """The parameters of a stage of ``layers`` layers on one GPU (the tables on the first stage,
        the output side on the last; a tied LM head's own copy on the last when PP > 1)."""
        key = (layout.tp, layout.ep, layout.pp > 1, layers, first, last)
        if key not in self._params:
            per_layer, outer = self.layer_params(layout), self.outer_params(layout, first, last)
            dense = outer.dense
            if last and layout.pp > 1 and self.spec.tie_word_embeddings:
                dense += self.spec.vocab_size * self.spec.hidden_size / layout.tp
            self._params[key] = StageParams(
                per_layer.dense * layers + dense, per_layer.experts * layers + outer.experts
            )
        return self._params[key]

    def activation_per_layer(self, layout: TrainLayout) -> float:
        """Bytes one layer keeps for one micro-batch (module docstring)."""
        key = (layout.tp, layout.cp, layout.micro_batch, layout.recompute, layout.framework)
        if key not in self._act:
            tokens, tp = self.seq // layout.cp, layout.tp
            if layout.framework == Framework.FSDP2 and layout.recompute == Recompute.SELECTIVE:
                value = op_sac_bytes_per_layer(self.spec, tokens, layout.micro_batch, tp)
            else:
                kept = Recompute.FULL if layout.recompute == Recompute.FULL else Recompute.SELECTIVE
                act = activation_memory(self.spec, tokens, layout.micro_batch, kept, tp, tp > 1)
                value = float(act.bytes_per_layer)
            self._act[key] = value
        return self._act[key]

    def _state(self, layout: TrainLayout, params: StageParams) -> float:
        groups = layout.groups()
        if layout.framework == Framework.FSDP2:
            return FSDP_STATE_BYTES * (params.dense / groups.dp.size + params.experts / groups.expert_dp.size)
        kept, sharded = MEGATRON_STATE_BYTES
        if layout.zero == 0:
            return (kept + sharded) * params.total
        return kept * params.total + sharded * (params.dense / groups.dp.size + params.experts / groups.expert_dp.size)

    def _in_flight(self, layout: TrainLayout, params: StageParams, layers: int, first: bool, last: bool) -> float:
        """FSDP2's gathered BF16 weights and unsharded FP32 gradients in flight (module docstring)."""
        if layout.framework != Framework.FSDP2:
            return 0.0
        per_layer = self.layer_params(layout).total
        root = self.outer_params(layout, first, last).total
        if layout.zero == 2:
            return 2 * params.total + 4 * per_layer
        return (2 * 2 + 4) * per_layer + 2 * root

    def memory(self, layout: TrainLayout) -> LayoutMemory:
        """The fullest GPU's memory under the planner's split (:func:`memory_split`)."""
        p, v, m = layout.pp, layout.vp, layout.micro_batches
        counts = memory_split(self.spec.num_hidden_layers, p)
        per_layer = self.activation_per_layer(layout)
        interleave = 1 + (p - 1) / (p * v) if v > 1 else 1.0
        best: LayoutMemory | None = None
        for i in {0, p - 1, counts.index(max(counts))}:  # the fullest middle stage: its first
            first, last = i == 0, i == p - 1
            params = self.stage_params(layout, counts[i], first, last)
            state = self._state(layout, params)
            activations = per_layer * counts[i] * min(m, p - i) * (interleave if first else 1.0)
            buffers = self._in_flight(layout, params, counts[i], first, last)
            if last:
                tokens = layout.micro_batch * self.seq / layout.cp
                buffers += tokens * self.spec.vocab_size / layout.tp * LOGIT_BYTES[layout.framework]
            state_b, activation_b, buffer_b = math.ceil(state), math.ceil(activations), math.ceil(buffers)
            total = state_b + activation_b + buffer_b
            row = LayoutMemory(state_b, activation_b, buffer_b, total, self.room, total <= self.room)
            if best is None or row.total_bytes > best.total_bytes:
                best = row
        assert best is not None
        return best
