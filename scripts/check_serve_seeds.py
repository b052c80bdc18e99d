"""Whether a serve plan is the same at every seed, and whether each seed's intervals hold the other
seeds' figures (issue 35: across ``--seed 0..9`` the README's plan picks the same layout and replica
count, and each run's interval holds the other seeds' percentiles).

Usage: python scripts/check_serve_seeds.py [--seeds N] [SERVE ARGUMENTS ...]. Without arguments,
the README's plan (``serve llama3-70b --gpu h100 --gpus 8 --input 2K --output 256 --ttft p99:2s
--tpot p90:50ms``). Prints each seed's plan (layout, replicas, max_num_seqs, simulated requests,
the targets' percentiles with their intervals), then for each statistic (mean, P50, P90, P99 of
TTFT, TPOT and E2E) how many (seed, other seed) pairs have the other's figure outside the seed's
interval (the band's ends and the sampling together). Exit 1 if the plans differ or any figure
lies outside.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys

README = "llama3-70b --gpu h100 --gpus 8 --input 2K --output 256 --ttft p99:2s --tpot p90:50ms".split()
STATISTICS = [(m, q) for m in ("ttft_s", "tpot_s", "e2e_s") for q in ("mean", "p50", "p90", "p99")]


def plan_of(argv: list[str], seed: int) -> dict:
    """The chosen plan of ``serve ARGV --seed SEED`` (its JSON)."""
    from llm_cost.cli.program import _run

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
        _run(["serve", *argv, "--seed", str(seed), "--json"])
    data = json.loads(out.getvalue())
    return data["chosen"] | {"percentiles": data["percentiles"]}


def figure(plan: dict, metric: str, q: str) -> float:
    return plan[metric] if q == "mean" else plan["percentiles"][metric][q]


def main() -> int:
    args = sys.argv[1:]
    seeds = 10
    if args[:1] == ["--seeds"]:
        seeds, args = int(args[1]), args[2:]
    argv = args or README
    plans = [plan_of(argv, seed) for seed in range(seeds)]
    for seed, p in enumerate(plans):
        layout = p["layout"]
        print(
            f"seed {seed}: {p['replicas']} x TP{layout['tp']} PP{layout['pp']} EP{layout['ep']}, max_num_seqs "
            f"{p['max_num_seqs']}, {p['simulated_requests']:,} requests; TTFT P99 {p['percentiles']['ttft_s']['p99']:.4g} s "
            f"{p['percentiles']['ttft_s']['interval']['p99']}, TPOT P90 {p['percentiles']['tpot_s']['p90']:.4g} s "
            f"{p['percentiles']['tpot_s']['interval']['p90']}"
        )
    same = len({(p["replicas"], json.dumps(p["layout"], sort_keys=True)) for p in plans}) == 1
    print("the same layout and replica count at every seed" if same else "the plans differ between seeds")
    outside = 0
    for metric, q in STATISTICS:
        misses = 0
        for a in plans:
            low, high = a["percentiles"][metric]["interval"][q]
            misses += sum(not low <= figure(b, metric, q) <= high for b in plans)
        outside += misses
        print(f"{metric} {q}: {misses} of {seeds * seeds} (seed, other seed) figures outside the seed's interval")
    return 0 if same and not outside else 1


if __name__ == "__main__":
    sys.exit(main())
