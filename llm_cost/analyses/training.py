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

import math
from dataclasses import field

from llm_cost.analyses.memory import Activations, activation_memory
from llm_cost.core.choices import Logits, Recompute
from llm_cost.core.errors import InputError
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Dtype
from llm_cost.core.units import Number, quotient
from llm_cost.model.layout import Layout, per_gpu
from llm_cost.model.structure import build
from llm_cost.specs.schema import HardwareSpec, ModelSpec
from llm_cost.workload.step import build_step, prefill

__all__ = [
    "StateMemory",
    "TrainResult",
    "train",
    "training_layout",
    "STATE_BYTES",
    "state_memory",
    "ParallelTrainMemory",
    "parallel_train_memory",
]

#: Bytes per parameter of mixed-precision Adam training state, by part.
STATE_BYTES = {"bf16 weights": 2, "bf16 gradients": 2, "fp32 master weights": 4, "adam m (fp32)": 4, "adam v (fp32)": 4}


@record
class StateMemory:
    """Training-state bytes: in total and per GPU under each ZeRO stage."""

    parts: dict[str, int]  # bytes of each part, whole model
    total_bytes: int
    data_parallel: int
    per_gpu_bytes: dict[str, Number]  # "none", "zero1", "zero2", "zero3"


@record
class TrainResult(Result):
    """Training cost of ``tokens`` tokens."""

    model: str
    params: int  # N in 6ND (active parameters for MoE)
    tokens: int
    recompute: Recompute
    model_flops: int  # 6 N D
    hardware_flops: int  # with recompute
    step_flops: Number  # from the step's operators: 3 x forward FLOPs of seq-token sequences (x 4/3 with full
    # recompute), attention and every LM-head position included (Megatron-LM's count)
    gpu: str
    gpus: int | None  # None: no cluster size given (no wall-clock time)
    peak_flops_per_s: float
    dtype: Dtype
    mfu: float | None
    gpu_hours: float
    wall_seconds: float | None
    effective_flops_per_s_per_gpu: float  # model FLOPs / GPU-seconds
    power_w: float
    pue: float
    energy_kwh: float
    grid_kg_per_kwh: float | None
    co2_tonnes: float | None
    usd_per_gpu_hour: float | None
    cost_usd: float | None
    state: StateMemory
    activations: Activations | None  # None where the block's activations are not modelled (Mamba-2 hybrids)
    conventions: list[Note] = field(default_factory=list)
    parallel: ParallelTrainMemory | None = None  # per-GPU memory when a TP x PP x DP layout was given


def state_memory(params: int, data_parallel: int) -> StateMemory:
    """16 bytes per parameter split into its parts, and per GPU under ZeRO 1/2/3 over
    ``data_parallel`` GPUs (weights, gradients, optimizer states sharded in turn)."""
    parts = {name: b * params for name, b in STATE_BYTES.items()}
    total = sum(parts.values())
    n = data_parallel
    weights, grads = parts["bf16 weights"], parts["bf16 gradients"]
    optim = total - weights - grads
    per_gpu: dict[str, Number] = {  # exact: an int where the shards divide, else the Fraction (its JSON a float)
        "none": total,
        "zero1": weights + grads + quotient(optim, n),
        "zero2": weights + quotient(grads + optim, n),
        "zero3": quotient(total, n),
    }
    return StateMemory(parts, total, n, per_gpu)


def training_layout(
    gpus: int | None, tp: int | None, pp: int | None, dp: int | None
) -> tuple[Layout | None, int | None]:
    """(layout, GPUs) from the cluster size and the TP/PP/DP degrees given: with ``gpus`` and
    ``tp``/``pp`` but no ``dp``, DP is what is left. InputError naming them when they disagree."""
    if tp is None and pp is None and dp is None:
        return None, gpus
    t, p = tp or 1, pp or 1
    if dp is None and gpus is not None:
        if gpus % (t * p):
            raise InputError(f"gpus: {gpus} is not a multiple of tp x pp = {t * p}", fields=("gpus", "tp", "pp"))
        dp = gpus // (t * p)
    layout = Layout(t, p, 1, dp or 1)
    if gpus is not None and layout.gpus != gpus:
        raise InputError(
            f"gpus: {gpus} disagrees with tp x pp x dp = {layout.gpus}; give one or the other",
            fields=("gpus", "tp", "pp", "dp"),
        )
    return layout, layout.gpus


def _check_finite(figures: dict[str, tuple[float | None, tuple[str, ...]]]) -> None:
    """InputError for the first figure that overflowed a float (above about 1.8e308), naming the
    arguments that set it: a result is a number, never ``inf``."""
    for what, (value, names) in figures.items():
        if value is not None and not math.isfinite(value):
            raise InputError(
                f"{' and '.join(names)}: the {what} would exceed 1.8e308, beyond what a float holds; "
                "give values that describe a real training run",
                fields=names,
            )


def train(
    spec: ModelSpec,
    tokens: int,
    gpu: HardwareSpec,
    gpus: int | None = None,
    mfu: float | None = None,
    gpu_hours: float | None = None,
    recompute: Recompute = Recompute.NONE,
    dtype: Dtype = Dtype.BF16,
    power_w: float | None = None,
    pue: float = 1.0,
    grid_kg_per_kwh: float | None = None,
    usd_per_gpu_hour: float | None = None,
    seq: int = 8192,
    micro_batch: int = 1,
    tp: int | None = None,
    pp: int | None = None,
    dp: int | None = None,
    zero: int = 1,
    sequence_parallel: bool = False,
) -> TrainResult:
    """Training FLOPs, time (from an MFU or a GPU-hour budget), energy and state memory; with
    ``tp``/``pp``/``dp`` also the per-GPU memory of that layout (see :func:`training_layout`).

    Exactly one of ``mfu`` and ``gpu_hours`` must be given; InputError otherwise, for a GPU
    lacking ``dtype``, or for a GPU-hour budget that would need more than 100% MFU."""
    layout, gpus = training_layout(gpus, tp, pp, dp)
    if (mfu is None) == (gpu_hours is None):
        raise InputError(
            "give exactly one of mfu (to get the time) or gpu_hours (to get the implied MFU)",
            fields=("mfu", "gpu_hours"),
        )
    peak = gpu.peak_flops(dtype)
    s = build(spec)
    n = int(s.active_params)
    model_flops = 6 * n * tokens  # exact: integers, as every count
    full = recompute == Recompute.FULL
    hardware_flops = (8 if full else 6) * n * tokens
    forward = build_step(spec, prefill(1, seq), logits=Logits.ALL).flops  # one training sequence, forward
    step_flops = quotient(int(forward) * (4 if full else 3) * tokens, seq)
    if gpu_hours is None:
        assert mfu is not None
        gpu_seconds = model_flops / (peak * mfu)
        gpu_hours = gpu_seconds / 3600
    else:
        gpu_seconds = gpu_hours * 3600
        mfu = model_flops / gpu_seconds / peak
        if mfu > 1:
            need = f"{mfu:.0%}" if mfu < 1e12 else "more than 10^12 times"
            raise InputError(
                f"gpu_hours: {gpu_hours:,.6g} GPU-hours would need {need} of the {gpu.name}'s "
                f"{dtype} peak; at 100% MFU 6ND takes at least {model_flops / peak / 3600:,.6g} "
                "GPU-hours",
                fields=("gpu_hours",),
            )
        if mfu < 0.01:  # as a given mfu: below 1% is a typing mistake, not a run
            raise InputError(
                f"gpu_hours: {gpu_hours:,.6g} GPU-hours imply an MFU of {mfu:.2g}, below 1%; at 1% MFU 6ND "
                f"takes {model_flops / peak / 0.01 / 3600:,.6g} GPU-hours, at most",
                fields=("gpu_hours",),
            )
    power = power_w if power_w is not None else gpu.tdp_w
    energy_kwh = gpu_hours * power / 1000 * pue
    co2_tonnes = energy_kwh * grid_kg_per_kwh / 1000 if grid_kg_per_kwh is not None else None
    cost_usd = gpu_hours * usd_per_gpu_hour if usd_per_gpu_hour is not None else None
    _check_finite(
        {
            "GPU-hours": (gpu_hours, ("tokens", "mfu")),
            "energy": (energy_kwh, ("power_w", "pue")),
            "emissions": (co2_tonnes, ("grid_kg_per_kwh",)),
            "cost": (cost_usd, ("usd_per_gpu_hour",)),
        }
    )
    conventions = [
        note("train.flops", active=spec.moe is not None, params=n, full_recompute=full, seq=seq),
        note("train.mfu", tflops=gpu.dense_tflops[dtype.value], dtype=dtype),
        note("train.energy", power_w=power, pue=pue, tdp=power_w is None),
        note("train.state"),
    ]
    return TrainResult(
        model=spec.name,
        params=n,
        tokens=tokens,
        recompute=recompute,
        model_flops=model_flops,
        hardware_flops=hardware_flops,
        step_flops=step_flops,
        gpu=gpu.name,
        gpus=gpus,
        peak_flops_per_s=peak,
        dtype=dtype,
        mfu=mfu,
        gpu_hours=gpu_hours,
        wall_seconds=gpu_seconds / gpus if gpus else None,
        effective_flops_per_s_per_gpu=model_flops / gpu_seconds,
        power_w=power,
        pue=pue,
        energy_kwh=energy_kwh,
        grid_kg_per_kwh=grid_kg_per_kwh,
        co2_tonnes=co2_tonnes,
        usd_per_gpu_hour=usd_per_gpu_hour,
        cost_usd=cost_usd,
        state=state_memory(s.total_params, gpus or 1),
        activations=_activations(spec, seq, micro_batch, recompute, conventions),
        conventions=conventions,
        parallel=None
        if layout is None
        else parallel_train_memory(
            spec, gpu, layout.tp, layout.pp, layout.dp, zero, seq, micro_batch, recompute, sequence_parallel
        ),
    )


def _activations(
    spec: ModelSpec, seq: int, micro_batch: int, recompute: Recompute, conventions: list[Note]
) -> Activations | None:
    """Activation memory of the model's block, or None (with a note saying why) for blocks it
    does not model, so the rest of the training answer still stands."""
    try:
        return activation_memory(spec, seq, micro_batch, recompute)
    except InputError as exc:
        conventions.append(note("train.activations_not_modelled", reason=str(exc)))
        return None


@record
class ParallelTrainMemory:
    """Training memory on the fullest GPU of a TP x PP x DP layout under one ZeRO stage."""

    model: str
    gpu: str
    tp: int
    pp: int
    dp: int
    zero: int
    sequence_parallel: bool
    recompute: Recompute
    params_per_gpu: int  # parameters on the fullest pipeline stage, one TP shard
    state_bytes: float  # weights + gradients + optimizer states after ZeRO sharding over DP
    activation_bytes: float  # layers of the stage x per layer x micro-batches in flight
    in_flight_micro_batches: int
    total_bytes: float
    memory_bytes: int
    fits: bool
    smallest_dp: int | None  # fewest data-parallel replicas that fit at this ZeRO stage (None: none do)
    smallest_cluster_gpus: int | None  # smallest_dp x TP x PP
    conventions: list[Note] = field(default_factory=list)


def _zero_split(params: int, zero: int) -> tuple[int, int]:
    """(replicated, sharded) bytes of mixed-precision Adam state (2 + 2 + 12 bytes per parameter):
    ZeRO stage 1 shards the optimizer states, 2 also the gradients, 3 also the weights."""
    return {0: (16 * params, 0), 1: (4 * params, 12 * params), 2: (2 * params, 14 * params), 3: (0, 16 * params)}[zero]


def _zero_state(params: int, dp: int, zero: int) -> float:
    """State bytes per GPU over ``dp`` data-parallel GPUs."""
    replicated, sharded = _zero_split(params, zero)
    return replicated + sharded / dp


def _smallest_dp(params: int, zero: int, room: float) -> int | None:
    """Fewest data-parallel GPUs whose state fits in ``room`` bytes, or None if none do."""
    replicated, sharded = _zero_split(params, zero)
    if room < replicated or (room == replicated and sharded):
        return None
    return 1 if not sharded else max(1, math.ceil(sharded / (room - replicated)))


def parallel_train_memory(
    spec: ModelSpec,
    gpu: HardwareSpec,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    zero: int = 1,
    seq: int = 8192,
    micro_batch: int = 1,
    recompute: Recompute = Recompute.NONE,
    sequence_parallel: bool = False,
    reserve_bytes: int = 0,
) -> ParallelTrainMemory:
    """Per-GPU training memory: ZeRO-sharded state of the fullest stage's TP shard plus the
    activations of the stage's layers for the PP micro-batches 1F1B keeps in flight on the first
    stage (Narayanan et al. 2021; Korthikanti et al. 2022). InputError for an invalid layout."""
    if zero not in (0, 1, 2, 3):
        raise InputError(f"zero: {zero} is not a ZeRO stage (0, 1, 2 or 3)", fields=("zero",))
    layout = Layout(tp, pp, 1, dp)
    shards = per_gpu(spec, layout, 16, mtp=True)
    params = int(max(shards.weight_bytes) // 2)
    act = activation_memory(spec, seq, micro_batch, recompute, tp, sequence_parallel)
    layers = max(shards.stage_layers)
    activations = float(act.bytes_per_layer) * layers * pp
    state = _zero_state(params, dp, zero)
    room = gpu.capacity_bytes - reserve_bytes
    total = state + activations
    smallest = _smallest_dp(params, zero, room - activations)
    conventions = [
        note("train.layout_state", tp=tp, pp=pp, dp=dp, zero=zero),
        note("train.layout_activations", formula=act.formula, layers=layers, pp=pp, seq=seq, micro_batch=micro_batch),
        note(
            "train.layout_memory",
            memory_gib=gpu.memory_gib,
            memory_gb=gpu.memory_gb,
            capacity_bytes=gpu.capacity_bytes,
            reserve_bytes=reserve_bytes,
            zero=zero,
        ),
    ]
    return ParallelTrainMemory(
        spec.name,
        gpu.name,
        tp,
        pp,
        dp,
        zero,
        sequence_parallel,
        recompute,
        params,
        state,
        activations,
        pp,
        total,
        gpu.capacity_bytes,
        total <= room,
        smallest,
        smallest * tp * pp if smallest else None,
        conventions,
    )
