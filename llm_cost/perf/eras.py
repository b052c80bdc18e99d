"""Engine builds whose fixed costs and kernels differ enough to fit apart.

An engine's fixed costs (scheduling, sampling, launches per layer and per sequence) and some of its
kernels differ between its releases and between its builds for NVIDIA (CUDA) and AMD (ROCm) GPUs:

* vLLM's V1 engine (default from 0.8, the V1 blog of January 2025) rewrote the scheduler and moved
  detokenising and sampling off the step's critical path, so a V0 row (vLLM 0.4-0.7) carries
  per-sequence costs that today's vLLM does not;
* a ROCm build launches HIP kernels (hipBLASLt, Composable Kernel or Triton attention, RCCL) with
  other launch costs and shares of the peaks than the CUDA build's.

The fit gives each such build its own engine parameters (an :class:`EngineBlock`), so that one
build's rows neither drag another's parameters nor are thrown away; a prediction uses the current
release's build for its GPU's vendor (:func:`current_block`).
"""

from __future__ import annotations

import re

from llm_cost.core.types import Engine, TextEnum

__all__ = ["EngineBlock", "engine_of_block", "block_of", "current_block", "CURRENT"]


class EngineBlock(TextEnum):
    """The engine builds whose parameters are fitted: every :class:`~llm_cost.core.types.Engine`
    (its current CUDA release, named as the engine), its ROCm builds, and earlier releases fitted apart."""

    VLLM = Engine.VLLM.value
    SGLANG = Engine.SGLANG.value
    TRTLLM = Engine.TRTLLM.value
    PYTORCH_EAGER = Engine.PYTORCH_EAGER.value
    TORCH_COMPILE = Engine.TORCH_COMPILE.value
    LLAMACPP = Engine.LLAMACPP.value
    VLLM_V0 = "vllm-v0"  # vLLM before 0.8: the V0 engine
    VLLM_ROCM = "vllm-rocm"
    SGLANG_ROCM = "sglang-rocm"
    LLAMACPP_ROCM = "llamacpp-rocm"
    PYTORCH_EAGER_ROCM = "pytorch-eager-rocm"


#: Releases fitted apart: engine -> (block, the first version that is current).
ERAS: dict[Engine, tuple[EngineBlock, tuple[int, int]]] = {Engine.VLLM: (EngineBlock.VLLM_V0, (0, 8))}
#: ROCm builds: engine -> its block (an engine without one runs its CUDA block's parameters).
ROCM: dict[Engine, EngineBlock] = {
    Engine.VLLM: EngineBlock.VLLM_ROCM,
    Engine.SGLANG: EngineBlock.SGLANG_ROCM,
    Engine.LLAMACPP: EngineBlock.LLAMACPP_ROCM,
    Engine.PYTORCH_EAGER: EngineBlock.PYTORCH_EAGER_ROCM,
}

#: The block of each engine's current CUDA release.
CURRENT: dict[Engine, EngineBlock] = {e: EngineBlock(e.value) for e in Engine}

_VERSION = re.compile(r"(\d+)\.(\d+)")


def engine_of_block(block: EngineBlock) -> Engine:
    """The engine a block is a build of."""
    for engine, (era, _) in ERAS.items():
        if era is block:
            return engine
    for engine, rocm in ROCM.items():
        if rocm is block:
            return engine
    return Engine(block.value)


def current_block(engine: Engine, vendor: str) -> EngineBlock:
    """The block a prediction of ``engine`` on a GPU of ``vendor`` uses: the ROCm build's on AMD,
    else the current CUDA release's."""
    return ROCM.get(engine, CURRENT[engine]) if vendor.upper() == "AMD" else CURRENT[engine]


def block_of(engine: Engine, version: str, vendor: str = "NVIDIA") -> EngineBlock:
    """The block of a row timed under ``engine`` at ``version`` (its engine text, e.g. ``vLLM
    0.6.6 (ROCm fork)``) on a GPU of ``vendor``: an earlier release's block when the first version
    number in the text is below the current release's first (on NVIDIA), else the build's current
    block (:func:`current_block`)."""
    era = ERAS.get(engine)
    found = _VERSION.search(version)
    if vendor.upper() != "AMD" and era is not None and found is not None:
        block, first = era
        if (int(found.group(1)), int(found.group(2))) < first:
            return block
    return current_block(engine, vendor)
