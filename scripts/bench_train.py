"""Time of ``llm-cost train`` planner searches (issue 33's targets: a 2,048-GPU MoE search and the
16,384-GPU dense search each under 1 s as a whole process).

Usage: python scripts/bench_train.py [--runs R] [--exe PATH]. For each plan, prints the best of R
in-process runs (the command called in this interpreter, its JSON written to memory), the wall
and CPU time of one whole ``llm-cost`` process, the layouts searched and the one chosen. The machine
is shared: the CPU time (user + system of the child) is the figure that does not count other
processes' load.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import time

PLANS = {
    "llama3.1-405b, 16,384 x H100, 16M-token batches of 8K (dense)": [
        "train", "llama3.1-405b", "--tokens", "15T", "--gpu", "h100", "--gpus", "16384", "--global-batch", "16M",
        "--seq", "8K",
    ],
    "deepseek-v3 (MoE), 2,048 x H800, default batch": [
        "train", "deepseek-v3", "--tokens", "15T", "--gpu", "h800", "--gpus", "2048",
    ],
    "deepseek-v3 (MoE), 2,048 x H800, 15,360 x 4K, fp8": [
        "train", "deepseek-v3", "--tokens", "14.8T", "--gpu", "h800", "--gpus", "2048", "--global-batch", "62914560",
        "--seq", "4K", "--dtype", "fp8",
    ],
    "llama3.1-405b, 16,384 x H100, 128K (long-context stage)": [
        "train", "llama3.1-405b", "--tokens", "800G", "--gpu", "h100", "--gpus", "16384", "--global-batch", "16M",
        "--seq", "128K",
    ],
    "llama3-70b, 2,048 x H100, 4M-token batches of 8K": [
        "train", "llama3-70b", "--tokens", "15T", "--gpu", "h100", "--gpus", "2048", "--global-batch", "4M",
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


def as_process(exe: str, argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one whole ``llm-cost`` process."""
    before = os.times()
    start = time.perf_counter()
    subprocess.run([exe, *argv, "--json"], stdout=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - start
    after = os.times()
    return wall, (after.children_user - before.children_user) + (after.children_system - before.children_system)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--exe", default=shutil.which("llm-cost") or "llm-cost")
    args = parser.parse_args()
    for name, argv in PLANS.items():
        best, searched, chosen = min(in_process(argv) for _ in range(args.runs))
        wall, cpu = min(as_process(args.exe, argv) for _ in range(args.runs))
        print(
            f"{name}: {best:.2f} s in-process, {wall:.2f} s wall / {cpu:.2f} s CPU as a process, "
            f"{searched:,} layouts; {chosen}"
        )
    sys.stdout.flush()


if __name__ == "__main__":
    main()
