"""Plain text without Rich's console (report.base.PlainConsole): every command of the text-in-JSON
list, and long and wide grids, print exactly the text Rich's own console prints (the independent
value: Rich itself), into a pipe 160 columns wide and into a narrow one where Rich wraps."""

from __future__ import annotations

import pytest
from test_text_in_json import COMMANDS  # same folder: pytest puts it on sys.path (prepend import mode)

from llm_cost.report import base

#: Each command's result is computed once and rendered every way (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("shared_api_results")

MORE = [
    ["params", "llama3-8b"],
    ["params", "deepseek-v3", "--tp", "8"],
    ["roofline", "llama3-8b", "--batch", "1..300:1", "--context", "2K,64K"],
    ["flops", "llama3-8b", "--seq", "1..100:1"],
    ["kv", "gpt-oss-120b", "--context", "1K..1M"],
    ["fit", "deepseek-v3", "--gpu", "h100"],
    ["moe", "deepseek-v3", "--batch", "1..40:1"],  # a caption longer than its table: Rich wraps it
]


def _both(cli, monkeypatch, argv):
    plain = cli(*argv)
    real = base.console
    monkeypatch.setattr(base, "console", lambda plain=True: real(plain=False))
    rich = cli(*argv)
    monkeypatch.setattr(base, "console", real)
    return plain, rich


@pytest.mark.parametrize("argv", COMMANDS + MORE, ids=lambda a: " ".join(a)[:60])
@pytest.mark.parametrize("columns", ["160", "70"])
def test_plain_text_is_what_richs_console_prints(cli, monkeypatch, argv, columns):
    monkeypatch.setenv("COLUMNS", columns)
    plain, rich = _both(cli, monkeypatch, argv)
    assert (plain.code, plain.out, plain.err) == (rich.code, rich.out, rich.err)
