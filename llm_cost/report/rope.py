"""Tables for ``llm-cost rope``: one row per extension method, then the wavelength of each pair."""

from __future__ import annotations

from llm_cost.analyses.rope import RopeResult
from llm_cost.core.labels import RopeExtension
from llm_cost.core.units import fmt_int, fmt_number
from llm_cost.report.base import print_conventions, print_facts, print_table

#: Up to this many rotated dims every pair is listed; above, a sample (every 8th pair and the last).
ALL_PAIRS_UP_TO_DIMS = 32
SAMPLE_STEP = 8


def _tokens(x: float) -> str:
    """A wavelength or length in tokens: ``6.28``, ``54,410``."""
    return fmt_number(x, 3)


def _shown_pairs(r: RopeResult) -> tuple[list[int], str]:
    """Indices of the pairs to list and the caption that says which."""
    n = r.dims // 2
    if r.dims <= ALL_PAIRS_UP_TO_DIMS:
        return list(range(n)), f"all {n} pairs"
    shown = set(range(0, n, SAMPLE_STEP)) | {n - 1}
    caption = f"a sample of the {n} pairs: i = 0, {SAMPLE_STEP}, {2 * SAMPLE_STEP}, ... and the last ({n - 1})"
    first = r.first_incomplete_pair
    if first is not None and first not in shown:
        shown.add(first)
        caption += f", plus i = {first}, the first that does not turn within {fmt_int(r.train_length)} tokens"
    return sorted(shown), caption + "; --json lists every pair"


def render(con, r: RopeResult) -> None:
    """Header facts, a summary table per method, a per-pair wavelength table, conventions."""
    who = f"{r.display_name} ({r.model}): " if r.model else ""
    n = r.dims // 2
    con.print(
        f"[bold]{who}RoPE, {r.dims} rotated dims ({n} pairs), train {fmt_int(r.train_length)} -> "
        f"target {fmt_int(r.target_length)} tokens (alpha {r.alpha:.4g})[/bold]"
    )
    first = r.pairs[0].wavelength
    last = r.pairs[-1].wavelength
    turn = (
        f"{r.incomplete_in_train} of {n} (i >= {r.first_incomplete_pair})"
        if r.first_incomplete_pair is not None
        else f"0 of {n}"
    )
    facts = [
        ("base", f"{r.base:,.6g}" if r.base < 1e15 else f"{r.base:.6g}"),
        ("wavelength", "lambda_i = 2 pi base^(2i/d) tokens, i = 0 .. d/2-1"),
        ("shortest / longest", f"{_tokens(first)} / {_tokens(last)} tokens"),
        (f"pairs not turning once in {fmt_int(r.train_length)}", turn),
    ]
    yarn = next((m for m in r.methods if m.name == RopeExtension.YARN), None)
    if yarn is not None and yarn.mscale is not None and yarn.logit_scale is not None:
        facts.append(
            ("YaRN attention", f"mscale 0.1 ln(alpha) + 1 = {yarn.mscale:.4f}; logits x {yarn.logit_scale:.4f}")
        )
    print_facts(con, facts)
    _methods_table(con, r)
    _pairs_table(con, r)
    print_conventions(con, r.conventions)


def _methods_table(con, r: RopeResult) -> None:
    """Each extension method's wavelengths at the target length."""
    columns = [
        ("method", "left"),
        ("setting", "left"),
        ("shortest λ", "right"),
        ("longest λ", "right"),
        (f"pairs λ > {fmt_int(r.target_length)}", "right"),
        ("unseen-phase pairs", "right"),
    ]
    rows = [
        [
            m.label,
            m.setting,
            _tokens(m.shortest_wavelength),
            _tokens(m.longest_wavelength),
            str(m.incomplete_at_target),
            str(m.unseen_phase_pairs),
        ]
        for m in r.methods
    ]
    print_table(con, f"at the target length {fmt_int(r.target_length)} (λ in tokens)", columns, rows)


def _pairs_table(con, r: RopeResult) -> None:
    """The wavelength of each pair shown, as trained and under each method."""
    shown, caption = _shown_pairs(r)
    has_l3 = r.llama3 is not None
    columns = [
        ("i", "right"),
        ("θ (rad/token)", "right"),
        ("λ (tokens)", "right"),
        (f"turns in {fmt_int(r.train_length)}", "right"),
        ("λ PI", "right"),
        ("λ NTK-aware", "right"),
        ("λ YaRN", "right"),
    ]
    if has_l3:
        columns.append(("λ llama3", "right"))
    rows = []
    for i in shown:
        p = r.pairs[i]
        row = [
            str(p.i),
            f"{p.frequency:.3g}",
            _tokens(p.wavelength),
            fmt_number(p.turns_in_train, 3),
            _tokens(p.pi),
            _tokens(p.ntk_aware),
            _tokens(p.yarn),
        ]
        if has_l3:
            row.append(_tokens(p.llama3) if p.llama3 is not None else "")
        rows.append(row)
    caption += "; dynamic NTK at the target length equals NTK-aware"
    print_table(con, "per pair", columns, rows, caption=caption)
