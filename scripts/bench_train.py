"""Time of ``llm-cost train`` planner searches (issue 25's target: the 16,384-GPU search under 5 s).

Usage: python scripts/bench_train.py [--runs R] [--exe PATH]. For each plan, prints the best of R
in-process runs (the command called in this interpreter, its JSON written to memory), the wall
time of one whole ``llm-cost`` process, the layouts searched and the one chosen.
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
    "issue 25: llama3.1-405b, 16,384 x H100, 16M-token batches of 8K": [
        "train", "llama3.1-405b", "--tokens", "15T", "--gpu", "h100", "--gpus", "16384", "--global-batch", "16M",
        "--seq", "8K",
    ],
    "llama3.1-405b, 16,384 x H100, 128K (long-context stage)": [
        "train", "llama3.1-405b", "--tokens", "800G", "--gpu", "h100", "--gpus", "16384", "--global-batch", "16M",
        "--seq", "128K",
    ],
    "llama3-70b, 2,048 x H100, 4M-token batches of 8K": [
        "train", "llama3-70b", "--tokens", "15T", "--gpu", "h100", "--gpus", "2048", "--global-batch", "4M",
    ],
    "deepseek-v3 (MoE), 2,048 x H100, 15,360 x 4K": [
        "train", "deepseek-v3", "--tokens", "14.8T", "--gpu", "h100", "--gpus", "2048", "--global-batch", "60M",
        "--seq", "4K",
    ],
}  # fmt: skip


def in_process(argv: list[str]) -> tuple[float, int, str]:
    """(seconds, layouts searched, the layout chosen) of one run of the command in this interpreter."""
    from llm_cost.cli.program import _run

    out = io.StringIO()
    start = time.perf_counter()
    with contextlib.redirect_stdout(out):
        _run([*argv, "--json"])
    data = json.loads(out.getvalue())
    return time.perf_counter() - start, data["searched"], data["layout_label"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--exe", default=shutil.which("llm-cost") or "llm-cost")
    args = parser.parse_args()
    for name, argv in PLANS.items():
        best, searched, chosen = min(in_process(argv) for _ in range(args.runs))
        start = time.perf_counter()
        subprocess.run([args.exe, *argv, "--json"], stdout=subprocess.DEVNULL, check=True)
        wall = time.perf_counter() - start
        print(f"{name}: {best:.2f} s in-process, {wall:.2f} s as a process, {searched:,} layouts; {chosen}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
