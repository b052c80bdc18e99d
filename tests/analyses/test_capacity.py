"""Memory as a serving engine sees it, against vLLM's own startup logs (tests/data/vllm-kv-logs.yaml,
each row quoted from a vllm-project/vllm pull request or issue with its URL)."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import llm_cost
from llm_cost.analyses.capacity import (
    DEPLOYMENT,
    DOCUMENTS,
    kv_room,
    max_concurrency,
    sequence_kv_bytes,
    workspace_bytes,
)
from llm_cost.core.choices import MemoryConvention
from llm_cost.model.layout import ONE_GPU, Layout, per_gpu
from llm_cost.specs.load import load_gpu, load_model

LOGS = {
    r["id"]: r for r in yaml.safe_load((Path(__file__).parents[1] / "data" / "vllm-kv-logs.yaml").read_text())["rows"]
}
GiB = 2**30


def test_physical_capacity_is_what_the_gpu_spec_says():
    """An '80 GB' H100 holds what nvidia-smi reports, 81,559 MiB (hardware/h100.yaml cites it); the
    documents read the datasheet's 80 GB as 80e9 B."""
    h100 = load_gpu("h100")
    assert kv_room(load_model("llama3-8b"), h100, [1]).capacity_bytes == 81_559 * 2**20
    assert kv_room(load_model("llama3-8b"), h100, [1], policy=DOCUMENTS).capacity_bytes == 80 * 10**9
    assert DOCUMENTS.convention == MemoryConvention.DATASHEET


def test_weights_per_gpu_match_vllm_logs():
    """vLLM PR #10511: 'model weights take 14.96GiB' for Llama-3-8B, 7.48 GiB per GPU at TP 2."""
    spec = load_model("llama3-8b")
    assert round(per_gpu(spec, ONE_GPU).max_weight_bytes / GiB, 2) == LOGS["A1"]["weights_gib"]
    assert round(per_gpu(spec, Layout(2)).max_weight_bytes / GiB, 2) == LOGS["A2"]["weights_gib"]


@pytest.mark.parametrize("row", ["A1", "A3"])
def test_kv_cache_budget_within_6_percent_of_vllm(row):
    """vLLM's KV cache for Llama-3-8B on one H100 at gpu_memory_utilization 0.9: 53.29 GiB (PR
    #10511, V0 engine) and 51.38 GiB (llm-d-benchmark's V1 log summary). Ours: 80 GiB x 0.9 less
    the weights, our workspace estimate and the 2 GiB reserve: 54.33 GiB, +1.9% and +5.7%. vLLM sees
    79.22 GiB and measures its activation peak (1.26 GiB in V0, 4.76 GiB in V1); the reserve
    stands in for the first, the workspace estimate for the second."""
    log = LOGS[row]
    room = kv_room(load_model("llama3-8b"), load_gpu("h100"), [1])
    ours = room.kv_budget_bytes / GiB
    assert log["gpu_memory_utilization"]["value"] == float(DEPLOYMENT.utilization)
    assert 0 <= ours / log["kv_cache_gib"] - 1 < 0.06, (ours, log["kv_cache_gib"])


def test_workspace_is_the_largest_live_activations():
    """Llama-3-8B at an 8,192-token step: residual 4,096 + Q/K/V 6,144 + gate and up 2 x 14,336
    elements per token at 2 B, and 256 rows of 128,256 logits at 4 B."""
    spec = load_model("llama3-8b")
    assert workspace_bytes(spec, ONE_GPU, 8192, 256) == 8192 * (4096 + 6144 + 28672) * 2 + 256 * 128256 * 4
    assert workspace_bytes(spec, Layout(2), 8192, 256) == 8192 * (4096 + (6144 + 28672) // 2) * 2 + 256 * 64128 * 4


def test_paged_kv_rounds_each_sequence_up_to_whole_blocks():
    """A 17-token sequence holds two 16-token blocks: 32 tokens x 128 KiB (Llama-3-8B, BF16)."""
    spec = load_model("llama3-8b")
    assert sequence_kv_bytes(spec, ONE_GPU, [17], 16, 16) == 32 * 131072
    assert sequence_kv_bytes(spec, ONE_GPU, [17], 16, 1) == 17 * 131072


def test_fit_prints_the_maximum_concurrency_of_a_layout(cli):
    """Issue 13: Llama-3-70B on 4 x A100-40GB, 32K context, FP8 KV. Per GPU: 40 GiB x 0.9 less a
    quarter of the weights, the workspace of an 8,192-token step at TP 4 (8,192 x (8,192 + (10,240
    + 57,344) / 4) x 2 B + 256 x 32,064 x 4 B) and 2 GiB; each sequence holds 80 layers x 2 x 2
    KV heads x 128 x 1 B x 32,768 tokens on each GPU: 0.5 GiB of budget holds none of them. The
    documents' convention (40e9 B, all of it) holds 3."""
    spec = load_model("llama3-70b")
    weights = per_gpu(spec, Layout(4)).max_weight_bytes
    budget = 40 * GiB * 9 // 10 - weights - (8192 * (8192 + (10240 + 57344) // 4) * 2 + 256 * 32064 * 4) - 2 * GiB
    expected = budget // (80 * 2 * 2 * 128 * 32768)
    r = cli("fit", "llama3-70b", "--gpu", "a100-40gb", "--context", "32K", "--kv-dtype", "fp8", "--tp", "4")
    assert r.code == 0 and "max concurrency at context 32,768" in r.out and f"{expected:,} sequences" in r.out
    data = cli(
        "fit", "llama3-70b", "--gpu", "a100-40gb", "--context", "32K", "--kv-dtype", "fp8", "--tp", "4", "--json"
    ).json()
    assert data["deployment"]["max_concurrency"] == expected == 0
    docs = cli(
        "fit",
        "llama3-70b",
        "--gpu",
        "a100-40gb",
        "--context",
        "32K",
        "--kv-dtype",
        "fp8",
        "--tp",
        "4",
        "--memory",
        "datasheet",
        "--json",
    ).json()
    assert docs["deployment"]["max_concurrency"] == (40 * 10**9 - weights) // (80 * 2 * 2 * 128 * 32768) == 3


def test_documents_convention_is_all_of_the_datasheet():
    """--memory datasheet: 80e9 B, no utilisation cap, no workspace, no reserve, token-exact."""
    room = kv_room(load_model("llama3-8b"), load_gpu("h100"), [8192], policy=DOCUMENTS)
    assert room.kv_budget_bytes == 80 * 10**9 - 16_060_522_496
    assert room.max_concurrency == (80 * 10**9 - 16_060_522_496) // (8192 * 131072) == 59


@settings(max_examples=40, deadline=None)
@given(
    st.sampled_from(["llama3-8b", "mistral-7b", "mixtral-8x7b", "qwen3-next-80b-a3b"]),
    st.integers(1, 200_000),
    st.integers(1, 200_000),
    st.sampled_from([Fraction(8, 10), Fraction(9, 10), 1]),
)
def test_concurrency_never_grows_with_context_and_never_shrinks_with_utilisation(name, a, b, util):
    from dataclasses import replace

    spec, gpu = load_model(name), load_gpu("h200")
    short, long_ = sorted((a, b))
    policy = replace(DEPLOYMENT, utilization=util)
    assert (
        kv_room(spec, gpu, [long_], policy=policy).max_concurrency
        <= kv_room(spec, gpu, [short], policy=policy).max_concurrency
    )
    assert (
        kv_room(spec, gpu, [short], policy=policy).max_concurrency
        <= kv_room(spec, gpu, [short], policy=replace(DEPLOYMENT, utilization=Fraction(1))).max_concurrency
    )


def test_max_concurrency_is_whole_sequences():
    assert max_concurrency(10, 3) == 3 and max_concurrency(-5, 3) == 0 and max_concurrency(0, 3) == 0


def test_a_context_longer_than_the_model_s_is_flagged():
    """Llama-3-8B's config.json has max_position_embeddings 8,192; one H100's KV room holds far
    more (about 60 GiB / 128 KiB per token, some 490K tokens), so the largest context at batch 1
    says it is past the model's length."""
    import llm_cost

    f = llm_cost.fit("llama3-8b", "h100").single_gpu
    assert f.max_context_at_batch > 8192
    flagged = [n for n in f.conventions if n.code == "fit.beyond_model_context"]
    assert flagged and flagged[0].params["limit"] == 8192


def test_a_batch_that_cannot_fit_says_none_not_zero(cli):
    """100,000 sequences of Llama-3-8B need at least one 16-token block of 131,072 B/token each:
    209.7 GB, more than an H100's whole 85.5 GB, so no context fits them; '0' read as a context."""
    assert 100_000 * 16 * 131_072 > 81_559 * 2**20
    out = cli("fit", "llama3-8b", "--gpu", "h100", "--batch", "100000").out
    assert "none: 100,000 sequences do not fit" in out


@settings(max_examples=200, deadline=None)
@given(
    name=st.sampled_from(["llama3-70b", "deepseek-v3", "qwen3-next-80b-a3b", "mixtral-8x7b"]),
    tp=st.sampled_from([1, 2, 4, 8]),
    step_tokens=st.integers(1, 10**6),
    rows=st.integers(1, 10**5),
)
def test_the_workspace_is_the_documented_ceiling_exactly(name, tp, step_tokens, rows):
    """workspace_bytes is computed in integers for speed; it must equal its docstring's formula in
    exact rationals: ceil(tokens x (d + (n_q + 2 n_kv) d_h / t + MLP widths / t) x 16 / 8 + rows x
    V / t x 32 / 8), the per-token elements as the model states them."""
    import math
    from fractions import Fraction

    from llm_cost.analyses.capacity import _workspace_per_token, workspace_bytes
    from llm_cost.model.layout import Layout

    spec = load_model(name)
    per_token = _workspace_per_token(spec, tp)
    expected = math.ceil(step_tokens * per_token * 16 / 8 + Fraction(rows * spec.vocab_size, tp) * 32 / 8)
    assert workspace_bytes(spec, Layout(tp=tp), step_tokens, rows) == expected


def test_a_reserve_past_one_gpus_usable_memory_is_refused(cli):
    """The reserve is per GPU: at 90% of an H100 SXM's 85,520,809,984 B (its 81,559 MiB as the card
    reports them) 76,968,728,985 B are usable, and a reserve of 77 GB or 1,000 GB leaves no byte
    however many GPUs share the weights (an attacker had been told to raise --max-gpus)."""
    usable = 85_520_809_984 * 9 // 10
    for gb in ("77", "1000"):
        r = cli("fit", "llama3-8b", "--gpu", "h100", "--reserve-gb", gb)
        assert r.code == 2 and r.err.count("\n") == 1 and r.out == "", r.err
        assert (
            r.err.startswith(f"error: --reserve-gb: {int(gb):,} GB per GPU takes all")
            and f"{usable / 1e9:,.4g} GB" in r.err
        )
    assert cli("fit", "llama3-8b", "--gpu", "h100", "--reserve-gb", "76").code == 0
    with pytest.raises(llm_cost.LlmCostError, match="reserve_bytes: 77 GB per GPU takes all"):
        llm_cost.fit("llama3-8b", "h100", reserve_bytes=77 * 10**9)
    for argv in (["--tp", "1"], ["--gpus", "8"], ["--gpu", "h100,a100", "--gpus", "8"]):  # serve's doors too (a
        r = cli("serve", "llama3-8b", "--qps", "1", "--reserve-gb", "77", *argv)  # second attacker: it blamed --tp)
        assert r.code == 2 and r.err.startswith("error: --reserve-gb: 77 GB per GPU takes all"), r.err


def test_a_gpu_spec_without_memory_gib_is_not_labelled_as_the_cards_report(cli, tmp_path):
    """Without ``memory_gib`` the capacity is the datasheet's 80 GB read as 10^9 B: the table says
    so, where it had called 80,000,000,000 B "as the card reports it" (an attacker); with it, the
    H100's 81,559 MiB as nvidia-smi reports them."""
    root = Path(__file__).resolve().parents[2]
    text = (root / "hardware" / "h100.yaml").read_text(encoding="utf-8")
    lines = [line for line in text.splitlines() if not line.startswith("memory_gib")]
    spec = tmp_path / "h100-datasheet.yaml"
    spec.write_text("\n".join(lines) + "\n", encoding="utf-8")
    plain = cli("fit", "llama3-8b", "--gpu", str(spec))
    assert plain.code == 0, plain.err
    line = next(row for row in plain.out.splitlines() if row.strip().startswith("memory"))
    assert "80,000,000,000 B" in line and "GB of 10^9 B as given" in line and "card reports" not in line, line
    given = next(row for row in cli("fit", "llama3-8b", "--memory-gb", "40").out.splitlines() if "memory" in row)
    assert "40,000,000,000 B" in given and "as given" in given and "card reports" not in given, given  # 2nd attacker
    card = next(row for row in cli("fit", "llama3-8b", "--gpu", "h100").out.splitlines() if "memory" in row)
    assert "85,520,809,984 B" in card and "as the card reports it" in card, card


def test_the_default_reserve_past_a_small_gpu_names_its_memory(cli):
    """The default 2 GiB (2.147 GB) reserve on a 1 GB GPU: the refusal names --memory-gb, not a
    --reserve-gb the user never gave."""
    r = cli("fit", "llama3-8b", "--memory-gb", "1")
    assert r.code == 2 and r.err.startswith("error: --memory-gb: the default runtime reserve of 2.147 GB"), r.err
    r = cli("fit", "llama3-8b", "--gpu-memory-utilization", "0.01")  # the share given is what left no room
    assert r.code == 2 and r.err.startswith("error: --gpu-memory-utilization: the default runtime reserve"), r.err


def test_roofline_says_whose_memory_figure_its_fits_column_reads(cli, tmp_path):
    """roofline's fits note called a spec's datasheet 80 GB "as the card reports it" where the spec
    gives no memory_gib (a second attacker; fit's label had been mended alone)."""
    root = Path(__file__).resolve().parents[2]
    lines = [x for x in (root / "hardware" / "h100.yaml").read_text(encoding="utf-8").splitlines()
             if not x.startswith("memory_gib")]  # fmt: skip
    spec = tmp_path / "h100-datasheet.yaml"
    spec.write_text("\n".join(lines) + "\n", encoding="utf-8")
    plain = cli("roofline", "llama3-8b", "--gpu", str(spec), "--batch", "8").out
    card = cli("roofline", "llama3-8b", "--gpu", "h100", "--batch", "8").out
    assert "80.0 GB, the datasheet's: the GPU spec gives no memory_gib" in " ".join(plain.split())
    assert "85.5 GB, as the card reports it" in " ".join(card.split())


@pytest.mark.parametrize("gpu", ["h100", "a100", "mi300x", "l40s"])
def test_fit_and_the_simulated_serve_size_one_kv_budget(cli, gpu):
    """A consistency audit: fit sized its activation workspace for 8,192 tokens and 256 logit rows
    while serve's simulation sized it for vLLM's defaults on the GPU (1,024 sequences on an H100 or
    MI300X, 2,048 tokens and 256 on an A100 or L40S), so one model and GPU had two KV budgets
    (442,442 against 439,424 tokens on an H100). Both now take vLLM's defaults: serve's pool is
    fit's token budget in whole 16-token blocks."""
    fit = cli("fit", "llama3-8b", "--gpu", gpu, "--context", "2176", "--json").json()["single_gpu"]
    served = cli(
        "serve", "llama3-8b", "--gpu", gpu, "--tp", "1", "--qps", "1", "--input", "2K", "--output", "256",
        "--requests", "20", "--json",
    ).json()  # fmt: skip
    assert served["kv_capacity_tokens"] == fit["token_budget"] // 16 * 16
