"""The rates a training step is timed with, chosen in one place (:func:`training_rates`): the GPU's
calibration profile (its GEMM, attention and bandwidth efficiencies, latencies, fixed times) and the
training-efficiency factors fitted on published training runs.

The profiles are fitted on serving measurements; training runs other kernels (Transformer Engine's
and cuBLAS's large GEMMs with their epilogues, FP8 GEMMs and their casts), so a training step
multiplies the profile's GEMM efficiency by a factor fitted on the published runs of its GPU family
(``gemm``) and times its FP8 GEMMs at their own factor against the FP8 peak, per framework
(``fp8_gemm``: Transformer Engine under Megatron-Core keeps FP8 weights across micro-batches and
fuses its casts, under FSDP it does neither), falling back to the family's ``gemm`` factor for a
framework without published FP8 runs. Not fitted, from the profile: FlashAttention at the profile's
flash efficiency, the elementwise kernels at its streaming fraction of bandwidth. The factors, their
sources and every shipped row's out-of-source error are in ``llm_cost/data/training-efficiency.json``,
written by ``python scripts/fit_training.py`` (:func:`llm_cost.analyses.train_published.fit_all`).
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any, Optional

from llm_cost.core.choices import Fp8Recipe, Framework
from llm_cost.core.records import record
from llm_cost.core.types import Engine
from llm_cost.specs.schema import HardwareSpec

__all__ = [
    "TrainRates",
    "training_rates",
    "training_efficiency",
    "efficiency_family",
    "TRAINING_ENGINE",
    "training_profile",
    "parameters_of",
    "FP8_CAST_TRAFFIC",
    "PRIOR_GEMM",
    "EFFICIENCY_FILE",
    "FLASH2_EFFICIENCY",
    "with_flash2",
]

#: The fitted training-efficiency table.
EFFICIENCY_FILE = Path(__file__).resolve().parent.parent / "data" / "training-efficiency.json"

#: Bytes an FP8 recipe's casts move per element, relative to the 3 B of one BF16 read and one FP8
#: write (Transformer Engine ``transformer_engine/pytorch/tensor/*``): ``delayed`` also writes a
#: transposed FP8 copy for the weight-gradient GEMM (Hopper's FP8 tensor cores take only the TN
#: layout; TE's fused cast-transpose): 4/3; ``current`` reads the tensor once more for its amax: 2;
#: ``block`` writes both copies with an FP32 scale per 128 elements each: (4 + 2 x 4/128)/3;
#: ``mxfp8`` both copies with an E8M0 scale per 32 elements each: (4 + 2/32)/3.
FP8_CAST_TRAFFIC = {
    Fp8Recipe.DELAYED: 4 / 3,
    Fp8Recipe.CURRENT: 2.0,
    Fp8Recipe.BLOCK: (4 + 2 * 4 / 128) / 3,
    Fp8Recipe.MXFP8: (4 + 2 / 32) / 3,
}

#: The fraction of the 16-bit peak FlashAttention-2-generation kernels (flash-attn 2, the Triton
#: flash kernels of 2023) reach on a family whose profile times attention at a later kernel's rate:
#: on the H100 SXM5, FlashAttention-2's forward at head dim 128 runs 362-370 TFLOP/s from 2K to 16K
#: tokens of 989 (Shah et al. 2024, FlashAttention-3, arXiv:2407.08608, Fig. 5: "FlashAttention-2
#: achieving only 35% utilization on the H100"), where cuDNN's and FlashAttention-3's reach 595-648.
#: Other families' profiles are at or below FlashAttention-2's rate already (A100: 50% of peak;
#: FlashAttention-2 reaches 50-73%, Dao 2023).
FLASH2_EFFICIENCY = {"hopper": 0.37}

#: The GEMM factor of a GPU family without published runs: the profile's own efficiency.
PRIOR_GEMM = 1.0


@record
class TrainRates:
    """What a training step is timed with: the profile's parameters ``q`` (every parameter's prior
    without a profile), the training factor on its GEMM efficiency (``gemm``) and on its FP8 GEMMs
    (``fp8_gemm``, against the FP8 peak), the elementwise kernels' fraction of bandwidth, the FP8
    recipe's cast traffic; the family the factors are fitted for, the error bands of its published
    runs out of source (measured / predicted step time, 10th and 90th percentiles: with the
    published layouts, ``time_ratio``, and with the free search's picks, ``search_time_ratio``),
    and a label naming all of it."""

    q: dict[str, float]
    gemm: float
    fp8_gemm: float
    elementwise: float
    cast_traffic: float
    family: str
    time_ratio: tuple[float, float]
    search_time_ratio: tuple[float, float]
    label: str
    has_runs: bool = True  # the family has published runs; else its bands are the widest of those that do


@lru_cache(maxsize=1)
def training_efficiency(path: Path = EFFICIENCY_FILE) -> dict[str, Any]:
    """The fitted table (:data:`EFFICIENCY_FILE`): ``families`` (per profile family: the factors,
    the sources and rows they were fitted on, the out-of-source band), ``rows`` (each published
    row's out-of-source error) and how they were made."""
    with path.open(encoding="utf-8") as f:
        return dict(json.load(f))


def efficiency_family(gpu_name: str, profile: Any) -> str:
    """The family a GPU's training factors are fitted for: the kernel family whose fitted parameters
    its profile holds (:mod:`llm_cost.perf.families`), else the GPU's name."""
    if profile is None:
        return gpu_name
    return str(profile.source_family or profile.family)


#: The engine a training step's time model is fitted for: training frameworks (Megatron-Core, FSDP2)
#: run PyTorch's eager kernels (cuBLAS, FlashAttention, Transformer Engine).
TRAINING_ENGINE = Engine.PYTORCH_EAGER


def training_profile(gpu: HardwareSpec) -> Any:
    """The profile the one rule gives ``gpu`` under :data:`TRAINING_ENGINE`
    (:func:`llm_cost.perf.choose.time_model_for`), or None."""
    from llm_cost.perf.choose import time_model_for

    return getattr(time_model_for(gpu, TRAINING_ENGINE), "profile", None)


def parameters_of(profile: Any) -> dict[str, float]:
    """A profile's parameters by name, family's and engine's (every parameter's prior without a
    profile), the collective latency the engine's share of the family's."""
    from llm_cost.perf.profile import PARAMETERS
    from llm_cost.specs.declare import to_data

    if profile is None:
        q = {name: p.prior for name, p in PARAMETERS.items()}
    else:
        q = dict(to_data(profile.parameters.family)) | dict(to_data(profile.parameters.engine))
    q["collective_latency_s"] = q["collective_latency_s"] * q["collective_latency_share"]
    return q


def fp8_factor(entry: dict[str, Any], framework: Framework) -> tuple[float, bool]:
    """(FP8 GEMM factor, whether fitted) of a family's table ``entry`` under ``framework``: its own
    fitted factor, else the family's GEMM factor (FP8 GEMMs at the BF16 GEMMs' fraction of their
    peak: no published FP8 run of that framework)."""
    fitted = entry.get("fp8_gemm", {}).get(str(framework))
    return (float(fitted), True) if fitted is not None else (float(entry["gemm"]), False)


def training_rates(
    gpu: HardwareSpec,
    recipe: Fp8Recipe = Fp8Recipe.DELAYED,
    profile: Any = None,
    framework: Framework = Framework.MEGATRON,
    factors: Optional[dict[str, Any]] = None,
) -> TrainRates:
    """The rates a training step on ``gpu`` under ``framework`` is timed with: ``profile`` (a
    Profile; default the one rule's for the GPU under :data:`TRAINING_ENGINE`), its family's fitted factors (or ``factors``, a table
    entry a fit tries; a family without published runs: :data:`PRIOR_GEMM` and the widest band of
    the table) and the FP8 ``recipe``'s cast traffic. The one place a training step picks its time
    model."""
    chosen = profile if profile is not None else training_profile(gpu)
    q = parameters_of(chosen)
    family = efficiency_family(gpu.name, chosen)
    table = training_efficiency()["families"]
    base = f"profile {chosen.name}" if chosen is not None else "the profile priors"
    entry = factors if factors is not None else table.get(family)
    if entry is None:
        entry = {"gemm": PRIOR_GEMM, **{key: _unmeasured_band(table, key) for key in BANDS}}
        label = f"{base} (no published training run of its family: its own efficiencies)"
    else:
        fp8, fitted = fp8_factor(entry, framework)
        label = (
            f"{base} x training GEMM efficiency {entry['gemm']:g}, FP8 GEMMs {fp8:g}"
            f"{'' if fitted else ' (no published FP8 run of ' + str(framework) + ': the GEMM factor)'} "
            f"(fitted on {entry.get('rows', 0)} runs of {len(entry.get('sources', ()))} sources)"
        )
    fp8, _ = fp8_factor(entry, framework)
    return TrainRates(
        q,
        float(entry["gemm"]),
        fp8,
        q["bandwidth_efficiency"],
        FP8_CAST_TRAFFIC[recipe],
        family,
        _band(entry, "time_ratio"),
        _band(entry, "search_time_ratio"),
        label,
        family in table or factors is not None,
    )


#: The bands a family's entry carries (:func:`~llm_cost.analyses.train_published.time_ratio_band`).
BANDS = ("time_ratio", "search_time_ratio")


def _unmeasured_band(table: dict[str, Any], key: str) -> tuple[float, float]:
    """Band ``key`` of a family without published runs: end by end the widest of the families'
    with runs (borrowed, as the note says: nothing measures this family's error). It had been
    1 -/+ the largest distance of any end from 1, mirrored: an MI300X fast end of x0.58, an MFU of
    90%, where no family's runs came out faster than x0.84 (a new user)."""
    return min(e[key][0] for e in table.values()), max(e[key][1] for e in table.values())


def _band(entry: dict[str, Any], key: str) -> tuple[float, float]:
    """An entry's band ``key`` (a fit's trial factors carry none: no band, 1 to 1)."""
    low, high = entry.get(key, (1.0, 1.0))
    return float(low), float(high)


def with_flash2(rates: TrainRates) -> TrainRates:
    """``rates`` for a stack whose attention runs FlashAttention-2-generation kernels: the flash
    efficiency at most :data:`FLASH2_EFFICIENCY` of its family (unchanged for other families)."""
    cap = FLASH2_EFFICIENCY.get(rates.family)
    if cap is None or rates.q["flash_efficiency"] <= cap:
        return rates
    q = dict(rates.q) | {"flash_efficiency": cap}
    return replace(rates, q=q, label=f"{rates.label}; attention at FlashAttention-2's {cap:.0%} of peak")
