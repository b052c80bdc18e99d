"""Shell completion: the script is shown, and the program completes command names and options."""

from __future__ import annotations

import os
import subprocess
import sys


def _complete(words: str, cword: int) -> str:
    env = {**os.environ, "COMP_WORDS": words, "COMP_CWORD": str(cword), "_LLM_COST_COMPLETE": "complete_bash"}
    code = "import sys; sys.argv = ['llm-cost']; from llm_cost.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True).stdout


def test_show_completion_prints_a_bash_script(cli, monkeypatch):
    """The shell named, not detected: with shellingham installed Typer detects the parent's shell
    and reads ``--show-completion`` as a flag, which fails under a parent that is no shell (a
    background job, some CI runners); Typer's own switch makes the option take the shell's name."""
    monkeypatch.setenv("_TYPER_COMPLETE_TEST_DISABLE_SHELL_DETECTION", "1")
    r = cli("--show-completion", "bash")
    assert r.code == 0 and "_llm_cost_completion" in r.out


def test_commands_and_options_complete():
    assert _complete("llm-cost par", 1).split() == ["params"]
    assert "--phase" in _complete("llm-cost roofline --ph", 2).split()
