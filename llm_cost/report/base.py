"""Renderers: Rich tables for people, JSON for scripts. No computation happens here.

``to_json`` dumps any result dataclass with stable keys (the dataclass field names). The table
renderers take the same objects; every figure is printed with its unit and convention.
Rich is imported only when a table is printed, so ``--json`` stays fast.
"""

from __future__ import annotations

import io
import os
import sys
from collections.abc import Iterable
from typing import Any

from llm_cost.core.errors import OutputError
from llm_cost.core.serialize import plain
from llm_cost.core.units import Number, fmt_iec, fmt_int, fmt_si

__all__ = [
    "to_json",
    "console",
    "write_out",
    "stand_in",
    "print_table",
    "print_facts",
    "print_conventions",
    "pct",
    "bytes_exact",
    "fmt_band",
    "fmt_prediction",
    "fmt_step_prediction",
    "layout_text",
]

#: ASCII stand-ins for the characters the tables use, for a stdout that cannot encode them
#: (PYTHONIOENCODING=ascii, a latin-1 terminal); anything else becomes "?".
_ASCII = str.maketrans(
    {
        "≈": "~",
        "µ": "u",
        "·": "*",
        "—": "-",
        "–": "-",
        "±": "+/-",
        "λ": "lambda",
        "θ": "theta",
        "§": "S",
        "×": "x",
        "…": "...",
    }
)


def to_json(result: Any) -> str:
    """The result object as JSON (stable keys = field names; exact integers stay integers;
    non-finite floats are null); characters stdout cannot encode are written as ``\\u`` escapes.
    (``json`` is imported here, not with the module: a table has no use for it, about 2 ms.)"""
    import json

    data = plain(result)
    text = json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)
    return text if encodable(text, _encoding()) == text else json.dumps(data, indent=2, allow_nan=False)


class _Page(io.StringIO):
    """A page of text output held in memory until it is whole, carrying stdout's encoding so
    Rich draws tables with ASCII lines where stdout cannot show box characters."""

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return _encoding()


def _encoding() -> str:
    return (getattr(sys.stdout, "encoding", None) or "utf-8").lower()


def _is_terminal() -> bool:
    try:
        return bool(sys.stdout is not None and sys.stdout.isatty())
    except (OSError, ValueError):
        return False


def console():  # noqa: ANN201 - rich type imported lazily
    """A Rich console that renders into a page in memory (see :func:`write_out`): colours only
    on a terminal and without NO_COLOR; a pipe or file gets plain text, 120 columns wide
    (or $COLUMNS), a terminal its own width.

    Emoji codes are off: no table means ``:name:`` as an emoji, and Rich's emoji lookup costs a
    cold start about 3 ms of the 10 ms a table takes (importing its table of 4,000 codes and
    scanning every cell for them)."""
    import shutil

    from rich.console import Console

    # a terminal's own width (or $COLUMNS); 160 columns when writing to a pipe or file
    width = shutil.get_terminal_size(fallback=(160, 24)).columns
    styled = _is_terminal() and not os.environ.get("NO_COLOR")
    return Console(
        file=_Page(),
        highlight=False,
        emoji=False,
        soft_wrap=False,
        width=width,
        force_terminal=styled,
        no_color=not styled,
    )


def stand_in(exc: UnicodeError) -> tuple[str, int]:
    """A codec error handler (``codecs.register_error``) writing the ASCII stand-ins of
    :data:`_ASCII` (or ``?``) for the characters a stream cannot encode."""
    if not isinstance(exc, UnicodeEncodeError):
        raise exc
    text = exc.object[exc.start : exc.end].translate(_ASCII)
    return "".join(c if c.isascii() else "?" for c in text), exc.end


def encodable(text: str, encoding: str) -> str:
    """``text`` with the characters ``encoding`` cannot represent replaced by ASCII stand-ins
    (``≈`` -> ``~``, ``µ`` -> ``u``) or ``?``."""
    try:
        text.encode(encoding)
        return text
    except (UnicodeEncodeError, LookupError):
        pass
    try:
        return text.translate(_ASCII).encode(encoding, "replace").decode(encoding)
    except LookupError:
        return text.translate(_ASCII).encode("ascii", "replace").decode("ascii")


def write_out(text: str) -> None:
    """Write a whole result to stdout and flush it; OutputError for a closed or full stdout
    or a reader that went away (broken pipe)."""
    stream = sys.stdout
    if stream is None:
        raise OutputError("stdout is closed; nothing to write the result to")
    try:
        stream.write(encodable(text, _encoding()))
        stream.flush()
    except BrokenPipeError:
        raise OutputError("stdout: the reader closed the pipe", broken_pipe=True) from None
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        raise OutputError(f"cannot write to stdout: {reason}") from None


def print_table(
    con, title: str, columns: list[tuple[str, str]], rows: Iterable[list[str]], caption: str | None = None
) -> None:
    """A table: ``columns`` are (header, justify) pairs; ``rows`` already-formatted strings."""
    import textwrap

    from rich.table import Table

    rows = [list(r) for r in rows]
    longest = max(len(title or ""), len(caption or ""))
    table = Table(
        title=title, caption=caption, title_justify="left", caption_justify="left", min_width=min(longest, con.width)
    )  # the title and caption wrap only at the console's edge
    widest = [max((len(r[i]) for r in rows if i < len(r)), default=0) for i in range(len(columns))]
    natural = sum(max(w, len(h)) for w, (h, _) in zip(widest, columns)) + 3 * len(columns) + 1
    for i, (header, justify) in enumerate(columns):
        # when the table is too wide, a figure (right-aligned) sets its column's width and its
        # header wraps to it; a figure is never cut (it folds only if the console is narrower still)
        if natural > con.width and justify == "right" and len(header) > widest[i]:
            header = textwrap.fill(header, width=max(widest[i], max(len(w) for w in header.split() or [""])))
        table.add_column(header, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for row in rows:
        table.add_row(*row)
    con.print(table)


def print_facts(con, facts: list[tuple[str, str]]) -> None:
    """Aligned ``label  value`` lines; long values wrap inside their column."""
    from rich.table import Table

    grid = Table.grid(padding=(0, 2))
    grid.add_column(no_wrap=True)
    grid.add_column()
    for key, value in facts:
        grid.add_row(f"  {key}", value)
    con.print(grid)


def print_conventions(con, conventions: list) -> None:
    """The conventions a result used (:class:`~llm_cost.core.notes.Note` codes), as dim footnotes."""
    from llm_cost.report.notes import sentence

    for n in conventions:
        con.print(f"[dim]· {sentence(n)}[/dim]", soft_wrap=True)  # one line each; the terminal wraps it


def pct(x: float) -> str:
    """A share as a percentage with one decimal."""
    return f"{100 * x:.1f}%"


def bytes_exact(n: Number) -> str:
    """``131,072 B (128.0 KiB)``-style exact bytes with both unit systems."""
    if isinstance(n, int) or float(n).is_integer():
        exact = f"{fmt_int(int(n))} B"
    else:  # an expectation (e.g. expected experts read): not a whole number of bytes
        exact = f"≈{fmt_int(round(n))} B"
    if abs(float(n)) < 1000:
        return exact
    return f"{exact} = {fmt_si(n)} = {fmt_iec(n)}"


def fmt_band(predicted_s: float, low_s: float | None, high_s: float | None) -> str:
    """``-8% / +12%``: a prediction's error band as shares of it (the lower, then the upper end)."""
    if low_s is None or high_s is None or predicted_s <= 0:
        return ""
    return f"-{1 - low_s / predicted_s:.0%} / +{high_s / predicted_s - 1:.0%}"


def fmt_prediction(
    predicted_s: float,
    low_s: float | None = None,
    high_s: float | None = None,
    profile: str | None = None,
    engine: str | None = None,
    rows: int | None = None,
    kind: str | None = None,
    tokens_per_s: float | None = None,
    tokens_what: str = "tokens/s",
) -> str:
    """A predicted time as every command prints it, e.g. ``14.7 ms (-8% / +12%, profile h100-vllm/vllm,
    23 rows) · 68 tokens/s``: the band (:func:`fmt_band`), the profile and engine it comes from, the
    rows it (or, transferred, its source) was fitted on, and tokens per predicted second. The one
    formatter of predictions, so that every command says the same."""
    from llm_cost.core.units import fmt_seconds

    parts = [p for p in (fmt_band(predicted_s, low_s, high_s),) if p]
    if profile:
        parts.append(f"profile {profile}" + (f"/{engine}" if engine else ""))
    if rows is not None:
        parts.append(f"{rows} rows" + (", transferred" if kind == "transferred" else ""))
    text = fmt_seconds(predicted_s) + (f" ({', '.join(parts)})" if parts else "")
    if tokens_per_s is not None:
        text += f" · {tokens_per_s:,.{0 if tokens_per_s >= 100 else 1}f} {tokens_what}"
    return text


def fmt_step_prediction(step: Any, tokens_what: str = "tokens/s") -> str:
    """:func:`fmt_prediction` of a result carrying ``predicted_s``, ``predicted_low_s``,
    ``predicted_high_s``, ``profile``, ``engine``, ``profile_rows``, ``profile_kind`` and
    ``predicted_tokens_per_s`` (a roofline step)."""
    return fmt_prediction(
        step.predicted_s,
        step.predicted_low_s,
        step.predicted_high_s,
        step.profile,
        step.engine,
        step.profile_rows,
        step.profile_kind,
        step.predicted_tokens_per_s,
        tokens_what,
    )


def layout_text(layout: Any) -> str:
    """``, TP 4 x PP 1 x DP 1 = 4 GPUs (EP 1)`` for a layout of more than one GPU, else empty."""
    if layout.gpus == 1:
        return ""
    return f", TP {layout.tp} x PP {layout.pp} x DP {layout.dp} = {layout.gpus} GPUs (EP {layout.ep})"
