"""Commands about the calibrated time model: calibrate (fit a profile) and validate (the evidence)."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from llm_cost.cli.options import Json
from llm_cost.cli.program import app, emit
from llm_cost.core.errors import InputError

PROFILE_HELP = (
    "A shipped profile <family>-<engine> (hopper-vllm, ampere-trtllm, ada-llamacpp, cdna3-vllm, ...: the kernel "
    "family's efficiencies joined with the engine's fixed costs) or a profile YAML file."
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
        Optional[bool],
        typer.Option(
            "--split-kv/--no-split-kv",
            help="Check that the engine's decode attention splits the KV cache (FlashAttention, FlashInfer: vLLM, "
            "SGLang, TensorRT-LLM, llama.cpp) or does not (PyTorch eager SDPA); default: the engine's own.",
        ),
    ] = None,
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
    r"""Fit a calibration profile to your measured step times (one GPU family, one engine), pulled
    towards the shipped fit, and print each row predicted held out (leave-one-source-out, or
    leave-one-row-out for one source). Needs numpy and scipy: pip install 'llm-cost\[fit]'.

    Example: llm-cost calibrate my-h100-timings.csv --engine vllm -o h100-vllm.yaml
    """
    from llm_cost import api
    from llm_cost.report import calibration as view

    emit(api.calibrate(measurements, out, name, force, split_kv, engine), as_json, view.render_calibration)


@app.command()
def validate(
    profile: Annotated[
        Optional[str],
        typer.Option("--profile", "-p", help=PROFILE_HELP + " Lists that profile's rows; default: every source."),
    ] = None,
    training: Annotated[
        bool,
        typer.Option("--training", help="The published training runs, each predicted out of source (no fit needed)."),
    ] = False,
    as_json: Json = False,
) -> None:
    r"""The shipped time model against every shipped measurement, leave one SOURCE out: each source
    (a blog post, a vendor table, an issue's benchmark) predicted by the fit that never saw it. Per
    source: rows, median error, and how many measured values fell inside the band drawn from the
    other sources' held-out errors; then the bands. With --profile: that profile's rows, each beside
    the Roofline bound and the MFU 60% / MBU 80% estimate. With --training: every shipped published
    training run's tokens/s per GPU, predicted with the factors fitted without its source, with its
    published layout and with the free search.

    Examples: llm-cost validate; llm-cost validate --profile hopper-vllm; llm-cost validate --training
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
    emit(api.validate(profile), as_json, view.render_validation)
