"""CSV for spreadsheets: one header line, then one row per grid point; the columns are the
scalar fields of the result objects (the same names as their JSON keys, units in the names:
``bound_s``, ``kv_read_bytes``), a nested object's fields prefixed by its name (``layout_tp``);
exact integers unformatted."""

from __future__ import annotations

import csv
import dataclasses
import io
from typing import Any

from llm_cost.core.serialize import plain

__all__ = ["rows_of", "to_csv"]


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    """The scalar fields of a result object or dict, nested ones prefixed; lists (an operator
    table, the conventions) are left out before they are turned into data."""
    row: dict[str, Any] = {}
    items = ([(f.name, getattr(data, f.name)) for f in dataclasses.fields(data)] if dataclasses.is_dataclass(data)
             else data.items())
    for key, value in items:
        if isinstance(value, (list, tuple)):
            continue
        if isinstance(value, dict) or dataclasses.is_dataclass(value):
            row.update(_flat(value, f"{prefix}{key}_"))
            continue
        value = plain(value)
        if isinstance(value, dict):
            row.update(_flat(value, f"{prefix}{key}_"))
        elif not isinstance(value, list):
            row[f"{prefix}{key}"] = value
    return row


def rows_of(results: list[Any], extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The scalar fields of each result (lists left out), ``extra[i]`` columns first."""
    return [{**(extra[i] if extra else {}), **_flat(r)} for i, r in enumerate(results)]


def to_csv(rows: list[dict[str, Any]]) -> str:
    """``rows`` as CSV text: the union of their columns in first-seen order; empty for None."""
    columns: list[str] = []
    for row in rows:
        columns += [c for c in row if c not in columns]
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    writer.writerows([[row.get(c) for c in columns] for row in rows])  # None is written as an empty field
    return out.getvalue()
