"""How the spec classes of :mod:`llm_cost.specs.schema` are declared: plain frozen dataclasses
whose field types carry their bounds, validated by pydantic v2 only when a file is read.

A spec class is a keyword-only frozen dataclass (:func:`spec`); a bounded field is
``Annotated[int, Bounds(ge=1, le=2**20, strict=True)]``; a union of spec classes told apart by
their ``kind`` field is ``Annotated[Union[A, B], DISCRIMINATED]``; a class's cross-field rules
are its ``_check`` method (ValueError); a sequence is a tuple (``tuple[int, ...]``: pydantic
validates a list into it, :func:`to_data` writes it back as a list), so a spec without a mapping
field (every model spec; not a GPU's ``dense_tflops``) is immutable and hashable and can key a
``functools`` cache. Declaring them needs nothing from pydantic, so a command
that reads only shipped specs (rebuilt from the index without validation, see
:mod:`llm_cost.specs.load`) never imports it: importing pydantic and building model classes
took about 100 ms of a 300 ms ``llm-cost params llama3-8b``.

:func:`validated` validates data into a spec class through a pydantic ``TypeAdapter``, built on
first use. ``Bounds`` and ``DISCRIMINATED`` speak pydantic's documented extension protocol
(``__get_pydantic_core_schema__``): they add their constraints to the core schema pydantic
generates for the bare type, so the errors (``less_than_equal``, ``int_type``, ``too_long``,
``union_tag_invalid``...) and their locations are pydantic's own. Unknown keys are refused
(``extra="forbid"``); every float must be finite.
"""

from __future__ import annotations

import dataclasses
from enum import Enum
from functools import cache
from typing import Any, TypeVar, get_args

from llm_cost.core.records import Frozen, dataclass_transform, fields_of

__all__ = ["Bounds", "DISCRIMINATED", "spec", "spec_field", "Spec", "validated", "to_data", "field_names"]

T = TypeVar("T")


class Bounds:
    """Constraints of one field's type, as pydantic's ``Field`` takes them: ``ge``, ``gt``, ``le``
    (numbers), ``min_length``, ``max_length``, ``pattern`` (strings, lists), ``strict`` (an integer
    must be given as an integer, not a float or a string). A bounded number or text is strict
    whatever it says: a float field takes an integer or a float (finite), never a string
    (``memory_gb: "80"``) or a boolean; a text field takes text, never bytes (YAML's ``!!binary``)."""

    __slots__ = ("constraints",)

    def __init__(self, **constraints: Any) -> None:
        self.constraints = constraints

    def __repr__(self) -> str:
        return f"Bounds({', '.join(f'{k}={v!r}' for k, v in self.constraints.items())})"

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        schema = handler(source)
        schema.update(self.constraints)
        if schema.get("type") == "float":
            schema["allow_inf_nan"] = False
        if schema.get("type") in ("float", "str"):  # "80" is no number, !!binary bytes no text
            schema.setdefault("strict", True)
        return schema


class _Discriminated:
    """A union of spec classes chosen by the value of their ``kind`` field (each class's
    default), as pydantic's ``Field(discriminator="kind")`` does."""

    def __repr__(self) -> str:
        return "DISCRIMINATED"

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        choices = {cls.__dataclass_fields__["kind"].default: handler.generate_schema(cls) for cls in get_args(source)}
        return core_schema.tagged_union_schema(choices, discriminator="kind")


#: The metadata of a union of spec classes told apart by ``kind``.
DISCRIMINATED = _Discriminated()


def _checked(value: Any) -> Any:
    value._check()
    return value


class Spec(Frozen):
    """Base of the spec classes: frozen instances built from keyword arguments, compared and
    hashed by their fields, shown as ``Name(field=value, ...)`` (:class:`~llm_cost.core.records.Frozen`).
    Unknown keys are refused and ``_check`` is run when pydantic validates one (its ValueError
    becomes a validation error at the object's location).

    These methods are shared, not generated per class as ``@dataclass`` generates them (one
    ``exec`` per method and class: about 20 ms for the 18 spec classes, on every start).

    A spec's hash is computed once, on first use, and kept in a slot outside its ``__dict__``
    (which holds exactly its fields): caches keyed by a spec (``functools.lru_cache``) hash it
    on every call of a sweep, 2-4 us for a model's whole tree of fields."""

    __slots__ = ("_hash",)
    _hash: int
    __pydantic_config__ = {"extra": "forbid"}

    def __init__(self, **values: Any) -> None:
        fields = self.__dataclass_fields__  # type: ignore[attr-defined]
        unknown = values.keys() - fields.keys()
        if unknown:
            raise TypeError(f"{type(self).__name__}: unknown fields {sorted(unknown)}")
        state = {}
        for name, f in fields.items():
            if name in values:
                state[name] = values[name]
            elif f.default is not dataclasses.MISSING:
                state[name] = f.default
            elif f.default_factory is not dataclasses.MISSING:
                state[name] = f.default_factory()
            else:
                raise TypeError(f"{type(self).__name__}: missing field {name!r}")
        object.__setattr__(self, "__dict__", state)

    def __hash__(self) -> int:
        try:
            return self._hash
        except AttributeError:
            value = hash(tuple(self.__dict__.values()))
            object.__setattr__(self, "_hash", value)
            return value

    def __getstate__(self) -> dict[str, Any]:
        """The fields, for ``copy`` and ``pickle`` (the hash is computed again by the copy)."""
        return self.__dict__

    def _check(self) -> None:
        """Cross-field rules; ValueError naming the fields when one is broken."""

    @classmethod
    def checked(cls: type[T], **values: Any) -> T:
        """An instance validated from keyword arguments: :func:`validated` (ValidationError)."""
        return validated(cls, values)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: Any) -> Any:
        from pydantic_core import core_schema

        return core_schema.no_info_after_validator_function(_checked, handler(source))


def spec_field(
    *, default: Any = dataclasses.MISSING, description: str = "", default_factory: Any = dataclasses.MISSING
) -> Any:
    """A field with its description (kept in the field's metadata, ``"description"``); its default
    is given by keyword, as type checkers read a field specifier's (PEP 681)."""
    return dataclasses.field(
        default=default, default_factory=default_factory, metadata={"description": description} if description else None
    )


@dataclass_transform(kw_only_default=True, frozen_default=True, field_specifiers=(dataclasses.field, spec_field))
def spec(cls: type[T]) -> type[T]:
    """``cls`` (a :class:`Spec`) as a keyword-only dataclass whose methods are Spec's: its fields
    are listed for ``dataclasses.fields`` / ``replace`` / ``asdict`` and for pydantic, and may
    come with and without defaults in any order."""
    return fields_of(cls, init=False, repr=False, eq=False, kw_only=True)


@cache
def _adapter(cls: type) -> Any:
    from pydantic import TypeAdapter

    return TypeAdapter(cls)


def validated(cls: type[T], data: dict[str, Any]) -> T:
    """``cls`` validated from ``data`` (a mapping as read from a file; nested specs may be given
    as instances). Raises pydantic's ValidationError listing every problem with its location."""
    plain = {key: to_data(value) if dataclasses.is_dataclass(value) else value for key, value in data.items()}
    adapter: Any = _adapter(cls)  # type: ignore[arg-type]  # a class is hashable; mypy cannot tell for type[T]
    return adapter.validate_python(plain)


def to_data(value: Any, *, exclude_defaults: bool = False, exclude_none: bool = False) -> Any:
    """A spec as plain data (dicts, lists, numbers, strings: a spec's tuples become lists, as YAML
    and JSON write them), the form :func:`validated` reads back to an equal spec; optionally
    without the fields equal to their default or None."""
    if isinstance(value, Enum):
        return value.value  # a closed set's value, as typed in YAML
    if not dataclasses.is_dataclass(value):
        return [to_data(v) for v in value] if isinstance(value, (list, tuple)) else value
    out = {}
    for f in dataclasses.fields(value):
        item = getattr(value, f.name)
        if exclude_none and item is None:
            continue
        if exclude_defaults and (
            item == f.default or (f.default_factory is not dataclasses.MISSING and item == f.default_factory())
        ):
            continue
        out[f.name] = to_data(item, exclude_defaults=exclude_defaults, exclude_none=exclude_none)
    return out


def field_names(cls: type) -> list[str]:
    """The fields of a spec class, in their declared order."""
    return [f.name for f in dataclasses.fields(cls)]
