"""The API's mixture-of-experts question (``llm-cost moe``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from llm_cost.api import checks, choices
from llm_cost.api.model import GpuLike, ModelLike, load_gpu, load_model
from llm_cost.core.errors import InputError
from llm_cost.core.types import Dtype, StorageDtype

if TYPE_CHECKING:
    from llm_cost.analyses.moe import MoEResult
    from llm_cost.api.requests import DtypeArg, KvDtypeArg, WeightsDtypeArg
    from llm_cost.specs.schema import ModelSpec

__all__ = ["moe"]


def moe(
    model: ModelLike,
    batches: Sequence[int] = (1, 32, 128),
    *,
    weights_dtype: Optional[WeightsDtypeArg] = None,
    ep: int = 1,
    redundant_experts: int = 0,
    dispatch_dtype: Optional[KvDtypeArg] = None,
    combine_dtype: KvDtypeArg = StorageDtype.BF16,
    tp: Optional[int] = None,
    prompt_tokens: int = 4096,
    gpu: Optional[GpuLike] = None,
    dtype: Optional[DtypeArg] = None,
) -> MoEResult:
    """MoE parameter counts (total, active, read per step), expected experts hit per decode
    batch, expert-parallel memory and all-to-all volume against the TP all-reduce
    (``llm-cost moe``); with ``gpu``, the expert GEMMs' ridge at the step's compute dtype
    (:func:`llm_cost.api.choices.compute_dtype`). ``dispatch_dtype`` by default the step's
    (:func:`llm_cost.workload.step.dispatch_bits_of`: FP8 for FP8 or FP4 activations, else BF16),
    the compute dtype with ``gpu``, else :func:`llm_cost.api.choices.activation_dtype`. ``tp``: the
    all-reduce's degree, by default the largest of 8, 4, 2, 1 that divides the model's heads (a fixed
    8 refused GLM-4.7-Flash's 20 query heads for a TP the user never asked). InputError naming the
    argument: a dense model, a ``tp`` that does not divide the heads (with those that do), a
    ``dtype`` without ``gpu``."""
    from llm_cost.analyses.moe import moe_analysis, require_moe

    batches = checks.counts(batches, "batches")
    ep = checks.count(ep, "ep", 1, 2**16)
    given_tp = checks.optional(tp, checks.count, "tp", 1, 2**16)
    redundant = checks.count(redundant_experts, "redundant_experts", 0, 2**16)
    prompt = checks.count(prompt_tokens, "prompt_tokens")
    combine = checks.choice(combine_dtype, StorageDtype, "combine_dtype")
    s = load_model(model)
    require_moe(s)
    # tp sets the all-reduce the dispatch is weighed against, over the attention heads; the
    # experts' widths are not split here (with --ep the experts stay whole), so only the heads are
    # checked (the second attacker: a MoE spec's odd expert width was refused at the default tp 8)
    tp = _all_reduce_tp(s, given_tp)
    if gpu is None and dtype is not None:
        raise InputError("dtype: sets the expert GEMMs' ridge, which needs gpu", fields=("dtype", "gpu"))
    g = load_gpu(gpu) if gpu is not None else None
    compute = choices.compute_dtype(s, g, dtype, weights_dtype) if g is not None else None
    bits = choices.weight_bits(s, weights_dtype)
    dispatch = _dispatch_bits(dispatch_dtype, compute or choices.activation_dtype(s, weights_dtype))
    return moe_analysis(s, batches, bits, ep, redundant, dispatch, combine.bits, tp, prompt, g, compute)


def _all_reduce_tp(spec: ModelSpec, tp: int | None) -> int:
    """``tp`` checked against ``spec``'s heads (InputError naming tp with the degrees up to 64 that
    divide them), or by default the largest of 8, 4, 2, 1 that does."""
    from llm_cost.model.layout import Layout, check_heads

    def divides(degree: int) -> bool:
        try:
            check_heads(spec, Layout(tp=degree))
        except InputError:
            return False
        return True

    if tp is None:
        return next(t for t in (8, 4, 2, 1) if divides(t))
    if not divides(tp):
        fitting = ", ".join(str(t) for t in range(1, 65) if divides(t))
        raise InputError(
            f"tp: {tp} does not divide {spec.name}'s attention heads; give one of {fitting}", fields=("tp",)
        )
    return tp


def _dispatch_bits(dispatch_dtype: Optional[KvDtypeArg], activations: Dtype) -> int:
    """The dispatch's bits: ``dispatch_dtype``'s if given, else the step's for ``activations``."""
    from llm_cost.workload.step import dispatch_bits_of

    if dispatch_dtype is not None:
        return checks.choice(dispatch_dtype, StorageDtype, "dispatch_dtype").bits
    return dispatch_bits_of(activations)
