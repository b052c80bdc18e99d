"""Ridge points of a GPU (seed 003 §02); the compute dtype a step runs at is chosen by
:func:`llm_cost.api.choices.compute_dtype`.

The ridge point P_peak / BW (FLOP per byte) is the arithmetic intensity at which a kernel's
compute and memory times meet (Williams, Waterman, Patterson 2009); below it a kernel is
memory-bound. H100 SXM BF16: 989.4 TFLOP/s / 3.35 TB/s = 295.3.
"""

from __future__ import annotations

from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.specs.schema import HardwareSpec

__all__ = ["Ridge", "ridge_points", "ridge"]


@record
class Ridge(Result):
    """Ridge point of one dtype: peak FLOP/s over bandwidth B/s."""

    dtype: str
    peak_tflops: float
    bandwidth_tb_s: float
    ridge_flop_per_byte: float


def ridge(gpu: HardwareSpec, dtype: str) -> float:
    """FLOP per byte at which ``gpu`` turns compute-bound at ``dtype`` (InputError if it lacks it)."""
    return gpu.peak_flops(dtype) / gpu.bandwidth_bytes_s


def ridge_points(gpu: HardwareSpec) -> list[Ridge]:
    """Ridge point for every dtype the GPU's datasheet lists."""
    return [Ridge(d, t, gpu.memory_bandwidth_tb_s, t / gpu.memory_bandwidth_tb_s) for d, t in gpu.dense_tflops.items()]
