"""A spec's text holds no terminal control characters or bidirectional overrides (a new user's
trial: a shared spec whose display_name was "\\e]0;pwned\\a\\e[2Jevil\\u202eRTL" retitled the
terminal, cleared the screen and reversed the rest of the title line when ``params`` printed it)."""

from __future__ import annotations

import json

import pytest
import yaml

import llm_cost.specs.load as load


@pytest.mark.parametrize(
    "text",
    ["\x1b]0;pwned\x07", "\x1b[2Jevil", "left\u202eright", "a\u2066b", "\x9bc1", "nul\x00"],
    ids=["osc-title", "csi-clear", "rlo", "lri", "c1-csi", "nul"],
)
def test_a_yaml_spec_with_control_characters_is_refused_naming_the_field(cli, tmp_path, text):
    data = yaml.safe_load((load.data_dir("models") / "llama3-8b.yaml").read_text())
    data["display_name"] = text
    path = tmp_path / "esc.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    out = cli("params", str(path))
    assert out.code == 2 and out.out == ""
    assert "display_name: text without terminal control characters" in out.err
    assert "\x1b" not in out.err and "\u202e" not in out.err


def test_a_config_json_name_with_an_escape_never_reaches_the_terminal(cli, tmp_path):
    """A config.json's _name_or_path is made one printable line when read (an escape becomes a space)."""
    config = json.loads((load.data_dir("catalog") / "llama3.1-8b" / "config.json").read_text())
    config["_name_or_path"] = "evil\x1b[2J/model"
    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    out = cli("params", str(path))
    assert "\x1b" not in out.out + out.err


def test_plain_text_with_tabs_accents_and_cjk_is_kept(cli, tmp_path):
    data = yaml.safe_load((load.data_dir("models") / "llama3-8b.yaml").read_text())
    data["display_name"] = "Llama-3-8B (ré-entraîné, 中文)"
    path = tmp_path / "ok.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    out = cli("params", str(path))
    assert out.code == 0 and "ré-entraîné, 中文" in out.out
