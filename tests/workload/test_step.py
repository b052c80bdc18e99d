"""The step model: one operator list per step, on one GPU and on a layout, checked against hand
derivations and against invariants (hypothesis)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.core.choices import Logits
from llm_cost.core.types import OpKind
from llm_cost.model.kv import kv_bytes
from llm_cost.model.layout import Layout
from llm_cost.perf.timemodel import EfficiencyEstimate, RooflineBound
from llm_cost.specs.hf import load_hf_config
from llm_cost.specs.load import load_gpu, load_model
from llm_cost.workload.step import SeqGroup, build_step, decode, prefill

LLAMA = load_model("llama3-8b")
H100 = load_gpu("h100")


def test_one_token_multiplies_every_matmul_weight_once():
    """A decode step of one sequence does 2 x N_gemm weight FLOPs: seed 003 §02's 2 x 7.5B, with
    N_gemm = 7,504,658,432 for Llama-3-8B (32 x 218,103,808 block matmuls + 525,336,576 LM head)."""
    step = build_step(LLAMA, decode(1, 0))
    assert step.total("flops", (OpKind.GEMM,)) == 2 * (32 * 218_103_808 + 525_336_576) == 2 * 7_504_658_432


def test_decode_kv_read_is_the_cache_of_each_sequence():
    """8 sequences at 2,048 cached tokens read 8 x 2,048 x 131,072 B = 2 GiB of KV and write one token's
    131,072 B each (seed 000 §七: 128 KiB per token)."""
    step = build_step(LLAMA, decode(8, 2048))
    assert step.total("kv_read_bytes") == 8 * 2048 * 131_072 == 2**31
    assert step.total("kv_write_bytes") == 8 * 131_072


def test_mixed_step_reads_weights_once_and_adds_the_rest():
    """Chunked prefill: a 512-token chunk after 1,024 cached beside 16 decoding sequences costs the
    FLOPs and KV of both parts, but reads the weights once."""
    mixed = build_step(LLAMA, [SeqGroup(16, 1, 4096), SeqGroup(1, 512, 1024)])
    dec, chunk = build_step(LLAMA, decode(16, 4096)), build_step(LLAMA, [SeqGroup(1, 512, 1024)])
    assert mixed.phase == "mixed"
    assert mixed.flops == dec.flops + chunk.flops
    assert mixed.total("kv_read_bytes") == dec.total("kv_read_bytes") + chunk.total("kv_read_bytes")
    gemm = (OpKind.GEMM,)
    assert mixed.total("weight_bytes", gemm) == dec.total("weight_bytes", gemm) == 15_009_316_864


def test_verification_reads_each_sequence_cache_once():
    """Speculative verification: 4 sequences score 5 tokens after 1,000 cached: KV read 4 x 1,000 x
    131,072 B (once per sequence, not per token), written 4 x 5 x 131,072 B."""
    step = build_step(LLAMA, [SeqGroup(4, 5, 1000)], logits=Logits.ALL)
    assert step.total("kv_read_bytes") == 4 * 1000 * 131_072
    assert step.total("kv_write_bytes") == 20 * 131_072


def test_tensor_parallel_shards_add_up_and_add_all_reduces():
    """TP 4: each GPU does a quarter of every GEMM (Llama has no replicated matmul), and two ring
    all-reduces per layer of 2 (4-1)/4 x 32 tokens x 4,096 x 2 B = 393,216 B each."""
    one = build_step(LLAMA, decode(32, 1024))
    tp4 = build_step(LLAMA, decode(32, 1024), layout=Layout(tp=4))
    assert 4 * tp4.total("flops", (OpKind.GEMM,)) == one.total("flops", (OpKind.GEMM,))
    assert 4 * tp4.total("kv_read_bytes") == one.total("kv_read_bytes")
    assert tp4.total("comm_bytes") == 2 * 32 * 393_216


def test_pipeline_stages_split_the_step():
    """PP 4: the stages' FLOPs and bytes add up to the one-GPU step; three sends of the hidden state."""
    one = build_step(LLAMA, decode(8, 512))
    pp4 = build_step(LLAMA, decode(8, 512), layout=Layout(pp=4))
    assert len(pp4.stages) == 4 and pp4.flops == one.flops and pp4.bytes == one.bytes
    assert pp4.total("comm_bytes") == 3 * 8 * 4096 * 2


def test_prefill_logits_at_the_last_position_save_the_lm_head():
    """An 8K prefill with the LM head on every position costs 2 x 525,336,576 x 8,191 FLOPs more than
    on the last one."""
    last = build_step(LLAMA, prefill(1, 8192), logits=Logits.LAST)
    every = build_step(LLAMA, prefill(1, 8192), logits=Logits.ALL)
    assert every.flops - last.flops == 2 * 525_336_576 * 8191


@settings(max_examples=30, deadline=None)
@given(
    st.sampled_from(["llama3-8b", "mixtral-8x7b", "deepseek-v3", "qwen3-next-80b-a3b"]),
    st.integers(1, 128),
    st.integers(0, 32_768),
)
def test_estimate_at_full_efficiency_is_the_bound(name, batch, context):
    """The two time models share one interface: at MFU = MBU = 1 the estimate is the bound, and
    below it the estimate is slower."""
    spec = load_model(name)
    step = build_step(spec, decode(batch, context), weight_bits=8 if name == "deepseek-v3" else 16)
    bound = RooflineBound().step_time(step, H100)
    assert EfficiencyEstimate(1.0, 1.0).step_time(step, H100).time_s == pytest.approx(bound.time_s, rel=1e-12)
    assert EfficiencyEstimate(0.6, 0.8).step_time(step, H100).time_s > bound.time_s
    assert bound.time_s >= max(bound.compute_s, bound.memory_s)


FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "hf"


@pytest.mark.parametrize(
    "name",
    [
        "nvidia-nemotron-nano-9b-v2",
        "granite-4.0-h-small",
        "gemma-3-4b-it",
        "qwen3-30b-a3b",
        "deepseek-v2-lite",
        "gpt-oss-20b",
    ],
)
@pytest.mark.parametrize("context", [0, 1000, 40_000])
def test_decode_reads_exactly_the_cache_kv_reports(name, context):
    """One description: a decode step's KV (and fixed state) read equals what `kv` says a sequence
    holds, for Mamba-2 hybrids, sliding windows, MoE and MLA alike."""
    spec = load_hf_config(FIXTURES / name)
    step = build_step(spec, decode(3, context))
    assert step.total("kv_read_bytes") == kv_bytes(spec, context, batch=3)


def _resident_ops(spec):
    step = build_step(spec, decode(1, 0), weight_bytes="resident")
    return {op.name: op.weight_bytes for op in step.ops if op.kind == OpKind.EMBEDDING}


def test_resident_embedding_tables_are_the_text_tables_only():
    """Gemma-3-4B (config.json: text vocab_size 262,208, hidden_size 2,560, tied): the resident
    embedding tables are the one text table, 262,208 x 2,560 x 2 B; its SigLIP tower and projector,
    416,866,032 + 2,950,272 parameters (the checkpoint's split, tests/fixtures/hf/CHECKPOINTS.yaml), are
    an operator of their own at 2 B each."""
    import json

    config = json.loads((FIXTURES / "gemma-3-4b-it" / "config.json").read_text())["text_config"]
    ops = _resident_ops(load_hf_config(FIXTURES / "gemma-3-4b-it"))
    assert ops == {
        "embedding tables (resident)": config["vocab_size"] * config["hidden_size"] * 2,
        "vision tower (resident)": (416_866_032 + 2_950_272) * 2,
    }
    assert ops["embedding tables (resident)"] == 1_342_504_960


def test_a_text_model_has_no_resident_vision_operator():
    """Llama-3-8B, untied: embedding table 128,256 x 4,096 x 2 B, resident; no vision tower."""
    assert _resident_ops(LLAMA) == {"embedding tables (resident)": 128_256 * 4_096 * 2}
