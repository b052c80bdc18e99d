"""Every shipped measurement file (llm_cost/data/measurements) loads with the calibration loader,
says where its numbers come from, and holds only physically possible times: no measured step is
faster than the Roofline bound of its step on its GPU's datasheet (a row below the bound would
be a transcription or derivation error, not a fast engine)."""

from __future__ import annotations

from collections import Counter

import pytest

from llm_cost.analyses.measurements import load_measurements, measurements_dir, step_of
from llm_cost.perf.timemodel import RooflineBound
from llm_cost.specs.files import read_yaml
from llm_cost.specs.load import load_gpu

FILES = sorted(measurements_dir().glob("*.yaml"))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_file_names_its_source_engine_and_quotes_every_timed_row(path):
    data = read_yaml(path)
    assert data.get("source") and data.get("engine") and data.get("retrieved"), path.name
    timed = [r for r in data["rows"] if r.get("measured_ms") not in (None, "")]
    assert timed and all(r.get("quote") for r in timed), path.name


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_no_measured_step_beats_its_roofline_bound(path):
    for m in load_measurements([path]):
        bound_ms = RooflineBound().step_time(step_of(m), load_gpu(m.gpu)).time_s * 1e3
        assert bound_ms <= m.measured_ms, (m.id, bound_ms, m.measured_ms)


def test_row_ids_are_unique_across_files():
    counts = Counter(m.id for m in load_measurements(FILES))
    assert [i for i, n in counts.items() if n > 1] == []


@pytest.mark.parametrize("reason", ["", "  ", 3, ["a list"]])
def test_check_only_must_give_its_reason_as_text(tmp_path, reason):
    """A file's check_only is the reason no fit may use its rows: an empty or non-text one is
    refused, naming the file and the field."""
    import yaml

    from llm_cost.core.errors import SpecError

    data = read_yaml(measurements_dir() / "sglcookbook-kimi-k25-h200-sglang.yaml") | {"check_only": reason}
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(data), encoding="utf-8")
    with pytest.raises(SpecError, match=r"bad\.yaml: field check_only: give the reason"):
        load_measurements([bad])
