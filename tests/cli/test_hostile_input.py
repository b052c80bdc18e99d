"""The hostile-input attack of issue 16, kept: one row per reproducer (exit code, a phrase of the
one-line message, under 2 s), the output-stream cases in a real process, and a small fuzz test
over spec fields and flag strings (exit 0 or 2, one line on 2, never inf or nan)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import llm_cost
import llm_cost.specs.load as load

MODEL = (load.data_dir("models") / "llama3-8b.yaml").read_text()
GPU = (load.data_dir("hardware") / "h100.yaml").read_text()
CONFIG = Path(__file__).resolve().parents[1] / "fixtures" / "hf" / "gpt2" / "config.json"


def _model(old: str, new: str) -> str:
    assert old in MODEL
    return MODEL.replace(old, new)


def _gpu(pattern: str, new: str) -> str:
    text, n = re.subn(pattern, new, GPU, count=1)
    assert n == 1
    return text


def _bomb() -> str:
    """Ten levels of ten aliases each: 10^10 strings once expanded, a few hundred bytes as text."""
    levels = ["  - &a0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"  - &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 10)]
    return "anchors:\n" + "\n".join(levels) + "\n" + re.sub(r"aliases: .*", "aliases: *a9", MODEL)


LONG = "a" * 300

# (case id, argv with {spec} / {gpu} / {tmp} for the files written, model text, GPU text, exit code, phrase)
CASES = [
    ("mbu-1e-300", ["roofline", "llama3-8b", "--mbu", "1e-300"], None, None, 2, "below 1%"),
    (
        "spec-c-1e300",
        ["spec", "llama3-8b", "--gpu", "h100", "--alpha", "0.8", "--gamma", "4", "--c", "1e300"],
        None,
        None,
        2,
        "--c",
    ),
    (
        "moe-redundant-1e15",
        ["moe", "mixtral-8x7b", "--ep", "8", "--redundant-experts", "1000000000000000"],
        None,
        None,
        2,
        "--redundant-experts",
    ),
    ("ridge-plot", ["roofline", "--gpu", "h100", "--plot", "{tmp}/r.png"], None, None, 2, "--plot"),
    (
        "grid-too-large",
        [
            "roofline",
            "llama3-8b",
            "--batch",
            ",".join(map(str, range(1, 201))),
            "--context",
            ",".join(map(str, range(100))),
        ],
        None,
        None,
        2,
        "points",
    ),
    ("long-model-name", ["params", LONG], None, None, 2, "unknown model"),
    ("long-gpu-name", ["roofline", "llama3-8b", "--gpu", LONG], None, None, 2, "unknown GPU"),
    ("long-show-name", ["show", LONG], None, None, 2, "unknown model"),
    ("long-import-out", ["import", str(CONFIG), "-o", "{tmp}/" + LONG + ".yaml"], None, None, 2, "--out"),
    (
        "vocab-400-digits",
        ["params", "{spec}"],
        _model("vocab_size: 128256", "vocab_size: 1" + "0" * 400),
        None,
        2,
        "vocab_size",
    ),
    (
        "vocab-400-digits-roofline",
        ["roofline", "{spec}"],
        _model("vocab_size: 128256", "vocab_size: 1" + "0" * 400),
        None,
        2,
        "vocab_size",
    ),
    (
        "yaml-int-5000-digits",
        ["params", "{spec}"],
        _model("vocab_size: 128256", "vocab_size: 1" + "0" * 5000),
        None,
        2,
        "too long",
    ),
    (
        "connector-400-digits",
        ["image", "qwen2-vl-7b", "--size", "64x64", "--connector", "resampler:" + "9" * 400],
        None,
        None,
        2,
        "--connector",
    ),
    (
        "gpu-memory-1e300",
        ["fit", "llama3-8b", "--gpu", "{gpu}"],
        None,
        _gpu(r"memory_gb: .*", "memory_gb: 1e300"),
        2,
        "memory_gb",
    ),
    (
        "layers-1e9",
        ["kv", "{spec}"],
        _model("num_hidden_layers: 32", "num_hidden_layers: 1000000000"),
        None,
        2,
        "num_hidden_layers",
    ),
    (
        "layers-1e6",
        ["kv", "{spec}"],
        _model("num_hidden_layers: 32", "num_hidden_layers: 1000000"),
        None,
        2,
        "num_hidden_layers",
    ),
    (
        "layer-types-40000",
        ["fit", "{spec}"],
        _model("num_hidden_layers: 32", "num_hidden_layers: 40000")
        + "layer_types: ["
        + ", ".join(["full_attention"] * 40000)
        + "]\n",
        None,
        2,
        "num_hidden_layers",
    ),
    (
        "layer-types-32-bad",
        ["params", "{spec}"],
        MODEL + "layer_types: [" + ", ".join(["bogus"] * 32) + "]\n",
        None,
        2,
        "and 29 more",
    ),
    (
        "train-dtype-upper",
        ["train", "llama3-8b", "--tokens", "15T", "--gpu-hours", "1.3M", "--dtype", "BF16"],
        None,
        None,
        0,
        "",
    ),
    (
        "bandwidth-5e-324",
        ["spec", "llama3-8b", "--gpu", "{gpu}", "--alpha", "0.8", "--gamma", "4", "--c", "0.1"],
        None,
        _gpu(r"memory_bandwidth_tb_s: .*", "memory_bandwidth_tb_s: 5e-324"),
        2,
        "memory_bandwidth_tb_s",
    ),
    (
        "tflops-1e308",
        ["train", "llama3-8b", "--tokens", "15T", "--mfu", "0.4", "--gpu", "{gpu}"],
        None,
        _gpu(r"bf16: .*", "bf16: 1e308"),
        2,
        "dense_tflops.bf16",
    ),
    (
        "import-unwritable",
        ["import", str(CONFIG), "-o", "/proc/llm-cost-test.yaml"],
        None,
        None,
        1,
        "nothing was written",
    ),
    ("alias-bomb", ["params", "{spec}"], _bomb(), None, 2, "aliases are expanded"),
    (
        "fit-max-gpus-huge",
        ["fit", "llama3-8b", "--context", "1000000000000000", "--max-gpus", "1000000000000000"],
        None,
        None,
        2,
        "--max-gpus",
    ),
    (
        "fit-max-gpus-search",
        ["fit", "llama3-8b", "--context", "1000000000000000", "--max-gpus", "1000000"],
        None,
        None,
        0,
        "",
    ),
    ("empty-batch", ["roofline", "llama3-8b", "--batch", ""], None, None, 2, "--batch: empty value"),
    ("empty-batch-equals", ["roofline", "llama3-8b", "--batch="], None, None, 2, "--batch: empty value"),
    ("empty-model", ["roofline", ""], None, None, 2, "MODEL: empty value"),
    ("json-and-csv", ["kv", "llama3-8b", "--json", "--csv"], None, None, 2, "--json and --csv: give one"),
    ("empty-tp", ["params", "llama3-8b", "--tp", ""], None, None, 2, "--tp: empty value"),
    (
        "duplicate-key",
        ["params", "{spec}"],
        _model("hidden_size: 4096", "hidden_size: 4096\nhidden_size: 8192"),
        None,
        2,
        "duplicate key 'hidden_size'",
    ),
    ("train-mfu-tiny", ["train", "llama3-8b", "--tokens", "15T", "--mfu", "1e-300"], None, None, 2, "--mfu"),
    (
        "train-cost-huge",
        ["train", "llama3-8b", "--tokens", "15T", "--mfu", "0.4", "--usd-per-gpu-hour", "1e300"],
        None,
        None,
        2,
        "--usd-per-gpu-hour",
    ),
    ("moe-tp-1", ["moe", "mixtral-8x7b", "--tp", "1"], None, None, 0, ""),
    (
        "rope-theta-one",
        ["rope", "{spec}"],
        re.sub(r"rope_theta: .*", "rope_theta: 1.0", MODEL),
        None,
        2,
        "field rope_theta",
    ),
    ("rope-head-dim-odd", ["rope", "{spec}"], _model("head_dim: 128", "head_dim: 127"), None, 2, "head_dim"),
    ("show-gpu-path", ["show", "{gpu}"], None, GPU, 0, ""),
    ("json-nested", ["params", "{tmp}/deep.json"], None, None, 2, "nested too deeply"),
    ("bad-yaml-mapping-deep", ["params", "{spec}"], MODEL + "deep: " + "[" * 40 + "]" * 40 + "\n", None, 2, "nested"),
    # the attack on serve and fit (issue 13)
    ("serve-bare-tpot", ["serve", "llama3-8b", "--tpot", "50"], None, None, 2, "no unit"),
    # the attack after the front door (issue 21): an absurd rate or link gives one line, never inf
    (
        "train-network-tiny",
        ["train", "llama3-8b", "--tokens", "15T", "--gpus", "1024", "--network-gb-s", "1e-300"],
        None,
        None,
        2,
        "--network-gb-s",
    ),
    ("serve-qps-tiny", ["serve", "llama3-8b", "--qps", "1e-30"], None, None, 2, "--qps"),
    ("fit-memory-half-gb", ["fit", "llama3-8b", "--memory-gb", "0.5"], None, None, 2, "--memory-gb: 0.5"),
    # the value as the user wrote it in shortest form: 1e+12 and 0, not 1000000000000.0 and 0.0
    ("fit-memory-1e12", ["fit", "llama3-8b", "--memory-gb", "1e12"], None, None, 2, "--memory-gb: 1e+12 must"),
    ("fit-memory-zero", ["fit", "llama3-8b", "--memory-gb", "0"], None, None, 2, "--memory-gb: 0 must"),
    ("serve-negative-ttft", ["serve", "llama3-8b", "--ttft", "-1s"], None, None, 2, "greater than 0"),
    ("serve-chunk-1g", ["serve", "llama3-8b", "--chunk", "1G"], None, None, 2, "--chunk"),
    # -0 is 0 for counts and token counts as for reals (an attack was told '-0' is negative)
    ("kv-context-minus-zero", ["kv", "llama3-8b", "--context", "-0"], None, None, 2, "'-0' must be at least 1"),
    ("roofline-batch-minus-zero", ["roofline", "llama3-8b", "--batch", "-0"], None, None, 2, "must be at least 1"),
    # a subnormal duration was taken and printed as '1e-314 µs'
    ("serve-ttft-subnormal", ["serve", "llama3-8b", "--ttft", "1e-320s"], None, None, 2, "under a nanosecond"),
    (
        "serve-one-config-disaggregated",
        ["serve", "llama3-8b", "--tp", "2", "--batch", "8", "--mode", "disaggregated"],
        None,
        None,
        2,
        "--mode: disaggregated alone",
    ),
    (
        "serve-disaggregated-one-gpu",
        ["serve", "llama3-8b", "--mode", "disaggregated", "--gpus", "1"],
        None,
        None,
        2,
        "at least 2 GPUs",
    ),
    (
        "serve-weights-do-not-fit",
        ["serve", "llama3-70b", "--tp", "1", "--batch", "4"],
        None,
        None,
        2,
        "the fewest GPUs that do: 2",
    ),
    (
        "serve-memory-flags-named",
        ["serve", "llama3-8b", "--gpu-memory-utilization", "0.01"],
        None,
        None,
        2,
        "--gpu-memory-utilization: the default runtime reserve of 2.147 GB per GPU takes all",
    ),
    (
        "serve-gpu-without-bf16",
        ["serve", "llama3-8b", "--gpu", "{gpu}"],
        None,
        _gpu(r"  bf16: .*\n", ""),
        2,
        "dense_tflops has no bf16",
    ),
    ("kv-grid-too-large", ["kv", "llama3-8b", "--batch", "1..200:1", "--context", "1..100:1"], None, None, 2, "points"),
    (
        "gpu-gib-disagrees",
        ["fit", "llama3-8b", "--gpu", "{gpu}"],
        None,
        _gpu(r"memory_gib: .*", "memory_gib: 10"),
        2,
        "disagree",
    ),
    ("batch-short-flag-named-once", ["serve", "llama3-8b", "--batch", "0"], None, None, 2, "--batch: 0"),
    # the simulated serve (issue 22): each bad traffic, target or engine setting is one line naming it
    ("serve-target-no-unit", ["serve", "llama3-8b", "--ttft", "p99:2"], None, None, 2, "--ttft: 'p99:2' has no unit"),
    ("serve-target-p101", ["serve", "llama3-8b", "--ttft", "p101:2s"], None, None, 2, "--ttft"),
    ("serve-input-bad-dist", ["serve", "llama3-8b", "--input", "lognormal:mean=x"], None, None, 2, "--input"),
    ("serve-input-unknown-dist", ["serve", "llama3-8b", "--input", "zipf:a=2"], None, None, 2, "--input: 'zipf'"),
    ("serve-workload-missing", ["serve", "llama3-8b", "--workload", "{tmp}/none.yaml"], None, None, 2, "none.yaml"),
    ("serve-workload-unknown-preset", ["serve", "llama3-8b", "--workload", "chatty"], None, None, 2, "--workload"),
    (
        "serve-trace-not-a-trace",
        ["serve", "llama3-8b", "--tp", "1", "--trace", "{tmp}/deep.json"],
        None,
        None,
        2,
        "--trace",
    ),
    (
        "serve-trace-and-qps",
        ["serve", "llama3-8b", "--tp", "1", "--trace", "{tmp}/t.csv", "--qps", "3"],
        None,
        None,
        2,
        "--trace: the file holds its own arrivals",
    ),
    (
        "serve-prices-mismatch",
        ["serve", "llama3-8b", "--gpu", "h100,a100", "--usd-per-gpu-hour", "1,2,3"],
        None,
        None,
        2,
        "--usd-per-gpu-hour",
    ),
    (
        "serve-max-num-seqs-zero",
        ["serve", "llama3-8b", "--tp", "1", "--qps", "1", "--max-num-seqs", "0"],
        None,
        None,
        2,
        "--max-num-seqs",
    ),
    (
        "serve-batch-with-qps",
        ["serve", "llama3-8b", "--tp", "1", "--qps", "1", "--batch", "8"],
        None,
        None,
        2,
        "--max-num-seqs",
    ),
    ("serve-engine-unknown", ["serve", "llama3-8b", "--engine", "tgi"], None, None, 2, "--engine"),
    ("serve-requests-huge", ["serve", "llama3-8b", "--requests", "1e9"], None, None, 2, "--requests"),
]


@pytest.mark.parametrize("case,argv,model,gpu,code,phrase", CASES, ids=[c[0] for c in CASES])
def test_reproducer(cli, tmp_path, case, argv, model, gpu, code, phrase):
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    files = {"{tmp}": str(tmp_path)}
    for key, text, name in (("{spec}", model, "spec.yaml"), ("{gpu}", gpu, "gpu.yaml")):
        if text is not None:
            (tmp_path / name).write_text(text)
            files[key] = str(tmp_path / name)
    args = [a for a in argv]
    for key, value in files.items():
        args = [a.replace(key, value) for a in args]
    start = time.perf_counter()
    r = cli(*args)
    elapsed = time.perf_counter() - start
    assert r.code == code, f"{case}: exit {r.code}; stderr {r.err[:300]}"
    assert phrase in r.err, f"{case}: {r.err[:300]}"
    assert "Traceback" not in r.err and r.err.count("\n") <= 1, r.err[:600]
    assert elapsed < 2, f"{case}: {elapsed:.1f} s"
    if code:
        assert r.out == "" and r.err.startswith("error: ")
    assert not re.search(r"\b(inf|nan)\b", r.out, re.IGNORECASE), r.out[-400:]


def test_yaml_12_integers(cli, tmp_path):
    """``040`` is forty (YAML 1.2), not octal 32; ``1:30`` is not sexagesimal 90."""
    path = tmp_path / "octal.yaml"
    path.write_text(_model("num_hidden_layers: 32", "num_hidden_layers: 040"))
    assert cli("show", str(path), "--json").json()["spec"]["num_hidden_layers"] == 40
    path.write_text(_model("num_hidden_layers: 32", "num_hidden_layers: 1:30"))
    r = cli("params", str(path))
    assert r.code == 2 and "num_hidden_layers" in r.err


def test_moe_at_tp_1_says_there_is_no_all_reduce(cli):
    r = cli("moe", "mixtral-8x7b", "--tp", "1")
    assert "none at TP 1" in r.out and "infx" not in r.out
    assert cli("moe", "mixtral-8x7b", "--tp", "1", "--json").json()["all_to_all_vs_allreduce"] is None


def test_internal_error_is_one_line_and_debug_shows_the_traceback(cli, monkeypatch):
    import llm_cost.model.params as params

    def broken(*args, **kwargs):
        raise ZeroDivisionError("float division by zero")

    monkeypatch.setattr(params, "count_params", broken)
    r = cli("params", "llama3-8b")
    assert r.code == 1 and r.err.count("\n") == 1 and "bug in llm-cost" in r.err and "--debug" in r.err
    r = cli("--debug", "params", "llama3-8b")
    assert r.code == 1 and "Traceback" in r.err and "ZeroDivisionError" in r.err


def _run(args: list[str], env: dict[str, str] | None = None, **kwargs) -> subprocess.CompletedProcess:
    """``llm-cost ARGS`` in a fresh interpreter (stdout and stderr captured unless redirected)."""
    code = "import sys; from llm_cost.cli import main; sys.argv[0] = 'llm-cost'; main()"
    kwargs.setdefault("stdout", subprocess.PIPE)
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        env={**os.environ, **(env or {})},
        **kwargs,
    )


def test_full_stdout_exits_1_with_one_line():
    with open("/dev/full", "w") as full:
        r = _run(["params", "llama3-8b"], stdout=full)
    assert r.returncode == 1 and r.stderr == "error: cannot write to stdout: No space left on device\n"


@pytest.mark.parametrize("flag", [[], ["--json"]])
def test_closed_stdout_exits_1_with_one_line(flag):
    code = "import os, sys; os.close(1); from llm_cost.cli import main; main()"
    r = subprocess.run(
        [sys.executable, "-c", code, "params", "llama3-8b", *flag],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 1 and r.stderr.startswith("error: ") and r.stderr.count("\n") == 1, r.stderr


@pytest.mark.parametrize("stderr", ["closed", "full"])
def test_a_users_mistake_exits_2_whatever_becomes_of_stderr(stderr):
    """A user's mistake exits 2 even where its line cannot be written (``2>&-``, ``2>/dev/full``):
    the status says what failed; it had been 1, the interpreter's own failure to write."""
    close = "import os; os.close(2); " if stderr == "closed" else ""
    code = close + "from llm_cost.cli import main; main()"
    with open("/dev/full", "w") as full:
        r = subprocess.run(
            [sys.executable, "-c", code, "params", "nosuchmodel"],
            stdout=subprocess.PIPE,
            stderr=full if stderr == "full" else subprocess.DEVNULL,
            timeout=60,
        )
    assert r.returncode == 2 and r.stdout == b""


def test_broken_pipe_is_quiet():
    code = "import sys; from llm_cost.cli import main; main()"
    p = subprocess.Popen(
        [sys.executable, "-c", code, "kv", "llama3-8b", "--context", ",".join(map(str, range(1, 3000)))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    p.stdout.read(10)
    p.stdout.close()
    err = p.stderr.read()
    assert p.wait(timeout=60) == 0 and err == b""


def test_help_read_by_head_exits_0_quietly():
    """``llm-cost params -h | head -1``: the reader is gone before the help is written (closed at
    once here, so the write meets the closed pipe on every run); the help ends quietly with 0
    (issue 36: Rich exited 1 with no message)."""
    code = "import sys; sys.argv[0] = 'llm-cost'; from llm_cost.cli import main; main()"
    p = subprocess.Popen([sys.executable, "-c", code, "params", "-h"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdout.close()
    assert p.wait(timeout=60) == 0 and p.stderr.read() == b""


def test_ascii_stdout_falls_back_and_no_color_is_plain():
    r = _run(["params", "llama3-8b"], env={"PYTHONIOENCODING": "ascii"})
    assert r.returncode == 0 and r.stderr == "" and "* parameters" in r.stdout and "+---" in r.stdout
    r = _run(["params", "llama3-8b", "--json"], env={"PYTHONIOENCODING": "ascii"})
    assert r.returncode == 0 and r.stdout.isascii()
    r = _run(["params", "llama3-8b"], env={"NO_COLOR": "1"})
    assert "\x1b[" not in r.stdout


# --- fuzz ------------------------------------------------------------------------------------------

FIELDS = [
    "vocab_size",
    "hidden_size",
    "num_hidden_layers",
    "max_position_embeddings",
    "rope_theta",
    "attention.num_attention_heads",
    "attention.num_key_value_heads",
    "attention.head_dim",
    "mlp.intermediate_size",
    "layer_types",
    "aliases",
    "name",
    "torch_dtype",
    "tie_word_embeddings",
]
VALUES = st.one_of(
    st.integers(-10, 10**6),
    st.integers(-(10**400), 10**400),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([5e-324, 1e308, -0.0, 1e-300]),
    st.text(max_size=20),
    st.none(),
    st.booleans(),
    st.lists(st.sampled_from(["full_attention", "sliding_attention", "x"]), max_size=40),
)


def _check(r, context: str) -> None:
    assert r.code in (0, 2), f"{context}: exit {r.code}: {r.err[:400]}"
    if r.code == 2:
        assert r.err.startswith("error: ") and r.err.count("\n") == 1, f"{context}: {r.err[:400]}"
    assert not re.search(r"\b(inf|nan)\b", r.out, re.IGNORECASE), f"{context}: {r.out[-400:]}"


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)  # cli: capsys is read per run
@given(
    field=st.sampled_from(FIELDS),
    value=VALUES,
    command=st.sampled_from([["params"], ["kv"], ["roofline"], ["fit"], ["moe"], ["rope"]]),
)
def test_fuzz_spec_fields(cli, field, value, command):
    data = yaml.safe_load(MODEL)
    *parents, leaf = field.split(".")
    target = data
    for part in parents:
        target = target[part]
    target[leaf] = value
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fuzz.yaml"
        path.write_text(yaml.safe_dump(data))
        _check(cli(*command, str(path)), f"{command} {field}={value!r}")


FLAGS = [
    ["kv", "llama3-8b", "--context"],
    ["kv", "llama3-8b", "--batch"],
    ["roofline", "llama3-8b", "--batch"],
    ["roofline", "llama3-8b", "--mfu"],
    ["fit", "llama3-8b", "--max-gpus"],
    ["fit", "llama3-8b", "--memory-gb"],
    ["train", "llama3-8b", "--tokens", "1T", "--mfu"],
    ["train", "llama3-8b", "--mfu", "0.4", "--tokens"],
    ["moe", "mixtral-8x7b", "--tp"],
    ["params", "llama3-8b", "--dtype"],
    ["roofline", "--gpu"],
    ["spec", "--alpha", "0.8", "--gamma", "4", "--c"],
    ["rope", "--head-dim", "128", "--base"],
]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)  # cli: capsys is read per run
@given(
    flag=st.sampled_from(FLAGS),
    value=st.one_of(
        st.text(max_size=12),
        st.sampled_from(["1e308", "1e-300", "inf", "nan", "-0", "0", "1e15", "9" * 400, "", " ", "8K", "1.5", "BF16"]),
    ),
)
def test_fuzz_flag_strings(cli, flag, value):
    _check(cli(*flag, value), f"{flag} {value!r}")


def test_what_help_promises_is_what_is_taken(cli):
    """An attacker of stop 53: spec's help said --alpha "in [0, 1]" where 1 is refused (an
    acceptance rate of 1 drafts forever); --c 1e309 was told of a 1e+300 limit where 100 is the
    limit; train's help listed fp64, int8, int4 and fp4, which it refuses."""
    from llm_cost.core.limits import DRAFT_COST_RANGE
    from llm_cost.core.types import TRAINING_DTYPES

    spec_help = " ".join(cli("spec", "--help").out.split())
    assert "from 0 to below 1" in spec_help and "in [0, 1]" not in spec_help
    for alpha in ("1", "1.0000001", "1.5", "100%"):  # one wording for one rule (a second attacker read three)
        r = cli("spec", "--alpha", alpha, "--gamma", "4")
        assert r.code == 2 and "must be from 0 to below 1 (an acceptance rate" in r.err, r.err
    for alpha in (1, 1.5, -1):
        with pytest.raises(llm_cost.LlmCostError, match="alpha: .* must be from 0 to below 1 \\(an acceptance rate\\)"):
            llm_cost.spec(alpha=alpha, gamma=4, c=0.1)
    # -0 is 0, a valid rate (stop 53 left it refused as "negative"); -0.5 is negative
    assert (
        cli("spec", "--alpha", "-0", "--gamma", "4", "--c", "0.1", "--json").json()
        == cli("spec", "--alpha", "0", "--gamma", "4", "--c", "0.1", "--json").json()
    )
    negative = cli("spec", "--alpha", "-0.5", "--gamma", "4", "--c", "0.1")
    assert negative.code == 2 and "is negative" in negative.err, negative.err
    over = cli("spec", "--alpha", "0.8", "--gamma", "4", "--c", "1e309")
    assert over.code == 2 and f"is larger than {DRAFT_COST_RANGE[1]:g}" in over.err, over.err
    train_help = " ".join(cli("train", "--help").out.split())
    listed = "<" + "|".join(d.value for d in TRAINING_DTYPES) + ">"
    assert listed.replace("|", "| ") in train_help or listed in train_help.replace("| ", "|"), train_help
    assert "fp64" not in train_help and "int4" not in train_help
    bad = cli("train", "llama3-8b", "--tokens", "1T", "--gpus", "8", "--dtype", "xx")  # a second attacker: the
    assert bad.code == 2 and "fp64" not in bad.err and "'bf16', 'fp16', 'fp8', 'tf32', 'fp32'" in bad.err  # refusal
    with pytest.raises(llm_cost.LlmCostError, match=r"dtype: 'fp64' is not one of: bf16, fp16, fp8, tf32, fp32$"):
        llm_cost.train("llama3-8b", 10**12, gpus=8, dtype="fp64")  # listed every dtype, fp64 to fp4
    for dtype in TRAINING_DTYPES:
        assert (
            cli("train", "llama3-8b", "--tokens", "1T", "--gpus", "8", "--mfu", "0.4", "--dtype", dtype.value).code == 0
        )


def test_a_decode_flag_given_to_a_prompt_says_what_to_do_instead(cli):
    """--weight-bytes with --phase prefill had been told to "use --seq (the prompt length)"."""
    r = cli("roofline", "llama3-8b", "--phase", "prefill", "--weight-bytes", "resident")
    assert r.code == 2 and "--seq" not in r.err and "decode step's weight convention: leave it out" in r.err, r.err
    r = cli("roofline", "llama3-8b", "--phase", "prefill", "--context", "5")
    assert r.code == 2 and "use --seq for the prompt length" in r.err, r.err


@pytest.mark.parametrize("chunk", ["0", "1"])
def test_a_chunk_below_the_least_budget_has_one_wording(cli, chunk):
    """--chunk 0 read "at least 1" and --chunk 1 "an integer from 2" (a second attacker): the flag
    takes the API's least budget, 2 tokens (core/limits MIN_STEP_TOKENS)."""
    r = cli("serve", "llama3-8b", "--tp", "1", "--qps", "5", "--chunk", chunk)
    assert r.code == 2 and f"--chunk: '{chunk}' must be at least 2; or off" in r.err, r.err
