"""Numbers in the engine, words in report/: every figure a command prints in its text output can
be found in its --json (at the printed precision, in any of the units the tables use).

Conventions (the "·" footnotes) are prose about formulas and are left out; so are numbers that
are part of a name (H100, Llama-3-8B), an exponent (10^12), a formula's coefficient (6 N D) or a citation's year."""

from __future__ import annotations

import json
import math
import re

import pytest

#: Each command's result is computed once and rendered every way (tests/conftest.py).
pytestmark = pytest.mark.usefixtures("shared_api_results")

COMMANDS = [
    ["params", "llama3-8b"],
    ["params", "deepseek-v3"],
    ["params", "llama3-70b", "--tp", "4"],
    ["kv", "llama3-8b"],
    ["kv", "qwen3-next-80b-a3b", "--context", "128K"],
    ["kv", "llama3-70b", "--tp", "2", "--context", "8K"],
    ["flops", "llama3-8b", "--seq", "8K"],
    ["roofline", "--gpu", "h100"],
    ["roofline", "llama3-8b", "--batch", "8", "--context", "2K"],
    ["roofline", "llama3-70b", "--tp", "4", "--batch", "32", "--context", "4K", "--ops"],
    ["roofline", "llama3-8b", "--phase", "prefill", "--seq", "8K"],
    ["roofline", "llama3-8b", "--batch", "1,8,64", "--context", "2K"],
    ["roofline", "llama3-8b", "--batch", "1,8,64", "--context", "2K", "--ops"],
    ["roofline", "mixtral-8x7b", "--batch", "16", "--context", "1K"],
    ["fit", "llama3-8b"],
    ["fit", "llama3-70b", "--tp", "2"],
    ["fit", "llama3-70b", "--gpu", "a100-40gb", "--context", "32K", "--kv-dtype", "fp8", "--tp", "4"],
    [
        "serve",
        "llama3-8b",
        "--gpu",
        "h100",
        "--gpus",
        "2",
        "--input",
        "1K",
        "--output",
        "128",
        "--ttft",
        "1s",
        "--tpot",
        "30ms",
        "--usd-per-gpu-hour",
        "2.5",
    ],
    ["serve", "llama3-70b", "--gpu", "h100", "--tp", "2", "--batch", "64", "--input", "2048", "--output", "2048"],
    [
        "serve",
        "llama3-8b",
        "--gpu",
        "h100",
        "--qps",
        "20",
        "--gpus",
        "8",
        "--input",
        "2K",
        "--output",
        "256",
        "--ttft",
        "1s",
    ],
    ["activations", "llama3-8b"],
    ["context", "llama3-8b", "--context", "8K,128K"],
    ["moe", "deepseek-v3", "--gpu", "h100", "--weights-dtype", "fp8", "--ep", "32"],
    ["spec", "llama3-8b", "--gpu", "h100", "--alpha", "0.8", "--gamma", "4", "--c", "0.1", "--context", "2K"],
    ["train", "llama3-8b", "--tokens", "15T", "--gpu-hours", "1.3M"],
    ["train", "llama3-70b", "--tokens", "1T", "--mfu", "0.4", "--tp", "8", "--dp", "64", "--zero", "3"],
    ["train", "llama3-8b", "--tokens", "1T", "--gpus", "8", "--global-batch", "1M", "--usd-per-gpu-hour", "2"],
    ["rope", "llama3.1-405b"],
    ["numerics"],
    ["image", "qwen2-vl-7b", "--size", "1920x1080"],
    ["video", "qwen2-vl-7b", "--size", "1280x720", "--seconds", "10", "--fps", "1"],
    ["list", "models"],
    ["list", "gpus"],
    ["show", "h100"],
    ["spec", "--alpha", "0.8", "--gamma", "4", "--c", "0.1"],
    ["flops", "deepseek-v3", "--phase", "decode", "--context", "4K"],
    ["reproduce", "--row", "P7", "--row", "R2", "--row", "S4"],
    ["params", "tests/fixtures/hf/nvidia-nemotron-nano-9b-v2"],
    ["roofline", "tests/fixtures/hf/llama-4-scout-17b-16e", "--batch", "8", "--context", "12K"],
    ["validate", "--profile", "hopper-pytorch-eager"],
    [
        "roofline",
        "llama3-8b",
        "--gpu",
        "a100",
        "--weights-dtype",
        "int4",
        "--group-size",
        "32",
        "--profile",
        "ampere-torch-compile",
    ],
    "serve llama3-8b --tp 1 --qps 10 --input lognormal:mean=800,sd=400 --output 128 --prefix 200 --prefix-groups 4 "
    "--requests 300 --ttft p99:500ms --usd-per-gpu-hour 2.5".split(),
    "serve llama3-8b --tp 1 --workload chat --qps 5 --requests 200 --engine trtllm".split(),
    "serve llama3-8b --gpu h100,a100 --gpus 2 --input 1K --output 128 --ttft p99:1s --tpot p90:40ms "
    "--usd-per-gpu-hour 2.5,1.8".split(),
]

_NUMBER = re.compile(r"(?<![\w.^/-])(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:e([+-]\d+))?(?![\w^-]|\.\d)")
_SCALES = (
    [1.0, 100.0]
    + [10.0**-k for k in range(3, 25, 3)]
    + [1024.0**-k for k in range(1, 7)]
    + [1e3, 1e6, 1 / 3600, 1 / 86400]
)


def _numbers(text: str) -> list[tuple[float, int, str]]:
    """(value, decimals, line) of each figure in the text, conventions left out."""
    found = []
    for line in text.splitlines():
        if line.lstrip().startswith("·"):
            continue
        line = re.sub(r"et al\.?,? \(?\d{4}\)?('s)?", "et al.", line)  # a citation's year
        for m in _NUMBER.finditer(line):
            if re.match(r" [A-Z](?: |$)", line[m.end() :]):  # a coefficient of a formula: 6 N D, 2 N
                continue
            whole, frac, exp = m.group(1), m.group(2) or "", m.group(3)
            value = float(whole.replace(",", "") + frac + (f"e{exp}" if exp else ""))
            decimals = len(frac) - 1 if frac else 0
            if exp:
                decimals -= int(exp)
            found.append((value, decimals, line.strip()))
    return found


def _leaves(data) -> list[float]:
    if isinstance(data, bool) or data is None:
        return []
    if isinstance(data, (int, float)):
        return [float(data)]
    if isinstance(data, str):  # figures inside strings (labels, formulas, settings) count too
        return [
            float(m.group(0).replace(",", ""))
            for m in re.finditer(r"\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?", data)
            if re.fullmatch(r"\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?", m.group(0))
        ]
    values = data.values() if isinstance(data, dict) else data
    return [x for v in values for x in _leaves(v)]


def _found(value: float, decimals: int, leaves: list[float]) -> bool:
    tolerance = 0.5 * 10.0**-decimals * (1 + 1e-9) + 1e-12
    for x in leaves:
        for s in _SCALES:
            y = x * s
            if abs(y - value) <= tolerance or (value and math.isclose(y, value, rel_tol=1e-9)):
                return True
    return False


def missing(text: str, data) -> list[str]:
    """The printed figures no JSON value explains, with their lines."""
    leaves = _leaves(data)
    return [f"{v:g} in {line!r}" for v, d, line in _numbers(text) if not _found(v, d, leaves)]


@pytest.mark.parametrize("args", COMMANDS, ids=lambda a: " ".join(a))
def test_every_printed_number_is_in_the_json(cli, args):
    text = cli(*args)
    data = cli(*args, "--json")
    assert text.code == 0 and data.code == 0, (text.err, data.err)
    assert missing(text.out, json.loads(data.out)) == []


def test_the_check_catches_a_number_computed_in_the_renderer():
    """A sum printed by a table but absent from the JSON is reported; a scaled one is not."""
    data = {"weight_bytes": 16_060_522_496, "kv_bytes": 1_073_741_824}
    assert missing("weights 16.06 GB, KV 1.00 GiB", data) == []
    assert missing("weights + KV 17.13 GB", data) == ["17.13 in 'weights + KV 17.13 GB'"]


def test_a_data_parallel_ridge_batch_and_memory_ceiling_say_they_are_per_rank(cli):
    """A MoE user read "batch where weights reach the ridge 996 ...; beyond memory: at most 363 fit"
    beside a step of batch 80 over DP 4, and a grid that marked batch 1,452 as fitting: both
    figures are per data-parallel rank (the step's batch splits over the ranks; 1,452 = 4 x 363).
    The labels say so, and the replica's batch of DP x the ridge batch does reach the ridge."""
    argv = ["roofline", "deepseek-v3", "--gpu", "h200", "--tp", "2", "--dp", "4", "--ep", "8", "--context", "2304"]
    text = " ".join(cli(*argv, "--batch", "80").out.split())
    assert "batch where weights reach the ridge per data-parallel rank (of 4)" in text
    step = cli(*argv, "--batch", "80", "--json").json()  # one step: an object; a grid: a list
    per_rank, most = step["compute_bound_batch_weights_only"], step["max_batch_in_memory"]
    assert f"beyond memory: at most {most:,} fit per rank" in text
    at = cli(*argv, "--batch", str(4 * per_rank), "--json").json()
    assert at["weight_intensity_flop_per_byte"] >= at["ridge_flop_per_byte"]
    below = cli(*argv, "--batch", str(4 * (per_rank - 1)), "--json").json()
    assert below["weight_intensity_flop_per_byte"] < below["ridge_flop_per_byte"]
    fits = cli(*argv, "--batch", f"{4 * most},{4 * most + 4}", "--json").json()
    assert [r["fits_in_memory"] for r in fits] == [True, False]


def test_a_pipelines_per_gpu_figures_say_they_are_summed_over_its_stages(cli):
    """A consistency audit: with --pp 3, "FLOPs per GPU 160.48 GFLOP" stood above "FLOPs, all 3 GPUs
    160.48 GFLOP" and "matmul weights read per GPU 139.00 GB" where no GPU holds more than 48 GB:
    the figures are each stage's GPU summed over the stages (the step's time is the stages' in
    turn). The labels say so; without stages they read per GPU as before."""
    piped = " ".join(cli("roofline", "llama3-70b", "--gpu", "h100", "--pp", "3", "--context", "8K").out.split())
    assert "FLOPs per GPU (summed over the 3 stages)" in piped
    assert "matmul weights read per GPU (summed over the 3 stages)" in piped
    data = cli("roofline", "llama3-70b", "--gpu", "h100", "--pp", "3", "--context", "8K", "--json").json()
    assert data["flops"] == data["total_flops"]  # TP 1: the stages' GPUs together are the model
    flat = " ".join(cli("roofline", "llama3-70b", "--gpu", "h100", "--tp", "4", "--context", "8K").out.split())
    assert "FLOPs per GPU " in flat and "(summed over the" not in flat


def test_kv_says_which_figures_are_per_sequence_and_which_are_the_batchs(cli):
    """A consistency audit: kv's "MHA equivalent" column (16.00 GiB) sat beside "KV per sequence
    1.00 GiB" at batch 4 without saying it is the batch's (4 sequences x 4.00 GiB), and the CSV
    mixes the two bases. The column says x batch, and the note states each field's basis; the
    JSON's figures: MHA equivalent = batch x n_q / n_kv x the per-sequence KV (32 / 8 for Llama-3-8B)."""
    out = " ".join(cli("kv", "llama3-8b", "--context", "8K", "--batch", "4").out.split())
    assert "MHA equivalent x batch 4" in out
    assert "the total, MHA-equivalent and all-layers-full-attention bytes are for the whole batch" in out
    (row,) = cli("kv", "llama3-8b", "--context", "8K", "--batch", "4", "--json").json()["contexts"]
    assert row["kv_bytes"] == 2 * 8 * 128 * 2 * 32 * 8192  # K and V, 8 KV heads x 128, bf16, 32 layers
    assert row["mha_equivalent_bytes"] == 4 * (32 // 8) * row["kv_bytes"]


def test_the_bytes_note_gives_the_embedding_rows_their_own_bits(cli):
    """An attacker: DeepSeek-V3's roofline said "one embedding row per sequence at 8.02532 bits"
    while the row was read at 16 (458,752 B = 32 sequences x 7,168 x 2 B per rank): its FP8-block
    checkpoint keeps embed_tokens in BF16 (DeepSeek-V3 §3.3.1; the tensor is not in FP8 in
    its safetensors). The note gives the average and the rows' own bits; a 16-bit model, one."""
    run = cli("roofline", "deepseek-v3", "--gpu", "h200", "--tp", "1", "--dp", "8", "--ep", "8", "--batch", "256",
              "--context", "4K")  # fmt: skip
    assert run.code == 0, run.err
    assert "the embedding rows at 16)" in run.out and "one embedding row per sequence at 8.02532 bits" not in run.out
    assert "458,752 B" in run.out and 458_752 == 256 // 8 * 7_168 * 2  # 32 sequences per rank, d 7,168, 2 B
    plain = cli("roofline", "llama3-8b", "--batch", "4").out
    assert "one embedding row per sequence at 16 bits" in plain


def test_fit_says_its_concurrency_is_the_replicas_over_its_data_parallel_ranks(cli):
    """An attacker read fit's "max concurrency ... 840 sequences" of DeepSeek-V3 on TP1 x DP8 as
    one rank's, beside roofline's per-rank ceilings: it is the replica's, 8 ranks of the sequences
    one GPU's KV budget holds (its budget over one 4,096-token sequence's MLA cache, 61 layers x
    576 latent + RoPE elements x 2 B x 4,096 tokens)."""
    args = ("fit", "deepseek-v3", "--gpu", "h200", "--tp", "1", "--dp", "8", "--ep", "8", "--context", "4K")
    data = cli(*args, "--json").json()["deployment"]
    room = data["room"]
    assert room["kv_bytes_per_sequence"] == 61 * 576 * 2 * 4096
    per_rank = room["kv_budget_bytes"] // room["kv_bytes_per_sequence"]
    assert data["max_concurrency"] == 8 * per_rank
    assert f"{8 * per_rank:,} sequences in all, {per_rank:,} per data-parallel rank (of 8)" in cli(*args).out
