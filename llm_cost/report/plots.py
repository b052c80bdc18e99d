"""Pictures of results (matplotlib, an optional extra: ``pip install 'llm-cost[plot]'``).

Each function draws one result object to ``out`` (a ``.png`` or ``.svg`` file :func:`target` checked); nothing is computed
here beyond placing the result's own numbers. Titles name the model, GPU and dtypes; axes carry
units; ranges that span decades use log axes.
"""

from __future__ import annotations

from typing import Any

from llm_cost.core.errors import InputError
from llm_cost.specs.files import OutFile, check_out, write_file

__all__ = ["OutFile", "pyplot", "target", "roofline", "kv", "fit", "moe", "speculative", "serve"]

SIZE_IN = (8, 5)  # figure size in inches at 100 dpi: 800 x 500 pixels
DPI = 100


def pyplot():  # noqa: ANN201 - matplotlib's module
    """matplotlib.pyplot on a non-interactive backend; InputError saying how to install it, or
    naming MPLBACKEND when it names no backend (matplotlib refuses to start then, although a file
    is drawn with Agg whatever it says)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise InputError("--plot needs matplotlib: pip install 'llm-cost[plot]'") from None
    except ValueError as exc:
        if "backend" not in str(exc):
            raise
        import os

        raise InputError(
            f"MPLBACKEND={os.environ.get('MPLBACKEND', '')[:40]!r} is not a matplotlib backend; unset it (--plot "
            "draws files with Agg)"
        ) from None

    return plt


def target(path: str, force: bool) -> OutFile:
    """The picture's file, checked before anything is computed (a ``.png`` or ``.svg`` path; the
    one writer's rules, :func:`~llm_cost.specs.files.check_out`: a new file, or an existing
    regular file with ``force``; never a link, a FIFO or a device), and matplotlib there to draw
    it (found, not imported: an attacker's plan computed for 12 s before "--plot needs matplotlib")."""
    from importlib.util import find_spec

    out = check_out(path, "plot", force, (".png", ".svg"))
    if find_spec("matplotlib") is None:
        raise InputError("--plot needs matplotlib: pip install 'llm-cost[plot]'")
    return out


def _save(fig: Any, out: OutFile) -> None:
    """Draw the figure into ``out`` through the one writer (:func:`~llm_cost.specs.files.write_file`),
    then close it: whole or not at all; a failed write (a read-only or full file system, a folder
    the user cannot write) is the environment's failure (OutputError, exit 1), not the input's."""
    fig.tight_layout()
    try:
        write_file(out, lambda handle: fig.savefig(handle, dpi=DPI, format=out.path.suffix[1:].lower()))
    finally:  # pyplot keeps every figure until it is closed: a process drawing many would keep them all
        pyplot().close(fig)


def roofline(step: Any, model: str, gpu: str, out: OutFile) -> None:
    """The GPU's Roofline (attainable FLOP/s against FLOP/byte) with its ridge, each operator of
    the step and the whole step at the FLOP rate its bound implies."""
    plt = pyplot()
    peak, bw = step.peak_flops_per_s, step.bandwidth_bytes_s
    ops = [o for o in step.ops if o.intensity_flop_per_byte]
    lo = min([o.intensity_flop_per_byte for o in ops] + [step.intensity_flop_per_byte, 0.1]) / 3
    hi = max([o.intensity_flop_per_byte for o in ops] + [step.intensity_flop_per_byte, peak / bw]) * 3
    fig, ax = plt.subplots(figsize=SIZE_IN)
    xs = [lo * (hi / lo) ** (i / 200) for i in range(201)]
    ax.plot(xs, [min(peak, bw * x) / 1e12 for x in xs], color="black", label=f"roofline ({step.compute_dtype})")
    ridge = peak / bw
    ax.axvline(ridge, color="grey", linestyle="--", linewidth=1)
    ax.text(ridge, peak / 1e12 * 1.15, f" ridge {ridge:,.0f} FLOP/B", fontsize=8)
    ax.text(lo * 1.5, peak / 1e12 * 0.02, "memory-bound", fontsize=9, color="grey")
    ax.text(ridge * 1.5, peak / 1e12 * 0.02, "compute-bound", fontsize=9, color="grey")
    kinds: dict[str, list[Any]] = {}
    for o in ops:
        kinds.setdefault(o.kind, []).append(o)
    for kind, members in kinds.items():
        ax.scatter(
            [o.intensity_flop_per_byte for o in members],
            [o.flops / o.bound_s / 1e12 for o in members],
            s=24,
            alpha=0.7,
            label=f"{kind} operators ({len(members)})",
        )
    ax.scatter(
        step.intensity_flop_per_byte,
        step.flops / step.bound_s / 1e12,
        s=80,
        marker="*",
        color="red",
        label="whole step",
        zorder=3,
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("arithmetic intensity (FLOP / byte)")
    ax.set_ylabel("attainable TFLOP/s (10^12 FLOP/s)")
    what = f"batch {step.batch}, context {step.context:,}" if hasattr(step, "context") else f"prompt {step.seq:,}"
    ax.set_title(
        f"{model} on {gpu}: {what}, {step.compute_dtype} compute, {step.weight_bits:g}-bit weights"
        if hasattr(step, "weight_bits")
        else f"{model} on {gpu}: prefill, {what}",
        fontsize=10,
    )
    ax.legend(fontsize=8, loc="lower right")
    _save(fig, out)


def kv(results: list[Any], model: str, out: OutFile) -> None:
    """KV (and fixed state) bytes per sequence group against context, one line per batch."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=SIZE_IN)
    for r in results:
        ax.plot(
            [c.context for c in r.contexts],
            [c.total_bytes / 2**30 for c in r.contexts],
            marker="o",
            label=f"batch {r.batch}",
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("context (tokens per sequence)")
    ax.set_ylabel("KV cache + state (GiB = 2^30 B)")
    ax.set_title(f"{model}: KV cache at {results[0].kv_dtype}", fontsize=10)
    ax.legend(fontsize=8)
    _save(fig, out)


def fit(report: Any, sweep: Any, model: str, gpu: str, out: OutFile) -> None:
    """Memory against context for the fit's batch on one GPU: weights (with the engine's workspace
    and reserve), that plus the KV cache, the capacity and the share the engine may use."""
    plt = pyplot()
    f = report.single_gpu
    fig, ax = plt.subplots(figsize=SIZE_IN)
    xs = [c.context for c in sweep.contexts]
    held = float(f.weight_bytes + f.workspace_bytes + f.reserve_bytes) / 1e9
    ax.plot(xs, [held] * len(xs), label="weights + workspace + reserve" if held * 1e9 > f.weight_bytes else "weights")
    ax.plot(
        xs, [held + c.total_bytes / 1e9 for c in sweep.contexts], marker="o", label=f"... + KV, batch {sweep.batch}"
    )
    ax.axhline(f.capacity_bytes / 1e9, color="red", linestyle="--", label=f"{gpu} memory ({f.convention})")
    if f.usable_bytes != f.capacity_bytes:
        ax.axhline(f.usable_bytes / 1e9, color="orange", linestyle=":", label=f"usable at {f.utilization:.0%}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.set_xlabel("context (tokens per sequence)")
    ax.set_ylabel("memory (GB = 10^9 B)")
    ax.set_title(f"{model} on one {gpu}: weights at {f.weight_bits:g} bits, KV at {f.kv_bits} bits", fontsize=10)
    ax.legend(fontsize=8)
    _save(fig, out)


def moe(r: Any, model: str, out: OutFile) -> None:
    """Expected distinct experts per layer and weight bytes read per step against batch."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=SIZE_IN)
    batches = [x.batch for x in r.rows]
    ax.plot(batches, [x.expected_experts for x in r.rows], marker="o", color="tab:blue", label="experts hit per layer")
    ax.axhline(r.num_experts, color="tab:blue", linestyle=":", linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("tokens per decode step (batch)")
    ax.set_ylabel("expected distinct experts per MoE layer", color="tab:blue")
    right = ax.twinx()
    right.plot(batches, [x.weight_bytes_read / 1e9 for x in r.rows], marker="s", color="tab:red", label="weights read")
    right.set_ylabel("weights read per step (GB = 10^9 B)", color="tab:red")
    ax.set_title(f"{model}: {r.num_experts} experts, top-{r.top_k}, weights at {r.weight_bits:g} bits", fontsize=10)
    _save(fig, out)


def speculative(r: Any, out: OutFile) -> None:
    """The step model's speedup against batch, with the knee and the break-even batch."""
    if not r.rows:
        raise InputError("--plot: the speedup picture needs the step model: give a MODEL and --gpu")
    plt = pyplot()
    fig, ax = plt.subplots(figsize=SIZE_IN)
    ax.plot([x.batch for x in r.rows], [x.speedup for x in r.rows], marker="o", label="speedup")
    ax.axhline(1, color="grey", linestyle="--", linewidth=1)
    for batch, label in ((r.knee_batch, "knee"), (r.break_even_batch, "break-even")):
        if batch:
            ax.axvline(batch, color="tab:red", linestyle=":", linewidth=1)
            ax.text(batch, ax.get_ylim()[1] * 0.95, f" {label} {batch:,}", fontsize=8, color="tab:red")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("batch (sequences)")
    ax.set_ylabel("speedup over plain decoding (x)")
    ax.set_title(
        f"{r.model} on {r.gpu}: alpha {r.alpha:g}, gamma {r.gamma}, c {r.c:.3g}, context {r.context:,}; {r.time_model}",
        fontsize=10,
    )
    _save(fig, out)


def serve(r: Any, model: str, gpu: str, out: OutFile) -> None:
    """``serve``'s picture: a simulated run's (or the chosen plan's) latency CDFs, GPUs side by
    side, or the analytic frontier."""
    from llm_cost.analyses.simulated_plan import ServeComparison, SimulatedPlan
    from llm_cost.analyses.simulated_serving import ServeRun

    if isinstance(r, (ServeRun, SimulatedPlan)):
        latency_cdf(r if isinstance(r, ServeRun) else r.chosen, model, gpu, out)
    elif isinstance(r, ServeComparison):
        comparison(r, model, out)
    else:
        frontier(r, model, gpu, out)


def latency_cdf(run: Any, model: str, gpu: str, out: OutFile) -> None:
    """The distribution of TTFT, TPOT and E2E over a simulated run's requests: one CDF each, its
    P50/P90/P99 marked, and each target as a dashed line."""
    from llm_cost.core.units import fmt_seconds

    plt = pyplot()
    fig, axes = plt.subplots(1, 3, figsize=SIZE_IN)
    times = run.simulation.requests
    for ax, (metric, label) in zip(axes, (("ttft_s", "TTFT"), ("tpot_s", "TPOT"), ("e2e_s", "E2E"))):
        values = sorted(getattr(t, metric) for t in times if getattr(t, metric) is not None)
        if not values:
            continue
        n = len(values)
        ax.plot([v * 1e3 for v in values], [(i + 1) / n for i in range(n)], linewidth=1.5)
        p = run.percentiles[metric]
        for q, v in (("P50", p.p50), ("P90", p.p90), ("P99", p.p99)):
            if v is not None:
                ax.plot([v * 1e3], [float(q[1:]) / 100], "o", markersize=4, color="black")
                ax.annotate(
                    f"{q} {fmt_seconds(v)}",
                    (v * 1e3, float(q[1:]) / 100),
                    fontsize=8,
                    xytext=(4, -10),
                    textcoords="offset points",
                )
        target = run.targets.get(metric)
        if target is not None:
            ax.axvline(target.seconds * 1e3, color="red", linestyle="--", linewidth=1, label=f"target {target.label()}")
            ax.legend(fontsize=8, loc="lower right")
        ax.set_xlabel(f"{label} (ms)")
        ax.set_ylim(0, 1.02)
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("share of requests")
    fig.suptitle(f"{model} on {gpu}: {run.describe()}, {run.engine}, simulated ({len(times):,} requests)", fontsize=10)
    fig.tight_layout()
    _save(fig, out)


def _band_errors(values: list[float], lows: list[Any], highs: list[Any]) -> list[list[float]]:
    """Matplotlib's asymmetric error bars (below, above) of each value from its band's low and
    high figures (none where a plan has no band)."""
    below = [v - lo if lo is not None else 0.0 for v, lo in zip(values, lows)]
    above = [hi - v if hi is not None else 0.0 for v, hi in zip(values, highs)]
    return [[max(0.0, b) for b in below], [max(0.0, a) for a in above]]


def comparison(r: Any, model: str, out: OutFile) -> None:
    """GPUs side by side: each plan's $ per million output tokens (the cheapest highlighted; the
    panel only when a price was given) and its output tokens/s per GPU, each with its band as an
    error bar (the fast end's and the slow end's figures:
    :func:`llm_cost.analyses.simulated_serving.with_band`)."""
    plt = pyplot()
    rows = [g for g in r.plans if g.plan is not None]
    plans = [g.plan for g in rows]
    priced = any(p.usd_per_million_output_tokens is not None for p in plans)
    fig, axes = plt.subplots(1, 2 if priced else 1, figsize=SIZE_IN, squeeze=False)
    names = [f"{g.gpu}\n{g.plan.chosen.describe()}" for g in rows]
    colours = ["tab:green" if g.cheapest else "tab:blue" for g in rows]
    if priced:
        _usd_panel(axes[0][0], names, plans, colours)
    right = axes[0][-1]
    rate = [p.output_tokens_per_s_per_gpu for p in plans]
    rate_err = _band_errors(
        rate, [p.output_tokens_per_s_per_gpu_low for p in plans], [p.output_tokens_per_s_per_gpu_high for p in plans]
    )
    right.bar(names, rate, color=colours, yerr=rate_err, capsize=4)
    right.set_ylabel("output tokens/s per GPU (bar: the band)")
    for ax in axes[0]:
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(True, axis="y", alpha=0.3)
    why = "(green: cheapest)" if priced else "(no --usd-per-gpu-hour given: no cost panel)"
    fig.suptitle(f"{model}: the best plan on each GPU {why}", fontsize=10)
    fig.tight_layout()
    _save(fig, out)


def _usd_panel(ax: Any, names: list[str], plans: list[Any], colours: list[str]) -> None:
    """The comparison's $ per million output tokens, each bar with its band."""
    usd = [p.usd_per_million_output_tokens or 0.0 for p in plans]
    usd_err = _band_errors(
        usd, [p.usd_per_million_output_tokens_low for p in plans], [p.usd_per_million_output_tokens_high for p in plans]
    )
    ax.bar(names, usd, color=colours, yerr=usd_err, capsize=4)
    ax.set_ylabel("$ per million output tokens (bar: the band)")


def frontier(r: Any, model: str, gpu: str, out: OutFile) -> None:
    """Output tokens/s per GPU against tokens/s per user: each mode's frontier, the chosen
    configuration, and the TPOT target as a line (1 / TPOT tokens/s per user)."""
    plt = pyplot()
    fig, ax = plt.subplots(figsize=SIZE_IN)
    for mode, rows in r.frontier_by_mode.items():
        if rows:
            (line,) = ax.plot(
                [c.tokens_per_s_per_user for c in rows],
                [c.output_tokens_per_s_per_gpu for c in rows],
                linewidth=1,
                label=f"{mode} frontier",
            )
            ok = [c for c in rows if c.meets]
            ax.plot(
                [c.tokens_per_s_per_user for c in ok],
                [c.output_tokens_per_s_per_gpu for c in ok],
                "o",
                markersize=4,
                color=line.get_color(),
                label=f"{mode}: meets the targets",
            )
    c = r.chosen
    ax.scatter(
        [c.tokens_per_s_per_user],
        [c.output_tokens_per_s_per_gpu],
        s=120,
        facecolors="none",
        edgecolors="red",
        linewidths=2,
        zorder=5,
        label=f"chosen: {c.describe()}, concurrency {c.concurrency}",
    )
    if r.tpot_target_s is not None:
        ax.axvline(
            1 / r.tpot_target_s,
            color="red",
            linestyle="--",
            linewidth=1,
            label=f"TPOT target {r.tpot_target_s * 1e3:g} ms",
        )
    from matplotlib.ticker import ScalarFormatter

    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_major_formatter(ScalarFormatter())
        axis.set_minor_formatter(ScalarFormatter())
    ax.set_xlabel("tokens/s per user (1 / TPOT)")
    ax.set_ylabel("output tokens/s per GPU")
    ttft = f", TTFT <= {r.ttft_target_s:g} s" if r.ttft_target_s is not None else ""
    ax.set_title(
        f"{model} on {gpu}: {r.input_tokens:,} in / {r.output_tokens:,} out{ttft}\n"
        f"weights {r.weight_bits:g} bits, KV {r.kv_bits} bits, {r.compute_dtype} peak; {r.time_model}",
        fontsize=9,
    )
    ax.legend(fontsize=8)
    _save(fig, out)
