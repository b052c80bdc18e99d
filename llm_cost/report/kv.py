"""Tables for ``llm-cost kv``."""

from __future__ import annotations

from llm_cost.core.units import fmt_int
from llm_cost.model.kv import KVResult
from llm_cost.report.base import (
    bytes_exact,
    print_conventions,
    print_facts,
    print_table,
    rows_that_matter,
    shown_caption,
)


def _iec_first(n) -> str:
    from llm_cost.core.units import fmt_iec

    return fmt_iec(n) if n >= 1024 else f"{n:,} B"


def render(con, r: KVResult, display_name: str, all_rows: bool = False) -> None:
    """Per-layer formula, per-token bytes, a table over contexts (of a long grid the rows that
    matter, unless ``all_rows``), comparisons."""
    con.print(
        f"[bold]{display_name} ({r.model}): KV cache at {r.kv_dtype} "
        f"({r.bits_per_element} bits per element), batch {r.batch}[/bold]"
    )
    print_facts(con, _facts(r))
    _contexts_table(con, r, all_rows)
    if r.per_gpu is not None:
        from llm_cost.report.parallel import render_per_gpu_kv

        render_per_gpu_kv(con, r)
    print_conventions(con, r.conventions)


def _facts(r: KVResult) -> list[tuple[str, str]]:
    """The formula, each layer kind's bytes, per token, the MHA comparison and the read intensity."""
    facts = [("formula", r.formula)]
    for k in r.layer_kinds:
        if not k.layer_type.caches_kv:
            facts.append(
                (
                    f"{k.layer_type} ({k.layers} layers)",
                    f"no per-token cache; {k.formula}: {bytes_exact(k.state_bytes)} per layer, "
                    f"+ conv state {bytes_exact(k.conv_state_bytes)}",
                )
            )
        else:
            cap = f", at most {k.window:,} tokens" if k.window else ""
            facts.append(
                (f"{k.layer_type} ({k.layers} layers)", f"{bytes_exact(k.bytes_per_token)} per token per layer{cap}")
            )
    if r.bytes_per_token_past_windows is None:
        facts.append(("per token (all caching layers)", bytes_exact(r.bytes_per_token)))
    else:
        facts.append(("per token, within every window", bytes_exact(r.bytes_per_token)))
        facts.append(
            ("per token, past the windows (full-attention layers)", bytes_exact(r.bytes_per_token_past_windows))
        )
    if r.mha_bytes_per_token is not None:
        label = (
            "MHA equivalent per token (n_h heads x v_head_dim for K and for V)"
            if r.mla_absorbed_flop_ratio
            else "MHA equivalent per token (n_kv = n_q)"
        )
        ratio = f" ({r.mha_ratio:.2f}x)" if r.mha_ratio is not None else ""  # None: this model caches nothing
        facts.append((label, f"{bytes_exact(r.mha_bytes_per_token)}{ratio}"))
    if r.kv_read_intensity_flop_per_byte is not None:
        how = " (absorbed MLA: all heads read one latent)" if r.mla_absorbed_flop_ratio else ""
        facts.append(("decode KV read intensity", f"{r.kv_read_intensity_flop_per_byte:.1f} FLOP per KV byte{how}"))
    if r.mla_absorbed_flop_ratio:
        facts.append(
            (
                "absorbed vs plain attention FLOPs",
                f"{r.mla_absorbed_flop_ratio:.2f}x (the price of reading only the latent)",
            )
        )
    return facts


def _contexts_table(con, r: KVResult, all_rows: bool) -> None:
    """The bytes at each context (of a long grid the rows that matter, unless ``all_rows``)."""
    has_state = any(c.state_bytes for c in r.contexts)
    has_mha = any(c.mha_equivalent_bytes is not None for c in r.contexts)
    has_all = any(c.all_attention_bytes is not None for c in r.contexts)
    columns = [("context (tokens)", "right"), ("KV per sequence", "right")]
    if has_state:
        columns += [("+ recurrent state", "right"), ("+ conv state", "right")]
    columns.append((f"total x batch {r.batch}", "right"))
    if has_mha:
        columns.append((f"MHA equivalent x batch {r.batch}", "right"))
    if has_all:
        columns.append((f"all layers full attention x batch {r.batch}", "right"))
    rows = []
    shown = r.contexts if all_rows else [r.contexts[i] for i in rows_that_matter(len(r.contexts))]
    for c in shown:
        row = [fmt_int(c.context), _iec_first(c.kv_bytes)]
        if has_state:
            row += [_iec_first(c.state_bytes), _iec_first(c.conv_state_bytes)]
        row.append(_iec_first(c.total_bytes))
        if has_mha:
            row.append(_iec_first(c.mha_equivalent_bytes) if c.mha_equivalent_bytes is not None else "")
        if has_all:
            row.append(_iec_first(c.all_attention_bytes) if c.all_attention_bytes is not None else "")
        rows.append(row)
    print_table(con, "", columns, rows, caption=shown_caption(len(shown), len(r.contexts)))
