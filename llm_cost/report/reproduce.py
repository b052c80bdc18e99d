"""Tables for ``llm-cost reproduce``."""

from __future__ import annotations

from fractions import Fraction

from llm_cost.analyses.reproduce import RowResult
from llm_cost.report.base import print_table


def _num(value: float | Fraction) -> str:
    x = float(value)
    if x.is_integer() and abs(x) < 1e15:
        return f"{int(x):,}"
    if abs(x) >= 1e6 or abs(x) < 1e-3:
        return f"{x:.4e}"
    return f"{x:,.4f}".rstrip("0").rstrip(".")


def render(con, rows: list[RowResult]) -> None:
    """One line per checked value, grouped by row."""
    table_rows = []
    notes = []
    for r in rows:
        mark = ""
        if r.note:
            notes.append(r)
            mark = f" [{len(notes)}]"
        for i, c in enumerate(r.checks):
            table_rows.append(
                [
                    r.id if i == 0 else "",
                    r.printed + mark if i == 0 else "",
                    c.name,
                    _num(c.expected),
                    _num(c.computed),
                    "[green]ok[/green]" if c.ok else "[bold red]MISMATCH[/bold red]",
                ]
            )
    ok = sum(r.ok for r in rows)
    print_table(
        con,
        f"The seed documents' numbers, recomputed: {ok} of {len(rows)} rows match",
        [
            ("id", "left"),
            ("document prints", "left"),
            ("value", "left"),
            ("expected", "right"),
            ("computed", "right"),
            ("", "left"),
        ],
        table_rows,
        caption="integers must match exactly, floats after the row's rounding; sections and rules: --json",
    )
    for i, r in enumerate(notes, 1):
        con.print(f"[dim][{i}] {r.id}: {r.note}[/dim]", markup=True, highlight=False)
