"""Rebuild the generated indexes of shipped files (:mod:`llm_cost.specs.index`):
``llm_cost/specs/shipped_index.py`` (the specs of models/ and hardware/),
``llm_cost/specs/catalog_names.py`` and ``catalog_index.py`` (the names, sources and totals of the
offline catalog, catalog/)
and ``llm_cost/perf/profile_index.py`` (the calibration profiles), which let a shipped name load
without parsing YAML or JSON or importing pydantic.

Usage: python scripts/build_index.py (after adding or editing a file in models/, hardware/, catalog/
or llm_cost/data/profiles/; tests/specs/test_shipped_index.py, tests/specs/test_catalog.py and
tests/perf/test_calibration.py fail until the indexes are rebuilt). scripts/fit_profiles.py rewrites the profiles and their index.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's llm_cost, not an installed copy
from llm_cost.perf.profile import build_profile_index, profile_index_source
from llm_cost.specs.catalog import build_catalog_index, catalog_index_source
from llm_cost.specs.load import build_index, index_source

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "llm_cost" / "specs" / "shipped_index.py"
PROFILES = ROOT / "llm_cost" / "perf" / "profile_index.py"


def main() -> None:
    SPECS.write_text(index_source(build_index()), encoding="utf-8")
    print(f"wrote {SPECS}")
    # After SPECS: the catalog's names are checked against the shipped index's.
    for module, text in catalog_index_source(build_catalog_index()).items():
        path = ROOT / "llm_cost" / "specs" / f"{module}.py"
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    PROFILES.write_text(profile_index_source(build_profile_index()), encoding="utf-8")
    print(f"wrote {PROFILES}")


if __name__ == "__main__":
    main()
