"""Time of 10,000-point sweeps (issues 14 and 26: under 1 s each, in one process, in every format).

Usage: python scripts/bench_sweep.py [--points N] [--runs R] [--exe PATH] [--formats csv,json,table]
[--only WORD] [--no-whole]. For each sweep (roofline, kv and flops grids) and each format (CSV, JSON,
the table), prints the best of R in-process runs of the command (the entry point called in this
interpreter, its output written to memory: the computation and the rendering, no start-up) in wall
and in CPU seconds (steadier on a shared machine), the output's lines, and the wall time of one whole
``llm-cost`` process (start-up included).
The grids are written out as explicit comma-separated lists, so the script times any version of the
tool.
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
    """Command lines of ``points`` rows each, as CSV: roofline of a dense model, a MoE, a sliding
    window and a layout; kv over contexts; flops over prompt lengths and over contexts."""
    batches = ",".join(str(b) for b in range(1, points + 1))
    half = ",".join(str(b) for b in range(1, points // 2 + 1))
    many = ",".join(str(16 * i) for i in range(1, points + 1))
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
        "kv llama3-8b, N contexts, batch 8": ["kv", "llama3-8b", "--context", many, "--batch", "8", "--csv"],
        "flops llama3-8b prefill, N prompt lengths": ["flops", "llama3-8b", "--seq", batches, "--csv"],
        "flops llama3-8b decode, N contexts": ["flops", "llama3-8b", "--phase", "decode", "--context", many, "--csv"],
    }


#: The flag of each format (the table is the command without one).
FORMATS = {"csv": ["--csv"], "json": ["--json"], "table": []}


def in_format(argv: list[str], form: str) -> list[str]:
    """``argv`` (a CSV command line) printing ``form``."""
    return [a for a in argv if a != "--csv"] + FORMATS[form]


def in_process(argv: list[str]) -> tuple[float, float, int]:
    """(wall seconds, CPU seconds, output lines) of one call of the entry point with ``argv``, stdout
    to memory."""
    from llm_cost.cli import main

    old, sys.argv = sys.argv, ["llm-cost", *argv]
    out = io.StringIO()
    start, cpu = time.perf_counter(), time.process_time()
    try:
        with contextlib.redirect_stdout(out):
            main()
    except SystemExit as exc:
        if exc.code:
            raise RuntimeError(f"llm-cost {' '.join(argv[:2])} ... exited {exc.code}") from None
    finally:
        sys.argv = old
    return time.perf_counter() - start, time.process_time() - cpu, out.getvalue().count("\n")


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
    parser.add_argument("--formats", default="csv,json,table", help="comma-separated: csv, json, table")
    parser.add_argument("--only", default="", help="only the sweeps whose label contains this")
    parser.add_argument("--no-whole", action="store_true", help="skip the whole-process run")
    args = parser.parse_args()
    worst = worst_cpu = 0.0
    for label, csv_argv in sweeps(args.points).items():
        if args.only not in label:
            continue
        for form in args.formats.split(","):
            argv = in_format(csv_argv, form)
            runs = [in_process(argv) for _ in range(args.runs)]
            best, cpu, lines = min(runs)[0], min(r[1] for r in runs), runs[0][2]
            worst, worst_cpu = max(worst, best), max(worst_cpu, cpu)
            wall = "" if args.no_whole else f", whole process {whole_process(args.exe, argv):6.3f} s"
            print(
                f"{label:55s} {form:5s} {lines:6d} lines: in-process {best:6.3f} s (CPU {cpu:6.3f} s){wall}",
                flush=True,
            )
    print(f"slowest in-process: {worst:.3f} s, CPU {worst_cpu:.3f} s (target: under 1 s)")


if __name__ == "__main__":
    main()
