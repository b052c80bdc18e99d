"""The seed documents' numbers, recomputed by the engine from the shipped specs.

``data/document_numbers.yaml`` holds every row of the documents' regression table: where it is
printed, what it claims, the figure as printed and the values to reproduce. This module holds,
for each row id, the computation that yields those values through the public engine, with the
document's convention (128,000 vs 131,072 tokens, 2N vs 2N_gemm, GiB vs GB) made explicit.
``check_rows`` compares the two; the ``llm-cost reproduce`` command and the test suite both
use it.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping
from fractions import Fraction
from functools import cache, lru_cache
from pathlib import Path

from llm_cost.analyses.capacity import DOCUMENTS
from llm_cost.analyses.context import context_analysis
from llm_cost.analyses.memory import activation_memory, fit
from llm_cost.analyses.moe import moe_analysis
from llm_cost.analyses.multimodal import image_cost, video_cost
from llm_cost.analyses.numerics import numerics
from llm_cost.analyses.roofline import decode_step, prefill_step
from llm_cost.analyses.rope import rope_analysis, wavelengths
from llm_cost.analyses.speculative import speculative
from llm_cost.analyses.training import TrainResult, train
from llm_cost.core.choices import ActivationFormula, AttentionMask, Logits, MLAForm, Recompute, WeightBytes, WeightFlops
from llm_cost.core.records import record
from llm_cost.core.types import Dtype, Part, TensorGroup
from llm_cost.core.units import Number
from llm_cost.model.kv import kv_bytes, kv_bytes_per_token, kv_cache
from llm_cost.model.kvshape import kv_elements_per_token_per_layer
from llm_cost.model.params import ParamsResult, count_params
from llm_cost.model.structure import build
from llm_cost.perf.ridge import ridge_points
from llm_cost.specs.load import load_gpu, load_model
from llm_cost.specs.schema import ModelSpec
from llm_cost.workload.flops import forward_flops, weight_flops_params

__all__ = ["Check", "RowResult", "ROWS", "load_rows", "check_rows"]

GiB, MiB, KiB = 2**30, 2**20, 2**10

#: The values of one row: what the document prints, by name.
Values = Mapping[str, Number]

ROWS: dict[str, Callable[[], Values]] = {}


def _row(row_id: str):
    def register(fn: Callable[[], Values]) -> Callable[[], Values]:
        ROWS[row_id] = fn
        return fn

    return register


def _present(value: Number | None) -> Number:
    """A figure the engine gives for the row's model (None only for models without it)."""
    assert value is not None
    return value


@cache
def _spec(name: str) -> ModelSpec:
    return load_model(name)


@cache
def _params(name: str) -> ParamsResult:
    return count_params(_spec(name))


def _group(r: ParamsResult, group: TensorGroup):
    return next(row for row in r.rows if row.group == group)


def _mha(spec: ModelSpec) -> ModelSpec:
    return spec.with_kv_heads(spec.attention.num_attention_heads)


# --- parameters (seed 000 §三/§六, seed 002, seed 003 §01-§02, §07) ---------------------------


@_row("P1")
def _p1():
    return {"attention_params_per_layer": _group(_params("llama3-8b"), TensorGroup.ATTENTION).per_layer}


@_row("P2")
def _p2():
    gqa = _group(_params("llama3-8b"), TensorGroup.ATTENTION).per_layer
    mha = _group(count_params(_mha(_spec("llama3-8b"))), TensorGroup.ATTENTION).per_layer
    return {"mha_attention_params_per_layer": mha, "reduction_percent": 100 * (1 - gqa / mha)}


@_row("P3")
def _p3():
    return {"mlp_params_per_layer": _group(_params("llama3-8b"), TensorGroup.MLP).per_layer}


def _block(r: ParamsResult, layers: int) -> Number:
    return sum(_present(row.per_layer) for row in r.rows if row.layers == layers and row.part == Part.DECODER)


@_row("P4")
def _p4():
    return {"params_per_block": _block(_params("llama3-8b"), 32)}


@_row("P5")
def _p5():
    return {"params_all_blocks": 32 * _block(_params("llama3-8b"), 32)}


@_row("P6")
def _p6():
    r = _params("llama3-8b")
    return {
        "embedding_params": _group(r, TensorGroup.EMBEDDING).params,
        "lm_head_params": _group(r, TensorGroup.LM_HEAD).params,
    }


@_row("P7")
def _p7():
    return {"total_params": _params("llama3-8b").total_params}


@_row("P8")
def _p8():
    r = _params("llama3-8b")
    att, mlp = _group(r, TensorGroup.ATTENTION), _group(r, TensorGroup.MLP)
    emb = _group(r, TensorGroup.EMBEDDING).params + _group(r, TensorGroup.LM_HEAD).params
    return {
        "attention_billions": att.params / 1e9,
        "attention_share_percent": 100 * att.share,
        "mlp_billions": mlp.params / 1e9,
        "mlp_share_percent": 100 * mlp.share,
        "embedding_and_head_millions": emb / 1e6,
        "embedding_and_head_share_percent": 100 * emb / r.total_params,
    }


@_row("P9")
def _p9():
    n = _params("llama3-8b").params_without_input_embedding
    return {"params_without_input_embedding": n, "printed_billions": n / 1e9}


@_row("P11")
def _p11():
    tied = dataclasses.replace(_spec("llama3-8b"), tie_word_embeddings=True)
    return {"total_params_if_tied": count_params(tied).total_params}


@_row("P12")
def _p12():
    r = _params("llama3-8b")
    n = _group(r, TensorGroup.NORMS).params + _group(r, TensorGroup.FINAL_NORM).params
    return {"norm_params": n, "printed_millions": n / 1e6}


@_row("M6")
def _m6():
    r = _params("deepseek-v3")
    return {
        "mtp_unique_params": r.mtp_params,
        "share_percent": 100 * r.mtp_params / r.total_params,
        "main_model_params": r.total_params,
    }


# --- KV cache (seed 000 §七, seed 001 GQA, seed 003 §04-§05) -----------------------------------


@_row("K1")
def _k1():
    spec = _spec("llama3-8b")
    return {"kv_bytes_per_token_per_layer": kv_elements_per_token_per_layer(spec) * 2}


@_row("K2")
def _k2():
    b = kv_bytes_per_token(_spec("llama3-8b"))
    return {"kv_bytes_per_token": b, "kib": b / KiB}


def _k3(context: int) -> Values:
    b = kv_bytes(_spec("llama3-8b"), context)
    return {"kv_bytes": b, "mib": b / MiB, "gib": b / GiB, "printed_gib": b / GiB}


for _ctx in (1024, 8192, 32768, 128000):
    ROWS[f"K3.{_ctx}"] = (lambda c: lambda: _k3(c))(_ctx)


@_row("K4")
def _k4():
    mha = _mha(_spec("llama3-8b"))
    return {"mha_kv_bytes_per_token": kv_bytes_per_token(mha), "mha_gib_at_8k": kv_bytes(mha, 8192) / GiB}


def _k5(spec: ModelSpec) -> Values:
    r = kv_cache(spec, [131072, 128000])
    return {
        "kv_bytes_per_token": r.bytes_per_token,
        "kib_per_token": r.bytes_per_token / KiB,
        "mib_per_token": r.bytes_per_token / MiB,
        "gib_at_128k": r.contexts[0].kv_bytes / GiB,
        "printed_gib_at_128k": r.contexts[0].kv_bytes / GiB,
        "kv_read_intensity": _present(r.kv_read_intensity_flop_per_byte),
    }


ROWS["K5.8B-if-MHA"] = lambda: _k5(_mha(_spec("llama3-8b")))
ROWS["K5.Llama-3-8B"] = lambda: _k5(_spec("llama3-8b"))
ROWS["K5.Llama-3-70B"] = lambda: _k5(_spec("llama3-70b"))
ROWS["K5.V3"] = lambda: _k5(_spec("deepseek-v3"))


@_row("K5.V3MHA")
def _k5_v3_mha():
    r = kv_cache(_spec("deepseek-v3"), [128000, 131072])
    mha = _present(r.mha_bytes_per_token)
    return {
        "kv_bytes_per_token": mha,
        "mib_per_token": mha / MiB,
        "gib_at_128000": _present(r.contexts[0].mha_equivalent_bytes) / GiB,
        "gib_at_131072": _present(r.contexts[1].mha_equivalent_bytes) / GiB,
    }


@_row("K11")
def _k11():
    r = kv_cache(_spec("llama3-70b"), [1])
    return {"saving_percent": 100 * (1 - r.bytes_per_token / _present(r.mha_bytes_per_token))}


@_row("K12")
def _k12():
    spec = _spec("mistral-7b")
    return {
        "kv_bytes_at_4096": kv_bytes(spec, 4096),
        "kv_bytes_at_131072": kv_bytes(spec, 131072),
        "mib": kv_bytes(spec, 131072) / MiB,
    }


@_row("K8")
def _k8():
    r = kv_cache(_spec("qwen3-next-80b-a3b"), [1])
    return {"state_bytes": r.contexts[0].state_bytes, "mib": r.contexts[0].state_bytes / MiB}


def _k8_at(context: int) -> Values:
    c = kv_cache(_spec("qwen3-next-80b-a3b"), [context]).contexts[0]
    hybrid = (c.kv_bytes + c.state_bytes) / GiB
    every = _present(c.all_attention_bytes)
    return {"hybrid_gib": hybrid, "printed_hybrid_gib": hybrid, "all_attention_gib": every / GiB}


ROWS["K8b"] = lambda: _k8_at(131072)
ROWS["K8c"] = lambda: _k8_at(1048576)


# --- FLOPs and Roofline (seed 000 §八-§九, seed 003 §02) ------------------------------------------


def _f4(seq: int) -> Values:
    f = forward_flops(_spec("llama3-8b"), seq, attention=AttentionMask.FULL, logits=Logits.ALL)
    blocks = f.linear_flops + f.attention_flops
    return {
        "linear_per_layer": f.linear_flops / 32,
        "attention_per_layer": f.attention_flops / 32,
        "blocks_total": blocks,
        "printed_blocks_total": blocks,
    }


for _seq in (128, 1024, 8192):
    ROWS[f"F4.{_seq}"] = (lambda n: lambda: _f4(n))(_seq)


@_row("F5")
def _f5():
    f = forward_flops(_spec("llama3-8b"), 1, cached=8192, logits=Logits.LAST)
    return {
        "linear_per_layer": f.linear_flops / 32,
        "attention_per_layer": f.attention_flops / 32,
        "blocks_total": f.linear_flops + f.attention_flops,
        "total_gflops": f.total_flops / 1e9,
    }


@_row("F6")
def _f6():
    spec = _spec("llama3-8b")
    per_token = lambda s: forward_flops(spec, 1, cached=s - 1, logits=Logits.ALL).attention_flops  # noqa: E731  sees s positions
    return {
        "weight_gflops": 2 * weight_flops_params(build(spec)) / 1e9,
        "attention_gflops_8k": per_token(8192) / 1e9,
        "attention_gflops_128k": per_token(131072) / 1e9,
    }


@_row("F7")
def _f7():
    return {"tflop": forward_flops(_spec("llama3-8b"), 8192, logits=Logits.ALL).total_flops / 1e12}


@_row("R5")
def _r5():
    spec, gpu = _spec("llama3-8b"), load_gpu("h100")
    causal = prefill_step(spec, gpu, 8192, mfu=0.6, logits=Logits.ALL)
    full = prefill_step(spec, gpu, 8192, mfu=0.6, attention=AttentionMask.FULL, logits=Logits.ALL)
    return {
        "seconds_at_peak": causal.bound_s,
        "seconds_at_60_mfu": causal.estimate_s,
        "full_attention_seconds_at_peak": full.bound_s,
        "full_attention_seconds_at_60_mfu": full.estimate_s,
    }


@_row("R1")
def _r1():
    h100 = {r.dtype: r.ridge_flop_per_byte for r in ridge_points(load_gpu("h100"))}
    a100 = {r.dtype: r.ridge_flop_per_byte for r in ridge_points(load_gpu("a100"))}
    return {
        "h100_bf16": h100["bf16"],
        "printed_h100_bf16": h100["bf16"],
        "a100_bf16": a100["bf16"],
        "h100_fp8": h100["fp8"],
    }


@_row("R2")
def _r2():
    spec, gpu = _spec("llama3-8b"), load_gpu("h100")
    resident = decode_step(spec, gpu, 1, 0, weight_bytes=WeightBytes.RESIDENT)
    read = decode_step(spec, gpu, 1, 0)
    return {
        "resident_ms": resident.bound_s * 1e3,
        "printed_ms": resident.bound_s * 1e3,
        "tokens_per_s": resident.tokens_per_s,
        "compute_ms": resident.compute_time_s * 1e3,
        "matmul_weights_ms": read.matmul_weights_time_s * 1e3,
    }


@_row("R3")
def _r3():
    return {"gib": kv_bytes(_spec("llama3-8b"), 8192, batch=295) / GiB}


@_row("R4")
def _r4():
    limit = decode_step(_spec("llama3-8b"), load_gpu("h100"), 1, 8192).intensity_limit_flop_per_byte
    return {"limit": limit, "printed": limit}


@_row("R6")
def _r6():
    d = decode_step(_spec("llama3-8b"), load_gpu("h100"), 1, 0, weight_bits=4.25, weight_bytes=WeightBytes.RESIDENT)
    return {"ms": d.bound_s * 1e3, "printed_ms": d.bound_s * 1e3}


@_row("A1")
def _a1():
    a = activation_memory(_spec("llama3-8b"), 8192, 1, Recompute.NONE, formula=ActivationFormula.GPT)
    return {"gib": a.bytes_per_layer / GiB, "quadratic_gib": a.quadratic_bytes_per_layer / GiB}


@_row("K10")
def _k10():
    f = fit(_spec("llama3-8b"), load_gpu("h100"), policy=DOCUMENTS)
    by_context = {c.context: c.max_batch for c in f.concurrency}
    return {"requests_8k": by_context[8192], "requests_128k": by_context[131072]}


@_row("K10b")
def _k10b():
    f = fit(_spec("llama3-8b"), load_gpu("h100"), policy=DOCUMENTS)
    return {"tokens_in_64_gib": 64 * GiB // f.kv_bytes_per_token, "tokens_on_h100": f.token_budget}


# --- MLA, long context, MoE, speculative decoding (seed 003 §04-§08) ----------------------------


@_row("R8")
def _r8():
    i = kv_cache(_spec("deepseek-v3"), [1]).kv_read_intensity_flop_per_byte
    return {"intensity": i, "printed": i}


@_row("R8b")
def _r8b():
    v3 = _spec("deepseek-v3")
    plain = forward_flops(v3, 1, cached=4095, logits=Logits.LAST).attention_flops
    absorbed = forward_flops(v3, 1, cached=4095, logits=Logits.LAST, mla_form=MLAForm.ABSORBED).attention_flops
    return {"ratio": absorbed / plain}


@_row("K9")
def _k9():
    return {"gib": context_analysis(_spec("llama3-8b"), [8192]).rows[0].scores_bytes_per_layer / GiB}


@_row("F8")
def _f8():
    cross = lambda name, conv: context_analysis(_spec(name), [1], weight_convention=conv).crossover_context  # noqa
    return {
        "llama3_8b_non_embedding": _present(cross("llama3-8b", WeightFlops.NON_EMBEDDING)),
        "llama3_70b_non_embedding": _present(cross("llama3-70b", WeightFlops.NON_EMBEDDING)),
        "llama3_70b_total": _present(cross("llama3-70b", WeightFlops.TOTAL)),
        "printed_8b_thousands": _present(cross("llama3-8b", WeightFlops.GEMM)) / 1000,
        "printed_70b_thousands": _present(cross("llama3-70b", WeightFlops.TOTAL)) / 1000,
    }


@_row("F9")
def _f9():
    r8 = context_analysis(_spec("llama3-8b"), [131072]).rows[0]
    r70 = context_analysis(_spec("llama3-70b"), [131072], weight_convention=WeightFlops.TOTAL).rows[0]
    return {
        "llama3_8b_attention_gflops": r8.attention_flops_per_token / 1e9,
        "llama3_8b_weight_gflops": r8.weight_flops_per_token / 1e9,
        "llama3_8b_ratio": r8.attention_to_weight,
        "llama3_70b_attention_gflops": r70.attention_flops_per_token / 1e9,
        "llama3_70b_weight_gflops": r70.weight_flops_per_token / 1e9,
    }


@_row("F10")
def _f10():
    h100 = load_gpu("h100")
    r8 = context_analysis(_spec("llama3-8b"), [131072], h100, 0.6).rows[0]
    r70 = context_analysis(_spec("llama3-70b"), [131072], h100, 0.6, weight_convention=WeightFlops.TOTAL).rows[0]
    return {
        "llama3_8b_pflop": r8.document_prefill_flops / 1e15,
        "llama3_8b_seconds": r8.document_prefill_time_s,
        "llama3_70b_pflop": r70.document_prefill_flops / 1e15,
        "llama3_70b_seconds": r70.document_prefill_time_s,
    }


@cache
def _v3_moe(ep: int = 1, redundant: int = 0):
    return moe_analysis(
        _spec("deepseek-v3"), [1, 32, 128], 8, ep, redundant, gpu=load_gpu("h100"), compute_dtype=Dtype.FP8
    )


for _i, _b in enumerate((1, 32, 128)):
    ROWS[f"M1.{_b}"] = (
        lambda i: lambda: {"experts": _v3_moe().rows[i].expected_experts, "printed": _v3_moe().rows[i].expected_experts}
    )(_i)
    ROWS[f"M2.{_b}"] = (
        lambda i: (
            lambda: {
                "gb": _v3_moe().rows[i].weight_bytes_seed / 1e9,
                "printed": _v3_moe().rows[i].weight_bytes_seed / 1e9,
            }
        )
    )(_i)


@_row("M3")
def _m3():
    return {
        "ep32_gb": _v3_moe(32).weights_per_gpu_bytes / 1e9,
        "ep320_gb": _v3_moe(320, 64).weights_per_gpu_bytes / 1e9,
    }


@_row("M4")
def _m4():
    r = _v3_moe()
    return {
        "dispatch_kib": r.dispatch_bytes_per_token_per_layer / KiB,
        "combine_kib": r.combine_bytes_per_token_per_layer / KiB,
    }


@_row("M4b")
def _m4b():
    r = _v3_moe()
    return {"allreduce_kib": r.allreduce_bytes_per_token_per_layer / KiB, "ratio": r.all_to_all_vs_allreduce}


@_row("M4c")
def _m4c():
    return {"gib": _v3_moe().prompt_all_to_all_bytes / GiB}


@_row("M5")
def _m5():
    return {"tokens": _v3_moe().tokens_to_pass_ridge}


@_row("S1")
def _s1():
    return {"tokens": speculative(0.8, 4, 0.1).expected_tokens}


@_row("S2")
def _s2():
    return {
        "c_0_1": speculative(0.8, 4, 0.1).speedup_memory_bound,
        "c_0_02": speculative(0.8, 4, 0.02).speedup_memory_bound,
    }


@_row("S3")
def _s3():
    return {"batch": speculative(0.8, 4, 0.1, _spec("llama3-8b"), load_gpu("h100"), [1]).turning_batch}


@_row("S4")
def _s4():
    r = speculative(
        0.8,
        4,
        0.1,
        _spec("llama3-8b"),
        load_gpu("h100"),
        [64, 128],
        mfu=0.6,
        weight_bytes=WeightBytes.RESIDENT,
        mbu=1.0,
    )
    return {"b64": r.rows[0].speedup, "b128": r.rows[1].speedup}


@_row("S5")
def _s5():
    return {"speedup": speculative(0.8, 4, 0.1).speedup_compute_bound}


# --- RoPE (seed 003 §03) ------------------------------------------------------------------------


@_row("Q1")
def _q1():
    w4, w5 = wavelengths(1e4, 128), wavelengths(5e5, 128)
    return {
        "base_1e4_shortest": min(w4),
        "base_1e4_longest": max(w4),
        "base_5e5_longest": max(w5),
        "printed_base_1e4_longest_wan": max(w4) / 1e4,
        "printed_base_5e5_longest_wan": max(w5) / 1e4,
    }


@_row("Q2")
def _q2():
    return {"pairs": rope_analysis(1e4, 128, 8192, 32768).incomplete_in_train}


@_row("S6")
def _s6():
    return {"speedup_at_alpha_0_85": speculative(0.85, 1, spec=_spec("deepseek-v3"), use_mtp=True).speedup_memory_bound}


# --- number formats (seed 003 §10) -----------------------------------------------------------------


def _formats():
    return {f.name: f for f in numerics().formats}


@_row("N1")
def _n1():
    f = _formats()
    return {
        "fp16_max": int(f["FP16"].max_finite_exact),
        "fp16_exp_overflow": f["FP16"].exp_overflow_x,
        "bf16_exp_overflow": f["BF16"].exp_overflow_x,
        "fp32_exp_overflow": f["FP32"].exp_overflow_x,
        "e4m3_max": int(f["FP8 E4M3"].max_finite_exact),
    }


@_row("N2")
def _n2():
    bf16 = _formats()["BF16"]
    return {
        "bf16_unit_roundoff": bf16.unit_roundoff,
        "printed_unit_roundoff": bf16.unit_roundoff,
        "one_plus_0_001": bf16.one_plus_0001,
    }


@_row("N3")
def _n3():
    return {"percent": 100 * _formats()["BF16"].accumulation_noise}


@_row("N4")
def _n4():
    return {"bound": numerics(head_dim=128).qk_norm_logit_bound}


# --- images and video (seed 003 §09) -------------------------------------------------------------

for _h, _w in ((336, 336), (1024, 1024), (1080, 1920)):
    ROWS[f"V1.{_w}x{_h}"] = (lambda h, w: lambda: {"tokens": image_cost(_spec("qwen2-vl-7b"), h, w).vision.tokens})(
        _h, _w
    )


@_row("V2")
def _v2():
    qwen = _spec("qwen2-vl-7b")
    v = image_cost(qwen, 1024, 1024).vision
    blocks = sum(t.total for t in build(qwen).tensors_of(Part.VISION) if t.group == TensorGroup.VISION_BLOCKS)
    return {
        "patches": v.patches,
        "tflop": (v.block_flops + v.attention_flops) / 1e12,
        "attention_percent": 100 * v.attention_share,
        "block_params_billions": blocks / 1e9,
    }


@_row("V3")
def _v3():
    r = image_cost(_spec("qwen2-vl-7b"), 1024, 1024, _spec("llama3-70b"), weight_convention=WeightFlops.TOTAL)
    return {
        "tflop": r.decoder_weight_flops / 1e12,
        "kv_mib": r.kv_bytes / MiB,
        "encoder_output_mib": r.encoder_output_bytes / MiB,
    }


for _name, _id in (("llama3-70b", "V4.70B"), ("llama3-8b", "V4.8B"), ("qwen2-vl-7b", "V4.Qwen2-VL-7B")):
    ROWS[_id] = (
        lambda n: lambda: {"ratio": image_cost(_spec("qwen2-vl-7b"), 336, 336, _spec(n)).kv_to_encoder_output}
    )(_name)


@_row("V5")
def _v5():
    return {"tokens": video_cost(_spec("qwen2-vl-7b"), 720, 1280, 60, 1).vision.tokens}


# --- training (seed 000 §十一, seed 003 §10) -------------------------------------------------------


def _llama_15t(**kw) -> TrainResult:
    return train(_spec("llama3-8b"), 15 * 10**12, load_gpu("h100"), **kw)


@_row("F11")
def _f11():
    flops = _llama_15t(mfu=0.5).model_flops
    return {
        "flops": flops,
        "printed": flops,
        "full_recompute_flops": _llama_15t(mfu=0.5, recompute="full").hardware_flops,
    }


@_row("F12")
def _f12():
    return {"tflops": _llama_15t(gpu_hours=1.3e6).effective_flops_per_s_per_gpu / 1e12}


@_row("F13")
def _f13():
    r = _llama_15t(gpu_hours=1.3e6, power_w=700, grid_kg_per_kwh=0.4286)
    return {"mwh": r.energy_kwh / 1000, "tco2_at_0_4286": r.co2_tonnes}


@_row("P10")
def _p10():
    state = lambda n: train(_spec(n), 1, load_gpu("h100"), mfu=0.5).state.total_bytes  # noqa: E731
    return {
        "llama3_8b_gb": state("llama3-8b") / 1e9,
        "llama3_70b_tb": state("llama3-70b") / 1e12,
        "deepseek_v3_tb": state("deepseek-v3") / 1e12,
    }


# --- checking -----------------------------------------------------------------------------------


@record
class Check:
    """One value of a row: expected (as the data gives it), computed, and whether they agree."""

    name: str
    expected: float
    computed: float | Fraction
    rule: str
    ok: bool


@record
class RowResult:
    """One document row with all its checks."""

    id: str
    section: str
    claim: str
    printed: str
    note: str
    checks: list[Check]
    ok: bool  # every check agrees (and there is at least one)


@lru_cache(maxsize=1)
def _parsed_rows() -> list[dict]:
    """The table parsed once (the C YAML loader where PyYAML has it)."""
    import yaml

    path = Path(__file__).resolve().parent.parent / "data" / "document_numbers.yaml"
    return yaml.load(path.read_text(encoding="utf-8"), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def load_rows() -> list[dict]:
    """The rows of ``data/document_numbers.yaml`` in document-table order (a fresh copy)."""
    return copy.deepcopy(_parsed_rows())


def _agrees(expected, computed) -> tuple[bool, str, float]:
    if isinstance(expected, int) and not isinstance(expected, bool):
        return computed == expected and float(computed).is_integer(), "exact", expected
    value = float(expected["value"])
    if "sig" in expected:
        sig = expected["sig"]
        return (
            float(f"{float(computed):.{sig - 1}e}") == float(f"{value:.{sig - 1}e}"),
            f"{sig} significant digits",
            value,
        )
    digits = expected["digits"]
    return round(float(computed), digits) == round(value, digits), f"rounded to {digits} decimals", value


def check_rows(ids: list[str] | None = None) -> list[RowResult]:
    """Recompute every row (or those in ``ids``) and compare with the document's values.

    Raises KeyError for a row id with no computation (a gap the test suite reports)."""
    out = []
    for row in load_rows():
        if ids is not None and row["id"] not in ids:
            continue
        computed = ROWS[row["id"]]()
        checks = []
        for name, expected in row["values"].items():
            ok, rule, value = _agrees(expected, computed[name])
            checks.append(Check(name, value, computed[name], rule, ok))
        out.append(
            RowResult(
                row["id"],
                row["section"],
                row["claim"],
                row["printed"],
                row.get("note", ""),
                checks,
                bool(checks) and all(c.ok for c in checks),
            )
        )
    return out
