"""Time of ``llm-cost serve`` plans and of ``validate`` against issue 35's targets (as processes on
this machine: the README's plan under 1 s, a 3-GPU comparison under 2 s, any shipped model's plan
under 2 s, ``validate`` under 1 s, the slowest documented ``--chunk`` under 2 s).

Usage: python scripts/bench_serve.py [--runs R] [--exe PATH] [--only NAME]. For each command, prints
its target, the best of R whole ``llm-cost`` processes (wall time, and CPU time: the process's own
user + system) and what was searched and simulated (configurations screened, candidates simulated,
the chosen plan's requests). On a shared machine the wall time includes other processes' load; the
CPU time is the command's own, the figure to read when the machine is busy. The first line gives
the machine's yardstick (:func:`yardstick_s`), so that figures from two machines can be compared.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import time

README = "serve llama3-70b --gpu h100 --gpus 8 --input 2K --output 256 --ttft p99:2s --tpot p90:50ms"
#: name: (target seconds, argv)
COMMANDS: dict[str, tuple[float, str]] = {
    "README plan (llama3-70b, 8 x H100, P99 TTFT 2 s, P90 TPOT 50 ms)": (1.0, README + " --usd-per-gpu-hour 2.5"),
    "3-GPU comparison (H100, H200, B200)": (
        2.0,
        README.replace("--gpu h100", "--gpu h100,h200,b200") + " --usd-per-gpu-hour 2.5,3.5,5.5",
    ),
    "deepseek-v3 on 8 x H200": (2.0, "serve deepseek-v3 --gpu h200 --gpus 8"),
    "deepseek-v3, 8 x H200, 2K/256, P99 TTFT 2 s, P90 TPOT 50 ms (issue 38: attention DP x EP weighed)": (
        2.0,
        "serve deepseek-v3 --gpu h200 --gpus 8 --input 2K --output 256 --ttft p99:2s --tpot p90:50ms",
    ),
    "deepseek-v3 FP8, 8 x H200, TPOT 50 ms": (
        2.0,
        "serve deepseek-v3 --gpu h200 --weights-dtype fp8 --input 2K --output 512 --tpot 50ms",
    ),
    "qwen3-next-80b-a3b, 8 x H100, 4K/1K, TPOT 30 ms": (
        2.0,
        "serve qwen3-next-80b-a3b --gpu h100 --input 4K --output 1K --tpot 30ms",
    ),
    "llama3-8b at 20 requests/s, TTFT 1 s": (
        2.0,
        "serve llama3-8b --gpu h100 --qps 20 --input 2K --output 256 --ttft 1s",
    ),
    "validate (every shipped profile)": (1.0, "validate"),
    "--chunk 2 (refused: 1.15 million steps)": (2.0, "serve llama3-8b --tp 1 --qps 5 --chunk 2"),
    "--chunk off (prompts whole)": (2.0, "serve llama3-8b --tp 1 --qps 5 --chunk off"),
}


def searched(out: str) -> str:
    """What a command's JSON says it screened and simulated."""
    try:
        data = json.loads(out)
    except ValueError:
        return ""
    plans = [p["plan"] for p in data["plans"] if p.get("plan")] if "plans" in data else [data]
    parts = []
    for p in plans:
        if "screen" in p:
            chosen, lay = p["chosen"], p["chosen"]["layout"]
            label = f"TP{lay['tp']}" + "".join(f" {k.upper()}{lay[k]}" for k in ("pp", "dp", "ep") if lay.get(k, 1) > 1)
            parts.append(
                f"{p['screen']['candidates_evaluated']:,} screened, {len(p['simulated'])} simulated, chosen "
                f"{chosen['replicas']} x {label} over "
                f"{chosen.get('simulated_requests', chosen.get('requests', 0)):,} requests"
            )
        elif "simulated_requests" in p or "requests" in p:
            parts.append(f"one configuration, {p.get('simulated_requests', p.get('requests', 0)):,} requests")
    return "; ".join(parts)


#: The runs' environment, as in ``scripts/bench.py``: bytecode is written (PYTHONDONTWRITEBYTECODE
#: unset), so the warm-up runs leave llm_cost's modules compiled, as an installed wheel has them;
#: otherwise an editable checkout recompiles every module on every run (about 0.4 s of a serve).
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def as_process(exe: str, argv: list[str]) -> tuple[float, float, str]:
    """(wall seconds, CPU seconds, JSON) of one whole ``llm-cost`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([exe, *argv, "--json"], capture_output=True, text=True, check=False, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), done.stdout


def yardstick_s(runs: int = 3) -> float:
    """The machine's pure-Python speed, seconds: the best of ``runs`` loops of 10^7 integer
    additions in this interpreter. The planner is pure Python, so its times scale with this
    figure from one machine to another: quote it beside them."""
    best = float("inf")
    for _ in range(runs):
        start, total = time.perf_counter(), 0
        for i in range(10**7):
            total += i
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--exe", default=shutil.which("llm-cost") or "llm-cost")
    parser.add_argument("--only", default=None, help="run the commands whose name contains this text")
    args = parser.parse_args()
    for warm_up in ("params llama3-8b", "serve llama3-8b --tp 1 --qps 5", "validate"):
        as_process(args.exe, warm_up.split())  # compiles the modules the commands import
    print(
        f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}, yardstick {yardstick_s():.2f} s "
        f"(10^7 Python additions); best of {args.runs}"
    )
    for name, (target, command) in COMMANDS.items():
        if args.only and args.only not in name:
            continue
        argv = command.split()
        runs = [as_process(args.exe, argv) for _ in range(args.runs)]
        wall = min(r[0] for r in runs)
        cpu = min(r[1] for r in runs)
        print(
            f"{name} [target {target:g} s]: {wall:.2f} s wall, {cpu:.2f} s CPU"
            + (f"; {searched(runs[0][2])}" if searched(runs[0][2]) else "")
        )
        sys.stdout.flush()


if __name__ == "__main__":
    main()
