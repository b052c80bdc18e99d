"""Refit the shipped time model (llm_cost/data/timemodel-fit.json) on every shipped measurement.

One fit across all sources (each kernel family's efficiencies, each engine's fixed costs), then one
fit per source without that source's rows: the leave-one-source-out folds that ``llm-cost validate``
checks and the error bands come from (:mod:`llm_cost.analyses.calibration`). A few minutes of CPU.

    python scripts/fit_profiles.py
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # this checkout's llm_cost, not an installed copy
from llm_cost.analyses.calibration import fit_file, shipped_rows
from llm_cost.perf.profile import FIT_FILE


def main() -> None:
    start = time.process_time()
    data = fit_file(shipped_rows(), "python scripts/fit_profiles.py")
    FIT_FILE.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    o = data["out_of_source"]
    print(
        f"wrote {FIT_FILE.name}: {o['rows']} rows of {o['sources']} sources; out of source median |error| "
        f"{o['median']:.1%}, {o['in_band']}/{o['rows']} inside the band ({time.process_time() - start:.0f} s CPU)"
    )
    for row in data["by_source"]:
        print(
            f"  {row['median']:6.1%} {row['in_band']:3d}/{row['rows']:<3d} {row['situation']:<22} {row['engine']:<14} {row['source'][:90]}"
        )


if __name__ == "__main__":
    main()
