"""One front door: the command line parses its flags, makes one call of ``llm_cost.api`` and
renders; it decides and computes nothing of its own.

- every command of the text-in-JSON list (tests/report/test_text_in_json.py) prints, with
  ``--json``, exactly the JSON of the API call written beside it: the same result object;
- ``llm_cost.cli`` imports only the API, the report layer and the core vocabulary;
- no function of ``llm_cost.cli`` has a body (its statements after the docstring) of more than 40
  lines: a command's signature declares one option per line, and its body parses, calls, renders.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

import pytest

import llm_cost
from llm_cost import api
from llm_cost.report.base import to_json

#: Each command's result is computed once and rendered every way (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("shared_api_results")

HERE = Path(__file__).parent
CLI = Path(llm_cost.__file__).parent / "cli"
NEMOTRON = "tests/fixtures/hf/nvidia-nemotron-nano-9b-v2"
SCOUT = "tests/fixtures/hf/llama-4-scout-17b-16e"
SERVE_BUDGET = dict(ttft_s=1.0, tpot_s=0.03, gpus=2, usd_per_gpu_hour=2.5)

#: Each command of the text-in-JSON list and the API call that must give its --json.
CALLS = {
    "params llama3-8b": lambda: api.params("llama3-8b"),
    "params deepseek-v3": lambda: api.params("deepseek-v3"),
    "params llama3-70b --tp 4": lambda: api.params("llama3-70b", layout=api.Layout(tp=4)),
    "kv llama3-8b": lambda: api.kv("llama3-8b", [1024, 8192, 32768, 131072]),
    "kv qwen3-next-80b-a3b --context 128K": lambda: api.kv("qwen3-next-80b-a3b", [131072]),
    "kv llama3-70b --tp 2 --context 8K": lambda: api.kv("llama3-70b", [8192], layout=api.Layout(tp=2)),
    "flops llama3-8b --seq 8K": lambda: api.flops("llama3-8b", "prefill", [8192]),
    "roofline --gpu h100": lambda: api.ridges("h100"),
    "roofline llama3-8b --batch 8 --context 2K": lambda: api.decode("llama3-8b", "h100", 8, 2048),
    "roofline llama3-70b --tp 4 --batch 32 --context 4K --ops": lambda: api.decode(
        "llama3-70b", "h100", 32, 4096, layout=api.Layout(tp=4)
    ),
    "roofline llama3-8b --phase prefill --seq 8K": lambda: api.prefill("llama3-8b", "h100", 8192),
    # a grid's JSON rows carry the figures; the operator tables and conventions come with --ops
    "roofline llama3-8b --batch 1,8,64 --context 2K": lambda: api.decode_sweep(
        "llama3-8b", "h100", [1, 8, 64], [2048], detail=False
    ),
    "roofline llama3-8b --batch 1,8,64 --context 2K --ops": lambda: api.decode_sweep(
        "llama3-8b", "h100", [1, 8, 64], [2048]
    ),
    "roofline mixtral-8x7b --batch 16 --context 1K": lambda: api.decode("mixtral-8x7b", "h100", 16, 1024),
    "fit llama3-8b": lambda: api.fit("llama3-8b", "h100"),
    "fit llama3-70b --tp 2": lambda: api.fit("llama3-70b", layout=api.Layout(tp=2)),
    "fit llama3-70b --gpu a100-40gb --context 32K --kv-dtype fp8 --tp 4": lambda: api.fit(
        "llama3-70b", "a100-40gb", 32768, kv_dtype="fp8", layout=api.Layout(tp=4)
    ),
    "serve llama3-8b --gpu h100 --gpus 2 --input 1K --output 128 --ttft 1s --tpot 30ms --usd-per-gpu-hour 2.5": (
        lambda: api.serve("llama3-8b", "h100", 1024, 128, **SERVE_BUDGET)
    ),
    "serve llama3-70b --gpu h100 --tp 2 --batch 64 --input 2048 --output 2048": lambda: api.serve(
        "llama3-70b", "h100", 2048, 2048, layout=api.Layout(tp=2), concurrency=64
    ),
    "serve llama3-8b --gpu h100 --qps 20 --gpus 8 --input 2K --output 256 --ttft 1s": lambda: api.serve(
        "llama3-8b", "h100", 2048, 256, qps=20.0, gpus=8, ttft_s=1.0
    ),
    "serve llama3-8b --tp 1 --qps 10 --input lognormal:mean=800,sd=400 --output 128 --prefix 200 --prefix-groups 4 "
    "--requests 300 --ttft p99:500ms --usd-per-gpu-hour 2.5": lambda: api.serve(
        "llama3-8b",
        "h100",
        "lognormal:mean=800,sd=400",
        128,
        layout=api.Layout(tp=1),
        qps=10.0,
        prefix_tokens=200,
        prefix_groups=4,
        requests=300,
        ttft_s=api.Target(api.Statistic.P99, 0.5),
        usd_per_gpu_hour=2.5,
    ),
    "serve llama3-8b --tp 1 --workload chat --qps 5 --requests 200 --engine trtllm": lambda: api.serve(
        "llama3-8b", layout=api.Layout(tp=1), workload="chat", qps=5.0, requests=200, engine="trtllm"
    ),
    "serve llama3-8b --gpu h100,a100 --gpus 2 --input 1K --output 128 --ttft p99:1s --tpot p90:40ms "
    "--usd-per-gpu-hour 2.5,1.8": lambda: api.serve_compare(
        "llama3-8b",
        ["h100", "a100"],
        1024,
        128,
        gpus=2,
        ttft_s="p99:1s",
        tpot_s="p90:40ms",
        usd_per_gpu_hour=[2.5, 1.8],
    ),
    "activations llama3-8b": lambda: api.activations("llama3-8b"),
    "context llama3-8b --context 8K,128K": lambda: api.context("llama3-8b", [8192, 131072]),
    "moe deepseek-v3 --gpu h100 --weights-dtype fp8 --ep 32": lambda: api.moe(
        "deepseek-v3", gpu="h100", weights_dtype="fp8", ep=32
    ),
    "spec llama3-8b --gpu h100 --alpha 0.8 --gamma 4 --c 0.1 --context 2K": lambda: api.spec(
        "llama3-8b", "h100", alpha=0.8, gamma=4, c=0.1, context=2048
    ),
    "train llama3-8b --tokens 15T --gpu-hours 1.3M": lambda: api.train("llama3-8b", 15 * 10**12, gpu_hours=1.3e6),
    "train llama3-70b --tokens 1T --mfu 0.4 --tp 8 --dp 64 --zero 3": lambda: api.train(
        "llama3-70b", 10**12, mfu=0.4, tp=8, dp=64, zero=3
    ),
    "train llama3-8b --tokens 1T --gpus 8 --global-batch 1M --usd-per-gpu-hour 2": lambda: api.train(
        "llama3-8b", 10**12, gpus=8, global_batch=2**20, usd_per_gpu_hour=2.0
    ),
    "rope llama3.1-405b": lambda: api.rope("llama3.1-405b"),
    "numerics": lambda: api.numerics(),
    "image qwen2-vl-7b --size 1920x1080": lambda: api.image("qwen2-vl-7b", 1920, 1080),
    "video qwen2-vl-7b --size 1280x720 --seconds 10 --fps 1": lambda: api.video("qwen2-vl-7b", 1280, 720, 10.0, 1.0),
    "list models": lambda: api.catalog("models"),
    "list gpus": lambda: api.catalog("gpus"),
    "show h100": lambda: api.show("h100"),
    "spec --alpha 0.8 --gamma 4 --c 0.1": lambda: api.spec(alpha=0.8, gamma=4, c=0.1),
    "flops deepseek-v3 --phase decode --context 4K": lambda: api.flops("deepseek-v3", "decode", [4096]),
    "reproduce --row P7 --row R2 --row S4": lambda: api.reproduce(["P7", "R2", "S4"]),
    f"params {NEMOTRON}": lambda: api.params(NEMOTRON),
    f"roofline {SCOUT} --batch 8 --context 12K": lambda: api.decode(SCOUT, "h100", 8, 12288),
    "validate --profile hopper-pytorch-eager": lambda: api.validate("hopper-pytorch-eager"),
    "roofline llama3-8b --gpu a100 --weights-dtype int4 --group-size 32 --profile ampere-torch-compile": lambda: (
        api.decode("llama3-8b", "a100", weights_dtype="int4", group_size=32, profile="ampere-torch-compile")
    ),
}


def _text_in_json_commands() -> list[list[str]]:
    spec = importlib.util.spec_from_file_location("text_in_json", HERE / "report" / "test_text_in_json.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.COMMANDS


def test_every_command_of_the_text_in_json_list_has_its_api_call():
    assert sorted(" ".join(argv) for argv in _text_in_json_commands()) == sorted(CALLS)


def _as_json(result) -> object:
    """The result as the command line's --json writes it."""
    return json.loads(to_json(result))


@pytest.mark.parametrize("command", sorted(CALLS))
def test_the_cli_prints_the_json_of_its_api_call(cli, command):
    run = cli(*command.split(), "--json")
    assert run.code == 0, run.err
    assert json.loads(run.out) == _as_json(CALLS[command]())


def _cli_imports() -> set[str]:
    found = set()
    for path in CLI.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("llm_cost"):
                found.add(node.module)
            elif isinstance(node, ast.Import):
                found.update(a.name for a in node.names if a.name.startswith("llm_cost"))
    return found


def test_the_command_line_imports_only_the_api_the_reports_and_the_vocabulary():
    allowed = ("llm_cost.api", "llm_cost.cli", "llm_cost.report", "llm_cost.core")
    outside = sorted(m for m in _cli_imports() if m != "llm_cost" and not m.startswith(allowed))
    assert outside == []


def _bodies() -> list[tuple[int, str]]:
    """(lines, where) of every function of llm_cost.cli, its docstring left out."""
    out = []
    for path in CLI.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                body = node.body
                docstring = isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                first = body[1] if docstring and len(body) > 1 else body[0]
                out.append((node.end_lineno - first.lineno + 1, f"{path.name}:{node.name}"))
    return out


def test_no_function_of_the_command_line_has_a_body_over_40_lines():
    assert [(n, where) for n, where in _bodies() if n > 40] == []


@pytest.mark.parametrize(
    ("argv", "call"),
    [
        (["context", "llama3-8b"], lambda: api.context("llama3-8b")),
        (["flops", "llama3-8b", "--phase", "decode"], lambda: api.flops("llama3-8b", "decode")),
        (["flops", "llama3-8b", "--phase", "prefill"], lambda: api.flops("llama3-8b", "prefill", detail=False)),
    ],
)
def test_a_commands_defaults_are_its_api_calls(cli, argv, call):
    """Defaults are decided once: a consistency audit found `context` reporting 8K-1M from the CLI
    and 8K-128K from the API, and `flops --phase decode` at 8K cached from the CLI, 128-8K from the
    API. The CLI passes what it was not given as None, and the API's defaults answer both."""
    run = cli(*argv, "--json")
    assert run.code == 0, run.err
    assert json.loads(run.out) == _as_json(call())
