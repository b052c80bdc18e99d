"""``params --check`` over every config fixture: llm-cost's count against the model transformers
builds from the same file on the meta device (llm_cost.specs.hf.oracle). Runs only with the ``hf``
extra installed (transformers and torch; CI installs it); every difference must be a named
convention, and there is one: Mistral 3's wrapper ties by default where the checkpoint is untied."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from llm_cost import api  # noqa: E402
from llm_cost.core.errors import SpecError  # noqa: E402

pytestmark = pytest.mark.hf

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CONFIGS = sorted(str(p.parent.relative_to(FIXTURES)) for p in FIXTURES.rglob("config.json"))

#: Fixtures whose counts differ from transformers', the module and why (a convention, not a bug).
EXPLAINED = {
    # Mistral3Config's tie_word_embeddings defaults to true; the published config does not set it and
    # the checkpoint stores lm_head.weight (CHECKPOINTS.yaml: 24,011,361,280 with the untied head)
    "hf/mistral-small-3.2-24b-instruct-2506": "lm_head",
    # its transformers 5 re-save writes the wrapper's default true and text_config's false
    "hf-v5/mistral-small-3.2-24b-instruct-2506": "lm_head",
}
#: Fixtures transformers has no class for: remote code only.
NO_CLASS = {"hf/internlm2_5-7b-chat": "internlm2", "hf-unverified/mimo-7b-base": "mimo"}


def test_the_fixtures_are_all_here():
    assert len(CONFIGS) == 124  # 54 + 7 published, 60 transformers 5 re-saves, MiMo-7B, 1 checkpoint-format fixture


@pytest.mark.parametrize("name", CONFIGS)
def test_params_check_agrees_with_transformers(name):
    path = str(FIXTURES / name)
    if name in NO_CLASS:
        with pytest.raises(SpecError, match=f"has no class for model_type '{NO_CLASS[name]}'"):
            api.params(path, check=True)
        return
    check = api.params(path, check=True).transformers
    differing = {m.module for m in check.modules if m.difference}
    if name in EXPLAINED:
        assert differing == {EXPLAINED[name]} and check.explained
    else:
        assert check.difference == 0 and differing == set(), [m for m in check.modules if m.difference]
    # the KV cache's schedule: every layer's attention kind and the window, as transformers builds them
    assert not check.layer_type_differences, check.layer_type_differences
    assert check.sliding_windows is None or check.sliding_windows[0] == check.sliding_windows[1], check.sliding_windows


def test_llama4_builds_with_its_integer_flag_passed_as_a_bool():
    """Llama 4 Scout's published attn_temperature_tuning: 4 is refused by transformers 5's strict
    bool field; the oracle passes true (transformers 4 read the integer as true) and says so."""
    check = api.params(str(FIXTURES / "hf" / "llama-4-scout-17b-16e"), check=True).transformers
    assert check.difference == 0
    assert check.changes == ["attn_temperature_tuning = 4 passed as true (transformers 5.24.0 wants a bool)"]
