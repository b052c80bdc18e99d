"""@record: a frozen dataclass built by one write, with the dataclass's own behaviour."""

from __future__ import annotations

import dataclasses
from dataclasses import field

import pytest

from llm_cost.core.records import record


@record
class _Point:
    name: str
    x: int = 0
    tags: list[str] = field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class _Same:
    name: str
    x: int = 0
    tags: list[str] = field(default_factory=list)


def test_a_record_behaves_as_the_frozen_dataclass():
    a, b = _Point("a", x=3), _Same("a", x=3)
    assert dataclasses.astuple(a) == dataclasses.astuple(b) == ("a", 3, [])
    assert repr(a) == repr(b).replace("_Same", "_Point")
    assert a == _Point("a", 3) and a != _Point("a", 4)
    assert hash(_Point("a", 3, ())) == hash(_Same("a", 3, ())) == hash(("a", 3, ()))  # type: ignore[arg-type]
    assert _Point("b").tags is not _Point("b").tags  # a fresh default per instance
    assert dataclasses.replace(a, x=5) == _Point("a", 5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        a.x = 1  # type: ignore[misc]
    with pytest.raises(TypeError):
        _Point()  # type: ignore[call-arg]


@record
class _Area:
    w: int
    h: int = 1
    area: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "area", self.w * self.h)


@dataclasses.dataclass(frozen=True)
class _SameArea:
    w: int
    h: int = 1
    area: int = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "area", self.w * self.h)


def test_a_record_runs_its_post_init_as_the_dataclass_does():
    a, b = _Area(3, h=2), _SameArea(3, h=2)
    assert dataclasses.astuple(a) == dataclasses.astuple(b) == (3, 2, 6)
    assert repr(a) == repr(b).replace("_SameArea", "_Area")
    assert a == _Area(3, 2) and hash(a) == hash((3, 2, 6))
    assert dataclasses.replace(a, h=5).area == 15


def test_a_record_refuses_what_its_init_cannot_do():
    with pytest.raises(TypeError, match="__init__"):

        @record
        class _Unset:  # an init=False field nothing sets
            x: int
            y: int = field(init=False)

    with pytest.raises(TypeError, match="__init__"):

        @record
        class _Early:  # __post_init__'s fields must follow the given ones, as __dict__ keeps them in order
            y: int = field(init=False)
            x: int = 0

            def __post_init__(self) -> None:
                object.__setattr__(self, "y", self.x)

    with pytest.raises(TypeError, match="__init__"):

        @record
        class _KeywordOnly:
            x: int = field(kw_only=True)


def _described(cls):
    return [
        (f.name, f.type, f.default, f.default_factory, f.kw_only, f._field_type, dict(f.metadata), f.init)
        for f in cls.__dataclass_fields__.values()
    ] + [cls.__annotations__, getattr(cls, "__match_args__", None)]


def _declared():
    """Two copies of one class body: string annotations (this module has ``from __future__
    import annotations``), defaults, a factory, metadata, a ClassVar and a keyword-only marker."""
    from typing import ClassVar

    def body():
        class Sample:
            a: int
            b: tuple[int, ...] = (1, 2)
            c: list[str] = field(default_factory=list, metadata={"description": "c"})
            d: ClassVar[int] = 3

        return Sample

    return body(), body()


@pytest.mark.parametrize("options", [{"init": False}, {"init": False, "kw_only": True}, {"init": True}])
def test_fields_of_declares_the_fields_the_dataclasses_module_does(options):
    from llm_cost.core.records import fields_of

    plain, fast = _declared()
    assert _described(fields_of(fast, **options)) == _described(dataclasses.dataclass(**options)(plain))

    def body():
        class NoClassVar:
            a: int
            b: str = "x"
            c: dict[str, int] = field(default_factory=dict)

        return NoClassVar

    plain, fast = body(), body()
    assert _described(fields_of(fast, **options)) == _described(dataclasses.dataclass(**options)(plain))
    assert all(isinstance(f.type, str) for f in dataclasses.fields(fast))
