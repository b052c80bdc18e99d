"""Roofline, FLOPs and capacity: invariants, the measured-H200 check, and the CLI's promises."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.analyses.memory import fit
from llm_cost.analyses.roofline import decode_step, prefill_step
from llm_cost.core.choices import Logits, Recompute
from llm_cost.specs.load import load_gpu, load_model
from llm_cost.workload.flops import forward_flops
from llm_cost.workload.step import attention_pairs

MEASURED = json.loads((Path(__file__).resolve().parents[1] / "data" / "h200-llama3-8b-measured.json").read_text())


@pytest.mark.parametrize("row", MEASURED["decode"], ids=lambda r: f"B{r['batch']}-ctx{r['context']}")
def test_no_decode_bound_exceeds_a_measured_h200_time(row):
    """Measured on an H200 (tests/data/h200-llama3-8b-measured.json, CUDA-graph decode steps):
    a lower bound from the h200 datasheet spec must never be above what the GPU achieved."""
    d = decode_step(load_model("llama3-8b"), load_gpu("h200"), row["batch"], row["context"])
    assert d.kv_read_bytes == row["kv_bytes"]  # the same cache the measurement held
    assert d.bound_s * 1e3 <= row["ms"]


@pytest.mark.parametrize("row", MEASURED["prefill"], ids=lambda r: f"B{r['batch']}-s{r['prompt']}")
def test_no_prefill_bound_exceeds_a_measured_h200_time(row):
    p = prefill_step(load_model("llama3-8b"), load_gpu("h200"), row["prompt"], row["batch"], logits=Logits.LAST)
    assert p.bound_s * 1e3 <= row["ms"]


def test_measured_weights_match_the_spec():
    from llm_cost.model.params import count_params

    assert count_params(load_model("llama3-8b")).weight_bytes == MEASURED["weight_bytes"]


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 4096), st.integers(0, 10**6), st.one_of(st.none(), st.integers(1, 10**5)))
def test_attention_pairs_matches_brute_force_sum(s, c, w):
    """Causal pairs = sum over new tokens i of min(c + i, W) (brute force on small cases)."""
    if s > 300:
        s = s % 300 + 1
    brute = sum(min(c + i, w) if w else c + i for i in range(1, s + 1))
    assert attention_pairs(s, c, True, w) == brute
    assert attention_pairs(s, c, False, w) == s * (min(c + s, w) if w else c + s)


models = st.sampled_from(
    ["llama3-8b", "mistral-7b", "mixtral-8x7b", "deepseek-v3", "qwen3-next-80b-a3b", "qwen2-vl-7b"]
)


@settings(max_examples=40, deadline=None)
@given(models, st.integers(1, 512), st.integers(0, 200_000), st.sampled_from(["h100", "a100", "mi300x", "b200"]))
def test_decode_bound_is_at_least_both_terms_and_ops_sum_to_totals(name, batch, context, gpu):
    d = decode_step(load_model(name), load_gpu(gpu), batch, context)
    assert d.bound_s >= d.compute_time_s and d.bound_s >= d.memory_time_s
    assert d.bound_s == max(d.flops / d.peak_flops_per_s, d.bytes / d.bandwidth_bytes_s)
    assert sum(o.flops for o in d.ops) == pytest.approx(d.flops, rel=1e-12)
    assert sum(o.bytes for o in d.ops) == pytest.approx(d.bytes, rel=1e-12)
    assert sum(o.bound_s for o in d.ops) >= d.bound_s * (1 - 1e-12)


@settings(max_examples=40, deadline=None)
@given(models, st.integers(1, 64), st.integers(0, 100_000), st.integers(1, 100_000))
def test_flops_and_bytes_monotone_in_context_and_batch(name, batch, context, more):
    spec = load_model(name)
    gpu = load_gpu("h100")
    a, b = decode_step(spec, gpu, batch, context), decode_step(spec, gpu, batch, context + more)
    assert b.flops >= a.flops and b.bytes >= a.bytes
    c = decode_step(spec, gpu, batch + 1, context)
    assert c.flops > a.flops and c.bytes > a.bytes
    assert forward_flops(spec, context + more).total_flops > forward_flops(spec, more).total_flops or context == 0


def test_fp8_on_a100_is_an_error_not_a_number(cli):
    r = cli("roofline", "--gpu", "a100", "--dtype", "fp8")
    assert r.code == 2 and "no fp8 tensor-core peak" in r.err and r.out == ""


def test_roofline_ridges(cli):
    out = cli("roofline", "--gpu", "h100").out
    assert "295.3" in out and "590.7" in out


def test_roofline_llama3_8b_batch_1(cli):
    out = cli("roofline", "llama3-8b", "--gpu", "h100", "--batch", "1").out
    assert "4.79 ms (16.06 GB" in out  # all resident weights, seed 003's 4.8 ms
    assert "4.48 ms (15.01 GB)" in out  # the matmul weights


def test_roofline_default_model_and_json(cli):
    r = cli("roofline", "--gpu", "h100", "--batch", "64")
    assert r.code == 0 and "llama3-8b" in r.out.lower().replace("llama-3-8b", "llama3-8b")
    data = cli("roofline", "--gpu", "h100", "--batch", "64", "--json").json()
    assert data["model"] == "llama3-8b" and data["batch"] == 64 and data["bound"] == "memory"


def test_roofline_ops_table_sums(cli):
    data = cli("roofline", "llama3-8b", "--batch", "8", "--context", "4K", "--ops", "--json").json()
    assert sum(op["flops"] for op in data["ops"]) == pytest.approx(data["flops"])


def test_flops_prefill_8k_under_both_lm_head_conventions(cli):
    """Seed 000 §九's 8K prefill is 140.55 TFLOP with the LM head on every position (--logits all);
    serving's default, the last position only, saves 2 x 525,336,576 x 8,191 FLOPs: 131.94 TFLOP, the
    figure roofline --phase prefill and context print too."""
    every = cli("flops", "llama3-8b", "--phase", "prefill", "--seq", "8K", "--logits", "all")
    assert every.code == 0 and "140.55" in every.out and "causal" in every.out
    last = cli("flops", "llama3-8b", "--phase", "prefill", "--seq", "8K", "--json").json()[0]["total_flops"]
    prefill = cli("roofline", "llama3-8b", "--phase", "prefill", "--seq", "8K", "--json").json()["flops"]
    assert last == prefill == 140_550_657_277_952 - 2 * 525_336_576 * 8191


def test_prefill_roofline_prints_default_mfu(cli):
    """Seed 003's 0.142 s / 0.237 s count the LM head on all 8,192 positions (--logits all); serving
    needs only the last one: 2 x 525,336,576 x 8,191 = 8.6 TFLOP less, 133.4 ms at peak."""
    out = cli("roofline", "llama3-8b", "--gpu", "h100", "--phase", "prefill", "--seq", "8K", "--logits", "all").out
    assert "142 ms" in out and "MFU 60%" in out and "237 ms" in out
    data = cli("roofline", "llama3-8b", "--phase", "prefill", "--seq", "8K", "--json").json()
    assert data["logits"] == "last"
    # 2 N_gemm s (N_gemm = 7,504,658,432) + causal attention 4 d L s(s+1)/2, less the LM head's other positions
    expected = 2 * 7_504_658_432 * 8192 + 4 * 4096 * 32 * (8192 * 8193 // 2) - 2 * 525_336_576 * 8191
    assert data["flops"] == pytest.approx(expected, rel=1e-12)


def test_fit_llama3_8b_and_70b(cli):
    """The documents' convention (80e9 B, all of it) gives seed 003 §04's ~59 / 3 requests; an
    engine's accounting gives fewer: the 81,559 MiB nvidia-smi reports x 0.9 less 16,060,522,496 B of weights, a 2 GiB
    reserve and the workspace of vLLM's default step on an H100 (max_num_batched_tokens 8,192 and
    max_num_seqs 1,024: 8,192 x (4,096 + 6,144 QKV + 2 x 14,336) x 2 B, plus 1,024 rows of 128,256
    logits at 4 B), over 8,192 x 128 KiB per request."""
    docs = cli("fit", "llama3-8b", "--gpu", "h100", "--memory", "datasheet", "--json").json()
    assert [c["max_batch"] for c in docs["single_gpu"]["concurrency"]] == [59, 3]
    budget = (
        81_559 * 2**20 * 9 // 10
        - 16_060_522_496
        - 2 * 2**30
        - (8192 * (4096 + 6144 + 2 * 14336) * 2 + 1024 * 128256 * 4)
    )
    data = cli("fit", "llama3-8b", "--gpu", "h100", "--json").json()
    assert data["single_gpu"]["kv_budget_bytes"] == budget
    assert [c["max_batch"] for c in data["single_gpu"]["concurrency"]] == [
        budget // (8192 * 131072),
        budget // (131072 * 131072),
    ]
    r = cli("fit", "llama3-70b", "--gpu", "h100", "--memory", "datasheet")
    assert r.code == 0 and "does not fit" in r.out and "61,107,412,992 B" in r.out


def test_fit_sliding_window_context_is_unbounded():
    f = fit(load_model("mistral-7b"), load_gpu("h100"))
    assert f.max_context_at_batch is None and f.token_budget is None


def test_quantized_weights_shrink_the_bound(cli):
    """A batch-1 decode reads its weights: int4 at 4.25 bits cuts the bound more than 3.5x when every
    parameter is stored in it; with the LM head kept in bf16 (as AWQ/GPTQ keep it), its 525 M
    parameters stay at 2 B, so the cut is less, but more than 3x."""
    base = cli("roofline", "llama3-8b", "--json").json()["bound_s"]
    every = cli("roofline", "llama3-8b", "--weights-dtype", "int4", "--quantize-embeddings", "--json").json()["bound_s"]
    kept = cli("roofline", "llama3-8b", "--weights-dtype", "int4", "--json").json()["bound_s"]
    assert every < base / 3.5 and base / 3.5 < kept < base / 3


def test_activations_command(cli):
    """--formula gpt is the paper's GPT block: the score term is 5 a s^2 b (32 heads, s = 8,192)."""
    data = cli("activations", "llama3-8b", "--seq", "8K", "--formula", "gpt", "--json").json()
    assert [a["recompute"] for a in data] == ["none", "selective", "full"]
    assert data[0]["quadratic_bytes_per_layer"] == 5 * 32 * 8192**2


def test_activations_of_the_models_own_block():
    """Llama-3-8B's block without dropout (s = 8,192, b = 1, h = 4,096), in 2 s b bytes per element:
    attention input 4,096 + MLP input 4,096 + 2 norm inputs 8,192; Q 4,096 and o-projection input
    4,096; K and V 1,024 each; SwiGLU gate, up and product 3 x 14,336 = 43,008: 69,632 elements =
    34 h, so 34 s b h = 1,140,850,688 B; plus the softmax output 2 a s^2 b = 4,294,967,296 B
    (the GPT block's dropout masks make it 5 a s^2 b there). Llama-3-70B: 12 h + 4 x 1,024 +
    6 x 28,672 = 33.5 h."""
    from llm_cost.analyses.memory import activation_memory

    a8 = activation_memory(load_model("llama3-8b"), 8192)
    assert a8.bytes_per_layer == 34 * 8192 * 4096 + 2 * 32 * 8192**2
    assert a8.quadratic_bytes_per_layer == 2 * 32 * 8192**2
    a70 = activation_memory(load_model("llama3-70b"), 8192, recompute=Recompute.SELECTIVE)
    assert a70.bytes_per_layer == 8192 * (12 * 8192 + 4 * 1024 + 6 * 28672)


def test_giant_steps_stay_exact(cli):
    """10^15 sequences at 999,999,999,999,999 cached tokens read 10^15 x (10^15 - 1) x 131,072 B of KV:
    131,071,999,999,999,868,928,000,000,000,000,000 B, an integer far past 2^53, exactly."""
    data = cli("roofline", "llama3-8b", "--batch", "1000000000000000", "--context", "999999999999999", "--json").json()
    assert data["kv_read_bytes"] == 131_071_999_999_999_868_928_000_000_000_000_000
    assert isinstance(data["bytes"], int) and isinstance(data["flops"], int)


def test_a_slow_step_prints_its_rate_not_zero(cli):
    """Llama-3-8B decoding after 1G cached tokens: 131,072 B/token of KV = 140.7 TB per step, which
    an H100's 3.35 TB/s reads in 42 s: 0.0238 tokens/s, which a whole-number format printed as 0."""
    kv_bytes = 2**30 * 2 * 32 * 8 * 128 * 2
    out = cli("roofline", "llama3-8b", "--gpu", "h100", "--context", "1G").out
    assert f"{1 / (kv_bytes / 3.35e12):.3g} tokens/s" in out and ", 0 tokens/s" not in out


def test_a_grid_marks_each_row_that_does_not_fit_in_memory():
    """A new user's report: a batch sweep printed rows past the GPU's memory with nothing to say
    so. Each row carries ``fits_in_memory``: Llama-3-8B's 8,030,261,248 BF16 parameters (the
    checkpoint's total) and 131,072 B of KV per token (the documents) at 8K tokens per sequence on
    an H100 that reports 81,559 MiB hold 64 sequences, not 65 (16,060,522,496 + 64 x 2^30 B)."""
    from llm_cost.analyses.roofline import decode_steps

    capacity = 81_559 * 2**20
    weights, per_sequence = 8_030_261_248 * 2, 8192 * 131_072
    assert weights + 64 * per_sequence <= capacity < weights + 65 * per_sequence
    gpu = load_gpu("h100")
    assert gpu.capacity_bytes == capacity
    batches = [1, 63, 64, 65, 200]
    for points in ([(b, 8192) for b in batches], [(b, 8192) for b in range(1, 201)]):  # a sweep, a grid
        steps = decode_steps(load_model("llama3-8b"), gpu, points)
        fits = {s.batch: s.fits_in_memory for s in steps}
        assert [fits[b] for b in batches] == [True, True, True, False, False]
        assert all(s.max_batch_in_memory == 64 for s in steps)
    assert decode_step(load_model("llama3-8b"), gpu, 65, 8192).fits_in_memory is False
    assert prefill_step(load_model("llama3-8b"), gpu, seq=8192, batch=64).fits_in_memory is True
    assert prefill_step(load_model("llama3-8b"), gpu, seq=8192, batch=65).fits_in_memory is False


def test_resident_weights_are_per_gpu_as_the_other_bytes_are():
    """A new user read ``resident_weight_bytes`` 141.1 GB beside ``matmul_weight_bytes`` 34.75 GB
    in one TP4 step's JSON: the first was the whole model's, the second one GPU's. With a layout
    both are the fullest GPU's: Llama-3-70B's checkpoint total, 70,553,706,496 parameters at 2 B,
    split four ways (the norms, replicated, add well under 0.1%); on one GPU, the whole model (the
    source documents' convention)."""
    import llm_cost

    whole = 70_553_706_496 * 2
    one = llm_cost.decode("llama3-70b", "h100", batch=32, context=4096)
    tp4 = llm_cost.decode("llama3-70b", "h100", batch=32, context=4096, layout=llm_cost.Layout(tp=4))
    assert one.resident_weight_bytes == whole
    assert whole / 4 <= tp4.resident_weight_bytes <= whole / 4 * 1.001
    assert tp4.matmul_weight_bytes <= tp4.resident_weight_bytes
    assert tp4.resident_read_time_s == pytest.approx(tp4.resident_weight_bytes / 3.35e12, rel=1e-12)
