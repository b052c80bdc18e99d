"""Tables for ``llm-cost spec``."""

from __future__ import annotations

from llm_cost.analyses.speculative import SpecAtBatch, SpecResult
from llm_cost.core.units import fmt_int, fmt_seconds
from llm_cost.report.base import (
    fmt_band,
    layout_text,
    print_conventions,
    print_facts,
    print_table,
    rows_that_matter,
    shown_caption,
)


def render(con, r: SpecResult, all_rows: bool = False) -> None:
    """Closed forms, then the step model per batch when a model and GPU were given (of a long grid
    the rows that matter: where the verify step's bound or the speedup's side of 1 changes, the
    best speculative throughput), unless ``all_rows``."""
    con.print(
        f"[bold]Speculative decoding: alpha {r.alpha:g}, gamma {r.gamma}, c {r.c:.4g}"
        + (f" ({r.c_source})" if r.c_source != "given" else "")
        + "[/bold]"
    )
    facts = [
        ("expected tokens per round", f"{r.expected_tokens:.4f}"),
        ("speedup, verification free (memory-bound)", f"{r.speedup_memory_bound:.2f}x"),
        ("speedup, fully compute-bound", f"{r.speedup_compute_bound:.2f}x"),
    ]
    if r.turning_batch is not None:
        facts.append(
            (
                f"closed-form turning batch (ridge {r.ridge_flop_per_byte:,.1f} / (gamma + 1))",
                f"{r.turning_batch:,.1f} at peak; {r.turning_batch_at_mfu:,.1f} at MFU {r.mfu:.0%}, MBU {r.mbu:.0%}",
            )
        )
        limit = f"none up to batch {r.batch_search_limit:,}"
        most = r.max_batch_in_memory
        if most is not None and most < r.batch_search_limit:  # a new user: the search's limit read as reachable
            limit += f", far past memory: at most {most:,} fit"
        if r.max_batch_in_memory is not None:
            facts.append(("largest batch in physical memory", _fits_text(r, r.max_batch_in_memory)))
        facts.append(
            (
                "knee: verify step turns compute-bound at batch",
                _beyond(r, r.knee_batch) if r.knee_batch else f"{limit} (the KV reads keep it memory-bound)",
            )
        )
        facts.append(
            (
                "break-even: speculation stops paying at batch",
                _beyond(r, r.break_even_batch) if r.break_even_batch else f"{limit}",
            )
        )
    print_facts(con, facts)
    if r.rows:
        _steps_table(con, r, all_rows)
    print_conventions(con, r.conventions)


def _fits_text(r: SpecResult, most: int) -> str:
    """The batch bound by memory, with its context and what it counts."""
    if most == 0:
        one = f" and one sequence of {r.context:,} tokens" if r.context else " alone"
        return f"none: the weights{one} exceed the GPU's memory"
    ranks = f" over {r.layout.dp} data-parallel ranks" if r.layout is not None and r.layout.dp > 1 else ""
    return (
        f"{most:,} sequences of {r.context:,} tokens (weights + KV){ranks}: the card's ceiling; an engine keeps a "
        "share, a reserve and a workspace back (llm-cost fit counts vLLM's)"
    )


def _beyond(r: SpecResult, batch: int) -> str:
    """A batch of the knee or break-even search, flagged when its KV would not fit."""
    most = r.max_batch_in_memory
    if most is None or batch <= most:
        return fmt_int(batch)
    return f"{batch:,} (beyond memory: at most {most:,} fit)"


def _steps_table(con, r: SpecResult, all_rows: bool) -> None:
    """The step model at each batch: baseline, verify and draft times, tokens/s and speedup."""
    shown = r.rows
    if not all_rows:
        regime = [(x.verify_bound, x.speedup >= 1) for x in r.rows]
        speed = [x.speculative_tokens_per_s for x in r.rows]
        shown = [r.rows[i] for i in rows_that_matter(len(r.rows), regime, speed.index(max(speed)))]
    bands = any(x.baseline_step_low_s is not None for x in shown)
    rows = [_step_cells(x, bands) for x in shown]
    columns = [("batch", "right"), ("baseline step", "right")]
    columns += [("band", "right"), ("verify step", "right"), ("band", "right")] if bands else [("verify step", "right")]
    columns += [
        ("draft", "right"),
        ("baseline tok/s", "right"),
        ("speculative tok/s", "right"),
        ("speedup", "right"),
        ("verify bound by", "left"),
    ]
    notes = ["band: the prediction's error band (as roofline's); the draft's is the baseline's"] if bands else []
    if not all(x.fits_memory for x in shown):
        notes.append("*: weights + KV at this batch exceed the GPU's memory")
    trimmed = shown_caption(len(shown), len(r.rows))
    print_table(
        con,
        f"step model: {r.model} on {r.gpu}" + (layout_text(r.layout) if r.layout else "") + f"; steps: {r.time_model}",
        columns,
        rows,
        caption="; ".join(notes + ([trimmed] if trimmed else [])) or None,
    )


def _step_cells(x: SpecAtBatch, bands: bool) -> list[str]:
    """One batch's cells: each step's time, with its band beside the baseline's and the verify's."""
    base = [fmt_seconds(x.baseline_step_s)]
    verify = [fmt_seconds(x.verify_step_s)]
    if bands:
        base.append(fmt_band(x.baseline_step_s, x.baseline_step_low_s, x.baseline_step_high_s))
        verify.append(fmt_band(x.verify_step_s, x.verify_step_low_s, x.verify_step_high_s))
    return [
        fmt_int(x.batch) + ("" if x.fits_memory else "*"),
        *base,
        *verify,
        fmt_seconds(x.draft_s),
        f"{x.baseline_tokens_per_s:,.0f}",
        f"{x.speculative_tokens_per_s:,.0f}",
        f"{x.speedup:.2f}x",
        x.verify_bound,
    ]
