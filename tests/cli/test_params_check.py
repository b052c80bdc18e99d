"""``llm-cost params MODEL --check``: refusals that need no transformers, and the table when it is there."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf"


def test_a_shipped_name_has_no_config_to_check(cli):
    r = cli("params", "llama3-8b", "--check")
    assert r.code == 2
    assert "--check: 'llama3-8b' has no config.json to build with transformers" in r.err


def test_without_the_extra_the_message_says_how_to_install_it(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch now raises ImportError
    r = cli("params", str(FIXTURES / "qwen3-8b"), "--check")
    assert r.code == 2
    assert "pip install 'llm-cost[hf]'" in r.err and "Traceback" not in r.err


@pytest.mark.hf
def test_check_prints_both_counts_and_the_difference_by_module(cli):
    """Mistral-Small-3.2: 24,011,361,280 (the checkpoint's total, CHECKPOINTS.yaml) against
    transformers' 23,340,272,640, the difference the untied LM head (131,072 x 5,120), explained."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    folder = str(FIXTURES / "mistral-small-3.2-24b-instruct-2506")
    text = cli("params", folder, "--check").out
    assert "check against transformers" in text and "Mistral3ForConditionalGeneration" in text
    assert "24,011,361,280 vs 23,340,272,640: differ, every difference explained" in text
    data = cli("params", folder, "--check", "--json").json()["transformers"]
    assert (data["ours"], data["transformers_total"]) == (24_011_361_280, 24_011_361_280 - 131_072 * 5_120)
    assert [(m["module"], m["difference"]) for m in data["modules"] if m["difference"]] == [("lm_head", 671_088_640)]
