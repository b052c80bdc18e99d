"""CSV for spreadsheets: one header line, then one row per grid point; the columns are the
scalar fields of the result objects (the same names as their JSON keys, units in the names:
``bound_s``, ``kv_read_bytes``), a nested object's fields prefixed by its name (``layout_tp``);
exact integers unformatted."""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from collections.abc import Callable
from functools import cache
from operator import attrgetter
from typing import Any

from llm_cost.core.serialize import plain

__all__ = ["rows_of", "to_csv"]


#: Types written as they are (a float is checked for being finite).
_AS_IS = (int, str, bool, type(None))


@cache
def _fields(cls: type) -> tuple[tuple[str, ...], Callable[[Any], tuple[Any, ...]]]:
    """A dataclass's field names and a function reading all their values at once."""
    names = tuple(f.name for f in dataclasses.fields(cls))
    read = attrgetter(*names)
    return names, (read if len(names) > 1 else lambda obj: (read(obj),))


#: How :func:`_flat` writes a value, by its type: as it is, as a finite float, left out (a list),
#: flattened (a dict or dataclass), or through ``plain``.
_AS_IS_, _FLOAT, _LEFT_OUT, _NESTED, _PLAIN = range(5)
_MODES: dict[type, int] = {}


def _mode(kind: type) -> int:
    mode = _MODES.get(kind)
    if mode is None:
        if kind in _AS_IS:
            mode = _AS_IS_
        elif kind is float:
            mode = _FLOAT
        elif kind in (list, tuple):
            mode = _LEFT_OUT
        elif kind is dict or dataclasses.is_dataclass(kind):
            mode = _NESTED
        else:
            mode = _PLAIN
        _MODES[kind] = mode
    return mode


def _flat(data: Any, prefix: str = "") -> dict[str, Any]:
    """The scalar fields of a result object or dict, nested ones prefixed; lists (an operator
    table, the conventions) are left out before they are turned into data."""
    row: dict[str, Any] = {}
    if dataclasses.is_dataclass(data) and not isinstance(data, type):
        names, values = _fields(type(data))
        items: Any = zip(names, values(data))
    else:
        items = data.items()
    for key, value in items:
        mode = _MODES.get(type(value))
        if mode is None:
            mode = _mode(type(value))
        if mode == _AS_IS_:
            row[f"{prefix}{key}" if prefix else key] = value
        elif mode == _FLOAT:
            row[f"{prefix}{key}" if prefix else key] = value if math.isfinite(value) else None
        elif mode == _LEFT_OUT:
            continue
        elif mode == _NESTED:
            row.update(_flat(value, f"{prefix}{key}_"))
        else:
            value = plain(value)
            if isinstance(value, dict):
                row.update(_flat(value, f"{prefix}{key}_"))
            elif not isinstance(value, list):
                row[f"{prefix}{key}" if prefix else key] = value
    return row


def rows_of(results: list[Any], extra: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The scalar fields of each result (lists left out), ``extra[i]`` columns first."""
    return [{**(extra[i] if extra else {}), **_flat(r)} for i, r in enumerate(results)]


def to_csv(rows: list[dict[str, Any]]) -> str:
    """``rows`` as CSV text: the union of their columns in first-seen order; empty for None, and
    booleans as JSON writes them (``true``/``false``, not Python's ``True``), so that a CSV cell
    and its JSON value read the same."""
    seen: dict[str, None] = dict.fromkeys(rows[0]) if rows else {}  # a dict keeps the columns in first-seen order
    first = seen.keys()
    for row in rows:
        if row.keys() != first:  # a row with other columns (the same ones are the rule)
            seen.update(dict.fromkeys(row))
    columns = list(seen)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(columns)
    order = tuple(columns)
    # None is written as an empty field; a row with every column in order is written as it is
    table = [list(row.values()) if tuple(row) == order else [row.get(c) for c in columns] for row in rows]
    writer.writerows([[_cell(v) for v in cells] for cells in table])
    return out.getvalue()


def _cell(value: Any) -> Any:
    """A CSV cell's value: a boolean as JSON spells it, anything else as the csv module writes it."""
    return ("true" if value else "false") if isinstance(value, bool) else value
