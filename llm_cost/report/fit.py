"""Tables for ``llm-cost fit`` and ``llm-cost activations``."""

from __future__ import annotations

from ..memory import Activations, Fit
from ..units import fmt_int
from .base import bytes_exact, print_conventions, print_facts, print_table


def render(con, f: Fit, display_name: str, gpu_name: str) -> None:
    """Weights vs memory, then the KV room: token budget, largest batch/context, concurrency."""
    con.print(f"[bold]{display_name} on one {gpu_name}: weights at {f.weight_bits:g} bits, KV at {f.kv_bits} bits[/bold]")
    facts = [
        ("memory", bytes_exact(f.memory_bytes)),
        ("reserve", bytes_exact(f.reserve_bytes)),
        ("weights", bytes_exact(f.weight_bytes)),
    ]
    if not f.fits:
        facts.append(("[bold red]does not fit[/bold red]", f"short by {bytes_exact(f.shortfall_bytes)}; "
                      "use more GPUs or fewer bits per weight"))
        print_facts(con, facts)
        print_conventions(con, f.conventions)
        return
    facts += [
        ("left for KV cache", bytes_exact(f.kv_budget_bytes)),
        ("KV per token", bytes_exact(f.kv_bytes_per_token)),
    ]
    if f.token_budget is not None:
        facts.append(("KV token budget (batch x context)", fmt_int(f.token_budget)))
    facts.append((f"largest batch at context {f.context:,}", fmt_int(f.max_batch_at_context)))
    facts.append((f"largest context at batch {f.batch}",
                  "unbounded (the cache stops growing)" if f.max_context_at_batch is None else
                  fmt_int(f.max_context_at_batch)))
    print_facts(con, facts)
    rows = [[fmt_int(c.context), bytes_exact(c.kv_bytes_per_sequence), fmt_int(c.max_batch)] for c in f.concurrency]
    print_table(con, "concurrent requests", [("context", "right"), ("KV per request", "right"),
                                             ("requests that fit", "right")], rows)
    print_conventions(con, f.conventions)


def render_activations(con, results: list[Activations], display_name: str) -> None:
    """Activation bytes per layer and in total, without and with recompute."""
    first = results[0]
    rows = [[a.recompute, a.formula, bytes_exact(a.bytes_per_layer),
             bytes_exact(a.quadratic_bytes_per_layer) if a.quadratic_bytes_per_layer else "-",
             bytes_exact(a.total_bytes)] for a in results]
    print_table(con, f"{display_name}: training activations, s = {first.seq:,}, micro-batch {first.micro_batch}, "
                     f"{first.layers} layers", [("recompute", "left"), ("formula", "left"), ("per layer", "right"),
                                               ("of which 5as^2b", "right"), ("all layers", "right")], rows,
                caption="Korthikanti et al. 2022, eq. 1: 16-bit activations, no tensor parallelism; "
                        "h = hidden_size, a = attention heads")
