"""Forward-pass FLOPs, operator by operator (seed 000 §八-§九, seed 003 §02, §04-§05).

A forward pass processes ``new_tokens`` tokens per sequence after ``cached`` tokens already in
the cache (prefill: cached = 0; decode: new_tokens = 1). FLOPs are counted as 2 per
multiply-add (``2mnp`` for an [m, n] x [n, p] product):

* weight matmuls: 2 x (weights used) per token, from the tensor list of
  :mod:`llm_cost.structure` (routed experts: k of E per token); the LM head runs on every
  position (``logits="all"``, training and the documents' prefill) or on the last one only;
* softmax attention, per layer: QK^T = 2 n_q d_qk per (query, key) pair and AV = 2 n_q d_v
  per pair. Causal attention has sum_{i=1..s} (cached + i) pairs per sequence (each token sees
  itself and everything before it); ``attention="full"`` counts s x (cached + s) pairs, seed
  000 §八's upper bound. Sliding layers see at most W keys; chunked layers (Llama 4) the
  earlier keys of their own C-token chunk;
* MLA (DeepSeek-V3): the plain form has d_qk = qk_nope + qk_rope and d_v = v_head_dim per head;
  the absorbed decode form works in the latent space: d_qk = kv_lora_rank + qk_rope,
  d_v = kv_lora_rank (seed 003 §04: about 3.4x the plain form's attention FLOPs);
* Gated DeltaNet linear attention: per token and value head, about 6 d_k d_v FLOPs for the
  state read-out, the rank-1 update and the query read-out (an estimate: gates and the short
  convolution's 2 x conv_dim x kernel FLOPs are counted, elementwise activations are not).
* Mamba-2: per token and layer, about 6 H P N FLOPs for the decay, the rank-1 state update
  and the C read-out over the H x P x N state (the same estimate), plus the conv's
  2 x conv_dim x kernel; the recurrent (per-token) form, not the chunked SSD prefill kernel.

Norms, activations, softmax and residual adds are not counted (a few FLOPs per element).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_cost.specs.schema import GQAAttention, MLAAttention, ModelSpec
from llm_cost.model.structure import Structure, build

__all__ = ["OP_NAMES", "Op", "ForwardFlops", "forward_flops", "attention_pairs", "weight_flops_params"]


@dataclass(frozen=True)
class Op:
    """One operator summed over the layers that have it: FLOPs and the weights it reads."""

    name: str
    kind: str  # "matmul" | "attention" | "recurrence"
    group: str  # the structure group of a matmul ("attention", "mlp", "routed_experts", ...); "" otherwise
    layers: int
    flops: float


@dataclass(frozen=True)
class ForwardFlops:
    """FLOPs of one forward pass over ``batch`` sequences."""

    model: str
    batch: int
    new_tokens: int
    cached: int
    attention: str
    logits: str
    mla_form: str
    ops: list[Op]
    linear_flops: float  # weight matmuls in the blocks (per layer x layers)
    attention_flops: float  # QK^T + AV over all layers (plus recurrences)
    lm_head_flops: float
    total_flops: float
    conventions: list[str] = field(default_factory=list)
    num_layers: int = 0  # decoder blocks (the divisor of "per layer" means); 0: unknown


def attention_pairs(new_tokens: int, cached: int, causal: bool, window: int | None = None) -> int:
    """(query, key) pairs of one sequence: each new token i = 1..s sees cached + i keys (causal),
    or all cached + s keys (full); at most ``window`` keys on a sliding layer. Exact integer."""
    s, c = new_tokens, cached
    if not causal:
        keys = c + s
        return s * (min(keys, window) if window else keys)
    if not window or c + s <= window:
        return s * c + s * (s + 1) // 2
    # token i sees min(c + i, W) keys: the first (W - c) tokens grow, the rest are capped
    grow = max(0, min(s, window - c))
    return grow * c + grow * (grow + 1) // 2 + (s - grow) * window


def chunked_pairs(new_tokens: int, cached: int, causal: bool, chunk: int) -> int:
    """(query, key) pairs of one sequence on a chunked-attention layer (Llama 4): the token at
    position p (1-based) sees the ((p - 1) mod C) + 1 tokens of its chunk up to itself (causal);
    ``causal=False`` gives every new token its whole chunk, min(cached + s, C), an upper bound."""
    s, c = new_tokens, cached
    if not causal:
        return s * min(c + s, chunk)

    def upto(n: int) -> int:  # keys seen by positions 1..n
        q, r = divmod(n, chunk)
        return q * chunk * (chunk + 1) // 2 + r * (r + 1) // 2

    return upto(c + s) - upto(c)


def weight_flops_params(structure: Structure, convention: str = "gemm") -> float:
    """Parameters behind "2 x N" weight FLOPs per token under a convention:
    ``gemm`` = active N_gemm (matmul weights; the default), ``non_embedding`` = N less the
    input embedding (seed 003's "8B is 2 x 7.5B"), ``total`` = N (seed 003 §05 and §09 for 70B)."""
    if convention == "gemm":
        return float(structure.active_gemm)
    embedding = sum(t.total for t in structure.tensors if t.part == "decoder" and t.group == "embedding")
    if convention == "non_embedding":
        return float(structure.active_params) - embedding
    if convention == "total":
        return float(structure.active_params)
    raise ValueError(f"unknown weight-FLOPs convention {convention!r}; valid: gemm, non_embedding, total")


OP_NAMES = {"attention": "attention projections", "linear_attention": "linear-attention projections",
            "mlp": "MLP", "router": "router", "routed_experts": "routed experts (k of E)",
            "shared_experts": "shared experts", "lm_head": "LM head"}


def _matmul_ops(structure: Structure, tokens: int, head_tokens: int) -> list[Op]:
    groups: dict[str, list] = {}
    for t in structure.tensors_of("decoder"):
        if t.kind == "matmul":
            groups.setdefault(t.group, []).append(t)
    ops = []
    for group, members in groups.items():
        n = head_tokens if group == "lm_head" else tokens
        active = sum(float(t.active_gemm) for t in members)
        layers = max(t.layers for t in members)
        ops.append(Op(OP_NAMES.get(group, group), "matmul", group, layers, 2 * active * n))
    return ops


def _attention_dims(spec: ModelSpec, mla_form: str) -> tuple[int, int, int]:
    """(heads, d_qk, d_v) of the score computation."""
    att = spec.attention
    if isinstance(att, MLAAttention):
        if mla_form == "absorbed":
            return att.num_attention_heads, att.kv_lora_rank + att.qk_rope_head_dim, att.kv_lora_rank
        return att.num_attention_heads, att.qk_nope_head_dim + att.qk_rope_head_dim, att.v_head_dim
    return att.num_attention_heads, spec.head_dim, spec.head_dim


def forward_flops(spec: ModelSpec, new_tokens: int, cached: int = 0, batch: int = 1, attention: str = "causal",
                  logits: str = "all", mla_form: str = "plain") -> ForwardFlops:
    """FLOPs of one forward pass of ``batch`` sequences, ``new_tokens`` each after ``cached``.

    ``attention`` is "causal" or "full"; ``logits`` "all" or "last"; ``mla_form`` "plain" or
    "absorbed". Raises ValueError for other values."""
    if attention not in ("causal", "full"):
        raise ValueError(f"attention must be causal or full, not {attention!r}")
    if logits not in ("all", "last"):
        raise ValueError(f"logits must be all or last, not {logits!r}")
    if mla_form not in ("plain", "absorbed"):
        raise ValueError(f"mla_form must be plain or absorbed, not {mla_form!r}")
    structure = build(spec)
    tokens = batch * new_tokens
    head_tokens = tokens if logits == "all" else batch
    ops = _matmul_ops(structure, tokens, head_tokens)

    counts = structure.layer_counts["attention"]
    heads, d_qk, d_v = _attention_dims(spec, mla_form)
    att = spec.attention
    window = att.sliding_window if isinstance(att, GQAAttention) else None
    causal = attention == "causal"
    chunk = att.attention_chunk_size if isinstance(att, GQAAttention) else None
    for kind, cap in (("full_attention", None), ("sliding_attention", window), ("chunked_attention", chunk)):
        layers = counts.get(kind, 0)
        if not layers:
            continue
        if kind == "chunked_attention":
            assert chunk is not None
            pairs = chunked_pairs(new_tokens, cached, causal, chunk) * batch
        else:
            pairs = attention_pairs(new_tokens, cached, causal, cap) * batch
        label = {"full_attention": "", "sliding_attention": " (sliding)", "chunked_attention": " (chunked)"}[kind]
        ops.append(Op(f"QK^T{label}", "attention", "", layers, 2 * heads * d_qk * pairs * layers))
        ops.append(Op(f"AV{label}", "attention", "", layers, 2 * heads * d_v * pairs * layers))
    la = spec.linear_attention
    if la is not None and counts.get("linear_attention"):
        layers = counts["linear_attention"]
        conv_dim = 2 * la.linear_num_key_heads * la.linear_key_head_dim + \
            la.linear_num_value_heads * la.linear_value_head_dim
        per_token = 6 * la.linear_num_value_heads * la.linear_key_head_dim * la.linear_value_head_dim \
            + 2 * conv_dim * la.linear_conv_kernel_dim
        ops.append(Op("linear-attention recurrence", "recurrence", "", layers, per_token * tokens * layers))
    m = spec.mamba
    if m is not None and counts.get("mamba2"):
        layers = counts["mamba2"]
        per_token = 6 * m.num_heads * m.head_dim * m.state_size + 2 * m.conv_dim * m.conv_kernel
        ops.append(Op("Mamba-2 state update", "recurrence", "", layers, per_token * tokens * layers))

    lm_head = sum(op.flops for op in ops if op.name == "LM head")
    linear = sum(op.flops for op in ops if op.kind == "matmul") - lm_head
    attention_flops = sum(op.flops for op in ops if op.kind in ("attention", "recurrence"))
    conventions = [
        "2 FLOPs per multiply-add; weight FLOPs = 2 x weights used per token (routed experts: k of E)",
        f"attention: {attention} ({'each token sees itself and all before it' if causal else 'S x S, an upper bound'})",
        f"LM head on {'every position' if logits == 'all' else 'the last position of each sequence'}",
        "norms, activations, softmax and residual adds not counted",
    ]
    if isinstance(att, MLAAttention):
        conventions.append(f"MLA attention in the {mla_form} form")
    return ForwardFlops(spec.name, batch, new_tokens, cached, attention, logits, mla_form, ops, linear,
                        attention_flops, lm_head, linear + attention_flops + lm_head, conventions,
                        spec.num_hidden_layers)
