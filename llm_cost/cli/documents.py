"""``llm-cost reproduce``: the seed documents' numbers, recomputed."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from llm_cost.cli.options import Json
from llm_cost.cli.program import app, emit

Rows = Annotated[Optional[list[str]], typer.Option("--row", help="Only these row ids (repeatable), e.g. --row P7.")]


@app.command()
def reproduce(row: Rows = None, as_json: Json = False) -> None:
    """Recompute every number the seed documents print; exit 0 only when all match.

    Example: llm-cost reproduce --row K2 --row R1
    """
    from llm_cost import api
    from llm_cost.report import reproduce as view

    result = api.reproduce(row or None)
    emit(result, as_json, view.render)
    if not all(r.ok for r in result):
        raise SystemExit(1)
