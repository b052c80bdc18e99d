"""Result objects as plain data: dicts, lists, exact integers, floats (non-finite as None), and
strings. One function, used by ``--json``, CSV and the Python API's ``to_dict``."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

__all__ = ["plain", "Result", "literal_module"]


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data: dataclass fields by name, Fractions as floats, enums as their
    strings, non-finite floats as None; integers stay exact. A result's fields named in its
    class's ``JSON_OMITS`` (bulk data such as every request's times) are left out."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        omit = getattr(value, "JSON_OMITS", ())
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value) if f.name not in omit}
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if hasattr(value, "model_dump"):
        return value.model_dump(mode="json")
    if hasattr(value, "numerator") and not isinstance(value, (int, bool)):
        return float(value)
    return value


class Result:
    """Mixin of the engine's result dataclasses: ``to_dict()`` gives what ``--json`` prints
    (without the fields of ``JSON_OMITS``)."""

    JSON_OMITS: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The result as plain data (the same keys and values as the command's ``--json``)."""
        return plain(self)


def literal_module(doc: str, name: str, value: Any) -> str:
    """The text of a generated Python module whose docstring is ``doc`` and which binds ``name`` to
    ``value`` (plain data: dicts, lists, numbers, strings) as one literal, keys sorted: a shipped
    index read by importing its compiled module, without a JSON or YAML parser."""
    from pprint import pformat

    return f'"""{doc}"""\n\n{name} = {pformat(value, width=110, sort_dicts=True)}\n'
