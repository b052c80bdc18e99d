"""Cold-start latency of typical commands (each run in a fresh interpreter), and its ratio to the
time the libraries themselves take to import.

Usage: python scripts/bench.py [--runs N] [--exe PATH] [--pin CPU]. Prints min and median wall time and the
median CPU time per command, then the cold-start ratio: the median wall time of
``llm-cost params llama3-8b`` (and of ``llm-cost --help``) over that of
``python -c "import typer, rich.table"`` (run by the Python the timed script's ``#!`` line names, so
an install in another venv is compared with its own Typer and Rich), the two run in turn, side by side, so a drift of the
machine's speed touches both (issue 16: at most 1.3; issue 26: at most 1.1), and the ratio of their median CPU
times, steadier where other work shares the machine.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

COMMANDS = [
    "params llama3-8b",
    "params deepseek-v3 --json",
    "kv llama3-8b",
    "kv qwen3-next-80b-a3b --context 128K",
    "list models",
    "show H100",
]

#: The libraries' own import: the floor a Typer + Rich command line cannot go under (run by the
#: interpreter of the ``llm-cost`` timed, :func:`_interpreter_of`).
BASELINE = ["-c", "import typer, rich.table"]
#: Commands whose cold start is compared with the baseline.
RATIO_COMMANDS = ["params llama3-8b", "--help"]
#: The runs' environment: bytecode is written (PYTHONDONTWRITEBYTECODE unset), so the warm-up run
#: leaves llm_cost's modules compiled, as an installed wheel has them; otherwise an editable
#: checkout recompiles every module on every run (tens of ms) while the libraries' stay compiled.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}


def _timed(argv: list[str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one run of ``argv``, its output discarded."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, stdout=subprocess.DEVNULL, check=True, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def _interpreter_of(exe: str) -> str:
    """The Python a console script runs on (its ``#!`` line), so the baseline imports the Typer
    and Rich the script imports: a script installed in another environment (``pip install`` into a
    fresh venv) may hold other versions of them than this interpreter's. This interpreter when the
    script names none."""
    try:
        with open(shutil.which(exe) or exe, "rb") as script:
            first = script.readline(4096).decode(errors="replace")
    except OSError:
        return sys.executable
    interpreter = first[2:].strip().split(" ")[0] if first.startswith("#!") else ""
    return interpreter if interpreter and Path(interpreter).is_file() else sys.executable


def _ratio(argv: list[str], runs: int) -> tuple[float, float, float, float]:
    """(median wall of ``argv``, median wall of the baseline, their ratio, the ratio of their
    median CPU times), the two run in turn."""
    ours, base = [], []
    baseline = [_interpreter_of(argv[0]), *BASELINE]
    for _ in range(runs):
        ours.append(_timed(argv))
        base.append(_timed(baseline))
    wall, cpu = (statistics.median(times) for times in zip(*ours))
    base_wall, base_cpu = (statistics.median(times) for times in zip(*base))
    return wall, base_wall, wall / base_wall, cpu / base_cpu


def _installed_exe() -> str:
    """The ``llm-cost`` script installed beside this interpreter (the environment the baseline
    runs in), else the first on PATH. A version manager's shim on PATH (pyenv's is a shell script
    that runs ``pyenv exec``) would add its own start-up, tens of ms, to every run."""
    beside = Path(sys.executable).with_name("llm-cost")
    return str(beside) if beside.is_file() else shutil.which("llm-cost") or "llm-cost"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument(
        "--exe", default=_installed_exe(), help="the llm-cost to time (default: the one installed beside this Python)"
    )
    parser.add_argument(
        "--pin", type=int, metavar="CPU", help="run every command on this one processor (steadier on a shared machine)"
    )
    args = parser.parse_args()
    if args.pin is not None:
        os.sched_setaffinity(0, {args.pin})  # the children inherit it
        print(f"pinned to processor {args.pin}")
    # A shell with PYTHONDONTWRITEBYTECODE set (this project's machine has it) would compile every
    # stale module on each start: 15 ms for specs/schema.py alone, a cold start a user never sees.
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    print(f"timing {args.exe}; baseline run by {_interpreter_of(args.exe)}")
    for command in ["--help", *COMMANDS]:  # warm the file cache and write every command's bytecode
        _timed([args.exe, *command.split()])
    worst = 0.0
    for command in COMMANDS:
        times, cpu = zip(*(_timed([args.exe, *command.split()]) for _ in range(args.runs)))
        median = statistics.median(times)
        worst = max(worst, median)
        print(
            f"{command:45s} wall min {min(times) * 1e3:6.1f} ms, median {median * 1e3:6.1f} ms; "
            f"CPU median {statistics.median(cpu) * 1e3:6.1f} ms"
        )
    print(f"slowest median wall time: {worst * 1e3:.1f} ms (CPU time is steadier on a busy machine)")
    for command in RATIO_COMMANDS:
        ours, base, ratio, cpu_ratio = _ratio([args.exe, *command.split()], args.runs)
        print(
            f"cold-start ratio {command!r}: {ours * 1e3:.1f} ms / {base * 1e3:.1f} ms "
            f"(import typer, rich.table) = {ratio:.2f} (target at most 1.1); CPU time ratio {cpu_ratio:.2f}"
        )
    sys.exit(0)


if __name__ == "__main__":
    main()
