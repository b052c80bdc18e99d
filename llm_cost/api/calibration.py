"""The API's questions about the calibrated time model: fitting a profile to measured step times
and the evidence for the shipped profiles (``llm-cost calibrate``, ``validate``). Both need
numpy and scipy (``pip install 'llm-cost[fit]'``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

from llm_cost.core.errors import InputError

if TYPE_CHECKING:
    from llm_cost.analyses.calibration import Calibration, ProfileTable
    from llm_cost.analyses.train_published import TrainingValidation

__all__ = ["calibrate", "validate", "validate_profiles", "validate_training"]


def calibrate(
    measurements: Sequence[Union[str, Path]],
    out: Union[str, Path],
    name: Optional[str] = None,
    force: bool = False,
    decode_split_kv: bool = False,
    engine: Optional[str] = None,
) -> Calibration:
    """Fit a profile to the measurement files (one GPU; YAML or CSV rows of model, gpu, phase,
    batch, context, tp, weights_dtype, group_size, kv_dtype, measured_ms), write it to ``out``
    whole or not at all, and return it with its leave-one-out errors. ``decode_split_kv``: the
    engine measured splits decode attention's KV cache (FlashAttention, FlashInfer; the profile's
    flag, :mod:`llm_cost.perf.kernels`). ``engine``: the engine the rows were timed under
    (:class:`~llm_cost.core.types.Engine`), else the YAML files' ``engine_family``; InputError when
    neither says. InputError for an ``out`` that exists (unless ``force``), before any fit."""
    from llm_cost.analyses.calibration import calibrate as fit
    from llm_cost.analyses.calibration import write_profile
    from llm_cost.specs.files import check_out

    if isinstance(measurements, (str, Path)) or not measurements:
        raise InputError("measurements: give a list of measurement files", fields=("measurements",))
    if not isinstance(out, (str, Path)) or not str(out).strip():
        raise InputError(f"out: {out!r} is not a path", fields=("out",))
    if name is not None and not isinstance(name, str):
        raise InputError(f"name: {name!r} is not a profile name", fields=("name",))
    from llm_cost.api import checks
    from llm_cost.core.types import Engine

    chosen = checks.optional(engine, checks.choice, Engine, "engine")
    target = Path(out)
    check_out(target, target.stem, bool(force))
    if not isinstance(decode_split_kv, bool):
        raise InputError(f"decode_split_kv: {decode_split_kv!r} is not true or false", fields=("decode_split_kv",))
    fitted = fit([Path(m) for m in measurements], name or target.stem, decode_split_kv=decode_split_kv, engine=chosen)
    return write_profile(fitted, target, bool(force))


def validate(profile: Optional[str] = None) -> list[Calibration]:
    """Predicted against measured for the shipped measurements: leave-one-out for a fitted
    profile, out-of-sample for a transferred one, beside the bound and the MFU/MBU estimate;
    every shipped profile when ``profile`` is None."""
    from llm_cost.analyses.calibration import validate as check
    from llm_cost.analyses.calibration import validate_shipped
    from llm_cost.perf.profile import load_profile

    if profile is None:
        return validate_shipped()
    if not isinstance(profile, str) or not profile.strip():
        raise InputError(f"profile: {profile!r} is not a profile name or YAML path", fields=("profile",))
    from llm_cost.specs.files import real_path

    yaml_file = profile.lower().endswith((".yaml", ".yml"))
    base = real_path(Path(profile), "a profile YAML").parent if yaml_file else None
    return [check(load_profile(profile), base)]


def validate_profiles() -> ProfileTable:
    """Every fitted (GPU, engine) profile against the shipped measurements (``llm-cost validate``):
    leave-one-out on its own rows (median, max, rows inside the error band), out of sample on its
    engine's rows of other GPUs (the profile transferred, as the transfer rule of
    :func:`llm_cost.api.choices.profile_of` would) and on other engines' rows; and how much wider a
    transferred profile's band must be, measured and as used."""
    from llm_cost.analyses.calibration import profile_table

    return profile_table()


def validate_training() -> TrainingValidation:
    """Every shipped published training run predicted out of source (``llm-cost validate
    --training``): tokens/s per GPU with its published layout and with the free search, each with
    the training factors fitted without its source; medians per source, MoE and dense. Reads the
    table ``scripts/fit_training.py`` writes (no fit: numpy and scipy not needed)."""
    from llm_cost.analyses.train_published import training_validation

    return training_validation()
