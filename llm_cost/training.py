"""Training cost: FLOPs, time, energy, emissions, money, and training-state memory (seed 000 §十一,
seed 003 §02 and §10).

* FLOPs ~ 6 N D (Kaplan et al. 2020: forward 2ND, backward 4ND), N the parameters a token uses
  (all of them for a dense model, the active ones for MoE), D the training tokens. Full
  activation recompute runs the forward twice: 8 N D of hardware FLOPs; MFU is quoted against
  the model's 6 N D. Attention FLOPs are left out, as in the documents.
* Time = FLOPs / (GPUs x peak x MFU); or, from a GPU-hour budget, the effective FLOP/s per GPU
  it implies (seed 000: 7.23e23 / (1.3M h x 3600 s) = 154 TFLOP/s per H100).
* Energy = GPU-hours x power x PUE; emissions = energy x grid intensity; cost = GPU-hours x price.
* Mixed-precision Adam holds 16 bytes per parameter: BF16 weights (2) and gradients (2), FP32
  master weights (4), Adam m and v (4 + 4). ZeRO over n data-parallel GPUs (Rajbhandari et al.
  2020) shards the optimizer states (stage 1: 4 + 12/n), also the gradients (stage 2:
  2 + 14/n), also the weights (stage 3: 16/n).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .memory import Activations, activation_memory
from .spec import HardwareSpec, ModelSpec
from .structure import build
from .units import InputError

__all__ = ["StateMemory", "TrainResult", "train", "STATE_BYTES"]

#: Bytes per parameter of mixed-precision Adam training state, by part.
STATE_BYTES = {"bf16 weights": 2, "bf16 gradients": 2, "fp32 master weights": 4, "adam m (fp32)": 4,
               "adam v (fp32)": 4}


@dataclass(frozen=True)
class StateMemory:
    """Training-state bytes: in total and per GPU under each ZeRO stage."""

    parts: dict[str, int]  # bytes of each part, whole model
    total_bytes: int
    data_parallel: int
    per_gpu_bytes: dict[str, float]  # "none", "zero1", "zero2", "zero3"


@dataclass(frozen=True)
class TrainResult:
    """Training cost of ``tokens`` tokens."""

    model: str
    params: int  # N in 6ND (active parameters for MoE)
    tokens: int
    recompute: str
    model_flops: float  # 6 N D
    hardware_flops: float  # with recompute
    gpu: str
    gpus: int
    peak_flops: float
    dtype: str
    mfu: float | None
    gpu_hours: float
    wall_seconds: float
    effective_flops_per_gpu: float  # model FLOPs / GPU-seconds
    power_w: float
    pue: float
    energy_kwh: float
    grid_kg_per_kwh: float | None
    co2_tonnes: float | None
    usd_per_gpu_hour: float | None
    cost_usd: float | None
    state: StateMemory
    activations: Activations
    conventions: list[str] = field(default_factory=list)


def state_memory(params: int, data_parallel: int) -> StateMemory:
    """16 bytes per parameter split into its parts, and per GPU under ZeRO 1/2/3 over
    ``data_parallel`` GPUs (weights, gradients, optimizer states sharded in turn)."""
    parts = {name: b * params for name, b in STATE_BYTES.items()}
    total = sum(parts.values())
    n = data_parallel
    weights, grads = parts["bf16 weights"], parts["bf16 gradients"]
    optim = total - weights - grads
    per_gpu = {"none": float(total), "zero1": weights + grads + optim / n, "zero2": weights + (grads + optim) / n,
               "zero3": total / n}
    return StateMemory(parts, total, n, per_gpu)


def train(spec: ModelSpec, tokens: int, gpu: HardwareSpec, gpus: int = 1, mfu: float | None = None,
          gpu_hours: float | None = None, recompute: str = "none", dtype: str = "bf16", power_w: float | None = None,
          pue: float = 1.0, grid_kg_per_kwh: float | None = None, usd_per_gpu_hour: float | None = None,
          seq: int = 8192, micro_batch: int = 1) -> TrainResult:
    """Training FLOPs, time (from an MFU or a GPU-hour budget), energy and state memory.

    Exactly one of ``mfu`` and ``gpu_hours`` must be given; InputError otherwise, or for a GPU
    lacking ``dtype``."""
    from .roofline import peak_flops

    if (mfu is None) == (gpu_hours is None):
        raise InputError("give exactly one of --mfu (to get the time) or --gpu-hours (to get the implied MFU)")
    if recompute not in ("none", "selective", "full"):
        raise InputError(f"--recompute: {recompute!r} is not one of: none, selective, full")
    peak = peak_flops(gpu, dtype)
    s = build(spec)
    n = int(s.active_params)
    model_flops = 6.0 * n * tokens
    hardware_flops = (8.0 if recompute == "full" else 6.0) * n * tokens
    if gpu_hours is None:
        assert mfu is not None
        gpu_seconds = model_flops / (peak * mfu)
        gpu_hours = gpu_seconds / 3600
    else:
        gpu_seconds = gpu_hours * 3600
        mfu = model_flops / gpu_seconds / peak
    power = power_w if power_w is not None else gpu.tdp_w
    energy_kwh = gpu_hours * power / 1000 * pue
    conventions = [
        f"FLOPs = 6 N D with N = {'active ' if spec.moe else ''}parameters ({n:,}); "
        + ("full recompute adds a forward pass: 8 N D hardware FLOPs; " if recompute == "full" else "")
        + "attention FLOPs not included (as seed 000 §十一)",
        f"peak {gpu.dense_tflops[dtype]:g} TFLOP/s dense {dtype} per GPU; MFU = 6 N D / (GPU-seconds x peak)",
        f"energy = GPU-hours x {power:g} W x PUE {pue:g}" + ("" if power_w is not None else " (the GPU's TDP)"),
        "state: 16 B per parameter (BF16 weights + gradients, FP32 master, Adam m, v); decimal units",
    ]
    return TrainResult(
        model=spec.name, params=n, tokens=tokens, recompute=recompute, model_flops=model_flops,
        hardware_flops=hardware_flops, gpu=gpu.name, gpus=gpus, peak_flops=peak, dtype=dtype, mfu=mfu,
        gpu_hours=gpu_hours, wall_seconds=gpu_seconds / gpus, effective_flops_per_gpu=model_flops / gpu_seconds,
        power_w=power, pue=pue, energy_kwh=energy_kwh, grid_kg_per_kwh=grid_kg_per_kwh,
        co2_tonnes=energy_kwh * grid_kg_per_kwh / 1000 if grid_kg_per_kwh is not None else None,
        usd_per_gpu_hour=usd_per_gpu_hour,
        cost_usd=gpu_hours * usd_per_gpu_hour if usd_per_gpu_hour is not None else None,
        state=state_memory(s.total_params, gpus),
        activations=activation_memory(spec, seq, micro_batch, recompute),
        conventions=conventions)


__all__ += ["state_memory"]
