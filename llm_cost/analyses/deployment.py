"""Multi-GPU layouts: tensor, pipeline, expert and data parallelism (Megatron-LM; vLLM).

Layout: TP x PP x DP GPUs. The sharding plan follows Megatron-LM / vLLM's parallel layers:

* tensor parallelism (TP) splits column-parallel weights (q/k/v, gate/up, MLA q_b/kv_b, the
  linear-attention input projections) by output and row-parallel weights (o, down, out) by
  input; their biases follow (a row-parallel bias is replicated). The embedding and LM head are
  vocabulary-parallel (split by TP). Norms, routers, MLA's small down-projections (q_a, kv_a)
  and other vectors are replicated.
* K/V heads: with TP <= n_kv each GPU holds n_kv / TP heads; with TP > n_kv each GPU holds one
  head, replicated TP / n_kv times (TP must divide or be divided by n_kv). MLA's latent cache
  is replicated on every TP rank.
* pipeline parallelism (PP) splits the L layers into PP stages as evenly as possible (the first
  stages take one more when L % PP != 0); the embedding (and a vision tower) sit on the first
  stage, the final norm, LM head and MTP modules on the last.
* expert parallelism (EP), as vLLM's ``enable_expert_parallel``: EP = TP x DP ranks of a stage
  hold (E + R) / EP whole experts each; with EP = 1 the experts are split by TP like an MLP.
* data parallelism (DP) replicates everything else.

Communication per decode step (bandwidth only, no latency or overlap):
TP all-reduce of the hidden state twice per layer, ring: 2 (TP - 1) / TP x B x d x 2 bytes sent
per GPU; PP: B x d x 2 bytes across each stage boundary; EP all-to-all: B k d (dispatch) and
B k d (combine) bytes per MoE layer, (EP - 1) / EP of them leaving the GPU. Times use the GPU's
per-direction NVLink/xGMI bandwidth within a node and ``network_gb_s`` across nodes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

from llm_cost.model.kv import kv_elements_per_token_per_layer
from llm_cost.analyses.memory import Fit
from llm_cost.specs.schema import CACHING_LAYER_TYPES, GQAAttention, HardwareSpec, ModelSpec
from llm_cost.model.structure import Tensor, build
from llm_cost.core.units import exact_bits, to_bytes
from llm_cost.core.errors import InputError

__all__ = ["Layout", "validate_layout", "stage_layers", "shard_kind", "PerGPU", "per_gpu", "Comm",
           "communication", "Deployment", "deployment", "smallest_layouts", "FitReport"]

#: Sharding plan: the last component of a tensor's module name -> how TP splits it.
_COLUMN = {"q_proj", "k_proj", "v_proj", "gate_proj", "up_proj", "q_b_proj", "kv_b_proj", "in_proj_qkvz",
           "in_proj_ba", "conv1d", "qkv", "fc1", "0"}
_ROW = {"o_proj", "down_proj", "out_proj", "proj", "fc2", "2"}
_HEADWISE = {"dt_bias", "A_log", "sinks"}


@dataclass(frozen=True)
class Layout:
    """GPUs = tp x pp x dp; ep ranks (1 or tp x dp) hold the experts of a stage."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp: int = 1
    redundant_experts: int = 0
    gpus: int = field(init=False)  # tp x pp x dp

    def __post_init__(self) -> None:
        object.__setattr__(self, "gpus", self.tp * self.pp * self.dp)


def validate_layout(spec: ModelSpec, layout: Layout) -> None:
    """InputError naming the flag when the layout cannot hold the model."""
    att = spec.attention
    n_q = att.num_attention_heads
    for flag, value in (("--tp", layout.tp), ("--pp", layout.pp), ("--ep", layout.ep), ("--dp", layout.dp)):
        if value < 1:
            raise InputError(f"{flag}: {value} must be at least 1")
    if n_q % layout.tp:
        raise InputError(f"--tp: {layout.tp} does not divide the {n_q} query heads of {spec.name}")
    if isinstance(att, GQAAttention):
        n_kv = spec.num_key_value_heads
        if n_kv % layout.tp and layout.tp % n_kv:
            raise InputError(f"--tp: {layout.tp} neither divides nor is a multiple of the {n_kv} KV heads")
    la = spec.linear_attention
    if la is not None and (la.linear_num_value_heads % layout.tp or la.linear_num_key_heads % layout.tp):
        raise InputError(f"--tp: {layout.tp} does not divide the linear-attention heads "
                         f"({la.linear_num_key_heads} key, {la.linear_num_value_heads} value)")
    mamba = spec.mamba
    if mamba is not None and mamba.num_heads % layout.tp:
        raise InputError(f"--tp: {layout.tp} does not divide the {mamba.num_heads} Mamba-2 heads")
    if layout.pp > spec.num_hidden_layers:
        raise InputError(f"--pp: {layout.pp} stages exceed the {spec.num_hidden_layers} layers")
    moe = spec.moe
    if moe is None:
        if layout.ep != 1 or layout.redundant_experts:
            raise InputError(f"--ep: {spec.name} has no experts; use --ep 1")
        return
    if layout.ep not in (1, layout.tp * layout.dp):
        raise InputError(f"--ep: expert parallelism spans the TP x DP ranks of a stage, so --ep must be 1 or "
                         f"--tp x --dp = {layout.tp * layout.dp}; raise --tp or --dp to spread experts wider")
    if (moe.num_experts + layout.redundant_experts) % layout.ep:
        raise InputError(f"--ep: {layout.ep} does not divide {moe.num_experts} experts + "
                         f"{layout.redundant_experts} redundant")


def stage_layers(num_layers: int, pp: int) -> list[int]:
    """Layers per pipeline stage, as even as possible (earlier stages take the remainder)."""
    base, extra = divmod(num_layers, pp)
    return [base + (1 if i < extra else 0) for i in range(pp)]


def shard_kind(t: Tensor) -> str:
    """How the sharding plan treats a tensor: column, row, bias-row, kv, vocab, expert, headwise or
    replicated."""
    parts = t.name.split(".")
    leaf, module = parts[-1], parts[-2] if len(parts) > 1 else ""
    if t.group in ("embedding", "lm_head") or module in ("embed_tokens", "head"):
        return "vocab"
    if t.group == "routed_experts":
        return "expert"
    if t.kind == "norm" or t.group == "router" or module in ("q_a_proj", "kv_a_proj_with_mqa", "shared_expert_gate",
                                                               "patch_embed", "eh_proj", "embed_positions"):
        return "replicated"
    if leaf in _HEADWISE:
        return "headwise"
    if module in ("k_proj", "v_proj"):
        return "kv"
    if module in _COLUMN:
        return "column"
    if module in _ROW:
        return "row-bias" if leaf == "bias" else "row"
    return "replicated"


def _tensor_bytes_per_gpu(spec: ModelSpec, t: Tensor, layers: int, layout: Layout, bits: Fraction) -> float:
    """Bytes of ``t`` on one GPU holding ``layers`` of its layers."""
    kind = shard_kind(t)
    elements = Fraction(t.numel * t.copies * max(layers, 1))
    if kind in ("column", "row", "vocab", "headwise"):
        elements /= layout.tp
    elif kind == "kv":
        n_kv = spec.num_key_value_heads
        elements = elements * Fraction(max(1, n_kv // layout.tp), n_kv)
    elif kind == "expert":
        moe = spec.moe
        assert moe is not None
        if layout.ep > 1:
            elements = elements * Fraction(moe.num_experts + layout.redundant_experts, moe.num_experts) / layout.ep
        else:
            elements /= layout.tp
    return float(elements * bits / 8)


@dataclass(frozen=True)
class PerGPU:
    """What one GPU of each pipeline stage holds."""

    stage_layers: list[int]
    weight_bytes: list[float]  # per stage
    expert_bytes: list[float]  # per stage, the routed-expert part of weight_bytes
    lookup_bytes: list[float]  # per stage, embedding tables (a step reads one row per token, not the table)
    kv_bytes_per_token: list[float]  # per stage, per sequence
    kv_heads_per_gpu: int | None  # GQA only
    kv_replication: int  # copies of each KV head across the TP group

    @property
    def max_weight_bytes(self) -> float:
        """Weights on the fullest stage's GPU, bytes."""
        return max(self.weight_bytes)


def per_gpu(spec: ModelSpec, layout: Layout, weight_bits: float | Fraction = 16, kv_bits: int = 16,
            mtp: bool = False) -> PerGPU:
    """Per-GPU weights and KV per token on each stage under ``layout`` (validated first). MTP
    modules are placed on the last stage only with ``mtp`` (training, or serving with MTP as the
    speculative draft); plain serving does not load them."""
    validate_layout(spec, layout)
    bits = exact_bits(weight_bits)
    s = build(spec)
    L = spec.num_hidden_layers
    stages = stage_layers(L, layout.pp)
    first_layer = [sum(stages[:i]) for i in range(layout.pp)]
    weights, experts, lookups = [], [], []
    for i, n in enumerate(stages):
        total = routed = lookup = 0.0
        for t in s.tensors:
            if t.part == "mtp_copy" or not t.stored or (t.part == "mtp" and not mtp):
                continue
            if t.part == "vision" or (t.part == "decoder" and t.layers == 0 and t.group in (
                    "embedding", "position_embedding")):
                if i == 0:
                    share = _tensor_bytes_per_gpu(spec, t, t.layers, layout, bits)
                    total += share
                    lookup += share if t.kind == "lookup" else 0.0
                continue
            if t.part == "mtp" or (t.part == "decoder" and t.layers == 0):
                if i == layout.pp - 1:
                    total += _tensor_bytes_per_gpu(spec, t, t.layers, layout, bits)
                continue
            # a per-layer tensor: the share of its layers that fall in this stage
            layer_ids = _layers_of(spec, t)
            mine = sum(1 for j in layer_ids if first_layer[i] <= j < first_layer[i] + n)
            if mine:
                share = _tensor_bytes_per_gpu(spec, t, mine, layout, bits)
                total += share
                routed += share if t.group == "routed_experts" else 0.0
        if spec.tie_word_embeddings and layout.pp > 1 and i == layout.pp - 1:
            # a tied LM head on another stage needs its own copy of the embedding matrix
            total += float(Fraction(spec.vocab_size * spec.hidden_size, layout.tp) * bits / 8)
        weights.append(total)
        experts.append(routed)
        lookups.append(lookup)

    att = spec.attention
    per_layer = kv_elements_per_token_per_layer(spec)
    heads = None
    replication = 1
    if isinstance(att, GQAAttention):
        n_kv = spec.num_key_value_heads
        heads = max(1, n_kv // layout.tp)
        replication = max(1, layout.tp // n_kv)
        per_layer = per_layer * heads // n_kv  # the GPU's share of the K/V heads
    kv = []
    for i, n in enumerate(stages):
        layer_ids = range(first_layer[i], first_layer[i] + n)
        caching = sum(1 for j in layer_ids if spec.layer_type(j) in CACHING_LAYER_TYPES)
        kv.append(float(to_bytes(caching * per_layer, kv_bits)))
    return PerGPU(stages, weights, experts, lookups, kv, heads, replication)


def _layers_of(spec: ModelSpec, t: Tensor) -> list[int]:
    """Indices of the decoder layers that hold tensor ``t``, from its layer kind."""
    L = spec.num_hidden_layers
    if t.layer_kind in ("dense", "moe"):
        return [i for i in range(L) if spec.mlp_kind(i) == t.layer_kind]
    if t.layer_kind in ("linear_attention", "mamba2"):
        return [i for i in range(L) if spec.layer_type(i) == t.layer_kind]
    if t.layer_kind == "full_attention":  # every softmax-attention layer (full or sliding)
        return [i for i in range(L) if spec.layer_type(i) in CACHING_LAYER_TYPES]
    return list(range(L))


@dataclass(frozen=True)
class Comm:
    """Bytes one GPU sends per decode step, and the time at the link's bandwidth."""

    tp_allreduce_bytes: float
    pp_bytes: float
    ep_all_to_all_bytes: float
    link: str
    link_gb_s: float
    time_s: float


def communication(spec: ModelSpec, layout: Layout, gpu: HardwareSpec, batch: int, tokens: int = 1,
                  network_gb_s: float = 50.0, dispatch_bits: int = 8, combine_bits: int = 16) -> Comm:
    """Per-GPU traffic of one step of ``batch`` sequences x ``tokens`` tokens (1 for decode)."""
    d = spec.hidden_size
    n = batch * tokens
    layers = max(stage_layers(spec.num_hidden_layers, layout.pp))
    tp = layout.tp
    allreduce = 2 * layers * (2 * (tp - 1) / tp) * n * d * 2 if tp > 1 else 0.0
    pp = n * d * 2 if layout.pp > 1 else 0.0
    ep = 0.0
    if spec.moe is not None and layout.ep > 1:
        moe_layers = sum(1 for i in range(spec.num_hidden_layers) if spec.is_moe_layer(i)) / layout.pp
        k = spec.moe.num_experts_per_tok
        ep = moe_layers * n * k * d * (dispatch_bits + combine_bits) / 8 * (layout.ep - 1) / layout.ep / layout.ep
    within_node = layout.tp * layout.dp <= gpu.interconnect.gpus_per_node and \
        gpu.interconnect.bandwidth_gb_s_per_direction > 0
    if within_node:
        link, bw = gpu.interconnect.type, gpu.interconnect.bandwidth_gb_s_per_direction
    else:
        link, bw = "network", network_gb_s
    total = allreduce + pp + ep
    return Comm(allreduce, pp, ep, link, bw, total / (bw * 1e9) if total else 0.0)


@dataclass(frozen=True)
class Deployment:
    """A model on ``layout`` x ``gpu``: memory per GPU and the decode bound with communication."""

    model: str
    gpu: str
    layout: Layout
    weight_bits: float
    kv_bits: int
    batch: int
    context: int
    memory_bytes: int
    reserve_bytes: int
    per_gpu: PerGPU
    kv_bytes_per_gpu: float  # the fullest stage, batch x context tokens
    used_bytes: float  # weights + KV on the fullest GPU
    headroom_bytes: float
    fits: bool
    compute_s: float
    memory_s: float
    compute_bound_s: float  # per-GPU Roofline bound summed over the stages
    comm: Comm
    step_s: float
    dominant: str
    conventions: list[str] = field(default_factory=list)


def deployment(spec: ModelSpec, gpu: HardwareSpec, layout: Layout, batch: int = 1, context: int = 8192,
               weight_bits: float | Fraction = 16, kv_bits: int = 16, reserve_bytes: int = 0, dtype: str = "bf16",
               network_gb_s: float = 50.0) -> Deployment:
    """Per-GPU memory and the decode-step bound of ``spec`` on ``layout``.

    The decode bound: each stage runs max(its FLOPs / TP / peak, its bytes per GPU / bandwidth),
    stages one after another for one token; communication is added (no overlap)."""
    from llm_cost.workload.flops import forward_flops
    from llm_cost.analyses.moe import expected_experts
    from llm_cost.analyses.roofline import peak_flops

    p = per_gpu(spec, layout, weight_bits, kv_bits)
    peak = peak_flops(gpu, dtype)
    bw = gpu.bandwidth_bytes_s
    mla_form = "absorbed" if spec.attention.kind == "mla" else "plain"  # as llm_cost.roofline's decode step
    f = forward_flops(spec, 1, context, batch, logits="last", mla_form=mla_form).total_flops / layout.dp
    seqs = math.ceil(batch / layout.dp)
    stage_share = [n / spec.num_hidden_layers for n in p.stage_layers]
    moe = spec.moe
    hit = expected_experts(moe.num_experts, moe.num_experts_per_tok, seqs) / moe.num_experts if moe else 1.0
    # read per step, as llm_cost.roofline: every matmul weight and vector, the expected share of
    # the routed experts, and one embedding row per sequence instead of the embedding table
    row = float(Fraction(weight_bits).limit_denominator(1000)) / 8 * spec.hidden_size * seqs
    read = [w - e + e * hit - lk + (row if lk else 0.0)
            for w, e, lk in zip(p.weight_bytes, p.expert_bytes, p.lookup_bytes)]
    compute = sum(f * share / layout.tp / peak for share in stage_share)
    memory = sum((w + seqs * context * k) / bw for w, k in zip(read, p.kv_bytes_per_token))
    bound = sum(max(f * share / layout.tp / peak, (w + seqs * context * k) / bw)
                for share, w, k in zip(stage_share, read, p.kv_bytes_per_token))
    comm = communication(spec, layout, gpu, seqs, 1, network_gb_s)
    kv_gpu = max(seqs * context * k for k in p.kv_bytes_per_token)
    used = max(w + seqs * context * k for w, k in zip(p.weight_bytes, p.kv_bytes_per_token))
    headroom = gpu.memory_bytes - reserve_bytes - used
    step = bound + comm.time_s
    dominant = "communication" if comm.time_s > bound else ("compute" if compute >= memory else "memory")
    conventions = [
        f"layout TP {layout.tp} x PP {layout.pp} x DP {layout.dp} = {layout.gpus} GPUs, EP {layout.ep}; "
        "sharding as Megatron-LM/vLLM (see llm_cost.parallel); MTP modules not loaded",
        f"weights at {float(Fraction(weight_bits).limit_denominator(1000)):g} bits, KV at {kv_bits} bits; "
        f"memory {gpu.memory_gb:g} GB per GPU less {reserve_bytes:,} B reserve",
        "decode step: per-stage Roofline bound (FLOPs / TP / peak vs bytes per GPU / bandwidth) summed over the "
        "stages, plus communication at link bandwidth (no overlap, no latency); a step reads every matmul weight "
        "and vector, the expected share of the routed experts, E(1 - (1 - k/E)^B) / E, and one embedding row per "
        "sequence",
    ]
    return Deployment(spec.name, gpu.name, layout, float(Fraction(weight_bits).limit_denominator(1000)), kv_bits,
                      batch, context, gpu.memory_bytes, reserve_bytes, p, kv_gpu, used, headroom, headroom >= 0,
                      compute, memory, bound, comm, step, dominant, conventions)


def _divisors(n: int) -> list[int]:
    return [k for k in range(1, n + 1) if n % k == 0]


def smallest_layouts(spec: ModelSpec, gpu: HardwareSpec, batch: int = 1, context: int = 8192,
                     weight_bits: float | Fraction = 16, kv_bits: int = 16, reserve_bytes: int = 0,
                     max_gpus: int = 64, dtype: str = "bf16", limit: int = 8, sizes: int = 3) -> list[Deployment]:
    """Feasible inference layouts (DP = 1) of the ``sizes`` smallest GPU counts that work, fewest
    GPUs first, then fastest decode; at most ``limit``.

    TP ranges over divisors of the query heads up to the GPUs of one node; PP over 1..L; EP over
    1 and TP for MoE models. Returns [] when nothing fits within ``max_gpus``."""
    n_q = spec.attention.num_attention_heads
    candidates: list[Deployment] = []
    counts: list[int] = []
    tps = [t for t in _divisors(n_q) if t <= max(1, gpu.interconnect.gpus_per_node)]
    for total in range(1, max_gpus + 1):
        if len(counts) == sizes:
            break
        for tp in tps:
            if total % tp or total // tp > spec.num_hidden_layers:
                continue
            for ep in ([1] if spec.moe is None else sorted({1, tp})):
                try:
                    dep = deployment(spec, gpu, Layout(tp, total // tp, ep, 1), batch, context, weight_bits, kv_bits,
                                     reserve_bytes, dtype)
                except InputError:
                    continue
                if dep.fits:
                    candidates.append(dep)
                    if not counts or counts[-1] != total:
                        counts.append(total)
    candidates.sort(key=lambda d: (d.layout.gpus, d.step_s))
    return candidates[:limit]


@dataclass(frozen=True)
class FitReport:
    """``llm-cost fit``: one GPU's capacity and the smallest layouts, or one given layout."""

    single_gpu: Fit | None
    smallest_layouts: list[Deployment]
    max_gpus: int
    deployment: Deployment | None
