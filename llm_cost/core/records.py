"""Frozen records that are cheap to build: a sweep makes tens of them per grid point.

``@record`` is ``@dataclass(frozen=True)`` with one change: its ``__init__`` stores every field
in one write of the instance's ``__dict__``. The dataclasses module's frozen ``__init__`` calls
``object.__setattr__`` once per field, which makes an 18-field operator about 4x slower to
build than a mutable one. Fields, defaults, default factories, equality, hashing, ``repr``,
``dataclasses.fields`` / ``replace`` and the refusal to assign an attribute are unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

__all__ = ["record"]

T = TypeVar("T")

#: Stands for "not given" for a field with a default factory.
_UNSET: Any = object()


def record(cls: type[T]) -> type[T]:
    """``cls`` as a frozen dataclass built by one ``__dict__`` write. Not for classes with a
    ``__post_init__``, ``init=False`` fields, keyword-only fields or slots (TypeError)."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    if hasattr(cls, "__post_init__") or hasattr(cls, "__slots__") or any(not f.init or f.kw_only for f in fields):
        raise TypeError(f"@record: {cls.__name__} needs the dataclasses' own __init__")
    namespace: dict[str, Any] = {"_set": object.__setattr__, "_UNSET": _UNSET}
    params, items = [], []
    for f in fields:
        if f.default is not dataclasses.MISSING:
            namespace[f"_default_{f.name}"] = f.default
            params.append(f"{f.name}=_default_{f.name}")
            items.append(f"{f.name!r}: {f.name}")
        elif f.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{f.name}"] = f.default_factory
            params.append(f"{f.name}=_UNSET")
            items.append(f"{f.name!r}: _factory_{f.name}() if {f.name} is _UNSET else {f.name}")
        else:
            params.append(f.name)
            items.append(f"{f.name!r}: {f.name}")
    source = f"def __init__(self, {', '.join(params)}):\n    _set(self, '__dict__', {{{', '.join(items)}}})\n"
    exec(source, namespace)  # noqa: S102 - the same technique as the dataclasses module's own __init__
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    cls.__init__ = init  # type: ignore[misc]
    return cls
