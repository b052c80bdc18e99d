"""The API's questions about the calibrated time model: fitting a profile to one's own measured step
times (``llm-cost calibrate``: numpy and scipy, ``pip install 'llm-cost[fit]'``) and the evidence for
the shipped fit (``llm-cost validate``: each source predicted by the fit without it; numpy only)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional, Union

from llm_cost.core.errors import InputError

if TYPE_CHECKING:
    from llm_cost.analyses.calibration import UserCalibration, Validation
    from llm_cost.analyses.train_published import TrainingValidation

__all__ = ["calibrate", "validate", "validate_training"]


def calibrate(
    measurements: Sequence[Union[str, Path]],
    out: Union[str, Path],
    name: Optional[str] = None,
    force: bool = False,
    decode_split_kv: Optional[bool] = None,
    engine: Optional[str] = None,
) -> UserCalibration:
    """Fit a profile to the measurement files (rows of one GPU family under one engine; YAML or CSV
    rows of model, gpu, phase, batch, context, tp, weights_dtype, group_size, kv_dtype,
    measured_ms), pulled towards the shipped fit of that family and engine; write it to ``out``
    whole or not at all, and return it with its rows predicted held out (leave-one-source-out, or
    leave-one-row-out for one source). ``engine``: the engine the rows were timed under
    (:class:`~llm_cost.core.types.Engine`), else the YAML files' ``engine_family``; InputError when
    neither says. ``decode_split_kv``: checked against the engine's kernels when given. InputError
    for an ``out`` that exists (unless ``force``), before any fit."""
    from llm_cost.analyses.calibration import calibrate_files, write_profile
    from llm_cost.api import checks
    from llm_cost.core.types import Engine
    from llm_cost.perf.profile import profile_name
    from llm_cost.specs.files import check_out

    files = _measurement_files(measurements)
    checks.flag(force, "force")
    split_kv = checks.optional(decode_split_kv, checks.flag, "decode_split_kv")
    target = check_out(out, "out", force, (".yaml", ".yml"))
    chosen_name = profile_name(target.path.stem if name is None else name, "name" if name is not None else "out")
    chosen = checks.optional(engine, checks.choice, Engine, "engine")
    fitted = calibrate_files(files, chosen_name, chosen, split_kv)
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


def validate(profile: Optional[str] = None) -> Validation:
    """The shipped fit against the shipped measurements, leave one SOURCE out: every source's rows
    predicted by the fit without that source (its stored fold), per source (rows, median error,
    rows inside the band drawn from the other sources' held-out errors), the bands, and every row
    beside the bound and the MFU/MBU estimate; ``profile`` (a shipped ``<family>-<engine>`` name)
    keeps that profile's rows; a profile YAML file (``llm-cost calibrate``'s) predicts the shipped
    rows of its family and engine, out of sample but for the rows of a source it lists as fitted on
    (``method`` and each row's ``situation`` say which)."""
    from llm_cost.analyses.calibration import validation
    from llm_cost.perf.profile import profile_file

    if profile is not None and (not isinstance(profile, str) or not profile.strip()):
        raise InputError(f"profile: {profile!r} is not a profile name or YAML path", fields=("profile",))
    own = profile_file(profile) if profile is not None else None
    if own is not None:
        return validation(own=own)
    return validation(profile.strip().lower() if profile is not None else None)


def validate_training() -> TrainingValidation:
    """Every shipped published training run predicted out of source (``llm-cost validate
    --training``): tokens/s per GPU with its published layout and with the free search, each with
    the training factors fitted without its source; medians per source, MoE and dense. Reads the
    table ``scripts/fit_training.py`` writes (no fit: numpy and scipy not needed)."""
    from llm_cost.analyses.train_published import training_validation

    return training_validation()
