"""Conventions are data: every Note code the engine emits has a sentence in report/notes.py, and
every sentence belongs to a code the engine emits (no dead templates)."""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import llm_cost
from llm_cost.core.notes import note
from llm_cost.report.notes import TEMPLATES, sentence

PACKAGE = Path(llm_cost.__file__).parent


@lru_cache(maxsize=1)
def _codes() -> tuple[set[str], set[str]]:
    """(literal codes, prefixes of f-string codes) passed to ``note(...)`` anywhere in the package."""
    literal, prefixes = set(), set()
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "note" and node.args:
                arg = node.args[0]
                if isinstance(arg, ast.Constant):
                    literal.add(arg.value)
                elif isinstance(arg, ast.JoinedStr) and isinstance(arg.values[0], ast.Constant):
                    prefixes.add(arg.values[0].value)
    return literal, prefixes


def test_every_code_has_a_sentence():
    literal, prefixes = _codes()
    assert literal - set(TEMPLATES) == set()
    assert [p for p in prefixes if not any(k.startswith(p) for k in TEMPLATES)] == []


def test_every_sentence_has_a_code():
    literal, prefixes = _codes()
    assert [k for k in TEMPLATES if k not in literal and not any(k.startswith(p) for p in prefixes)] == []


def test_a_sentence_carries_its_parameters():
    assert sentence(note("kv.window", window=4096)) == "sliding-window layers keep at most W = 4,096 tokens"


def test_a_replica_share_reads_as_an_english_ordinal():
    """'every 3th arrival' (a new user's trial): the serve note counts arrivals in English ordinals
    (the README's two-replica plan prints 'every 2nd arrival', tests/test_readme.py)."""
    from llm_cost.report.notes import _ordinal

    assert [_ordinal(n) for n in (2, 3, 4, 11, 12, 13, 21, 22, 101, 111)] == [
        "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st", "111th"
    ]  # fmt: skip
