"""Tables for ``llm-cost flops``."""

from __future__ import annotations

from fractions import Fraction

from llm_cost.core.types import Phase, TensorGroup
from llm_cost.core.units import fmt_int
from llm_cost.report.base import print_conventions, print_table, rows_that_matter, shown_caption
from llm_cost.workload.flops import ForwardFlops


def _e(x: float | Fraction) -> str:
    return f"{float(x):.3e}"


def render(con, results: list[ForwardFlops], display_name: str, phase: Phase, all_rows: bool = False) -> None:
    """One row per length: per-layer linear and attention FLOPs, blocks, LM head, total; of a long
    grid the rows that matter (where attention overtakes the linear layers), unless ``all_rows``."""
    first = results[0]
    count = len(results)
    if not all_rows:
        regime = [f.attention_flops_per_layer > f.linear_flops_per_layer for f in results]
        results = [results[i] for i in rows_that_matter(count, regime)]
    uniform = {op.layers for op in first.ops if op.group != TensorGroup.LM_HEAD} == {first.layers}
    per = "per layer" if uniform else "mean per layer"
    rows = []
    for f in results:
        length = f.new_tokens if phase == Phase.PREFILL else f.cached
        rows.append(
            [
                fmt_int(length),
                _e(f.linear_flops_per_layer),
                _e(f.attention_flops_per_layer),
                _e(f.block_flops),
                _e(f.lm_head_flops),
                _e(f.total_flops),
                f"{f.total_flops / 1e12:,.2f}",
            ]
        )
    head = "prompt tokens" if phase == Phase.PREFILL else "cached tokens"
    title = f"{display_name}: {phase} FLOPs, batch {first.batch}" + (
        ", one new token per sequence" if phase == Phase.DECODE else ""
    )
    print_table(
        con,
        title,
        [
            (head, "right"),
            (f"linear {per}", "right"),
            (f"attention {per}", "right"),
            (f"{first.layers} layers", "right"),
            ("LM head", "right"),
            ("total FLOPs", "right"),
            ("TFLOP", "right"),
        ],
        rows,
        caption=shown_caption(len(results), count),
    )
    print_conventions(con, first.conventions)
