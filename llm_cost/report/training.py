"""Tables for ``llm-cost train``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from llm_cost.analyses.training import TrainResult
from llm_cost.core.units import fmt_int, fmt_rate, fmt_seconds, fmt_si
from llm_cost.report.base import print_conventions, print_facts, print_table

if TYPE_CHECKING:
    from llm_cost.analyses.train_plan import TrainPlan
    from llm_cost.analyses.training import ParallelTrainMemory


def render(con, r: TrainResult | TrainPlan, display_name: str, gpu_name: str) -> None:
    """FLOPs, time, energy, emissions, cost, then state and activation memory (a predicted plan:
    :func:`llm_cost.report.train_plan.render`)."""
    if not isinstance(r, TrainResult):
        from llm_cost.report.train_plan import render as plan

        return plan(con, r, display_name, gpu_name)
    where = f"{r.gpus:,} x {gpu_name}" if r.gpus else gpu_name
    con.print(f"[bold]{display_name}: training on {r.tokens:,} tokens, {where}[/bold]")
    print_facts(con, _facts(r))
    _state(con, r)
    _activations(con, r)
    if r.parallel is not None:
        _parallel(con, r.parallel)
    print_conventions(con, r.conventions)


def _facts(r: TrainResult) -> list[tuple[str, str]]:
    """FLOPs, GPU-hours, time, FLOP/s per GPU, energy, and the emissions and cost when given."""
    facts = [
        ("model FLOPs 6 N D", f"{r.model_flops:.3g} FLOPs"),
        ("FLOPs with attention (the operators)", f"{r.step_flops:.3g} FLOPs"),
    ]
    if r.hardware_flops != r.model_flops:
        facts.append((f"hardware FLOPs ({r.recompute} recompute)", f"{r.hardware_flops:.3g} FLOPs"))
    facts += [
        ("GPU-hours", fmt_rate(r.gpu_hours)),  # not 0 for a tiny job, nor 33 digits for a huge one
        (
            "wall-clock time",
            fmt_seconds(r.wall_seconds) + f" on {r.gpus:,} GPU(s)"
            if r.wall_seconds is not None
            else "give --gpus for the time on a cluster",
        ),
        (
            "effective FLOP/s per GPU",
            f"{r.effective_flops_per_s_per_gpu / 1e12:,.1f} TFLOP/s "
            f"(MFU {r.mfu:.1%} of {r.peak_flops_per_s / 1e12:g} TFLOP/s {r.dtype})",
        ),
        (
            "energy",
            f"{_energy(r.energy_kwh)} kWh = {_energy(r.energy_kwh / 1000)} MWh "
            f"({r.power_w:g} W per GPU, PUE {r.pue:g})",
        ),
    ]
    if r.co2_tonnes is not None:
        facts.append(("emissions", f"{_energy(r.co2_tonnes)} t CO2e at {r.grid_kg_per_kwh:g} kg/kWh"))
    if r.cost_usd is not None:
        facts.append(("cost", f"${fmt_rate(r.cost_usd)} at ${r.usd_per_gpu_hour:g} per GPU-hour"))
    return facts


def _energy(amount: float) -> str:
    """kWh, MWh or tonnes: one decimal from 1 to 10^15, else three significant digits (0 as 0)."""
    return f"{amount:,.1f}" if 1 <= amount < 1e15 else f"{amount:.3g}"


def _state(con, r: TrainResult) -> None:
    """The training state's parts, and per GPU by ZeRO stage under pure data parallelism."""
    st = r.state
    rows = [[name, fmt_si(b)] for name, b in st.parts.items()]
    rows.append(["[bold]training state (16 B/param)[/bold]", f"[bold]{fmt_si(st.total_bytes)}[/bold]"])
    print_table(con, "training state", [("part", "left"), ("bytes", "right")], rows)
    if st.data_parallel > 1 and r.parallel is None:
        zero = [[stage, fmt_si(b)] for stage, b in st.per_gpu_bytes.items()]
        print_table(
            con,
            f"state per GPU over {st.data_parallel:,} data-parallel GPUs",
            [("ZeRO stage", "left"), ("bytes per GPU", "right")],
            zero,
            caption="pure data parallelism (no TP/PP); zero1 shards optimizer states, zero2 also gradients, "
            "zero3 also weights",
        )


def _activations(con, r: TrainResult) -> None:
    """One GPU's activations (no TP), when the result has them."""
    a = r.activations
    if a is not None:
        recompute = "no" if a.recompute == "none" else a.recompute
        print_facts(
            con,
            [
                (
                    f"activations on one GPU (no TP), s = {a.seq:,}, micro-batch {a.micro_batch}, "
                    f"{recompute} recompute",
                    f"{fmt_si(a.bytes_per_layer)} per layer ({a.formula}), {fmt_si(a.total_bytes)} for "
                    f"{fmt_int(a.layers)} layers",
                )
            ],
        )


def _parallel(con, m: ParallelTrainMemory) -> None:
    """Memory per GPU under the layout given, and the smallest data parallelism that fits."""
    print_facts(
        con,
        [
            (
                f"per GPU at TP {m.tp} x PP {m.pp} x DP {m.dp}, ZeRO-{m.zero}",
                f"{fmt_si(m.total_bytes)} = state {fmt_si(m.state_bytes)} + activations {fmt_si(m.activation_bytes)} "
                f"of {fmt_si(m.memory_bytes)}: " + ("fits" if m.fits else "[bold red]does not fit[/bold red]"),
            ),
            ("parameters per GPU (fullest stage)", fmt_int(m.params_per_gpu)),
            (
                f"smallest DP at ZeRO-{m.zero}",
                "none fits: add TP/PP, recompute or sequence parallelism"
                if m.smallest_dp is None
                else f"{m.smallest_dp} (= {m.smallest_cluster_gpus:,} GPUs)",
            ),
        ],
    )
    print_conventions(con, m.conventions)
