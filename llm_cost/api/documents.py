"""The API's check of the seed documents' numbers (``llm-cost reproduce``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Optional

from llm_cost.core.errors import InputError

if TYPE_CHECKING:
    from llm_cost.analyses.reproduce import RowResult

__all__ = ["reproduce"]


def reproduce(rows: Optional[Sequence[str]] = None) -> list[RowResult]:
    """Every number the seed documents print, recomputed and compared (``llm-cost reproduce``),
    or only the rows whose ids are in ``rows``; InputError naming unknown ids."""
    from llm_cost.analyses.reproduce import check_rows, load_rows

    if rows is not None and (not isinstance(rows, (list, tuple)) or not all(isinstance(r, str) for r in rows)):
        raise InputError(f"rows: {rows!r} must be a list of row ids, e.g. ['P7']", fields=("rows",))
    known = {r["id"] for r in load_rows()}
    unknown = [r for r in rows or [] if r not in known]
    if unknown:
        raise InputError(f"rows: unknown row id(s) {', '.join(unknown)}; reproduce() lists the ids", fields=("rows",))
    return check_rows(list(rows) if rows else None)
