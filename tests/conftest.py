"""Shared fixtures: run the CLI in-process (fast) and capture stdout, stderr and exit code."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys):
    """Call ``llm-cost ARGS...`` in-process through the real entry point."""
    from llm_cost.cli import main

    def run(*args: str) -> Run:
        import sys

        old = sys.argv
        sys.argv = ["llm-cost", *args]
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.argv = old
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


@pytest.fixture(autouse=True)
def _no_network(monkeypatch, tmp_path_factory):
    """Every test runs offline against an empty Hugging Face cache unless it builds its own, so a
    MODEL that looks like a Hub id can never reach the network."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path_factory.getbasetemp() / "empty-hf-cache"))
    monkeypatch.delenv("HF_TOKEN", raising=False)
