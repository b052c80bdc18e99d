"""Mixture-of-experts: three parameter counts, expert traffic, expert parallelism (seed 003 §06).

* Total parameters set the memory; active parameters (k of E routed experts per token) set the
  FLOPs; the parameters read per decode step set the bandwidth.
* With E routed experts, top-k routing and B tokens routed independently and uniformly (the
  document's assumption; load-balanced routers approach it), a MoE layer touches on average
  E(1 - (1 - k/E)^B) distinct experts: k at B = 1, nearly all E at moderate B.
* Expert parallelism (EP) over n GPUs puts (E + R)/n experts on each (R redundant copies of hot
  experts), replicating every non-expert weight.
* Each MoE layer sends every token's hidden state to its k experts and back: all-to-all dispatch
  k d bytes-per-element and combine k d (k l for a latent MoE, which projects the token to its
  latent width l first), against a tensor-parallel ring all-reduce of one hidden state,
  2 (n-1)/n d bytes. Under EP over n GPUs, (n-1)/n of the copies go to another GPU (uniform
  routing); the rest stay on the sender's.
* In a step of T tokens the experts that run get T k / E[distinct] rows each (T k / E once every
  expert is hit); with b bytes per weight an expert GEMM does 2 x rows / b FLOP per weight byte,
  so it reaches a ridge R only when T >= R b / 2 x E / k tokens per layer.
"""

from __future__ import annotations

from dataclasses import field
from fractions import Fraction

from llm_cost.core.errors import InputError
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Dtype, LayerKind, MlpType, OpRole, Part, TensorGroup, TensorKind
from llm_cost.core.units import Number, exact, to_bytes
from llm_cost.model.formats import tensor_bits, weight_bits_of
from llm_cost.model.layers import layer_counts
from llm_cost.model.layout import Layout, per_gpu
from llm_cost.model.structure import Structure, build
from llm_cost.perf.ridge import ridge as ridge_of
from llm_cost.specs.schema import HardwareSpec, ModelSpec, MoE
from llm_cost.workload.routing import expected_experts
from llm_cost.workload.step import build_step, decode, ring_all_reduce_bytes

__all__ = ["MoEAtBatch", "MoEResult", "moe_analysis", "require_moe"]


@record
class MoEAtBatch:
    """Expert traffic of one decode step of ``batch`` tokens."""

    batch: int
    expected_experts: float  # distinct routed experts per MoE layer
    expected_experts_per_rank: float  # on one EP rank
    routed_bytes: float  # routed expert weights read, all MoE layers
    weight_bytes_read: Number  # matmul weights used + vectors + B embedding rows
    weight_bytes_seed: float  # seed 003: every non-routed parameter + the expected experts
    dense_same_memory_bytes: Number  # a dense model of the same total reads all of it (exact)
    expert_gemm_rows: float  # rows per expert that runs: B k / E[distinct]
    expert_gemm_intensity_flop_per_byte: float  # FLOP per weight byte of an expert that runs


@record
class MoEResult(Result):
    """The MoE view of one model at a weight dtype."""

    model: str
    weight_bits: float
    num_experts: int
    top_k: int
    moe_layers: int
    expert_params: int  # one routed expert in one layer
    total_params: int
    active_params: int
    active_n_gemm: int  # matmul weights one token uses
    weight_flops_per_token: int  # 2 x active_n_gemm
    non_routed_params: int
    routed_params: int
    total_bytes: Number  # exact: an int when whole
    rows: list[MoEAtBatch]
    ep: int
    redundant_experts: int
    experts_per_rank: int
    weights_per_gpu_bytes: Number
    dispatch_bits: int
    combine_bits: int
    dispatch_bytes_per_token_per_layer: int
    combine_bytes_per_token_per_layer: int
    tp: int
    allreduce_bytes_per_token_per_layer: Number  # exact
    all_to_all_vs_allreduce: float | None  # None at TP 1: there is no all-reduce to compare with
    prompt_tokens: int
    prompt_all_to_all_bytes: float  # dispatch + combine over every MoE layer
    #: Of those, the share whose expert is on another GPU under EP over ``ep`` GPUs, (EP - 1)/EP with
    #: uniform routing (a copy bound for the sender's own experts stays on it): what the links carry
    #: (a MoE user found the volume taken as all remote)
    all_to_all_remote_share: float
    prompt_all_to_all_remote_bytes: Number  # exact
    gpu: str | None
    compute_dtype: Dtype | None
    ridge_flop_per_byte: float | None
    tokens_to_pass_ridge: float | None  # per MoE layer
    experts_per_top_k: float  # E / k: how much more work than a dense layer a ridge-passing GEMM needs
    conventions: list[Note] = field(default_factory=list)


def _ridge(
    gpu: HardwareSpec | None, compute_dtype: Dtype | None, bytes_per_weight: float, experts_per_top_k: float
) -> tuple[Dtype | None, float | None, float | None]:
    """(compute dtype, the GPU's ridge in FLOP/byte, the tokens per MoE layer whose expert GEMMs
    pass it: ridge x bytes per weight / 2 x E / k), all None without a GPU."""
    if gpu is None:
        return compute_dtype, None, None
    dtype = compute_dtype or Dtype.BF16  # the API resolves it (llm_cost.api.choices.compute_dtype)
    ridge = ridge_of(gpu, dtype)
    return dtype, ridge, ridge * bytes_per_weight / 2 * experts_per_top_k


def require_moe(spec: ModelSpec) -> MoE:
    """The model's MoE; InputError naming model for a model without MoE layers."""
    moe = spec.moe
    if moe is None or not layer_counts(spec).mlp(MlpType.MOE):
        raise InputError(
            f"model: {spec.name} has no mixture-of-experts layers; give a MoE model (e.g. mixtral-8x7b)",
            fields=("model",),
        )
    return moe


def _checked(spec: ModelSpec, ep: int, redundant_experts: int, tp: int) -> MoE:
    """The model's MoE; InputError for a dense model, an ``ep`` that does not divide the experts
    and redundant copies, or ``tp`` below 1."""
    moe = require_moe(spec)
    E = moe.num_experts
    if redundant_experts and ep == 1:  # moe's ranks are its EP alone: no tp x dp to speak of (an attacker)
        raise InputError(
            f"redundant_experts: {redundant_experts} redundant copies need expert parallelism; give ep above 1 "
            f"(a divisor of the {E} experts + {redundant_experts} copies), or redundant_experts 0",
            fields=("redundant_experts", "ep"),
        )
    if ep < 1 or (E + redundant_experts) % ep:
        raise InputError(
            f"ep: {ep} GPUs cannot hold {E} experts + {redundant_experts} redundant evenly; "
            f"choose a divisor of {E + redundant_experts}",
            fields=("ep",),
        )
    if tp < 1:
        raise InputError(f"tp: {tp} must be at least 1", fields=("tp",))
    return moe


def _weight_bytes(s: Structure, bits: Fraction) -> tuple[float, float]:
    """(bytes per routed-expert weight, what an expert GEMM reads; bytes of every stored weight but
    the routed experts') of the model's structure ``s`` at ``bits``."""
    main = [t for t in s.tensors if t.part in (Part.DECODER, Part.VISION, Part.AUDIO) and t.stored]
    experts = [t for t in main if t.group == TensorGroup.ROUTED_EXPERTS and t.kind == TensorKind.MATMUL]
    b = float(tensor_bits(bits, experts[0])) / 8  # bytes per routed-expert weight: what an expert GEMM reads
    non_routed_bytes = (
        float(sum(t.total * tensor_bits(bits, t) for t in main if t.group != TensorGroup.ROUTED_EXPERTS)) / 8
    )
    return b, non_routed_bytes


def _at_batch(
    spec: ModelSpec, B: int, E: int, k: int, ep: int, bits: Fraction, b: float, non_routed_bytes: float, total: int
) -> MoEAtBatch:
    """The expert traffic of one decode step at batch ``B``: experts hit (per EP rank), the bytes
    read, and each running expert's GEMM rows and intensity."""
    hit = expected_experts(E, k, B)
    step = build_step(spec, decode(B, 0), weight_bits=bits)
    routed_b = sum(float(op.weight_bytes) for op in step.ops if op.role == OpRole.ROUTED_EXPERTS)
    return MoEAtBatch(
        batch=B,
        expected_experts=hit,
        expected_experts_per_rank=hit / ep,
        routed_bytes=routed_b,
        weight_bytes_read=step.total("weight_bytes"),
        weight_bytes_seed=non_routed_bytes + routed_b,
        dense_same_memory_bytes=to_bytes(total, bits),
        expert_gemm_rows=B * k / hit,
        expert_gemm_intensity_flop_per_byte=2 * (B * k / hit) / b,
    )


def _notes(
    bits: Fraction, E: int, ep: int, redundant_experts: int, dispatch_bits: int, combine_bits: int, tp: int,
    gpu: HardwareSpec | None, compute_dtype: Dtype | None,
) -> list[Note]:  # fmt: skip
    """The conventions of an MoE analysis: weights, expected experts, bytes read, EP, all-to-all,
    and the expert GEMMs' ridge on a GPU."""
    conventions = [
        note("moe.weights", bits=float(bits)),
        note("moe.expected_experts"),
        note("moe.read_per_step"),
        note("moe.ep", ep=ep, experts=E, redundant=redundant_experts),
        note("moe.all_to_all", dispatch_bits=dispatch_bits, combine_bits=combine_bits, tp=tp),
    ]
    if gpu is not None:
        conventions.append(note("moe.gemm_ridge", gpu=gpu.name, dtype=str(compute_dtype)))
    return conventions


def moe_analysis(
    spec: ModelSpec,
    batches: list[int],
    weight_bits: float | Fraction = 16,
    ep: int = 1,
    redundant_experts: int = 0,
    dispatch_bits: int = 8,
    combine_bits: int = 16,
    tp: int = 8,
    prompt_tokens: int = 4096,
    gpu: HardwareSpec | None = None,
    compute_dtype: Dtype | None = None,
) -> MoEResult:
    """Three parameter counts, expert traffic per batch, EP memory and all-to-all volume.

    InputError when the model has no MoE, when ``ep`` does not divide E + R experts, or for a
    GPU lacking ``compute_dtype``."""
    moe = _checked(spec, ep, redundant_experts, tp)
    E, k, d = moe.num_experts, moe.num_experts_per_tok, spec.hidden_size
    bits = weight_bits_of(weight_bits, limit=True)
    s = build(spec)
    b, non_routed_bytes = _weight_bytes(s, bits)
    moe_layers = layer_counts(spec).of(LayerKind.MOE)
    routed = s.routed_expert_params
    expert = routed // (E * moe_layers)
    total = s.total_params
    non_routed = total - routed
    per_rank = (E + redundant_experts) // ep  # whole: _checked refuses an ep that does not divide them

    compute_dtype, ridge, tokens = _ridge(gpu, compute_dtype, b, E / k)

    rows = [_at_batch(spec, B, E, k, ep, bits, b, non_routed_bytes, total) for B in batches]
    sent = moe.moe_latent_size or d  # a latent MoE dispatches the token at its latent width
    dispatch = k * sent * dispatch_bits // 8
    combine = k * sent * combine_bits // 8
    allreduce = ring_all_reduce_bytes(d, tp)
    conventions = _notes(bits, E, ep, redundant_experts, dispatch_bits, combine_bits, tp, gpu, compute_dtype)
    return MoEResult(
        model=spec.name,
        weight_bits=float(bits),
        num_experts=E,
        top_k=k,
        moe_layers=moe_layers,
        expert_params=expert,
        total_params=total,
        active_params=int(s.active_params),
        active_n_gemm=int(s.active_gemm),
        weight_flops_per_token=2 * int(s.active_gemm),
        non_routed_params=non_routed,
        routed_params=routed,
        total_bytes=to_bytes(total, bits),
        rows=rows,
        ep=ep,
        redundant_experts=redundant_experts,
        experts_per_rank=per_rank,
        weights_per_gpu_bytes=per_gpu(spec, Layout(1, 1, ep, ep, redundant_experts), bits).max_weight_bytes,
        dispatch_bits=dispatch_bits,
        combine_bits=combine_bits,
        dispatch_bytes_per_token_per_layer=dispatch,
        combine_bytes_per_token_per_layer=combine,
        tp=tp,
        allreduce_bytes_per_token_per_layer=allreduce,
        all_to_all_vs_allreduce=float((dispatch + combine) / allreduce) if tp > 1 else None,
        prompt_tokens=prompt_tokens,
        prompt_all_to_all_bytes=prompt_tokens * moe_layers * (dispatch + combine),
        all_to_all_remote_share=float(Fraction(ep - 1, ep)),
        prompt_all_to_all_remote_bytes=exact(prompt_tokens * moe_layers * (dispatch + combine) * Fraction(ep - 1, ep)),
        gpu=gpu.name if gpu else None,
        compute_dtype=compute_dtype,
        ridge_flop_per_byte=ridge,
        tokens_to_pass_ridge=tokens,
        experts_per_top_k=E / k,
        conventions=conventions,
    )
