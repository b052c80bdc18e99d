"""Result objects as plain data: dicts, lists, exact integers, floats (non-finite as None), and
strings. One function, used by ``--json``, CSV and the Python API's ``to_dict``."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

__all__ = ["plain", "dumps", "Result", "literal_module"]


#: Types ``plain`` returns as they are, and those it checks for being finite.
_AS_IS = (int, str, bool, type(None))

#: Each class's fields ``plain`` writes (its ``JSON_OMITS`` left out), None for a class that is
#: not a dataclass.
_FIELDS: dict[type, tuple[str, ...] | None] = {}


def _record_fields(cls: type) -> tuple[str, ...] | None:
    """The fields of a dataclass ``cls`` that its JSON carries, or None for another class."""
    try:
        return _FIELDS[cls]
    except KeyError:
        pass
    names = None
    if dataclasses.is_dataclass(cls):
        omit = getattr(cls, "JSON_OMITS", ())
        names = tuple(f.name for f in dataclasses.fields(cls) if f.name not in omit)
    _FIELDS[cls] = names
    return names


def plain(value: Any) -> Any:
    """``value`` as JSON-ready data: dataclass fields by name, Fractions as floats, enums as their
    strings, non-finite floats as None; integers stay exact. A result's fields named in its
    class's ``JSON_OMITS`` (bulk data such as every request's times) are left out."""
    kind = type(value)
    if kind in _AS_IS:
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    names = _record_fields(kind)
    if names is not None:
        return {name: plain(getattr(value, name)) for name in names}
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


class _NotPlain(Exception):
    """A value :func:`dumps` leaves to the ``json`` module (a non-string key, an unknown type)."""


def dumps(data: Any) -> str:
    """``json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)`` of plain data, the same
    text (a test compares them), made faster: with an indent the ``json`` module encodes in
    Python, value by value through generators, and a 10,000-row grid takes it seconds; here each
    dict and list is one join, its strings escaped by ``json``'s own C function. Anything but
    dicts with string keys, lists, tuples, strings, integers, finite floats, booleans and None is
    handed to ``json.dumps`` whole."""
    import json
    from json.encoder import encode_basestring

    try:
        return _encode(data, "", encode_basestring)
    except (_NotPlain, RecursionError):
        return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)


def _encode(o: Any, indent: str, text: Any) -> str:
    kind = type(o)
    if kind is str:
        return text(o)
    if kind is int:
        return int.__repr__(o)
    if kind is float:
        if not math.isfinite(o):
            raise _NotPlain
        return float.__repr__(o)
    if o is None:
        return "null"
    if o is True:
        return "true"
    if o is False:
        return "false"
    if kind is dict:
        if not o:
            return "{}"
        inner = indent + "  "
        parts = []
        for k, v in o.items():
            if type(k) is not str:
                raise _NotPlain
            t = type(v)
            if t is str:
                parts.append(f"{text(k)}: {text(v)}")
            elif t is int:
                parts.append(f"{text(k)}: {int.__repr__(v)}")
            elif t is float and math.isfinite(v):
                parts.append(f"{text(k)}: {float.__repr__(v)}")
            else:
                parts.append(f"{text(k)}: {_encode(v, inner, text)}")
        return "{\n" + inner + (",\n" + inner).join(parts) + "\n" + indent + "}"
    if kind is list or kind is tuple:
        if not o:
            return "[]"
        inner = indent + "  "
        return "[\n" + inner + (",\n" + inner).join([_encode(v, inner, text) for v in o]) + "\n" + indent + "]"
    if isinstance(o, str):
        return text(o)
    if isinstance(o, int):
        return int.__repr__(o)
    if isinstance(o, float) and math.isfinite(o):
        return float.__repr__(o)
    raise _NotPlain


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
