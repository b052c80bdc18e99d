"""A config.json's bad values are refused in words that fit them (a new user's trial: head_dim
-128 was told 'must be an integer >= 0', model_type 5 'model_type is missing', and a 5,000-digit
number got Python's advice to call sys.set_int_max_str_digits())."""

from __future__ import annotations

import json

import pytest

import llm_cost.specs.load as load


def _config(tmp_path, **changes) -> str:
    data = json.loads((load.data_dir("catalog") / "llama3.1-8b" / "config.json").read_text(encoding="utf-8"))
    data.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize(
    "changes, needle",
    [
        ({"head_dim": -128}, "head_dim is a size or a count, never negative (got -128)"),
        ({"hidden_size": -8192}, "hidden_size is a size or a count, never negative (got -8192)"),
        ({"model_type": 5}, "model_type must be a family name (got 5)"),
    ],
)
def test_a_bad_value_is_named_for_what_it_is(cli, tmp_path, changes, needle):
    out = cli("params", _config(tmp_path, **changes))
    assert out.code == 2 and needle in out.err and out.err.count("\n") == 1


def test_a_number_too_long_for_python_is_named_without_pythons_advice(cli, tmp_path):
    path = tmp_path / "config.json"
    text = (load.data_dir("catalog") / "llama3.1-8b" / "config.json").read_text(encoding="utf-8")
    path.write_text(text.replace('"hidden_size": 4096', '"hidden_size": ' + "9" * 5000), encoding="utf-8")
    out = cli("params", str(path))
    assert out.code == 2 and "a number of more than 4,300 digits" in out.err and "sys." not in out.err
