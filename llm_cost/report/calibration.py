"""Tables for ``llm-cost calibrate`` and ``llm-cost validate``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_cost.analyses.calibration import Calibration, ProfileTable
from llm_cost.core.notes import note
from llm_cost.core.units import fmt_int, fmt_seconds
from llm_cost.perf.profile import PARAMETERS
from llm_cost.perf.timemodel import DEFAULT_MBU, DEFAULT_MFU
from llm_cost.report.base import print_conventions, print_table
from llm_cost.specs.declare import to_data

if TYPE_CHECKING:
    from llm_cost.analyses.train_published import TrainingValidation


def _pct(x: float) -> str:
    return f"{x:+.1%}"


def _abs_pct(x: float) -> str:
    return f"{x:.1%}"


def _status(name: str, value: float, c: Calibration) -> str:
    """fitted, at its prior, or fixed at a base profile's value (a fit of few rows)."""
    if name in c.free:
        return "fitted"
    return "prior" if value == PARAMETERS[name].prior else "base profile's"


def render_parameters(con, c: Calibration) -> None:
    """The profile's parameters: value, unit, fitted or at its prior."""
    values = to_data(c.profile.parameters)
    rows = [[k, f"{v:.4g}", PARAMETERS[k].unit, _status(k, v, c)] for k, v in values.items()]
    print_table(
        con,
        f"profile {c.profile.name}: {c.profile.gpu}, {c.profile.engine}",
        [("parameter", "left"), ("value", "right"), ("unit", "left"), ("", "left")],
        rows,
    )


def render_rows(con, c: Calibration) -> None:
    """Per row: measured, leave-one-out prediction and its error, bound and estimate with theirs."""
    rows = [
        [
            r.id,
            r.category,
            fmt_seconds(r.measured_s),
            fmt_seconds(r.loo_s),
            _pct(r.loo_error),
            fmt_seconds(r.bound_s),
            _pct(r.bound_error),
            fmt_seconds(r.estimate_s),
            _pct(r.estimate_error),
        ]
        for r in c.rows
    ]
    print_table(
        con,
        f"{c.profile.name} ({c.profile.kind}): predicted vs measured, {c.method} ({len(c.rows)} rows)",
        [
            ("row", "left"),
            ("category", "left"),
            ("measured", "right"),
            ("predicted", "right"),
            ("error", "right"),
            ("bound", "right"),
            ("error", "right"),
            ("estimate", "right"),
            ("error", "right"),
        ],
        rows,
    )


def render_categories(con, c: Calibration) -> None:
    """Median and max |error| per category: the prediction (held out), the bound and the estimate."""
    rows = [
        [
            k.category,
            fmt_int(k.rows),
            _abs_pct(k.loo_median),
            _abs_pct(k.loo_max),
            f"{k.loo_within_10pct}/{k.rows}",
            _abs_pct(k.bound_median),
            _abs_pct(k.estimate_median),
            f"{k.estimate_within_10pct}/{k.rows}",
        ]
        for k in c.categories
    ]
    print_table(
        con,
        f"{c.profile.name}: |error| by category, prediction {c.method}",
        [
            ("category", "left"),
            ("rows", "right"),
            ("median", "right"),
            ("max", "right"),
            ("within 10%", "right"),
            ("bound median", "right"),
            ("estimate median", "right"),
            ("estimate within 10%", "right"),
        ],
        rows,
    )


def render_calibration(con, c: Calibration) -> None:
    """``calibrate``: where the profile went, its parameters, the LOO table by category."""
    if c.out:
        con.print(f"[bold]wrote profile {c.profile.name} to {c.out}[/bold]")
    render_parameters(con, c)
    render_categories(con, c)
    print_conventions(
        con,
        [note("calibration.fixed", parameter=k, why=why) for k, why in c.fixed.items()] + [note("calibration.error")],
    )


def render_validation(con, results: list[Calibration]) -> None:
    """``validate``: per profile, every row and the errors by category."""
    for c in results:
        render_rows(con, c)
        render_categories(con, c)
    print_conventions(
        con, [note("calibration.validation"), note("calibration.estimate", mfu=DEFAULT_MFU, mbu=DEFAULT_MBU)]
    )


def _opt(x: float | None) -> str:
    return "-" if x is None else _abs_pct(x)


def render_profile_table(con, t: ProfileTable) -> None:
    """``validate``: one row per fitted (GPU, engine) profile: leave-one-out, then out of sample."""
    rows = [
        [
            c.profile,
            str(c.engine),
            fmt_int(c.rows),
            _abs_pct(c.loo_median),
            _abs_pct(c.loo_max),
            f"{c.loo_low:+.0%}/{c.loo_high:+.0%}",
            f"{c.loo_in_band}/{c.rows}",
            f"{_opt(c.same_engine_median)} ({c.same_engine_rows})" if c.same_engine_rows else "-",
            f"{c.same_engine_in_band}/{c.same_engine_rows}" if c.same_engine_rows else "-",
            f"{_opt(c.other_engine_median)} ({c.other_engine_rows})" if c.other_engine_rows else "-",
        ]
        for c in t.profiles
    ]
    print_table(
        con,
        "profiles per (GPU, engine): leave-one-out, then out of sample",
        [
            ("profile", "left"),
            ("engine", "left"),
            ("rows", "right"),
            ("LOO median", "right"),
            ("LOO max", "right"),
            ("band", "right"),
            ("in band", "right"),
            ("its engine, other GPUs: median (rows)", "right"),
            ("in band", "right"),
            ("other engines: median (rows)", "right"),
        ],
        rows,
    )
    print_conventions(
        con,
        [note("calibration.profiles", measured=t.measured_transfer_widen, used=t.transfer_widen)],
    )


def render_training_validation(con, v: TrainingValidation) -> None:  # noqa: ANN001 - a rich Console
    """Every published training run predicted out of source, then the medians per source."""
    con.print("[bold]Published training runs, tokens/s per GPU, each predicted out of source[/bold]")
    rows = [
        [
            r.id,
            r.source,
            f"{r.measured_tokens_per_s_per_gpu:,.0f}",
            f"{r.predicted_tokens_per_s_per_gpu:,.0f}",
            f"{r.error:+.1%}",
            r.search_layout,
            f"{r.search_error:+.1%}",
        ]
        for r in v.rows
    ]
    print_table(
        con,
        f"{len(v.rows)} runs ({v.table})",
        [
            ("run", "left"),
            ("source", "left"),
            ("published", "right"),
            ("predicted", "right"),
            ("error", "right"),
            ("search's pick", "left"),
            ("its error", "right"),
        ],  # fmt: skip
        rows,
    )
    print_table(
        con,
        "median |error| out of source",
        [("rows of", "left"), ("runs", "right"), ("published layout", "right"), ("search", "right")],
        [[s.name, str(s.rows), f"{s.median_error:.1%}", f"{s.median_search_error:.1%}"] for s in v.sources],
    )
    print_conventions(con, v.conventions)
