"""Tables for ``llm-cost roofline``."""

from __future__ import annotations

from llm_cost.analyses.roofline import DecodeStep, PrefillStep
from llm_cost.core.labels import Bound
from llm_cost.core.units import fmt_flops, fmt_int, fmt_rate, fmt_seconds, fmt_si
from llm_cost.model.layout import Layout
from llm_cost.perf.ridge import Ridge
from llm_cost.report.base import (
    bytes_exact,
    fmt_band,
    fmt_step_prediction,
    layout_text,
    print_conventions,
    print_facts,
    print_table,
    rows_that_matter,
    shown_caption,
)


def render_ridges(con, ridges: list[Ridge], gpu_name: str) -> None:
    """Ridge point per dtype."""
    rows = [
        [r.dtype, f"{r.peak_tflops:,.1f}", f"{r.bandwidth_tb_s:g}", f"{r.ridge_flop_per_byte:,.1f}"] for r in ridges
    ]
    print_table(
        con,
        f"{gpu_name}: Roofline ridge points",
        [("dtype", "left"), ("dense peak TFLOP/s", "right"), ("bandwidth TB/s", "right"), ("ridge FLOP/byte", "right")],
        rows,
        caption="ridge = peak FLOP/s / bandwidth B/s (TB = 10^12 B); a kernel below it is memory-bound",
    )


def _default_note(con, model_given: bool, display_name: str) -> None:
    if not model_given:
        con.print(f"[dim]model: {display_name} (the default; name a MODEL to change it)[/dim]")


def _ops_table(con, rows) -> None:
    table = [
        [
            o.name + (f" (stage {o.stage})" if o.stage else ""),
            fmt_flops(o.flops),
            fmt_si(o.bytes),
            fmt_si(o.comm_bytes) if o.comm_bytes else "-",
            f"{o.intensity_flop_per_byte:,.1f}" if o.intensity_flop_per_byte else "-",
            o.bound,
            fmt_seconds(o.bound_s),
            fmt_seconds(o.estimate_s),
        ]
        for o in rows
    ]
    print_table(
        con,
        "per operator, per GPU (bound: max(FLOPs / peak, bytes / bandwidth) + link time)",
        [
            ("operator", "left"),
            ("FLOPs", "right"),
            ("weights + KV", "right"),
            ("sent", "right"),
            ("FLOP/byte", "right"),
            ("bound by", "left"),
            ("bound", "right"),
            ("estimate", "right"),
        ],
        table,
        caption="the step's bound overlaps compute and memory across operators, so it is at most the sum "
        "of the operators' bounds",
    )


def _total_flops_fact(step: DecodeStep | PrefillStep) -> list[tuple[str, str]]:
    """On a layout of more than one GPU, the FLOPs of the step on all of them (the model's count for
    its tokens), beside the per-GPU figure; on one replica of one stage, also the per-GPU figure
    summed over its GPUs where that is more (replicated operators, such as MLA's low-rank
    projections: a new user found DeepSeek-V3's 8 x 1.26 TFLOP over the model's 9.14)."""
    if step.layout.gpus == 1:
        return []
    total = fmt_flops(step.total_flops)
    repeated = step.flops * step.layout.gpus - step.total_flops
    summed = fmt_flops(step.flops * step.layout.gpus)
    if step.layout.pp == 1 and step.layout.dp == 1 and repeated > 0 and summed != total:  # one replica, one stage
        total += (
            f"; {summed} summed over the GPUs, each computing whole the operators tensor parallelism does not split"
        )
    return [(f"FLOPs, all {step.layout.gpus} GPUs (the model's)", total)]


def _prediction(step: DecodeStep | PrefillStep) -> list[tuple[str, str]]:
    """The calibrated prediction's fact line, when a profile applied."""
    if step.predicted_s is None:
        return []
    what = "prompt tokens/s" if isinstance(step, PrefillStep) else "tokens/s"
    return [("prediction", f"[bold]{fmt_step_prediction(step, what)}[/bold]")]


def render_decode(
    con, d: DecodeStep, display_name: str, gpu_name: str, model_given: bool, ops: bool, default_context: bool = False
) -> None:
    """The decode step: FLOPs, bytes, intensities, bound, estimate, compute-bound batch."""
    _default_note(con, model_given, display_name)
    default = " (the default: an empty cache; give --context)" if default_context else ""
    con.print(
        f"[bold]{display_name} on {gpu_name}{layout_text(d.layout)}: decode step, batch {d.batch}, context "
        f"{d.context:,} cached tokens per sequence{default}, {d.compute_dtype} peak, weights at "
        f"{d.weight_bits:g} bits, KV at {d.kv_bits} bits[/bold]"
    )
    print_facts(con, [*_decode_work(d), *_decode_times(d), *_decode_batches(d)])
    if ops:
        _ops_table(con, d.ops)
    print_conventions(con, d.conventions)


def _per_gpu(layout: Layout) -> str:
    """How a step's figures are counted: on one GPU, per GPU, or, with pipeline stages, per GPU
    of each stage summed over the stages (a stage's GPU holds its layers alone; a step's time is
    the stages' in turn)."""
    if layout.gpus == 1:
        return ""
    return " per GPU" + (f" (summed over the {layout.pp} stages)" if layout.pp > 1 else "")


def _decode_work(d: DecodeStep) -> list[tuple[str, str]]:
    """A decode step's FLOPs, bytes (weights, embedding rows, KV) and arithmetic intensity."""
    per = _per_gpu(d.layout)
    return [
        (
            "FLOPs" + per,
            f"{fmt_flops(d.flops)} = weights {fmt_flops(d.weight_flops)} + attention {fmt_flops(d.attention_flops)}",
        ),
        *_total_flops_fact(d),
        ("matmul weights read" + per, bytes_exact(d.matmul_weight_bytes)),
        (
            "norm/bias vectors" + (" and tables (resident)" if d.weight_bytes_convention == "resident" else ""),
            bytes_exact(d.other_weight_bytes),
        ),
        ("embedding rows", bytes_exact(d.embedding_row_bytes)),
        ("KV read + new K/V written", f"{bytes_exact(d.kv_read_bytes)} + {bytes_exact(d.kv_write_bytes)}"),
        (
            "bytes per step" + per,
            bytes_exact(d.bytes) + ("  (resident convention)" if d.weight_bytes_convention == "resident" else ""),
        ),
        (
            "arithmetic intensity",
            f"{d.intensity_flop_per_byte:,.2f} FLOP/byte (weights {d.weight_intensity_flop_per_byte:,.2f}"
            + (f", KV {d.kv_intensity_flop_per_byte:,.2f}" if d.kv_intensity_flop_per_byte else "")
            + f"); ridge {d.ridge_flop_per_byte:,.1f}",
        ),
    ]


def _plus_link(d: DecodeStep) -> str:
    """The communication a compute- or memory-bound bound adds to its dominant time (TP16 across
    two nodes: 3.15 of 7.39 ms), so that the line is the sum of the parts printed above it."""
    if d.bound == Bound.COMMUNICATION or d.comm_time_s <= 0:
        return ""
    return f", plus {fmt_seconds(d.comm_time_s)} of communication"


def _decode_times(d: DecodeStep) -> list[tuple[str, str]]:
    """A decode step's times: at peak, over the link, its bound, estimate and prediction, and
    (one GPU) the two weight-reading conventions."""
    facts = [
        ("compute time at peak", fmt_seconds(d.compute_time_s)),
        ("memory time at peak", fmt_seconds(d.memory_time_s)),
    ]
    if d.comm_bytes:
        facts.append(
            (
                "communication" + _per_gpu(d.layout),
                f"{bytes_exact(d.comm_bytes)} sent, {fmt_seconds(d.comm_time_s)} over {d.link}",
            )
        )
    facts += [
        (
            "lower bound",
            f"[bold]{fmt_seconds(d.bound_s)}[/bold] ({d.bound}-bound{_plus_link(d)}), {fmt_rate(d.tokens_per_s)} tokens/s",
        ),
        (
            f"estimate at MFU {d.mfu:.0%}, MBU {d.mbu:.0%}",
            f"{fmt_seconds(d.estimate_s)}, {fmt_rate(d.estimate_tokens_per_s)} tokens/s",
        ),
    ]
    facts += _prediction(d)
    if d.layout.gpus == 1:
        facts += [
            (
                "read all resident weights once",
                f"{fmt_seconds(d.resident_read_time_s)} "
                f"({fmt_si(d.resident_weight_bytes)}, the source documents' convention)",
            ),
            (
                "read the matmul weights only",
                f"{fmt_seconds(d.matmul_weights_time_s)} ({fmt_si(d.matmul_weight_bytes)})",
            ),
        ]
    return facts


def _beyond_memory(d: DecodeStep, batch: int) -> str:
    """``; beyond memory: at most N fit`` for a batch (per data-parallel rank) whose KV at the
    step's context does not fit beside the weights, else nothing."""
    most = d.max_batch_in_memory
    rank = " per rank" if d.layout.dp > 1 else ""
    return f"; beyond memory: at most {most:,} fit{rank}" if most is not None and batch > most else ""


def _decode_batches(d: DecodeStep) -> list[tuple[str, str]]:
    """The batches where a decode step's weights, and the whole step, reach the ridge; the
    intensity's limit as the batch grows. With data-parallel ranks each batch is per rank, as the
    memory ceiling beside it (the step's own batch splits over them)."""
    facts = []
    rank = f" per data-parallel rank (of {d.layout.dp})" if d.layout.dp > 1 else ""
    if d.compute_bound_batch_weights_only:
        kv = d.kv_bytes_at_compute_bound_batch_weights_only
        facts.append(
            (
                "batch where weights reach the ridge" + rank,
                f"{fmt_int(d.compute_bound_batch_weights_only)}"
                + (f" (KV at context {d.context:,}: {bytes_exact(kv)})" if kv else "")
                + _beyond_memory(d, d.compute_bound_batch_weights_only),
            )
        )
    facts.append(
        (
            "batch where the whole step is compute-bound" + rank,
            fmt_int(d.compute_bound_batch)
            if d.compute_bound_batch
            else "none: KV reads keep the step memory-bound at every batch",
        )
    )
    if d.intensity_limit_flop_per_byte is not None and d.context:
        facts.append(
            (
                "intensity as batch grows",
                f"-> {d.intensity_limit_flop_per_byte:,.2f} FLOP/byte (the KV reads of each sequence do not amortise)",
            )
        )
    return facts


def render_prefill(
    con,
    p: PrefillStep,
    display_name: str,
    gpu_name: str,
    model_given: bool,
    ops: bool = False,
    default_context: bool = False,
) -> None:
    """The prefill (time to first token): FLOPs, bytes, bound and estimate."""
    _default_note(con, model_given, display_name)
    con.print(
        f"[bold]{display_name} on {gpu_name}{layout_text(p.layout)}: prefill of {p.batch} x {p.seq:,} tokens "
        f"(time to first token), {p.compute_dtype} peak[/bold]"
    )
    per = _per_gpu(p.layout)
    facts = [
        (
            "FLOPs" + per,
            f"{fmt_flops(p.flops)} = weights {fmt_flops(p.weight_flops)} + attention {fmt_flops(p.attention_flops)}",
        ),
        *_total_flops_fact(p),
        ("bytes" + per, f"{bytes_exact(p.bytes)} (weights once + K/V written)"),
        ("arithmetic intensity", f"{p.intensity_flop_per_byte:,.0f} FLOP/byte"),
    ]
    if p.comm_bytes:
        facts.append(("communication" + per, f"{bytes_exact(p.comm_bytes)} sent, {fmt_seconds(p.comm_time_s)}"))
    facts += [
        ("TTFT lower bound", f"[bold]{fmt_seconds(p.bound_s)}[/bold] ({p.bound}-bound)"),
        (
            f"TTFT estimate at MFU {p.mfu:.0%}, MBU {p.mbu:.0%}",
            f"{fmt_seconds(p.estimate_s)}, {fmt_rate(p.tokens_per_s_at_mfu)} tokens/s",
        ),
    ]
    facts += _prediction(p)
    print_facts(con, facts)
    if ops:
        _ops_table(con, p.ops)
    print_conventions(con, p.conventions)


def render_rows(con, steps: list, display_name: str, gpu_name: str, model_given: bool, all_rows: bool = False) -> None:
    """One row per grid point: decode steps (batch x context) or prefills (batch x prompt); of a
    long grid the rows that matter (:func:`~llm_cost.report.base.rows_that_matter`: where the bound
    or the fit changes along the batches, the best throughput), unless ``all_rows``."""
    _default_note(con, model_given, display_name)
    first = steps[0]
    prefill = isinstance(first, PrefillStep)
    head = "prompt" if prefill else "context"
    every = steps
    if not all_rows:
        regime = [(s.bound, s.fits_in_memory) for s in steps]
        speed = [s.tokens_per_s_at_mfu if prefill else s.estimate_tokens_per_s for s in steps]
        series = [s.seq if prefill else s.context for s in steps]  # a regime changes along the batches
        steps = [steps[i] for i in rows_that_matter(len(steps), regime, speed.index(max(speed)), series)]
    rows = [
        [
            fmt_int(s.batch),
            fmt_int(s.seq if prefill else s.context),
            fmt_flops(s.flops),
            fmt_si(s.bytes),
            fmt_seconds(s.bound_s),
            s.bound,
            fmt_seconds(s.estimate_s),
            fmt_seconds(s.predicted_s) if s.predicted_s is not None else "-",
            fmt_band(s.predicted_s, s.predicted_low_s, s.predicted_high_s) if s.predicted_s is not None else "-",
            f"{s.predicted_tokens_per_s:,.0f}" if s.predicted_tokens_per_s is not None else "-",
            f"{(s.tokens_per_s_at_mfu if prefill else s.estimate_tokens_per_s):,.0f}",
            "yes" if s.fits_in_memory else "no",
        ]
        for s in steps
    ]
    what = "prefill (time to first token)" if prefill else "decode step"
    print_table(
        con,
        f"{display_name} on {gpu_name}{layout_text(first.layout)}: {what}, {first.compute_dtype} peak",
        [
            ("batch", "right"),
            (head, "right"),
            ("FLOPs", "right"),
            ("bytes", "right"),
            ("bound", "right"),
            ("bound by", "left"),
            (f"estimate (MFU {first.mfu:.0%}, MBU {first.mbu:.0%})", "right"),
            (f"prediction ({first.profile or 'no profile'})", "right"),
            ("band", "right"),
            ("tokens/s predicted", "right"),
            ("tokens/s at the estimate", "right"),
            ("fits", "left"),  # weights + KV in the fullest GPU's memory (fits_in_memory)
        ],
        rows,
        caption=shown_caption(len(steps), len(every)),
    )
    seen: list = []
    for step in steps:  # the conventions of the rows shown, once each; a row's own sizes are in its columns
        seen += [
            n
            for n in step.conventions
            if n.code not in ("decode.step", "prefill.step", "warning.does_not_fit") and n not in seen
        ]
    warnings = [n for step in every for n in step.conventions if n.code == "warning.does_not_fit"]
    if warnings:  # the largest setup that does not fit stands for the others
        seen.append(max(warnings, key=lambda n: n.params["need_bytes"]))
    print_conventions(con, seen)
