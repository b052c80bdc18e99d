"""Per-GPU tables shared by ``params`` and ``kv`` when a layout (--tp/--pp/--ep/--dp) is given."""

from __future__ import annotations

from llm_cost.core.units import fmt_iec, fmt_int, fmt_si
from llm_cost.report.base import print_table


def _title(layout) -> str:
    return f"per GPU: TP {layout.tp} x PP {layout.pp} x DP {layout.dp} = {layout.gpus} GPUs, EP {layout.ep}"


def render_per_gpu_weights(con, layout, p) -> None:
    """Weights on one GPU of each pipeline stage."""
    rows = [
        [str(i), str(n), f"{fmt_int(round(w))} B", fmt_si(w)]
        for i, (n, w) in enumerate(zip(p.stage_layers, p.weight_bytes))
    ]
    print_table(
        con,
        _title(layout),
        [("stage", "right"), ("layers", "right"), ("weights per GPU", "right"), ("GB (10^9 B)", "right")],
        rows,
        caption="TP splits attention, MLP, embedding and LM head; PP splits layers (embedding on the first "
        "stage, LM head on the last); EP spreads experts; norms and routers are replicated",
    )


def render_per_gpu_kv(con, r) -> None:
    """KV per token and per sequence on one GPU of each stage."""
    layout, p = r.layout, r.per_gpu
    rows = []
    for i, (n, k, seq) in enumerate(zip(p.stage_layers, p.kv_bytes_per_token, r.per_gpu_sequence_bytes)):
        rows.append([str(i), str(n), f"{fmt_int(round(k))} B"] + [fmt_iec(b) for b in seq])
    heads = (
        ""
        if p.kv_heads_per_gpu is None
        else f"; {p.kv_heads_per_gpu} KV head(s) per GPU"
        + (f", each replicated on {p.kv_replication} GPUs" if p.kv_replication > 1 else "")
    )
    print_table(
        con,
        _title(layout) + heads,
        [("stage", "right"), ("layers", "right"), ("KV per token", "right")]
        + [(f"at {c.context:,}", "right") for c in r.contexts],
        rows,
        caption=f"across all {layout.gpus} GPUs: {fmt_int(round(r.all_gpus_bytes_per_token))} B "
        "per token (KV heads replicated when TP exceeds them)",
    )
