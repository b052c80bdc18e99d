"""Tables for ``llm-cost numerics``."""

from __future__ import annotations

from llm_cost.analyses.numerics import FormatRow, NumericsResult
from llm_cost.core.labels import FormatKind
from llm_cost.core.units import fmt_int
from llm_cost.report.base import print_conventions, print_facts, print_table


def _max(r: FormatRow) -> str:
    if r.kind == FormatKind.INT:
        return f"{r.max_finite_exact} (min {r.min_value:.0f})"
    if r.max_finite < 1e7 and r.max_finite.is_integer():
        return fmt_int(int(r.max_finite))
    return f"{r.max_finite:.4g} = {r.max_finite_formula}"


def _min_normal(r: FormatRow) -> str:
    if r.kind == FormatKind.INT:
        return f"step {r.step}"
    return f"{r.min_normal_exact} (subnormal {r.min_subnormal_exact})"


def _roundoff(r: FormatRow) -> str:
    if r.unit_roundoff is None:
        return "-"
    return f"{r.unit_roundoff_exact} = {r.unit_roundoff:.2g}"


def _share(x: float) -> str:
    return f"{100 * x:.1f}%" if x >= 1e-3 else f"{100 * x:.2g}%"


def _inf(r: FormatRow) -> str:
    if r.has_inf:
        return "yes"
    return "no (NaN only)" if r.has_nan else "no"


def render(con, r: NumericsResult) -> None:
    """One table of the formats, then the QK-norm logit bound, then the conventions."""
    con.print(f"[bold]Number formats: range, precision, overflow; dot products of length k = {r.k:,}[/bold]")
    columns = [
        ("format", "left"),
        ("bits e/m", "right"),
        ("max finite", "right"),
        ("min normal", "right"),
        ("unit roundoff u", "right"),
        ("inf?", "left"),
        ("e^x overflows at x >", "right"),
        ("1.0 + 0.001 ->", "right"),
        (f"u x sqrt({r.k:,})", "right"),
    ]
    rows = []
    for f in r.formats:
        if f.kind == FormatKind.INT:
            bits = f"int{f.bits}"
            exp_x, noise = "-", "exact (INT32 acc.)"
        else:  # a float format has its fields
            assert f.exponent_bits is not None and f.mantissa_bits is not None and f.accumulation_noise is not None
            storage = f" in {f.bits}" if f.bits != 1 + f.exponent_bits + f.mantissa_bits else ""
            bits = f"{f.exponent_bits}/{f.mantissa_bits}{storage}"
            exp_x = f"{f.exp_overflow_x:.2f}"
            noise = _share(f.accumulation_noise)
        probe = f"{f.one_plus_0001:.10g}" + (" (lost)" if f.one_plus_0001_lost else "")
        rows.append([f.name, bits, _max(f), _min_normal(f), _roundoff(f), _inf(f), exp_x, probe, noise])
    print_table(con, "", columns, rows)
    over = ", ".join(r.qk_norm_exp_overflows) or "none"
    print_facts(
        con,
        [
            ("QK-norm logit bound", f"sqrt(d_head) = sqrt({r.head_dim}) = {r.qk_norm_logit_bound:.2f}"),
            ("e^bound overflows in", f"{over} (an unshifted softmax; subtracting the row max avoids it)"),
            ("noise epsilon", r.epsilon_convention),
        ],
    )
    print_conventions(con, r.conventions)
