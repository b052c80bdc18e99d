"""The Python API: one function per question, with the command line's defaults.

Every function takes a model and a GPU as a shipped name or alias, a path to a YAML spec or a
Hugging Face ``config.json``, an already loaded spec, or (models only) a ``config.json`` as a
dict; each returns the result object the CLI renders (``.to_dict()`` is its ``--json``). Bad
input raises :class:`LlmCostError` with the message the CLI prints. Defaults of estimates are
those of :mod:`llm_cost.perf.timemodel` (MFU 60%, MBU 80%), the CLI's own.

    >>> import llm_cost
    >>> llm_cost.params("llama3-8b").total_params
    8030261248
"""

from __future__ import annotations

import math
from enum import Enum
from typing import Any, TypeVar, Union

from llm_cost.analyses.capacity import DEPLOYMENT, DOCUMENTS, MemoryPolicy
from llm_cost.analyses.context import ContextResult, context_analysis
from llm_cost.analyses.deployment import FitReport, deployment, smallest_layouts
from llm_cost.analyses.memory import fit as fit_one_gpu
from llm_cost.analyses.moe import MoEResult, moe_analysis
from llm_cost.analyses.roofline import DecodeStep, PrefillStep, decode_step, prefill_step
from llm_cost.analyses.serving import ServePlan, Targets, Traffic, plan
from llm_cost.analyses.speculative import SpecResult, speculative
from llm_cost.analyses.training import TrainResult
from llm_cost.analyses.training import train as train_run
from llm_cost.core.choices import Logits, Recompute, WeightBytes
from llm_cost.core.errors import InputError
from llm_cost.core.types import Dtype, dtype_of
from llm_cost.model.kv import KVResult, kv_cache
from llm_cost.model.layout import ONE_GPU, Layout
from llm_cost.model.params import ParamsResult, count_params
from llm_cost.perf.ridge import default_compute_dtype
from llm_cost.perf.timemodel import DEFAULT_MBU, DEFAULT_MFU
from llm_cost.specs import load
from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = [
    "LlmCostError",
    "Layout",
    "load_model",
    "load_gpu",
    "params",
    "kv",
    "decode",
    "prefill",
    "fit",
    "moe",
    "spec",
    "context",
    "train",
    "serve",
    "MemoryPolicy",
    "DEPLOYMENT",
    "DOCUMENTS",
]

#: The one exception type of the API: a name, file, config or argument that is not valid.
LlmCostError = InputError

ModelLike = Union[str, ModelSpec, dict]
GpuLike = Union[str, HardwareSpec]
E = TypeVar("E", bound=Enum)


def load_model(model: ModelLike) -> ModelSpec:
    """A model spec from a shipped name or alias, a YAML or config.json path, a spec built in
    Python (validated here, as a file is: its constructor checks only the field names), or a Hugging
    Face config.json as a dict. LlmCostError if none works."""
    if not isinstance(model, (str, ModelSpec, dict)):
        raise LlmCostError(f"model: {model!r} is not a name, a path, a config dict or a ModelSpec")
    if isinstance(model, ModelSpec):
        return load.checked_spec(model, "model")
    if isinstance(model, dict):
        from llm_cost.specs.hf import hf_to_spec

        return hf_to_spec(model, "a config dict")[0]
    return load.load_model(model)


def load_gpu(gpu: GpuLike) -> HardwareSpec:
    """A GPU spec from a shipped name or alias, a YAML path, or a spec built in Python (validated
    here, as a file is). LlmCostError if none works."""
    if not isinstance(gpu, (str, HardwareSpec)):
        raise LlmCostError(f"gpu: {gpu!r} is not a name, a path or a HardwareSpec")
    return load.checked_spec(gpu, "gpu") if isinstance(gpu, HardwareSpec) else load.load_gpu(gpu)


def _count(value: Any, name: str, minimum: int = 1) -> int:
    """An integer argument at least ``minimum``; LlmCostError naming the argument otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise LlmCostError(f"{name}: {value!r} must be an integer of at least {minimum}")
    return value


def _counts(values: Any, name: str, minimum: int = 1) -> list[int]:
    """A non-empty list of integer arguments."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        raise LlmCostError(f"{name}: {values!r} must be a list of integers, e.g. [1024, 8192]")
    out = [_count(v, name, minimum) for v in values]
    if not out:
        raise LlmCostError(f"{name}: give at least one value")
    return out


def _efficiency(value: Any, name: str) -> float:
    """An MFU or MBU in [0.01, 1]."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.01 <= value <= 1:
        raise LlmCostError(f"{name}: {value!r} must be a number between 0.01 and 1 (e.g. 0.6)")
    return float(value)


def _positive(value: Any, name: str, maximum: float = 1e300, zero: bool = False) -> float:
    """A finite number greater than 0 (or at least 0 with ``zero``) and at most ``maximum``."""
    ok = (
        not isinstance(value, bool)
        and isinstance(value, (int, float))
        and math.isfinite(value)
        and (value >= 0 if zero else value > 0)
        and value <= maximum
    )
    if not ok:
        raise LlmCostError(
            f"{name}: {value!r} must be a finite number {'of at least 0' if zero else 'above 0'} and "
            f"at most {maximum:g}"
        )
    return float(value)


def _choice(kind: type[E], value: Any, name: str) -> E:
    """``value`` as a member of ``kind`` (its value, case-insensitive); LlmCostError naming the
    argument and the valid values otherwise."""
    try:
        return kind(str(value).strip().lower())
    except ValueError:
        raise LlmCostError(f"{name}: {value!r} is not one of: {', '.join(m.value for m in kind)}") from None


def _optional(value: Any, name: str, check: Any) -> Any:
    return None if value is None else check(value, name)


def _gpus(value: Any, name: str) -> int:
    """A GPU budget: an integer from 1 to the planner's 4,096."""
    from llm_cost.analyses.serving import MAX_PLAN_GPUS

    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_PLAN_GPUS:
        raise LlmCostError(f"{name}: {value!r} must be an integer from 1 to {MAX_PLAN_GPUS:,}")
    return value


def _policy(value: Any) -> MemoryPolicy:
    if not isinstance(value, MemoryPolicy):
        raise LlmCostError(
            f"policy: {value!r} is not a MemoryPolicy; use llm_cost.DEPLOYMENT, llm_cost.DOCUMENTS or "
            "dataclasses.replace(llm_cost.DEPLOYMENT, ...)"
        )
    return value


def _layout(value: Any, name: str = "layout") -> Layout:
    if not isinstance(value, Layout):
        raise LlmCostError(f"{name}: {value!r} is not a Layout, e.g. llm_cost.Layout(tp=2)")
    return value


def _dtype(value: Any, name: str, storage: bool = True) -> str:
    """A dtype name, checked (``bf16``, ``fp8`` ...)."""
    return dtype_of(value, name, storage).value


def _bits(spec: ModelSpec, weights_dtype: str | None, bits_per_weight: float | None) -> float:
    if weights_dtype is not None and bits_per_weight is not None:
        raise LlmCostError("give weights_dtype or bits_per_weight, not both")
    return bits_per_weight if bits_per_weight is not None else Dtype(weights_dtype or spec.torch_dtype).bits


def params(model: ModelLike, weights_dtype: str | None = None, layout: Layout | None = None) -> ParamsResult:
    """Parameter breakdown and weight bytes (``llm-cost params``)."""
    s = load_model(model)
    dtype = Dtype(weights_dtype) if weights_dtype else None
    return count_params(s, dtype.bits if dtype else None, dtype.value if dtype else None, layout)


def kv(
    model: ModelLike,
    contexts: list[int] = (1024, 8192, 32768, 131072),
    batch: int = 1,
    kv_dtype: str = "bf16",
    layout: Layout | None = None,
) -> KVResult:
    """KV-cache bytes per token and at each context (``llm-cost kv``)."""
    return kv_cache(
        load_model(model), _counts(contexts, "contexts"), Dtype(kv_dtype).bits, kv_dtype, _count(batch, "batch"), layout
    )


def _compute(s: ModelSpec, g: HardwareSpec, dtype: str | None, weights_dtype: str | None) -> Dtype:
    return Dtype(dtype) if dtype else default_compute_dtype(weights_dtype or s.torch_dtype, g)


def decode(
    model: ModelLike,
    gpu: GpuLike = "h100",
    batch: int = 1,
    context: int = 0,
    dtype: str | None = None,
    weights_dtype: str | None = None,
    bits_per_weight: float | None = None,
    kv_dtype: str = "bf16",
    mfu: float = DEFAULT_MFU,
    mbu: float = DEFAULT_MBU,
    weight_bytes: str = "read",
    layout: Layout = ONE_GPU,
) -> DecodeStep:
    """One decode step's bound and estimate (``llm-cost roofline MODEL --batch B --context C``)."""
    s, g = load_model(model), load_gpu(gpu)
    batch, context = _count(batch, "batch"), _count(context, "context", 0)
    mfu, mbu, kv_dtype = _efficiency(mfu, "mfu"), _efficiency(mbu, "mbu"), _dtype(kv_dtype, "kv_dtype")
    dtype = _dtype(dtype, "dtype", storage=False) if dtype is not None else None
    weights_dtype = _dtype(weights_dtype, "weights_dtype") if weights_dtype is not None else None
    return decode_step(
        s,
        g,
        batch,
        context,
        _compute(s, g, dtype, weights_dtype),
        _bits(s, weights_dtype, bits_per_weight),
        Dtype(kv_dtype).bits,
        mfu,
        mbu,
        _choice(WeightBytes, weight_bytes, "weight_bytes"),
        layout,
    )


def prefill(
    model: ModelLike,
    gpu: GpuLike = "h100",
    seq: int = 8192,
    batch: int = 1,
    dtype: str | None = None,
    weights_dtype: str | None = None,
    kv_dtype: str = "bf16",
    mfu: float = DEFAULT_MFU,
    mbu: float = DEFAULT_MBU,
    logits: str = "last",
    layout: Layout = ONE_GPU,
) -> PrefillStep:
    """A prefill: the time to first token (``llm-cost roofline MODEL --phase prefill --seq N``)."""
    s, g = load_model(model), load_gpu(gpu)
    seq, batch = _count(seq, "seq"), _count(batch, "batch")
    mfu, mbu, kv_dtype = _efficiency(mfu, "mfu"), _efficiency(mbu, "mbu"), _dtype(kv_dtype, "kv_dtype")
    dtype = _dtype(dtype, "dtype", storage=False) if dtype is not None else None
    weights_dtype = _dtype(weights_dtype, "weights_dtype") if weights_dtype is not None else None
    return prefill_step(
        s,
        g,
        seq,
        batch,
        _compute(s, g, dtype, weights_dtype),
        _bits(s, weights_dtype, None),
        Dtype(kv_dtype).bits,
        mfu,
        logits=_choice(Logits, logits, "logits"),
        mbu=mbu,
        layout=layout,
    )


def fit(
    model: ModelLike,
    gpu: GpuLike = "h100",
    context: int = 8192,
    batch: int = 1,
    weights_dtype: str | None = None,
    kv_dtype: str = "bf16",
    policy: MemoryPolicy = DEPLOYMENT,
    max_gpus: int = 64,
    layout: Layout | None = None,
) -> FitReport:
    """What fits on one GPU and the smallest layouts, or one layout (``llm-cost fit``); memory
    counted under ``policy`` (default: a serving engine's accounting, see
    :mod:`llm_cost.analyses.capacity`; ``DOCUMENTS`` for the source documents')."""
    s, g = load_model(model), load_gpu(gpu)
    context, batch = _count(context, "context"), _count(batch, "batch")
    policy, max_gpus = _policy(policy), _count(max_gpus, "max_gpus")
    weights_dtype = _dtype(weights_dtype, "weights_dtype") if weights_dtype is not None else None
    bits, kv_bits = _bits(s, weights_dtype, None), Dtype(_dtype(kv_dtype, "kv_dtype")).bits
    if layout is not None:
        return FitReport(None, [], max_gpus, deployment(s, g, _layout(layout), batch, context, bits, kv_bits, policy))
    return FitReport(
        fit_one_gpu(s, g, context, batch, bits, kv_bits, policy),
        smallest_layouts(s, g, batch, context, bits, kv_bits, policy, max_gpus),
        max_gpus,
        None,
    )


def moe(
    model: ModelLike,
    batches: list[int] = (1, 32, 128),
    weights_dtype: str | None = None,
    ep: int = 1,
    gpu: GpuLike | None = None,
) -> MoEResult:
    """MoE parameter counts and expert traffic per batch (``llm-cost moe``)."""
    s = load_model(model)
    return moe_analysis(
        s,
        _counts(batches, "batches"),
        _bits(s, weights_dtype, None),
        ep,
        gpu=load_gpu(gpu) if gpu is not None else None,
    )


def spec(
    alpha: float,
    gamma: int,
    c: float | None = None,
    model: ModelLike | None = None,
    gpu: GpuLike | None = None,
    batches: list[int] | None = None,
    context: int = 0,
    mfu: float = DEFAULT_MFU,
    mbu: float = DEFAULT_MBU,
    mtp: bool = False,
) -> SpecResult:
    """Speculative decoding: closed forms and, with a model and GPU, the step model (``llm-cost spec``)."""
    s = load_model(model) if model is not None else None
    g = load_gpu(gpu) if gpu is not None else None
    _positive(alpha, "alpha", 1, zero=True)
    if alpha >= 1:
        raise LlmCostError(f"alpha: {alpha!r} must be below 1 (an acceptance rate)")
    gamma, context = _count(gamma, "gamma"), _count(context, "context", 0)
    c = _optional(c, "c", lambda v, n: _positive(v, n, zero=True))
    batches = _counts(batches, "batches") if batches is not None else None
    mfu, mbu = _efficiency(mfu, "mfu"), _efficiency(mbu, "mbu")
    dtype = default_compute_dtype(s.torch_dtype, g) if (s is not None and g is not None) else Dtype.BF16
    return speculative(alpha, gamma, c, s, g, batches, mfu, context, dtype, WeightBytes.READ, mtp, mbu)


def context(
    model: ModelLike,
    contexts: list[int] = (8192, 32768, 131072),
    gpu: GpuLike = "h100",
    mfu: float = DEFAULT_MFU,
    mbu: float = DEFAULT_MBU,
) -> ContextResult:
    """Long-context costs (``llm-cost context``)."""
    return context_analysis(load_model(model), _counts(contexts, "contexts"), load_gpu(gpu), mfu, mbu=mbu)


def train(model: ModelLike, tokens: int, gpu: GpuLike = "h100", **options: Any) -> TrainResult:
    """Training FLOPs, time, energy and memory (``llm-cost train``); ``options`` as
    :func:`llm_cost.analyses.training.train` (gpus, mfu, gpu_hours, recompute, dtype, tp, pp, dp, zero ...)."""
    if "recompute" in options:
        options["recompute"] = _choice(Recompute, options["recompute"], "recompute")
    if "dtype" in options:
        options["dtype"] = dtype_of(options["dtype"], "dtype", storage=False)
    return train_run(load_model(model), tokens, load_gpu(gpu), **options)


def serve(
    model: ModelLike,
    gpu: GpuLike = "h100",
    input_tokens: int = 2048,
    output_tokens: int = 256,
    *,
    ttft_s: float | None = None,
    tpot_s: float | None = None,
    qps: float | None = None,
    gpus: int | None = None,
    usd_per_gpu_hour: float | None = None,
    weights_dtype: str | None = None,
    kv_dtype: str = "bf16",
    policy: MemoryPolicy = DEPLOYMENT,
    **search: Any,
) -> ServePlan:
    """The serving plan (``llm-cost serve``): the best configuration meeting the targets, the
    frontier and the cost, timed by the GPU's shipped calibration profile (else the MFU/MBU
    estimate). ``search`` narrows the search as :func:`llm_cost.analyses.serving.plan` does:
    ``modes`` (ServingMode values), ``layouts`` (Layouts), ``concurrency`` and ``chunks`` (lists
    of integers; a chunk of None runs prompts unchunked)."""
    from llm_cost.perf.calibrated import prediction_model

    s, g = load_model(model), load_gpu(gpu)
    qps = _optional(qps, "qps", lambda v, n: _positive(v, n, 1e6))
    traffic = Traffic(_count(input_tokens, "input_tokens"), _count(output_tokens, "output_tokens", 2), qps)
    ttft_s = _optional(ttft_s, "ttft_s", lambda v, n: _positive(v, n, 86400))
    tpot_s = _optional(tpot_s, "tpot_s", lambda v, n: _positive(v, n, 86400))
    gpus = _optional(gpus, "gpus", _gpus)
    usd_per_gpu_hour = _optional(usd_per_gpu_hour, "usd_per_gpu_hour", lambda v, n: _positive(v, n, 1e6, zero=True))
    policy = _policy(policy)
    search = _search(search)
    weights_dtype = _dtype(weights_dtype, "weights_dtype") if weights_dtype is not None else None
    model_ = prediction_model(g.name)
    return plan(
        s,
        g,
        traffic,
        Targets(ttft_s, tpot_s),
        model_,
        gpus=gpus,
        weight_bits=_bits(s, weights_dtype, None),
        kv_bits=Dtype(_dtype(kv_dtype, "kv_dtype")).bits,
        compute_dtype=_compute(s, g, None, weights_dtype),
        usd_per_gpu_hour=usd_per_gpu_hour,
        policy=policy,
        **search,
    )


def _search(search: dict[str, Any]) -> dict[str, Any]:
    """The search options of :func:`serve`, checked."""
    from llm_cost.core.choices import ServingMode

    out: dict[str, Any] = {}
    for key, value in search.items():
        if key not in ("modes", "layouts", "concurrency", "chunks"):
            raise LlmCostError(f"{key}: not a search option; give modes, layouts, concurrency or chunks")
        if isinstance(value, (str, bytes)) or not hasattr(value, "__iter__") or not list(value):
            raise LlmCostError(f"{key}: {value!r} must be a non-empty list")
        items = list(value)
        if key == "modes":
            try:
                out[key] = tuple(ServingMode(m) for m in items)
            except ValueError:
                raise LlmCostError(f"modes: {value!r} must list aggregated and/or disaggregated") from None
        elif key == "layouts":
            out[key] = [_layout(v, "layouts") for v in items]
        elif key == "concurrency":
            out[key] = [_count(v, key) for v in items]
        else:
            out[key] = [None if v is None else _count(v, key, 2) for v in items]
    return out
