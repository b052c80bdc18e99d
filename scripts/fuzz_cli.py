"""Fuzz the command line in-process: hypothesis draws command lines (a command, some of its
options, each with a valid-shaped or a hostile value, files among them: FIFOs, link loops,
devices, folders, hostile specs, workloads and traces), runs each through the real entry point
and checks what issue 36 asks of every run: exit 0, or 2 with one ``error:`` line (1 only for
the environment), never a traceback or an internal error, at most 3 s of CPU and 500 MB of
resident memory above what the process held before the run.

Usage: python scripts/fuzz_cli.py [--runs 10000] [--seed 0] [--limit-s 10]

Prints the tally by command and exit code, then every run that broke a rule (its command line,
what it broke), and exits 1 if one did. A run is stopped after ``--limit-s`` seconds of CPU
(SIGVTALRM; the stop counts as "over 3 s"). The suite runs a sample of it
(``tests/cli/test_fuzz_cli.py``).
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import signal
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "hf"
TIME_LIMIT_S = 3.0
MEMORY_LIMIT_MB = 500

# --- values ---------------------------------------------------------------------------------------

HOSTILE = [
    "",
    " ",
    "0",
    "-1",
    "1e308",
    "1e-308",
    "nan",
    "inf",
    "-inf",
    "9" * 400,
    "9" * 5000,
    "٩٩",
    "²",
    "1,,2",
    "1..",
    "..5",
    "1..1000000000",
    "1..10000:1",
    "0x10",
    "1_000",
    "8k8",
    "\x00",
    "a" * 300,
    "x" * 5000,
    "$(id)",
    "%s%n",
    "-",
    "--",
    "NaN%",
    "150%",
    "1/0",
    "p99.99999999:1s",
    "p٩٩:2s",
    "lognormal:mean=1e308,sd=1e308",
    "empirical:" + ",".join(["1"] * 2000),
]

MODELS = ["llama3-8b", "llama3-70b", "deepseek-v3", "mixtral-8x7b", "qwen3-next-80b-a3b", "gpt-oss-120b",
          "mistral-7b", "qwen2-vl-7b", "llama3.1-405b", "meta-llama/Llama-3.1-8B", "llama-9", str(FIXTURES / "gpt2")]  # fmt: skip
GPUS = ["h100", "a100", "h200", "b200", "mi300x", "rtx-4090", "l40s", "h100,h200", "tpu-v9"]
DTYPES = ["bf16", "fp16", "fp8", "fp32", "int8", "int4", "fp4", "fp3", "BF16"]
TOKENS = ["1", "2", "16", "128", "1K", "2K", "8K", "32K", "128K", "1M", "4097", "0", "1.5K", "2k"]
LISTS = ["1", "1,8,64", "1..256", "1..1000:10", "1K..128K", "2,4", "64", "1..10000:1", "1..100:1", "8K,128K"]
FRACTIONS = ["0.4", "0.6", "1", "60%", "0.01", "1e-9", "0", "1.2", "100%", "0.999999"]
NUMBERS = ["1", "0.5", "2.5", "10", "1000", "1e6", "1e-3", "1e9", "0.0001"]
INTEGERS = ["1", "2", "4", "8", "16", "64", "3", "1024", "100000", "0"]
DURATIONS = ["2s", "50ms", "p99:2s", "p90:50ms", "mean:1s", "p95:150ms", "p50:0.5s", "1h", "2", "p0.01:1s"]
LENGTHS = ["512", "2K", "lognormal:mean=800,sd=400", "normal:mean=500,sd=100", "uniform:low=100,high=900",
           "empirical:100,200,400", "lognormal:mean=800", "uniform:low=9,high=1"]  # fmt: skip

#: Value pools by option (else by the option's kind), each drawn mostly valid-shaped.
BY_OPTION = {
    "--gpu": GPUS,
    "--dtype": DTYPES,
    "--weights-dtype": DTYPES,
    "--kv-dtype": DTYPES,
    "--dispatch-dtype": DTYPES,
    "--combine-dtype": DTYPES,
    "--phase": ["decode", "prefill", "mixed", "Decode"],
    "--logits": ["last", "all", "none"],
    "--attention": ["causal", "full"],
    "--mla": ["absorbed", "naive", "x"],
    "--weight-bytes": ["read", "stored", "x"],
    "--weight-flops": ["gemm", "all", "x"],
    "--engine": ["vllm", "sglang", "trtllm", "pytorch-eager", "torch-compile", "llamacpp", "x"],
    "--profile": ["h100", "h200", "a100-trtllm", "nosuch", "{profile}"],
    "--memory": ["physical", "documents", "x"],
    "--mode": ["aggregated", "disaggregated", "both"],
    "--zero": ["0", "1", "2", "3", "4"],
    "--recompute": ["none", "selective", "full"],
    "--formula": ["korthikanti", "x"],
    "--decoder": ["causal", "x"],
    "--connector": ["mlp", "resampler:64", "resampler:" + "9" * 50],
    "--emit": ["vllm", "sglang", "trtllm"],
    "--size": ["448x448", "64x64", "1x1", "100000x1", "0x0", "448"],
    "--workload": ["chat", "code", "rag", "agentic-long-context", "{workload}", "{bad_workload}", "{fifo}.yaml"],
    "--trace": ["{trace}", "{bad_trace}", "{fifo}", "{loop}"],
    "--plot": ["{out}.png", "{existing}.png", "{fifo}", "{loop}", "/dev/null", "{out}.txt", "{dir}"],
    "--out": ["{out}.yaml", "{existing}.yaml", "{fifo}", "{loop}", "/dev/null", "{dir}"],
    "--name": ["mine", "a\nb", "../evil", "x" * 300],
    "--row": ["P1", "P2", "x"],
    "--usd-per-gpu-hour": ["2.5", "2.5,3.5", "0", "-1", "1e300"],
    "--tokens": ["15T", "1T", "1e12", "0", "1e40"],
    "--alpha": ["0.8", "0.6", "0.99", "1", "0"],
    "--gamma": ["1", "4", "8", "0"],
    "--gpu-hours": ["1.3M", "1", "1e300"],
    "--gpus": INTEGERS + ["16384"],
    "--requests": ["10", "50", "100", "1000", "20000", "20001"],
    "--prefix": ["100", "200", "3000"],
    "--chunk": ["off", "512", "2", "8K", "1"],
    "--seed": ["0", "7", str(2**63)],
    "--head-dim": ["64", "128", "127", "0"],
    "--global-batch": ["16M", "4M", "1"],
    "--seq": ["8K", "2K", "1", "1..1000:100"],
}
BY_KIND = {
    "TOKENS": TOKENS,
    "LIST": LISTS,
    "FRACTION": FRACTIONS,
    "NUMBER": NUMBERS,
    "INTEGER": INTEGERS,
    "COUNT": ["1T", "15T", "1e12", "8"],
    "GB": ["0", "10", "80", "1e6"],
    "[STAT:]DURATION": DURATIONS,
    "TOKENS|DIST": LENGTHS,
}
#: Arguments (MODEL, GPU, files) by command.
ARGUMENTS = {
    "list": [["models", "gpus", "x"]],
    "show": [["h100", "llama3-8b", "x", "H100"]],
    "import": [[str(FIXTURES / "llama-3.1-8b" / "config.json"), "{config}", "{fifo}", "{loop}"]],
    "calibrate": [["{measurements}", "{bad_measurements}", "{loop}", "{fifo}"]],
    "validate": [],
    "numerics": [],
    "reproduce": [],
}
#: Options a command needs, always drawn (from their pools).
REQUIRED = {"spec": ["--alpha", "--gamma"], "train": ["--tokens"], "import": ["--out"], "calibrate": ["--out"]}
#: How often each command is drawn (serve and the training planner cost the most per run).
WEIGHTS = {"serve": 3, "train": 2, "roofline": 3, "kv": 2, "params": 2, "fit": 2, "spec": 2, "moe": 2, "flops": 2}


def _files(folder: Path) -> dict[str, str]:
    """The files a command line may name: hostile special files and valid-shaped inputs."""
    fifo = folder / "fifo"
    os.mkfifo(fifo)
    (folder / "loop").symlink_to("loop2")
    (folder / "loop2").symlink_to("loop")
    (folder / "existing.png").write_bytes(b"notes")
    (folder / "existing.yaml").write_text("notes\n")
    (folder / "dir").mkdir()
    work = folder / "work.yaml"
    work.write_text(
        "arrivals: {process: poisson, rate_rps: 5, duration_s: 20}\ninput_tokens: 500\noutput_tokens: 64\n"
        "prefix: {tokens: 100, groups: 4}\n"
    )
    bad = folder / "bad.yaml"
    bad.write_text(
        "arrivals: {process: poisson, rate_rps: 5, duration_s: 60}\ninput_tokens: 500\noutput_tokens: 100\n"
        "prefix: {tokens: 100, groups: 1000000000}\n"
    )
    trace = folder / "trace.jsonl"
    trace.write_text("".join(json.dumps({"arrival_s": i * 0.2, "input_tokens": 300, "output_tokens": 32}) + "\n"
                             for i in range(40)))  # fmt: skip
    bad_trace = folder / "bad.jsonl"
    bad_trace.write_text('{"arrival_s": 0, "input_tokens": 100, "output_tokens": "12", "prefix_id": [1]}\n')
    config = folder / "config.json"
    data = json.loads((FIXTURES / "llama-3.1-8b" / "config.json").read_text())
    data["num_hidden_layers"] = 10**6
    config.write_text(json.dumps(data))
    measurements = ROOT / "llm_cost" / "data" / "measurements" / "local-a100-gpt-fast-decode.yaml"
    bad_measurements = folder / "m.csv"
    bad_measurements.write_text("model,gpu,phase,batch,context,measured_ms\nllama3-8b,h100,decode,1,128,nan\n")
    profile = ROOT / "llm_cost" / "data" / "profiles" / "h200.yaml"
    return {
        "{fifo}": str(fifo), "{loop}": str(folder / "loop"), "{existing}": str(folder / "existing"),
        "{dir}": str(folder / "dir"), "{out}": str(folder / "out"), "{workload}": str(work),
        "{bad_workload}": str(bad), "{trace}": str(trace), "{bad_trace}": str(bad_trace), "{config}": str(config),
        "{measurements}": str(measurements), "{bad_measurements}": str(bad_measurements), "{profile}": str(profile),
    }  # fmt: skip


def _options() -> dict[str, list[tuple[str, str, bool]]]:
    """Each command's options: (flag, kind, is a flag without a value)."""
    from typer.main import get_command

    from llm_cost.cli import app

    out = {}
    for name, command in get_command(app).commands.items():
        opts = []
        for p in command.params:
            if p.param_type_name != "option" or "--help" in p.opts:
                continue
            flag = max(p.opts, key=len)
            opts.append((flag, str(getattr(p, "metavar", None) or ""), bool(p.is_flag)))
        out[name] = opts
    return out


def command_lines(files: dict[str, str], commands: tuple[str, ...] = ()) -> st.SearchStrategy[list[str]]:
    """Command lines: a command (of ``commands``, else any, by :data:`WEIGHTS`), its arguments, and
    up to 5 of its options."""
    options = _options()
    names = [n for n in options if not commands or n in commands for _ in range(WEIGHTS.get(n, 1))]

    def fill(text: str) -> str:
        for key, path in files.items():
            text = text.replace(key, path)
        return text

    def value(pool: list[str], hostile: bool) -> st.SearchStrategy[str]:
        """A value of ``pool``; in a hostile line, one in four from :data:`HOSTILE`."""
        if not hostile:
            return st.sampled_from(pool)
        return st.one_of(st.sampled_from(pool), st.sampled_from(pool), st.sampled_from(pool), st.sampled_from(HOSTILE))

    @st.composite
    def line(draw) -> list[str]:  # noqa: ANN001 - hypothesis's draw
        name, hostile = draw(st.sampled_from(names)), draw(st.integers(0, 9)) < 4  # 40% of lines hostile
        argv = [name]
        for pool in ARGUMENTS.get(name, [MODELS]):
            argv.append(draw(value(pool, hostile)))
        chosen = draw(st.lists(st.sampled_from(options[name]), max_size=5, unique=True)) if options[name] else []
        needed = [o for o in options[name] if o[0] in REQUIRED.get(name, ()) and o not in chosen]
        for flag, kind, is_flag in needed + chosen:
            pool = BY_OPTION.get(flag) or BY_KIND.get(kind) or INTEGERS
            argv += [flag] if is_flag else [flag, draw(value(pool, hostile))]
        return [fill(a) for a in argv]

    return line()


# --- one run ----------------------------------------------------------------------------------------


class _Stopped(BaseException):
    """A run stopped by the CPU timer (not an Exception: the program's boundary lets it through as
    an internal error, which the run's record then overrides)."""


def _status_mb(field: str) -> float:
    """``/proc/self/status``'s FIELD (VmHWM: peak resident, VmRSS: resident now) in MiB."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field + ":")) / 1024


def _reset_peak() -> None:
    """Reset the peak resident memory (Linux: writing 5 to clear_refs)."""
    with contextlib.suppress(OSError), open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def run(argv: list[str], limit_s: float) -> dict:
    """One in-process run of ``llm-cost ARGV``: exit code, stderr, CPU seconds, peak MB (the resident
    memory the run added above what the process held when it began: a test worker holds hundreds of
    MB of its own), and what it broke."""
    from llm_cost.cli import main

    stopped = []

    def stop(*_: object) -> None:
        stopped.append(True)
        raise _Stopped

    out, err = io.StringIO(), io.StringIO()
    old_argv, old_handler = sys.argv, signal.signal(signal.SIGVTALRM, stop)
    sys.argv = ["llm-cost", *argv]
    _reset_peak()
    held_mb = _status_mb("VmRSS")
    start = time.process_time()
    signal.setitimer(signal.ITIMER_VIRTUAL, limit_s)
    code = 0
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            main()
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    except _Stopped:
        code = -1
    finally:
        signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        signal.signal(signal.SIGVTALRM, old_handler)
        sys.argv = old_argv
    cpu_s, peak = time.process_time() - start, _status_mb("VmHWM") - held_mb
    text = err.getvalue()
    broke = []
    if stopped or cpu_s > TIME_LIMIT_S:
        broke.append(f"{cpu_s:.1f} s of CPU" + (" (stopped)" if stopped else ""))
    if peak > MEMORY_LIMIT_MB:
        broke.append(f"{peak:.0f} MB")
    if not stopped:
        if "Traceback" in text or "internal error" in text:
            broke.append("internal error: " + text.strip()[-300:])
        elif code not in (0, 1, 2):
            broke.append(f"exit {code}")
        elif code and (not text.startswith("error: ") or text.count("\n") != 1):
            broke.append("not one error line: " + text[:300])
        elif code == 0 and text.strip() and not {"--verbose", "-v"} & set(argv):  # --verbose writes to stderr
            broke.append("exit 0 with stderr: " + text[:200])
        elif code == 1:
            broke.append("exit 1 (the environment?): " + text.strip()[:200])
    return {"argv": argv, "code": code, "cpu_s": cpu_s, "peak_mb": peak, "broke": broke, "stderr": text[:300]}


# --- the fuzz ---------------------------------------------------------------------------------------


def fuzz(runs: int, seed: int, limit_s: float, folder: Path, report=print, commands=()) -> list[dict]:  # noqa: ANN001
    """``runs`` drawn command lines (of ``commands``, else any), run in turn; every run's record."""
    from hypothesis import seed as hypothesis_seed

    files = _files(folder)
    records: list[dict] = []

    @hypothesis_seed(seed)
    @settings(max_examples=runs, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))  # fmt: skip
    @given(argv=command_lines(files, tuple(commands)))
    def one(argv: list[str]) -> None:
        for stale in ("out.png", "out.yaml", "out.txt"):
            with contextlib.suppress(OSError):
                (folder / stale).unlink()
        records.append(run(argv, limit_s))
        if len(records) % 500 == 0:
            report(f"... {len(records):,} runs", flush=True)

    os.environ.update(HF_HUB_OFFLINE="1", HF_HUB_CACHE=str(folder / "empty-hf-cache"), MPLBACKEND="Agg")
    os.environ.pop("HF_TOKEN", None)
    cwd = os.getcwd()
    os.chdir(folder)
    try:
        one()
    finally:
        os.chdir(cwd)
    return records


def summary(records: list[dict]) -> str:
    """The tally by command and exit code, the slowest runs, and every run that broke a rule."""
    lines = [f"{len(records):,} runs"]
    tally = Counter((r["argv"][0], r["code"]) for r in records)
    for name in sorted({n for n, _ in tally}):
        codes = ", ".join(f"exit {c}: {tally[name, c]}" for c in sorted(c for n, c in tally if n == name))
        lines.append(f"  {name:<12} {codes}")
    cpu = sorted(r["cpu_s"] for r in records)
    lines.append(
        f"CPU per run: median {cpu[len(cpu) // 2]:.3f} s, p99 {cpu[int(len(cpu) * 0.99)]:.2f} s, max {cpu[-1]:.2f} s;"
        f" peak memory max {max(r['peak_mb'] for r in records):.0f} MB"
    )
    broken = [r for r in records if r["broke"]]
    lines.append(f"runs that broke a rule: {len(broken)}")
    for r in broken:
        shown = " ".join(a if len(a) <= 60 else a[:28] + "..." + a[-28:] for a in r["argv"])
        lines.append(f"  llm-cost {shown}\n      {'; '.join(r['broke'])}")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit-s", type=float, default=10.0, help="stop a run after this much CPU time")
    parser.add_argument("--json", help="also write every run's record to this file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        records = fuzz(args.runs, args.seed, args.limit_s, Path(tmp), report=lambda *a, **k: print(*a, **k))
    if args.json:
        Path(args.json).write_text(json.dumps(records))
    print(summary(records))
    sys.exit(1 if any(r["broke"] for r in records) else 0)


if __name__ == "__main__":
    main()
