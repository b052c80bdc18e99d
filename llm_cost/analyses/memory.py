"""What fits in a GPU's memory: weights, KV cache, batch and context limits (seed 003 §02, §04),
and training activation memory per layer (Korthikanti et al. 2022, seed 003 §02).

The memory is counted as :mod:`llm_cost.analyses.capacity` says: by default as a serving engine
sees it (physical capacity x 0.9, less the weights, an activation workspace and a runtime reserve,
the KV cache in 16-token blocks); with :data:`~llm_cost.analyses.capacity.DOCUMENTS` as the
source documents count it (the datasheet's GB as 10^9 B, all of it). What is left after the
resident weights holds the KV cache: B sequences of s tokens need B x kv(s) bytes (kv(s) grows
linearly for full attention, stops at the window for sliding layers, and includes any fixed
linear-attention state).
"""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction

from llm_cost.analyses.capacity import DEPLOYMENT, MemoryPolicy, kv_room, paged_tokens, policy_note, tight_memory_note
from llm_cost.core.choices import ActivationFormula, MemoryConvention, Recompute
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import LayerType, MlpType
from llm_cost.core.units import exact_bits
from llm_cost.model.kv import kv_bytes, kv_bytes_per_token
from llm_cost.model.layers import layer_counts
from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = ["Fit", "fit", "max_context", "Activations", "activation_memory", "op_sac_bytes_per_layer"]


@record
class Concurrency:
    """How many sequences of ``context`` tokens fit beside the weights."""

    context: int
    kv_bytes_per_sequence: int | Fraction
    max_batch: int


@record
class Fit(Result):
    """Weights against memory, and the KV room left, on one GPU."""

    model: str
    gpu: str
    weight_bits: float
    kv_bits: int
    convention: MemoryConvention
    capacity_bytes: int
    utilization: float
    usable_bytes: int  # capacity x utilisation
    workspace_bytes: int
    reserve_bytes: int
    weight_bytes: int | Fraction
    fits: bool
    shortfall_bytes: int | Fraction  # > 0 when the weights, workspace and reserve leave no room
    kv_budget_bytes: int | Fraction  # usable - weights - workspace - reserve (>= 0)
    kv_bytes_per_token: int | Fraction
    block_tokens: int
    token_budget: int | None  # B x s the KV budget holds (full-attention models)
    context: int
    batch: int
    max_batch_at_context: int  # the maximum concurrency at ``context``
    max_context_at_batch: int | None  # None: unbounded (sliding window / linear state only)
    concurrency: list[Concurrency]
    conventions: list[Note] = field(default_factory=list)


def max_context(
    spec: ModelSpec, budget: int | Fraction, batch: int, kv_bits: int, ceiling: int = 10**12, block_tokens: int = 1
) -> int | None:
    """Largest context s with batch x kv(s) <= budget (0 if even s = 1 does not fit), each
    sequence in whole blocks of ``block_tokens``; None when kv stops growing (sliding window,
    linear state) and the plateau fits."""

    def need(s: int) -> int | Fraction:
        return kv_bytes(spec, paged_tokens(s, block_tokens), kv_bits, batch)

    if need(1) > budget:
        return 0
    if need(ceiling) <= budget:
        return None
    lo, hi = 1, ceiling
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if need(mid) <= budget:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _dtypes_note(bits: Fraction, kv_bits: int) -> Note:
    """The note of the weights' and the KV cache's bits (a weight-only format's kept tensors said)."""
    quantized = getattr(bits, "quantized_bits", None)
    if quantized is None:
        return note("fit.dtypes", bits=float(bits), kv_bits=kv_bits)
    kept = str(bits.quantization.kept_dtype)  # type: ignore[attr-defined]
    return note("fit.dtypes", bits=float(bits), kv_bits=kv_bits, quantized=float(quantized), kept_dtype=kept)


def fit(
    spec: ModelSpec,
    gpu: HardwareSpec,
    context: int = 8192,
    batch: int = 1,
    weight_bits: float | Fraction = 16,
    kv_bits: int = 16,
    policy: MemoryPolicy = DEPLOYMENT,
    concurrency_contexts: tuple[int, ...] = (8192, 131072),
) -> Fit:
    """Weights vs memory and the KV room left on one GPU under ``policy``. Pure; never raises
    for valid input."""
    bits = exact_bits(weight_bits)
    room = kv_room(spec, gpu, [context], policy=policy, weight_bits=bits, kv_bits=kv_bits)
    fits = room.kv_budget_bytes > 0
    budget = room.kv_budget_bytes if fits else 0
    block = policy.block_tokens
    per_token = kv_bytes_per_token(spec, kv_bits)
    full_only = layer_counts(spec).mixer(LayerType.FULL_ATTENTION) == spec.num_hidden_layers
    token_budget = int(budget // per_token) if (full_only and per_token) else None
    conc = []
    for c in sorted({*concurrency_contexts, context}):  # the asked context always among them
        per_seq = kv_bytes(spec, paged_tokens(c, block), kv_bits)
        conc.append(Concurrency(c, per_seq, int(budget // per_seq)))
    conventions = [
        policy_note(gpu, policy),
        _dtypes_note(bits, kv_bits),
        *(
            tight_memory_note(
                budget - kv_bytes(spec, paged_tokens(context, block), kv_bits, batch),
                f"batch {batch} x {context:,} tokens",
            )
            if fits
            else []
        ),
        note("fit.whole_sequences", block_tokens=block),
    ] + spec.context_note([context, *(concurrency_contexts if fits else ())])
    longest = max_context(spec, budget, batch, kv_bits, block_tokens=block)
    if longest is not None and longest > spec.max_position_embeddings:
        conventions = [
            *conventions,
            note("fit.beyond_model_context", tokens=longest, limit=spec.max_position_embeddings),
        ]
    return Fit(
        spec.name,
        gpu.name,
        float(bits),
        kv_bits,
        room.convention,
        room.capacity_bytes,
        room.utilization,
        room.usable_bytes,
        room.workspace_bytes,
        room.reserve_bytes,
        room.weight_bytes,
        fits,
        -room.kv_budget_bytes if not fits else 0,
        budget,
        per_token,
        block,
        token_budget,
        context,
        batch,
        room.max_concurrency,
        longest,
        conc,
        conventions,
    )


@record
class Activations(Result):
    """Activation bytes per layer on one GPU for training (16-bit activations)."""

    model: str
    seq: int
    micro_batch: int
    recompute: Recompute
    tp: int
    sequence_parallel: bool
    bytes_per_layer: int | float  # the fullest layer
    quadratic_bytes_per_layer: int | float  # its score-matrix term (a s^2 b terms), 0 when recomputed
    layers: int
    total_bytes: int | float
    formula: str  # the count, as a formula
    method: ActivationFormula


def _block_terms(spec: ModelSpec, mixer: LayerType, moe_layer: bool) -> tuple[Fraction, Fraction, int]:
    """(replicated, TP-sharded, scores) activation terms of a layer with token mixer ``mixer`` and
    an MoE (``moe_layer``) or dense feed-forward, in units of 2 s b bytes per element of width
    (replicated, sharded) and of 2 a s^2 b bytes (scores): the tensors a backward pass needs,
    following Korthikanti et al.'s accounting for a block without dropout."""
    from llm_cost.specs.schema import GQAAttention, KimiDeltaAttention, MLAAttention

    h = spec.hidden_size
    replicated = Fraction(2 * h + spec.norms_per_layer * h)  # attention and MLP inputs, norm inputs
    att = spec.attention
    scores = 0
    if mixer == LayerType.LINEAR_ATTENTION:
        la = spec.linear_attention
        if isinstance(la, KimiDeltaAttention):
            # q, k, v and the output gate, the conv outputs, the out_proj input
            sharded = Fraction(4 * la.width + la.conv_dim + la.width)
        else:
            assert la is not None
            kd = la.linear_num_key_heads * la.linear_key_head_dim
            vd = la.linear_num_value_heads * la.linear_value_head_dim
            sharded = Fraction(2 * kd + 2 * vd + la.conv_dim + vd)  # projections, conv output, out_proj input
    elif isinstance(att, MLAAttention):
        n = att.num_attention_heads
        qk = n * (att.qk_nope_head_dim + att.qk_rope_head_dim)
        sharded = Fraction(
            2 * qk + 2 * n * att.v_head_dim + (att.q_lora_rank or 0) + att.kv_lora_rank + att.qk_rope_head_dim
        )
        scores = 1
    else:
        assert isinstance(att, GQAAttention)
        d_qv = spec.head_dim + spec.v_head_dim  # a query (key) head and a value head
        sharded = Fraction(att.num_attention_heads * d_qv + spec.num_key_value_heads * d_qv)  # Q, o_proj input; K, V
        scores = 1
    if moe_layer:
        moe = spec.moe
        assert moe is not None
        width = moe.num_experts_per_tok * moe.moe_intermediate_size + moe.shared_expert_intermediate_size
        sharded += 3 * width  # gate and up outputs and their product, for every expert a token visits
    else:
        mlp = spec.mlp
        assert mlp is not None
        sharded += (3 if mlp.gated else 2) * mlp.intermediate_size
    return replicated, sharded, scores


#: How the activations' text names the attention scores they keep (a new user read 156 GB at a given
#: MFU beside 61 GiB planned for one layout: the plan keeps none).
SCORES_KEPT = (
    " + 2as^2b scores (Korthikanti et al.'s count, before FlashAttention; the predicted training plan keeps none, "
    "as FlashAttention does)"
)


def activation_memory(
    spec: ModelSpec,
    seq: int,
    micro_batch: int = 1,
    recompute: Recompute = Recompute.NONE,
    tp: int = 1,
    sequence_parallel: bool = False,
    formula: ActivationFormula = ActivationFormula.MODEL,
) -> Activations:
    """Activation memory per layer on one GPU for training with 16-bit activations (Korthikanti
    et al. 2022, "Reducing Activation Recomputation in Large Transformer Models", §4).

    ``ActivationFormula.GPT`` is the paper's GPT block (MHA, a 4h GELU MLP, dropout): no recompute
    s b h (10 + 24/t + 5 a s / (h t)), with sequence parallelism s b h (34/t + 5 a s / (h t));
    t = 1 gives seed 003 §02's s b h (34 + 5 a s / h). ``ActivationFormula.MODEL`` (the default) applies
    the same accounting to the model's own block, without dropout: the attention and MLP inputs and
    the norm inputs (replicated across TP unless sequence-parallel), Q, K, V and the o-projection
    input at their real widths (n_kv heads for K and V; MLA's up-projected heads and latents; a
    linear-attention layer's projections), the MLP's gate/up/product (k routed experts plus shared
    ones for MoE), and for softmax attention the 2 a s^2 b score matrix (none with FlashAttention,
    which recomputes it: the "selective" row). Selective recompute drops the score matrix; full
    recompute keeps each layer's input, 2 s b h (/ t with sequence parallelism).
    InputError for the model's own block of a Mamba-2 or mixer-only model (not modelled)."""
    kept = recompute == Recompute.NONE  # the score matrix is kept (not recomputed)
    weights: list[int]  # layers of each entry of per_layer and scores: one entry per kind of layer
    if formula == ActivationFormula.MODEL and (spec.mamba is not None or layer_counts(spec).mlp(MlpType.NONE)):
        from llm_cost.core.errors import InputError

        raise InputError(
            f"{spec.name}: activation memory of Mamba-2 / mixer-only blocks is not modelled; "
            "give formula gpt for the paper's GPT block, or a transformer model",
            fields=("formula",),
        )
    s, b, h, a, t = seq, micro_batch, spec.hidden_size, spec.attention.num_attention_heads, tp
    L = spec.num_hidden_layers
    sbh = s * b * h
    if recompute == Recompute.FULL:
        per_layer = [Fraction(2 * sbh, t) if sequence_parallel else Fraction(2 * sbh)]
        scores, weights = [Fraction(0)], [L]
        text = "2sbh" + ("/t" if sequence_parallel else "") + " (only the layer input kept)"
    elif formula == ActivationFormula.GPT:
        linear = Fraction(34 * sbh, t) if sequence_parallel else 10 * sbh + Fraction(24 * sbh, t)
        quad = Fraction(5 * a * s * s * b, t) if kept else Fraction(0)
        per_layer, scores, weights = [linear + quad], [quad], [L]
        if t == 1 and not sequence_parallel:
            text = "sbh(34 + 5as/h)" if kept else "34sbh (attention scores recomputed)"
        else:
            where = "sbh(34/t" if sequence_parallel else "sbh(10 + 24/t"
            text = f"{where} + 5as/(ht))" if kept else f"{where}) (attention scores recomputed)"
    else:  # each kind of layer once, weighed by how many layers are of that kind
        per_layer, scores, weights = [], [], []
        for (mixer, mlp), n in layer_counts(spec).pairs.items():
            rep, shard, sc = _block_terms(spec, mixer, mlp == MlpType.MOE)
            linear = 2 * s * b * ((rep + shard) / t if sequence_parallel else rep + shard / t)
            quad = Fraction(2 * a * s * s * b * sc, t) if kept else Fraction(0)
            per_layer.append(linear + quad)
            scores.append(quad)
            weights.append(n)
        text = (
            "the model's block: inputs, norms, Q/K/V/O, MLP"
            + (SCORES_KEPT if kept else " (scores recomputed)")
            + (", all / t (SP)" if sequence_parallel else ", inner tensors / t" if t > 1 else "")
        )
    total = sum((n * x for n, x in zip(weights, per_layer)), Fraction(0))
    exact = lambda x: int(x) if x.denominator == 1 else float(x)  # noqa: E731
    return Activations(
        spec.name,
        s,
        b,
        recompute,
        t,
        sequence_parallel,
        exact(max(per_layer)),
        exact(max(scores)),
        L,
        exact(total),
        text,
        formula,
    )


def _op_sac_width(spec: ModelSpec, moe_layer: bool) -> int:
    """Elements per token one layer keeps under torchtitan's op-level selective activation
    checkpointing (``torchtitan/models/llama3/infra/parallelize.py``: ``_save_list`` of mm and
    the SDPA kernels, "saves output of all compute ops, except every second mm"): the block's
    input, the outputs of its 1st, 3rd, 5th ... matmuls in call order (the structure's tensor
    order: attention projections, then the router and shared experts or the MLP; the routed
    experts' grouped GEMMs are not mm and are recomputed), and the attention kernel's output with
    its FP32 log-sum-exp (2 elements per head)."""
    from llm_cost.core.types import Part, TensorKind
    from llm_cost.model.structure import build

    groups = ("attention", "router", "shared_experts") if moe_layer else ("attention", "mlp")
    widths = [
        int(t.shape[0])
        for t in build(spec).tensors
        if t.part == Part.DECODER and t.kind == TensorKind.MATMUL and t.layers and t.group in groups
        and (t.group != "mlp" or not moe_layer)
    ]  # fmt: skip
    heads = spec.attention.num_attention_heads
    return spec.hidden_size + sum(widths[0::2]) + heads * spec.v_head_dim + 2 * heads


def op_sac_bytes_per_layer(spec: ModelSpec, seq: int, micro_batch: int, tp: int) -> float:
    """Activation bytes of the fullest layer on one GPU under torchtitan's op-level selective
    checkpointing (:func:`_op_sac_width`), 16-bit, with sequence parallelism under TP (every kept
    tensor split over TP, by tokens or by heads)."""
    kinds = {mlp == MlpType.MOE for (_, mlp) in layer_counts(spec).pairs}
    return 2 * seq * micro_batch * max(_op_sac_width(spec, moe) for moe in kinds) / tp
