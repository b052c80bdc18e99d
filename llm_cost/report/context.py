"""Tables for ``llm-cost context``."""

from __future__ import annotations

from llm_cost.analyses.context import ContextResult
from llm_cost.core.units import fmt_flops, fmt_iec, fmt_int, fmt_seconds
from llm_cost.report.base import print_conventions, print_facts, print_table, rows_that_matter, shown_caption


def render(con, r: ContextResult, display_name: str, all_rows: bool = False) -> None:
    """Crossover, then one row per context (of a long grid the rows that matter: where attention
    overtakes the weights, :func:`~llm_cost.report.base.rows_that_matter`), unless ``all_rows``."""
    con.print(f"[bold]{display_name}: long-context costs[/bold]")
    print_facts(
        con,
        [
            ("weight FLOPs per token", f"{fmt_flops(r.weight_flops_per_token)} ({r.weight_convention})"),
            (
                "attention = weight FLOPs at",
                "never (attention per token stops growing)"
                if r.crossover_context is None
                else f"{r.crossover_context:,.{0 if float(r.crossover_context).is_integer() else 1}f} tokens",
            ),
        ],
    )
    has_state = any(x.state_bytes for x in r.rows)
    has_all = any(x.all_attention_kv_bytes is not None for x in r.rows)
    columns = [
        ("context", "right"),
        ("attention / token", "right"),
        ("attention / weights", "right"),
        ("prefill FLOPs", "right"),
        ("TTFT bound", "right"),
        ("TTFT estimate", "right"),
    ]
    documents = r.weight_convention != "gemm"
    if documents:
        columns.append(("documents' prefill", "right"))
    columns.append(("KV / request", "right"))
    if has_state:
        columns += [("+ fixed state", "right"), ("KV + state", "right")]
    if has_all:
        columns.append(("all layers full attention", "right"))
    columns.append(("S = QK^T per layer", "right"))
    shown = r.rows if all_rows else [r.rows[i] for i in rows_that_matter(len(r.rows), _regime(r))]
    rows = []
    for x in shown:
        row = [
            fmt_int(x.context),
            fmt_flops(x.attention_flops_per_token),
            f"{x.attention_to_weight:,.2f}x",
            fmt_flops(x.prefill_flops),
            fmt_seconds(x.prefill_bound_s) if x.prefill_bound_s else "-",
            fmt_seconds(x.prefill_estimate_s) if x.prefill_estimate_s else "-",
        ]
        if documents:
            row.append(
                fmt_flops(x.document_prefill_flops)
                + (f", {fmt_seconds(x.document_prefill_time_s)}" if x.document_prefill_time_s else "")
            )
        row.append(fmt_iec(x.kv_bytes))
        if has_state:
            row += [fmt_iec(x.state_bytes), fmt_iec(x.kv_plus_state_bytes)]
        if has_all:
            row.append(fmt_iec(x.all_attention_kv_bytes) if x.all_attention_kv_bytes is not None else "")
        row.append(fmt_iec(x.scores_bytes_per_layer))
        rows.append(row)
    caption = "S = QK^T is what FlashAttention never materialises in HBM"
    trimmed = shown_caption(len(shown), len(r.rows))
    print_table(con, "", columns, rows, caption=caption + (f"; {trimmed}" if trimmed else ""))
    print_conventions(con, r.conventions)


def _regime(r: ContextResult) -> list[bool]:
    """Whether attention costs more than the weights at each context (the crossover's side)."""
    return [x.attention_to_weight > 1 for x in r.rows]
