"""One replica of a serving plan: its layouts, what its memory holds, the sequence groups of its
steps and their times (each step from its operators, timed once)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction

from llm_cost.analyses.capacity import MemoryPolicy, kv_budget_bytes, sequence_kv_bytes, usable_bytes
from llm_cost.analyses.serving.results import Traffic
from llm_cost.core.errors import InputError
from llm_cost.core.records import record
from llm_cost.core.types import Dtype
from llm_cost.model.layout import Layout, per_gpu
from llm_cost.perf.calibrated import step_seconds
from llm_cost.perf.timemodel import TimeModel
from llm_cost.specs.schema import HardwareSpec, ModelSpec
from llm_cost.workload.ranks import rank_groups
from llm_cost.workload.step import SeqGroup

#: Decoding-position groups a step's sequences are spread over.
_CONTEXT_GROUPS = 4


def decode_groups(count: int, input_tokens: int, output_tokens: int) -> list[SeqGroup]:
    """``count`` decoding sequences spread evenly over their output positions 1 .. O - 1: up to
    four groups at the midpoints of equal shares (contexts I + position)."""
    k = min(count, _CONTEXT_GROUPS)
    span = output_tokens - 1
    groups = []
    for i in range(k):
        n = count // k + (1 if i < count % k else 0)
        groups.append(SeqGroup(n, 1, input_tokens + (2 * i + 1) * span // (2 * k)))
    return groups


def decode_contexts(input_tokens: int, output_tokens: int) -> list[int]:
    """The contexts the KV cache holds for decoding sequences, one per share (whole sequences at
    the midpoints of their output positions)."""
    span = output_tokens - 1
    return [input_tokens + 1 + (2 * i + 1) * span // (2 * _CONTEXT_GROUPS) for i in range(_CONTEXT_GROUPS)]


def chunk_groups(chunk: int, input_tokens: int, cached: int = 0) -> list[SeqGroup]:
    """The prompt tokens of one step: whole prompts when the chunk holds them, else one chunk of a
    prompt at the mean cached length of its chunks; ``input_tokens`` computed after ``cached``
    tokens found in the prefix cache (which every chunk attends to)."""
    if chunk >= input_tokens:
        whole, rest = divmod(chunk, input_tokens)
        return [SeqGroup(whole, input_tokens, cached)] + ([SeqGroup(1, rest, cached)] if rest else [])
    n_chunks = -(-input_tokens // chunk)
    return [SeqGroup(1, chunk, cached + chunk * (n_chunks - 1) // 2)]


class StepTimes:
    """Times steps under one time model, each (layout, groups) once."""

    def __init__(
        self, spec: ModelSpec, gpu: HardwareSpec, model: TimeModel, weight_bits: Fraction, kv_bits: int, compute: Dtype
    ) -> None:
        self.spec, self.gpu, self.model = spec, gpu, model
        self.weight_bits, self.kv_bits, self.compute = weight_bits, kv_bits, compute
        self.cache: dict[tuple, float] = {}

    def seconds(self, layout: Layout, groups: Sequence[SeqGroup]) -> float:
        """Time per token of the step: pp x the slowest stage of one micro-batch of 1/pp of the
        sequences (pp = 1: the step's time)."""
        pp = layout.pp
        groups = rank_groups(groups, layout.dp)  # an attention-DP replica: each rank's share of the prompt tokens
        groups = [SeqGroup(-(-g.count // pp), g.new_tokens, g.cached) for g in groups] if pp > 1 else groups
        key = (layout, tuple(groups))
        if key not in self.cache:
            t = step_seconds(  # the stages and totals: no per-operator records
                self.model,
                self.spec,
                groups,
                self.gpu,
                layout=layout,
                weight_bits=self.weight_bits,
                kv_bits=self.kv_bits,
                compute_dtype=self.compute,
            )
            self.cache[key] = pp * max(s.time_s for s in t.stages) if pp > 1 else t.time_s
        return self.cache[key]


@record
class Replica:
    """What one replica layout holds: usable bytes, weights, KV per decoding sequence."""

    layout: Layout
    usable_bytes: int
    weight_bytes: int | Fraction
    seq_kv_bytes: Fraction  # mean per decoding sequence, paged
    prompt_kv_bytes: Fraction  # one prompt of I tokens, paged

    def room(self, spec: ModelSpec, step_tokens: int, sequences: int, policy: MemoryPolicy) -> Fraction:
        """KV budget with a workspace for a step of ``step_tokens`` tokens and ``sequences`` rows."""
        return kv_budget_bytes(spec, self.layout, policy, self.usable_bytes, self.weight_bytes, step_tokens, sequences)


def replica(
    spec: ModelSpec,
    gpu: HardwareSpec,
    layout: Layout,
    traffic: Traffic,
    policy: MemoryPolicy,
    weight_bits: Fraction,
    kv_bits: int,
    reserve_full: bool = False,
) -> Replica:
    """What one replica of ``layout`` holds for this traffic (its fullest GPU, under ``policy``).
    A decoding sequence holds its blocks at its mean context; with ``reserve_full`` every
    sequence holds the blocks of its whole length, prompt and every output token, from admission:
    TensorRT-LLM's ``GUARANTEED_NO_EVICT`` capacity scheduler (its default) admits a request only
    when the blocks that drive it to completion can be reserved
    (``cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp``, ``GuaranteedNoEvictScheduler``:
    "keep track of blocks needed to drive all in-progress requests to completion"). An
    attention data-parallel replica (``layout.dp`` ranks) keeps each sequence's KV cache on its own
    rank's GPUs only: per GPU, a replica sequence holds 1/dp of a sequence's bytes on average."""
    usable = usable_bytes(gpu, policy)
    weights = per_gpu(spec, layout, weight_bits, kv_bits).max_weight_bytes
    contexts = (
        [traffic.input_tokens + traffic.output_tokens]
        if reserve_full
        else decode_contexts(traffic.input_tokens, traffic.output_tokens)
    )
    seq = sequence_kv_bytes(spec, layout, contexts, kv_bits, policy.block_tokens) / layout.dp
    prompt = sequence_kv_bytes(spec, layout, [traffic.input_tokens], kv_bits, policy.block_tokens) / layout.dp
    return Replica(layout, usable, weights, seq, prompt)


def node_gpus(gpu: HardwareSpec) -> int:
    """GPUs of one node a replica's tensor parallelism joins: the spec's ``gpus_per_node``; for a
    card with no GPU-to-GPU link (one per node), one host of
    :data:`~llm_cost.perf.timemodel.PCIE_TP_MAX` cards over PCIe."""
    from llm_cost.perf.timemodel import host_gpus

    return host_gpus(gpu)


def replica_layouts(spec: ModelSpec, gpu: HardwareSpec, budget: int) -> list[Layout]:
    """Replica layouts up to ``budget`` GPUs: TP 1, 2, 4, 8 (or 16) dividing the query heads
    within a node (a card with no GPU-to-GPU link: up to
    :data:`~llm_cost.perf.timemodel.PCIE_TP_MAX` over PCIe), PP 1 to :data:`PP_SEARCHED` (vLLM and
    SGLang split the layers as evenly as the stages allow, so any count up to the layers runs:
    DeepSeek-V3's 61 layers on 10 H100s as TP 2 x PP 5), EP 1 or TP for MoE models, by rising
    GPUs (:func:`plan` keeps a pipeline only where TP alone does not hold the model:
    :func:`useful_pipelines`)."""
    from llm_cost.model.layout import validate_layout

    node = node_gpus(gpu)
    heads = spec.attention.num_attention_heads
    out = []
    for tp in (t for t in (1, 2, 4, 8, 16) if t <= node and heads % t == 0):
        for pp in range(1, PP_SEARCHED + 1):
            if tp * pp > budget or pp > spec.num_hidden_layers:
                continue
            for ep in [1] if spec.moe is None else sorted({1, tp}):
                layout = Layout(tp, pp, ep, 1)
                try:
                    validate_layout(spec, layout)
                except InputError:
                    continue
                out.append(layout)
    return sorted(out, key=lambda layout: (layout.gpus, layout.pp, layout.ep))


#: The most pipeline stages a replica layout has (:func:`replica_layouts`): two nodes of 8.
PP_SEARCHED = 16


def smallest_step(chunks: Sequence[int | None], traffic: Traffic) -> int:
    """Tokens of the smallest step a search runs: the smallest budget, or a whole prompt."""
    return min((c for c in chunks if c is not None), default=traffic.input_tokens)


def useful_pipelines(layouts: Sequence[Layout], holding: Callable[[Layout], Replica | None]) -> list[Replica]:
    """For each TP (and EP) degree, the replicas with the fewest pipeline stages that hold the
    model, and those of the power of two of stages above it when the fewest is not one (a pipeline
    buys memory and costs every token a pass through each stage: 5 stages that just hold the weights
    leave the KV cache almost nothing, 8 leave it room), in the order of ``layouts``. ``holding``
    gives a layout's replica, or None when it does not hold the model; it is asked by rising stages,
    only until the stages kept are found (a plan searches up to :data:`PP_SEARCHED` stages: building
    every one of them took a rate plan of llama3-8b 0.4 s)."""
    groups: dict[tuple[int, int], list[Layout]] = {}
    for layout in layouts:
        groups.setdefault((layout.tp, layout.ep), []).append(layout)
    kept: dict[Layout, Replica] = {}
    for group in groups.values():
        least: int | None = None
        for layout in sorted(group, key=lambda lay: lay.pp):
            if least is not None and layout.pp > 1 << (least - 1).bit_length():
                break
            if least is not None and layout.pp not in (least, 1 << (least - 1).bit_length()):
                continue
            rep = holding(layout)
            if rep is not None:
                least = layout.pp if least is None else least
                kept[layout] = rep
    return [kept[layout] for layout in layouts if layout in kept]
