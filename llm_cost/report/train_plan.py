"""Tables for ``llm-cost train`` in its predicted mode (the training planner)."""

from __future__ import annotations

from llm_cost.analyses.train_plan import TrainPlan, mfu_tier
from llm_cost.core.units import fmt_rate, fmt_seconds
from llm_cost.report.base import pct, print_conventions, print_facts, print_table

#: Each term of a step's time in a few words.
SHORT = {
    "compute_s": "compute",
    "bubble_s": "bubble",
    "tp_s": "TP collectives",
    "cp_s": "ring attention",
    "ep_s": "all-to-all",
    "pp_s": "pipeline sends",
    "dp_s": "DP collectives",
    "optimizer_s": "optimizer",
    "overhead_s": "step overhead",
}
#: What each term of a step's time is, in words.
TERMS = {
    "compute_s": "compute (forward, backward, recompute)",
    "bubble_s": "pipeline bubble",
    "tp_s": "TP collectives (exposed)",
    "cp_s": "ring-attention traffic (exposed)",
    "ep_s": "MoE all-to-all",
    "pp_s": "pipeline sends (exposed)",
    "dp_s": "data-parallel collectives (exposed)",
    "optimizer_s": "optimizer step",
    "overhead_s": "per-step overhead (launches, host; the profile's)",
}


#: How each framework is named in a plan.
FRAMEWORKS = {
    "megatron": "Megatron-Core (TP/SP, CP, PP with virtual stages, EP, distributed optimizer; rank order tp-cp-ep-dp-pp)",
    "fsdp2": "PyTorch FSDP2/HSDP (torchtitan, NeMo AutoModel: device mesh pp-dp-cp-tp)",
}


#: The layout degree over which each collective term runs (a term of a degree over 1 is shown at
#: 0 s too: its traffic runs, hidden behind compute; a new user read a missing DP row as none).
_DEGREE = {"tp_s": "tp", "cp_s": "cp", "ep_s": "ep", "pp_s": "pp", "dp_s": "dp"}


def _runs(term: str, layout: dict) -> bool:
    """Whether a step term's traffic runs in ``layout`` (its degree over 1)."""
    degree = _DEGREE.get(term)
    return degree is not None and layout.get(degree, 1) > 1


def _links(con, r: TrainPlan) -> None:  # noqa: ANN001 - a rich Console
    """Each collective group of the plan's layout and the link it runs on."""
    if r.links:
        print_table(
            con,
            "collectives and the links their ranks span",
            [("group", "left"), ("link", "left")],
            [[group, link] for group, link in r.links.items()],
        )


def _widened(r: TrainPlan) -> str:
    """How far the band is widened outside the published runs' range, if at all."""
    return f", widened {r.band_widen:.3g}x outside the published runs" if r.band_widen > 1 else ""


def _gib(nbytes: float) -> str:
    return f"{nbytes / 2**30:,.1f} GiB"


def _range(low: float, high: float, fmt: str = "{:.1%}") -> str:
    return f"[{fmt.format(low)} to {fmt.format(high)}]"


def _verdict(w, best_mfu: float) -> str:  # noqa: ANN001 - a Reason
    """How the best layout with another knob value loses: memory, a tie (the same MFU tier:
    :func:`~llm_cost.analyses.train_plan.mfu_tier`), or its step's largest growth."""
    if not w.fits:
        return f"does not fit ({_gib(w.other_total_bytes)})"
    if mfu_tier(w.other_mfu) == mfu_tier(best_mfu):
        return "ties (the simpler layout is ranked first)"
    rest = w.rest_delta_s  # the other terms' net change (a new user read "+376 ms per step, most in DP
    # collectives +1.70 s" as a part larger than its whole)
    others = f", the rest {'+' if rest >= 0 else '-'}{fmt_seconds(abs(rest))}" if abs(rest) >= 1e-6 else ""
    return f"+{fmt_seconds(w.delta_step_s)} per step: {SHORT[w.term]} +{fmt_seconds(w.term_delta_s)}{others}"


def _global_batch(r: TrainPlan) -> str:
    """The step's tokens, in binary millions where they are a whole number of them (``--global-batch
    16M`` reads M as 2^20, as Llama 3's "16M tokens" batch is 2^24), and in sequences."""
    tokens = f"{r.global_batch_tokens:,} tokens"
    if r.global_batch_tokens % 2**20 == 0:
        tokens += f" ({r.global_batch_tokens // 2**20:,} x 2^20)"
    return f"{tokens} = {r.sequences_per_step:,} sequence{'' if r.sequences_per_step == 1 else 's'} of {r.seq:,}"


def _facts(r: TrainPlan) -> list[tuple[str, str]]:
    """The plan's figures: layout, step, MFU, time and its totals, each with its band, and memory."""
    m = r.memory
    facts = [
        ("framework", FRAMEWORKS.get(r.framework, r.framework)),
        ("layout", f"[bold]{r.layout_label}[/bold]"),
        ("global batch", _global_batch(r)),
        ("step time", f"{r.step_time_s:,.2f} s (-{r.step_time_below:.0%} / +{r.step_time_above:.0%}{_widened(r)})"),
        (f"MFU (6ND, {r.dtype.upper()} peak)", f"{pct(r.mfu)} {_range(*r.mfu_range)}"),
        *([("MFU (6ND, BF16 peak)", pct(r.mfu_vs_bf16_peak))] if r.mfu_vs_bf16_peak is not None else []),
        ("MFU with attention", pct(r.mfu_with_attention)),
        ("HFU (what the GPUs run)", pct(r.hfu)),
        ("tokens/s per GPU", f"{r.tokens_per_s_per_gpu:,.0f}"),
        ("time to train", f"{r.days:,.1f} days {_range(*r.days_range, fmt='{:,.1f}')}"),
        ("GPU-hours", f"{r.gpu_hours:,.0f} {_range(*r.gpu_hours_range, fmt='{:,.0f}')}"),
        (
            "energy",
            f"{r.energy_kwh / 1000:,.0f} MWh {_range(r.energy_kwh_range[0] / 1000, r.energy_kwh_range[1] / 1000, '{:,.0f}')} "
            f"({r.power_w:g} W per GPU, PUE {r.pue:g}: the GPUs' board power only)",
        ),
    ]
    if r.cost_usd is not None and r.cost_usd_range is not None:
        facts.append(
            (
                "cost",
                f"${r.cost_usd:,.0f} {_range(*r.cost_usd_range, fmt='${:,.0f}')} at ${r.usd_per_gpu_hour:g} per GPU-hour",
            )
        )
    if r.co2_tonnes is not None and r.co2_tonnes_range is not None:
        facts.append(
            (
                "emissions",
                f"{fmt_rate(r.co2_tonnes)} t CO2e [{fmt_rate(r.co2_tonnes_range[0])} to "
                f"{fmt_rate(r.co2_tonnes_range[1])}] at {r.grid_kg_per_kwh:g} kg/kWh",  # not 0 t for a small run
            )
        )
    facts.append(
        (
            "memory per GPU (fullest)",
            f"{_gib(m.total_bytes)} of {_gib(m.room_bytes)}: state {_gib(m.state_bytes)} + activations "
            f"{_gib(m.activation_bytes)} + buffers {_gib(m.buffer_bytes)}",
        )
    )
    return facts


def render(con, r: TrainPlan, display_name: str, gpu_name: str) -> None:
    """The plan's figures, the step's terms, the top layouts and why the best wins."""
    con.print(f"[bold]{display_name}: training plan for {r.tokens:,} tokens on {r.gpus:,} x {gpu_name}[/bold]")
    lay = r.layout
    print_facts(con, _facts(r))
    _links(con, r)
    rows = [
        [TERMS[k], f"{v:,.3f}" if v else "0 (hidden behind compute)"]
        for k, v in r.breakdown.items()
        if v or _runs(k, lay)
    ]
    print_table(
        con,
        f"one step ({lay['micro_batches']} micro-batch{'es' if lay['micro_batches'] != 1 else ''}), slowest stage",
        [("term", "left"), ("s", "right")],
        rows,
    )
    top = [
        [c.layout, pct(c.mfu), pct(c.mfu_with_attention), f"{c.step_time_s:,.2f}", _gib(c.memory_bytes)] for c in r.top
    ]
    print_table(
        con,
        f"top layouts ({r.fitting:,} of {r.searched:,} searched fit)",
        [("layout", "left"), ("MFU", "right"), ("with attention", "right"), ("step s", "right"), ("memory", "right")],
        top,
    )
    why = [[f"{w.knob} {w.value}", w.other, pct(w.other_mfu) if w.fits else "-", _verdict(w, r.mfu)] for w in r.reasons]
    if why:
        print_table(
            con,
            "why this layout: the best with another value of each knob",
            [("other value", "left"), ("its best layout", "left"), ("MFU", "right"), ("why it loses", "left")],
            why,
        )
    if r.defaults:
        print_facts(con, [(f"default {name}", value) for name, value in r.defaults.items()])
    print_conventions(con, r.conventions)
