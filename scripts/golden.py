"""Write the golden JSON of every command listed in tests/golden/commands.txt: each command's
``--json`` output, byte for byte, run in-process through the real entry point from the repository's
root. tests/test_golden.py compares the same commands' output with these files, so a refactor that
changes any number, key or order of any command's JSON fails the suite.

Regenerate only when output changes on purpose (a new field, a corrected number), and read the
diff of tests/golden/ before committing it: it is the change users see.

Usage: python scripts/golden.py [--check]   (--check: write nothing; exit 1 and name the commands
whose output differs from its golden file)
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import shlex
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "tests" / "golden"
COMMANDS = GOLDEN / "commands.txt"
#: The scratch folder's place in a command line and in its output.
TMP = "{tmp}"


def commands() -> list[str]:
    """The command lines of :data:`COMMANDS` (without ``llm-cost`` and ``--json``), in file order."""
    lines = COMMANDS.read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def golden_name(command: str) -> str:
    """The golden file's name of a command line: its words joined by dashes, ``.json``."""
    return re.sub(r"[^a-z0-9.]+", "-", command.lower().replace(TMP, "tmp")).strip("-")[:100] + ".json"


def run(command: str, tmp: Path) -> str:
    """``llm-cost COMMAND --json``'s stdout, run in-process with the current directory as it is (the
    caller makes it the repository's root), ``{tmp}`` standing for ``tmp`` in the command and in
    the output. Raises AssertionError with stderr when the command does not exit 0."""
    from llm_cost.cli import main

    argv = [arg.replace(TMP, str(tmp)) for arg in shlex.split(command)]
    out, err = io.StringIO(), io.StringIO()
    old, code = sys.argv, 0
    sys.argv = ["llm-cost", *argv, "--json"]
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        sys.argv = old
    if code != 0:
        raise AssertionError(f"llm-cost {command} --json exited {code}: {err.getvalue().strip()}")
    return out.getvalue().replace(str(tmp), TMP)


#: How far a float may sit from its golden value: numpy's and scipy's reductions and fits take
#: CPU-specific paths (SIMD dispatch, OpenBLAS kernels), so the same code on another machine moves
#: the last bits, and a fit stops within its tolerance. Seen between two machines (an AMD EPYC
#: and the one the files were written on): ``validate``'s medians by one unit in the last place,
#: ``calibrate``'s least-squares predictions by 2e-9 and its errors (differences of near values)
#: by 2e-8 relative. Any change of a formula or a default moves a figure by far more.
FLOAT_REL = 1e-6


def same(got: str, expected: str) -> bool:
    """Whether a command's JSON ``got`` is its golden ``expected``: the same text, or the same
    document (keys in the same order, the same strings, integers and nulls) whose floats differ by
    at most :data:`FLOAT_REL` relative (the machines' last bits and a fit's tolerance), never in kind."""
    import json
    import math

    if got == expected:
        return True

    def alike(a: object, b: object) -> bool:
        if isinstance(a, float) and isinstance(b, float):
            return math.isclose(a, b, rel_tol=FLOAT_REL, abs_tol=1e-300)
        if isinstance(a, dict) and isinstance(b, dict):
            return list(a) == list(b) and all(alike(a[k], b[k]) for k in a)
        if isinstance(a, list) and isinstance(b, list):
            return len(a) == len(b) and all(alike(x, y) for x, y in zip(a, b))
        return type(a) is type(b) and a == b

    try:
        return alike(json.loads(got), json.loads(expected))
    except ValueError:
        return False


def main() -> None:
    check = "--check" in sys.argv[1:]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.chdir(ROOT)
    names = [golden_name(c) for c in commands()]
    if len(set(names)) != len(names):
        sys.exit("tests/golden/commands.txt: two commands share a golden file name; make them differ")
    stale = []
    with tempfile.TemporaryDirectory() as tmp:
        for command, name in zip(commands(), names):
            text = run(command, Path(tmp))
            path = GOLDEN / name
            if check:
                if not path.exists() or not same(text, path.read_text(encoding="utf-8")):
                    stale.append(command)
            else:
                path.write_text(text, encoding="utf-8")
    if not check:
        for path in GOLDEN.glob("*.json"):
            if path.name not in names:
                path.unlink()
    if stale:
        sys.exit("output differs from tests/golden/ for:\n  " + "\n  ".join(stale))


if __name__ == "__main__":
    main()
