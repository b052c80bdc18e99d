"""Calibration profiles: one declaration of the parameters (the Parameters class), its bounds enforced
on every profile read, and a prediction from a shipped profile without pydantic."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from llm_cost.core.errors import SpecError
from llm_cost.perf import profile
from llm_cost.perf.profile import PARAMETERS, Parameters, load_profile, profile_names, profiles_dir
from llm_cost.specs.declare import field_names, to_data


def test_the_parameter_table_is_the_parameters_class():
    assert list(PARAMETERS) == field_names(Parameters)
    for name, p in PARAMETERS.items():
        assert p.lower <= p.prior <= p.upper, name
        assert p.unit and p.meaning, name


@pytest.mark.parametrize("name", profile_names())
def test_every_shipped_profile_lies_within_the_documented_bounds(name):
    values = to_data(load_profile(name).parameters)
    assert list(values) == list(PARAMETERS)
    for key, value in values.items():
        assert PARAMETERS[key].lower <= value <= PARAMETERS[key].upper, (name, key)


def _edited(tmp_path, monkeypatch, key, value):
    """The shipped h200 profile edited by hand in a copy of the shipped folder (so its entry in the
    index no longer matches and it is read from its YAML)."""
    folder = tmp_path / "profiles"
    folder.mkdir()
    text = (profiles_dir() / "h200.yaml").read_text()
    edited, n = re.subn(rf"^(  {key}:) .*$", rf"\g<1> {value}", text, count=1, flags=re.M)
    assert n == 1
    (folder / "h200.yaml").write_text(edited)
    monkeypatch.setattr(profile, "profiles_dir", lambda: folder)


@pytest.mark.parametrize(
    "key,value",
    [
        ("overlap_p", "1e300"),
        ("overlap_p", "0.5"),  # below 1: worse than no overlap at all
        ("gemm_efficiency_max", "1.5"),  # above the peak
        ("link_efficiency", "0.01"),
        ("layer_overhead_s", "-1e-5"),
        ("kv_saturation_heads", "1e9"),
    ],
)
def test_a_hand_edited_profile_out_of_bounds_is_refused_naming_the_field(tmp_path, monkeypatch, key, value):
    _edited(tmp_path, monkeypatch, key, value)
    with pytest.raises(SpecError) as exc:
        load_profile("h200")
    message = str(exc.value)
    assert "\n" not in message and f"parameters.{key}" in message
    p = PARAMETERS[key]
    assert f"{p.upper:g}" in message if float(value) > p.upper else f"{p.lower:g}" in message


def test_a_hand_edited_profile_within_bounds_is_read(tmp_path, monkeypatch):
    _edited(tmp_path, monkeypatch, "overlap_p", "2.5")
    assert load_profile("h200").parameters.overlap_p == 2.5


def test_a_prediction_from_a_shipped_profile_imports_no_pydantic():
    code = (
        "import sys; sys.argv = ['llm-cost', 'roofline', 'llama3-8b', '--gpu', 'h100']\n"
        "from llm_cost.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core', 'yaml')),"
        " file=sys.stderr)"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env={**os.environ, "COLUMNS": "200"}
    )
    assert "profile h100-vllm/vllm" in next(line for line in run.stdout.splitlines() if "prediction  " in line)
    assert run.stderr.strip() == "[]"


@pytest.mark.parametrize("value", [".inf", ".nan", "1e308", "-1", "0", "0.5"])
def test_a_profile_s_transfer_widening_must_be_finite_and_widen(tmp_path, value):
    """transfer_widen multiplies a band's log ratio (band_factors): below 1 it would narrow or invert
    the band (at -1 the fast end was slower than the slow end), infinite or NaN it divided by zero in
    the simulator; it is refused naming the field, and 2.5 (the shipped value) is read."""
    import yaml

    data = yaml.safe_load((profiles_dir() / "h100-vllm.yaml").read_text(encoding="utf-8"))
    data["transfer_widen"] = yaml.safe_load(value)
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(SpecError, match="transfer_widen"):
        load_profile(str(path))
    data["transfer_widen"] = 2.5
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    assert load_profile(str(path)).transfer_widen == 2.5
