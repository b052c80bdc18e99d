"""Output of ``llm-cost import`` and of ``--verbose`` for config.json models."""

from __future__ import annotations

from collections.abc import Sequence

from llm_cost.core.units import fmt_int, fmt_params


def defaults_line(defaults: Sequence) -> str:
    """One line for the defaults a config.json took (``AppliedDefault`` records):
    ``defaults: head_dim 64 (hidden_size / num_attention_heads), ...``; empty for none."""
    if not defaults:
        return ""
    return "defaults: " + ", ".join(f"{d.field} {d.value} ({d.source})" for d in defaults)


def print_defaults(con, defaults: list[str]) -> None:
    """The family defaults a config.json took for keys it did not set."""
    if not defaults:
        con.print("defaults applied: none (every field the mapping reads was in the config)")
        return
    con.print("defaults applied (key absent from config.json):")
    for line in defaults:
        con.print(f"  {line}", markup=False)


def render_import(con, r, verbose: bool) -> None:
    """One line for what was written, then (with --verbose) the defaults applied."""
    con.print(
        f"wrote {r.path}: {r.name} ({r.display_name}, model_type {r.model_type}), "
        f"{fmt_int(r.total_params)} parameters ({fmt_params(r.total_params)}); source {r.source}",
        markup=False,
    )
    if verbose:
        print_defaults(con, r.defaults)
