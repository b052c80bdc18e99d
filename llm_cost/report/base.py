"""Renderers: Rich tables for people, JSON for scripts. No computation happens here.

``to_json`` dumps any result dataclass with stable keys (the dataclass field names). The table
renderers take the same objects; every figure is printed with its unit and convention.
Rich is imported only when a table is printed, so ``--json`` stays fast.
"""

from __future__ import annotations

import io
import os
import re
import sys
from collections.abc import Iterable
from typing import Any

from llm_cost.core.errors import OutputError
from llm_cost.core.serialize import dumps, plain
from llm_cost.core.units import Number, fmt_iec, fmt_int, fmt_si

__all__ = [
    "to_json",
    "console",
    "PlainConsole",
    "write_out",
    "stand_in",
    "print_table",
    "rows_that_matter",
    "shown_caption",
    "TABLE_ROWS",
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
    The text is ``json.dumps(indent=2)``'s, written by :func:`~llm_cost.core.serialize.dumps`."""
    data = plain(result)
    text = dumps(data)
    if encodable(text, _encoding()) == text:
        return text
    import json

    return json.dumps(data, indent=2, allow_nan=False)


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


#: The fewest columns text is laid out in, whatever the terminal says (:func:`console`).
MIN_WIDTH = 80


def console(plain: bool = True):  # noqa: ANN201 - rich type imported lazily
    """A console that renders into a page in memory (see :func:`write_out`): colours only on a
    terminal and without NO_COLOR; a pipe or file gets plain text, 160 columns wide (or $COLUMNS),
    a terminal its own width, at least :data:`MIN_WIDTH`. Plain text is written by :class:`PlainConsole` (unless not
    ``plain``), Rich's own console for anything else.

    Emoji codes are off: no table means ``:name:`` as an emoji, and Rich's emoji lookup costs a
    cold start about 3 ms of the 10 ms a table takes (importing its table of 4,000 codes and
    scanning every cell for them)."""
    import shutil

    # a terminal's own width (or $COLUMNS); 160 columns when writing to a pipe or file; at least
    # MIN_WIDTH, where a table's every figure still shows (an attack: COLUMNS=1 printed a character
    # per cell)
    width = max(MIN_WIDTH, shutil.get_terminal_size(fallback=(160, 24)).columns)
    styled = _is_terminal() and not os.environ.get("NO_COLOR")
    if plain and not styled:
        return PlainConsole(width)
    return _rich_console(_Page(), width, styled)


def _rich_console(page: io.StringIO, width: int, styled: bool):  # noqa: ANN202 - rich type imported lazily
    from rich.console import Console

    return Console(
        file=page,
        highlight=False,
        emoji=False,
        soft_wrap=False,
        width=width,
        force_terminal=styled,
        no_color=not styled,
    )


#: A Rich markup tag (rich/markup.py's RE_TAGS without the escapes, which :class:`PlainConsole`
#: leaves to Rich).
_TAG = re.compile(r"\[([a-z#/@][^[]*?)]")


class PlainConsole:
    """Rich's console for plain text (a pipe or a file), written without importing it: Rich's
    console module and its styles take a cold start about as long as the command's own work.

    ``print`` of a string with simple markup, of a table as :func:`print_table` builds it and of a
    grid as :func:`print_facts` builds it, each fitting the width, writes the text Rich writes
    (its markup stripped, its boxes drawn, its cells padded and justified as Rich pads them; a test
    compares the two on every command); anything else (a cell to wrap, an escape, another
    renderable or option, an encoding without box characters) is printed by a Rich console writing
    into the same page, and any other attribute is that console's."""

    def __init__(self, width: int) -> None:
        self.width = width
        self._page = _Page()
        self._rich: Any = None

    @property
    def file(self) -> io.StringIO:
        return self._page if self._rich is None else self._rich.file

    @file.setter
    def file(self, stream: Any) -> None:
        self._real().file = stream

    def _real(self) -> Any:
        if self._rich is None:
            self._rich = _rich_console(self._page, self.width, False)
        return self._rich

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real(), name)

    def print(self, *objects: Any, **options: Any) -> None:
        """Write ``objects`` as Rich's ``Console.print`` would."""
        text = None
        if self._rich is None and set(options) <= {"soft_wrap"} and len(objects) <= 1 and _utf(self._page.encoding):
            text = self._plain(objects[0] if objects else "", bool(options.get("soft_wrap")))
        if text is None:
            self._real().print(*objects, **options)
        else:
            self._page.write(text)

    def _plain(self, obj: Any, soft_wrap: bool) -> str | None:
        if isinstance(obj, str):
            line = _plain_text(obj)
            if line is None or "\n" in line or (not soft_wrap and _cells(line) > self.width):
                return None
            return line + "\n"
        from rich import box
        from rich.table import Table

        if type(obj) is not Table or obj.rows and any(r.style or r.end_section for r in obj.rows):
            return None
        if obj.box is box.HEAVY_HEAD:
            return _heavy_table(obj, self.width)
        if obj.box is None:
            return _grid(obj, self.width)
        return None


def _utf(encoding: str) -> bool:
    return encoding.replace("-", "").replace("_", "").startswith("utf")


def _cells(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def _plain_text(markup: Any) -> str | None:
    """The text Rich shows for ``markup`` (its tags removed), or None where Rich would do more: an
    escape, a non-string."""
    if not isinstance(markup, str) or "\\" in markup:
        return None
    return _TAG.sub("", markup)


def _column_cells(table: Any, header: bool) -> list[list[str]] | None:
    """Each column's cells as plain text (the header first), or None if one is not plain."""
    out = []
    for c in table.columns:
        if (
            c.footer
            or c.no_wrap
            and header
            or c.width is not None
            or c.min_width is not None
            or c.max_width is not None
            or c.ratio is not None
            or c.style
            or c.header_style
            or c.vertical != "top"
            or c.justify not in ("left", "right")
        ):
            return None
        cells = [_plain_text(x) for x in ([c.header] if header else []) + list(c._cells)]
        plain = [x for x in cells if x is not None and "\n" not in x]
        if len(plain) < len(cells):
            return None
        out.append(plain)
    return out


def _justified(text: str, width: int, justify: str) -> str:
    pad = " " * (width - _cells(text))
    return pad + text if justify == "right" else text + pad


def _heavy_table(t: Any, width: int) -> str | None:
    """A :func:`print_table` table as Rich draws it when it fits ``width``: a heavy head, a cell
    padding of one, the title and caption left-justified over the table's width."""
    from rich._ratio import ratio_distribute

    if (
        not t.show_header
        or not t.show_edge
        or t.show_lines
        or t.show_footer
        or t.expand
        or t.width is not None
        or tuple(t.padding) != (0, 1, 0, 1)
        or not t.pad_edge
        or t.collapse_padding
        or t.leading
        or t.title_justify != "left"
        or t.caption_justify != "left"
        or t.style not in ("", "none", None)
        or t.row_styles
    ):
        return None
    columns = _column_cells(t, header=True)
    if columns is None:
        return None
    extra = len(columns) + 1
    inner = width - extra
    widths = [max(map(_cells, cells)) + 2 for cells in columns]
    if sum(widths) > inner:
        return None  # Rich wraps or folds cells
    if t.min_width is not None and sum(widths) < t.min_width - extra:
        pads = ratio_distribute(min(t.min_width - extra, inner) - sum(widths), widths)
        widths = [w + p for w, p in zip(widths, pads)]
    total = sum(widths) + extra
    title = _annotation(t.title, total)
    caption = _annotation(t.caption, total)
    if title is None or caption is None:
        return None
    lines = title
    justify = [c.justify for c in t.columns]
    rows = list(zip(*columns))
    lines.append("┏" + "┳".join("━" * w for w in widths) + "┓")
    for i, row in enumerate(rows):
        edge, bar = ("┃", "┃") if i == 0 else ("│", "│")
        body = bar.join(" " + _justified(cell, w - 2, j) + " " for cell, w, j in zip(row, widths, justify))
        lines.append(edge + body + edge)
        if i == 0:
            lines.append("┡" + "╇".join("━" * w for w in widths) + "┩")
    lines.append("└" + "┴".join("─" * w for w in widths) + "┘")
    return "".join(line + "\n" for line in lines + caption)


def _annotation(markup: Any, width: int) -> list[str] | None:
    """A table's title or caption as Rich prints it over the table's ``width``, left-justified: its
    lines (none without one), or None where Rich would do more than strip its tags. One that does
    not fit on a line is wrapped by Rich itself (a console of that width prints it as a table
    renders its annotations), which costs far less than Rich rendering every cell of a long table."""
    if not markup:
        return []
    plain = _plain_text(markup)
    if plain is None or "\n" in plain:
        return None
    if _cells(plain) <= width:
        return [_justified(plain, width, "left")]
    page = _Page()
    _rich_console(page, width, False).print(markup, justify="left")
    return page.getvalue().rstrip("\n").split("\n")


def _grid(t: Any, width: int) -> str | None:
    """A :func:`print_facts` grid as Rich lays it out when it fits ``width``: columns two spaces
    apart, each cell left-justified to its column's width."""
    if (
        t.show_header
        or t.show_edge
        or t.show_lines
        or t.expand
        or t.width is not None
        or t.min_width is not None
        or tuple(t.padding) != (0, 2, 0, 2)
        or t.pad_edge
        or not t.collapse_padding
        or t.leading
        or t.title
        or t.caption
        or t.style not in ("", "none", None)
        or t.row_styles
        or any(c.justify != "left" for c in t.columns)
    ):
        return None
    columns = _column_cells(t, header=False)
    if not columns or not columns[0]:
        return None
    widths = [max(map(_cells, cells)) for cells in columns]
    gaps = 2 * (len(columns) - 1)
    if sum(widths) + gaps > width:
        return None  # Rich wraps the last column
    lines = ["  ".join(_justified(cell, w, "left") for cell, w in zip(row, widths)) for row in zip(*columns)]
    return "".join(line + "\n" for line in lines)


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


#: Rows a grid's table prints whole; a longer grid prints :data:`SHOWN_ROWS` of them (``--all-rows``: all).
TABLE_ROWS = 40
#: Rows a long grid's table prints.
SHOWN_ROWS = 20


def rows_that_matter(
    count: int, regime: list | None = None, best: int | None = None, series: list | None = None
) -> list[int]:
    """Indices (ascending) of the rows a table of a ``count``-row grid prints: every row up to
    :data:`TABLE_ROWS`; else the first and last, each row whose ``regime`` (what bounds it, say)
    differs from the row before it in its ``series`` (the rows of one context, say; by default
    all rows are one) and that row before, the ``best`` row, and evenly spaced rows up to
    :data:`SHOWN_ROWS` in all (more only where the regime changes more often)."""
    if count <= TABLE_ROWS:
        return list(range(count))
    chosen = {0, count - 1}
    if regime is not None:
        last: dict = {}  # the row before, by series
        for i in range(count):
            line = series[i] if series is not None else None
            before = last.get(line)
            if before is not None and regime[i] != regime[before]:
                chosen.update((before, i))
            last[line] = i
    if best is not None:
        chosen.add(best)
    spare = max(SHOWN_ROWS - len(chosen), 0)
    for k in range(1, spare + 1):
        if len(chosen) >= SHOWN_ROWS:
            break
        chosen.add(round(k * (count - 1) / (spare + 1)))
    return sorted(chosen)


def shown_caption(shown: int, count: int) -> str | None:
    """The line under a long grid's table saying how many of its rows it prints, or None for all."""
    if shown == count:
        return None
    return (
        f"{shown} of {count:,} rows: the first and last, where the regime changes, and evenly spaced ones; "
        "--all-rows prints every row, --csv or --json every row as data"
    )


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
    from llm_cost.core.units import fmt_rate, fmt_seconds

    parts = [p for p in (fmt_band(predicted_s, low_s, high_s),) if p]
    if profile:
        parts.append(f"profile {profile}" + (f"/{engine}" if engine else ""))
    if rows is not None:
        parts.append(f"{rows} rows" + (", transferred" if kind == "transferred" else ""))
    text = fmt_seconds(predicted_s) + (f" ({', '.join(parts)})" if parts else "")
    if tokens_per_s is not None:
        text += f" · {fmt_rate(tokens_per_s)} {tokens_what}"
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
