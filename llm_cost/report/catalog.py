"""Tables for ``llm-cost list`` and ``llm-cost show``."""

from __future__ import annotations

from llm_cost.analyses.catalog import CatalogEntry, GPUEntry, ModelEntry, SpecView
from llm_cost.core.units import fmt_int
from llm_cost.report.base import print_table


def render(con, entries: list) -> None:
    """The catalogue of models (shipped, then the offline catalog) or GPUs."""
    if entries and isinstance(entries[0], ModelEntry):
        rows = [
            [e.name, e.display_name, e.architecture, fmt_int(e.total_params), ", ".join(e.aliases)]
            for e in entries
            if isinstance(e, ModelEntry)
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
        _render_offline(con, [e for e in entries if isinstance(e, CatalogEntry)])
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


def _render_offline(con, entries: list[CatalogEntry]) -> None:
    """The offline catalog: each model's names, its checkpoint total and where its config came from."""
    rows = [
        [
            e.name,
            "\n".join(e.hub_ids),
            e.family,
            fmt_int(e.checkpoint_total) if e.checkpoint_total is not None else "unknown",
            (e.total_counts or "-") if e.reader == "ok" else "reader pending (--json: why)",
            _repository(e.source),
        ]
        for e in entries
    ]
    print_table(
        con,
        "Offline catalog (published config.json files; MODEL may be the name or any Hub id listed)",
        [
            ("name", "left"),
            ("Hub ids", "left"),
            ("family", "left"),
            ("checkpoint parameters", "right"),
            ("counts", "left"),
            ("config.json copied from (path: --json)", "left"),
        ],
        rows,
        caption=(
            "checkpoint parameters: the checkpoint's total from an independent source (catalog/CATALOG.yaml names "
            "each), tested against llm-cost's count in the convention shown; other Hub ids are read from the Hub"
        ),
    )


def _repository(source: str) -> str:
    """``owner/repo @ commit`` of a catalog source ``github.com/owner/repo path @ commit`` (its path is
    in the JSON)."""
    repo, _, rest = source.partition(" ")
    return f"{repo.removeprefix('github.com/')} @ {rest.rpartition(' @ ')[2]}"


def render_spec(con, view: SpecView) -> None:
    """The spec as YAML, as loaded and validated (defaults filled in), its heading a YAML comment:
    the output saved to a file is a spec ``--model`` or ``--gpu`` reads (a new user's ``show h100 >
    mine.yaml`` had been refused at its first line)."""
    import yaml

    con.print(f"[bold]# {view.kind} spec {view.name}[/bold] (as loaded and validated; defaults filled in)")
    con.print(yaml.safe_dump(view.spec, sort_keys=False, width=100).rstrip(), markup=False)
