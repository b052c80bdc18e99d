"""Two figures of the code's shape, counted from its syntax (nothing is imported or run):

- ``long``: functions (and methods) of ``llm_cost/`` whose body, after its docstring, spans more
  than :data:`MAX_BODY_LINES` lines, from the first statement's line to the last one's; generated
  data (modules that say ``do not edit``) is left out;
- ``any``: ``Any`` in the annotations (parameters and return) of the public functions of
  ``llm_cost/api/`` (module-level, name without a leading ``_``), ``Optional[Any]`` counted once.

tests/test_code_shape.py holds both at their ceilings.

Usage: python scripts/code_shape.py [--list]   (--list: each function counted, longest first)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "llm_cost"
#: A function body longer than this many lines (after its docstring) is counted as long.
MAX_BODY_LINES = 60


def _generated(text: str) -> bool:
    """Whether a module is generated data (its docstring says ``do not edit``)."""
    return "do not edit" in text[:400]


def body_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Lines of ``node``'s body after its docstring: from the first statement to the end of the last."""
    body = node.body
    first = body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        body = body[1:]
    if not body:
        return 0
    end = body[-1].end_lineno or body[-1].lineno
    return end - body[0].lineno + 1


def long_functions(package: Path = PACKAGE) -> dict[str, int]:
    """``path:function`` -> body lines, for each function of ``package`` over :data:`MAX_BODY_LINES`."""
    found = {}
    for path in sorted(package.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if _generated(text):
            continue
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = body_lines(node)
                if lines > MAX_BODY_LINES:
                    found[f"{path.relative_to(package.parent)}:{node.lineno}:{node.name}"] = lines
    return found


def _annotations(node: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr]:
    a = node.args
    params = [*a.posonlyargs, *a.args, *a.kwonlyargs, *(p for p in (a.vararg, a.kwarg) if p is not None)]
    return [x for x in (*(p.annotation for p in params), node.returns) if x is not None]


def _mentions_any(annotation: ast.AST) -> bool:
    """Whether an annotation names ``Any`` (also inside a quoted forward reference)."""
    for x in ast.walk(annotation):
        if isinstance(x, ast.Name) and x.id == "Any":
            return True
        if isinstance(x, ast.Constant) and isinstance(x.value, str) and _mentions_any(ast.parse(x.value, mode="eval")):
            return True
    return False


def any_in_api_signatures(api: Path = PACKAGE / "api") -> dict[str, int]:
    """``module:function`` -> annotations naming ``Any``, for each public function of ``api``."""
    found = {}
    for path in sorted(api.glob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
                n = sum(_mentions_any(x) for x in _annotations(node))
                if n:
                    found[f"{path.name}:{node.name}"] = n
    return found


def main() -> None:
    long, anys = long_functions(), any_in_api_signatures()
    print(f"functions over {MAX_BODY_LINES} body lines: {len(long)}")
    print(f"Any in the api's public signatures: {sum(anys.values())}")
    if "--list" in sys.argv[1:]:
        for name, lines in sorted(long.items(), key=lambda kv: -kv[1]):
            print(f"  {lines:4d}  {name}")
        for name, n in sorted(anys.items(), key=lambda kv: -kv[1]):
            print(f"  {n:4d} Any  {name}")


if __name__ == "__main__":
    main()
