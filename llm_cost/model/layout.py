"""Multi-GPU layouts: which part of each weight tensor and of the KV cache one GPU holds.

Layout: TP x PP x DP GPUs (Megatron-LM; vLLM). Each tensor declares its shard rule where
:mod:`llm_cost.model.structure` builds it; this module applies the rules:

* tensor parallelism (TP) splits column-parallel weights by output and row-parallel weights by
  input (a row-parallel bias is replicated); the embedding and LM head are vocabulary-parallel;
  one-per-head vectors split with the heads; norms, routers and the small MLA down-projections
  are replicated.
* K/V heads: with TP <= n_kv each GPU holds n_kv / TP heads; with TP > n_kv each GPU holds one
  head, replicated TP / n_kv times (TP must divide or be divided by n_kv). MLA's latent cache
  is replicated on every TP rank.
* pipeline parallelism (PP) splits the L layers into PP stages as evenly as possible (the first
  stages take one more when L % PP != 0); the embedding (and a vision tower) sit on the first
  stage, the final norm, LM head and MTP modules on the last.
* expert parallelism (EP), as vLLM's ``enable_expert_parallel``: EP = TP x DP ranks of a stage
  hold (E + R) / EP whole experts each; with EP = 1 the experts are split by TP like an MLP.
* data parallelism (DP) replicates everything else.
"""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction

from llm_cost.core.errors import InputError
from llm_cost.core.limits import MAX_LAYOUT
from llm_cost.core.records import record
from llm_cost.core.types import LayerKind, LayerType, Part, ShardRule, TensorGroup, TensorKind
from llm_cost.core.units import exact, plain_number, to_bytes
from llm_cost.model.formats import tensor_bits, weight_bits_of
from llm_cost.model.kvshape import (
    indexer_key_bytes,
    indexer_layers,
    kv_elements_per_token,
    linear_state_elements,
    mamba_state_elements,
    short_conv_state_elements,
)
from llm_cost.model.layers import layer_counts
from llm_cost.model.structure import Tensor, build
from llm_cost.specs.schema import GQAAttention, KimiDeltaAttention, LinearAttention, ModelSpec

__all__ = [
    "Layout",
    "ONE_GPU",
    "layout_label",
    "validate_layout",
    "check_heads",
    "stage_layers",
    "stage_first_layers",
    "stage_range",
    "tensor_share",
    "tensor_layers_in_stage",
    "PerGPU",
    "per_gpu",
    "kv_heads_per_gpu",
    "kv_elements_per_token_on_gpu",
    "stage_kv_bytes",
]


@record
class Layout:
    """GPUs = tp x pp x dp; ep ranks (1 or tp x dp) hold the experts of a stage."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    redundant_experts: int = 0
    gpus: int = field(init=False)  # tp x pp x dp

    def __post_init__(self) -> None:
        for name in ("tp", "pp", "ep", "dp", "redundant_experts"):
            value, least = plain_number(getattr(self, name)), 0 if name == "redundant_experts" else 1
            if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= MAX_LAYOUT:
                raise InputError(
                    f"{name}: {value!r} must be a whole number from {least} to {MAX_LAYOUT:,}", fields=(name,)
                )
            object.__setattr__(self, name, value)  # numpy's int64 as an int
        object.__setattr__(self, "gpus", self.tp * self.pp * self.dp)


#: The one-GPU layout.
ONE_GPU = Layout()


def layout_label(layout: Layout) -> str:
    """``TP8 EP8``, ``TP4 PP2`` or ``TP1 DP8 EP8``: TP always, then the pipeline stages, the
    data-parallel ranks (of one replica: attention data parallelism) and the expert-parallel ranks
    when above 1."""
    parts = [f"TP{layout.tp}"] + ([f"PP{layout.pp}"] if layout.pp > 1 else [])
    parts += [f"DP{layout.dp}"] if layout.dp > 1 else []
    parts += [f"EP{layout.ep}"] if layout.ep > 1 else []
    return " ".join(parts)


def validate_layout(spec: ModelSpec, layout: Layout) -> None:
    """InputError naming the Layout field (``tp``, ``pp``, ``ep``, ``dp``, ``redundant_experts``)
    when the layout cannot hold the model."""
    for name in ("tp", "pp", "ep", "dp"):
        value = getattr(layout, name)
        if value < 1:
            raise InputError(f"{name}: {value} must be at least 1", fields=(name,))
    check_heads(spec, layout)
    _check_widths(spec, layout)
    if layout.pp > spec.num_hidden_layers:
        raise InputError(f"pp: {layout.pp} stages exceed the {spec.num_hidden_layers} layers", fields=("pp",))
    _check_experts(spec, layout)


def check_heads(spec: ModelSpec, layout: Layout) -> None:
    """InputError naming ``tp`` when it divides neither way the query, KV, linear-attention or
    Mamba-2 heads (or ``pp`` for a Gemma 4 model split over stages)."""
    att = spec.attention
    n_q = att.num_attention_heads
    if n_q % layout.tp:
        raise InputError(f"tp: {layout.tp} does not divide the {n_q} query heads of {spec.name}", fields=("tp",))
    if layout.pp > 1 and (spec.num_kv_shared_layers or spec.per_layer_input_size):
        raise InputError(
            f"pp: {spec.name}'s KV-shared layers and per-layer embeddings (Gemma 4) are modelled on one "
            "pipeline stage; use pp 1",
            fields=("pp",),
        )
    if isinstance(att, GQAAttention):
        for n_kv in sorted({spec.kv_heads_of(t) for t in LayerType if t.caches_kv}):
            if n_kv % layout.tp and layout.tp % n_kv:
                raise InputError(
                    f"tp: {layout.tp} neither divides nor is a multiple of the {n_kv} KV heads", fields=("tp",)
                )
    la = spec.linear_attention
    heads: tuple[int, ...] = (la.state_heads,) if isinstance(la, KimiDeltaAttention) else ()
    if isinstance(la, LinearAttention):
        heads = (la.linear_num_key_heads, la.linear_num_value_heads)
    if any(h % layout.tp for h in heads):
        raise InputError(
            f"tp: {layout.tp} does not divide the linear-attention heads ({', '.join(map(str, heads))})",
            fields=("tp",),
        )
    mamba = spec.mamba
    if mamba is not None and mamba.num_heads % layout.tp:
        raise InputError(f"tp: {layout.tp} does not divide the {mamba.num_heads} Mamba-2 heads", fields=("tp",))


def _check_widths(spec: ModelSpec, layout: Layout) -> None:
    """InputError naming ``tp`` when it does not divide a feed-forward width it splits, or exceeds
    the vocabulary. vLLM's column- and row-parallel linear layers split their width with
    ``divide``, which asserts an exact split (vllm/model_executor/layers/linear.py); its
    vocabulary-parallel embedding and LM head pad the vocabulary instead, but give each rank at
    least one row. Routed experts are split over TP only without EP (with EP each rank holds whole
    experts)."""
    widths = []
    if spec.mlp is not None:
        widths.append(("mlp.intermediate_size", spec.mlp.intermediate_size))
    if spec.moe is not None:
        if layout.ep == 1:
            widths.append(("moe.moe_intermediate_size", spec.moe.moe_intermediate_size))
        if spec.moe.shared_expert_intermediate_size:
            widths.append(("moe.shared_expert_intermediate_size", spec.moe.shared_expert_intermediate_size))
    for name, width in widths:
        if width % layout.tp:
            raise InputError(
                f"tp: {layout.tp} does not divide {spec.name}'s {name} {width:,} (engines split a feed-forward "
                "width evenly over the TP ranks)",
                fields=("tp",),
            )
    if spec.vocab_size < layout.tp:
        raise InputError(
            f"tp: {layout.tp} is more than {spec.name}'s vocab_size {spec.vocab_size:,} (each rank holds at least "
            "one row of the embedding and LM head)",
            fields=("tp",),
        )


def _check_experts(spec: ModelSpec, layout: Layout) -> None:
    """InputError naming ``ep`` / ``redundant_experts`` when the experts cannot be spread: EP on a
    dense model, EP other than 1 or TP x DP, redundant copies without EP or past every rank full,
    expert slots EP does not divide."""
    moe = spec.moe
    if moe is None:
        if layout.ep != 1:
            raise InputError(f"ep: {spec.name} has no experts; ep must be 1", fields=("ep",))
        if layout.redundant_experts:
            raise InputError(
                f"redundant_experts: {spec.name} has no experts; redundant_experts must be 0",
                fields=("redundant_experts",),
            )
        return
    ranks = layout.tp * layout.dp
    if layout.ep not in (1, ranks) and (moe.num_experts + layout.redundant_experts) % layout.ep:
        # a new user's --ep 3 on Mixtral was told to give tp x dp = 3, then refused on its 8 experts
        raise _slots_refusal(moe.num_experts, layout, moe.num_experts * (layout.ep - 1))
    if layout.ep not in (1, ranks):  # an attacker's --ep 8 alone was told to give tp x dp = 1
        raise InputError(
            f"ep: {layout.ep} must be 1 or tp x dp, the ranks of a stage its experts spread over "
            f"({layout.tp} x {layout.dp} = {ranks} here); give a tp and dp whose product is {layout.ep} "
            + (  # the tp given kept where it divides ep (an attacker's --tp 8 --ep 16 was told tp 1)
                f"(e.g. dp {layout.ep // layout.tp} with tp {layout.tp})"
                if layout.ep % layout.tp == 0
                else f"(e.g. dp {layout.ep} with tp 1)"
            )
            + f", or ep {ranks}",
            fields=("ep", "tp", "dp"),
        )
    if layout.redundant_experts and layout.ep == 1:
        raise InputError(
            f"redundant_experts: {layout.redundant_experts} redundant copies need expert parallelism over several "
            "GPUs; give ep above 1 with a tp and dp whose product it is, or redundant_experts 0",
            fields=("redundant_experts", "ep"),
        )
    most = moe.num_experts * (layout.ep - 1)  # every EP rank holding every expert
    if layout.redundant_experts > most:
        raise InputError(
            f"redundant_experts: {layout.redundant_experts:,} is more than {most:,}, the copies that fill every one "
            f"of the {layout.ep} EP ranks with all {moe.num_experts} experts",
            fields=("redundant_experts",),
        )
    slots = moe.num_experts + layout.redundant_experts
    if slots % layout.ep:
        raise _slots_refusal(moe.num_experts, layout, most)


def _slots_refusal(experts: int, layout: Layout, most: int) -> InputError:
    """The refusal of an ``ep`` that does not divide the expert slots, with what would work: the EP
    sizes that do at the layout's ``tp`` (EP is tp x dp, so each is a dp; none is named when none
    does: 131 slots at tp 4), and the redundant experts that fill ``ep`` evenly (fewer or more)."""
    slots, ep, tp = experts + layout.redundant_experts, layout.ep, layout.tp
    fits = [e for e in range(max(2, tp), min(slots, MAX_LAYOUT) + 1, tp) if slots % e == 0][:8]
    sizes = (
        f"EP sizes that do at tp {tp} (dp = EP / tp): {', '.join(map(str, fits))}"
        if fits
        else f"no EP size at tp {tp} does (EP is tp x dp)"
    )
    fewer, more = layout.redundant_experts - slots % ep, layout.redundant_experts - slots % ep + ep
    counts = [str(r) for r in (fewer, more) if 0 <= r <= most]
    plural = "s" if counts != ["1"] else ""
    return InputError(
        f"ep: {ep} does not divide {experts} experts + {layout.redundant_experts} redundant; {sizes}; or "
        f"{' or '.join(counts)} redundant expert{plural} at ep {ep}",
        fields=("ep", "redundant_experts", "tp", "dp"),
    )


def stage_layers(num_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage, as even as possible (earlier stages take the remainder)."""
    base, extra = divmod(num_layers, pp)
    return [base + (1 if i < extra else 0) for i in range(pp)]


def stage_first_layers(num_layers: int, pp: int) -> list[int]:
    """Index of the first layer of each pipeline stage."""
    return [stage_range(num_layers, pp, i).start for i in range(pp)]


def stage_range(num_layers: int, pp: int, stage: int) -> range:
    """The decoder layers pipeline stage ``stage`` holds (the first ``extra`` stages one more)."""
    base, extra = divmod(num_layers, pp)
    first = stage * base + min(stage, extra)
    return range(first, first + base + (1 if stage < extra else 0))


def kv_heads_per_gpu(spec: ModelSpec, tp: int, layer_type: LayerType = LayerType.FULL_ATTENTION) -> int:
    """K/V heads one GPU holds (and attends with) at TP ``tp`` in the softmax layers of
    ``layer_type`` (their own n_kv: :meth:`ModelSpec.kv_heads_of`): n_kv / TP, at least one."""
    return max(1, spec.kv_heads_of(layer_type) // tp)


def kv_elements_per_token_on_gpu(spec: ModelSpec, tp: int, layer_type: LayerType) -> int:
    """Elements one token adds to one ``layer_type`` layer's cache on one GPU at TP ``tp``: the GPU's
    share of the K/V heads (GQA), the whole latent (MLA: it is not split by heads)."""
    per = kv_elements_per_token(spec, layer_type)
    if isinstance(spec.attention, GQAAttention):
        n_kv = spec.kv_heads_of(layer_type)
        return per * kv_heads_per_gpu(spec, tp, layer_type) // n_kv
    return per


def tensor_share(spec: ModelSpec, t: Tensor, layout: Layout) -> Fraction:
    """The fraction of ``t``'s elements (per layer) one GPU holds under ``layout``'s TP and EP."""
    if layout.tp == 1 and layout.ep == 1:
        return Fraction(1)
    rule = t.shard
    if rule.split_by_tp:
        return Fraction(1, layout.tp)
    if rule == ShardRule.KV:
        kind = LayerType.SLIDING_ATTENTION if t.layer_kind == LayerKind.SLIDING_ATTENTION else LayerType.FULL_ATTENTION
        if t.part == Part.MTP and spec.mtp is not None:
            kind = LayerType(spec.mtp.block_layer_type)
        return Fraction(kv_heads_per_gpu(spec, layout.tp, kind), spec.kv_heads_of(kind))
    if rule == ShardRule.EXPERT:
        moe = spec.moe
        assert moe is not None
        if layout.ep > 1:
            return Fraction(moe.num_experts + layout.redundant_experts, moe.num_experts * layout.ep)
        return Fraction(1, layout.tp)
    return Fraction(1)


def tensor_layers_in_stage(spec: ModelSpec, t: Tensor, layout: Layout, stage: int) -> int:
    """How many copies of ``t`` (one per layer holding it) stage ``stage`` holds; tensors outside
    the blocks count 1 on the stage that holds them (embedding, vision tower: the first stage;
    final norm, LM head, MTP modules: the last; an audio tower, as the vision tower, the first), 0
    elsewhere."""
    if layout.pp == 1:  # one stage holds every tensor, each over all the layers that have it
        return max(t.layers, 1)
    last = layout.pp - 1
    if t.part in (Part.VISION, Part.AUDIO) or (t.layers == 0 and t.kind == TensorKind.LOOKUP):
        return max(t.layers, 1) if stage == 0 else 0
    if t.part in (Part.MTP, Part.MTP_COPY) or t.layers == 0:
        return max(t.layers, 1) if stage == last else 0
    return layer_counts(spec, stage_range(spec.num_hidden_layers, layout.pp, stage)).of(t.layer_kind)


@record
class PerGPU:
    """What one GPU of each pipeline stage holds (bytes exact: int, or Fraction for sub-byte
    formats)."""

    stage_layers: list[int]
    weight_bytes: list[int | Fraction]  # per stage
    expert_bytes: list[int | Fraction]  # per stage, the routed-expert part of weight_bytes
    kv_bytes_per_token: list[int | Fraction]  # per stage, per sequence
    kv_heads_per_gpu: int | None  # GQA only
    kv_replication: int  # copies of each KV head across the TP group

    @property
    def max_weight_bytes(self) -> int | Fraction:
        """Weights on the fullest stage's GPU, bytes."""
        return max(self.weight_bytes)


def per_gpu(
    spec: ModelSpec, layout: Layout, weight_bits: int | Fraction = 16, kv_bits: int = 16, mtp: bool = False
) -> PerGPU:
    """Per-GPU weights and KV per token on each stage under ``layout`` (validated first), each
    tensor at its own bits under :class:`llm_cost.model.formats.MixedBits`. MTP
    modules are placed on the last stage only with ``mtp`` (training, or serving with MTP as the
    speculative draft); plain serving does not load them. A tied LM head on another stage than
    the embedding needs its own copy of the matrix."""
    validate_layout(spec, layout)
    bits = weight_bits_of(weight_bits)
    s = build(spec)
    weights, experts = [], []
    for i in range(layout.pp):
        stored = routed = Fraction(0)  # bits
        for t in s.tensors:
            if t.part == Part.MTP_COPY or not t.stored or (t.part == Part.MTP and not mtp):
                continue
            n = tensor_layers_in_stage(spec, t, layout, i)
            if n:
                share = t.per_layer * n * tensor_share(spec, t, layout) * tensor_bits(bits, t)
                stored += share
                routed += share if t.group == TensorGroup.ROUTED_EXPERTS else 0
        if spec.tie_word_embeddings and layout.pp > 1 and i == layout.pp - 1:
            embedding = s.tensors[0]  # the copy a last stage's tied LM head multiplies by
            stored += Fraction(spec.vocab_size * spec.hidden_size, layout.tp) * tensor_bits(bits, embedding)
        weights.append(exact(stored / 8))
        experts.append(exact(routed / 8))

    heads = None
    replication = 1
    if isinstance(spec.attention, GQAAttention):
        n_kv = spec.num_key_value_heads
        heads = kv_heads_per_gpu(spec, layout.tp)
        replication = max(1, layout.tp // n_kv)
    softmax = (LayerType.FULL_ATTENTION, LayerType.SLIDING_ATTENTION, LayerType.CHUNKED_ATTENTION)
    on_gpu = {t: kv_elements_per_token_on_gpu(spec, layout.tp, t) for t in softmax}  # the GPU's share of the heads
    kv = []
    for i in range(layout.pp):
        counts = layer_counts(spec, stage_range(spec.num_hidden_layers, layout.pp, i))
        # KV-shared layers (Gemma 4; one stage: validate_layout) cache nothing of their own
        elements = sum((counts.mixer(t) - spec.kv_shared_count(t)) * on_gpu[t] for t in softmax)
        kv.append(to_bytes(elements, kv_bits) + indexer_layers(spec, counts) * indexer_key_bytes(spec))  # every GPU
    return PerGPU(stage_layers(spec.num_hidden_layers, layout.pp), weights, experts, kv, heads, replication)


def stage_kv_bytes(spec: ModelSpec, layout: Layout, context: int, kv_bits: int = 16) -> list[int | Fraction]:
    """KV cache and fixed state of one sequence of ``context`` tokens on one GPU of each stage:
    full-attention layers keep every token, sliding layers at most W, chunked layers at most C,
    linear-attention and Mamba-2 layers their fixed state (split with the heads over TP). The
    same per-layer rules as :func:`llm_cost.model.kv.kv_bytes`, which this equals at one GPU."""
    att = spec.attention
    window = att.sliding_window if isinstance(att, GQAAttention) else None
    chunk = att.attention_chunk_size if isinstance(att, GQAAttention) else None
    softmax = (LayerType.FULL_ATTENTION, LayerType.SLIDING_ATTENTION, LayerType.CHUNKED_ATTENTION)
    per_token = {t: kv_elements_per_token_on_gpu(spec, layout.tp, t) for t in softmax}
    la_state = sum(linear_state_elements(spec))
    m_state = sum(mamba_state_elements(spec))
    kept = {
        LayerType.FULL_ATTENTION: context,
        LayerType.SLIDING_ATTENTION: min(context, window) if window else context,
        LayerType.CHUNKED_ATTENTION: min(context, chunk) if chunk else context,
    }
    sc_state = sum(short_conv_state_elements(spec))
    state = {
        LayerType.LINEAR_ATTENTION: Fraction(la_state, layout.tp),
        LayerType.MAMBA2: Fraction(m_state, layout.tp),
        LayerType.SHORT_CONV: Fraction(sc_state, layout.tp),
    }
    out = []
    by_mixers: dict[tuple, int | Fraction] = {}  # stages of the same layers weigh the same (most of them)
    for i in range(layout.pp):
        counts = layer_counts(spec, stage_range(spec.num_hidden_layers, layout.pp, i))
        mixers = tuple(counts.mixers.items())
        if mixers not in by_mixers:
            elements = Fraction(0)
            for kind, n in mixers:
                if kind in kept:  # KV-shared layers (Gemma 4; one stage: validate_layout) cache nothing
                    elements += (n - spec.kv_shared_count(kind)) * per_token[kind] * kept[kind]
                else:
                    elements += n * state.get(kind, 0)
            indexed = indexer_layers(spec, counts)
            by_mixers[mixers] = exact(elements * kv_bits / 8) + indexed * context * indexer_key_bytes(spec)
        out.append(by_mixers[mixers])
    return out
