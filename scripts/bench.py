"""Cold-start latency of typical commands (each run in a fresh interpreter).

Usage: python scripts/bench.py [--runs N] [--exe PATH]. Prints min and median wall time and the
median CPU time per command; the target is well under 250 ms on the project's 2-core machine.
"""

from __future__ import annotations

import argparse
import resource
import shutil
import statistics
import subprocess
import sys
import time

COMMANDS = [
    "params llama3-8b",
    "params deepseek-v3 --json",
    "kv llama3-8b",
    "kv qwen3-next-80b-a3b --context 128K",
    "list models",
    "show H100",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--exe", default=shutil.which("llm-cost") or "llm-cost")
    args = parser.parse_args()
    worst = 0.0
    for command in COMMANDS:
        times, cpu = [], []
        for _ in range(args.runs):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run([args.exe, *command.split()], stdout=subprocess.DEVNULL, check=True)
            times.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
        median = statistics.median(times)
        worst = max(worst, median)
        print(f"{command:45s} wall min {min(times) * 1e3:6.1f} ms, median {median * 1e3:6.1f} ms; "
              f"CPU median {statistics.median(cpu) * 1e3:6.1f} ms")
    print(f"slowest median wall time: {worst * 1e3:.1f} ms (CPU time is steadier on a busy machine)")
    sys.exit(0)


if __name__ == "__main__":
    main()
