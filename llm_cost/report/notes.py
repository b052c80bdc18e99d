"""Sentences for the conventions results carry as :class:`~llm_cost.core.notes.Note` codes.

Each template is formatted with its note's parameters (``str.format``); a code with variants
has one template per variant. ``sentence`` raises KeyError for a code without a template (a test
checks that every code the engine uses has one).
"""

from __future__ import annotations

from collections.abc import Callable

from llm_cost.core.notes import Note
from llm_cost.core.types import Engine
from llm_cost.core.units import fmt_seconds

__all__ = ["TEMPLATES", "sentence"]


def _contexts(p: dict) -> str:
    return ", ".join(f"{c:,}" for c in p["contexts"])


def _does_not_fit(p: dict) -> str:
    if not p["one_gpu"]:
        where, fix = "each", "use more GPUs or fewer bits"
    elif p["takes_layout"]:
        where, fix = "one", "give --tp/--pp for a layout"
    else:  # `context` has no layout: name the commands that take one
        where, fix = "one", "`llm-cost roofline` and `llm-cost spec` take --tp/--pp for a layout"
    return (
        f"note: weights + KV need {float(p['need_bytes']) / 1e9:,.1f} GB on the fullest GPU, more than {where} "
        f"{p['gpu']}'s {p['capacity_bytes'] / 1e9:,.1f} GB; these times are hypothetical: {fix}, or see "
        "`llm-cost fit`"
    )


def _capacity_policy(p: dict) -> str:
    if p["physical"]:
        where = f"{p['memory_gib']:g} GiB = {p['capacity_bytes']:,} B (as the card reports it)"
    else:
        where = f"{p['memory_gb']:g} GB = {p['capacity_bytes']:,} B (datasheet, 10^9 B per GB)"
    return (
        f"memory per GPU: {where} x {p['utilization']:.0%} (GPU memory utilisation, as vLLM) less the weights, "
        + (
            "an activation workspace (an estimate for the engine's largest step: max_num_batched_tokens tokens "
            "and max_num_seqs logit rows, vLLM's defaults for the GPU unless set), "
            if p["workspace"]
            else ""
        )
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
    rowwise = p["rows"] == p["sources"]  # rows without a source: each its own, a hold-out by row
    held = (
        (
            f"; the fit predicts rows it never saw with a median error of {p['median']:.1%} ({p['rows']} rows, none "
            "naming its source: leave-one-row-out, which cannot see a source's shared bias)"
            if rowwise
            else f"; the fit predicts sources it never saw with a median error of {p['median']:.1%} ({p['rows']} rows "
            f"of {p['sources']} sources, leave-one-source-out: llm-cost validate)"
        )
        if p["median"] is not None
        else ""
    )
    from llm_cost.perf.calibrated import RANGE_WIDEN_MAX, RANGE_WIDEN_PER_OCTAVE

    return (
        f"prediction: profile {p['name']} ({p['engine']}, {p['situation']}) for {p['target']}: {p['note']}{held}; "
        f"its band: the 10th-90th percentile of such held-out errors, its fast end never under the Roofline bound, "
        f"and widened by {RANGE_WIDEN_PER_OCTAVE:g} of itself for each doubling a step's batch or context lies "
        f"beyond the fitted rows' (at most {RANGE_WIDEN_MAX:g} times as wide: a convention, as no held-out row says "
        "how far off such a step is)"
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


#: Who makes a checkpoint in a weights format a plan prices (``launch.checkpoint_quantized``).
_CHECKPOINT_MAKERS = {
    "int4": "int4 (AWQ, GPTQ or compressed-tensors W4A16)",
    "int8": "int8 (GPTQ or compressed-tensors W8A16/W8A8)",
    "fp8": "FP8 (compressed-tensors or ModelOpt FP8)",
    "fp8_block": "FP8 blocks of 128 x 128 (a maker's -FP8 release, or compressed-tensors' FP8 block scheme)",
    "nvfp4": "NVFP4 (ModelOpt or compressed-tensors NVFP4)",
    "mxfp4": "MXFP4",
}

TEMPLATES: dict[str, str | Callable[[dict], str]] = {
    "prediction.engine": _engine,
    "params.counted": "parameters: elements of the tensors a checkpoint stores (trainable weights, and stored tensors "
    "no gradient updates, as DeepSeek's router bias e_score_correction_bias); tied embedding counted once; buffers "
    "computed at load (RoPE frequencies, masks) excluded",
    "params.no_scales": "{dtype}: every parameter, the embedding and LM head included, at the element's bits with "
    "no scales (the source documents' convention); a checkpoint stores scales and keeps the embedding and LM head "
    "in 16 bits: weigh it as nvfp4, mxfp4 or fp8_block, or read its config.json",
    "params.quantization_unread": "the config's quantization_config ({method}) is not a format this tool models: "
    "weights weighed at torch_dtype {dtype}; give the format with --weights-dtype where the command takes it",
    "params.catalog_pending": "not yet matched to its checkpoint, the count above is the reader's: the offline "
    "catalog marks this entry pending: {reason}",
    "params.read_generically": "model_type {model_type} read generically: not checked against a checkpoint of this "
    "family",
    "params.n_gemm": "N_gemm: matmul weights a token passes through (no embedding lookup, norms or biases; LM head "
    "included)",
    "params.weight_bytes": "weight bytes: every parameter at {bits:g} bits ({dtype}); GB = 10^9 B, GiB = 2^30 B",
    "params.weight_bytes_mixed": lambda p: (
        (
            f"weight bytes: the matmul weights in {p['format']} at {p['quantized']:g} bits with their scales, the "
            f"embedding, LM head, router and vectors kept in {p['kept_dtype']}, as AWQ and GPTQ checkpoints keep them "
            "(asked, the embedding and LM head are stored in the format too)"
            if p["method"].startswith("weight-only") and p.get("quantized") is not None
            else f"weight bytes: the matmul weights in {p['format']} with each tensor's scales, the embedding, LM "
            f"head, router and vectors kept in {p['kept_dtype']}, as block-scaled checkpoints keep them (DeepSeek-V3's "
            "FP8 blocks, gpt-oss's MXFP4; asked, the embedding and LM head are stored in the format too)"
            if p["method"].startswith("block-scaled")
            else f"weight bytes: the checkpoint's formats by tensor group ({p['method']}): matmul weights in "
            f"{p['format']} with their scales, {p['kept']}embedding, LM head, router and vectors in {p['kept_dtype']}"
        )
        + f"; {p['bits']:.4g} bits per parameter on average; GB = 10^9 B, GiB = 2^30 B"
    ),
    "params.active": "active: all parameters less the routed experts a token skips (k of E per MoE layer)",
    "params.kv_shared_unloaded": "checkpoint total: Google's files also store k_proj, v_proj and k_norm for the "
    "KV-shared layers, which read an earlier layer's cache; transformers ignores them on load "
    "(Gemma4TextModel._keys_to_ignore_on_load_unexpected), so the total above, and every weight byte, leaves them out",
    "params.mtp": lambda p: (
        "MTP modules reported apart from the main model"
        + ("; the checkpoint also stores copies of the embedding and LM head with them" if p.get("copies") else "")
    ),
    "kv.dtype": "KV dtype {dtype} ({bits} bits per element); bytes exact; KiB/MiB/GiB = 2^10/2^20/2^30 B, "
    "kB/MB/GB = 10^3/10^6/10^9 B",
    "kv.context": "context = tokens held per sequence (128K = 131,072; 128000 as written); kv, state and conv state "
    "bytes are per sequence, the total, MHA-equivalent and all-layers-full-attention bytes are for the whole batch",
    "kv.linear_state": "linear-attention state: recurrent n_v x d_k x d_v per layer (seed 003 §05); the causal-conv "
    "state is listed apart",
    "kv.window": "sliding-window layers keep at most W = {window:,} tokens",
    "kv.mamba_state": "Mamba-2 state: H x P x N SSM state and (H P + 2 G N) x (kernel - 1) conv state per layer per "
    "sequence, at the KV dtype (engines often keep the SSM state in fp32)",
    "kv.indexer": "DeepSeek Sparse Attention: each attention layer also keeps the lightning indexer's key, "
    "{bytes} B per token (FP8 with one fp32 scale per 128 elements), whatever the KV dtype",
    "kv.indexer_block": "MiniMax Sparse Attention: each of the {layers} sparse layers also keeps the lightning "
    "indexer's key, {bytes} B per token (bf16: vLLM's MiniMaxM3IndexerCache default), whatever the KV dtype",
    "attention.block_sparse": "MiniMax Sparse Attention: each query of a sparse layer attends to its top {blocks} "
    "blocks of {block} keys and {local} local block(s), at most {keys:,} keys (an upper bound: a local block among "
    "the top blocks makes it fewer); the lightning indexer scores every key it may see",
    "attention.sparse": "DeepSeek Sparse Attention: each query attends to at most index_topk = {topk:,} keys; the "
    "lightning indexer scores every key it may see",
    "kv.short_conv_state": "short-convolution state (LFM2): d x (kernel - 1) conv state per layer per sequence, "
    "no per-token cache",
    "kv.chunk": "chunked-attention layers keep at most C = {chunk:,} tokens (the current chunk; counted as "
    "min(context, C), the reserve an engine needs)",
    "warning.context_over_max": lambda p: (
        f"note: {_contexts(p)} tokens exceed {p['model']}'s max_position_embeddings "
        f"({p['max_position_embeddings']:,}): figures at such lengths are "
        "hypothetical"
    ),
    "warning.does_not_fit": _does_not_fit,
    "memory.physical_fit": lambda p: (
        f"fits: the weights and the step's KV within the fullest GPU's physical memory ({p['gpu']}: "
        f"{p['capacity_bytes'] / 1e9:,.1f} GB, "
        + ("as the card reports it" if p.get("reported", True) else "the datasheet's: the GPU spec gives no memory_gib")
        + "), a bound; an engine admits fewer "
        "(vLLM uses 90% of it by default, less activations and CUDA graphs): `llm-cost fit` gives the batch "
        "a deployment runs"
    ),
    "flops.counting": "2 FLOPs per multiply-add; weight FLOPs = 2 x weights used per token (routed experts: k of E)",
    "flops.not_counted": "norms, activations, softmax and residual adds not counted",
    "attention.causal": "attention: causal (each token sees itself and all before it)",
    "attention.full": "attention: full (S x S, an upper bound)",
    "logits.all": "LM head on every position",
    "logits.last": "LM head on the last position of each sequence",
    "mla.form": "MLA attention in the {form} form",
    "mla.absorbed_decode": "MLA: decode attention in the absorbed form, on the cached latent and RoPE key",
    "decode.step": "decode step: {batch} sequence(s), each adding 1 token after {context:,} cached tokens; the new "
    "token attends to itself and every cached token",
    "decode.bytes_read": lambda p: (
        "bytes: matmul weights used + norm/bias vectors + one embedding row per sequence"
        + (
            f" at {p['bits']:g} bits"
            if p.get("embedding_bits") in (None, p["bits"])
            else f", each in its stored format ({p['bits']:g} bits per parameter on average, the embedding rows at "
            f"{p['embedding_bits']:g})"
        )  # an attacker: '8.02532 bits' beside DeepSeek-V3's embedding rows read at 16
        + f", KV read at {p['kv_bits']} bits + the new K/V written; activations not counted"
    ),
    "decode.bytes_resident": "bytes: every stored weight once (resident, the source documents' convention) at "
    "{bits:g} bits, KV read at {kv_bits} bits + the new K/V written; activations not counted",
    "prefill.step": "prefill = time to first token of {batch} prompt(s) of {seq:,} tokens, nothing else running",
    "prefill.bytes": "bytes: the matmul weights, vectors and embedding rows read once + the K/V written; activations "
    "not counted",
    "gpu.peak": "peak {tflops:g} TFLOP/s dense {dtype}, bandwidth {tb_s:g} TB/s (10^12 B/s), from the GPU spec",
    "time.bound_and_estimate": "a bound is max(FLOPs / peak, bytes / bandwidth) per GPU, summed over pipeline "
    "stages, plus communication at link bandwidth; an estimate divides peak by MFU and "
    "bandwidth by MBU (collectives stay at link bandwidth, no latency: the prediction adds "
    "it)",
    "layout.step": "layout TP {tp} x PP {pp} x DP {dp} = {gpus} GPUs, EP {ep}: figures per GPU, summed over the "
    "stages; the sequences split over {dp} replica(s); collectives over {link} at {link_gb_s:g} GB/s "
    "per direction, no latency",
    "layout.pp_network": lambda p: (
        f"pipeline stages over {p['nodes']} nodes: the send into stage(s) "
        f"{', '.join(str(h) for h in p['hops'][:8])}{', ...' if len(p['hops']) > 8 else ''} leaves a node and goes "
        "over the network (stages in order on consecutive GPUs, as Megatron-LM and vLLM place them)"
    ),
    "layout.expert_parallel": "EP {ep}: each GPU holds {experts:g} whole experts per MoE layer and multiplies the "
    "rows every replica routes to them (balanced routing: its own replica's share of the routed work); in the "
    "all-to-all a GPU sends its share of its replica's tokens (split over {tp} TP rank(s)) to k experts, (EP - 1)/EP "
    "of them remote, and the outputs of its experts back",
    "layout.sharding": "sharding as Megatron-LM/vLLM (see llm_cost.model.layout); MTP modules not loaded",
    "layout.memory": "weights at {bits:g} bits, KV at {kv_bits} bits; {sequences} sequence(s) per replica",
    "moe.expected_experts": "MoE: routed expert weights read = expected distinct experts E(1 - (1 - k/E)^B) per "
    "layer (uniform independent routing)",
    "moe.weights": "weights at {bits:g} bits; GB = 10^9 B, GiB = 2^30 B",
    "moe.read_per_step": "read per step = matmul weights used + norm vectors + B embedding rows; the source documents "
    "count every non-routed parameter instead",
    "moe.ep": "EP over {ep} GPU(s): ({experts} + {redundant} redundant)/{ep} experts each; non-expert weights "
    "replicated",
    "moe.all_to_all": "all-to-all per token per MoE layer: dispatch k x d at {dispatch_bits} bits, combine k x d at "
    "{combine_bits} bits; TP-{tp} ring all-reduce moves 2(n-1)/n x d x 2 B (BF16)",
    "moe.gemm_ridge": "expert GEMM intensity = 2 x rows / bytes per weight; ridge of {gpu} at {dtype}",
    "checkpoint.stored_safetensors": "stored: every tensor in the safetensors headers (weights never read); scale "
    "tensors and rotary inv_freq buffers are not parameters",
    "checkpoint.stored_gguf": "stored: every tensor in the GGUF file's tensor infos, bytes per ggml type as stored "
    "(block scales included in each quantised type's bytes)",
    "checkpoint.matched_by_role": "matched by role: projections (fused q/k/v and gate/up merged), pooled block norms, "
    "router, embedding, LM head, vision tower, MTP layers; a role is reported when its "
    "element totals differ",
    "fit.dtypes": lambda p: (
        (
            f"weights: the matmul weights at {p['quantized']:g} bits, the embedding, LM head and vectors in "
            f"{p['kept_dtype']} ({p['bits']:.4g} bits per parameter on average)"
            if p.get("quantized") is not None
            else f"weights: every parameter at {p['bits']:g} bits"
            if float(p["bits"]).is_integer()
            else f"weights: {p['bits']:.6g} bits per parameter on average, the checkpoint's own mix of formats"
        )
        + f"; KV at {p['kv_bits']} bits per element"
    ),
    "fit.whole_sequences": lambda p: (
        "max batch and context use whole sequences: batch x kv(context) <= KV budget"
        + (f", each sequence in {p['block_tokens']}-token blocks" if p["block_tokens"] > 1 else "")
    ),
    "capacity.documents": "memory: the source documents' convention, {memory_gb:g} GB = {memory_bytes:,} B "
    "(datasheet, 10^9 B per GB), all of it for weights and KV; no workspace, no reserve",
    "capacity.policy": _capacity_policy,
    "serve.model": "times: {label}, each step from its operators; steady-state continuous batching, decoding "
    "sequences spread evenly over their output positions; TPOT = mean time between output tokens",
    "serve.queueing": lambda p: (
        "TTFT = waiting + the prompt's own prefill; the prefill server as M/D/1 "
        "(Pollaczek-Khinchine)"
        + (
            f", the decode slots as M/D/c (Sakasegawa, Allen-Cunneen) at {p['qps']:g} requests/s, Poisson arrivals"
            if p["qps"] is not None
            else "; no rate given: each configuration saturated at its concurrency (closed loop, as benchmarks run)"
        )
    ),
    "serve.concurrency": "max concurrency: the sequences a replica's KV cache holds at their steady-state lengths "
    "(input + a uniformly spread share of the output, each in whole blocks); `fit` counts every "
    "sequence at its full context",
    "serve.few_kv_heads": "note: the chosen decode steps hold sequences x KV heads per GPU = {in_flight}, below profile "
    "{profile}'s decode-attention saturation ({saturation:g}); its kernels split no KV cache, so "
    "an engine with split-KV (flash-decoding) reads it faster: TPOT here is pessimistic",
    "serve.cost": lambda p: (
        "no price given (--usd-per-gpu-hour): no dollar figures"
        if p["price"] is None
        else f"cost: ${p['price']:g} per GPU-hour x GPUs over requests served; $/M out charges all of it to "
        "output tokens, as a simulated plan does (so plans and modes compare on it); the split beside it shares it "
        "between input (prompt) and output tokens by what prefill adds (aggregated: the chunks' share of step "
        "time; disaggregated: the prefill pool's share of GPUs)"
    ),
    "warning.serve_tail": lambda p: (
        f"warning: {p['metric']} {p['statistic']} is estimated from {p['requests']:,} simulated requests, "
        f"{p['beyond']:.3g} of them beyond it (a plan's runs take at most {p['most']:,} for their tail, to answer "
        "in seconds): it stands on the run's slowest few requests and can read low; simulate the chosen configuration "
        "alone with more requests (--requests, up to 20,000) to check it"
    ),
    "serve.stages_cut": lambda p: (
        f"warning: the workload's requests ({p['requests']:,}) end it before its stages do "
        f"({p['expected']:,.0f} arrivals expected from their rates and durations): stage {p['stage']} of "
        f"{p['stages']} is cut after about {p['after_s']:,.0f} s of its {p['duration_s']:,.0f} s"
        + (" and the later ones never run" if p["stage"] < p["stages"] else "")
        + "; give requests of at least the expected arrivals, or shorten the stages"
    ),
    "serve.cost_simulated": lambda p: (
        "no price given (--usd-per-gpu-hour): no dollar figures"
        if p["price"] is None
        else f"cost: ${p['price']:g} per GPU-hour x GPUs over the output tokens served (at one Poisson rate the "
        "deployment keeps up with, those offered: the rate x the mean output, what it serves in the long run, so "
        "the band's ends cost the same and the GPUs a plan needs carry its uncertainty): all GPU time charged to "
        "output tokens (prompts not priced apart; --batch, the analytic form, splits it between input and output)"
    ),
    "serve.band": lambda p: (
        (
            f"band: re-simulated (same seed, same traffic) with every step's time x"
            f"{p['fast']:.2f} at the fast end (a step never under its Roofline bound) and x{p['slow']:.2f} at the slow "
            "end: the serving prediction's spread on "
            + (
                f"{p['runs']} published {p['engine']} runs at saturation (all prompts at once or a fixed "
                "concurrency, the regime of a plan without a rate: its users at the engine's cap; ITL P50 "
                f"measured/predicted p{p['percentiles'][0]}..p{p['percentiles'][1]} = "
                f"{p['p_low']:.2f}..{p['p_high']:.2f}, the percentiles at which a band drawn from the other sources "
                "held 80% of a source's runs; under Poisson load, --qps, the band is that of runs under load"
                if p.get("closed_loop")
                else f"{p['runs']} measured {p['engine']} runs (mean ITL measured/predicted p{p['percentiles'][0]}..p"
                f"{p['percentiles'][1]} = {p['p_low']:.2f}..{p['p_high']:.2f}"
            )
            + (
                f"; the simulator's steps were slower than measured even at the p{p['percentiles'][1]}, so the nominal "
                "figure is the band's slow end, a pessimistic one"
                if p["p_high"] < 1 and p["slow"] <= 1
                else ""
            )
            + (
                f"; {p['gpu']} is one of their GPUs"
                if p.get("measured", p["transfer"] == 1)
                else f"; {p['gpu']} was not among their GPUs but is of a kernel family one of them is (its steps "
                "timed by that family's fitted parameters), so not widened"
                if p["transfer"] == 1
                else f"; {p['gpu']} was not among their GPUs, so the spread is widened {p['transfer']:.3g}x about "
                "its centre, on both sides (how much wider the step-time fit's held-out band is for transferred "
                "predictions than for fitted ones)"
            )
            + f"; steps timed by profile {p['profile']}); the fast-end and slow-end rows are one run each, as are the "
            "JSON's *_low (fast end; for rates, the slow end) and *_high figures: a schedule is only nearly monotone in "
            "step time, so where the two ends come out within sampling noise of each other they may cross; each "
            "statistic's interval runs from the least to the greatest "
            "end of the three runs' sampling intervals (the band and the sampling together)"
        )
        if p.get("source") == "serving-runs"
        else (
            f"band: re-simulated (same seed, same traffic) with every step's time x the p10/p90 factor for its "
            f"shape of profile {p['profile']} (engine {p['engine']}, {p['kind']}: the held-out errors of {p['rows']} "
            f"rows of such predictions, leave-one-source-out; wider outside the fitted batches and contexts): "
            f"x{p['fast_low']:.2f}"
            + (f"-{p['fast_high']:.2f}" if f"{p['fast_high']:.2f}" != f"{p['fast_low']:.2f}" else "")
            + f" at the fast end, x{p['slow_low']:.2f}"
            + (f"-{p['slow_high']:.2f}" if f"{p['slow_high']:.2f}" != f"{p['slow_low']:.2f}" else "")
            + " at the slow end (a fast-end step never under its Roofline bound); the fast-end and slow-end rows are one run each (tokens/s highest and $/M lowest at "
            "the fast end); each statistic's interval runs from the least to the greatest end of the three runs' "
            "sampling intervals (the band and the sampling together)"
        )
    ),
    "serve.band_again": lambda p: (
        f"band on {p['gpu']}: x{p['fast']:.2f} at the fast end and x{p['slow']:.2f} at the slow end, from the same "
        f"{p['runs']} runs"
        + (
            f" ({p['gpu']} is one of their GPUs"
            if p.get("measured", p["transfer"] == 1)
            else f" ({p['gpu']} was not among them but is of a kernel family one of them is, so not widened"
            if p["transfer"] == 1
            else f" ({p['gpu']} was not among their GPUs: the spread widened {p['transfer']:.3g}x about its centre"
        )
        + f"; steps timed by profile {p['profile']}); otherwise as the band above"
    ),
    "serve.analytic_band": lambda p: (
        f"band: TTFT, TPOT, tokens/s and $/M of the chosen configuration scaled linearly by the p10/p90 "
        f"step-time factors of profile {p['profile']} (engine {p['engine']}, {p['kind']}: the held-out errors of "
        f"{p['rows']} rows of {p['sources']} sources, leave-one-source-out"
        + (f", widened {p['transfer']:.2f}x outside the fitted batches and contexts" if p["transfer"] != 1 else "")
        + f") for its typical decode step ({p['batch']:,} sequences "
        f"at {p['context']:,} tokens): x{p['low']:.2f} / x{p['high']:.2f}"
        + (
            f" (TTFT: x{p['ttft_low']:.2f} / x{p['ttft_high']:.2f}, its prefill step)"
            if (p["ttft_low"], p["ttft_high"]) != (p["low"], p["high"])
            else ""
        )
        + "; the fast end never under the configuration's Roofline bound (aggregated)"
        "; analytic scaling: the queueing formulas are not re-evaluated at the band's ends (the simulated plan "
        "re-simulates them)"
    ),
    "warning.no_steady_window": lambda p: (
        f"warning: no steady window: fewer than {p['least']:,} requests (a tenth of the run, at least 10) completed "
        f"between the first completion and the last arrival, so the rates, goodput and cost are the whole run's ({p['requests']:,} "
        f"requests over {p['span_s']:.3g} s): a burst, not a sustained load; give more requests or a longer trace"
    ),
    "warning.refused_rows": "warning: {rows:,} of the trace's {of:,} rows are longer than max_model_len {limit:,} "
    "(prompt and output) and are refused, as vLLM refuses them; max_model_len {longest:,} (the model's context at "
    "most) replays them all",
    "warning.tight_memory": lambda p: (
        f"warning: {p['what']} leaves {p['headroom'] / 1e9:,.2f} GB = {p['headroom'] / 2**30:,.2f} GiB free on its "
        "fullest GPU, under "
        f"{p['bound'] / 2**30:g} GiB: activations past the estimate, allocator fragmentation, CUDA graphs or NCCL "
        "buffers larger than the reserve can run it out of memory; give it more memory (GPUs, fewer bits, a shorter "
        "context or batch)"
    ),
    "warning.train_bubble": lambda p: (
        f"warning: the pipeline bubble is {p['bubble']:.0%} of the compute: {p['micro_batches']:,} micro-batch(es) "
        f"per step on each of {p['dp']:,} replicas fill {p['pp']} stages poorly, the global batch is small for the "
        f"cluster; a global batch of {p['sequences']:,} sequences ({p['tokens']:,} tokens) keeps it to at "
        f"most {p['target']:.0%} with this layout ({p['layout']}, every knob given) or fewer GPUs"
        + (
            f", though at that batch this layout needs {p['need_bytes'] / 2**30:,.1f} GiB of "
            f"{p['room_bytes'] / 2**30:,.1f} GiB per GPU (1F1B keeps more micro-batches' activations in flight): "
            "a plan at that batch picks its own layout"
            if p["need_bytes"] is not None
            else ""
        )
    ),
    "warning.itl_stalls": lambda p: (
        f"warning: ITL P90 {fmt_seconds(p['itl_p90_s'])} is {p['ratio']:.1f}x the TPOT target ({p['tpot']}) the run "
        "meets: TPOT is each request's mean gap between tokens, and the steps that also run other requests' "
        + (
            f"prompt chunks (chunked prefill, up to {p['chunk']:,} tokens a step: max_num_batched_tokens) stall its "
            "decodes unseen; an ITL target (itl_s) bounds every gap, a smaller max_num_batched_tokens shortens the stalls"
            if p["chunk"]
            else "whole prompts (no chunked prefill) stall its decodes unseen; an ITL target (itl_s) bounds every gap, "
            "chunked prefill shortens the stalls"
        )
    ),
    "warning.serve_overloaded": lambda p: (
        f"warning: overloaded: {p['served']:,.3g} of {p['offered']:,.3g} requests/s offered are served, "
        f"{p['waiting']:,.1f} wait on average: the backlog grows through the run, so its latencies and percentiles "
        "grow with its length (--requests) and describe no steady state; lower the rate, or add replicas "
        "(--qps without a layout plans them)"
    ),
    "warning.serve_goodput": lambda p: (
        f"warning: goodput {p['goodput']:,.3g} of {p['served']:,.3g} requests/s served: fewer than half the requests "
        "meet every target on their own (goodput, DistServe's, counts a request only when its own TTFT, TPOT and E2E "
        f"are each within their targets); the most missed, {p['metric']} {fmt_seconds(p['seconds'])}, is missed by "
        f"{p['missed']:.0%} of the requests on their own"
        + (
            ", though its target bounds the mean, which holds while many requests exceed it: a percentile target "
            "(p90:) sizes for most requests"
            if p["statistic"] == "mean"
            else ""
            if p["missed"] >= 0.5
            else ": each target holds for most requests, but fewer meet them all at once"
        )
    ),
    "serve.cached_prompt": lambda p: (
        f"prefix cache: {p['cached']:,} of each {p['prompt']:,}-token prompt priced as found in the cache (the hit "
        "rate the traffic implies, or a simulation's own), so a prefill computes the other "
        f"{p['prompt'] - p['cached']:,}, attending to the cached ones"
    ),
    "serve.no_band": "no error band: steps are timed by {label}, which has no held-out residuals",
    "serve.foreign_kernels": lambda p: (
        f"warning: {p['engine']}'s scheduler with steps timed by profile {p['profile']}, fitted under "
        f"{p['kernels']}: that engine's kernels under this one's batching; the simulator schedules vllm, sglang and trtllm only, so for {p['kernels']}'s own serving give a layout and "
        "a concurrency (the analytic form), or a profile fitted under the engine scheduled"
    ),
    "serve.simulated": lambda p: (
        f"simulated: {p['engine']}'s scheduler step by step (continuous batching, chunked prefill, prefix caching, "
        + (
            "admission reserving each request's prompt and maximum output, GUARANTEED_NO_EVICT: no preemption"
            if p["engine"] == Engine.TRTLLM
            else "retraction"
            if p["engine"] == Engine.SGLANG
            else "preemption"
        )
        + f"), each step timed by {p['label']}; "
        + (
            f"{p['replicas']} replicas simulated side by side, each request sent at its arrival to the replica "
            f"{p['router']} routing picks (llm_cost/simulate/routers.py, router_of)"
            if p.get("simulated", 1) > 1
            else f"{p['replicas']} replicas, one simulated standing for all: an open loop's every {_ordinal(p['replicas'])} "
            "arrival (Poisson arrivals and independently drawn lengths make any replica's share alike), or a closed "
            "loop's users split evenly, each kept to its replica (under least-loaded routing every replica keeps its "
            "share in flight, as the one simulated does)"
            if p["replicas"] > 1
            else "one replica"
        )
        + (f"; {p['requests']:,} requests simulated" if p.get("requests") is not None else "")
        + "; percentiles linear between order statistics; sampling intervals: 99% by batch means over the requests "
        "in arrival order (an open loop's batches each at least the requests in flight at once), widened sqrt 2 to "
        "hold another seed's figure (llm_cost/simulate/intervals.py; none for "
        "ITL, whose gaps within a step are not independent); goodput: requests/s meeting every target (DistServe); "
        "rates (served, goodput, tokens/s, $) and occupancy over the steady window, from the completion ending the "
        "warm-up (the first; a closed loop's users-th) to the last one before the last request is sent (warm-up and "
        "drain left out; the whole run's rates are in the JSON's simulation.summary); latencies, their percentiles and "
        "the targets' verdict are over every request, the drain's lighter steps included, so they can read better "
        "than the steady load gives (goodput, counted in the window, then falls below them)"
    ),
    "serve.moe_layouts": lambda p: (
        "MoE layouts weighed: "
        + "; ".join(
            f"{label}: "
            + (
                f"best {f['what']} at {f['per_gpu']:,.1f} output tokens/s per GPU"
                + ("" if f["meets"] is not False else ", missing a target")
                + f" ({f['source']}"
                + (", which judges no target: none of this kind was simulated)" if f["meets"] is None else ")")
                if f
                else "no layout of this kind held the model or reached the screen's frontier"
            )
            for label, f in (("attention DP x EP", p["attention_dp"]), ("TP (with or without EP)", p["tp"]))
        )
    ),
    "serve.gpus_at_nominal": "GPUs: {planned:,} at the band's slow end, on which the plan is chosen; at nominal "
    "step times {gpus:,} ({layout} replicas) would meet the targets: at one rate the step-time band moves the GPUs a "
    "plan needs, not its cost",
    "serve.compare_tie": lambda p: (
        f"{', '.join(p['gpus'])} tie at ${p['usd']:,.3f} per million output tokens: "
        + (
            "every price given is 0"
            if p["usd"] == 0
            else "at one rate a plan's cost is its GPUs' price over the tokens offered, and theirs are the same"
            if p.get("rate", True)
            else "their GPUs' price over the tokens each serves comes out the same"
        )
        + "; choose on latency, availability or power"
    ),
    "serve.closed_loop_rate": "no rate given: the requests/s is what a closed loop of users, one per sequence the "
    "engine runs (each sending its next request when its last completes, as benchmarks run), sustains within the "
    "targets; requests arriving "
    "at random (Poisson) at that rate come in bursts and queue, so the same GPUs carry less of them: size a rate "
    "with --qps",
    "serve.simulated_plan": lambda p: (
        f"plan: the analytic search screens the aggregated configurations (disaggregated prefill and decode pools "
        "are planned by --mode disaggregated, analytic: the simulator runs one engine per replica); "
        f"{p['simulated']} runs of its frontier are simulated ("
        + (
            f"at most {p['per_layout']} per layout and replica count, then, where none at its best concurrency "
            "meets the targets, its other frontier points and lower caps on max_num_seqs (falling by sqrt 2), by falling "
            "cap, until one does, then those above it at another chunk that no run says must miss (a TTFT missed "
            "says nothing of a larger chunk, a TPOT nothing of a smaller one); with a TTFT target, where one at its "
            "best concurrency meets them, its layout's "
            "own frontier points of more sequences (points another layout beats on both tokens/s per user and per "
            "GPU, which TTFT is not one of), bisected for the last that meets them"
            if p.get("qps") is None
            else "each layout from the fewest replicas the screen says carry the rate: down one at a time while "
            "the targets still hold, else doubled until they hold and bisected to the fewest that meet them, up to the "
            "GPU budget"
        )
        + (
            f"), {p['requests']:,} requests per replica (at least 3 rounds of its users: warm-up, a steady round, "
            "drain)"
            if p.get("qps") is None
            else f"), {p['requests']:,} requests in all (at least 100 per replica), raised to the precision its "
            "sampling intervals need (10 batches of the requests in flight at once, and 10 requests beyond the highest "
            "percentile a target bounds; set by the traffic and the screen, not the seed), a run of the plan's "
            "requests first settling a target missed even at its interval's lower end"
        )
        + (
            ", each at the band's slow end and judged at the upper end of its sampling intervals (the pessimistic "
            "side of both), then ranked; the chosen one simulated again at the band's fast end, and at nominal step "
            "times unless the slow end is x1 (its own run is then the nominal one)"
            if p.get("timed_at") == "slow end"
            else ", judged at the upper end of its sampling intervals, and ranked"
        )
    ),
    "serve.pcie_tp": lambda p: (
        f"tensor parallelism over PCIe: {p['gpu']} has no GPU-to-GPU link, so TP {p['tp']} runs its all-reduces "
        f"over PCIe {p['gen']}.0 x16 at {p['gb_s']:g} GB/s per direction"
        + (
            f", each call also paying {p['latency_s'] * 1e6:.1f} us of latency (the profile's)"
            if p.get("latency_s")
            else " (no latency per call in this time model)"
        )
        + "; one host of up to 8 cards, as vLLM and SGLang run them"
    ),
    "launch.replicas": lambda p: (
        f"the command runs one replica of {p['gpus']} GPU(s); run {p['replicas']} of them behind a load balancer, "
        + (
            f"{p['per_node']} per node of {p['node']} GPUs, each on its own GPUs and port: "
            f"CUDA_VISIBLE_DEVICES={p['first']} for the first"
            + (f", {p['second']} for the second, and so on" if p.get("second") else "")
            if p.get("per_node")
            else "each on its own GPUs"
        )
    ),
    "launch.layer_partition": lambda p: (
        f"warning: the plan weighs {p['layers']} layers over {p['pp']} stages as {p['split']} (the earlier stages "
        "take the remainder); trtllm-serve takes no split, and if TensorRT-LLM gives the remainder to other stages "
        "the fullest GPU holds another stage's weights than the plan's"
    ),
    "launch.attention_dp": lambda p: (
        f"the command runs one replica of {p['gpus']} GPUs as {p['ranks']} attention data-parallel ranks of TP "
        f"{p['tp']} (each its own sequences and KV cache) with the routed experts spread over EP {p['ep']}"
        + (
            f"; it spans {p['nodes']} nodes: run it on the first, and on each other node the same command with "
            + (
                "vLLM's headless, data-parallel-start-rank (its first rank) and data-parallel-address (the first "
                "node) options"
                if p["engine"] == Engine.VLLM
                else "SGLang's node-rank (its index) and, on all of them, dist-init-addr (the first node's address)"
            )
            if p["nodes"] > 1
            else ""
        )
        + (f"; run {p['replicas']} such replicas behind a load balancer" if p["replicas"] > 1 else "")
    ),
    "launch.data_parallel": "the command runs all {replicas} replicas of {gpus} GPU(s) as data-parallel ranks on "
    "one node of {node} GPUs (one server balancing requests over them)",
    "launch.unsupported": "warning: vLLM's model registry (vllm/model_executor/models/registry.py @ {commit}) "
    "has no architecture of model_type {model_type}; this version may not run it (that snapshot is older: check "
    "vLLM's supported models)",
    "launch.support_unchecked": "model support unchecked: {engine}'s model registry is not checked for model_type "
    "{model_type}",
    "launch.max_model_len_capped": "max model length: {tokens:,} tokens, what one replica's KV cache holds, not "
    "{asked:,}: an engine refuses to start when one request of max_model_len tokens does not fit (vLLM: "
    "vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory, 'To serve at least one request with the "
    "models's max seq len ...'); give more GPUs, an fp8 KV cache or a shorter max_model_len",
    "launch.other_engine": "warning: the plan was simulated under {planned}'s scheduler, not {emitted}'s; plan with "
    "engine {emitted} to simulate the engine this command launches",
    "fit.beyond_model_context": "largest context: the KV room holds {tokens:,} tokens per sequence, more than the "
    "model's {limit:,} (max_position_embeddings); a server caps a request at the model's length",
    "serve.requests_raised": "requests: {asked:,} asked, {simulated:,} simulated: a plan runs at least 3 rounds of "
    "each candidate's users (warm-up, a steady round, drain) and the requests its targets' percentiles need",
    "launch.model_id": "model id: {name} is the spec's name; give the checkpoint's Hugging Face repo id or path",
    "launch.quantized_sibling": lambda p: (
        f"model id: {p['repo']}, the catalog's checkpoint of {p['model']} in the weights format planned (the engine "
        "reads the format from its config, no flag)"
        + (f"; it keeps its {p['kept']}, so plan {p['name']} by name to price its own formats" if p["kept"] else "")
    ),
    "launch.checkpoint_keeps": "the checkpoint keeps its {kept} in {dtype}, which the plan prices in {format} "
    "with the rest: leave weights_dtype out to price the checkpoint as stored",
    "launch.checkpoint_quantized": lambda p: (
        f"weights at {p['bits']:g} bits ({p['format'] or 'bits per weight'}): the command serves {p['repo']} as "
        f"stored ({p['stored']}), which is not the plan's weights; serve a checkpoint stored in "
        + _CHECKPOINT_MAKERS.get(p["format"], "that format")
        + " instead (the engine reads its format from the checkpoint's config, no flag)"
    ),
    "launch.kv_dtype_unexpressed": "warning: {engine}'s {setting} has no {asked} KV cache: the command "
    "{asks}, so the engine keeps its KV cache in {keeps}; {engine} takes {accepted}",
    "launch.trtllm_quantized": "TensorRT-LLM takes FP8 weights and an FP8 KV cache from a prequantized "
    "checkpoint (ModelOpt's hf_quant_config.json) or --extra_llm_api_options (kv_cache_config: dtype: fp8), not "
    "from a trtllm-serve flag",
    "serve.fp32_checkpoint": "{model}'s checkpoint is stored in float32; it is served in bf16 (16 bits per "
    "weight), as engines load it by default (vLLM's dtype auto); give --weights-dtype fp32 to serve 32 bits",
    "warning.serve_memory": "warning: does not fit: the KV cache holds {holds:,} of these {asked:,} sequences per "
    "replica; the figures are hypothetical (fewer sequences, more GPUs or fewer bits fit)",
    "serve.implicit_ttft": "no TTFT target: at a rate the plan keeps the P99 TTFT within {bound:g} s (the fewest "
    "replicas that carry the rate on average still let a queue grow); give --ttft for another bound",
    "warning.serve_ttft": lambda p: (
        f"warning: the chosen plan's {p.get('what', 'P99 TTFT')} is {fmt_seconds(p['ttft'])}, past "
        f"{fmt_seconds(p['bound'])}; "
        f"requests wait {fmt_seconds(p['queue'])} on average before they are scheduled"
        + (
            " (saturated: every slot is busy, so each request waits for one to free); give --ttft or --qps"
            if p["saturated"]
            else "; give --ttft, more --gpus or a lower --qps"
        )
    ),
    "serve.compare": "each GPU planned for the same traffic and targets; the cheapest per million output tokens at "
    "the slow end of its band (the pessimistic side, on which each plan is chosen) is marked (GPUs without a price "
    "or a plan are not ranked)",
    "serve.percentile_screen": lambda p: (
        "warning: the analytic search reads each percentile target as a bound on the mean, a looser target (a P99 "
        "TTFT is several times its mean under load), so its plan can "
        + (
            "miss the percentile; the simulator runs aggregated replicas only, so a disaggregated plan's "
            "percentiles are never judged: read its figures against mean targets, or search aggregated serving "
            "too (modes) to simulate"
            if p.get("disaggregated")
            else "differ from the simulated plan's and miss the percentile; leave out analytic to judge the "
            "percentiles themselves"
        )
    ),
    "weight_flops.gemm": "weight FLOPs per token = 2 x N_gemm (the matmul weights a token uses, LM head included; "
    "a MoE's active experts)",
    "weight_flops.non_embedding": "weight FLOPs per token = 2 x (N - input embedding), N the parameters a token uses "
    "(a MoE's active ones), seed 003's '2 x 7.5B'",
    "weight_flops.total": "weight FLOPs per token = 2 x N (every parameter a token uses: a MoE's active ones), seed 003 "
    "§05's 70B convention",
    "context.attention_per_token": "attention per token: a token seeing s positions (itself included), QK^T + AV in "
    "every softmax layer",
    "context.prefill": _context_prefill,
    "context.document_prefill": _document_prefill,
    "context.scores": "KV at {kv_bits} bits per element; scores S = n_q x s^2 elements at 2 B (BF16) per layer",
    "spec.closed_forms": "E = (1 - alpha^(gamma+1)) / (1 - alpha); speedup E / (gamma c + 1) assumes verifying "
    "gamma + 1 tokens costs one step (memory-bound); fully compute-bound: E / (gamma + 1 + gamma c)",
    "spec.step_model": "step model on {gpu} ({gpus} GPU(s) per replica; {dtype} compute), context {context:,}: each "
    "step's operators timed by the {time_model}, as roofline times them; weights at {bits:g} bits; verification "
    "scores every drafted position; draft = gamma x c x baseline step; tokens/s of one replica",
    "spec.knee_and_break_even": "knee: smallest batch whose verify step is compute-bound; break-even: smallest batch "
    "with speedup below 1x; both searched up to batch {limit:,}",
    "train.flops": _train_flops,
    "train.mfu": "peak {tflops:g} TFLOP/s dense {dtype} per GPU; MFU = 6 N D / (GPU-seconds x peak)",
    "train.energy": lambda p: (
        f"energy = GPU-hours x {p['power_w']:g} W x PUE {p['pue']:g}" + (" (the GPU's TDP)" if p["tdp"] else "")
    ),
    "train.activations_not_modelled": "activations not reported: {reason}",
    "train_plan.step": "predicted from the operators by {time_model}, as {framework} runs them: backward GEMMs 2x "
    "the forward, FlashAttention's backward 2.5x, the elementwise kernels (norms, activations, RoPE, MoE routing "
    "and permutation, loss, FP8 casts) at the profile's streaming bandwidth, grouped expert GEMMs at the rows each "
    "expert gets, TP with sequence parallelism, ring attention, interleaved 1F1B (bubble (p-1)/(m v)), each "
    "collective on the link its ranks span (the framework's rank order)",
    "train_plan.mfu": "MFU against {tflops:g} TFLOP/s dense {dtype} per GPU: 6 N D, and 3 x the forward "
    "operators' FLOPs (causal attention and every LM-head position) 'with attention'; HFU adds recompute "
    "and FlashAttention's recomputation",
    "train_plan.memory": lambda p: (
        "memory: "
        + (
            "BF16 weights + FP32 gradients on every rank, FP32 master and Adam sharded by the distributed optimizer "
            "(Megatron's 6 + 12/DP B per parameter); activations of the model's block (Korthikanti et al. 2022; "
            "FlashAttention keeps no scores); the last stage's BF16 logits and their gradient"
            if p["framework"] == "megatron"
            else "16 B per parameter sharded over the FSDP group (FP32 weights, gradients, Adam), each layer gathered "
            "in BF16 while it runs (ZeRO-2: the stage's layers gathered for the whole step); activations as torchtitan's "
            "checkpointing keeps them; the last stage's FP32 log-softmax and its gradient"
        )
        + f"; activations x the micro-batches 1F1B keeps in flight; {p['reserve_gib']:g} GiB reserve; GiB = 2^30 B"
    ),
    "train_plan.uneven_stages": lambda p: (
        f"pipeline: PP{p['pp']} splits the {p['layers']} layers unevenly, {p['more']} stage"
        f"{'s' if p['more'] > 1 else ''} of {p['most']} and the rest of {p['fewest']}; the stages of {p['most']} set "
        "the step"
        + (
            " (Megatron-Core runs an uneven split with --decoder-first-pipeline-num-layers and "
            "--decoder-last-pipeline-num-layers, its middle stages equal: a split it takes may differ from this one)"
            if p["framework"] == "megatron"
            else ""
        )
    ),
    "train_plan.band": lambda p: (
        f"error band {p['low'] - 1:+.0%} / {p['high'] - 1:+.0%} of the step time: the 10th and 90th percentiles of "
        + (
            "measured / predicted over this GPU family's published runs"
            if p.get("own", True)
            else "measured / predicted, end by end the widest of the GPU families with published runs: borrowed, as "
            "this GPU's family has none, so nothing measures how far off its own prediction is"
        )
        + ", each predicted out of source (with the factors fitted on the other sources)"
        + (
            ", each at the layout the free search picks, as this plan's was (the search prices some layouts too "
            "cheaply: its picks run slower than predicted more often than faster)"
            if p["searched"]
            else ", each at its published layout"
        )
        + " (llm_cost/data/training-efficiency.json; llm-cost validate --training)"
        + (f"; x{p['widen']:.3g} for a layout outside their range" if p["widen"] > 1 else "")
    ),
    "train_plan.left_out": "left out: load imbalance across experts, SM contention of overlapped communication, "
    "stragglers (Llama 3 saw 1-2% diurnal throughput swings), failures and restarts (Llama 3: 466 interruptions in "
    "54 days, over 90% effective training time), checkpoint writes, data loading",
    "train_validate.method": "out of source: each row predicted with the training factors fitted on the other "
    "sources' rows only (scripts/fit_training.py), in tokens/s per GPU (rows quoted in TFLOP/s converted by their "
    "source's FLOP convention); 'published' keeps the knobs the source states and searches the rest, 'search' "
    "searches every knob for the same cluster, batch, dtype and framework (but those its version could not vary: "
    "llm-foundry's FSDP alone, the 2021 Megatron-LM's DDP and full recompute); error = predicted / measured - 1, "
    "the search's predicted tokens/s of its own pick against the published layout's measured (a pick the model "
    "prices faster than the authors' tuned layout counts as error too)",
    "train_validate.reserved": "not used: torchtitan's performance documents, Megatron-Bridge's performance "
    "summaries and archive, the BLOOM-176B training README, DeepSeek-V3's GPU-hours (reserved for independent "
    "checking)",
    "train.state": (
        "state: 16 B per parameter, mixed-precision Adam as the ZeRO paper counts it (Rajbhandari et al. 2020 §3.1: "
        "BF16 weights + gradients, FP32 master, Adam m, v; DeepSpeed's layout); decimal units (GB = 10^9 B). "
        "The plan without --mfu uses its framework's own accounting (Megatron's distributed optimizer: 6 + 12/DP "
        "B per parameter with FP32 gradients) and GiB"
    ),
    "train.layout_state": "TP {tp} x PP {pp} x DP {dp}; state 16 B per parameter (2 weights + 2 gradients + 12 FP32 "
    "master and Adam), ZeRO-{zero} over DP",
    "train.layout_activations": "activations: {formula} per layer x {layers} layers x {pp} micro-batch(es) in flight "
    "(1F1B), s = {seq:,}, micro-batch {micro_batch}",
    "train.layout_memory": lambda p: (
        "memory "
        + (
            f"{p['memory_gib']:g} GiB (as the card reports it)"
            if p["memory_gib"] is not None
            else f"{p['memory_gb']:g} GB (datasheet, 10^9 B)"
        )
        + f" = {p['capacity_bytes']:,} B less {p['reserve_bytes']:,} B reserve; smallest "
        f"DP searched at ZeRO-{p['zero']}"
    ),
    "image.resize": "Qwen2-VL smart_resize: sides rounded to multiples of 28 px, pixels within [3,136, 12,845,056] "
    "(the transformers processor's defaults, for video frames too; qwen-vl-utils caps video frames "
    "lower); 14 px patches, {connector} connector",
    "image.encoder_flops": "encoder FLOPs: 2 x ViT block parameters x patches + 4 L n_p^2 d (full attention), seed "
    "003 §09; patch embedding and merger listed apart",
    "image.decoder_prefill.gemm": (
        "decoder prefill: the blocks' GEMMs (2 x N_gemm less the LM head, which runs on text positions) per image"
        " token + causal attention among them"
    ),
    "image.decoder_prefill.non_embedding": "decoder prefill: 2 x (N - embedding) per image token + causal attention",
    "image.decoder_prefill.total": "decoder prefill: 2 x N per image token (seed 003 §09) + causal attention",
    "image.bits": "KV and encoder output at {kv_bits} bits; MiB = 2^20 B",
    "rope.wavelength": "lambda_i = 2 pi base^(2i/d) tokens per turn, theta_i = base^(-2i/d) rad per token, i = 0 .. "
    "d/2-1, d = rotated dims (seed 003 §03; RoFormer)",
    "rope.unseen_phases": "a pair completes a turn within L tokens when lambda_i <= L; 'unseen phases': a pair that "
    "did not turn within the train length ({train:,}) reaches a larger angle at the target "
    "({target:,}) than in training",
    "rope.methods": "alpha = target / train = {alpha:.6g}; PI: positions x 1/alpha (Chen et al. 2023); NTK-aware: "
    "base' = base x alpha^(d/(d-2)) (bloc97); dynamic NTK: alpha = max(1, length / train), evaluated "
    "at the target length, where it equals NTK-aware (seed 001)",
    "rope.yarn_ramp": "YaRN ramp as in seed 001, linear in the wavelength between train/beta_fast and train/beta_slow "
    "(beta_fast {beta_fast:g}, beta_slow {beta_slow:g}); the paper ramps linearly in rotations "
    "L/lambda, transformers in the pair index; same end points",
    "rope.yarn_attention": "YaRN attention: mscale = 0.1 ln(alpha) + 1 (the paper's sqrt(1/t)); logits x mscale^2 "
    "(transformers scales cos and sin by mscale); seed 001 writes t = 0.1 ln(alpha) + 1 and "
    "logits x 1/sqrt(t), which would shrink them",
    "rope.abf": "ABF (Llama 3): only a larger base (500000 instead of 10000), no rescaling: compare with --base 500000",
    "rope.llama3": "llama3 scaling (transformers _compute_llama3_parameters, Meta apply_scaling): λ below "
    "orig/high_freq_factor kept, above orig/low_freq_factor x factor, smooth in between; factor "
    "{factor:g} and orig {original:,} come from rope_scaling, not from alpha",
    "rope.head_dim_override": "--head-dim {dims} overrides the model's {model_dims} rotated dims",
    "rope.mla": "MLA: RoPE turns only the decoupled qk_rope_head_dim = {dims} dims of each query/key head ({nope} "
    "more dims carry no position)",
    "rope.partial": "partial rotary: {factor:g} of head_dim {head_dim} = {dims} dims are rotated",
    "rope.base_override": "--base {base} overrides the model's rope_theta {model_base}",
    "rope.model_scaling": _model_scaling,
    "prediction.profile": _profile,
    "calibration.method": lambda p: (
        f"error = predicted / measured - 1; {p['method']}: each row predicted by the profile fitted without it"
        + (
            " and the other rows of its source"
            if p["method"] == "leave-one-source-out"
            else " (one source: its rows share a setup, so this says less than leaving a source out)"
        )
        + f"; median |error| {p['median']:.1%}"
    ),
    "calibration.sources": "error = predicted / measured - 1 of each row predicted by the fit WITHOUT its source (one "
    "publication: a blog post, a vendor table, an issue's benchmark), whose family or engine then takes the nearest "
    "fitted one's parameters as a prediction does (held out as: fitted, combined or transferred); in band: inside the "
    "p10-p90 band drawn from the OTHER sources' held-out errors (each source weighing the same), as a source the "
    "project never had would meet it; a bound is never above a measurement",
    "calibration.at_bound": "{owner}: the fit ended at a bound of {parameters} (the data push it past what is "
    "physical: a missing term, or rows that disagree)",
    "calibration.check_only": "{source}: checked only (no fit, whole or fold, uses its rows): {reason}",
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


def _ordinal(n: int) -> str:
    """``2nd``, ``3rd``, ``11th``, ``21st``: English ordinals."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
