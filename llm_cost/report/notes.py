"""Sentences for the conventions results carry as :class:`~llm_cost.core.notes.Note` codes.

Each template is formatted with its note's parameters (``str.format``); a code with variants
has one template per variant. ``sentence`` raises KeyError for a code without a template (a test
checks that every code the engine uses has one).
"""

from __future__ import annotations

from collections.abc import Callable

from llm_cost.core.notes import Note
from llm_cost.core.units import fmt_seconds

__all__ = ["TEMPLATES", "sentence"]


def _contexts(p: dict) -> str:
    return ", ".join(f"{c:,}" for c in p["contexts"])


def _does_not_fit(p: dict) -> str:
    where, fix = ("one", "give --tp/--pp for a layout") if p["one_gpu"] else ("each", "use more GPUs or fewer bits")
    return (
        f"note: weights + KV need {float(p['need_bytes']) / 1e9:,.1f} GB on the fullest GPU, more than {where} "
        f"{p['gpu']}'s {p['capacity_bytes'] / 1e9:,.1f} GB; these times are hypothetical: {fix}, or see "
        "`llm-cost fit`"
    )


def _capacity_policy(p: dict) -> str:
    if p["physical"]:
        where = f"{p['memory_gib']:g} GiB = {p['capacity_bytes']:,} B (physical)"
    else:
        where = f"{p['memory_gb']:g} GB = {p['capacity_bytes']:,} B (datasheet, 10^9 B per GB)"
    return (
        f"memory per GPU: {where} x {p['utilization']:.0%} (GPU memory utilisation, as vLLM) less the weights, "
        + ("an activation workspace (an estimate for the largest step's tokens), " if p["workspace"] else "")
        + f"a runtime reserve of {p['reserve_bytes']:,} B; the rest holds the KV cache"
    )


def _context_prefill(p: dict) -> str:
    if not p["gpu"]:
        return "prefill = time to first token of one s-token prompt, from the step's operators; no GPU given"
    return (
        f"prefill = time to first token of one s-token prompt, from the step's operators; bound at {p['dtype']} "
        f"peak, estimate at MFU {p['mfu']:.0%}, MBU {p['mbu']:.0%}"
    )


def _document_prefill(p: dict) -> str:
    text = "documents' prefill: weight FLOPs per token x s + causal attention (seed 003 §05)"
    return text + (f", at {p['mfu']:.0%} MFU of {p['peak_tflops']:g} TFLOP/s" if p["peak_tflops"] else "")


def _train_flops(p: dict) -> str:
    text = f"FLOPs = 6 N D with N = {'active ' if p['active'] else ''}parameters ({p['params']:,}); "
    if p["full_recompute"]:
        text += "full recompute adds a forward pass: 8 N D hardware FLOPs; "
    text += (
        "attention FLOPs not included (as the source documents, seed 000 §十一); with attention, from the "
        f"operators of {p['seq']:,}-token sequences: 3 x forward"
    )
    return text + (" x 4/3 (recompute)" if p["full_recompute"] else "")


def _profile(p: dict) -> str:
    held = (
        f"; the fit predicts sources it never saw with a median error of {p['median']:.1%} ({p['rows']} rows of "
        f"{p['sources']} sources, leave-one-source-out: llm-cost validate)"
        if p["median"] is not None
        else ""
    )
    return (
        f"prediction: profile {p['name']} ({p['engine']}, {p['situation']}) for {p['target']}: {p['note']}{held}; "
        f"its band: the 10th-90th percentile of such held-out errors"
    )


def _engine(p: dict) -> str:
    rows = f", {p['rows']} rows" if p["rows"] is not None else ""
    return f"prediction: profile {p['profile']} ({p['kind']}{rows}), engine {p['engine']} " + (
        "(default; engines: vllm, sglang, trtllm, pytorch-eager, torch-compile, llamacpp)"
        if p["default"]
        else "(given)"
    )


def _no_split_kv(p: dict) -> str:
    return (
        f"warning: profile {p['profile']} ({p['engine']}) times decode attention without split-KV: one thread "
        f"block per sequence x KV head, {p['blocks']:,} here, so a long-context decode at small batch reads its KV "
        f"cache far below the bandwidth. Engines whose kernels split the KV cache (FlashAttention, FlashInfer: "
        f"vLLM, SGLang, TensorRT-LLM) run {p['split_blocks']:,} blocks by FlashAttention's split rule; with the "
        f"same parameters and split-KV this step takes {fmt_seconds(p['split_time_s'])}, not "
        f"{fmt_seconds(p['time_s'])}: give a profile with decode_split_kv for them"
    )


def _model_scaling(p: dict) -> str:
    return f"model rope_scaling: {p['rope_type']}" + (f", factor {p['factor']:g}" if p["factor"] else "")


TEMPLATES: dict[str, str | Callable[[dict], str]] = {
    "rope.mla": "MLA: RoPE turns only the decoupled qk_rope_head_dim = {dims} dims of each query/key head ({nope} "
    "more dims carry no position)",
    "rope.partial": "partial rotary: {factor:g} of head_dim {head_dim} = {dims} dims are rotated",
    "rope.base_override": "--base {base} overrides the model's rope_theta {model_base}",
    "rope.model_scaling": _model_scaling,
    "prediction.profile": _profile,
    "calibration.method": lambda p: (
        f"error = predicted / measured - 1; {p['method']}: each row predicted by the profile fitted without it"
        + (" and the other rows of its source" if p["method"] == "leave-one-source-out" else " (one source: its rows share "
           "a setup, so this says less than leaving a source out)")
        + f"; median |error| {p['median']:.1%}"
    ),
    "calibration.sources": "error = predicted / measured - 1 of each row predicted by the fit WITHOUT its source (one "
    "publication: a blog post, a vendor table, an issue's benchmark), whose family or engine then takes the nearest "
    "fitted one's parameters as a prediction does (held out as: fitted, combined or transferred); in band: inside the "
    "p10-p90 band drawn from the OTHER sources' held-out errors (each source weighing the same), as a source the "
    "project never had would meet it; a bound is never above a measurement",
    "calibration.at_bound": "{owner}: the fit ended at a bound of {parameters} (the data push it past what is "
    "physical: a missing term, or rows that disagree)",
    "calibration.estimate": "estimate: the datasheet peaks at MFU {mfu:.0%} and MBU {mbu:.0%}",
    "prediction.no_split_kv": _no_split_kv,
    "rope.mrope": "M-RoPE: the pairs are split between time, height and width positions; for text tokens all three "
    "are equal and the wavelengths are those of plain RoPE",
    "numerics.layout": "float values computed from the bit layout (sign, e exponent bits, m mantissa bits, bias "
    "2^(e-1) - 1); IEEE 754-2019, OCP OFP8 rev 1.0 (E4M3, E5M2), OCP MX v1.0 (E2M1), NVIDIA TF32 "
    "(8e/10m in 32 bits)",
    "numerics.fp8_variants": "FP8 E4M3 is the OCP/NVIDIA 'fn' variant: no inf, only S.1111.111 is NaN, max "
    "S.1111.110 = 448; E5M2 is IEEE-like (inf, max 57,344); E2M1 has neither inf nor NaN "
    "(max 6)",
    "numerics.rounding": "rounding: round-to-nearest, ties-to-even, exact (Fraction); overflow -> inf where the format "
    "has inf, NaN for E4M3 (OFP8 non-saturating), ±6 for E2M1 (saturating); TF32 hardware "
    "(cvt.rna) rounds ties away",
    "numerics.unit_roundoff": "unit roundoff u = 2^-(m+1) bounds round-to-nearest's relative error; machine epsilon "
    "2^-m is the gap above 1.0; 1.0 + 0.001 is the exact decimal 1.001 rounded to the format",
    "numerics.accumulation": "accumulation noise u x sqrt(k), k = {k:,}: a random-walk estimate (the worst case "
    "grows as k x u); FP8/FP4 are not accumulators (tensor cores accumulate them in FP32), "
    "their rows show why",
    "numerics.exp_and_int": "e^x overflow: x > ln(largest finite value); INT8/INT4: two's complement, step 1, integer "
    "products accumulate exactly (INT32), so no u or noise applies",
    "numerics.qk_norm": "QK-norm: q and k RMS-normalised (|q| = |k| = sqrt(d_head)), logit q.k/sqrt(d_head) <= "
    "sqrt(d_head) = sqrt({head_dim}) = {bound:.2f} (seed 003 §10)",
}


def sentence(n: Note) -> str:
    """The sentence for one convention."""
    template = TEMPLATES[n.code]
    return template(n.params) if callable(template) else template.format(**n.params)
