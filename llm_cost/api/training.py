"""The API's training question: FLOPs, time, energy, cost and memory of a training run
(``llm-cost train``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional

from llm_cost.api import checks
from llm_cost.api.model import GpuLike, ModelLike, load_gpu, load_model
from llm_cost.core.choices import Recompute
from llm_cost.core.errors import InputError
from llm_cost.core.types import Dtype

if TYPE_CHECKING:
    from llm_cost.analyses.training import TrainResult

__all__ = ["train", "TRAINING_DTYPES"]

#: Compute dtypes a training run's matmuls use (BF16 mixed precision is the default; FP8 where the
#: GPU has it, as DeepSeek-V3 trained; FP16 and TF32 on older GPUs). Integer formats train nothing.
TRAINING_DTYPES = (Dtype.BF16, Dtype.FP16, Dtype.FP8, Dtype.TF32, Dtype.FP32)


def train(
    model: ModelLike,
    tokens: int,
    gpu: GpuLike = "h100",
    *,
    gpus: Optional[int] = None,
    mfu: Optional[float] = None,
    gpu_hours: Optional[float] = None,
    recompute: Any = Recompute.NONE,
    dtype: Any = Dtype.BF16,
    power_w: Optional[float] = None,
    pue: float = 1.0,
    grid_kg_per_kwh: Optional[float] = None,
    usd_per_gpu_hour: Optional[float] = None,
    seq: int = 8192,
    micro_batch: int = 1,
    tp: Optional[int] = None,
    pp: Optional[int] = None,
    dp: Optional[int] = None,
    zero: int = 1,
    sequence_parallel: bool = False,
) -> TrainResult:
    """Training of ``tokens`` tokens D (``llm-cost train``): 6ND FLOPs, the time at ``mfu`` or the
    MFU a ``gpu_hours`` budget implies (exactly one of the two), energy at ``power_w`` (default
    the GPU's TDP) x ``pue``, CO2 and dollars, state memory per GPU under ZeRO ``zero`` (0-3)
    and, with ``tp``/``pp``/``dp``, that layout's memory. InputError naming the argument."""
    from llm_cost.analyses.training import train as run

    tokens = checks.count(tokens, "tokens", 1, 10**40)
    gpus = checks.optional(gpus, checks.count, "gpus", 1, 10**7)
    if (mfu is None) == (gpu_hours is None):
        raise InputError(
            "give exactly one of mfu (to get the time) or gpu_hours (to get the implied MFU)",
            fields=("mfu", "gpu_hours"),
        )
    mfu = checks.optional(mfu, checks.efficiency, "mfu")
    gpu_hours = checks.optional(gpu_hours, checks.number, "gpu_hours")
    compute = checks.one_of(checks.choice(dtype, Dtype, "dtype"), "dtype", TRAINING_DTYPES)
    power_w = checks.optional(power_w, checks.number, "power_w", maximum=1e6)
    pue = checks.number(pue, "pue", minimum=1, maximum=10, open_min=False)
    grid = checks.optional(grid_kg_per_kwh, checks.number, "grid_kg_per_kwh", maximum=1e3, open_min=False)
    price = checks.optional(usd_per_gpu_hour, checks.number, "usd_per_gpu_hour", maximum=1e6, open_min=False)
    seq, micro_batch = checks.count(seq, "seq"), checks.count(micro_batch, "micro_batch")
    tp, pp, dp = (checks.optional(v, checks.count, n, 1, 2**20) for v, n in ((tp, "tp"), (pp, "pp"), (dp, "dp")))
    zero = checks.one_of(zero, "zero", (0, 1, 2, 3))
    if not isinstance(sequence_parallel, bool):
        raise InputError(
            f"sequence_parallel: {sequence_parallel!r} must be True or False", fields=("sequence_parallel",)
        )
    spec, g = load_model(model), load_gpu(gpu)
    recompute = checks.choice(recompute, Recompute, "recompute")
    return run(
        spec,
        tokens,
        g,
        gpus,
        mfu,
        gpu_hours,
        recompute.value,
        compute.value,
        power_w,
        pue,
        grid,
        price,
        seq,
        micro_batch,
        tp,
        pp,
        dp,
        zero,
        sequence_parallel,
    )
