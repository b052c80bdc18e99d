"""Kernel families: the GPUs whose kernels reach the same fractions of their own datasheet peaks.

A time model's hardware efficiencies (the share of dense peak FLOP/s a large GEMM reaches, the
share of bandwidth a weight stream or a decode-attention KV read reaches, the flash-attention
share) belong to a chip's microarchitecture, not to one product: an H100, H200, H800 and H20 run
the same sm_90 kernels (cuBLAS, FlashAttention-3, the engines' CUDA kernels) at their own clocks,
SM counts and memory. So efficiencies are fitted per family, on the rows of every GPU of the
family, each row against its own GPU's datasheet peaks, and a prediction for any GPU of the family
uses them.

The families follow the CUDA compute capability (NVIDIA, "CUDA C++ Programming Guide", table
"Compute Capabilities": 8.0 GA100, 8.6 GA102, 8.9 AD10x, 9.0 GH100, 10.0 GB100/GB110, 12.0 GB202)
and the AMD gfx target (ROCm "GPU hardware specifications": gfx942 CDNA 3, gfx950 CDNA 4), read
from a GPU spec's ``architecture`` text. A GPU spec whose architecture names none of them (a
user's spec) has no family: its prediction uses the nearest family's efficiencies, transferred,
with a wider band (:func:`llm_cost.perf.choose.time_model_for`).
"""

from __future__ import annotations

from llm_cost.core.types import TextEnum
from llm_cost.specs.schema import HardwareSpec

__all__ = ["KernelFamily", "family_of", "FAMILY_KEYS", "GEMM_TILE_N", "gemm_tile_m"]


class KernelFamily(TextEnum):
    """A GPU microarchitecture whose kernels share efficiencies (see the module docstring)."""

    AMPERE = "ampere"  # sm_80: A100, A800
    AMPERE_GA102 = "ampere-ga102"  # sm_86: RTX 3090, A10
    ADA = "ada"  # sm_89: RTX 4090, L40S, L4
    HOPPER = "hopper"  # sm_90: H100, H200, H800, H20
    BLACKWELL = "blackwell"  # sm_100/sm_103: B200, GB200, B300, GB300
    BLACKWELL_GB202 = "blackwell-gb202"  # sm_120: RTX 5090, RTX PRO 6000
    CDNA3 = "cdna3"  # gfx942: MI300X, MI325X
    CDNA4 = "cdna4"  # gfx950: MI355X


#: The words of a GPU spec's ``architecture`` that name each family, tried in order (the longest,
#: most specific first: "Blackwell GB202" before "Blackwell").
FAMILY_KEYS: tuple[tuple[str, KernelFamily], ...] = (
    ("GA100", KernelFamily.AMPERE),
    ("GA102", KernelFamily.AMPERE_GA102),
    ("AD10", KernelFamily.ADA),
    ("GH100", KernelFamily.HOPPER),
    ("GB202", KernelFamily.BLACKWELL_GB202),
    ("Blackwell", KernelFamily.BLACKWELL),
    ("CDNA 3", KernelFamily.CDNA3),
    ("CDNA 4", KernelFamily.CDNA4),
)


def family_of(gpu: HardwareSpec) -> KernelFamily | None:
    """The kernel family of ``gpu`` from its spec's ``architecture`` (:data:`FAMILY_KEYS`), or
    None for an architecture none names."""
    text = gpu.architecture or ""
    return next((family for key, family in FAMILY_KEYS if key in text), None)


#: Columns (N) of one GEMM output tile: 128 on every family here (cuBLAS/CUTLASS sm_80 and sm_90
#: 128 x 128 and 128 x 256 tiles; hipBLASLt's MT128x128 and wider on CDNA). A tile is the unit a
#: streaming multiprocessor computes at once, so a GEMM's compute is quantised to whole tiles.
GEMM_TILE_N = 128


def gemm_tile_m(m: float) -> int:
    """The row granularity (M) a GEMM of ``m`` rows is computed in: none up to 8 rows (GEMV-like
    kernels: cuBLAS gemv and split-K, llama.cpp's mmvq, the engines' skinny-GEMM kernels, which
    stream the weights without padding the rows), 16 up to 16 (the tensor cores' mma M; Marlin's
    and CUTLASS's small-M tiles), else 64 (a Hopper wgmma warpgroup's M; the 128- and 256-row tiles
    of larger GEMMs are whole warpgroups, and cuBLAS's heuristics pick among them, so the waste is
    at most one 64-row slab: NVIDIA's "Matrix Multiplication Background" user guide, tile
    quantization)."""
    return 1 if m <= 8 else 16 if m <= 16 else 64
