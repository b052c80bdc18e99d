"""Commands about the calibrated time model: calibrate (fit a profile) and validate (the evidence)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from llm_cost.cli.options import Json
from llm_cost.cli.program import app, emit

PROFILE_HELP = "A shipped calibration profile (one per GPU: h200, a100, ...) or a profile YAML file."


@app.command()
def calibrate(
    measurements: Annotated[
        list[str],
        typer.Argument(
            help="Measurement files (.yaml or .csv; columns: model, gpu, "
            "phase, batch, context, tp, weights_dtype, group_size, "
            "kv_dtype, measured_ms). One GPU."
        ),
    ],
    out: Annotated[str, typer.Option("--out", "-o", help="The profile YAML to write.")],
    name: Annotated[
        Optional[str], typer.Option("--name", help="Profile name (default: the file stem of --out).")
    ] = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite --out if it exists.")] = False,
    as_json: Json = False,
) -> None:
    r"""Fit a calibration profile to measured step times and print its leave-one-out errors. Needs
    numpy and scipy: pip install 'llm-cost\[fit]'.

    Example: llm-cost calibrate my-h100-timings.csv -o h100-vllm.yaml
    """
    from pathlib import Path

    from llm_cost.analyses.calibration import calibrate as fit
    from llm_cost.analyses.calibration import write_profile
    from llm_cost.analyses.import_spec import _check_out
    from llm_cost.report import calibration as view

    target = Path(out)
    _check_out(target, target.stem, force)  # before the fit: a refusal costs nothing
    result = fit([Path(m) for m in measurements], name or target.stem)
    emit(write_profile(result, target, force), as_json, view.render_calibration)


@app.command()
def validate(
    profile: Annotated[
        Optional[str],
        typer.Option("--profile", "-p", help=PROFILE_HELP + " Default: every shipped profile with measurements."),
    ] = None,
    as_json: Json = False,
) -> None:
    r"""Predicted vs measured for the shipped measurements, leave-one-out (fitted profiles) or
    out-of-sample (transferred ones), beside the Roofline bound and the MFU 60% / MBU 80% estimate;
    errors per category. Needs pip install 'llm-cost\[fit]'.

    Example: llm-cost validate --profile h200
    """
    from pathlib import Path

    from llm_cost.analyses.calibration import validate as check
    from llm_cost.analyses.calibration import validate_shipped
    from llm_cost.perf.profile import load_profile
    from llm_cost.report import calibration as view

    if profile is None:
        emit(validate_shipped(), as_json, view.render_validation)
        return
    base = Path(profile).resolve().parent if profile.lower().endswith((".yaml", ".yml")) else None
    emit([check(load_profile(profile), base)], as_json, view.render_validation)
