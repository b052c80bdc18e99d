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


def test_a_record_refuses_what_its_init_cannot_do():
    with pytest.raises(TypeError, match="__init__"):

        @record
        class _Checked:
            x: int

            def __post_init__(self) -> None:
                pass
