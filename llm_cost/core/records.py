"""Frozen records that are cheap to define and to build: a sweep makes tens of them per grid
point, and a command defines tens of record classes on every start.

``@record`` makes a class a dataclass (``dataclasses.fields`` / ``replace`` / ``asdict`` see its
fields, defaults and default factories) that is frozen, compared and hashed by its fields and
shown as ``Name(field=value, ...)``, as ``@dataclass(frozen=True)`` would make it, with two
differences of cost:

- its ``__init__`` stores every field in one write of the instance's ``__dict__``: the dataclasses
  module's frozen ``__init__`` calls ``object.__setattr__`` once per field, which makes an
  18-field operator about 4x slower to build;
- only that ``__init__`` is generated: equality, hashing, ``repr`` and the refusal to assign are
  the shared methods of :class:`Frozen` (comparing the instances' ``__dict__``), where
  ``@dataclass(frozen=True)`` compiles six methods per class, about 1 ms a class here, and
  ``params llama3-8b`` defines about 30.
"""

from __future__ import annotations

import dataclasses
import sys
from typing import Any, TypeVar

if sys.version_info >= (3, 11):
    from typing import dataclass_transform
else:  # pydantic and typer depend on it
    from typing_extensions import dataclass_transform

__all__ = ["record", "Frozen", "fields_of"]

T = TypeVar("T")

#: Stands for "not given" for a field with a default factory.
_UNSET: Any = object()


class Frozen:
    """Methods of a frozen value whose ``__dict__`` holds exactly its fields, in order: equal to
    an instance of the same class with equal fields, hashed by them (TypeError if one is
    unhashable, a list say), shown with them; assigning or deleting an attribute raises
    ``dataclasses.FrozenInstanceError``."""

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self.__dict__ == other.__dict__

    def __hash__(self) -> int:
        return hash(tuple(self.__dict__.values()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={value!r}" for name, value in self.__dict__.items())
        return f"{self.__class__.__qualname__}({shown})"


#: Stands for a field's type while :func:`fields_of` runs the dataclasses module on a class.
_TYPE: Any = object()


def fields_of(cls: type[T], **options: Any) -> type[T]:
    """``dataclasses.dataclass(**options)(cls)`` for a class whose annotations are strings
    (``from __future__ import annotations``), with ``init=False``: the same fields, defaults,
    factories, metadata and field types, found about twice as fast. The dataclasses module tests
    each string annotation with regular expressions (is it ``ClassVar``, ``InitVar``,
    ``KW_ONLY``?), three tests a field, about a third of declaring a class: 0.9 of 2.6 ms for
    the spec classes on every start (issue 26). It is given a stand-in object for each type, which
    no such test matches, and each field gets its string back. A class that names one of those
    three is left to the module's own tests."""
    annotations = cls.__dict__.get("__annotations__", {})
    special = any(
        not isinstance(a, str) or "ClassVar" in a or "InitVar" in a or "KW_ONLY" in a for a in annotations.values()
    )
    if special or options.get("init", True):
        return dataclasses.dataclass(**options)(cls)
    cls.__annotations__ = dict.fromkeys(annotations, _TYPE)
    try:
        cls = dataclasses.dataclass(**options)(cls)
    finally:
        cls.__annotations__ = annotations
    for f in cls.__dataclass_fields__.values():  # type: ignore[attr-defined]
        if f.type is _TYPE:
            f.type = annotations[f.name]
    return cls


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
def record(cls: type[T]) -> type[T]:
    """``cls`` as a frozen dataclass built by one ``__dict__`` write, with :class:`Frozen`'s
    methods. A ``__post_init__`` runs after that write, as the dataclass's would; the
    ``init=False`` fields it sets (with ``object.__setattr__``) come after every other field.
    Not for classes with other ``init=False``, keyword-only or ``compare=False`` fields, or
    slots (TypeError)."""
    cls = fields_of(cls, init=False, repr=False, eq=False)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    given = [f for f in fields if f.init]
    post_init = hasattr(cls, "__post_init__")
    if (
        hasattr(cls, "__slots__")
        or any(f.kw_only or not f.compare for f in fields)
        or list(fields[: len(given)]) != given
        or (len(given) < len(fields) and not post_init)
    ):
        raise TypeError(f"@record: {cls.__name__} needs the dataclasses' own __init__ and methods")
    namespace: dict[str, Any] = {"_set": object.__setattr__, "_UNSET": _UNSET}
    params, items = [], []
    for f in given:
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
    if post_init:
        source += "    self.__post_init__()\n"
    exec(source, namespace)  # noqa: S102 - the same technique as the dataclasses module's own __init__
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[method-assign]  # the generated __init__ replaces the class's
    for name in ("__setattr__", "__delattr__", "__eq__", "__hash__", "__repr__"):
        setattr(cls, name, Frozen.__dict__[name])
    return cls
