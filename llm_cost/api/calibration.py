"""The API's questions about the calibrated time model: fitting a profile to measured step times
and the evidence for the shipped profiles (``llm-cost calibrate``, ``validate``). Both need
numpy and scipy (``pip install 'llm-cost[fit]'``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from llm_cost.core.errors import InputError

if TYPE_CHECKING:
    from llm_cost.analyses.calibration import Calibration, ProfileTable

__all__ = ["calibrate", "validate", "validate_profiles"]


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
    from llm_cost.api import checks
    from llm_cost.core.types import Engine
    from llm_cost.perf.profile import profile_name
    from llm_cost.specs.files import check_out

    files = _measurement_files(measurements)
    checks.flag(force, "force")
    checks.flag(decode_split_kv, "decode_split_kv")
    target = check_out(out, "out", force, (".yaml", ".yml"))
    chosen_name = profile_name(target.path.stem if name is None else name, "name" if name is not None else "out")
    chosen = checks.optional(engine, checks.choice, Engine, "engine")
    fitted = fit(files, chosen_name, decode_split_kv=decode_split_kv, engine=chosen)
    return write_profile(fitted, target)


def _measurement_files(measurements: Any) -> list[Path]:
    """The measurement files' paths: a non-empty list of paths; InputError naming ``measurements``."""
    from llm_cost.core.limits import MAX_ECHO
    from llm_cost.specs.files import shown

    if isinstance(measurements, (str, Path)) or not isinstance(measurements, (list, tuple)) or not measurements:
        raise InputError(
            f"measurements: {shown(measurements, MAX_ECHO)} must be a list of measurement files",
            fields=("measurements",),
        )
    bad = [m for m in measurements if not isinstance(m, (str, Path)) or not str(m).strip() or "\x00" in str(m)]
    if bad:
        raise InputError(f"measurements: {shown(bad[0], MAX_ECHO)!r} is not a file path", fields=("measurements",))
    return [Path(m) for m in measurements]


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
