"""Tables for ``llm-cost params``."""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from llm_cost.core.types import Part
from llm_cost.core.units import fmt_flops, fmt_int, fmt_params
from llm_cost.model.params import ParamsResult
from llm_cost.report.base import bytes_exact, pct, print_conventions, print_facts, print_table

if TYPE_CHECKING:
    from llm_cost.analyses.checkpoint_roles import CheckpointReport


def render(con, r: ParamsResult, display_name: str) -> None:
    """Breakdown table, totals, weight bytes, conventions."""
    _breakdown(con, r, display_name)
    print_facts(con, _facts(r))
    if r.defaults:
        from llm_cost.report.hf import defaults_line

        con.print(defaults_line(r.defaults), markup=False, soft_wrap=True)
    if r.per_gpu is not None:
        from llm_cost.report.parallel import render_per_gpu_weights

        render_per_gpu_weights(con, r.layout, r.per_gpu)
    conventions = list(r.conventions)
    if r.transformers is not None:
        from llm_cost.report.hf import render_transformers_check

        render_transformers_check(con, r.transformers)
    if r.checkpoint is not None:
        checkpoint = cast("CheckpointReport", r.checkpoint)  # model/ cannot name the analyses' type
        render_checkpoint(con, checkpoint)
        conventions += checkpoint.conventions
    print_conventions(con, conventions)


def _breakdown(con, r: ParamsResult, display_name: str) -> None:
    """The parameters by part: per layer, layers, total and share."""
    rows = []
    for row in r.rows:
        rows.append(
            [
                row.label,
                fmt_int(row.per_layer) if row.per_layer is not None else "",
                str(row.layers) if row.layers is not None else "",
                fmt_int(row.params),
                pct(row.share) if row.part != Part.MTP else "(apart)",
            ]
        )
    rows.append(["[bold]total (main model)[/bold]", "", "", f"[bold]{fmt_int(r.total_params)}[/bold]", ""])
    print_table(
        con,
        f"{display_name} ({r.model}): parameters",
        [("part", "left"), ("per layer", "right"), ("layers", "right"), ("parameters", "right"), ("share", "right")],
        rows,
    )


def _facts(r: ParamsResult) -> list[tuple[str, str]]:
    """Totals (towers, N_gemm, active, experts, MTP, the checkpoint's) and the weights' bytes."""
    facts = [("total parameters", f"{fmt_int(r.total_params)} ({fmt_params(r.total_params)})")]
    if r.vision_params or r.audio_params:
        facts.append(("  language model", fmt_int(r.decoder_params)))
    if r.vision_params:
        facts.append(("  vision tower", fmt_int(r.vision_params)))
    if r.audio_params:
        facts.append(("  audio tower", fmt_int(r.audio_params)))
    facts.append(("N_gemm (matmul weights)", fmt_int(r.n_gemm)))
    if r.active_n_gemm != r.n_gemm:
        facts.append(("active N_gemm per token", fmt_int(r.active_n_gemm)))
    facts.append(
        (
            "weight FLOPs per token",
            f"2 x {'active ' if r.active_n_gemm != r.n_gemm else ''}N_gemm = {fmt_flops(r.weight_flops_per_token)}",
        )
    )
    facts.append(("N without input embedding", fmt_int(r.params_without_input_embedding)))
    if r.routed_expert_params:
        facts.append(("active parameters per token", f"{fmt_int(r.active_params)} ({fmt_params(r.active_params)})"))
        facts.append(("routed experts (all)", fmt_int(r.routed_expert_params)))
        facts.append(("non-routed parameters", fmt_int(r.non_routed_params)))
    if r.mtp_params:
        facts.append(("MTP modules (unique)", f"{fmt_int(r.mtp_params)} ({r.mtp_share:.1%} of main)"))
        facts.append(
            (
                "checkpoint total",
                f"{fmt_int(r.checkpoint_params)} (main + MTP + its stored copies of "
                f"embedding and LM head, {fmt_int(r.mtp_checkpoint_copies)})"
                if r.mtp_checkpoint_copies
                else f"{fmt_int(r.checkpoint_params)} (main + MTP; the MTP modules store no copy of the "
                "embedding or LM head)",
            )
        )
    if r.kv_shared_unloaded_params:
        facts.append(
            (
                "checkpoint total",
                f"{fmt_int(r.checkpoint_params)} (+ {fmt_int(r.kv_shared_unloaded_params)} stored K/V of the "
                "KV-shared layers, never loaded)",
            )
        )
    facts.append((f"weights at {r.dtype} ({r.bits_per_param:g} bits)", bytes_exact(r.weight_bytes)))
    return facts


def render_checkpoint(con, c: CheckpointReport) -> None:
    """Stored tensors against the described structure (a checkpoint folder's headers)."""
    what = "tensor infos only" if c.folder.lower().endswith(".gguf") else "headers only"
    con.print(f"[bold]checkpoint {c.folder}: {c.tensors:,} tensors in {c.files} file(s), {what}[/bold]")
    facts = [("stored parameters", f"{fmt_int(c.stored_params)} ({bytes_exact(c.stored_bytes)})")]
    for dtype, (n, b) in sorted(c.by_dtype.items()):
        facts.append((f"  {dtype}", f"{fmt_int(n)} elements, {bytes_exact(b)}"))
    if c.scale_tensors:
        facts.append(
            (
                "scale tensors (not parameters)",
                f"{c.scale_tensors:,} tensors, {fmt_int(c.scale_elements)} elements, {bytes_exact(c.scale_bytes)}",
            )
        )
    if c.buffer_tensors:
        buffers = f"{c.buffer_tensors:,} tensors, {fmt_int(c.buffer_elements)} elements"
        facts.append(("buffers (inv_freq, not parameters)", buffers))
    if c.index_total_size is not None and c.index_total_disagrees:
        facts.append(
            (
                "index total_size",
                f"{fmt_int(c.index_total_size)} B, but the shards' tensors hold {fmt_int(c.tensor_bytes)} B "
                "(a stale or edited index?)",
            )
        )
    elif c.index_total_size is not None:
        facts.append(("index total_size", bytes_exact(c.index_total_size)))
    facts.append(("described by the config", fmt_int(c.described_params)))
    if c.matches:
        facts.append(("match", "every stored tensor is explained and none is missing"))
    for d in c.unexplained:
        facts.append((f"not explained: {d.role}", f"stored {fmt_int(d.stored)}, described {fmt_int(d.described)}"))
    for d in c.missing:
        facts.append((f"missing: {d.role}", f"described {fmt_int(d.described)}, not stored"))
    print_facts(con, facts)
