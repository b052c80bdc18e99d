"""The API's questions about memory: what fits on one GPU or a layout, and the activations of a
training step (``llm-cost fit``, ``activations``)."""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any, Optional, Union

from llm_cost.api import checks, choices
from llm_cost.api.model import GpuLike, ModelLike, checkpoint_of, load_gpu, load_model
from llm_cost.core.choices import ActivationFormula, MemoryConvention, Recompute
from llm_cost.core.limits import MAX_SEARCH_GPUS

if TYPE_CHECKING:
    from llm_cost.analyses.deployment import FitReport
    from llm_cost.analyses.memory import Activations
    from llm_cost.api.requests import EngineArg, KvDtypeArg, MemoryArg, ProfileArg, WeightsDtypeArg
    from llm_cost.model.layout import Layout

__all__ = ["fit", "activations", "MAX_SEARCH_GPUS"]


def fit(
    model: ModelLike,
    gpu: GpuLike = "h100",
    context: int = 8192,
    batch: int = 1,
    *,
    weights_dtype: Optional[WeightsDtypeArg] = None,
    bits_per_weight: Optional[float] = None,
    kv_dtype: Optional[KvDtypeArg] = None,
    memory: MemoryArg = MemoryConvention.PHYSICAL,
    gpu_memory_utilization: Optional[float] = None,
    reserve_bytes: Optional[float] = None,
    memory_gb: Optional[float] = None,
    max_gpus: int = 64,
    layout: Optional[Layout] = None,
    checkpoint: object = None,
    engine: Optional[EngineArg] = None,
    profile: Optional[ProfileArg] = None,
    quantize_embeddings: bool = False,
) -> FitReport:
    """What fits (``llm-cost fit``): one GPU's largest batch and context and its KV budget, and the
    smallest layouts of up to ``max_gpus`` GPUs; or, with ``layout``, that layout's per-GPU
    weights, KV, headroom and decode step. Memory is counted as a serving engine counts it unless
    ``memory="datasheet"`` (:func:`llm_cost.api.choices.memory_policy`); ``memory_gb``
    replaces the GPU's capacity (GB = 10^9 B, from 1 to 10^6); a GGUF ``checkpoint`` (default
    ``model`` when it is a path) weighs the weights at its own types. The decode step's prediction is
    under ``profile``, else the GPU's profile of ``engine`` (default vLLM:
    :func:`llm_cost.api.choices.profile_of`). A ``weights_dtype`` quantizes the matmul weights only,
    the embedding and LM head kept in 16 bits, unless ``quantize_embeddings``
    (:func:`llm_cost.api.choices.weight_bits`)."""
    from llm_cost.analyses.deployment import FitReport, deployment, smallest_layouts
    from llm_cost.analyses.memory import fit as fit_one_gpu

    context, batch = checks.count(context, "context"), checks.count(batch, "batch")
    max_gpus = checks.count(max_gpus, "max_gpus", 1, MAX_SEARCH_GPUS)
    policy = choices.memory_policy(memory, gpu_memory_utilization, reserve_bytes)
    spec, g = load_model(model), _sized(load_gpu(gpu), memory_gb)
    given = {n for n, v in (("reserve_bytes", reserve_bytes), ("gpu_memory_utilization", gpu_memory_utilization),
                            ("memory_gb", memory_gb)) if v is not None}  # fmt: skip
    choices.check_reserve(g, policy, given, sized=True)
    bits = choices.weight_bits(
        spec,
        weights_dtype,
        bits_per_weight,
        source=checkpoint_of(model, checkpoint),
        quantize_embeddings=quantize_embeddings,
    )
    kv_bits = choices.kv_dtype_of(kv_dtype).bits
    compute = choices.compute_dtype(spec, g, None, weights_dtype)
    chosen = choices.layout_of(layout)
    timed = choices.given_profile_of(g, profile, engine)
    if chosen is not None:
        from llm_cost.api.step import engine_noted

        one = deployment(spec, g, chosen, batch, context, bits, kv_bits, policy, compute, profile=timed)
        one = replace(one, step=engine_noted([one.step], profile, engine)[0])
        return FitReport(None, [], max_gpus, one)
    one_gpu = fit_one_gpu(spec, g, context, batch, bits, kv_bits, policy)
    said = choices.unread_quantization_notes(spec, weights_dtype, bits_per_weight)
    if said:  # as params says it: the weights are weighed at the config's torch_dtype
        one_gpu = replace(one_gpu, conventions=[*one_gpu.conventions, *said])
    return FitReport(
        one_gpu,
        smallest_layouts(spec, g, batch, context, bits, kv_bits, policy, max_gpus, compute, profile=timed),
        max_gpus,
        None,
    )


def _sized(gpu: Any, memory_gb: Optional[float]) -> Any:
    """``gpu`` with ``memory_gb`` GB (10^9 B) of memory, when given."""
    if memory_gb is None:
        return gpu
    size = checks.number(memory_gb, "memory_gb", minimum=1, maximum=10**6, open_min=False)
    return replace(gpu, memory_gb=size, memory_gib=None)  # the size given, no card's report of it


def activations(
    model: ModelLike,
    seq: int = 8192,
    micro_batch: int = 1,
    formula: Union[ActivationFormula, str] = ActivationFormula.MODEL,
) -> list[Activations]:
    """Training activation memory per layer (Korthikanti et al. 2022) without and with each
    recompute (``llm-cost activations``): ``formula`` ``model`` counts the model's own block,
    ``gpt`` the paper's GPT block, sbh(34 + 5as/h), as the source documents do."""
    from llm_cost.analyses.memory import activation_memory

    seq, micro_batch = checks.count(seq, "seq"), checks.count(micro_batch, "micro_batch")
    kind = checks.choice(formula, ActivationFormula, "formula")
    spec = load_model(model)
    return [activation_memory(spec, seq, micro_batch, r, formula=kind) for r in Recompute]
