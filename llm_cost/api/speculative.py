"""The API's speculative-decoding question (``llm-cost spec``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional, Union

from llm_cost.api import checks, choices
from llm_cost.api.model import GpuLike, ModelLike, load_gpu, load_model
from llm_cost.core.choices import WeightBytes
from llm_cost.core.errors import InputError
from llm_cost.core.limits import DRAFT_COST_RANGE
from llm_cost.core.types import Dtype

if TYPE_CHECKING:
    from llm_cost.analyses.speculative import SpecResult
    from llm_cost.api.requests import DtypeArg, EngineArg, ProfileArg
    from llm_cost.model.layout import Layout

__all__ = ["spec", "SPEC_BATCHES"]

#: Batches of the speculative step model when none are given.
SPEC_BATCHES = (1, 8, 32, 64, 128, 256)


def _check_step_model(model: object, gpu: object, batches: object, context: int, mtp: bool) -> None:
    """InputError for step-model arguments without the model and GPU that the step model needs:
    batches, a gpu without a model, a model without a gpu (unless ``mtp`` takes c from it), a context."""
    if batches is not None and (model is None or gpu is None):
        raise InputError(
            "batches is for the step model: give a model and a gpu too", fields=("batches", "model", "gpu")
        )
    if gpu is not None and model is None:
        raise InputError("gpu needs a model: the step time is of a model on a GPU", fields=("gpu", "model"))
    if gpu is None and model is not None and not mtp:
        raise InputError(
            "model needs a gpu to time its steps (or mtp, to take c from its MTP module); without them the "
            "closed forms use alpha, gamma and c only",
            fields=("model", "gpu", "mtp"),
        )
    if gpu is None and context:
        raise InputError(
            "context is for the step times: give a model and a gpu too", fields=("context", "model", "gpu")
        )


def acceptance_rate(alpha: object) -> float:
    """``alpha`` checked: an acceptance rate from 0 to below 1 (at 1 every draft is accepted and a
    round never ends). InputError naming ``alpha``, one wording for every way it is out (a second
    attacker read "in [0, 1]", "at most 1" and "below 1" for one rule)."""
    try:
        value = checks.number(alpha, "alpha", maximum=1, open_min=False)
    except InputError:
        value = None
    if value is None or value >= 1:
        raise InputError(f"alpha: {alpha!r} must be from 0 to below 1 (an acceptance rate)", fields=("alpha",))
    return value


def spec(
    model: Optional[ModelLike] = None,
    gpu: Optional[GpuLike] = None,
    *,
    alpha: float,
    gamma: int,
    c: Optional[float] = None,
    batches: Optional[Sequence[int]] = None,
    context: int = 0,
    mtp: bool = False,
    mfu: Optional[float] = None,
    mbu: Optional[float] = None,
    dtype: Optional[DtypeArg] = None,
    weight_bytes: Union[WeightBytes, str] = WeightBytes.READ,
    layout: Optional[Layout] = None,
    profile: Optional[ProfileArg] = None,
    network_gb_s: Optional[float] = None,
    engine: Optional[EngineArg] = None,
) -> SpecResult:
    """Speculative decoding (``llm-cost spec``): expected tokens per round at acceptance rate
    ``alpha`` with ``gamma`` drafted tokens, the speedup at draft cost ``c`` (a fraction of a
    target step; or the model's MTP module with ``mtp``), and, with a model and a GPU, the step
    model over ``batches`` (default 1 to 256) at ``context`` cached tokens, per GPU of ``layout``
    (default one GPU), its steps timed as ``roofline`` predicts them (:func:`choices.time_model`:
    ``profile``, else the GPU's profile of ``engine``, default vLLM: :func:`choices.time_model_of`, else
    the MFU/MBU estimate); given ``mfu`` or ``mbu``
    without a ``profile``, by the MFU/MBU estimate at them (the documents' figures use MBU 1)."""
    from llm_cost.analyses.speculative import speculative

    alpha = acceptance_rate(alpha)
    gamma, context = checks.count(gamma, "gamma", 1, 2**16), checks.count(context, "context", 0)
    c = checks.optional(c, checks.number, "c", minimum=DRAFT_COST_RANGE[0], maximum=DRAFT_COST_RANGE[1], open_min=False)
    if checks.flag(mtp, "mtp") and c is not None:
        raise InputError("give c or mtp (which derives c from the model's MTP module), not both", fields=("c", "mtp"))
    _check_step_model(model, gpu, batches, context, mtp)
    points: Optional[list[int]] = checks.optional(batches, checks.counts, "batches")
    s = load_model(model) if model is not None else None
    g = load_gpu(gpu) if gpu is not None else None
    compute = choices.compute_dtype(s, g, dtype) if s is not None and g is not None else None
    if g is not None and points is None:
        points = list(SPEC_BATCHES)
    reads = checks.choice(weight_bytes, WeightBytes, "weight_bytes")
    chosen_layout = choices.layout_of(layout)
    if g is None and (
        chosen_layout is not None or profile is not None or network_gb_s is not None or engine is not None
    ):
        raise InputError(
            "layout, profile, engine and network_gb_s are for the step model: give a model and a gpu too",
            fields=("layout", "profile", "engine", "network_gb_s", "gpu"),
        )
    timer = None
    if g is not None:
        from llm_cost.perf.timemodel import EfficiencyEstimate

        network = choices.network_gb_s_of(network_gb_s)
        choices.given_profile_of(g, profile, engine)  # refuses an engine that contradicts the profile
        timer = choices.time_model_of(g, engine, profile, network)
        if isinstance(timer, EfficiencyEstimate) or (profile is None and (mfu is not None or mbu is not None)):
            # no profile for this GPU, or an MFU/MBU asked for: the estimate at them (as the documents' figures)
            timer = EfficiencyEstimate(choices.mfu_of(mfu), choices.mbu_of(mbu), network)
    from llm_cost.model.layout import ONE_GPU

    return speculative(
        alpha,
        gamma,
        c,
        s,
        g,
        points,
        choices.mfu_of(mfu),
        context,
        compute or Dtype.BF16,
        reads,
        bool(mtp),
        choices.mbu_of(mbu),
        timer,
        chosen_layout or ONE_GPU,
        choices.weight_bits(s) if s is not None else None,  # the checkpoint's formats, as roofline reads them
    )
