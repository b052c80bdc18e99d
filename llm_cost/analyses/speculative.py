"""Speculative decoding: when drafting gamma tokens and verifying them in one pass pays (seed 003 §08).

With per-token acceptance rate alpha and gamma drafted tokens (Leviathan et al. 2023), a round
yields E = (1 - alpha^(gamma+1)) / (1 - alpha) tokens (gamma + 1 when alpha = 1). If a draft
step costs c target steps and verifying gamma + 1 tokens costs what one step costs (the
memory-bound regime), the speedup is E / (gamma c + 1). Verification stays almost free only
while B (gamma + 1) tokens per step stay below the ridge: the gain turns near
B = ridge / (gamma + 1). Fully compute-bound, the speedup falls to E / (gamma + 1 + gamma c).

The step model (seed 003 §08): step(B, T tokens) = max(T x 2 N_gemm / (MFU x peak),
(weights + B x KV) / bandwidth). Baseline: B tokens per step(B, B). Speculative: B x E tokens
per step(B, B (gamma + 1)) + gamma x c x step(B, B).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from llm_cost.specs.schema import HardwareSpec, ModelSpec
from llm_cost.core.errors import InputError

__all__ = ["expected_tokens", "SpecAtBatch", "SpecResult", "speculative", "mtp_draft_cost"]


def expected_tokens(alpha: float, gamma: int) -> float:
    """(1 - alpha^(gamma+1)) / (1 - alpha): tokens per round; gamma + 1 when alpha = 1."""
    if alpha == 1:
        return float(gamma + 1)
    return (1 - alpha ** (gamma + 1)) / (1 - alpha)


@dataclass(frozen=True)
class SpecAtBatch:
    """The step model at one batch."""

    batch: int
    baseline_step_s: float
    verify_step_s: float
    draft_s: float
    baseline_tokens_per_s: float
    speculative_tokens_per_s: float
    speedup: float


@dataclass(frozen=True)
class SpecResult:
    """Speculative decoding: the closed forms, and optionally the Roofline step model."""

    alpha: float
    gamma: int
    c: float
    c_source: str
    expected_tokens: float
    speedup_memory_bound: float
    speedup_compute_bound: float
    model: str | None
    gpu: str | None
    mfu: float | None
    context: int
    weight_bytes_convention: str | None
    ridge: float | None
    turning_batch: float | None  # ridge / (gamma + 1), at peak FLOP/s
    turning_batch_at_mfu: float | None  # the same with the step model's MFU x peak
    rows: list[SpecAtBatch]
    conventions: list[str] = field(default_factory=list)


def _validate(alpha: float, gamma: int, c: float) -> None:
    if not 0 <= alpha <= 1:
        raise InputError(f"--alpha: {alpha:g} is not an acceptance rate; it must be in [0, 1]")
    if gamma < 1:
        raise InputError(f"--gamma: {gamma} must be at least 1 drafted token")
    if c < 0:
        raise InputError(f"--c: {c:g} must be >= 0 (draft step cost as a fraction of a target step)")


def mtp_draft_cost(spec: ModelSpec) -> float:
    """c of an MTP module used as the draft: its active matmul weights over the main model's
    (one MTP block plus eh_proj and the shared LM head, against the whole model)."""
    from llm_cost.model.structure import build

    s = build(spec)
    if spec.mtp is None:
        raise InputError(f"{spec.name} has no MTP modules; pass --c instead of --mtp")
    mtp = sum(float(t.active_gemm) for t in s.tensors_of("mtp"))
    head = sum(float(t.active_gemm) for t in s.tensors_of("decoder") if t.group == "lm_head")
    return (mtp + head) / spec.mtp.num_nextn_predict_layers / float(s.active_gemm)


def speculative(alpha: float, gamma: int, c: float | None = None, spec: ModelSpec | None = None,
                gpu: HardwareSpec | None = None, batches: list[int] | None = None, mfu: float = 0.6,
                context: int = 0, dtype: str = "bf16", weight_bytes: str = "read", use_mtp: bool = False) -> SpecResult:
    """Closed forms for (alpha, gamma, c); with a model and GPU, the step model at each batch.

    InputError for alpha outside [0, 1], gamma < 1, c < 0, or a missing c."""
    c_source = "given"
    if use_mtp:
        if spec is None:
            raise InputError("--mtp needs a MODEL with MTP modules (e.g. deepseek-v3)")
        c, c_source = mtp_draft_cost(spec), "MTP module's matmul weights / the model's active matmul weights"
    if c is None:
        raise InputError("--c is required (draft step cost as a fraction of a target step), or --mtp with a model")
    _validate(alpha, gamma, c)
    E = expected_tokens(alpha, gamma)
    rows: list[SpecAtBatch] = []
    ridge = turning = turning_mfu = None
    conventions = [
        "E = (1 - alpha^(gamma+1)) / (1 - alpha); speedup E / (gamma c + 1) assumes verifying gamma + 1 "
        "tokens costs one step (memory-bound); fully compute-bound: E / (gamma + 1 + gamma c)",
    ]
    if spec is not None and gpu is not None:
        from llm_cost.analyses.roofline import decode_step, peak_flops

        peak = peak_flops(gpu, dtype)
        ridge = peak / gpu.bandwidth_bytes_s
        turning = ridge / (gamma + 1)
        turning_mfu = turning * mfu
        from llm_cost.core.units import DTYPE_BITS

        bits = DTYPE_BITS[spec.torch_dtype]  # weights at the checkpoint's dtype
        for B in batches or [1, 8, 32, 64, 128, 256]:
            base = decode_step(spec, gpu, B, context, dtype, bits, mfu=mfu, weight_bytes=weight_bytes)
            verify = decode_step(spec, gpu, B * (gamma + 1), context, dtype, bits, mfu=mfu, weight_bytes=weight_bytes)
            # B sequences verifying gamma + 1 tokens each: the FLOPs and weights of B (gamma + 1)
            # tokens, but each sequence's KV cache read once.
            verify_flops = verify.flops
            verify_bytes = verify.bytes - verify.kv_read_bytes + base.kv_read_bytes
            t_base = max(base.flops / (mfu * peak), base.bytes / gpu.bandwidth_bytes_s)
            t_verify = max(verify_flops / (mfu * peak), verify_bytes / gpu.bandwidth_bytes_s)
            t_draft = gamma * c * t_base
            base_rate = B / t_base
            spec_rate = B * E / (t_verify + t_draft)
            rows.append(SpecAtBatch(B, t_base, t_verify, t_draft, base_rate, spec_rate, spec_rate / base_rate))
        read = ("every stored weight (resident, as the source documents)" if weight_bytes == "resident"
                else "the matmul weights used and one embedding row per sequence")
        conventions.append(
            f"step model on {gpu.name} ({dtype} peak at MFU {mfu:.0%}, full bandwidth), context {context:,}: "
            f"step = max(FLOPs / (MFU x peak), bytes / bandwidth); a step reads {read} at {bits} bits; "
            "draft = gamma x c x baseline step")
        conventions += [line for line in base.conventions if line.startswith("note:")]
    return SpecResult(alpha, gamma, float(c), c_source, E, E / (gamma * c + 1), E / (gamma + 1 + gamma * c),
                      spec.name if spec else None, gpu.name if gpu else None, mfu if gpu else None, context,
                      weight_bytes if gpu else None, ridge, turning, turning_mfu, rows, conventions)

