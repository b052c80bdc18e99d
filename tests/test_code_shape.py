"""The code's shape, held where it stands (scripts/code_shape.py counts it from the syntax):
functions with bodies over 60 lines only go down; the public functions of ``llm_cost.api`` name
no ``Any`` in their signatures; and the keyword form of ``serve`` takes exactly the fields of its request record, with the
same defaults, so the defaults are written once."""

from __future__ import annotations

import dataclasses
import importlib.util
import inspect
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "code_shape.py"


def _shape():
    spec = importlib.util.spec_from_file_location("code_shape", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: Functions whose body (after the docstring) is over 60 lines: 41 when this was first counted, 12 now.
MAX_LONG_FUNCTIONS = 12


def test_long_functions_do_not_grow():
    long = _shape().long_functions()
    assert len(long) <= MAX_LONG_FUNCTIONS, sorted(long.items(), key=lambda kv: -kv[1])


def test_no_public_api_function_names_any_in_its_signature():
    anys = _shape().any_in_api_signatures()
    assert anys == {}


def test_the_counts_see_what_they_count(tmp_path):
    """The counter finds a long body and an ``Any`` it is shown (so a zero is not a blind one)."""
    shape = _shape()
    (tmp_path / "api").mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(61))
    (tmp_path / "api" / "m.py").write_text(
        f'from typing import Any\n\ndef f(a: Any, b: "Optional[Any]") -> int:\n    """Doc."""\n{body}\n    return 0\n'
        "\n\ndef _g(a: Any) -> Any:\n    return a\n"
    )
    assert shape.any_in_api_signatures(tmp_path / "api") == {"m.py:f": 2}
    assert list(shape.long_functions(tmp_path).values()) == [62]


def test_serve_takes_its_request_fields_with_the_same_defaults():
    from llm_cost.api.requests import ServeRequest
    from llm_cost.api.serving import serve

    fields = {f.name: f.default for f in dataclasses.fields(ServeRequest)}
    params = {p.name: p.default for p in inspect.signature(serve).parameters.values()}
    assert params.keys() == fields.keys()
    assert {k: v for k, v in params.items() if k != "model"} == {k: v for k, v in fields.items() if k != "model"}


def test_engine_names_are_written_once():
    """The engines' names are the values of :class:`~llm_cost.core.types.Engine` (and the enums
    built from them): no other code compares with or keys by a name as text. Docstrings aside; the
    one other ``"vllm"`` is the program a launch command runs."""
    import ast

    from llm_cost.core.types import Engine

    names = {e.value for e in Engine}
    package = SCRIPT.parents[1] / "llm_cost"
    found = []
    for path in sorted(package.rglob("*.py")):
        if path.relative_to(package).as_posix() == "core/types.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {
            id(node.body[0].value)
            for node in ast.walk(tree)
            if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            and node.body
            and isinstance(node.body[0], ast.Expr)
            and isinstance(node.body[0].value, ast.Constant)
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and node.value in names and id(node) not in docstrings:
                found.append((path.relative_to(package).as_posix(), node.value, node.lineno))
    assert [(where, name) for where, name, _ in found] == [("analyses/launch.py", "vllm")], found
