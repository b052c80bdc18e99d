"""Commands about compute, memory and serving: flops, roofline, fit, activations, context, moe, spec."""

from __future__ import annotations

import dataclasses
from enum import Enum
from typing import Annotated, Any, Optional

import typer

from llm_cost.cli.options import (
    GPU_HELP,
    MAX_GRID_POINTS,
    MODEL_HELP,
    Csv,
    Dp,
    Ep,
    Gpu,
    Json,
    KvDtype,
    OptionalGpu,
    Plot,
    Pp,
    Tp,
    fraction,
    gigabytes,
    integer,
    integer_grid,
    non_negative,
    option,
    token_grid,
    tokens,
)
from llm_cost.cli.program import app, emit, emit_csv, parse_layout, weight_bits
from llm_cost.cli.step_options import (
    AttentionOpt,
    BitsPerWeight,
    ComputeDtype,
    ContextGrid,
    GpuMemoryUtilization,
    GroupSize,
    LogitsOpt,
    Mbu,
    MemoryOpt,
    Mfu,
    MlaOpt,
    NetworkGbS,
    ProfileOpt,
    ReserveGb,
    SeqGrid,
    WeightBytesOpt,
    WeightFlopsOpt,
    WeightsDtype,
    memory_policy,
)
from llm_cost.core.choices import (
    ActivationFormula,
    AttentionMask,
    Logits,
    MemoryConvention,
    MLAForm,
    Recompute,
    WeightBytes,
    WeightFlops,
)
from llm_cost.core.errors import InputError
from llm_cost.core.types import Dtype, Phase, StorageDtype


class FlopsPhase(str, Enum):
    """The forward pass ``flops`` counts."""

    prefill = "prefill"
    decode = "decode"


#: Largest --max-gpus: a layout search of more GPUs than this is a typing mistake (the search
#: itself stops at the largest layout a model has, TP x L).
MAX_SEARCH_GPUS = 1_000_000


@app.command()
def flops(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    phase: Annotated[
        FlopsPhase,
        typer.Option("--phase", case_sensitive=False, help="prefill (a prompt) or decode (one token after --context)."),
    ] = FlopsPhase.prefill,
    seq: SeqGrid = "128,1024,8K",
    context: ContextGrid = "8K",
    batch: Annotated[
        int, option("--batch", "-b", parse=integer("--batch"), metavar="INTEGER", help="Sequences per forward pass.")
    ] = 1,
    attention: AttentionOpt = AttentionMask.CAUSAL,
    logits: LogitsOpt = Logits.LAST,
    mla: MlaOpt = MLAForm.PLAIN,
    as_json: Json = False,
    as_csv: Csv = False,
) -> None:
    """FLOPs of a forward pass: per-layer linear and attention FLOPs, LM head, totals, over lengths.

    Examples: llm-cost flops llama3-8b --phase prefill --seq 8K;
    llm-cost flops llama3-8b --phase decode --context 8K
    """
    from llm_cost.report import flops as view
    from llm_cost.specs.load import load_model
    from llm_cost.workload.flops import forward_flops

    spec = load_model(model)
    if phase is FlopsPhase.prefill:
        result = [forward_flops(spec, n, 0, batch, attention, logits, mla) for n in seq]
    else:
        result = [forward_flops(spec, 1, c, batch, attention, Logits.LAST, mla) for c in context]
    if as_csv:
        emit_csv(result)
        return
    emit(result, as_json, view.render, spec.display_name, Phase(phase.value))


@app.command()
def roofline(
    model: Annotated[
        Optional[str], typer.Argument(help=MODEL_HELP + " Default when a step option is given: llama3-8b.")
    ] = None,
    gpu: Gpu = "h100",
    dtype: ComputeDtype = None,
    weights_dtype: WeightsDtype = None,
    bits_per_weight: BitsPerWeight = None,
    group_size: GroupSize = None,
    kv_dtype: Annotated[
        Optional[StorageDtype],
        typer.Option("--kv-dtype", case_sensitive=False, help="KV-cache element dtype (default bf16)."),
    ] = None,
    phase: Annotated[
        Optional[FlopsPhase],
        typer.Option(
            "--phase",
            case_sensitive=False,
            help="decode (one step at --batch/--context, the default) or prefill (--seq: the time to first token).",
        ),
    ] = None,
    batch: Annotated[
        Any,
        option(
            "--batch",
            "-b",
            parse=integer_grid("--batch"),
            metavar="LIST",
            help="Sequences per step (default 1): a value, a list 1,8,64, a doubling range "
            "1..256 or a range in steps 1..1000:10; a list prints one row per point.",
        ),
    ] = None,
    context: Annotated[
        Any,
        option(
            "--context",
            "-c",
            parse=token_grid("--context", 0),
            metavar="LIST",
            help="Decode: tokens already cached per sequence (default 0; 8K = 8,192): a "
            "value, a list, a doubling range 1K..128K or a range in steps "
            "1K..8K:1K.",
        ),
    ] = None,
    seq: Annotated[
        Any,
        option(
            "--seq",
            "-s",
            parse=token_grid("--seq"),
            metavar="LIST",
            help="Prefill: prompt length (default 8K): a value, a list or a range.",
        ),
    ] = None,
    logits: Annotated[
        Optional[Logits],
        typer.Option(
            "--logits",
            case_sensitive=False,
            help="Prefill: LM head on the last position (default, serving) or on all (training, the documents' count).",
        ),
    ] = None,
    mfu: Mfu = None,
    mbu: Mbu = None,
    weight_bytes: Annotated[
        Optional[WeightBytes],
        typer.Option(
            "--weight-bytes",
            case_sensitive=False,
            help="Decode: read (matmul weights + one embedding row per "
            "sequence, the default) or resident (every stored weight, as "
            "the documents).",
        ),
    ] = None,
    ops: Annotated[
        bool, typer.Option("--ops", help="Per-operator table (FLOPs, bytes, intensity, bound, estimate).")
    ] = False,
    tp: Tp = None,
    pp: Pp = None,
    ep: Ep = None,
    dp: Dp = None,
    network_gb_s: NetworkGbS = None,
    profile: ProfileOpt = None,
    as_json: Json = False,
    as_csv: Csv = False,
    plot: Plot = None,
) -> None:
    """Roofline: ridge points of a GPU; with a model (or any step option), a decode step's or a prefill's
    bound, estimate and calibrated prediction (--profile), on one GPU or a layout (--tp/--pp/--ep/--dp).

    Examples: llm-cost roofline --gpu h100; llm-cost roofline llama3-8b --gpu h100 --batch 1 --context 2K;
    llm-cost roofline --gpu h100 --batch 1,8,64 --context 2K (model llama3-8b);
    llm-cost roofline llama3-70b --tp 4 --batch 32 --context 4K; llm-cost roofline llama3-8b --phase prefill --seq 8K
    """
    from llm_cost.analyses.roofline import decode_steps, prefill_step
    from llm_cost.model.layout import ONE_GPU
    from llm_cost.perf.profile import load_profile
    from llm_cost.perf.ridge import default_compute_dtype, ridge_points
    from llm_cost.perf.timemodel import DEFAULT_MBU, DEFAULT_MFU, DEFAULT_NETWORK_GB_S
    from llm_cost.report import roofline as view
    from llm_cost.specs.load import load_gpu, load_model

    layout = parse_layout(tp, pp, ep, dp)
    step_options = (
        phase,
        batch,
        context,
        seq,
        logits,
        mfu,
        mbu,
        weight_bytes,
        kv_dtype,
        weights_dtype,
        bits_per_weight,
        group_size,
        network_gb_s,
        layout,
        profile,
    )
    wants_step = model is not None or ops or any(v is not None for v in step_options)
    prefill = phase is FlopsPhase.prefill
    wrong = [
        flag
        for flag, v in (
            {"--context": context, "--weight-bytes": weight_bytes}.items()
            if prefill
            else {"--seq": seq, "--logits": logits}.items()
        )
        if v is not None
    ]
    if wrong:
        instead = "--seq (the prompt length)" if prefill else "--context (tokens already cached)"
        raise InputError(
            f"{', '.join(wrong)} {'do' if len(wrong) > 1 else 'does'} not apply to --phase {'prefill' if prefill else 'decode'}; "
            f"use {instead}"
        )
    g = load_gpu(gpu)
    if dtype is not None:
        g.peak_flops(dtype)  # an unsupported dtype is an error before anything else
    chosen = load_profile(profile) if profile is not None else None
    weight_bits("bf16", weights_dtype, bits_per_weight, group_size)  # conflicting flags: refused before the model
    if not wants_step:
        if plot is not None:
            raise InputError("--plot: the Roofline picture is of a step; name a MODEL or give --batch/--context")
        if as_csv:
            emit_csv(ridge_points(g))
            return
        emit(ridge_points(g), as_json, view.render_ridges, g.display_name)
        return
    spec = load_model(model or "llama3-8b")
    bits = weight_bits(spec.torch_dtype, weights_dtype, bits_per_weight, group_size)
    compute = dtype or default_compute_dtype((weights_dtype or spec.torch_dtype).lower(), g)
    common = dict(
        dtype=compute,
        weight_bits=bits,
        kv_bits=(kv_dtype or StorageDtype.BF16).bits,
        mfu=mfu or DEFAULT_MFU,
        mbu=mbu or DEFAULT_MBU,
        layout=layout or ONE_GPU,
        network_gb_s=network_gb_s or DEFAULT_NETWORK_GB_S,
        profile=chosen,
    )
    batches = batch or [1]
    lengths = (seq or [8192]) if prefill else (context or [0])
    points = len(batches) * len(lengths)
    if points > MAX_GRID_POINTS:
        raise InputError(f"--batch x --context: {points:,} points is more than the {MAX_GRID_POINTS:,} a sweep takes")
    if prefill:
        result: Any = [
            prefill_step(spec, g, s, b, logits=logits or Logits.LAST, **common) for b in batches for s in lengths
        ]
        render = view.render_prefill
    else:
        result = decode_steps(
            spec,
            g,
            [(b, c) for b in batches for c in lengths],
            weight_bytes=weight_bytes or WeightBytes.READ,
            detail=not as_csv or plot is not None,
            **common,
        )
        render = view.render_decode
    if plot is not None:
        from llm_cost.report import plots

        if len(result) > 1:
            raise InputError("--plot: the Roofline picture is of one step; give one --batch and --context")
        plots.roofline(result[0], spec.display_name, g.display_name, plot)
    if as_csv:
        emit_csv(result)
        return
    if len(result) > 1:
        emit(result, as_json, view.render_rows, spec.display_name, g.display_name, model is not None)
        return
    emit(
        result[0],
        as_json,
        render,
        spec.display_name,
        g.display_name,
        model is not None,
        ops,
        context is None and not prefill,
    )


@app.command()
def fit(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    gpu: Gpu = "h100",
    context: Annotated[
        int,
        option(
            "--context", "-c", parse=tokens("--context"), metavar="TOKENS", help="Tokens per sequence (8K = 8,192)."
        ),
    ] = 8192,
    batch: Annotated[
        int, option("--batch", "-b", parse=integer("--batch"), metavar="INTEGER", help="Sequences held at once.")
    ] = 1,
    weights_dtype: WeightsDtype = None,
    bits_per_weight: BitsPerWeight = None,
    kv_dtype: KvDtype = StorageDtype.BF16,
    memory: MemoryOpt = MemoryConvention.PHYSICAL,
    gpu_memory_utilization: GpuMemoryUtilization = None,
    reserve_gb: ReserveGb = None,
    memory_gb: Annotated[
        Optional[int],
        option(
            "--memory-gb",
            parse=gigabytes("--memory-gb"),
            metavar="GB",
            help="Memory per GPU, GB (10^9 B), instead of the GPU spec's capacity.",
        ),
    ] = None,
    max_gpus: Annotated[
        int,
        option(
            "--max-gpus",
            parse=integer("--max-gpus"),
            metavar="INTEGER",
            help="Largest layout to search for the smallest that fits.",
        ),
    ] = 64,
    tp: Tp = None,
    pp: Pp = None,
    ep: Ep = None,
    dp: Dp = None,
    as_json: Json = False,
    plot: Plot = None,
) -> None:
    """What fits: one GPU's capacity (largest batch/context, KV budget) and the smallest multi-GPU layouts.

    With --tp/--pp/--ep/--dp: that layout's per-GPU weights, KV, headroom and decode step.
    Examples: llm-cost fit llama3-8b --gpu h100; llm-cost fit llama3-70b --gpu h100 --context 8K;
    llm-cost fit deepseek-v3 --gpu h200 --weights-dtype fp8; llm-cost fit llama3-70b --tp 2
    """
    from llm_cost.analyses.deployment import FitReport, deployment, smallest_layouts
    from llm_cost.analyses.memory import fit as fit_
    from llm_cost.report import fit as view
    from llm_cost.specs.load import load_gpu, load_model

    weight_bits("bf16", weights_dtype, bits_per_weight)
    if memory_gb is not None and memory_gb < 10**9:
        raise InputError(f"--memory-gb: {memory_gb / 1e9:g} is below 1 GB")
    if max_gpus > MAX_SEARCH_GPUS:
        raise InputError(f"--max-gpus: {max_gpus:,} is more than the {MAX_SEARCH_GPUS:,} GPUs a search covers")
    layout = parse_layout(tp, pp, ep, dp)
    spec, g = load_model(model), load_gpu(gpu)
    if memory_gb is not None:
        g = dataclasses.replace(g, memory_gb=memory_gb / 1e9, memory_gib=memory_gb / 2**30)
    policy = memory_policy(memory, gpu_memory_utilization, reserve_gb)
    bits = weight_bits(spec.torch_dtype, weights_dtype, bits_per_weight)
    from llm_cost.perf.ridge import default_compute_dtype

    compute = default_compute_dtype((weights_dtype or spec.torch_dtype).lower(), g)
    if model.strip().lower().endswith(".gguf") and weights_dtype is None and bits_per_weight is None:
        from pathlib import Path

        from llm_cost.analyses.checkpoint import gguf_weight_bits

        bits = gguf_weight_bits(spec, Path(model))
    if layout is not None:
        result = FitReport(
            None, [], max_gpus, deployment(spec, g, layout, batch, context, bits, kv_dtype.bits, policy, compute)
        )
    else:
        result = FitReport(
            fit_(spec, g, context, batch, bits, kv_dtype.bits, policy),
            smallest_layouts(spec, g, batch, context, bits, kv_dtype.bits, policy, max_gpus, compute),
            max_gpus,
            None,
        )
    if plot is not None:
        from llm_cost.model.kv import kv_cache
        from llm_cost.report import plots

        if result.single_gpu is None:
            raise InputError("--plot: the memory picture is of one GPU; leave out --tp/--pp/--ep/--dp")
        sweep = kv_cache(spec, [2**k for k in range(10, 21)], kv_dtype.bits, kv_dtype.value, batch)
        plots.fit(result, sweep, spec.display_name, g.display_name, plot)
    emit(result, as_json, view.render, spec.display_name, g.display_name)


@app.command()
def activations(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    seq: Annotated[
        int,
        option("--seq", "-s", parse=tokens("--seq"), metavar="TOKENS", help="Training sequence length (8K = 8,192)."),
    ] = 8192,
    micro_batch: Annotated[
        int,
        option("--micro-batch", parse=integer("--micro-batch"), metavar="INTEGER", help="Sequences per micro-batch."),
    ] = 1,
    formula: Annotated[
        ActivationFormula,
        typer.Option(
            "--formula",
            case_sensitive=False,
            help="model (the model's own block, no dropout) or gpt (Korthikanti "
            "et al.'s GPT block, sbh(34 + 5as/h), as the source "
            "documents).",
        ),
    ] = ActivationFormula.MODEL,
    as_json: Json = False,
    as_csv: Csv = False,
) -> None:
    """Training activation memory per layer (Korthikanti et al.), without and with recompute.

    Example: llm-cost activations llama3-8b --seq 8K
    """
    from llm_cost.analyses.memory import activation_memory
    from llm_cost.report import fit as view
    from llm_cost.specs.load import load_model

    spec = load_model(model)
    result = [activation_memory(spec, seq, micro_batch, r, formula=formula) for r in Recompute]
    if as_csv:
        emit_csv(result)
        return
    emit(result, as_json, view.render_activations, spec.display_name)


@app.command()
def context(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    contexts: Annotated[
        Any,
        option(
            "--context",
            "-c",
            parse=token_grid("--context"),
            metavar="LIST",
            help="Contexts in tokens: a list 8K,128K or a doubling range 8K..1M.",
        ),
    ] = "8K,32K,128K,1M",
    gpu: Gpu = "h100",
    mfu: Mfu = None,
    mbu: Mbu = None,
    dtype: Annotated[
        Dtype, typer.Option("--dtype", case_sensitive=False, help="Compute dtype for the peak.")
    ] = Dtype.BF16,
    kv_dtype: KvDtype = StorageDtype.BF16,
    weight_flops: WeightFlopsOpt = WeightFlops.GEMM,
    logits: LogitsOpt = Logits.LAST,
    as_json: Json = False,
    as_csv: Csv = False,
) -> None:
    """Long context: attention vs weight FLOPs, crossover, prefill (TTFT), KV per request, score-matrix size.

    Example: llm-cost context llama3-70b --context 8K,128K --weight-flops total
    """
    from llm_cost.analyses.context import context_analysis
    from llm_cost.perf.timemodel import DEFAULT_MBU, DEFAULT_MFU
    from llm_cost.report import context as view
    from llm_cost.specs.load import load_gpu, load_model

    spec, g = load_model(model), load_gpu(gpu)
    result = context_analysis(
        spec,
        contexts,
        g,
        mfu or DEFAULT_MFU,
        dtype,
        weight_flops,
        kv_dtype.bits,
        mbu or DEFAULT_MBU,
        logits,
    )
    if as_csv:
        emit_csv(result.rows)
        return
    emit(result, as_json, view.render, spec.display_name)


@app.command()
def moe(
    model: Annotated[str, typer.Argument(help=MODEL_HELP)],
    batch: Annotated[
        Any,
        option(
            "--batch",
            "-b",
            parse=integer_grid("--batch"),
            metavar="LIST",
            help="Decode batches (tokens per step): a list 1,32,128 or a range 1..256.",
        ),
    ] = "1,32,128",
    weights_dtype: WeightsDtype = None,
    ep: Annotated[
        int,
        option(
            "--ep",
            parse=integer("--ep", 1, 2**16),
            metavar="INTEGER",
            help="Expert-parallel GPUs (must divide experts + redundant experts).",
        ),
    ] = 1,
    redundant_experts: Annotated[
        int,
        option(
            "--redundant-experts",
            parse=integer("--redundant-experts", 0, 2**16),
            metavar="INTEGER",
            help="Extra expert copies spread over the EP GPUs.",
        ),
    ] = 0,
    dispatch_dtype: Annotated[
        StorageDtype, typer.Option("--dispatch-dtype", case_sensitive=False, help="All-to-all dispatch dtype.")
    ] = StorageDtype.FP8,
    combine_dtype: Annotated[
        StorageDtype, typer.Option("--combine-dtype", case_sensitive=False, help="All-to-all combine dtype.")
    ] = StorageDtype.BF16,
    tp: Annotated[
        int,
        option(
            "--tp",
            parse=integer("--tp", 1, 2**16),
            metavar="INTEGER",
            help="Tensor-parallel degree of the all-reduce comparison.",
        ),
    ] = 8,
    prompt: Annotated[
        int,
        option(
            "--prompt",
            parse=tokens("--prompt"),
            metavar="TOKENS",
            help="Prompt tokens for the all-to-all volume of one prefill.",
        ),
    ] = 4096,
    gpu: Annotated[
        Optional[str], typer.Option("--gpu", "-g", help=GPU_HELP + " Adds the expert GEMM ridge analysis.")
    ] = None,
    dtype: ComputeDtype = None,
    as_json: Json = False,
    as_csv: Csv = False,
    plot: Plot = None,
) -> None:
    """MoE: total / active / read-per-step parameters, expected experts per batch, EP memory, all-to-all.

    Example: llm-cost moe deepseek-v3 --batch 1,32,128 --weights-dtype fp8 --ep 32 --gpu h100
    """
    from llm_cost.analyses.moe import moe_analysis
    from llm_cost.report import moe as view
    from llm_cost.specs.load import load_gpu, load_model

    spec = load_model(model)
    bits = weight_bits(spec.torch_dtype, weights_dtype, None)
    g = load_gpu(gpu) if gpu else None
    result = moe_analysis(
        spec,
        batch,
        bits,
        ep,
        redundant_experts,
        dispatch_dtype.bits,
        combine_dtype.bits,
        tp,
        prompt,
        g,
        dtype,
    )
    if plot is not None:
        from llm_cost.report import plots

        plots.moe(result, spec.display_name, plot)
    if as_csv:
        emit_csv(result.rows)
        return
    emit(result, as_json, view.render, spec.display_name)


@app.command("spec")
def spec_(
    alpha: Annotated[
        float,
        option(
            "--alpha",
            parse=fraction("--alpha", allow_zero=True),
            metavar="FRACTION",
            help="Acceptance rate per drafted token, in [0, 1] (0.8 or 80%).",
        ),
    ],
    gamma: Annotated[
        int, option("--gamma", parse=integer("--gamma"), metavar="INTEGER", help="Tokens drafted per round (>= 1).")
    ],
    model: Annotated[Optional[str], typer.Argument(help=MODEL_HELP + " With --gpu: the step model.")] = None,
    c: Annotated[
        Optional[float],
        option(
            "--c",
            parse=non_negative("--c", percent=True, maximum=100),
            metavar="NUMBER",
            help="Cost of one draft step as a fraction of a target step.",
        ),
    ] = None,
    mtp: Annotated[
        bool, typer.Option("--mtp", help="Use the model's MTP module as the draft (c from its weights).")
    ] = False,
    gpu: OptionalGpu = None,
    batch: Annotated[
        Any,
        option(
            "--batch",
            "-b",
            parse=integer_grid("--batch"),
            metavar="LIST",
            help="Step model: batches (default 1,8,32,64,128,256); needs MODEL and --gpu.",
        ),
    ] = None,
    context: Annotated[
        int,
        option(
            "--context",
            parse=tokens("--context", 0),
            metavar="TOKENS",
            help="Cached tokens per sequence in the step model (8K = 8,192).",
        ),
    ] = 0,
    mfu: Mfu = None,
    mbu: Mbu = None,
    dtype: ComputeDtype = None,
    weight_bytes: WeightBytesOpt = WeightBytes.READ,
    as_json: Json = False,
    as_csv: Csv = False,
    plot: Plot = None,
) -> None:
    """Speculative decoding: expected tokens per round, speedup, the knee and break-even batches, the step model.

    Examples: llm-cost spec --alpha 0.8 --gamma 4 --c 0.1;
    llm-cost spec llama3-8b --gpu h100 --alpha 0.8 --gamma 4 --c 0.1 --batch 64,128 --context 2K;
    llm-cost spec deepseek-v3 --mtp --alpha 0.85 --gamma 1
    """
    from llm_cost.analyses.speculative import speculative
    from llm_cost.perf.ridge import default_compute_dtype
    from llm_cost.perf.timemodel import DEFAULT_MBU, DEFAULT_MFU
    from llm_cost.report import speculative as view
    from llm_cost.specs.load import load_gpu, load_model

    if mtp and c is not None:
        raise InputError("give --c or --mtp (which derives c from the model's MTP module), not both")
    if batch is not None and gpu is None:
        raise InputError("--batch is for the step model: give a MODEL and --gpu too")
    if as_csv and gpu is None:
        raise InputError("--csv: the rows are the step model's, one per batch; give a MODEL and --gpu too")
    spec = load_model(model) if model else None
    hw = load_gpu(gpu) if gpu else None
    if hw is not None and spec is None:
        raise InputError("--gpu needs a MODEL for the step model (e.g. llm-cost spec llama3-8b --gpu h100 ...)")
    compute = dtype
    if hw is not None and spec is not None:
        compute = dtype or default_compute_dtype(spec.torch_dtype, hw)
        hw.peak_flops(compute)
    result = speculative(
        alpha,
        gamma,
        c,
        spec,
        hw,
        batch,
        mfu or DEFAULT_MFU,
        context,
        compute or Dtype.BF16,
        weight_bytes,
        mtp,
        mbu or DEFAULT_MBU,
    )
    if plot is not None:
        from llm_cost.report import plots

        plots.speculative(result, plot)
    if as_csv:
        emit_csv(result.rows)
        return
    emit(result, as_json, view.render)
