"""Profiles: every parameter has a unit, physical bounds and a prior; the shipped fit lies within the
bounds; a hand-edited profile out of bounds is refused naming its field; a shipped prediction needs
no pydantic."""

from __future__ import annotations

import subprocess
import sys

import pytest
import yaml

from llm_cost.core.types import Engine
from llm_cost.perf.choose import load_profile
from llm_cost.perf.families import KernelFamily
from llm_cost.perf.profile import (
    ENGINE_PARAMETERS,
    FAMILY_PARAMETERS,
    EngineParameters,
    FamilyParameters,
    RegimeBand,
    SourceError,
    fit_data,
    profile_names,
)
from llm_cost.specs.declare import to_data


@pytest.mark.parametrize("name,p", [*FAMILY_PARAMETERS.items(), *ENGINE_PARAMETERS.items()])
def test_every_parameter_has_a_unit_a_meaning_and_a_prior_within_its_bounds(name, p):
    assert p.unit and p.meaning and p.lower < p.upper, name
    assert p.lower <= p.prior <= p.upper, name


def test_the_shipped_fit_lies_within_the_bounds_in_every_fold():
    """Validated by the same classes a hand-edited file is (pydantic, bounds enforced): the whole
    fit, every fold, the bands and the out-of-source summary."""
    data = fit_data()
    blocks = [(FamilyParameters, v["parameters"]) for v in data["families"].values()]
    blocks += [(EngineParameters, v["parameters"]) for v in data["engines"].values()]
    for fold in data["folds"].values():
        blocks += [(FamilyParameters, p) for p in fold["families"].values()]
        blocks += [(EngineParameters, p) for p in fold["engines"].values()]
    for cls, params in blocks:
        cls.checked(**params)
    for band in data["bands"]:
        b = RegimeBand.checked(**band)
        assert b.low <= 1 <= b.high and b.rows >= 10 and b.sources >= 3
    SourceError.checked(**data["out_of_source"])
    assert set(data["folds"]) == {row["source"] for row in data["by_source"]}


def test_every_profile_name_loads_and_says_where_it_stands():
    names = profile_names()
    assert len(names) == len(KernelFamily) * len(Engine)
    for name in names:
        p = load_profile(name)
        assert p.name == name and p.note and p.bands and p.situation.value in ("fitted", "combined", "transferred")


def _edited(tmp_path, section: str, key: str, value):
    data = to_data(load_profile("hopper-vllm"), exclude_none=True)
    data["parameters"][section][key] = value
    path = tmp_path / "edited.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "section,key,value",
    [
        ("family", "gemm_efficiency_16", 1.5),
        ("family", "bandwidth_efficiency", 0.0),
        ("engine", "step_overhead_s", -1e-3),
        ("engine", "layer_overhead_s", 1.0),
        ("family", "overlap_p", float("nan")),
    ],
)
def test_a_hand_edited_profile_out_of_bounds_is_refused_naming_the_field(cli, tmp_path, section, key, value):
    path = _edited(tmp_path, section, key, value)
    out = cli("roofline", "llama3-8b", "--gpu", "h100", "--profile", str(path))
    assert out.code == 2 and len(out.err.strip().splitlines()) == 1, out.err
    assert key in out.err and "edited.yaml" in out.err


def test_a_hand_edited_profile_within_bounds_is_read(cli, tmp_path):
    path = _edited(tmp_path, "engine", "step_overhead_s", 0.004)
    slow = cli("roofline", "llama3-8b", "--gpu", "h100", "--batch", "1", "--json", "--profile", str(path)).json()
    base = cli("roofline", "llama3-8b", "--gpu", "h100", "--batch", "1", "--json", "--profile", "hopper-vllm").json()
    extra = 0.004 - load_profile("hopper-vllm").parameters.engine.step_overhead_s
    assert slow["predicted_s"] - base["predicted_s"] == pytest.approx(extra, rel=1e-9)


def test_a_prediction_from_the_shipped_fit_imports_no_pydantic():
    code = (
        "import sys; from llm_cost import api; "
        "d = api.decode('llama3-8b', 'h100', batch=8, context=2048); "
        "assert d.predicted_s; print('pydantic' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr
