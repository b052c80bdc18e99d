"""Time of 10,000-point sweeps (issue 14's target: under 1 s each, in one process).

Usage: python scripts/bench_sweep.py [--points N] [--runs R] [--exe PATH]. For each sweep, prints
the best of R in-process runs of the command (the entry point called in this interpreter, its
CSV written to memory: the computation and the rendering, no start-up) and the wall time of one
whole ``llm-cost`` process (start-up included), in seconds. The grids are written out as explicit
comma-separated lists, so the script times any version of the tool.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import shutil
import subprocess
import sys
import time


def sweeps(points: int) -> dict[str, list[str]]:
    """Command lines of ``points`` rows each: dense, MoE, sliding-window, a layout, and kv."""
    batches = ",".join(str(b) for b in range(1, points + 1))
    half = ",".join(str(b) for b in range(1, points // 2 + 1))
    contexts = ",".join(str(1024 * i) for i in range(1, points // 2 + 1))
    return {
        "roofline llama3-8b, batch 1..N, context 2K": [
            "roofline",
            "llama3-8b",
            "--gpu",
            "h100",
            "--batch",
            batches,
            "--context",
            "2K",
            "--csv",
        ],
        "roofline mixtral-8x7b, batch 1..N, context 4K": [
            "roofline",
            "mixtral-8x7b",
            "--gpu",
            "h100",
            "--batch",
            batches,
            "--context",
            "4K",
            "--csv",
        ],
        "roofline mistral-7b (sliding), batch N/2 x 2 contexts": [
            "roofline",
            "mistral-7b",
            "--gpu",
            "h100",
            "--batch",
            half,
            "--context",
            "2K,16K",
            "--csv",
        ],
        "roofline llama3-70b TP 4, batch 1..N, context 4K": [
            "roofline",
            "llama3-70b",
            "--gpu",
            "h100",
            "--tp",
            "4",
            "--batch",
            batches,
            "--context",
            "4K",
            "--csv",
        ],
        "kv llama3-8b, N/2 contexts x 2 batches": ["kv", "llama3-8b", "--context", contexts, "--batch", "1,8", "--csv"],
    }


def in_process(argv: list[str]) -> tuple[float, int]:
    """(seconds, output lines) of one call of the entry point with ``argv``, stdout to memory."""
    from llm_cost.cli import main

    old, sys.argv = sys.argv, ["llm-cost", *argv]
    out = io.StringIO()
    start = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out):
            main()
    except SystemExit as exc:
        if exc.code:
            raise RuntimeError(f"llm-cost {' '.join(argv[:2])} ... exited {exc.code}") from None
    finally:
        sys.argv = old
    return time.perf_counter() - start, out.getvalue().count("\n")


def whole_process(exe: str, argv: list[str]) -> float:
    """Wall seconds of one ``exe argv`` process, its output discarded."""
    start = time.perf_counter()
    subprocess.run([exe, *argv], stdout=subprocess.DEVNULL, check=True)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--exe", default=shutil.which("llm-cost") or "llm-cost")
    args = parser.parse_args()
    for label, argv in sweeps(args.points).items():
        best, lines = min(in_process(argv) for _ in range(args.runs))
        wall = whole_process(args.exe, argv)
        print(f"{label:55s} {lines - 1:6d} rows: in-process {best:6.3f} s, whole process {wall:6.3f} s")


if __name__ == "__main__":
    main()
