"""Every command against bad input: exit code 2, a message naming the problem, no traceback,
nothing on stdout. One table, one row per case."""

from __future__ import annotations

from pathlib import Path

import pytest

import llm_cost.specs.load as load

GOOD = (load.data_dir("models") / "llama3-8b.yaml").read_text()


def _spec_file(tmp: Path, name: str, text: str | bytes) -> str:
    path = tmp / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return str(path)


# (case id, argv, text expected in stderr)
FLAG_CASES = [
    ("params-unknown-dtype", ["params", "llama3-8b", "--dtype", "fp7"], "is not one of"),
    ("params-unknown-model", ["params", "gpt-5"], "unknown model"),
    ("params-empty-name", ["params", ""], "MODEL: empty value"),
    ("kv-context-zero", ["kv", "llama3-8b", "--context", "0"], "--context"),
    ("kv-context-negative", ["kv", "llama3-8b", "--context", "-8"], "--context"),
    ("kv-context-nan", ["kv", "llama3-8b", "--context", "nan"], "--context"),
    ("kv-context-inf", ["kv", "llama3-8b", "--context", "inf"], "--context"),
    ("kv-context-1e400", ["kv", "llama3-8b", "--context", "1e400"], "--context"),
    ("kv-context-word", ["kv", "llama3-8b", "--context", "long"], "--context"),
    ("kv-context-unit", ["kv", "llama3-8b", "--context", "8X"], "unknown suffix"),
    ("kv-context-fraction", ["kv", "llama3-8b", "--context", "0.5"], "whole number"),
    ("kv-context-empty-list", ["kv", "llama3-8b", "--context", ","], "--context"),
    ("kv-context-empty", ["kv", "llama3-8b", "--context", ""], "empty"),
    ("kv-batch-zero", ["kv", "llama3-8b", "--batch", "0"], "--batch"),
    ("kv-batch-word", ["kv", "llama3-8b", "--batch", "many"], "--batch"),
    ("kv-unknown-kv-dtype", ["kv", "llama3-8b", "--kv-dtype", "fp9"], "--kv-dtype"),
    ("list-unknown-kind", ["list", "tpus"], "tpus"),
    ("show-unknown", ["show", "nothing-like-this"], "unknown"),
    ("flops-bad-phase", ["flops", "llama3-8b", "--phase", "train"], "--phase"),
    ("flops-bad-attention", ["flops", "llama3-8b", "--attention", "sparse"], "--attention"),
    ("flops-bad-logits", ["flops", "llama3-8b", "--logits", "some"], "--logits"),
    ("flops-bad-mla", ["flops", "deepseek-v3", "--mla", "folded"], "--mla"),
    ("flops-seq-zero", ["flops", "llama3-8b", "--seq", "0"], "--seq"),
    ("flops-batch-negative", ["flops", "llama3-8b", "--batch", "-1"], "--batch"),
    ("roofline-fp8-on-a100", ["roofline", "--gpu", "a100", "--dtype", "fp8"], "no fp8"),
    ("roofline-fp8-on-a100-with-model", ["roofline", "llama3-8b", "--gpu", "a100", "--dtype", "fp8"], "no fp8"),
    ("roofline-unknown-gpu", ["roofline", "--gpu", "h1000"], "closest match: h100"),
    ("roofline-unknown-dtype", ["roofline", "--gpu", "h100", "--dtype", "fp12"], "--dtype"),
    ("roofline-mfu-zero", ["roofline", "llama3-8b", "--mfu", "0"], "--mfu"),
    ("roofline-mfu-above-one", ["roofline", "llama3-8b", "--mfu", "1.5"], "--mfu"),
    ("roofline-mfu-percent-high", ["roofline", "llama3-8b", "--mfu", "150%"], "--mfu"),
    ("roofline-mbu-nan", ["roofline", "llama3-8b", "--mbu", "nan"], "--mbu"),
    ("roofline-bits-zero", ["roofline", "llama3-8b", "--bits-per-weight", "0"], "--bits-per-weight"),
    ("roofline-bits-huge", ["roofline", "llama3-8b", "--bits-per-weight", "1e400"], "--bits-per-weight"),
    ("roofline-bad-weight-bytes", ["roofline", "llama3-8b", "--weight-bytes", "some"], "--weight-bytes"),
    ("roofline-batch-zero", ["roofline", "llama3-8b", "--batch", "0"], "--batch"),
    ("roofline-context-negative", ["roofline", "llama3-8b", "--context", "-1"], "--context"),
    ("roofline-bad-phase", ["roofline", "llama3-8b", "--phase", "train"], "--phase"),
    ("fit-reserve-negative", ["fit", "llama3-8b", "--reserve-gb", "-1"], "--reserve-gb"),
    ("fit-reserve-word", ["fit", "llama3-8b", "--reserve-gb", "lots"], "--reserve-gb"),
    ("fit-context-zero", ["fit", "llama3-8b", "--context", "0"], "--context"),
    ("fit-weights-dtype", ["fit", "llama3-8b", "--weights-dtype", "int3"], "--weights-dtype"),
    ("activations-seq-zero", ["activations", "llama3-8b", "--seq", "0"], "--seq"),
    ("moe-dense-model", ["moe", "llama3-8b"], "no mixture-of-experts"),
    ("moe-ep-not-dividing", ["moe", "deepseek-v3", "--ep", "7"], "--ep"),
    ("moe-batch-empty", ["moe", "deepseek-v3", "--batch", ""], "--batch"),
    ("moe-fp8-dtype-on-a100", ["moe", "deepseek-v3", "--gpu", "a100", "--dtype", "fp8"], "no fp8"),
    ("moe-tp-zero", ["moe", "deepseek-v3", "--tp", "0"], "--tp"),
    ("context-mfu-zero", ["context", "llama3-8b", "--mfu", "0"], "--mfu"),
    ("context-unit", ["context", "llama3-8b", "--context", "128Q"], "unknown suffix"),
    ("spec-alpha-high", ["spec", "--alpha", "1.5", "--gamma", "4", "--c", "0.1"], "--alpha"),
    ("spec-alpha-word", ["spec", "--alpha", "most", "--gamma", "4", "--c", "0.1"], "--alpha"),
    ("spec-gamma-zero", ["spec", "--alpha", "0.8", "--gamma", "0", "--c", "0.1"], "--gamma"),
    ("spec-c-negative", ["spec", "--alpha", "0.8", "--gamma", "4", "--c", "-0.1"], "--c"),
    ("spec-c-inf", ["spec", "--alpha", "0.8", "--gamma", "4", "--c", "inf"], "--c"),
    ("spec-no-c", ["spec", "--alpha", "0.8", "--gamma", "4"], "--c"),
    ("rope-no-model-no-base", ["rope"], "--base"),
    ("rope-odd-dims", ["rope", "--base", "10000", "--head-dim", "127"], "--head-dim"),
    ("rope-base-one", ["rope", "--base", "1", "--head-dim", "128"], "--base"),
    (
        "rope-target-below-train",
        ["rope", "--base", "1e4", "--head-dim", "128", "--train-length", "8K", "--target-length", "4K"],
        "--target-length",
    ),
    ("numerics-k-zero", ["numerics", "--k", "0"], "--k"),
    ("numerics-head-dim-word", ["numerics", "--head-dim", "wide"], "--head-dim"),
    ("train-no-tokens", ["train", "llama3-8b", "--mfu", "0.5"], "--tokens"),
    ("train-tokens-negative", ["train", "llama3-8b", "--tokens", "-1T", "--mfu", "0.5"], "--tokens"),
    ("train-tokens-unit", ["train", "llama3-8b", "--tokens", "15Q", "--mfu", "0.5"], "--tokens"),
    ("train-gpus-zero", ["train", "llama3-8b", "--tokens", "1T", "--mfu", "0.5", "--gpus", "0"], "--gpus"),
    ("train-recompute", ["train", "llama3-8b", "--tokens", "1T", "--mfu", "0.5", "--recompute", "half"], "--recompute"),
    ("train-power-zero", ["train", "llama3-8b", "--tokens", "1T", "--mfu", "0.5", "--power-w", "0"], "--power-w"),
    ("train-gpu-hours-nan", ["train", "llama3-8b", "--tokens", "1T", "--gpu-hours", "nan"], "--gpu-hours"),
    (
        "train-grid-negative",
        ["train", "llama3-8b", "--tokens", "1T", "--mfu", "0.5", "--grid-kg-per-kwh", "-1"],
        "--grid-kg-per-kwh",
    ),
    ("image-no-vision", ["image", "llama3-8b", "--size", "64x64"], "no vision tower"),
    ("image-bad-size", ["image", "qwen2-vl-7b", "--size", "big"], "--size"),
    ("image-aspect", ["image", "qwen2-vl-7b", "--size", "100000x10"], "aspect ratio"),
    ("video-fps-zero", ["video", "qwen2-vl-7b", "--size", "64x64", "--seconds", "1", "--fps", "0"], "--fps"),
    ("reproduce-unknown-row", ["reproduce", "--row", "X1"], "--row"),
    # a repeated flag: Click keeps the last value, which would drop a latency target without a word
    (
        "serve-ttft-twice",
        [
            "serve",
            "llama3-8b",
            "--gpu",
            "h100",
            "--input",
            "2K",
            "--output",
            "256",
            "--ttft",
            "p99:1s",
            "--ttft",
            "p50:2s",
        ],
        "--ttft: given twice",
    ),
    (
        "roofline-batch-short-and-long",
        ["roofline", "llama3-8b", "--gpu", "h100", "-b", "1", "--batch", "8"],
        "--batch: given twice",
    ),
    ("roofline-gpu-with-equals", ["roofline", "llama3-8b", "--gpu=h100", "--gpu", "h200"], "--gpu: given twice"),
]


@pytest.mark.parametrize("case,argv,needle", FLAG_CASES, ids=[c[0] for c in FLAG_CASES])
def test_bad_flag(cli, case, argv, needle):
    r = cli(*argv)
    assert r.code == 2, f"{case}: exit {r.code}; stderr: {r.err[-400:]}"
    assert needle.lower() in r.err.lower(), f"{case}: {r.err[-400:]}"
    assert "Traceback" not in r.err and r.out == ""


def _write(kind):
    """Build a bad spec file of one kind in a temp folder; return (path, expected message)."""

    def make(tmp: Path):
        if kind == "missing":
            return str(tmp / "absent.yaml"), "no such file"
        if kind == "folder":
            (tmp / "dir.yaml").mkdir()
            return str(tmp / "dir.yaml"), "not a regular file"
        if kind == "empty":
            return _spec_file(tmp, "e.yaml", ""), "empty file"
        if kind == "binary":
            return _spec_file(tmp, "b.yaml", bytes(range(256)) * 4), "not a UTF-8 text file"
        if kind == "nul":
            return _spec_file(tmp, "n.yaml", "name: x\x00\n"), "binary content"
        if kind == "invalid-yaml":
            return _spec_file(tmp, "i.yaml", "name: [unclosed\n"), "invalid YAML"
        if kind == "python-tag":
            return _spec_file(tmp, "p.yaml", "!!python/object/apply:os.system ['echo pwned']\n"), "invalid YAML"
        if kind == "list-top":
            return _spec_file(tmp, "l.yaml", "- 1\n- 2\n"), "top level must be a mapping"
        if kind == "missing-field":
            return _spec_file(
                tmp, "m.yaml", GOOD.replace("num_hidden_layers: 32\n", "")
            ), "num_hidden_layers: required field is missing"
        if kind == "extra-field":
            return _spec_file(tmp, "x.yaml", GOOD + "\nmoe_magic: 3\n"), "moe_magic: unknown field"
        if kind == "nested-extra-field":
            return _spec_file(
                tmp, "nx.yaml", GOOD.replace("  head_dim: 128", "  head_dim: 128\n  heads: 3")
            ), "attention.gqa.heads: unknown field"
        if kind == "heads-not-divisible":
            return _spec_file(
                tmp, "h.yaml", GOOD.replace("num_key_value_heads: 8", "num_key_value_heads: 6")
            ), "multiple of num_key_value_heads"
        if kind == "head-dim-inconsistent":
            text = GOOD.replace("  head_dim: 128\n", "").replace("hidden_size: 4096", "hidden_size: 4100")
            return _spec_file(tmp, "hd.yaml", text), "head_dim is required"
        if kind == "negative-layers":
            return _spec_file(
                tmp, "nl.yaml", GOOD.replace("num_hidden_layers: 32", "num_hidden_layers: -3")
            ), "num_hidden_layers"
        if kind == "string-number":
            return _spec_file(tmp, "s.yaml", GOOD.replace("hidden_size: 4096", "hidden_size: big")), "hidden_size"
        if kind == "float-count":
            return _spec_file(tmp, "f.yaml", GOOD.replace("vocab_size: 128256", "vocab_size: 128256.5")), "vocab_size"
        if kind == "unknown-attention-kind":
            return _spec_file(tmp, "k.yaml", GOOD.replace("kind: gqa", "kind: linear")), "attention"
        if kind == "huge":
            path = tmp / "huge.yaml"
            with open(path, "wb") as f:
                f.truncate(100 * 1024 * 1024)
            return str(path), "too large"
        if kind == "moe-k-above-e":
            text = GOOD.replace(
                "mlp:\n  intermediate_size: 14336\n  hidden_act: silu\n",
                "moe:\n  num_experts: 4\n  num_experts_per_tok: 8\n  moe_intermediate_size: 100\n",
            )
            return _spec_file(tmp, "moe.yaml", text), "cannot exceed"
        if kind == "layer-types-length":
            return _spec_file(tmp, "lt.yaml", GOOD + "layer_types: [full_attention]\n"), "layer_types has 1 entries"
        raise AssertionError(kind)

    return make


FILE_CASES = [
    "missing",
    "folder",
    "empty",
    "binary",
    "nul",
    "invalid-yaml",
    "python-tag",
    "list-top",
    "missing-field",
    "extra-field",
    "nested-extra-field",
    "heads-not-divisible",
    "head-dim-inconsistent",
    "negative-layers",
    "string-number",
    "float-count",
    "unknown-attention-kind",
    "huge",
    "moe-k-above-e",
    "layer-types-length",
]


@pytest.mark.parametrize("kind", FILE_CASES)
@pytest.mark.parametrize("command", [["params"], ["kv"]])
def test_bad_spec_file(cli, tmp_path, kind, command):
    path, needle = _write(kind)(tmp_path)
    r = cli(*command, path)
    assert r.code == 2, f"{kind}: exit {r.code}; {r.err[-300:]}"
    assert needle in r.err, f"{kind}: {r.err[-400:]}"
    assert "Traceback" not in r.err and r.out == ""


def test_bad_gpu_file(cli, tmp_path):
    gpu = (load.data_dir("hardware") / "h100.yaml").read_text().replace("memory_gb: 80", "memory_gb: -80")
    path = _spec_file(tmp_path, "gpu.yaml", gpu)
    r = cli("roofline", "--gpu", path)
    assert r.code == 2 and "memory_gb" in r.err and r.out == ""


def test_the_table_is_large_enough():
    assert len(FLAG_CASES) + 2 * len(FILE_CASES) + 1 >= 60


@pytest.mark.parametrize(
    "argv,needle",
    [
        (["list", "tpus"], "tpus"),
        (["image", "qwen2-vl-7b"], "Missing option '--size'"),
        (["kv", "llama3-8b", "--batch"], "requires an argument"),
        (["kv", "llama3-8b", "--bogus", "1"], "No such option"),
        (["parms", "x"], "Did you mean 'params'"),
        (["roofline", "llama3-8b", "--bits-per-weight", "1e-300"], "below 1 bit"),
        (["rope", "--base", "1e4", "--head-dim", "1000000"], "--head-dim"),
        (["fit", "llama3-8b", "--memory-gb", "1e-300"], "--memory-gb"),
        (["fit", "llama3-8b", "--memory-gb", "\u0663"], "--memory-gb"),
        (["fit", "llama3-8b", "--memory-gb", "1_000"], "--memory-gb"),
        # -0 is 0, as the API's -0.0 is (stop 54); the least negative number is still negative
        (["spec", "--alpha", "0.8", "--gamma", "4", "--c", "-1e-9"], "negative"),
        (["train", "llama3-8b", "--tokens", "1T", "--mfu", "0.4", "--usd-per-gpu-hour", "-1e-9"], "negative"),
    ],
)
def test_usage_errors_are_one_line(cli, argv, needle):
    """Parser errors (missing or unknown options, bad choices) read like the tool's own: one
    'error:' line on stderr, exit 2, nothing on stdout."""
    r = cli(*argv)
    assert r.code == 2 and r.out == "" and needle in r.err, (r.code, r.err)
    assert r.err.startswith("error: ") and r.err.count("\n") == 1


def test_bare_program_prints_help_and_exits_0(cli):
    r = cli()
    assert r.code == 0 and "Usage: llm-cost" in r.out


def test_percentages_where_fractions_are_expected(cli):
    data = cli("spec", "--alpha", "80%", "--gamma", "4", "--c", "10%", "--json").json()
    assert data["alpha"] == 0.8 and data["c"] == 0.1


def test_dtype_choices_in_help_are_the_step_dtypes(cli):
    """roofline --help had offered fp64 and tf32, then refused them: the choices it prints are the
    API's STEP_DTYPES, and one outside them is refused naming --dtype."""
    from typing import get_args

    from llm_cost.api.choices import STEP_DTYPES
    from llm_cost.cli.step_options import ComputeDtype

    assert get_args(ComputeDtype)[1].metavar == "[" + "|".join(d.value for d in STEP_DTYPES) + "]"
    r = cli("roofline", "--gpu", "h100", "--dtype", "fp64")
    assert r.code == 2 and "--dtype: 'fp64' is not one of: " + ", ".join(d.value for d in STEP_DTYPES) in r.err
