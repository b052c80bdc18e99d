"""Commands about the calibrated time model: calibrate (fit a profile) and validate (the evidence)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from llm_cost.cli.options import Json
from llm_cost.cli.program import app, emit
from llm_cost.core.errors import InputError

PROFILE_HELP = (
    "A shipped calibration profile (one per GPU and engine: h200, a100, h100-vllm, rtx-4090-llamacpp, ...) or a "
    "profile YAML file."
)


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
    split_kv: Annotated[
        bool,
        typer.Option(
            "--split-kv",
            help="The engine measured splits decode attention's KV cache (FlashAttention, FlashInfer: vLLM, "
            "SGLang, TensorRT-LLM); PyTorch eager SDPA does not.",
        ),
    ] = False,
    engine: Annotated[
        Optional[str],
        typer.Option(
            "--engine",
            help="Engine the rows were timed under: vllm, sglang, trtllm, pytorch-eager, torch-compile or "
            "llamacpp (default: the YAML files' engine_family).",
        ),
    ] = None,
    as_json: Json = False,
) -> None:
    r"""Fit a calibration profile to measured step times and print its leave-one-out errors. Needs
    numpy and scipy: pip install 'llm-cost\[fit]'.

    Example: llm-cost calibrate my-h100-timings.csv --engine vllm -o h100-vllm.yaml
    """
    from llm_cost import api
    from llm_cost.report import calibration as view

    emit(api.calibrate(measurements, out, name, force, split_kv, engine), as_json, view.render_calibration)


@app.command()
def validate(
    profile: Annotated[
        Optional[str],
        typer.Option("--profile", "-p", help=PROFILE_HELP + " Default: every shipped profile with measurements."),
    ] = None,
    training: Annotated[
        bool,
        typer.Option("--training", help="The published training runs, each predicted out of source (no fit needed)."),
    ] = False,
    as_json: Json = False,
) -> None:
    r"""Predicted vs measured for the shipped measurements. Without --profile: per (GPU, engine)
    profile, its leave-one-out errors and its out-of-sample errors on its engine's rows of other GPUs
    (transferred) and on other engines' rows. With --profile: every row, leave-one-out (fitted) or
    out-of-sample (transferred), beside the Roofline bound and the MFU 60% / MBU 80% estimate;
    errors per category. Needs pip install 'llm-cost\[fit]'. With --training: every shipped published
    training run's tokens/s per GPU, predicted with the factors fitted without its source, with its
    published layout and with the free search.

    Examples: llm-cost validate; llm-cost validate --profile h200; llm-cost validate --training
    """
    from llm_cost import api
    from llm_cost.report import calibration as view

    if training:
        if profile is not None:
            raise InputError(
                "training: validates the training runs, not a profile; leave out profile",
                fields=("training", "profile"),
            )
        emit(api.validate_training(), as_json, view.render_training_validation)
        return
    if profile is None:
        emit(api.validate_profiles(), as_json, view.render_profile_table)
        return
    emit(api.validate(profile), as_json, view.render_validation)
