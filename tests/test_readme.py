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


# --- the README's console examples and its workload file -------------------------------------

#: A console block: ``$ llm-cost ...``, then the output pasted under it (``scripts/readme_examples.py``
#: writes it; a block ending in ``...`` keeps only its first lines).
BLOCK = re.compile(r"```console\n\$ llm-cost ([^\n]*)\n(.*?)```", re.S)
#: The examples not run here, each with its cost in-process on the 2-core machine and why: the
#: suite runs every other one, and ``python scripts/readme_examples.py --check`` runs them all
#: (about 30 s as processes). The serve plans and GPU comparison are the serving suite's own
#: commands (``tests/test_api_serve.py``, ``tests/report``); ``validate`` refits every shipped
#: profile; ``calibrate`` prints a least-squares fit to four digits, which numpy and scipy builds
#: round differently in the last one.
NOT_RUN = {
    "serve llama3-70b --gpu h100 --gpus 8 --input 2K --output 256 --ttft p99:2s --tpot p90:50ms --usd-per-gpu-hour 2.5": "1.7 s",
    "serve llama3-70b --gpu h100 --gpus 8 --input 2K --output 256 --ttft p99:2s --tpot p90:50ms --emit vllm": "1.7 s",
    "serve llama3-70b --gpu h100,h200,b200,mi300x --gpus 8": "7.8 s",
    "serve llama3-8b --gpu h100 --qps 20 --input 2K --output 256": "0.9 s",
    "validate": "5.6 s; --profile h200 1.2 s",
    "calibrate": "a fit's last digit",
}


def _examples() -> list[tuple[str, str]]:
    return [(m.group(1), m.group(2)) for m in BLOCK.finditer(README.read_text(encoding="utf-8"))]


def _run_here(command: str) -> bool:
    return not any(command.startswith(prefix) for prefix in NOT_RUN)


def test_every_example_not_run_here_is_named():
    """Each prefix of NOT_RUN still names a README example (a renamed one is run again)."""
    commands = [c for c, _ in _examples()]
    assert len(commands) >= 20
    assert all(any(c.startswith(prefix) for c in commands) for prefix in NOT_RUN)


@pytest.mark.parametrize(
    "command,pasted", [e for e in _examples() if _run_here(e[0])], ids=[c for c, _ in _examples() if _run_here(c)]
)
def test_a_readme_example_prints_what_the_readme_shows(cli, monkeypatch, command, pasted):
    """The command of a README console block prints the output pasted under it, as
    ``scripts/readme_examples.py`` renders it (120 columns, no colour)."""
    import shlex

    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.setenv("NO_COLOR", "1")
    r = cli(*shlex.split(command))
    shown = "\n".join(line.rstrip() for line in (r.out if r.code in (0, 1) else r.err).rstrip("\n").splitlines())
    expected = pasted.rstrip("\n").splitlines()
    if expected and expected[-1] == "...":
        shown, expected = "\n".join(shown.splitlines()[: len(expected) - 1]), expected[:-1]
    assert shown == "\n".join(expected)


def test_the_readme_workload_file_is_served(cli, tmp_path):
    """The README's workload file (its ```yaml block) is read and served: its prefix of 200
    tokens is shorter than its prompts (lognormal, mean 800), as a prefix must be (input_tokens is
    the whole prompt, prefix included)."""
    blocks = re.findall(r"```yaml\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert len(blocks) == 1
    path = tmp_path / "work.yaml"
    path.write_text(blocks[0])
    r = cli("serve", "llama3-8b", "--tp", "1", "--workload", str(path), "--requests", "100", "--json")
    assert r.code == 0, r.err
    described = r.json()["workload"]
    assert (
        "4 shared prefixes of 200 tokens (8 prefix users each, requests dealt to the 32 in turn); 100 requests"
        in described
    ), described
