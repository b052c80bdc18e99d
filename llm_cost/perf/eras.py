"""Engine releases whose fixed costs differ enough to fit apart.

An engine's fixed costs (scheduling, sampling, launches per layer and per sequence) changed with its
releases more than its kernels did: vLLM's V1 engine (default from 0.8, the V1 blog of January 2025)
rewrote the scheduler and moved detokenising and sampling off the step's critical path, so a V0 row
(vLLM 0.4-0.7, e.g. ROCm's 0.6.6 images) carries per-sequence costs that today's vLLM does not. The
fit gives such a release its own engine parameters (an :class:`EngineBlock`), so that old rows neither
drag today's parameters nor are thrown away; a prediction always uses the current release's.
"""

from __future__ import annotations

import re

from llm_cost.core.types import Engine, TextEnum

__all__ = ["EngineBlock", "engine_of_block", "block_of", "CURRENT"]


class EngineBlock(TextEnum):
    """The engines whose parameters are fitted: every :class:`~llm_cost.core.types.Engine` (its
    current release) and the earlier releases fitted apart."""

    VLLM = "vllm"
    SGLANG = "sglang"
    TRTLLM = "trtllm"
    PYTORCH_EAGER = "pytorch-eager"
    TORCH_COMPILE = "torch-compile"
    LLAMACPP = "llamacpp"
    VLLM_V0 = "vllm-v0"  # vLLM before 0.8: the V0 engine


#: Releases fitted apart: engine -> (block, the first version that is current).
ERAS: dict[Engine, tuple[EngineBlock, tuple[int, int]]] = {Engine.VLLM: (EngineBlock.VLLM_V0, (0, 8))}

#: The block of each engine's current release.
CURRENT: dict[Engine, EngineBlock] = {e: EngineBlock(e.value) for e in Engine}

_VERSION = re.compile(r"(\d+)\.(\d+)")


def engine_of_block(block: EngineBlock) -> Engine:
    """The engine a block is a release of."""
    return next((e for e, (b, _) in ERAS.items() if b is block), None) or Engine(block.value)


def block_of(engine: Engine, version: str) -> EngineBlock:
    """The block of a row timed under ``engine`` at ``version`` (its engine text, e.g. ``vLLM
    0.6.6 (ROCm fork)``): an earlier release's block when the first version number in the text is
    below the current release's first, else the current one."""
    era = ERAS.get(engine)
    found = _VERSION.search(version)
    if era is None or found is None:
        return CURRENT[engine]
    block, first = era
    return block if (int(found.group(1)), int(found.group(2))) < first else CURRENT[engine]
