"""Commands about positions and number formats: rope, numerics."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from llm_cost.cli.options import MODEL_HELP, Csv, Json, integer, option, positive, tokens
from llm_cost.cli.program import app, emit, emit_csv

RopeModel = Annotated[Optional[str], typer.Argument(help=MODEL_HELP + " Omit it to give --base and --head-dim.")]
Base = Annotated[
    Optional[float],
    option(
        "--base",
        parse=positive("--base"),
        metavar="NUMBER",
        help="RoPE base (rope_theta), e.g. 10000 or 5e5. Required without MODEL; "
        "with a MODEL it overrides the model's rope_theta.",
    ),
]
HeadDim = Annotated[
    Optional[int],
    option(
        "--head-dim",
        parse=integer("--head-dim"),
        metavar="INTEGER",
        help="Rotated dims per head d (even, e.g. 128). Required without MODEL; "
        "with a MODEL it overrides the model's rotated dims.",
    ),
]
TrainLength = Annotated[
    Optional[int],
    option(
        "--train-length",
        parse=tokens("--train-length"),
        metavar="TOKENS",
        help="Training context in tokens (8K = 8,192). Default: the model's "
        "original_max_position_embeddings or max_position_embeddings; "
        "without MODEL 8K.",
    ),
]
TargetLength = Annotated[
    Optional[int],
    option(
        "--target-length",
        parse=tokens("--target-length"),
        metavar="TOKENS",
        help="Extended context in tokens (128K = 131,072). Default: the "
        "model's max_position_embeddings if longer, else 4 x --train-length.",
    ),
]


@app.command()
def rope(
    model: RopeModel = None,
    base: Base = None,
    head_dim: HeadDim = None,
    train_length: TrainLength = None,
    target_length: TargetLength = None,
    as_json: Json = False,
) -> None:
    """RoPE wavelengths per pair, and how PI, NTK-aware, YaRN, dynamic NTK and Llama 3.1 scaling stretch them.

    Examples: llm-cost rope llama3.1-405b;
    llm-cost rope --base 10000 --head-dim 128 --train-length 8K --target-length 32K
    """
    from llm_cost import api
    from llm_cost.report import rope as view

    result = api.rope(model, base=base, head_dim=head_dim, train_length=train_length, target_length=target_length)
    emit(result, as_json, view.render)


@app.command()
def numerics(
    k: Annotated[
        int,
        option(
            "--k",
            parse=tokens("--k"),
            metavar="TOKENS",
            help="Dot-product length for the accumulation noise u x sqrt(k); 4K = 4,096.",
        ),
    ] = 4096,
    head_dim: Annotated[
        int,
        option(
            "--head-dim",
            parse=integer("--head-dim"),
            metavar="INTEGER",
            help="Head dimension d_head for the QK-norm logit bound sqrt(d_head).",
        ),
    ] = 128,
    as_json: Json = False,
    as_csv: Csv = False,
) -> None:
    """Number formats (FP32, TF32, BF16, FP16, FP8 E4M3/E5M2, FP4 E2M1, INT8, INT4): range, precision, overflow.

    Example: llm-cost numerics --k 8K --head-dim 64
    """
    from llm_cost import api
    from llm_cost.report import numerics as view

    result = api.numerics(k, head_dim)
    if as_csv:
        emit_csv(result.formats)
        return
    emit(result, as_json, view.render)
