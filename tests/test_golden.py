"""Byte-identity of every command's JSON: the golden files pin behaviour during refactors.

Each line of tests/golden/commands.txt is one ``llm-cost ... --json`` call (every command of the CLI
at least once, in its main variants); its stdout, run in-process through the real entry point from
the repository's root, must equal tests/golden/<name>.json byte for byte: same keys, same order,
same numbers, same text. A refactor (a function split, a type changed from a string to an enum, a
module moved) must leave them all unchanged.

The golden files are regenerated deliberately, only when output changes on purpose:
``python scripts/golden.py`` rewrites them (``--check`` only compares); the diff of tests/golden/ is
then the change users see, and is reviewed with the commit that makes it. The runner is the
script's own (:func:`run`), so the files and this test cannot drift apart.

Floats may differ from their golden values by at most 1e-6 relative (``golden.same``: numpy's
and scipy's CPU-specific paths and a fit's tolerance move them by up to 2e-8 between machines); keys, order,
strings and integers are compared exactly.

The values themselves are checked against independent sources by the rest of the suite; this test
checks only that they do not move.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("golden_script", ROOT / "scripts" / "golden.py")
assert _spec is not None and _spec.loader is not None
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)

COMMANDS = golden.commands()


def test_every_command_is_pinned():
    """Every CLI command appears in the list, each line has its own golden file, and no golden file
    is left over from a command no longer listed."""
    from llm_cost.cli import COMMAND_MODULES

    listed = {line.split()[0] for line in COMMANDS}
    assert listed == {name for names in COMMAND_MODULES.values() for name in names}
    names = [golden.golden_name(c) for c in COMMANDS]
    assert len(set(names)) == len(names)
    assert {p.name for p in golden.GOLDEN.glob("*.json")} == set(names)


@pytest.mark.parametrize("command", COMMANDS, ids=[golden.golden_name(c)[:-5] for c in COMMANDS])
def test_json_is_unchanged(command, tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    expected = (golden.GOLDEN / golden.golden_name(command)).read_text(encoding="utf-8")
    got = golden.run(command, tmp_path)
    assert golden.same(got, expected), f"llm-cost {command} --json changed; if on purpose: python scripts/golden.py"


def test_a_change_past_the_last_bits_is_caught():
    """``same`` forgives the machines' last bits and nothing more: a float moved by 1e-5 relative, a
    key renamed or reordered, an integer that became a float, all fail."""
    base = '{"a": 1, "b": 0.1234567890123, "c": "x"}'
    assert golden.same('{"a": 1, "b": 0.12345679, "c": "x"}', base)
    assert not golden.same('{"a": 1, "b": 0.123458, "c": "x"}', base)
    assert not golden.same('{"b": 0.1234567890123, "a": 1, "c": "x"}', base)
    assert not golden.same('{"a": 1.0, "b": 0.1234567890123, "c": "x"}', base)
    assert not golden.same('{"a": 1, "b": 0.1234567890123, "d": "x"}', base)
