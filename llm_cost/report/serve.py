"""Tables for ``llm-cost serve``: a simulated configuration's distribution; the plan (its chosen
configuration's simulated percentiles, the candidates simulated, the analytic screen's frontier);
GPUs side by side; the analytic plan (the chosen configuration, then the frontier with it marked)."""

from __future__ import annotations

from typing import Any

from llm_cost.analyses.serving import Candidate, ServePlan
from llm_cost.core.choices import ServingMode
from llm_cost.core.types import Engine
from llm_cost.core.units import fmt_given, fmt_int, fmt_rate, fmt_seconds
from llm_cost.report.base import print_conventions, print_facts, print_table


def _usd(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"${x:,.{digits}f}"


def _gpus(n: int) -> str:
    return f"{n:,} GPU" + ("" if n == 1 else "s")


def _step(c: Candidate) -> str:
    if c.mode == ServingMode.AGGREGATED:
        return "prompts apart" if c.chunk_tokens is None else f"chunk {fmt_int(c.chunk_tokens)}"
    return f"prefill batch {c.prefill_batch}"


def _sane(frontier: list[Candidate]) -> list[Candidate]:
    """The frontier points whose TTFT is within :data:`~llm_cost.analyses.serving.FRONTIER_TTFT_S`."""
    from llm_cost.analyses.serving import FRONTIER_TTFT_S

    return [f for f in frontier if f.ttft_s <= FRONTIER_TTFT_S]


#: Console columns below which the frontier table leaves out its derived columns.
WIDE = 120
#: Frontier rows a table shows (evenly spaced; the JSON has every one).
TABLE_ROWS = 14


def _shown(frontier: list[Candidate], chosen: Candidate) -> list[Candidate]:
    """At most :data:`TABLE_ROWS` frontier points, evenly spaced from slowest per user to fastest,
    and the chosen configuration, by tokens/s per user; points with a TTFT past
    :data:`~llm_cost.analyses.serving.FRONTIER_TTFT_S` are left out (JSON keeps them)."""
    frontier = _sane(frontier)
    n = len(frontier)
    picks = frontier if n <= TABLE_ROWS else [frontier[i * (n - 1) // (TABLE_ROWS - 1)] for i in range(TABLE_ROWS)]
    if chosen not in picks:
        picks = [*picks, chosen]
    return sorted(picks, key=lambda c: c.tokens_per_s_per_user)


def render_analytic(con, r: ServePlan, display_name: str, gpu_name: str) -> None:
    """The traffic and targets, the chosen configuration's figures, the frontier, the conventions."""
    con.print(_analytic_heading(r, display_name, gpu_name))
    print_facts(con, _analytic_facts(r))
    _frontier_table(con, r)
    print_conventions(con, r.conventions)


def _analytic_heading(r: ServePlan, display_name: str, gpu_name: str) -> str:
    """The analytic plan's first line: the model, GPU, traffic and targets (met at the band's slow end?)."""
    rate = (
        f"{fmt_given(r.qps)} requests/s"
        if r.qps is not None
        else f"as much as {_gpus(r.gpu_budget)} {'serves' if r.gpu_budget == 1 else 'serve'}"
    )
    screen = next((n for n in r.conventions if n.code == "serve.percentile_screen"), None)
    asked = screen.params.get("asked", {}) if screen is not None else {}
    targets = ", ".join(  # the analytic search bounds means, whatever statistic was asked (a note says so)
        f"mean {name} <= {fmt_seconds(v)}"
        + (f" (a {asked[metric].upper()} target read as the mean)" if metric in asked else "")
        for name, metric, v in (("TTFT", "ttft_s", r.ttft_target_s), ("TPOT", "tpot_s", r.tpot_target_s))
        if v is not None
    )
    if targets and r.violates_at_slow_end is not None:
        slow = ", ".join(r.violates_at_slow_end)
        targets += "; at the band's slow end " + (f"missed: {slow}" if slow else "met too")
    return (
        f"[bold]{display_name} on {gpu_name}: {r.input_tokens:,}-token prompts, {r.output_tokens:,} output "
        f"tokens, {rate}; targets: {targets or 'none'}[/bold]"
    )


def _analytic_facts(r: ServePlan) -> list[tuple[str, str]]:
    """The chosen configuration's figures (with their band where it has one), its cost, and the search."""
    c = r.chosen
    facts = [
        (
            "chosen",
            f"[bold]{c.mode.value}, {c.describe()}[/bold] ({_gpus(c.gpus)}), concurrency {c.concurrency} per "
            f"replica, {_step(c)}",
        ),
        (
            "TTFT (prediction)",
            f"[bold]{fmt_seconds(c.ttft_s)}[/bold]{_range(c.ttft_s, r.ttft_low_s, r.ttft_high_s, fmt_seconds)} "
            f"(waiting {fmt_seconds(c.queue_s)}"
            + (f", KV transfer {fmt_seconds(c.kv_transfer_s)}" if c.kv_transfer_s else "")
            + ")",
        ),
        (
            "TPOT (prediction)",
            f"[bold]{fmt_seconds(c.tpot_s)}[/bold]{_range(c.tpot_s, r.tpot_low_s, r.tpot_high_s, fmt_seconds)} mean; "
            f"slowest step {fmt_seconds(c.tpot_max_s)}",
        ),
        ("tokens/s per user", f"{c.tokens_per_s_per_user:,.1f}"),
        ("output tokens/s", _throughput(r)),
        (
            "max concurrency (KV cache)",
            f"{fmt_int(c.max_concurrency)} sequences per replica at their steady-state lengths",
        ),
    ]
    if c.usd_per_request is not None:
        facts.append(("cost", _cost(r)))
    facts += [
        ("binding constraint", r.binding),
        ("aggregated or disaggregated", r.mode_verdict),
        (
            "searched",
            f"{fmt_int(r.candidates_evaluated)} configuration{'s' if r.candidates_evaluated != 1 else ''} "
            f"({fmt_int(r.candidates_feasible)} feasible), {fmt_int(r.steps_timed)} steps timed",
        ),
    ]
    return facts


def _throughput(r: ServePlan) -> str:
    """The chosen configuration's output tokens/s, in all and per GPU (with their band), and requests/s."""
    c = r.chosen
    return (
        f"{c.output_tokens_per_s:,.0f} in all"
        + _range(c.output_tokens_per_s, r.output_tokens_per_s_low, r.output_tokens_per_s_high, lambda x: f"{x:,.0f}")
        + f", [bold]{c.output_tokens_per_s_per_gpu:,.1f} per GPU[/bold]"
        + _range(
            c.output_tokens_per_s_per_gpu,
            r.output_tokens_per_s_per_gpu_low,
            r.output_tokens_per_s_per_gpu_high,
            lambda x: f"{x:,.1f}",
        )
        + f"; {c.requests_per_s:,.3g} requests/s"
    )


def _cost(r: ServePlan) -> str:
    """The chosen configuration's dollars per million output tokens (all GPU time, with their band),
    per request, and the split between input and output tokens (:data:`~llm_cost.analyses.serving.COST_SPLIT`)."""
    c = r.chosen
    return (
        f"[bold]{_usd(c.usd_per_million_output_tokens)}[/bold] per million output tokens, all GPU time"
        + _range(
            c.usd_per_million_output_tokens,
            r.usd_per_million_output_tokens_low,
            r.usd_per_million_output_tokens_high,
            _usd,
        )
        + f", {_usd(c.usd_per_request, 5)} per request; split by prefill's share, "
        f"{_usd(c.usd_per_million_input_tokens)} per million input and "
        f"{_usd(c.usd_per_million_output_tokens_split)} per million output tokens"
    )


def _frontier_table(con, r: ServePlan) -> None:
    """The frontier's table, the chosen configuration marked ``>``: narrow below :data:`WIDE` columns."""
    c = r.chosen
    shown = _shown(r.frontier, c)
    dropped = len(r.frontier) - len(_sane(r.frontier))
    caption = (
        f"{len(shown) - (c not in r.frontier)} of the frontier's {len(r.frontier)} points (--json has all"
        + (f"; {dropped} with a TTFT past a minute left out" if dropped else "")
        + "); > "
        "the chosen configuration, which sits below the frontier when a target binds; N x TPt = N replicas "
        "of TP t; P + D = prefill and decode pools"
    )
    title = f"frontier: output tokens/s per GPU against tokens/s per user ({r.time_model})"
    if con.width < WIDE:
        caption += f"; below {WIDE} columns the mode, step, tokens/s per user (1 / TPOT) and $/M are left out"
        print_table(con, title, NARROW_COLUMNS, [_narrow_row(f, c) for f in shown], caption=caption)
    else:
        print_table(con, title, WIDE_COLUMNS, [_wide_row(f, c) for f in shown], caption=caption)


#: The frontier table's columns below :data:`WIDE` console columns, and at or above it.
NARROW_COLUMNS = [
    ("configuration", "left"),
    ("conc.", "right"),
    ("TTFT", "right"),
    ("TPOT", "right"),
    ("tok/s/GPU", "right"),
    ("meets", "left"),
]
WIDE_COLUMNS = [
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
]


def _narrow_row(f: Candidate, chosen: Candidate) -> list[str]:
    """A frontier point's cells of :data:`NARROW_COLUMNS`."""
    return [
        (">" if f == chosen else "") + f.describe(),
        str(f.concurrency),
        fmt_seconds(f.ttft_s),
        fmt_seconds(f.tpot_s),
        f"{f.output_tokens_per_s_per_gpu:,.1f}",
        "yes" if f.meets else "no: " + ",".join(f.violates),
    ]


def _wide_row(f: Candidate, chosen: Candidate) -> list[str]:
    """A frontier point's cells of :data:`WIDE_COLUMNS`."""
    return [
        ">" if f == chosen else "",
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


def render(con, r: Any, display_name: str, gpu_name: str) -> None:
    """Any of ``serve``'s results (module docstring)."""
    from llm_cost.analyses.simulated_plan import ServeComparison, SimulatedPlan
    from llm_cost.analyses.simulated_serving import ServeRun

    if isinstance(r, ServeRun):
        render_run(con, r, display_name, gpu_name)
    elif isinstance(r, SimulatedPlan):
        render_plan(con, r, display_name, gpu_name)
    elif isinstance(r, ServeComparison):
        render_comparison(con, r, display_name)
    else:
        render_analytic(con, r, display_name, gpu_name)


#: The latency metrics shown, with their labels.
METRICS = (("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("itl_s", "ITL"), ("e2e_s", "E2E"))


def _s(x: float | None) -> str:
    return "-" if x is None else fmt_seconds(x)


def _targets(targets: dict) -> str:
    return ", ".join(f"{label} {targets[m].label()}" for m, label in METRICS if m in targets) or "none"


def _slow_end(r: Any, metric: str, target: Any) -> str:
    """Whether ``target`` still holds at the band's slow end, with the value reached there."""
    if r.violates_at_slow_end is None:
        return ""
    p = r.percentiles[metric]
    high = getattr(r, f"{metric[:-2]}_high_s") if target.name == "mean" else None
    if target.name in ("p50", "p90", "p99"):
        high = getattr(p, f"{target.name}_high_s")
    elif target.name in p.more_high_s:
        high = p.more_high_s[target.name]
    missed = f"{metric} {target.name}" in r.violates_at_slow_end
    return "slow end: " + ("missed" if missed else "met") + (f" ({_s(high)})" if high is not None and missed else "")


def _span(pair: Any) -> str:
    """An interval ``low-high`` in one unit where both share it (``139-201 ms``), ``-`` without one."""
    if pair is None:
        return "-"
    low, high = (fmt_seconds(v) for v in pair)
    lu, hu = low.rsplit(" ", 1), high.rsplit(" ", 1)
    return f"{lu[0]}-{hu[0]} {hu[1]}" if len(lu) == len(hu) == 2 and lu[1] == hu[1] else f"{low}-{high}"


def _target_cell(r: Any, m: str, target: Any) -> str:
    """The target column of a latency: its bound and verdict, the value of a percentile the table
    has no column for, and the share of requests that meet it on their own."""
    if target is None:
        return "-"
    p = r.percentiles[m]
    text = target.label() + (" missed" if f"{m} {target.name}" in r.violates else " met")
    if target.name in p.more:
        text += f" ({_s(p.more[target.name])})"
    if m in r.within:
        text += f"; {r.within[m]:.0%} of requests within"
    return text


def _pessimistic_cell(r: Any, m: str, target: Any) -> str:
    """Whether ``target`` holds on the pessimistic side of both uncertainties (the slow end's
    sampling interval's upper end), beside the interval row."""
    if target is None or r.violates_pessimistic is None:
        return ""
    return "pessimistic side: " + ("missed" if f"{m} {target.name}" in r.violates_pessimistic else "met")


def _latency_table(con, runs: list, title: str) -> None:
    """Mean, P50, P90, P99 of each latency for one run; the targets beside them (with the share of
    requests meeting each on their own); under each latency the band's fast-end and slow-end runs
    (one run each, :func:`llm_cost.analyses.simulated_serving.with_band`) and each statistic's
    interval, the band and the sampling together (its sampling interval without a band)."""
    r = runs[0]
    rows = []
    for m, label in METRICS:
        p = r.percentiles[m]
        target = r.targets.get(m)
        rows.append([label, _s(getattr(r, m)), _s(p.p50), _s(p.p90), _s(p.p99), _target_cell(r, m, target)])
        if r.band is not None:
            stem = m[:-2]
            for end, label in (("low", "  fast end"), ("high", "  slow end")):
                rows.append(
                    [
                        label,
                        _s(getattr(r, f"{stem}_{end}_s")),
                        *(_s(getattr(p, f"{q}_{end}_s")) for q in ("p50", "p90", "p99")),
                        _slow_end(r, m, target) if target is not None and end == "high" else "",
                    ]
                )
        ranges = p.interval if r.band is not None else p.ci
        if ranges:
            rows.append(
                [
                    "  interval" if r.band is not None else "  sampling",
                    *(_span(ranges.get(q)) for q in ("mean", "p50", "p90", "p99")),
                    _pessimistic_cell(r, m, target),
                ]
            )
    print_table(
        con,
        title,
        [("", "left"), ("mean", "right"), ("P50", "right"), ("P90", "right"), ("P99", "right"), ("target", "left")],
        rows,
    )


def _range(value: float | None, low: float | None, high: float | None, fmt: Any) -> str:
    """`` (band LOW to HIGH)`` of a figure's error band, or nothing without one: from the least to
    the greatest of the nominal ``value`` and the band's two ends (a discrete-event schedule is
    monotone in step time only nearly, so an end's figure can lie past the nominal one, or past
    the other end's; the JSON keeps each end's own figure)."""
    if low is None or high is None:
        return ""
    ends = [x for x in (value, low, high) if x is not None]
    least, most = fmt(min(ends)), fmt(max(ends))
    return " (the same at both ends of the band)" if least == most else f" (band {least} to {most})"


def _verdict(r: Any) -> str:
    """Whether a banded run meets its targets, whether it still does at the band's slow end, and on
    the pessimistic side of both uncertainties (the slow end's sampling intervals' upper ends)."""
    if r.violates_at_slow_end is None or not r.targets:
        return ""
    now = "targets met" if r.meets else "targets missed"
    slow = (
        ", and at the band's slow end too"
        if not r.violates_at_slow_end
        else f"; at the band's slow end missed: {', '.join(r.violates_at_slow_end)}"
    )
    pess = r.violates_pessimistic
    if pess is None:
        return f"; {now}{slow}"
    return f"; {now}{slow}; on the pessimistic side (slow end, sampling): " + (
        "met" if not pess else "missed " + ", ".join(pess)
    )


#: Each engine's own names for the cap on running sequences and the token budget per step
#: (vLLM's ``max_num_seqs`` / ``max_num_batched_tokens``; SGLang's ``max_running_requests`` /
#: ``chunked_prefill_size``; TensorRT-LLM's ``max_batch_size`` / ``max_num_tokens``).
ENGINE_SETTINGS = {
    Engine.VLLM: ("max_num_seqs", "max_num_batched_tokens"),
    Engine.SGLANG: ("max_running_requests", "chunked_prefill_size"),
    Engine.TRTLLM: ("max_batch_size", "max_num_tokens"),
}


def _state(r: Any) -> str:
    """A hybrid model's fixed per-sequence state, in the cache's tokens (empty without one)."""
    sim = r.simulation
    if not sim.state_blocks_per_sequence:
        return ""
    return (
        f" (each running sequence's fixed state takes {fmt_int(sim.state_blocks_per_sequence * sim.block_tokens)} more)"
    )


def _preemptions(r: Any) -> str:
    """The engine's preemptions, or why it has none (TensorRT-LLM's GUARANTEED_NO_EVICT reserves
    each request's whole length at admission)."""
    if r.engine == Engine.TRTLLM:
        return "no preemption (GUARANTEED_NO_EVICT reserves each request's prompt and maximum output)"
    return f"{fmt_int(r.preemptions)} {'retractions' if r.engine == Engine.SGLANG else 'preemptions'}"


def _setting(name: str, value: int, ranks: int) -> str:
    """``max_num_seqs 160 per rank (1,280 in all)`` for vLLM's data-parallel ranks (each engine core
    takes the setting), ``max_num_seqs 1,280`` otherwise."""
    if ranks <= 1:
        return f"{name} {fmt_int(value)}"
    return f"{name} {fmt_int(-(-value // ranks))} per rank ({fmt_int(value)} in all)"


def _run_facts(r: Any) -> list[tuple[str, str]]:
    seqs, budget = ENGINE_SETTINGS.get(r.engine, ENGINE_SETTINGS[Engine.VLLM])
    ranks = r.layout.dp if r.engine == Engine.VLLM else 1  # SGLang's settings are the server's (it splits them)
    facts = [
        (
            "configuration",
            f"[bold]{r.describe()}[/bold] ({_gpus(r.gpus)}), {r.engine}: {_setting(seqs, r.max_num_seqs, ranks)}, "
            f"{_setting(budget, r.max_num_batched_tokens, ranks)}"
            + ("" if r.chunked_prefill else " (no chunked prefill)")
            + (", prefix caching" if r.prefix_caching else ", no prefix caching"),
        ),
        ("traffic", r.workload),
        (
            "goodput",
            f"[bold]{fmt_rate(r.goodput_rps)} requests/s[/bold] meet every target"
            + _range(r.goodput_rps, r.goodput_rps_low, r.goodput_rps_high, fmt_rate)
            + f", of {fmt_rate(r.throughput_rps)} served"
            + (f"; {r.rejected:,} refused (longer than max_model_len)" if r.rejected else ""),
        ),
        (
            "output tokens/s",
            f"{r.output_tokens_per_s:,.0f} in all"
            + _range(
                r.output_tokens_per_s, r.output_tokens_per_s_low, r.output_tokens_per_s_high, lambda x: f"{x:,.0f}"
            )
            + f", [bold]{r.output_tokens_per_s_per_gpu:,.1f} per GPU[/bold]"
            + _range(
                r.output_tokens_per_s_per_gpu,
                r.output_tokens_per_s_per_gpu_low,
                r.output_tokens_per_s_per_gpu_high,
                lambda x: f"{x:,.1f}",
            ),
        ),
        (
            "engine (one replica)",
            f"{r.running_mean:,.1f} sequences running and {r.waiting_mean:,.1f} waiting on average; KV cache "
            f"{fmt_int(r.kv_capacity_tokens)} tokens{_state(r)}, {r.kv_use_mean:.0%} used on average, {r.kv_use_max:.0%} at most; "
            f"{_preemptions(r)}; prefix-cache hits {r.prefix_hit_rate:.0%} of prompt tokens",
        ),
    ]
    if r.usd_per_million_output_tokens is not None:
        facts.append(
            (
                "cost",
                f"[bold]{_usd(r.usd_per_million_output_tokens)}[/bold] per million output tokens"
                + _range(
                    r.usd_per_million_output_tokens,
                    r.usd_per_million_output_tokens_low,
                    r.usd_per_million_output_tokens_high,
                    _usd,
                )
                + f", {_usd(r.usd_per_request, 5)} per request",
            )
        )
    return facts


def _column(targets: Any, metric: str, default: str) -> tuple[str, Any]:
    """The header and the value of one candidate column: the statistic the metric's target bounds
    (default ``default``, ``p99`` or ``p90``), read off a run."""
    target = targets.get(metric)
    name = target.name if target is not None and target.name != "mean" else default
    short = {"ttft_s": "TTFT", "tpot_s": "TPOT"}[metric]

    def value(run: Any) -> Any:
        p = run.percentiles[metric]
        return p.more[name] if name in p.more else getattr(p, name)

    return f"{short} {name.upper()}", value


def _compared(targets: Any, metric: str, default: str) -> str:
    """The percentile a comparison column shows for ``metric``: the one its target bounds when it
    is P50, P90 or P99 (those carry band ends), else ``default``."""
    target = targets.get(metric)
    name = target.name if target is not None else default
    return name if name in ("p50", "p90", "p99") else default


def _band_title(band: Any) -> str:
    """What a latency table's band rows are re-simulated at (nothing without a band)."""
    if band is None:
        return ""
    if band.source == "serving-runs":
        return "; band: re-simulated at the vLLM runs' spread" + (" at saturation" if band.closed_loop else "")
    return "; band: re-simulated at the profile's error band"


def render_run(con, r: Any, display_name: str, gpu_name: str) -> None:
    """One configuration simulated: its facts and its latency distribution."""
    con.print(f"[bold]{display_name} on {gpu_name}, simulated; targets: {_targets(r.targets)}[/bold]{_verdict(r)}")
    print_facts(con, _run_facts(r))
    _latency_table(
        con,
        [r],
        f"latency over {fmt_int(r.simulated_requests)} simulated requests (ITL: every gap between tokens)"
        + _band_title(r.band),
    )
    print_conventions(con, r.conventions)


def _plan_load(r: Any) -> str:
    """The load a plan is for: its rate, or as much as its GPU budget serves saturated by its
    chosen configuration's closed-loop users."""
    if r.qps is not None:
        return f"{fmt_given(r.qps)} requests/s"
    c = r.chosen
    users = c.max_num_seqs * c.replicas
    each = f", {fmt_int(c.max_num_seqs)} per replica" if c.replicas > 1 else ""
    return (
        f"as much as {_gpus(r.gpu_budget)} {'serves' if r.gpu_budget == 1 else 'serve'}, saturated by "
        f"{fmt_int(users)} closed-loop user{'s' if users > 1 else ''} (no think time{each})"
    )


def _plan_lengths(workload: str) -> str:
    """``; prompts 547, outputs 248; 9 shared prefixes ...``: the lengths (and shared prefixes) of a
    plan's traffic, from its :func:`~llm_cost.analyses.simulated_serving.describe` text (its parts
    after the arrivals, before the requests simulated); empty for a trace."""
    parts = workload.split("; ")[1:]
    if parts and parts[-1].endswith(" requests"):
        parts = parts[:-1]
    return "".join(f"; {part}" for part in parts)


def _upper_verdict(c: Any) -> str:
    """A candidate's verdict on the pessimistic side: ``yes``, or each target missed with what
    missed it: the statistic itself where it is over the target (``ttft_s mean 3.21 s``), else the
    upper end of its sampling interval (``tpot_s p90 interval reaches 31.2 ms``: the point value in
    the row is within the target; "to 31.2 ms" had read as the statistic itself, a new user), with a
    digit more where three would print the target's own value."""
    if not c.violates_upper:
        return "yes"
    missed = []
    for v in c.violates_upper:
        metric, _, name = v.partition(" ")
        target = c.targets.get(metric)
        if target is None:  # rejected, overloaded
            missed.append(v)
            continue
        point = target.value(getattr(c.simulation.summary, metric))
        if point is not None and point > target.seconds:
            missed.append(f"{v} {_past(point, target.seconds)}")
            continue
        ci = c.percentiles[metric].ci.get(name)
        missed.append(f"{v} interval reaches {_past(ci[1], target.seconds)}" if ci is not None else v)
    return "no: " + ", ".join(missed)


def _past(seconds: float, target_s: float) -> str:
    """``seconds`` as the report prints times, or to four significant digits where that reads as
    the target's value (20.036 ms against 20 ms: ``20.04 ms``, not ``20.0 ms``)."""
    shown = fmt_seconds(seconds)
    return shown if shown != fmt_seconds(target_s) else fmt_seconds(seconds, 4)


def render_plan(con, r: Any, display_name: str, gpu_name: str) -> None:
    """The plan: the chosen configuration's simulated figures and distribution, then every
    candidate simulated, best first."""
    lengths = _plan_lengths(r.workload)
    con.print(f"[bold]{display_name} on {gpu_name}: {_plan_load(r)}{lengths}; targets: {_targets(r.targets)}[/bold]")
    print_facts(
        con,
        [("chosen", f"[bold]{r.chosen.describe()}[/bold]{_verdict(r.chosen)}")]
        + _run_facts(r.chosen)[:1]
        + _run_facts(r.chosen)[2:],
    )
    _latency_table(
        con,
        [r.chosen],
        f"the chosen plan's simulated latency over {fmt_int(r.chosen.simulated_requests)} simulated requests"
        + _band_title(r.chosen.band),
    )
    (ttft_h, ttft), (tpot_h, tpot) = _column(r.targets, "ttft_s", "p99"), _column(r.targets, "tpot_s", "p90")
    rows = [
        [
            ">" if i == 0 else "",
            c.describe(),
            fmt_int(c.max_num_seqs),
            fmt_int(c.max_num_batched_tokens) if c.chunked_prefill else "off",
            _s(ttft(c)),
            _s(tpot(c)),
            f"{c.output_tokens_per_s_per_gpu:,.1f}",
            _usd(c.usd_per_million_output_tokens),
            _upper_verdict(c),
        ]
        for i, c in enumerate(r.simulated)
    ]
    slow = r.simulated[0].timed_at == "slow end"
    print_table(
        con,
        f"candidates simulated (of the analytic screen's {fmt_int(r.screen.candidates_evaluated)} configurations), best first"
        + (
            "; at the band's slow end, each target judged at the upper end of its sampling interval (the chosen "
            "plan's nominal figures are above)"
            if slow
            else "; each target judged at the upper end of its sampling interval"
        ),
        [
            ("", "left"),
            ("configuration", "left"),
            ("max seqs", "right"),
            ("chunk", "right"),
            (ttft_h, "right"),
            (tpot_h, "right"),
            ("out tok/s/GPU", "right"),
            ("$/M out", "right"),
            ("meets", "left"),
        ],
        rows,
    )
    print_conventions(con, r.conventions)


def render_comparison(con, r: Any, display_name: str) -> None:
    """GPUs side by side: each one's plan, the cheapest marked."""
    rate = f"{fmt_given(r.qps)} requests/s" if r.qps is not None else "saturated"
    con.print(f"[bold]{display_name}: {rate}; targets: {_targets(r.targets)}[/bold]")
    ttft_stat, tpot_stat = _compared(r.targets, "ttft_s", "p99"), _compared(r.targets, "tpot_s", "p90")
    rows = []
    for g in r.plans:
        p = g.plan
        if p is None:
            rows.append(["", g.gpu, _usd(g.usd_per_gpu_hour, 2), "no plan: " + (g.error or ""), "", "", "", "", ""])
            continue
        c = p.chosen
        ttft, tpot = c.percentiles["ttft_s"], c.percentiles["tpot_s"]
        rows.append(
            [
                "$" if g.cheapest else "",
                g.gpu,
                _usd(g.usd_per_gpu_hour, 2),
                f"{c.describe()} ({_gpus(c.gpus)})",
                _s(getattr(ttft, ttft_stat)),
                _s(getattr(tpot, tpot_stat)),
                f"{c.output_tokens_per_s_per_gpu:,.1f}",
                f"{c.goodput_rps:,.3g}",
                _usd(c.usd_per_million_output_tokens),
            ]
        )
        if c.band is None:
            continue
        for label, latency, rate in (("fast end", "low", "high"), ("slow end", "high", "low")):
            per_gpu = getattr(c, f"output_tokens_per_s_per_gpu_{rate}")
            goodput = getattr(c, f"goodput_rps_{rate}")
            rows.append(
                [
                    "",
                    "",
                    "",
                    f"  {label}",
                    _s(getattr(ttft, f"{ttft_stat}_{latency}_s")),
                    _s(getattr(tpot, f"{tpot_stat}_{latency}_s")),
                    "-" if per_gpu is None else f"{per_gpu:,.1f}",
                    "-" if goodput is None else f"{goodput:,.3g}",
                    _usd(getattr(c, f"usd_per_million_output_tokens_{latency}")),
                ]
            )
    print_table(
        con,
        "the best plan on each GPU ($: cheapest per million output tokens; fast end / slow end: the plan "
        "re-simulated at each end of its band, one run per row: see the notes)",
        [
            ("", "left"),
            ("GPU", "left"),
            ("$/GPU-h", "right"),
            ("plan", "left"),
            (f"TTFT {ttft_stat.upper()}", "right"),
            (f"TPOT {tpot_stat.upper()}", "right"),
            ("out tok/s/GPU", "right"),
            ("goodput req/s", "right"),
            ("$/M out", "right"),
        ],
        rows,
    )
    _plans_warnings(con, r)
    print_conventions(con, _bands_said_once(r.conventions))


#: What a GPU's band note shares with the first one when :func:`_bands_said_once` shortens it.
_SHARED_BAND = ("source", "runs", "engine", "percentiles", "p_low", "p_high", "closed_loop")


def _bands_said_once(conventions: list) -> list:
    """A comparison's notes with each GPU's band note after the first, where it differs only in its
    GPU, profile and widening, said in one line (a new user read three near-identical paragraphs of
    600 characters, each naming its GPU deep inside)."""
    from llm_cost.core.notes import note

    out, first = [], None
    for n in conventions:
        if n.code != "serve.band" or n.params.get("source") != "serving-runs":
            out.append(n)
        elif first is None:
            first = n
            out.append(n)
        elif all(n.params.get(k) == first.params.get(k) for k in _SHARED_BAND):
            out.append(note("serve.band_again", **n.params))
        else:
            out.append(n)
    return out


def _plans_warnings(con, r: Any) -> None:
    """Each compared plan's warnings under its GPU's name, as the plan alone prints them (a new
    user missed an ITL stall the comparison's CSV and JSON kept)."""
    for g in r.plans:
        for said in filter(None, _warnings(g.plan.conventions).split(" | ") if g.plan else []):
            con.print(f"[bold yellow]· {g.gpu}: {said}[/bold yellow]", soft_wrap=True)


def csv_rows(r: Any) -> tuple[list, list[dict] | None]:
    """The rows ``--csv`` prints: the analytic frontier (chosen and the targets missed marked,
    its warnings kept), the candidates simulated, one simulated run, or one row per GPU."""
    from llm_cost.analyses.simulated_plan import ServeComparison, SimulatedPlan
    from llm_cost.analyses.simulated_serving import ServeRun

    if isinstance(r, ServeRun):
        return [_flat(r)], [{"warnings": _warnings(r.conventions)}]
    if isinstance(r, SimulatedPlan):
        said = _warnings(r.conventions)  # the first candidate is the chosen run; its band is on r.chosen
        return [_flat(r.chosen), *(_flat(c) for c in r.simulated[1:])], [
            {"chosen": i == 0, "warnings": said if i == 0 else ""} for i in range(len(r.simulated))
        ]
    if isinstance(r, ServeComparison):
        return [_flat(g.plan.chosen) if g.plan else {"gpu": g.gpu} for g in r.plans], [
            {
                "gpu": g.gpu,
                "usd_per_gpu_hour": g.usd_per_gpu_hour,
                "cheapest": g.cheapest,
                "error": g.error or "",
                "warnings": _warnings(g.plan.conventions) if g.plan else "",
            }
            for g in r.plans
        ]
    said = _warnings(r.conventions)
    return r.frontier, [
        {
            "chosen": f == r.chosen,
            "misses": " ".join(f.violates),
            "warnings": said if f == r.chosen else "",
            **{name: getattr(r, name) if f == r.chosen else None for name in _ANALYTIC_BAND},
        }
        for f in r.frontier
    ]


#: The analytic plan's band columns (:func:`llm_cost.analyses.serving.band.with_analytic_band`),
#: filled on the chosen configuration's CSV row.
_ANALYTIC_BAND = (
    "ttft_low_s",
    "ttft_high_s",
    "tpot_low_s",
    "tpot_high_s",
    "output_tokens_per_s_per_gpu_low",
    "output_tokens_per_s_per_gpu_high",
    "usd_per_million_output_tokens_low",
    "usd_per_million_output_tokens_high",
)


def _warnings(conventions: list) -> str:
    """The warnings among a result's conventions (``warning.*`` codes, sentences that begin
    "warning:" or "note:"), joined by " | ": a CSV keeps what the table would have said."""
    from llm_cost.report.notes import sentence

    texts = [sentence(n) for n in conventions]
    return " | ".join(
        t for n, t in zip(conventions, texts) if n.code.startswith("warning.") or t.startswith(("warning:", "note:"))
    )


def _flat(run: Any) -> dict:
    """A simulated run's scalar figures and percentiles as one CSV row."""
    row = {
        "configuration": run.describe(),
        "gpus": run.gpus,
        "max_num_seqs": run.max_num_seqs,
        "max_num_batched_tokens": run.max_num_batched_tokens,
        "goodput_rps": run.goodput_rps,
        "throughput_rps": run.throughput_rps,
        "output_tokens_per_s_per_gpu": run.output_tokens_per_s_per_gpu,
        "usd_per_million_output_tokens": run.usd_per_million_output_tokens,
        "running_mean": run.running_mean,
        "kv_use_mean": run.kv_use_mean,
        "preemptions": run.preemptions,
        "violates": " ".join(run.violates),
    }
    for name in ("goodput_rps", "output_tokens_per_s_per_gpu", "usd_per_million_output_tokens"):
        row.update({f"{name}_low": getattr(run, f"{name}_low"), f"{name}_high": getattr(run, f"{name}_high")})
    for m, _ in METRICS:
        stem = m[:-2]
        row[m] = getattr(run, m)
        row.update({f"{stem}_low_s": getattr(run, f"{stem}_low_s"), f"{stem}_high_s": getattr(run, f"{stem}_high_s")})
        p = run.percentiles[m]
        for q in ("p50", "p90", "p99"):
            row.update(
                {
                    f"{stem}_{q}_s": getattr(p, q),
                    f"{stem}_{q}_low_s": getattr(p, f"{q}_low_s"),
                    f"{stem}_{q}_high_s": getattr(p, f"{q}_high_s"),
                }
            )
        row.update({f"{stem}_{name}_s": v for name, v in p.more.items()})
        row.update({f"{stem}_{name}_low_s": v for name, v in p.more_low_s.items()})
        row.update({f"{stem}_{name}_high_s": v for name, v in p.more_high_s.items()})
        for kind, ranges in (("ci", p.ci), ("interval", p.interval)):  # sampling; band and sampling
            for name, lo_hi in ranges.items():
                lo, hi = lo_hi if lo_hi is not None else (None, None)
                row.update({f"{stem}_{name}_{kind}_low_s": lo, f"{stem}_{name}_{kind}_high_s": hi})
    row["violates_at_slow_end"] = " ".join(run.violates_at_slow_end) if run.violates_at_slow_end is not None else None
    pessimistic = run.violates_pessimistic if run.violates_pessimistic is not None else run.violates_upper
    row.update(violates_pessimistic=" ".join(pessimistic), simulated_requests=run.simulated_requests, router=run.router)
    # the chosen row is at nominal step times, the other candidates at the band's slow end (a MoE user
    # read one column across the two)
    row["timed_at"] = run.timed_at
    return row


def launch_text(launch: Any) -> str:
    """``--emit``: comment lines (the engine version and the file its flags were checked against,
    the replicas, the notes) and the command, one line a shell runs."""
    from llm_cost.report.notes import sentence

    lines = [f"# {launch.version}: flags checked against {launch.checked_against}"]
    lines += [f"# {sentence(n)}" for n in launch.conventions]
    lines.append("# the plan's figures and band: the same command with --json, which carries this command too")
    return "\n".join([*lines, launch.command]) + "\n"
