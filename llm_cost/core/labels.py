"""Closed sets that label results rather than describe a model: what bounds a time, what kind of
time it is, what a serving configuration misses, a number format's kind and a RoPE extension.

They live apart from :mod:`llm_cost.core.types` (the vocabulary every command loads: dtypes,
tensor kinds, layer types) so that a command which times nothing, ``params`` say, does not
create these classes on its start.
"""

from __future__ import annotations

from llm_cost.core.types import TextEnum

__all__ = ["Bound", "TimeKind", "Limit", "FormatKind", "RopeExtension"]


class Bound(TextEnum):
    """What dominates an operator's or a step's time."""

    COMPUTE = "compute"
    MEMORY = "memory"
    COMMUNICATION = "communication"

    @classmethod
    def of(cls, compute_s: float, memory_s: float, link_s: float, time_s: float) -> Bound:
        """Communication when the link time exceeds the rest of ``time_s`` (the work of compute and
        memory, overlapped, plus any fixed time), else compute when it is at least the memory time,
        else memory. The one rule for every operator, stage and step of every time model."""
        if link_s > time_s - link_s:
            return cls.COMMUNICATION
        return cls.COMPUTE if compute_s >= memory_s else cls.MEMORY


class TimeKind(TextEnum):
    """What a time model's seconds are: a lower bound (datasheet peaks), an estimate at stated
    efficiencies (MFU, MBU), or a prediction from a calibration profile."""

    BOUND = "bound"
    ESTIMATE = "estimate"
    PREDICTION = "prediction"


class Limit(TextEnum):
    """What a serving configuration misses (a latency target; memory when it is evaluated beyond
    what its KV cache holds), or why a search refuses one."""

    TTFT = "TTFT"
    TPOT = "TPOT"
    MEMORY = "memory"  # the KV cache does not hold the sequences
    BUDGET = "budget"  # a step's token budget leaves no room for prompt tokens
    PREFILL = "prefill"  # prompts arrive faster than the steps take them


class FormatKind(TextEnum):
    """A number format: floating point (sign, exponent, mantissa) or integer."""

    FLOAT = "float"
    INT = "int"


class RopeExtension(TextEnum):
    """A way to run RoPE beyond its training length (seed 003 §03)."""

    NONE = "none"  # RoPE as trained
    PI = "pi"  # position interpolation
    NTK_AWARE = "ntk_aware"
    YARN = "yarn"
    DYNAMIC_NTK = "dynamic_ntk"
    LLAMA3 = "llama3"  # Llama 3.1's rope_scaling
