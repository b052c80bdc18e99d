"""A sample of ``scripts/fuzz_cli.py`` (10,000 runs as a script): hypothesis draws command lines
of the cheap commands (valid-shaped values, hostile ones, special files) and every run exits 0,
or 2 with one ``error:`` line, with no internal error, within 3 s and 500 MB."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "fuzz_cli.py"
#: The commands sampled here: each answers in milliseconds (serve, train and validate are the
#: script's, at 0.1-3 s a run).
CHEAP = ("params", "kv", "flops", "roofline", "context", "fit", "activations", "moe", "spec", "rope", "numerics",
         "image", "video", "show", "list", "import")  # fmt: skip


def test_a_sample_of_the_cli_fuzz_breaks_no_rule(tmp_path, monkeypatch):
    spec = importlib.util.spec_from_file_location("fuzz_cli", SCRIPT)
    assert spec is not None and spec.loader is not None
    fuzz = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(fuzz)
    monkeypatch.chdir(tmp_path)  # the fuzz runs in its folder; restore the environment it sets
    for name in ("HF_HUB_OFFLINE", "HF_HUB_CACHE", "MPLBACKEND"):
        monkeypatch.setenv(name, "")
    records = fuzz.fuzz(30, 36, 10.0, tmp_path, report=lambda *a, **k: None, commands=CHEAP)
    assert len(records) == 30
    broken = [(r["argv"], r["broke"]) for r in records if r["broke"]]
    assert broken == [], fuzz.summary(records)
