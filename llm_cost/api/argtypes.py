"""The value types the API's arguments take, for annotations (a model, a GPU, a target, a dtype:
an enum member or its value, a name or a path). Kept apart from the request records
(:mod:`llm_cost.api.requests`) so that a command that builds no record does not pay for their
classes at start-up (``params`` imports this through :mod:`llm_cost.api.model`)."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Union

from llm_cost.core.choices import MemoryConvention, ServingMode

if TYPE_CHECKING:
    from pathlib import Path

    from llm_cost.core.choices import Router
    from llm_cost.core.types import Dtype, Engine, ServingEngine, StorageDtype, WeightFormat
    from llm_cost.perf.profile import Profile
    from llm_cost.simulate import Target, Trace, Workload
    from llm_cost.simulate.workload import Lengths
    from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = [
    "ModelLike",
    "GpuLike",
    "TargetArg",
    "LengthsArg",
    "WorkloadArg",
    "TraceArg",
    "ProfileArg",
    "EngineArg",
    "DtypeArg",
    "WeightsDtypeArg",
    "KvDtypeArg",
    "MemoryArg",
    "RouterArg",
    "ModesArg",
    "PriceArg",
]

#: A model as the API takes it: a shipped name or alias, a YAML or ``config.json`` path (text or a
#: ``pathlib.Path``), a loaded spec, or a ``config.json`` as a dict.
ModelLike = Union[str, "os.PathLike[str]", "ModelSpec", dict]
#: A GPU: a shipped name or alias, a YAML path (text or a ``pathlib.Path``), or a loaded spec.
GpuLike = Union[str, "os.PathLike[str]", "HardwareSpec"]
#: A latency target: seconds (bounds the mean), text (``"p99:2s"``) or a Target.
TargetArg = Union[float, str, "Target"]
#: Tokens per request: a count, a distribution's text (``"lognormal:mean=800,sd=400"``) or a distribution.
LengthsArg = Union[int, str, "Lengths"]
#: A workload: a preset name, a YAML file, or a Workload.
WorkloadArg = Union[str, "Path", "Workload"]
#: A trace: a JSONL or CSV file, or a Trace.
TraceArg = Union[str, "Path", "Trace"]
#: A time profile: a name ``<family>-<engine>``, a YAML path, or a Profile.
ProfileArg = Union[str, "Path", "Profile"]
#: An engine (its enum member or value).
EngineArg = Union["Engine", "ServingEngine", str]
#: A storage dtype of weights or compute (its enum member or value).
DtypeArg = Union["Dtype", str]
#: A format of the weights (a storage dtype or a block-scaled format, or its value).
WeightsDtypeArg = Union["WeightFormat", "Dtype", str]
#: A KV-cache dtype (its enum member or value).
KvDtypeArg = Union["StorageDtype", str]
#: Bytes or GiB memory accounting (its enum member or value).
MemoryArg = Union[MemoryConvention, str]
#: How replicas share requests (its enum member or value).
RouterArg = Union["Router", str]
#: The serving modes searched: one, or several (each a member or its value).
ModesArg = Union[ServingMode, str, Sequence[Union[ServingMode, str]]]
#: One price per GPU-hour (USD), or one per GPU of a comparison.
PriceArg = Union[float, Sequence[float]]
