"""The one rule that picks a time model: every command, the serving simulator and the planners ask
:func:`time_model_for`, so one step on one GPU under one engine has one time everywhere.

The rule, for a GPU and an engine (the caller resolves a default engine; the weight and compute
dtypes and the phase are read from the step itself, and the profile's parameters cover each: a GEMM
width's share of peak, weight-only formats' shares, prefill and decode attention):

1. a profile given by the user (a name or a YAML file: :func:`llm_cost.perf.profile.load_profile`)
   wins;
2. else the shipped fit's parameters of the GPU's kernel family (:func:`~llm_cost.perf.families.family_of`)
   joined with the engine's (:func:`profile_for`, by :func:`resolve`). A family without rows takes
   the nearest fitted family's (the same vendor first, then the nearest datasheet bandwidth and
   16-bit peak); an engine without rows takes its stand-in's (:data:`STAND_IN`); either makes the
   prediction ``transferred``, and its band the one measured for such predictions;
3. else (no fit shipped) the MFU/MBU estimate, labelled as one.

The fit checks its held-out rows through :func:`resolve` too (:mod:`llm_cost.analyses.calibration`),
so the bands are measured under the rule that predictions use.
"""

from __future__ import annotations

import dataclasses
import math
from functools import lru_cache
from typing import Any

from llm_cost.core.errors import SpecError
from llm_cost.core.types import Engine
from llm_cost.perf.eras import EngineBlock, current_block
from llm_cost.perf.families import KernelFamily, family_of
from llm_cost.perf.profile import (
    Profile,
    RegimeBand,
    Situation,
    SourceError,
    fit_data,
    join,
    profile_file,
)
from llm_cost.perf.timemodel import DEFAULT_NETWORK_GB_S, EfficiencyEstimate
from llm_cost.specs.files import shown
from llm_cost.specs.schema import HardwareSpec

__all__ = [
    "STAND_IN",
    "REPRESENTATIVE",
    "resolve",
    "nearest_family",
    "time_model_for",
    "profile_for",
    "named_profile",
    "load_profile",
]

#: The engines whose fitted parameters stand in for an engine without rows, in order: SGLang runs
#: the kernels and CUDA graphs vLLM runs (FlashInfer/FlashAttention, torch.compile'd glue);
#: TensorRT-LLM and vLLM both replay CUDA graphs of fused kernels; torch.compile and PyTorch eager
#: differ in fixed costs only; llama.cpp's GGML kernels are nearest vLLM's; an earlier release
#: takes its engine's current one first, a ROCm build the other ROCm engine's, then its own CUDA
#: build's (:mod:`llm_cost.perf.eras`).
STAND_IN: dict[EngineBlock, tuple[EngineBlock, ...]] = {
    EngineBlock.SGLANG: (EngineBlock.VLLM, EngineBlock.TRTLLM),
    EngineBlock.VLLM: (EngineBlock.SGLANG, EngineBlock.TRTLLM),
    EngineBlock.TRTLLM: (EngineBlock.VLLM, EngineBlock.SGLANG),
    EngineBlock.TORCH_COMPILE: (EngineBlock.PYTORCH_EAGER, EngineBlock.VLLM),
    EngineBlock.PYTORCH_EAGER: (EngineBlock.TORCH_COMPILE, EngineBlock.VLLM),
    EngineBlock.LLAMACPP: (EngineBlock.VLLM, EngineBlock.SGLANG),
    EngineBlock.VLLM_V0: (EngineBlock.VLLM, EngineBlock.SGLANG),
    EngineBlock.VLLM_ROCM: (EngineBlock.SGLANG_ROCM, EngineBlock.VLLM),
    EngineBlock.SGLANG_ROCM: (EngineBlock.VLLM_ROCM, EngineBlock.SGLANG),
    EngineBlock.LLAMACPP_ROCM: (EngineBlock.LLAMACPP, EngineBlock.VLLM_ROCM),
    EngineBlock.PYTORCH_EAGER_ROCM: (EngineBlock.PYTORCH_EAGER, EngineBlock.VLLM_ROCM),
}

#: A representative GPU of each family, whose datasheet measures distances between families.
REPRESENTATIVE: dict[KernelFamily, str] = {
    KernelFamily.AMPERE: "a100",
    KernelFamily.AMPERE_GA102: "rtx-3090",
    KernelFamily.ADA: "rtx-4090",
    KernelFamily.HOPPER: "h100",
    KernelFamily.BLACKWELL: "b200",
    KernelFamily.BLACKWELL_GB202: "rtx-5090",
    KernelFamily.CDNA3: "mi300x",
    KernelFamily.CDNA4: "mi355x",
}


def _distance(gpu: HardwareSpec, other: HardwareSpec) -> tuple[int, float]:
    bw = abs(math.log(gpu.memory_bandwidth_tb_s / other.memory_bandwidth_tb_s))
    mine = max(gpu.dense_tflops.get("bf16", gpu.dense_tflops.get("fp16", 1.0)), 1e-9)
    flops = abs(math.log(mine / max(other.dense_tflops.get("bf16", 1.0), 1e-9)))
    return (0 if other.vendor == gpu.vendor else 1, bw + flops)


def nearest_family(gpu: HardwareSpec, fitted: set[KernelFamily] | frozenset[KernelFamily]) -> KernelFamily | None:
    """The family of ``fitted`` nearest ``gpu``: the same vendor first, then the least |log
    bandwidth ratio| + |log 16-bit peak ratio| to the family's representative GPU."""
    from llm_cost.specs.load import load_gpu

    if not fitted:
        return None
    return min(fitted, key=lambda f: (_distance(gpu, load_gpu(REPRESENTATIVE[f])), f.value))


def resolve(
    gpu: HardwareSpec,
    engine: EngineBlock,
    families: set[KernelFamily] | frozenset[KernelFamily],
    engines: set[EngineBlock] | frozenset[EngineBlock],
    pairs: set[tuple[KernelFamily, EngineBlock]] | frozenset[tuple[KernelFamily, EngineBlock]],
) -> tuple[KernelFamily, EngineBlock, Situation]:
    """(the family and engine block whose fitted parameters time a step on ``gpu`` under
    ``engine``, the prediction's situation), given the ``families``, engine blocks and (family,
    block) ``pairs`` a fit had rows of (the module docstring's rule 2). ValueError when the fit has
    none."""
    own = family_of(gpu)
    family = own if own in families else nearest_family(gpu, families)
    stand_in = (engine, *STAND_IN[engine], *sorted(engines, key=lambda e: e.value))
    chosen = next((e for e in stand_in if e in engines), None)
    if family is None or chosen is None:
        raise ValueError("the fit has no rows")
    if family is own and chosen is engine:
        return family, chosen, Situation.FITTED if (family, engine) in pairs else Situation.COMBINED
    return family, chosen, Situation.TRANSFERRED


def _fitted() -> tuple[frozenset[KernelFamily], frozenset[EngineBlock], frozenset[tuple[KernelFamily, EngineBlock]]]:
    data = fit_data()
    pairs = frozenset((KernelFamily(p.split("/")[0]), EngineBlock(p.split("/")[1])) for p in data["pairs"])
    return (
        frozenset(KernelFamily(f) for f in data["families"]),
        frozenset(EngineBlock(e) for e in data["engines"]),
        pairs,
    )


def _bands() -> tuple[RegimeBand, ...]:
    return tuple(RegimeBand(**b) for b in fit_data()["bands"])


@lru_cache(maxsize=256)
def _profile(
    family: KernelFamily | None,
    source: KernelFamily,
    engine: Engine,
    used: EngineBlock,
    situation: Situation,
    vendor: str = "NVIDIA",
) -> Profile:
    """The profile of ``family`` (None: a GPU of no known family) under ``engine``, from the fitted
    parameters of ``source`` and ``used``."""
    data = fit_data()
    fam, eng = data["families"][source.value], data["engines"][used.value]
    pair = data["pairs"].get(f"{source.value}/{used.value}")
    shapes = pair if pair is not None and situation is Situation.FITTED else eng
    name = f"{(family or source).value}-{engine.value}"
    moved = [
        f"the {source.value} family's efficiencies" if source is not family else "",
        f"{used.value}'s fixed costs and kernels" if used is not current_block(engine, vendor) else "",
    ]
    moved_text = " and ".join(m for m in moved if m)
    return Profile(
        name=name,
        family=(family or source).value,
        engine=engine,
        situation=situation,
        note=(
            f"the {source.value} family's parameters ({fam['rows']} rows of {len(fam['sources'])} sources) joined with "
            f"{used.value}'s ({eng['rows']} rows of {len(eng['sources'])} sources)"
            + (
                f"; {pair['rows']} rows of this family and engine"
                if pair is not None and situation is Situation.FITTED
                else ""
            )
            + (f"; transferred: {moved_text} stand in" if moved_text else "")
        ),
        parameters=join(fam["parameters"], eng["parameters"]),
        decode_split_kv=bool(eng["decode_split_kv"]),
        sources=tuple(pair["sources"]) if pair is not None else (),
        rows=int(pair["rows"]) if pair is not None else 0,
        engine_version="; ".join(eng["versions"]),
        fitted_batch=tuple(shapes["batch"]),
        fitted_context=tuple(shapes["context"]),
        bands=_bands(),
        out_of_source=SourceError(**data["out_of_source"]),
        at_bounds=tuple(f"{source.value}.{p}" for p in fam["at_bounds"])
        + tuple(f"{used.value}.{p}" for p in eng["at_bounds"]),
        fixed={f"{source.value}.{k}": v for k, v in fam["fixed"].items()}
        | {f"{used.value}.{k}": v for k, v in eng["fixed"].items()},
        transferred_from=f"{source.value}-{used.value}" if situation is Situation.TRANSFERRED else None,
        source_family=source.value,
    )


def profile_for(gpu: HardwareSpec, engine: Engine) -> Profile | None:
    """The shipped profile of ``gpu`` under ``engine`` (the module docstring's rule 2), or None when
    no fit is shipped."""
    families, engines, pairs = _fitted()
    try:
        source, used, situation = resolve(gpu, current_block(engine, gpu.vendor), families, engines, pairs)
    except ValueError:
        return None
    return _profile(family_of(gpu), source, engine, used, situation, gpu.vendor)


def named_profile(name: str) -> Profile | None:
    """The shipped profile ``<family>-<engine>`` (e.g. ``hopper-vllm``: the family's representative
    GPU under the engine), or None for another name."""
    from llm_cost.specs.load import load_gpu

    for family in KernelFamily:
        for engine in Engine:
            if name == f"{family.value}-{engine.value}":
                return profile_for(load_gpu(REPRESENTATIVE[family]), engine)
    return None


def load_profile(name_or_path: str) -> Profile:
    """A profile by name (``<family>-<engine>``: :func:`named_profile`) or a profile YAML file (as
    ``llm-cost calibrate`` writes: :func:`llm_cost.perf.profile.profile_file`); SpecError naming the
    valid names when neither."""
    found = profile_file(name_or_path) or named_profile(name_or_path.strip().lower())
    if found is None:
        raise SpecError(
            f"profile: {shown(name_or_path.strip(), 60)!r} is not a profile name <family>-<engine> (families "
            f"{', '.join(f.value for f in KernelFamily)}; engines {', '.join(e.value for e in Engine)}), nor the "
            "path of a profile YAML file",
            fields=("profile",),
        )
    return found


def given_on(profile: Profile, gpu: HardwareSpec) -> Profile:
    """A profile the user named (``--profile``), as it applies to ``gpu``: itself on a GPU of its own
    kernel family; on another family's GPU, transferred (its efficiencies on that GPU's peaks, as
    rule 3 of the module docstring moves a family's), labelled so, and banded as transferred
    predictions are: its own transferred band if it has one, else the shipped profile's for the GPU
    (a Hopper profile on an MI300X had kept 'fitted' and its -13%/+32% band)."""
    family = family_of(gpu)
    if family is None or family.value == profile.family:
        return profile
    own = any(b.situation is Situation.TRANSFERRED for b in profile.bands)
    shipped = None if own else profile_for(gpu, profile.engine)
    return dataclasses.replace(
        profile,
        family=family.value,
        source_family=profile.source_family or profile.family,
        situation=Situation.TRANSFERRED,
        note=f"{profile.note}; given for {profile.family} GPUs, transferred to {gpu.name} ({family.value})",
        bands=profile.bands if shipped is None else shipped.bands,
    )


def time_model_for(
    gpu: HardwareSpec, engine: Engine, profile: Profile | str | None = None, network_gb_s: float = DEFAULT_NETWORK_GB_S
) -> Any:
    """THE time model of a prediction on ``gpu`` under ``engine`` (the module docstring's rule): a
    :class:`~llm_cost.perf.calibrated.CalibratedModel` of ``profile`` (a Profile, a name or a YAML
    path) or of :func:`profile_for`, else the MFU/MBU :class:`~llm_cost.perf.timemodel.EfficiencyEstimate`."""
    from llm_cost.perf.calibrated import CalibratedModel

    chosen = load_profile(profile) if isinstance(profile, str) else profile
    if chosen is not None:
        chosen = given_on(chosen, gpu)
    else:
        chosen = profile_for(gpu, engine)
    if chosen is None:
        return EfficiencyEstimate(network_gb_s=network_gb_s)
    return CalibratedModel(chosen, network_gb_s)
