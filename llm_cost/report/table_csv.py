"""CSV for spreadsheets: one header line, then one row per grid point; the columns are the
scalar fields of the result objects (the same names as their JSON keys, units in the names:
``bound_s``, ``kv_read_bytes``), a nested object's fields prefixed by its name (``layout_tp``);
exact integers unformatted."""

from __future__ import annotations

import csv
import io
from typing import Any

from llm_cost.core.serialize import plain

__all__ = ["rows_of", "to_csv"]


def _flat(data: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    row: dict[str, Any] = {}
    for key, value in data.items():
        if isinstance(value, dict):
            row.update(_flat(value, f"{prefix}{key}_"))
        elif not isinstance(value, list):
            row[f"{prefix}{key}"] = value
    return row


def rows_of(results: list[Any], extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The scalar fields of each result (lists left out), ``extra[i]`` columns first."""
    return [{**(extra[i] if extra else {}), **_flat(plain(r))} for i, r in enumerate(results)]


def to_csv(rows: list[dict[str, Any]]) -> str:
    """``rows`` as CSV text: the union of their columns in first-seen order; empty for None."""
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({c: ("" if row.get(c) is None else row.get(c)) for c in columns})
    return out.getvalue()
