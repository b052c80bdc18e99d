"""The README's Python example runs, and agrees with the command line on the same question."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_example() -> str:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README has a Python example"
    return blocks[0]


def test_the_python_example_agrees_with_the_cli(cli, capsys):
    namespace: dict = {}
    exec(compile(_python_example(), "README.md", "exec"), namespace)  # noqa: S102 - the README's own code
    printed = capsys.readouterr().out.splitlines()
    data = cli("roofline", "llama3-8b", "--gpu", "h100", "--batch", "64", "--context", "2K", "--json").json()
    assert namespace["step"].estimate_s == data["estimate_s"] and namespace["step"].bound_s == data["bound_s"]
    assert printed[1] == "8030261248" and printed[2] == str(8192 * 131_072)
    assert [r["batch"] for r in namespace["rows"]] == [1, 8, 64]


def test_api_errors_carry_the_cli_message(cli):
    import llm_cost

    message = cli("params", "llama-9").err.strip().removeprefix("error: ")
    try:
        llm_cost.params("llama-9")
    except llm_cost.LlmCostError as exc:
        assert str(exc) == message
    else:  # pragma: no cover - the name does not exist
        raise AssertionError("no error for an unknown model")


@pytest.mark.parametrize(
    "call",
    [
        lambda m: m.kv("llama3-8b", 8192),
        lambda m: m.decode("llama3-8b", batch=[1, 8]),
        lambda m: m.decode("llama3-8b", context="8K"),
        lambda m: m.prefill("llama3-8b", seq=0),
        lambda m: m.decode("llama3-8b", "h999"),
        lambda m: m.decode("llama3-8b", mfu=0),
        lambda m: m.decode("llama3-8b", dtype="fp3"),
        lambda m: m.decode(None),
        lambda m: m.decode("llama3-8b", gpu=None),
        lambda m: m.kv("llama3-8b", [-1]),
        lambda m: m.decode("llama3-8b", batch=-1),
        lambda m: m.kv("llama3-8b", "8K"),
    ],
)
def test_api_bad_arguments_raise_its_error(call):
    import llm_cost

    with pytest.raises(llm_cost.LlmCostError):
        call(llm_cost)
