"""Refit the training planner's training-efficiency factors on the published runs, one source left
out at a time, and write the table (issue 33).

Usage: python scripts/fit_training.py [--check]. Fits, per GPU family, the GEMM factor and the FP8
GEMM factor of each framework with FP8 runs on all the family's published rows
(llm_cost/data/measurements/training/published-runs.yaml), then each row out of source: with the
factors fitted without its source, with its published layout and with the free search's pick.
Writes llm_cost/data/training-efficiency.json (``--check``: writes nothing, exits 1 when the shipped
table differs) and prints every row. Needs scipy (pip install 'llm-cost[fit]'); takes about a minute.
"""

from __future__ import annotations

import argparse
import json
import sys
from statistics import median

from llm_cost.analyses.train_published import RUNS_FILE, fit_all
from llm_cost.analyses.train_rates import EFFICIENCY_FILE

ABOUT = (
    "Training-efficiency factors of llm_cost/analyses/train_rates.py, fitted by scripts/fit_training.py on "
    "llm_cost/data/measurements/training/published-runs.yaml: per GPU family (the profile a GPU's own is "
    "transferred from) 'gemm' multiplies the profile's GEMM efficiency, 'fp8_gemm' (per framework with FP8 runs) "
    "times FP8 GEMMs against the FP8 peak; 'time_ratio' and 'search_time_ratio' are the 10th and 90th percentiles of "
    "measured / predicted step time over the family's rows out of source, with the published layouts and with the "
    "free search's picks (at least 5% either side of 1); "
    "'range' the layouts the runs cover. 'rows': each published row predicted out of source (factors fitted "
    "without its source), with its published layout and with the free search's pick; error = predicted / "
    "measured - 1 in tokens/s per GPU."
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the shipped table; write nothing")
    args = parser.parse_args()
    print(f"{'row':46} {'measured':>9} {'predicted':>9} {'error':>7} {'search':>7}  search's pick")

    def show(rid: str, e: dict) -> None:
        print(
            f"{rid:46} {e['measured']:9.0f} {e['predicted']:9.0f} {e['error']:+7.1%} {e['search_error']:+7.1%}  "
            f"{e['search_layout']}",
            flush=True,
        )

    table = {"_about": ABOUT, "_runs": str(RUNS_FILE.name), **fit_all(progress=show)}
    errors = [abs(e["error"]) for e in table["rows"].values()]
    print(f"median |error| out of source: {median(errors):.1%} (published layouts), "
          f"{median(abs(e['search_error']) for e in table['rows'].values()):.1%} (search)")  # fmt: skip
    for family, entry in table["families"].items():
        print(
            family,
            {
                k: entry[k]
                for k in ("gemm", "fp8_gemm", "time_ratio", "search_time_ratio", "rows", "median_out_of_source")
            },
        )
    text = json.dumps(table, indent=1, sort_keys=False) + "\n"
    if args.check:
        same = EFFICIENCY_FILE.read_text(encoding="utf-8") == text
        print("the shipped table is the fit" if same else "the shipped table differs from the fit")
        sys.exit(0 if same else 1)
    EFFICIENCY_FILE.write_text(text, encoding="utf-8")
    print(f"wrote {EFFICIENCY_FILE}")


if __name__ == "__main__":
    main()
