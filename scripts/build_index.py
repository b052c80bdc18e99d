"""Rebuild ``llm_cost/specs/shipped.json``, the index of the shipped specs (names, hashes and
validated content) that lets a shipped name load without parsing YAML.

Usage: python scripts/build_index.py (after adding or editing a file in models/ or hardware/;
tests/test_shipped_index.py fails until the index is rebuilt).
"""

from __future__ import annotations

import json

from llm_cost.specs.load import INDEX, build_index


def main() -> None:
    INDEX.write_text(json.dumps(build_index(), indent=1, sort_keys=True) + "\n", encoding="utf-8")
    print(f"wrote {INDEX}")


if __name__ == "__main__":
    main()
