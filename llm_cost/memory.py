"""What fits in a GPU's memory: weights, KV cache, batch and context limits (seed 003 §02, §04),
and training activation memory per layer (Korthikanti et al. 2022, seed 003 §02).

Capacity is the datasheet's ``memory_gb`` x 10^9 bytes less an optional reserve (runtime,
activations, fragmentation: ``--reserve-gb``). What is left after the resident weights holds
the KV cache: B sequences of s tokens need B x kv(s) bytes (kv(s) grows linearly for full
attention, stops at the window for sliding layers, and includes any fixed linear-attention
state).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

from .kv import kv_bytes, kv_bytes_per_token
from .spec import HardwareSpec, ModelSpec
from .structure import build
from .units import to_bytes

__all__ = ["Fit", "fit", "max_context", "Activations", "activation_memory"]


@dataclass(frozen=True)
class Concurrency:
    """How many sequences of ``context`` tokens fit beside the weights."""

    context: int
    kv_bytes_per_sequence: int | float
    max_batch: int


@dataclass(frozen=True)
class Fit:
    """Weights against memory, and the KV room left."""

    model: str
    gpu: str
    weight_bits: float
    kv_bits: int
    memory_bytes: int
    reserve_bytes: int
    weight_bytes: int | float
    fits: bool
    shortfall_bytes: int | float  # > 0 when the weights alone do not fit
    kv_budget_bytes: int | float  # memory - reserve - weights (>= 0)
    kv_bytes_per_token: int | float
    token_budget: int | None  # B x s the KV budget holds (full-attention models)
    context: int
    batch: int
    max_batch_at_context: int
    max_context_at_batch: int | None  # None: unbounded (sliding window / linear state only)
    concurrency: list[Concurrency]
    conventions: list[str] = field(default_factory=list)


def max_context(spec: ModelSpec, budget: float, batch: int, kv_bits: int, ceiling: int = 10**12) -> int | None:
    """Largest context s with batch x kv(s) <= budget (0 if even s = 1 does not fit); None when
    kv stops growing (sliding window, linear state) and the plateau fits."""
    def need(s: int) -> float:
        return float(kv_bytes(spec, s, kv_bits, batch))

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


def fit(spec: ModelSpec, gpu: HardwareSpec, context: int = 8192, batch: int = 1,
        weight_bits: float | Fraction = 16, kv_bits: int = 16, reserve_bytes: int = 0,
        concurrency_contexts: tuple[int, ...] = (8192, 131072)) -> Fit:
    """Weights vs memory and the KV room left on one GPU. Pure; never raises for valid input."""
    bits = Fraction(weight_bits).limit_denominator(1000)
    weights = to_bytes(build(spec).total_params, bits)
    memory = gpu.memory_bytes
    room = memory - reserve_bytes - weights
    fits = room > 0
    budget = room if fits else 0
    per_token = kv_bytes_per_token(spec, kv_bits)
    full_only = all(spec.layer_type(i) == "full_attention" for i in range(spec.num_hidden_layers))
    token_budget = int(budget // per_token) if (full_only and per_token) else None
    at_context = kv_bytes(spec, context, kv_bits)
    conc = [Concurrency(c, kv_bytes(spec, c, kv_bits), int(budget // kv_bytes(spec, c, kv_bits)))
            for c in concurrency_contexts]
    conventions = [
        f"memory {gpu.memory_gb:g} GB = {memory:,} B (datasheet, 10^9 B per GB) less a reserve of {reserve_bytes:,} B",
        f"weights: every parameter at {float(bits):g} bits; KV at {kv_bits} bits per element",
        "max batch and context use whole sequences: batch x kv(context) <= memory - reserve - weights",
    ] + spec.context_note([context, *(concurrency_contexts if fits else ())])
    return Fit(spec.name, gpu.name, float(bits), kv_bits, memory, reserve_bytes, weights, fits,
               -room if not fits else 0, budget, per_token, token_budget, context, batch,
               int(budget // at_context) if at_context else 0,
               max_context(spec, budget, batch, kv_bits), conc, conventions)


@dataclass(frozen=True)
class Activations:
    """Activation bytes per layer on one GPU for training (16-bit activations)."""

    model: str
    seq: int
    micro_batch: int
    recompute: str
    tp: int
    sequence_parallel: bool
    bytes_per_layer: int | float
    quadratic_bytes_per_layer: int | float  # the 5 a s^2 b / t term (scores, softmax, dropout mask)
    layers: int
    total_bytes: int | float
    formula: str


def activation_memory(spec: ModelSpec, seq: int, micro_batch: int = 1, recompute: str = "none", tp: int = 1,
                      sequence_parallel: bool = False) -> Activations:
    """Activation memory of one layer on one GPU, Korthikanti et al. 2022 ("Reducing Activation
    Recomputation in Large Transformer Models", §4): with 16-bit activations, h = hidden_size,
    a = attention heads, t = tensor-parallel size,

    * no recompute: s b h (10 + 24/t + 5 a s / (h t)); with sequence parallelism
      s b h (34/t + 5 a s / (h t)) (t = 1: s b h (34 + 5 a s / h), seed 003 §02);
    * selective recompute drops the 5 a s / (h t) attention term;
    * full recompute keeps each layer's input: 2 s b h (/ t with sequence parallelism).

    The formula is the paper's for a GPT block (multi-head attention, a 4h GELU MLP, dropout); a
    SwiGLU/GQA block (Llama) stores a different mix (no dropout masks, K/V of n_kv heads, a
    3 x d_ff gated MLP), so for those models it is an approximation.
    ValueError for an unknown recompute mode."""
    s, b, h, a, t = seq, micro_batch, spec.hidden_size, spec.attention.num_attention_heads, tp
    sbh = s * b * h
    quadratic = Fraction(5 * a * s * s * b, t)
    linear = Fraction(34 * sbh, t) if sequence_parallel else 10 * sbh + Fraction(24 * sbh, t)
    where = "sbh(34/t" if sequence_parallel else "sbh(10 + 24/t"
    if recompute == "none":
        per, formula = linear + quadratic, f"{where} + 5as/(ht))"
    elif recompute == "selective":
        per, formula, quadratic = linear, f"{where}) (attention scores recomputed)", Fraction(0)
    elif recompute == "full":
        per = Fraction(2 * sbh, t) if sequence_parallel else Fraction(2 * sbh)
        formula, quadratic = "2sbh" + ("/t" if sequence_parallel else "") + " (only the layer input kept)", Fraction(0)
    else:
        raise ValueError(f"recompute must be none, selective or full, not {recompute!r}")
    if t == 1 and not sequence_parallel and recompute != "full":
        formula = "sbh(34 + 5as/h)" if recompute == "none" else "34sbh (attention scores recomputed)"
    L = spec.num_hidden_layers
    exact = lambda x: int(x) if x.denominator == 1 else float(x)  # noqa: E731
    return Activations(spec.name, s, b, recompute, t, sequence_parallel, exact(per), exact(quadratic), L,
                       exact(per * L), formula)
