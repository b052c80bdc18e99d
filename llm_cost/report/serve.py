"""Tables for ``llm-cost serve``: the chosen configuration, then the frontier with it marked."""

from __future__ import annotations

from llm_cost.analyses.serving import Candidate, ServePlan
from llm_cost.core.choices import ServingMode
from llm_cost.core.units import fmt_int, fmt_seconds
from llm_cost.report.base import print_conventions, print_facts, print_table


def _usd(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"${x:,.{digits}f}"


def _gpus(n: int) -> str:
    return f"{n:,} GPU" + ("" if n == 1 else "s")


def _step(c: Candidate) -> str:
    if c.mode == ServingMode.AGGREGATED:
        return "prompts apart" if c.chunk_tokens is None else f"chunk {fmt_int(c.chunk_tokens)}"
    return f"prefill batch {c.prefill_batch}"


#: Console columns below which the frontier table leaves out its derived columns.
WIDE = 120
#: Frontier rows a table shows (evenly spaced; the JSON has every one).
TABLE_ROWS = 14


def _shown(frontier: list[Candidate], chosen: Candidate) -> list[Candidate]:
    """At most :data:`TABLE_ROWS` frontier points, evenly spaced from slowest per user to fastest,
    and the chosen configuration, by tokens/s per user."""
    n = len(frontier)
    picks = frontier if n <= TABLE_ROWS else [frontier[i * (n - 1) // (TABLE_ROWS - 1)] for i in range(TABLE_ROWS)]
    if chosen not in picks:
        picks = [*picks, chosen]
    return sorted(picks, key=lambda c: c.tokens_per_s_per_user)


def render(con, r: ServePlan, display_name: str, gpu_name: str) -> None:
    """The traffic and targets, the chosen configuration's figures, the frontier, the conventions."""
    rate = (
        f"{r.qps:g} requests/s"
        if r.qps is not None
        else f"as much as {_gpus(r.gpu_budget)} {'serves' if r.gpu_budget == 1 else 'serve'}"
    )
    targets = ", ".join(
        f"{name} <= {fmt_seconds(v)}"
        for name, v in (("TTFT", r.ttft_target_s), ("TPOT", r.tpot_target_s))
        if v is not None
    )
    con.print(
        f"[bold]{display_name} on {gpu_name}: {r.input_tokens:,}-token prompts, {r.output_tokens:,} output "
        f"tokens, {rate}; targets: {targets or 'none'}[/bold]"
    )
    c = r.chosen
    facts = [
        (
            "chosen",
            f"[bold]{c.mode.value}, {c.describe()}[/bold] ({_gpus(c.gpus)}), concurrency {c.concurrency} per "
            f"replica, {_step(c)}",
        ),
        (
            "TTFT (prediction)",
            f"[bold]{fmt_seconds(c.ttft_s)}[/bold] (waiting {fmt_seconds(c.queue_s)}"
            + (f", KV transfer {fmt_seconds(c.kv_transfer_s)}" if c.kv_transfer_s else "")
            + ")",
        ),
        ("TPOT (prediction)", f"[bold]{fmt_seconds(c.tpot_s)}[/bold] mean; slowest step {fmt_seconds(c.tpot_max_s)}"),
        ("tokens/s per user", f"{c.tokens_per_s_per_user:,.1f}"),
        (
            "output tokens/s",
            f"{c.output_tokens_per_s:,.0f} in all, [bold]{c.output_tokens_per_s_per_gpu:,.1f} per "
            f"GPU[/bold]; {c.requests_per_s:,.3g} requests/s",
        ),
        (
            "max concurrency (KV cache)",
            f"{fmt_int(c.max_concurrency)} sequences per replica at their steady-state lengths",
        ),
    ]
    if c.usd_per_request is not None:
        facts.append(
            (
                "cost",
                f"[bold]{_usd(c.usd_per_million_output_tokens)}[/bold] per million output tokens, "
                f"{_usd(c.usd_per_million_input_tokens)} per million input tokens, "
                f"{_usd(c.usd_per_request, 5)} per request",
            )
        )
    facts += [
        ("binding constraint", r.binding),
        ("aggregated or disaggregated", r.mode_verdict),
        (
            "searched",
            f"{fmt_int(r.candidates_evaluated)} configuration{'s' if r.candidates_evaluated != 1 else ''} "
            f"({fmt_int(r.candidates_feasible)} feasible), {fmt_int(r.steps_timed)} steps timed",
        ),
    ]
    print_facts(con, facts)
    shown = _shown(r.frontier, c)
    caption = (
        f"{len(shown) - (c not in r.frontier)} of the frontier's {len(r.frontier)} points (--json has all); > "
        "the chosen configuration, which sits below the frontier when a target binds; N x TPt = N replicas "
        "of TP t; P + D = prefill and decode pools"
    )
    title = f"frontier: output tokens/s per GPU against tokens/s per user ({r.time_model})"
    if con.width < WIDE:
        rows = [
            [
                (">" if f == c else "") + f.describe(),
                str(f.concurrency),
                fmt_seconds(f.ttft_s),
                fmt_seconds(f.tpot_s),
                f"{f.output_tokens_per_s_per_gpu:,.1f}",
                "yes" if f.meets else "no: " + ",".join(f.violates),
            ]
            for f in shown
        ]
        print_table(
            con,
            title,
            [
                ("configuration", "left"),
                ("conc.", "right"),
                ("TTFT", "right"),
                ("TPOT", "right"),
                ("tok/s/GPU", "right"),
                ("meets", "left"),
            ],
            rows,
            caption=caption + f"; below {WIDE} columns the mode, step, tokens/s per user (1 / TPOT) and "
            "$/M are left out",
        )
    else:
        rows = [
            [
                ">" if f == c else "",
                f.mode.value[:5] + ".",
                str(f.gpus),
                f.describe(),
                str(f.concurrency),
                _step(f),
                fmt_seconds(f.ttft_s),
                fmt_seconds(f.tpot_s),
                f"{f.tokens_per_s_per_user:,.1f}",
                f"{f.output_tokens_per_s_per_gpu:,.1f}",
                _usd(f.usd_per_million_output_tokens),
                "yes" if f.meets else "no: " + ", ".join(f.violates),
            ]
            for f in shown
        ]
        print_table(
            con,
            title,
            [
                ("", "left"),
                ("mode", "left"),
                ("GPUs", "right"),
                ("configuration", "left"),
                ("concurrency", "right"),
                ("step", "left"),
                ("TTFT", "right"),
                ("TPOT", "right"),
                ("tok/s/user", "right"),
                ("out tok/s/GPU", "right"),
                ("$/M out", "right"),
                ("meets", "left"),
            ],
            rows,
            caption=caption,
        )
    print_conventions(con, r.conventions)
