"""Time of ``llm-cost serve`` plans (issue 13's target: under 2 s for 10,000+ configurations;
issue 22's: the plan on the simulator, percentile targets, under 2 s).

Usage: python scripts/bench_serve.py [--runs R] [--exe PATH]. For each plan, prints the best of R
in-process runs (the command called in this interpreter, its JSON written to memory), the wall
time of one whole ``llm-cost`` process, the configurations the analytic screen evaluated and the
candidates simulated (with their requests).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import shutil
import subprocess
import sys
import time

PLANS = {
    "issue 22: llama3-70b, 8 x H100, 2K/256, TTFT P99 2 s, TPOT P90 50 ms": [
        "serve",
        "llama3-70b",
        "--gpu",
        "h100",
        "--gpus",
        "8",
        "--input",
        "2K",
        "--output",
        "256",
        "--ttft",
        "p99:2s",
        "--tpot",
        "p90:50ms",
        "--usd-per-gpu-hour",
        "2.5",
    ],
    "issue 13: llama3-70b, 8 x H100, 2K/256, TTFT 2 s, TPOT 50 ms": [
        "serve",
        "llama3-70b",
        "--gpu",
        "h100",
        "--gpus",
        "8",
        "--input",
        "2K",
        "--output",
        "256",
        "--ttft",
        "2s",
        "--tpot",
        "50ms",
        "--usd-per-gpu-hour",
        "2.5",
    ],
    "llama3-8b at 20 requests/s, TTFT 1 s": [
        "serve",
        "llama3-8b",
        "--gpu",
        "h100",
        "--qps",
        "20",
        "--input",
        "2K",
        "--output",
        "256",
        "--ttft",
        "1s",
    ],
    "deepseek-v3 FP8, 8 x H200, TPOT 50 ms": [
        "serve",
        "deepseek-v3",
        "--gpu",
        "h200",
        "--weights-dtype",
        "fp8",
        "--input",
        "2K",
        "--output",
        "512",
        "--tpot",
        "50ms",
    ],
    "qwen3-next-80b-a3b, 8 x H100, 4K/1K, TPOT 30 ms": [
        "serve",
        "qwen3-next-80b-a3b",
        "--gpu",
        "h100",
        "--input",
        "4K",
        "--output",
        "1K",
        "--tpot",
        "30ms",
    ],
}


def in_process(argv: list[str]) -> tuple[float, str]:
    """(seconds, what was searched) of one run of the command in this interpreter."""
    from llm_cost.cli.program import _run

    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        _run([*argv, "--json"])
    seconds = time.perf_counter() - start
    data = json.loads(out.getvalue())
    screen = data.get("screen", data)
    searched = f"{screen['candidates_evaluated']:,} configurations screened"
    if "simulated" in data:
        requests = sum(r["requests"] // r["replicas"] for r in data["simulated"])
        searched += f", {len(data['simulated'])} simulated ({requests:,} requests in all)"
    return seconds, searched


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--exe", default=shutil.which("llm-cost") or "llm-cost")
    args = parser.parse_args()
    for name, argv in PLANS.items():
        best, evaluated = min(in_process(argv) for _ in range(args.runs))
        start = time.perf_counter()
        subprocess.run([args.exe, *argv, "--json"], stdout=subprocess.DEVNULL, check=True)
        wall = time.perf_counter() - start
        print(f"{name}: {best:.2f} s in-process, {wall:.2f} s as a process; {evaluated}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
