"""The simulator on every shipped vLLM serving run: a table of measured and predicted means and
percentiles per experiment and stage, and the median error over the experiments.

    PYTHONPATH=. python scripts/check_serving_runs.py [--stages] [--json]
    PYTHONPATH=. python scripts/check_serving_runs.py --commands FOLDER
    PYTHONPATH=. python scripts/check_serving_runs.py --write-band

``--write-band`` (re)writes ``llm_cost/data/serving-band.json``, the calibration of ``serve``'s
error band on the default simulated vLLM path: per experiment, the whole run's mean ITL measured
and predicted under the default time model and their ratio, with the ratios' p10 and p90
(``llm_cost.analyses.serving_runs.band_file_data``). Run it whenever the simulator or the time
model changes (tests/test_api_serve.py fails when the file and the replay disagree).

``--commands FOLDER`` writes each experiment's workload file (its stages, lengths and shared
prefixes) into FOLDER and prints the one ``llm-cost serve`` command that replays it; each
command's ``--json`` holds the whole run's figures and, under ``simulation.stages``, each stage's
(tests/test_api_serve.py runs them through ``llm_cost.serve``).

Time model: the one rule's for vLLM on each run's GPU (``llm_cost.perf.choose.time_model_for``).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from llm_cost.analyses.serving_runs import (
    BAND_FILE,
    METRICS,
    RUNS_FILE,
    band_file_data,
    check_runs,
    load_experiments,
    workload_file_text,
)
from llm_cost.specs.files import read_yaml


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stages", action="store_true", help="also each stage's row")
    parser.add_argument("--json", action="store_true", help="print the comparisons as JSON")
    parser.add_argument("--commands", metavar="FOLDER", help="write the workload files there and print the commands")
    parser.add_argument(
        "--write-band", action="store_true", help=f"write the serving band's calibration ({BAND_FILE.name})"
    )
    args = parser.parse_args()
    if args.commands:
        commands(Path(args.commands))
        return
    start = time.perf_counter()
    check = check_runs()
    elapsed = time.perf_counter() - start
    if args.write_band:
        data = band_file_data(check, "scripts/check_serving_runs.py --write-band")
        BAND_FILE.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        print(f"wrote {BAND_FILE} ({len(data['runs'])} runs: p10 {data['p10']:.3f}, p90 {data['p90']:.3f})")
        return
    if args.json:
        print(json.dumps(check.to_dict(), indent=1))
        return
    names = ["itl_mean", "e2e_mean", "ttft_mean", "e2e_p99"]
    head = f"{'experiment':<58} {'st':>3} " + " ".join(f"{n + ' ms (err)':>24}" for n in names)
    print(f"time model: {check.time_model}")
    print(head)
    print("-" * len(head))
    for c in check.comparisons:
        if c.stage != -1 and not args.stages:
            continue
        cells = []
        for n in names:
            if n in c.error_pct:
                cells.append(f"{c.measured_ms[n]:>8.1f} {c.predicted_ms[n]:>8.1f} {c.error_pct[n]:>5.1f}%")
            else:
                cells.append(f"{'':>24}")
        print(f"{c.label[:58]:<58} {c.stage:>3} " + " ".join(f"{x:>24}" for x in cells))
    print("-" * len(head))
    print("median |error| over the experiments (whole runs):")
    for n in METRICS:
        if n in check.median_error_pct:
            wid, werr = check.worst[n]
            print(f"  {n:<10} {check.median_error_pct[n]:6.1f}%   worst: experiment {wid} at {werr:.1f}%")
    print(f"{len([c for c in check.comparisons if c.stage == -1])} experiments simulated in {elapsed:.1f} s")


def commands(folder: Path) -> None:
    """Each experiment's workload file in ``folder`` and its ``llm-cost serve`` command."""
    folder.mkdir(parents=True, exist_ok=True)
    models = read_yaml(RUNS_FILE).get("models") or {}
    for e in load_experiments():
        path = folder / f"experiment-{e.id}.yaml"
        path.write_text(workload_file_text(e))
        target = str(models.get(e.entry["model"], e.entry["model"]))
        model = (RUNS_FILE.parent / target).resolve() if target.endswith(".yaml") else target
        print(
            f"llm-cost serve {model} --gpu {e.gpu.name} --tp {e.layout.tp} --workload {path} "
            f"--max-num-seqs {e.entry['max_num_seqs']} --chunk {e.entry['max_num_batched_tokens']} "
            f"--max-model-len {e.entry['max_model_len']} --gpu-memory-utilization {e.entry['gpu_mem_util']} --json"
        )


if __name__ == "__main__":
    main()
