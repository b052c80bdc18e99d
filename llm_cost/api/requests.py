"""Typed requests of the API: one record per question, its fields the API's argument names (the
command line's flags where :data:`llm_cost.cli.flags.FLAGS` renames them), its defaults the one
place the question's defaults are written. The command line builds a request from its parsed flags
and hands it to the API (:func:`llm_cost.api.serving.serve_request`); the API's keyword functions
(:func:`llm_cost.api.serving.serve`) build the same record from their arguments. Each field is
checked where the question reads it (:mod:`llm_cost.api.checks`), so a record built by hand with a
bad value fails as the keyword call does: one InputError naming the field.

Each field's type names what a caller passes: an enum member or its value (``"fp8"``), a count,
seconds, a file path; the value type aliases below are for annotations only (nothing here is
imported at run time beyond the standard library, to keep the command line's cold start)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Union

from llm_cost.api.argtypes import (  # the records' field types, re-exported
    DtypeArg,
    EngineArg,
    GpuLike,
    KvDtypeArg,
    LengthsArg,
    MemoryArg,
    ModelLike,
    ModesArg,
    PriceArg,
    ProfileArg,
    RouterArg,
    TargetArg,
    TraceArg,
    WeightsDtypeArg,
    WorkloadArg,
)
from llm_cost.core.choices import Logits, MemoryConvention, ServingMode, WeightBytes
from llm_cost.core.types import Phase

if TYPE_CHECKING:
    from llm_cost.model.layout import Layout


#: Both serving modes, the default search.
BOTH_MODES = (ServingMode.AGGREGATED, ServingMode.DISAGGREGATED)


@dataclass(frozen=True)
class ServeRequest:
    """The serving question (``llm-cost serve``), every argument of
    :func:`llm_cost.api.serving.serve` (see it for what each means, its units and its checks):
    ``gpu`` one GPU, or the GPUs of a comparison (:func:`llm_cost.api.serving.compare_request`);
    ``usd_per_gpu_hour`` one price, or one per GPU of a comparison."""

    model: ModelLike
    gpu: Union[GpuLike, Sequence[GpuLike]] = "h100"
    input_tokens: Optional[LengthsArg] = None
    output_tokens: Optional[LengthsArg] = None
    ttft_s: Optional[TargetArg] = None
    tpot_s: Optional[TargetArg] = None
    itl_s: Optional[TargetArg] = None
    e2e_s: Optional[TargetArg] = None
    qps: Optional[float] = None
    gpus: Optional[int] = None
    usd_per_gpu_hour: Optional[PriceArg] = None
    modes: ModesArg = BOTH_MODES
    layout: Optional[Layout] = None
    concurrency: Optional[int] = None
    chunk_tokens: Optional[int] = None
    chunked_prefill: bool = True
    workload: Optional[WorkloadArg] = None
    trace: Optional[TraceArg] = None
    prefix_tokens: Optional[int] = None
    prefix_groups: int = 1
    users_per_prefix: int = 1
    requests: Optional[int] = None
    engine: Optional[EngineArg] = None
    max_num_seqs: Optional[int] = None
    prefix_caching: bool = True
    max_model_len: Optional[int] = None
    seed: int = 0
    router: Optional[RouterArg] = None
    analytic: bool = False
    dtype: Optional[DtypeArg] = None
    weights_dtype: Optional[WeightsDtypeArg] = None
    bits_per_weight: Optional[float] = None
    group_size: Optional[int] = None
    kv_dtype: Optional[KvDtypeArg] = None
    quantize_embeddings: bool = False
    profile: Optional[ProfileArg] = None
    memory: MemoryArg = MemoryConvention.PHYSICAL
    gpu_memory_utilization: Optional[float] = None
    reserve_bytes: Optional[float] = None
    network_gb_s: Optional[float] = None
    emit: Optional[EngineArg] = None

    @classmethod
    def of(cls, options: Mapping[str, object]) -> ServeRequest:
        """The request of keyword ``options`` (a call's arguments by name); InputError naming any
        name that is not a field (:func:`~llm_cost.api.checks.known_options`)."""
        from llm_cost.api import checks

        checks.known_options(dict(options), cls, keyword_only=False)
        fields: dict[str, Any] = dict(options)  # each checked where the question reads it
        return cls(**fields)

    def given(self) -> dict[str, object]:
        """The fields by name, as given (not copied: a Layout or Workload stays itself)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclass(frozen=True)
class StepOptions:
    """How a step (a decode step or a prefill) is counted and timed, the keyword arguments
    :func:`llm_cost.api.step.decode_sweep` and :func:`~llm_cost.api.step.prefill_sweep` share (see
    them for each one's units and defaults; None: the default of :mod:`llm_cost.api.choices`)."""

    dtype: Optional[DtypeArg] = None
    weights_dtype: Optional[WeightsDtypeArg] = None
    bits_per_weight: Optional[float] = None
    group_size: Optional[int] = None
    kv_dtype: Optional[KvDtypeArg] = None
    mfu: Optional[float] = None
    mbu: Optional[float] = None
    layout: Optional[Layout] = None
    network_gb_s: Optional[float] = None
    profile: Optional[ProfileArg] = None
    engine: Optional[EngineArg] = None
    quantize_embeddings: bool = False

    def given(self) -> dict[str, Any]:
        """The options by name, as given."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


@dataclass(frozen=True)
class StepRequest:
    """The step question (``llm-cost roofline MODEL``): ``phase`` decode (``batches`` x
    ``lengths`` cached tokens, :func:`llm_cost.api.step.decode_sweep`, with ``weight_bytes``,
    ``detail`` and ``ops``) or prefill (``batches`` x ``lengths`` prompt tokens,
    :func:`~llm_cost.api.step.prefill_sweep`, with ``logits``), under ``options``."""

    model: ModelLike
    gpu: GpuLike = "h100"
    phase: Union[Phase, str] = Phase.DECODE
    batches: Sequence[int] = (1,)
    lengths: Sequence[int] = (0,)
    logits: Union[Logits, str] = Logits.LAST
    weight_bytes: Union[WeightBytes, str] = WeightBytes.READ
    detail: bool = True
    ops: bool = True
    options: StepOptions = StepOptions()
