"""Tables for ``llm-cost list`` and ``llm-cost show``."""

from __future__ import annotations

from llm_cost.analyses.catalog import GPUEntry, ModelEntry, SpecView
from llm_cost.core.units import fmt_int
from llm_cost.report.base import print_table


def render(con, entries: list) -> None:
    """The catalogue of models or GPUs."""
    if entries and isinstance(entries[0], ModelEntry):
        rows = [
            [e.name, e.display_name, e.architecture, fmt_int(e.total_params), ", ".join(e.aliases)] for e in entries
        ]
        print_table(
            con,
            "Shipped models",
            [
                ("name", "left"),
                ("model", "left"),
                ("architecture", "left"),
                ("parameters", "right"),
                ("aliases", "left"),
            ],
            rows,
        )
        return
    rows = []
    for e in entries:
        assert isinstance(e, GPUEntry)
        rows.append(
            [
                e.name,
                e.display_name,
                f"{e.memory_gb:g}",
                f"{e.capacity_bytes / 2**30:g}",
                f"{e.memory_bandwidth_tb_s:g}",
                f"{e.bf16_dense_tflops:g}" if e.bf16_dense_tflops else "-",
                f"{e.fp8_dense_tflops:g}" if e.fp8_dense_tflops else "-",
                f"{e.tdp_w:g}",
                ", ".join(e.aliases),
            ]
        )
    print_table(
        con,
        "Shipped GPUs (dense peaks, datasheet units)",
        [
            ("name", "left"),
            ("GPU", "left"),
            ("datasheet memory GB", "right"),
            ("capacity GiB", "right"),
            ("bandwidth TB/s", "right"),
            ("BF16 TFLOP/s", "right"),
            ("FP8 TFLOP/s", "right"),
            ("TDP W", "right"),
            ("aliases", "left"),
        ],
        rows,
        caption=(
            'datasheet memory as printed; capacity GiB = 2^30 B as the card reports it (an "80GB" H100: 81,559 MiB), '
            "what fit and serve size against; TB/s = 10^12 B/s; TFLOP/s without sparsity"
        ),
    )


def render_spec(con, view: SpecView) -> None:
    """The spec as YAML, as loaded and validated (defaults filled in)."""
    import yaml

    con.print(f"[bold]{view.kind} spec {view.name}[/bold] (as loaded and validated; defaults filled in)")
    con.print(yaml.safe_dump(view.spec, sort_keys=False, width=100).rstrip(), markup=False)
