"""Rebuild the generated index of shipped specs (:mod:`llm_cost.specs.index`):
``llm_cost/specs/shipped_index.py`` (the specs of models/ and hardware/), which lets a shipped name
load without parsing YAML or JSON or importing pydantic. (The time model's fit is a JSON file of its
own, written by scripts/fit_profiles.py.)

Usage: python scripts/build_index.py (after adding or editing a file in models/ or hardware/;
tests/specs/test_shipped_index.py fails until the index is rebuilt).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's llm_cost, not an installed copy
from llm_cost.specs.load import build_index, index_source

ROOT = Path(__file__).resolve().parent.parent
SPECS = ROOT / "llm_cost" / "specs" / "shipped_index.py"


def main() -> None:
    SPECS.write_text(index_source(build_index()), encoding="utf-8")
    print(f"wrote {SPECS}")


if __name__ == "__main__":
    main()
