"""Rebuild the generated indexes of shipped files (:mod:`llm_cost.specs.index`):
``llm_cost/specs/shipped_index.py`` (the specs of models/ and hardware/) and
``llm_cost/specs/catalog_names.py`` and ``catalog_index.py`` (the names, sources and totals of the
offline catalog, catalog/), which let a shipped name load without parsing YAML or JSON or importing
pydantic. (The time model's fit is a JSON file of its own, written by scripts/fit_profiles.py.)

Usage: python scripts/build_index.py (after adding or editing a file in models/, hardware/ or
catalog/; tests/specs/test_shipped_index.py and tests/specs/test_catalog.py fail until the indexes
are rebuilt).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's llm_cost, not an installed copy
from llm_cost.specs.catalog import build_catalog_index, catalog_index_source
from llm_cost.specs.load import build_index, index_source

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "llm_cost" / "specs" / "shipped_index.py"


def main() -> None:
    SPECS.write_text(index_source(build_index()), encoding="utf-8")
    print(f"wrote {SPECS}")
    # After SPECS: the catalog's names are checked against the shipped index's.
    for module, text in catalog_index_source(build_catalog_index()).items():
        path = ROOT / "llm_cost" / "specs" / f"{module}.py"
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")


if __name__ == "__main__":
    main()
