"""Rebuild ``llm_cost/specs/shipped_index.py``, the index of the shipped specs (names, hashes and
validated content) that lets a shipped name load without parsing YAML or JSON.

Usage: python scripts/build_index.py (after adding or editing a file in models/ or hardware/;
tests/specs/test_shipped_index.py fails until the index is rebuilt).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's llm_cost, not an installed copy
from llm_cost.specs.load import build_index, index_source

TARGET = Path(__file__).resolve().parent.parent / "llm_cost" / "specs" / "shipped_index.py"


def main() -> None:
    TARGET.write_text(index_source(build_index()), encoding="utf-8")
    print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
