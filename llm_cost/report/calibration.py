"""Tables for ``llm-cost calibrate`` and ``llm-cost validate``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_cost.analyses.calibration import RowResult, SourceRow, UserCalibration, Validation
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


def render_parameters(con, c: UserCalibration) -> None:
    """The profile's parameters: value, unit, and whether the fit left it at a bound."""
    p = c.profile
    values = to_data(p.parameters.family) | to_data(p.parameters.engine)
    rows = [[k, f"{v:.4g}", PARAMETERS[k].unit, "at a bound" if k in p.at_bounds else ""] for k, v in values.items()]
    print_table(
        con,
        f"profile {p.name}: the {p.family} family under {p.engine}",
        [("parameter", "left"), ("value", "right"), ("unit", "left"), ("", "left")],
        rows,
    )


def render_rows(con, title: str, results: list[RowResult]) -> None:
    """Per row: measured, held-out prediction and its error, bound and estimate with theirs."""
    rows = [
        [
            r.id,
            r.gpu,
            r.engine,
            r.category,
            fmt_seconds(r.measured_s),
            fmt_seconds(r.predicted_s),
            _pct(r.error),
            fmt_seconds(r.bound_s),
            _pct(r.bound_error),
            fmt_seconds(r.estimate_s),
            _pct(r.estimate_error),
        ]
        for r in results
    ]
    print_table(
        con,
        title,
        [
            ("row", "left"),
            ("gpu", "left"),
            ("engine", "left"),
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


def render_calibration(con, c: UserCalibration) -> None:
    """``calibrate``: where the profile went, its parameters, every row held out."""
    if c.out:
        con.print(f"[bold]wrote profile {c.profile.name} to {c.out}[/bold]")
    render_parameters(con, c)
    render_rows(con, f"{c.profile.name}: predicted vs measured, {c.method} ({len(c.results)} rows)", c.results)
    print_conventions(
        con,
        [
            note("calibration.method", method=c.method, median=c.median),
            note("calibration.estimate", mfu=DEFAULT_MFU, mbu=DEFAULT_MBU),
        ],
    )


def _short(source: str) -> str:
    return source if len(source) <= 70 else source[:67] + "..."


def render_sources(con, v: Validation) -> None:
    """One row per source: its engine, GPUs, rows, situation held out, median and max error, within
    10% and inside the band."""
    rows = [
        [
            _short(s.source),
            s.engine,
            ", ".join(s.gpus),
            fmt_int(s.rows),
            s.situation + (", checked only" if s.check_only else ""),
            _abs_pct(s.median),
            _abs_pct(s.max),
            f"{s.within_10pct}/{s.rows}",
            f"{s.in_band}/{s.rows}",
        ]
        for s in v.by_source
    ]
    rows.append(
        [
            "all",
            "",
            "",
            fmt_int(v.rows),
            "",
            _abs_pct(v.median),
            "",
            f"{v.within_10pct}/{v.rows}",
            f"{v.in_band}/{v.rows}",
        ]
    )
    print_table(
        con,
        f"the time model, leave one source out: {v.sources} sources, {v.rows} rows",
        [
            ("source", "left"),
            ("engine", "left"),
            ("GPUs", "left"),
            ("rows", "right"),
            ("held out as", "left"),
            ("median", "right"),
            ("max", "right"),
            ("within 10%", "right"),
            ("in band", "right"),
        ],
        rows,
    )


def render_bands(con, v: Validation) -> None:
    """The bands: measured / predicted of held-out rows at p10 and p90, by situation and regime."""
    rows = [
        [str(b.situation), str(b.regime), f"x{b.low:.2f}", f"x{b.high:.2f}", fmt_int(b.rows), fmt_int(b.sources)]
        for b in v.bands
    ]
    print_table(
        con,
        "error bands: measured / predicted of held-out rows, 10th and 90th percentile",
        [
            ("prediction", "left"),
            ("regime", "left"),
            ("p10", "right"),
            ("p90", "right"),
            ("rows", "right"),
            ("sources", "right"),
        ],
        rows,
    )


def render_validation(con, v: Validation) -> None:
    """``validate``: per source (or a profile's rows), then the bands and the conventions."""
    if v.profile is not None and v.method != "leave-one-source-out":  # a user's profile predicting them
        render_rows(
            con, f"{v.profile}: the shipped rows of its family and engine, predicted by it ({v.method})", v.results
        )
    elif v.profile is not None:
        render_rows(con, f"{v.profile}: its rows, each predicted by the fit without its source", v.results)
    else:
        render_sources(con, v)
    render_bands(con, v)
    notes = [note("calibration.sources"), note("calibration.estimate", mfu=DEFAULT_MFU, mbu=DEFAULT_MBU)]
    notes += [note("calibration.at_bound", owner=k, parameters=", ".join(p)) for k, p in v.at_bounds.items()]
    notes += [note("calibration.check_only", source=s.source, reason=s.check_only) for s in v.by_source if s.check_only]
    print_conventions(con, notes)


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


__all__ = [
    "render_calibration",
    "render_validation",
    "render_sources",
    "render_bands",
    "render_training_validation",
    "SourceRow",
]
