"""A plain ``pip install .`` (core dependencies only: no huggingface_hub, numpy or scipy), simulated
in-process by ``sys.modules[name] = None`` (an import of it then raises ImportError), and the
messages a new user reads there: each must be true for the command that prints it."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import llm_cost

README = Path(__file__).resolve().parents[2] / "README.md"

#: Checkpoint totals from independent sources, as catalog/CATALOG.yaml records them: Llama-3.1-70B-Instruct,
#: the Hub's safetensors total (llmfit's hf_models.json @ a3e0eb27c57f); Qwen3-30B-A3B and gpt-oss-20b
#: (its logical total, without the MXFP4 scales), the paramCount of Fireworks AI's "Models" page.
CATALOGUED = [
    ("meta-llama/Llama-3.1-70B-Instruct", 70_553_706_496),
    ("Qwen/Qwen3-30B-A3B", 30_532_122_624),
    ("openai/gpt-oss-20b", 20_914_757_184),
]


@pytest.fixture
def online_without_hub(monkeypatch):
    """No huggingface_hub, and HF_HUB_OFFLINE unset (conftest sets it; a new user has not): the
    path that reads a Hub id's checkpoint headers when online is taken, and must not need the Hub."""
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)


@pytest.mark.parametrize("model_id,total", CATALOGUED)
def test_params_of_a_catalogued_hub_id_needs_no_huggingface_hub(cli, online_without_hub, model_id, total):
    r = cli("params", model_id, "--json")
    assert r.code == 0, r.err
    assert r.json()["total_params"] == total


def test_params_from_python_of_a_catalogued_hub_id_needs_no_huggingface_hub(online_without_hub):
    assert llm_cost.params("Qwen/Qwen3-30B-A3B").total_params == 30_532_122_624


def test_a_hub_id_outside_the_catalog_says_which_extra_to_install(cli, online_without_hub):
    r = cli("params", "NousResearch/Meta-Llama-3.1-8B")
    assert r.code == 2
    assert r.err.strip() == (
        "error: NousResearch/Meta-Llama-3.1-8B: looks like a Hugging Face model id; resolving it needs "
        "huggingface_hub: pip install 'llm-cost[hub]' (or give the path of its config.json)"
    )


def test_validate_without_numpy_names_numpy_alone(cli, monkeypatch):
    """validate predicts from the stored folds (README: "no refit, no scipy"); numpy is a dependency,
    so only a broken install lacks it, and then validate asks for numpy, not for scipy or the fit extra."""
    monkeypatch.setitem(sys.modules, "numpy", None)
    r = cli("validate")
    assert r.code == 2
    assert "pip install numpy" in r.err and "scipy" not in r.err.replace("no scipy", "")


def test_validate_with_numpy_alone_needs_no_scipy(cli, monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy", None)
    assert cli("validate", "--json").code == 0


def test_the_context_note_names_commands_that_take_a_layout(cli):
    """context has no --tp/--pp, so its does-not-fit note must not tell the user to give them to it.
    Llama 3.1 70B at bf16 is 141 GB of weights, more than one H100's 80 GB (h100.yaml)."""
    text = cli("context", "llama3.1-70b", "--gpu", "h100", "--context", "8K,128K").out
    note = " ".join(text.split()).split("note: weights + KV need")[1]
    assert "give --tp/--pp" not in note
    assert "`llm-cost roofline` and `llm-cost spec` take --tp/--pp" in note
    for command in ("roofline", "spec"):
        assert "--tp" in cli(command, "--help").out


def test_the_readme_quotes_the_output_tokens_error_as_python_raises_it():
    quoted = re.search(
        r"naming the argument \(`(output_tokens: 1 [^`]*?)\s*\.\.\.`", README.read_text(encoding="utf-8")
    )
    assert quoted is not None
    with pytest.raises(llm_cost.LlmCostError) as error:
        llm_cost.serve("llama3-8b", gpu="h100", output_tokens=1)
    assert str(error.value).startswith(" ".join(quoted.group(1).split()))


def test_a_catalogued_hub_id_answers_with_no_network_though_huggingface_hub_is_installed():
    """With huggingface_hub installed, HF_HUB_OFFLINE unset and no Hub to reach (HF_ENDPOINT at a
    closed local port: the connection is refused at once), a catalogued id is still counted from the
    catalog's config (the README: the catalog answers 'without the network'); the online check of
    its shard headers is skipped rather than failing the command. An id outside the catalog still
    fails in one line naming the Hub."""
    import os
    import subprocess

    pytest.importorskip("huggingface_hub")  # the [hub] extra: installed by the test extras
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_OFFLINE"}
    env["HF_ENDPOINT"] = "http://127.0.0.1:9"
    run = [sys.executable, "-c", "from llm_cost.cli import main; main()", "params"]
    ok = subprocess.run([*run, "Qwen/Qwen3-30B-A3B", "--json"], env=env, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0, ok.stderr
    assert '"total_params": 30532122624' in ok.stdout
    other = subprocess.run(
        [*run, "NousResearch/Meta-Llama-3.1-8B"], env=env, capture_output=True, text=True, timeout=60
    )
    assert other.returncode == 2 and "cannot be reached" in other.stderr and "Traceback" not in other.stderr
