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


def render_transformers_check(con, c) -> None:
    """``params --check``: the two counts, the difference by top-level module and its reason
    (a :class:`~llm_cost.analyses.transformers_check.TransformersCheck`)."""
    from llm_cost.report.base import print_facts, print_table

    rows = [
        [
            m.module,
            fmt_int(m.ours),
            fmt_int(m.transformers),
            f"{m.difference:+,}" if m.difference else "0",
            m.why or ("" if not m.difference else "UNEXPLAINED"),
        ]
        for m in c.modules
    ]
    rows.append(
        [
            "[bold]total[/bold]",
            fmt_int(c.ours),
            fmt_int(c.transformers_total),
            f"{c.difference:+,}" if c.difference else "0",
            "",
        ]
    )
    print_table(
        con,
        f"check against transformers {c.transformers_version} ({c.model_class}, meta device)",
        [
            ("module", "left"),
            ("llm-cost", "right"),
            ("transformers", "right"),
            ("difference", "right"),
            ("why", "left"),
        ],
        rows,
    )
    verdict = "agree" if not c.difference else ("differ, every difference explained" if c.explained else "DIFFER")
    facts = [("llm-cost vs transformers", f"{fmt_int(c.ours)} vs {fmt_int(c.transformers_total)}: {verdict}")]
    if c.transformers_buffers:
        facts.append(("  of which persistent buffers", f"{fmt_int(c.transformers_buffers)} (stored; counted by both)"))
    if c.layer_type_differences is not None:
        n = len(c.layer_type_differences)
        facts.append(("layer schedule", "agrees with its layer_types" if not n else f"DIFFERS in {n} layers"))
    if c.sliding_windows is not None:
        ours, theirs = c.sliding_windows
        facts.append(("sliding window", f"{ours} vs {theirs}" + ("" if ours == theirs else ": DIFFERS")))
    for change in c.changes:
        facts.append(("  built with", change))
    print_facts(con, facts)
