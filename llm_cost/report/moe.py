"""Tables for ``llm-cost moe``."""

from __future__ import annotations

from llm_cost.analyses.moe import MoEResult
from llm_cost.core.units import fmt_flops, fmt_iec, fmt_int, fmt_si
from llm_cost.report.base import print_conventions, print_facts, print_table, rows_that_matter, shown_caption


def _allreduce(r) -> str:
    """The all-reduce a TP FFN needs instead of the all-to-all; at TP 1 there is none."""
    if r.all_to_all_vs_allreduce is None:
        return "none at TP 1 (one GPU holds the whole FFN); give --tp 2 or more to compare with the all-to-all"
    return (
        f"{fmt_iec(r.allreduce_bytes_per_token_per_layer)} per token (the all-reduce a TP FFN needs in place of "
        f"the all-to-all; all-to-all is {r.all_to_all_vs_allreduce:.1f}x)"
    )


def render(con, r: MoEResult, display_name: str, all_rows: bool = False) -> None:
    """Three counts, expert traffic per batch (of a long grid the rows that matter, unless
    ``all_rows``), EP memory, all-to-all, expert GEMM ridge."""
    con.print(
        f"[bold]{display_name}: {r.num_experts} routed experts, top-{r.top_k}, {r.moe_layers} MoE layers, "
        f"weights at {r.weight_bits:g} bits[/bold]"
    )
    print_facts(
        con,
        [
            ("total parameters: set the memory", f"{fmt_int(r.total_params)}, {fmt_si(r.total_bytes)} of weights"),
            (
                "active per token: set the FLOPs",
                f"{fmt_int(r.active_params)}; weight FLOPs per token 2 x active N_gemm "
                f"= {fmt_flops(r.weight_flops_per_token)}",
            ),
            ("non-routed parameters", fmt_int(r.non_routed_params)),
            ("one routed expert, one layer", fmt_int(r.expert_params)),
        ],
    )
    _traffic_table(con, r, all_rows)
    print_facts(con, _ep_facts(r))
    print_conventions(con, r.conventions)


def _traffic_table(con, r: MoEResult, all_rows: bool) -> None:
    """The weights read per decode step at each batch: experts hit, bytes, GEMM rows and intensity
    (of a long grid the first and last rows and evenly spaced ones, unless ``all_rows``)."""
    ep = r.ep > 1
    shown = r.rows if all_rows else [r.rows[i] for i in rows_that_matter(len(r.rows))]
    rows = [
        [fmt_int(x.batch), f"{x.expected_experts:,.1f}"]
        + ([f"{x.expected_experts_per_rank:,.2f}"] if ep else [])
        + [
            fmt_si(x.weight_bytes_read),
            fmt_si(x.weight_bytes_seed),
            fmt_si(x.dense_same_memory_bytes),
            f"{x.expert_gemm_rows:,.2f}",
            f"{x.expert_gemm_intensity_flop_per_byte:,.2f}",
        ]
        for x in shown
    ]
    columns = [("batch", "right"), ("experts hit per layer", "right")]
    if ep:
        columns.append((f"per EP rank (of {r.ep})", "right"))
    columns += [
        ("weights read", "right"),
        ("all non-routed + experts hit", "right"),
        ("dense, same memory", "right"),
        ("rows per running expert", "right"),
        ("its FLOP/byte", "right"),
    ]
    print_table(
        con,
        "read per decode step (bandwidth)",
        columns,
        rows,
        caption="weights read = matmul weights used + vectors + embedding rows; the next column counts the "
        "whole embedding as the source documents do; a dense model of the same memory reads all of "
        "it every step; the third parameter count (read per step) sets the bandwidth"
        + (f"; {trimmed}" if (trimmed := shown_caption(len(shown), len(r.rows))) else ""),
    )


def _ep_facts(r: MoEResult) -> list[tuple[str, str]]:
    """Weights per GPU under EP, the all-to-all and all-reduce bytes, and the expert GEMMs' ridge."""
    facts = [
        (
            f"weights per GPU at EP {r.ep}",
            f"{fmt_si(r.weights_per_gpu_bytes)} ({r.experts_per_rank:,} experts "
            f"per GPU per layer, non-expert weights replicated)",
        ),
        (
            "all-to-all per token per layer",
            f"dispatch {fmt_iec(r.dispatch_bytes_per_token_per_layer)} "
            f"({r.dispatch_bits} bits) + combine {fmt_iec(r.combine_bytes_per_token_per_layer)} "
            f"({r.combine_bits} bits)",
        ),
        (f"TP-{r.tp} ring all-reduce of one hidden state", _allreduce(r)),
        (
            f"all-to-all for a {r.prompt_tokens:,}-token prompt",
            f"{fmt_iec(r.prompt_all_to_all_bytes)} over {r.moe_layers} MoE layers",
        ),
    ]
    if r.ep > 1:  # at EP 1 every copy stays on its GPU
        facts.append(
            (
                f"of which leaves the sending GPU at EP {r.ep}",
                f"{fmt_iec(r.prompt_all_to_all_remote_bytes)} ((EP - 1)/EP = {r.all_to_all_remote_share:.4g} of "
                "the copies, uniform routing)",
            )
        )
    if r.tokens_to_pass_ridge is not None:
        facts.append(
            (
                f"tokens per layer for expert GEMMs to pass the {r.gpu} ridge",
                f"{r.tokens_to_pass_ridge:,.0f} (ridge {r.ridge_flop_per_byte:,.1f} at {r.compute_dtype}, x E/k = "
                f"{r.experts_per_top_k:g})",
            )
        )
    return facts
