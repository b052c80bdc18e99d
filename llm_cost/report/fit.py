"""Tables for ``llm-cost fit`` and ``llm-cost activations``."""

from __future__ import annotations

from llm_cost.analyses.deployment import Deployment, FitReport
from llm_cost.analyses.memory import Activations, Fit
from llm_cost.analyses.roofline import DecodeStep
from llm_cost.core.choices import ActivationFormula, MemoryConvention
from llm_cost.core.notes import Note
from llm_cost.core.units import fmt_iec, fmt_int, fmt_seconds, fmt_si
from llm_cost.report.base import (
    bytes_exact,
    fmt_band,
    fmt_step_prediction,
    print_conventions,
    print_facts,
    print_table,
)


def render(con, r: FitReport, display_name: str, gpu_name: str) -> None:
    """One GPU's capacity and the smallest layouts, or a given layout."""
    if r.deployment is not None:
        render_deployment(con, r.deployment, display_name, gpu_name)
        return
    assert r.single_gpu is not None
    render_single(con, r.single_gpu, display_name, gpu_name)
    if not r.smallest_layouts:
        con.print(
            f"[bold red]no layout of up to {r.max_gpus} x {gpu_name} holds the model at this batch and "
            f"context[/bold red] (raise --max-gpus, lower the bits per weight or the context)"
        )
        return
    first = r.smallest_layouts[0]
    rows = [
        [
            f"{d.layout.gpus}",
            f"TP {d.layout.tp} x PP {d.layout.pp}" + (f", EP {d.layout.ep}" if d.layout.ep > 1 else ""),
            fmt_si(d.per_gpu.max_weight_bytes),
            fmt_si(d.kv_bytes_per_gpu),
            fmt_si(d.headroom_bytes),
            fmt_seconds(d.step.bound_s),
            fmt_seconds(d.step.estimate_s),
            fmt_seconds(d.step.predicted_s) if d.step.predicted_s is not None else "-",
            fmt_band(d.step.predicted_s, d.step.predicted_low_s, d.step.predicted_high_s)
            if d.step.predicted_s is not None
            else "-",
            d.step.bound,
        ]
        for d in r.smallest_layouts
    ]
    print_table(
        con,
        f"smallest layouts: {first.layout.gpus} x {gpu_name} at the least (batch {first.batch}, "
        f"context {first.context:,})",
        [
            ("GPUs", "right"),
            ("layout", "left"),
            ("weights / GPU", "right"),
            ("KV / GPU", "right"),
            ("headroom / GPU", "right"),
            ("decode bound", "right"),
            (f"estimate (MFU {first.step.mfu:.0%}, MBU {first.step.mbu:.0%})", "right"),
            (f"prediction ({first.step.profile or 'no profile'})", "right"),
            ("band", "right"),
            ("bound by", "left"),
        ],
        rows,
        caption="fullest GPU shown; TP within one node; decode step per GPU summed over the stages, "
        "communication included",
    )
    # what the prediction column rests on (an attacker: a profile transferred to another GPU was said
    # in the JSON only), then each listed layout's own warning of too little headroom (fit --tp/--pp
    # prints it for one)
    rests_on = [n for n in first.step.conventions if n.code == "prediction.profile"][:1]
    print_conventions(
        con, rests_on + [n for d in r.smallest_layouts for n in d.conventions if n.code == "warning.tight_memory"]
    )


def render_deployment(con, d: Deployment, display_name: str, gpu_name: str) -> None:
    """One layout: per-GPU memory per stage, KV per token, the decode step and communication."""
    L = d.layout
    con.print(
        f"[bold]{display_name} on {L.gpus} x {gpu_name}: TP {L.tp} x PP {L.pp} x DP {L.dp}, EP {L.ep}; "
        f"batch {d.batch} ({d.sequences_per_replica} per replica), context {d.context:,}[/bold]"
    )
    _stage_table(con, d)
    print_facts(con, [*_memory_facts(d), *_step_facts(d.step)])
    print_conventions(con, d.conventions + d.step.conventions)


def _stage_table(con, d: Deployment) -> None:
    """Each pipeline stage's layers, weights, KV per token and memory on one GPU."""
    p = d.per_gpu
    rows = [
        [str(i), str(n), fmt_si(w), f"{fmt_int(int(k))} B", fmt_si(u)]
        for i, (n, w, k, u) in enumerate(zip(p.stage_layers, p.weight_bytes, p.kv_bytes_per_token, d.stage_used_bytes))
    ]
    print_table(
        con,
        "per GPU, by pipeline stage",
        [
            ("stage", "right"),
            ("layers", "right"),
            ("weights", "right"),
            ("KV per token", "right"),
            ("weights + KV", "right"),
        ],
        rows,
    )


def _memory_facts(d: Deployment) -> list[tuple[str, str]]:
    """KV heads per GPU, the memory, what the fullest GPU uses, its headroom and the concurrency."""
    p = d.per_gpu
    facts = []
    if p.kv_heads_per_gpu is not None:
        facts.append(
            (
                "KV heads per GPU",
                f"{p.kv_heads_per_gpu}"
                + (f" (each replicated on {p.kv_replication} GPUs)" if p.kv_replication > 1 else ""),
            )
        )
    facts += [
        (
            "memory per GPU" + _capacity_label(d.room.convention, d.conventions),
            bytes_exact(d.room.capacity_bytes),
        ),
        (f"usable at {d.room.utilization:.0%}", bytes_exact(d.room.usable_bytes)),
        (
            "fullest GPU uses",
            bytes_exact(d.used_bytes)
            + (" (weights, KV, workspace, reserve)" if d.room.workspace_bytes or d.room.reserve_bytes else ""),
        ),
        ("headroom", bytes_exact(d.headroom_bytes))
        if d.fits
        else ("[bold red]short by[/bold red]", bytes_exact(d.shortfall_bytes)),
        (
            f"max concurrency at context {d.context:,}",
            f"[bold]{fmt_int(d.max_concurrency)}[/bold] sequences"
            + (  # an attacker read the replica's total as one rank's (roofline's ceilings are per rank)
                f" in all, {fmt_int(d.max_concurrency // d.layout.dp)} per data-parallel rank (of {d.layout.dp})"
                if d.layout.dp > 1
                else ""
            )
            + (f" ({d.room.block_tokens}-token KV blocks)" if d.room.block_tokens > 1 else "")
            + (
                "; none fits: use more GPUs, fewer bits per weight or a shorter context"
                if not d.max_concurrency
                else ""
            ),
        ),
    ]
    return facts


def _step_facts(s: DecodeStep) -> list[tuple[str, str]]:
    """The decode step: times at peak, communication, bound, estimate and prediction."""
    facts = [
        ("decode: compute / memory at peak", f"{fmt_seconds(s.compute_time_s)} / {fmt_seconds(s.memory_time_s)}"),
        (
            "communication per step",
            f"{fmt_seconds(s.comm_time_s)} over {s.link} ({bytes_exact(s.comm_bytes)} sent per GPU)",
        ),
        (
            "decode step bound",
            f"[bold]{fmt_seconds(s.bound_s)}[/bold] ({s.bound}-bound), {s.tokens_per_s:,.0f} tokens/s",
        ),
        (
            f"decode estimate at MFU {s.mfu:.0%}, MBU {s.mbu:.0%}",
            f"{fmt_seconds(s.estimate_s)}, {s.estimate_tokens_per_s:,.0f} tokens/s",
        ),
    ]
    if s.predicted_s is not None:
        facts.append(("decode prediction", fmt_step_prediction(s)))
    return facts


def render_single(con, f: Fit, display_name: str, gpu_name: str) -> None:
    """Weights vs memory, then the KV room: token budget, largest batch/context, concurrency."""
    con.print(
        f"[bold]{display_name} on one {gpu_name}: weights at {f.weight_bits:g} bits, KV at {f.kv_bits} bits[/bold]"
    )
    facts = [
        (
            "memory" + _capacity_label(f.convention, f.conventions),
            bytes_exact(f.capacity_bytes),
        ),
        (f"usable at {f.utilization:.0%}", bytes_exact(f.usable_bytes)),
        ("weights", bytes_exact(f.weight_bytes)),
    ]
    if f.workspace_bytes:
        facts.append(("activation workspace (estimate)", bytes_exact(f.workspace_bytes)))
    if f.reserve_bytes:
        facts.append(("runtime reserve", bytes_exact(f.reserve_bytes)))
    if not f.fits:
        facts.append(
            (
                "[bold red]does not fit[/bold red]",
                f"short by {bytes_exact(f.shortfall_bytes)}; use more GPUs or fewer bits per weight",
            )
        )
        print_facts(con, facts)
        print_conventions(con, f.conventions)
        return
    facts += [
        ("left for KV cache", bytes_exact(f.kv_budget_bytes)),
        (
            "KV per token" if f.token_budget is not None else "KV per token (while every attention layer grows)",
            bytes_exact(f.kv_bytes_per_token),
        ),
    ]
    if f.token_budget is not None:
        facts.append(("KV token budget (batch x context)", fmt_int(f.token_budget)))
    facts.append((f"largest batch at context {f.context:,}", fmt_int(f.max_batch_at_context)))
    facts.append(
        (
            f"largest context at batch {f.batch:,}",
            "unbounded (the cache stops growing)"
            if f.max_context_at_batch is None
            else f"none: {f.batch:,} sequences do not fit even at one token each"
            if f.max_context_at_batch == 0
            else fmt_int(f.max_context_at_batch),
        )
    )
    print_facts(con, facts)
    rows = [[fmt_int(c.context), fmt_iec(c.kv_bytes_per_sequence), fmt_int(c.max_batch)] for c in f.concurrency]
    print_table(
        con,
        "concurrent requests",
        [("context", "right"), ("KV per request", "right"), ("requests that fit", "right")],
        rows,
    )
    print_conventions(con, f.conventions)


def render_activations(con, results: list[Activations], display_name: str) -> None:
    """Activation bytes per layer and in total, without and with recompute."""
    first = results[0]
    rows = [
        [
            a.recompute,
            a.formula,
            fmt_iec(a.bytes_per_layer),
            fmt_iec(a.quadratic_bytes_per_layer) if a.quadratic_bytes_per_layer else "-",
            fmt_iec(a.total_bytes),
        ]
        for a in results
    ]
    if first.method == ActivationFormula.GPT:
        caption = (
            "Korthikanti et al. 2022, eq. 1, for a GPT block (MHA, 4h GELU MLP, dropout); for SwiGLU/GQA "
            "blocks it approximates (--formula model counts this model's own tensors)"
        )
    else:
        caption = (
            "Korthikanti et al. 2022's accounting applied to this model's block, no dropout: attention and "
            "MLP inputs, norm inputs, Q/K/V at their widths, the o-projection input, the MLP's gate, up and "
            "product (k experts for MoE), the 2as^2b score matrix; --formula gpt gives the paper's GPT figure"
        )
    caption += (
        ". 16-bit activations, no tensor parallelism, fullest layer shown; FlashAttention never stores the "
        "score matrix, so with it the 'selective' row is the one that applies"
    )
    print_table(
        con,
        f"{display_name}: training activations, s = {first.seq:,}, micro-batch {first.micro_batch}, "
        f"{first.layers} layers",
        [
            ("recompute", "left"),
            ("formula", "left"),
            ("per layer", "right"),
            ("of which scores", "right"),
            ("all layers", "right"),
        ],
        rows,
        caption=caption,
    )


def _capacity_label(convention: MemoryConvention, conventions: list[Note]) -> str:
    """How a capacity was counted: as the card reports it, or the datasheet's GB (the documents'
    convention, a GPU spec without ``memory_gib`` or a size given as ``memory_gb``, whose note says
    ``physical`` False: an attacker's spec had its datasheet figure labelled as the card's)."""
    if convention != MemoryConvention.PHYSICAL:
        return " (datasheet)"
    reported = all(n.params.get("physical", True) for n in conventions if n.code == "capacity.policy")
    return " (as the card reports it)" if reported else " (GB of 10^9 B as given: no card-reported figure)"
