"""Long grids: a table prints the rows that matter (the first and last, where the regime changes,
the best throughput, evenly spaced others) and says how many of how many; ``--all-rows`` prints
all; a grid's JSON rows carry their figures, the operator tables and conventions only with --ops."""

from __future__ import annotations

import re


def _table_rows(text: str) -> list[list[str]]:
    """The cells of a Rich table's body rows."""
    return [[c.strip() for c in line.split("│")[1:-1]] for line in text.splitlines() if line.startswith("│")]


def test_a_long_roofline_grid_prints_the_rows_where_the_fit_changes(cli):
    """Llama-3-8B at 64K tokens of context: 2 x 32 layers x 8 KV heads x 128 x 2 B = 131,072 B per
    token (seed 000 §七), 8,589,934,592 B per sequence; with its 16,060,522,496 B of weights, 8
    sequences need 84,779,999,232 B, within an H100's 85,899,345,920 B (80 GiB), and 9 need
    93,369,933,824 B, more. So among 300 batches at 64K the table must show batches 8 and 9."""
    r = cli("roofline", "llama3-8b", "--batch", "1..300:1", "--context", "2K,64K")
    assert r.code == 0, r.err
    rows = _table_rows(r.out)
    shown = {(int(b.replace(",", "")), int(c.replace(",", ""))) for b, c, *_ in rows}
    assert {(1, 2048), (8, 65536), (9, 65536), (300, 65536)} <= shown
    assert 20 <= len(rows) <= 26
    assert re.search(rf"{len(rows)} of 600 rows: .*--all-rows prints every row", r.out)
    assert "more than one h100" in r.out  # the fit warning of the rows not shown stays
    every = cli("roofline", "llama3-8b", "--batch", "1..300:1", "--context", "2K,64K", "--all-rows")
    assert len(_table_rows(every.out)) == 600 and "of 600 rows" not in every.out


def test_a_short_grid_prints_every_row(cli):
    r = cli("roofline", "llama3-8b", "--batch", "1..40:1", "--context", "2K")
    assert len(_table_rows(r.out)) == 40 and " rows: " not in r.out


def test_a_long_flops_grid_prints_where_attention_overtakes_the_linear_layers(cli):
    """Per layer of Llama-3-8B, a causal prefill of s tokens: attention 2 x 32 heads x (128 + 128)
    FLOPs per (query, key) pair x s(s + 1)/2 pairs = 8,192 s(s + 1); the matmuls 2 s x 218,103,808
    weights = 436,207,616 s. Attention is larger once s + 1 > 53,248: from s = 53,248 on."""
    r = cli("flops", "llama3-8b", "--seq", "50000..56000:1")
    rows = _table_rows(r.out)
    lengths = [int(row[0].replace(",", "")) for row in rows]
    assert {50000, 53247, 53248, 56000} <= set(lengths) and len(rows) <= 24
    assert f"{len(rows)} of 6,001 rows" in r.out


def test_a_long_kv_grid_prints_its_first_and_last_contexts(cli):
    r = cli("kv", "llama3-8b", "--context", "1K..100K:1K")
    rows = _table_rows(r.out)
    contexts = [row[0].replace(",", "") for row in rows if row and row[0].replace(",", "").isdigit()]
    assert contexts[0] == "1024" and contexts[-1] == "102400" and len(contexts) == 20
    assert "20 of 100 rows" in r.out


def test_a_grids_json_rows_carry_figures_and_with_ops_the_operator_tables(cli):
    rows = cli("roofline", "llama3-8b", "--batch", "1..50:1", "--context", "2K", "--json").json()
    assert len(rows) == 50 and all(r["ops"] == [] and r["conventions"] == [] for r in rows)
    assert rows[7]["kv_read_bytes"] == 8 * 2048 * 131_072
    full = cli("roofline", "llama3-8b", "--batch", "1..50:1", "--context", "2K", "--json", "--ops").json()
    assert all(r["ops"] and r["conventions"] for r in full)
    assert [{k: v for k, v in r.items() if k not in ("ops", "conventions")} for r in full] == [
        {k: v for k, v in r.items() if k not in ("ops", "conventions")} for r in rows
    ]


def _number(cell: str) -> int:
    return int(cell.replace(",", ""))


def test_a_long_context_grid_prints_where_attention_overtakes_the_weights(cli):
    """A new user's trial (F4): ``context --context 1..10000:1`` printed 10,016 lines (6.3 s of CPU
    at COLUMNS=120). Its table prints the rows that matter: the first and last, and the contexts on
    either side of the crossover. Llama-3-8B: attention 2 x 2 x 32 layers x 4,096 = 524,288 FLOPs per
    token per token of context; the matmuls 2 x (8,030,261,248 - 525,336,576 embedding) =
    15,009,849,344 FLOPs per token; equal at 28,628 tokens of context, larger from 28,629 on."""
    argv = ["context", "llama3-8b", "--context", "27000..30000:1", "--gpu", "h100"]
    r = cli(*argv)
    assert r.code == 0, r.err
    contexts = [_number(row[0]) for row in _table_rows(r.out) if row and row[0].replace(",", "").isdigit()]
    assert {27000, 28628, 28629, 30000} <= set(contexts) and len(contexts) <= 24
    assert f"{len(contexts)} of 3,001 rows" in r.out
    every = cli(*argv, "--all-rows")
    assert len(_table_rows(every.out)) == 3001 and "of 3,001 rows" not in every.out


def test_a_long_moe_grid_prints_its_first_and_last_batches(cli):
    r = cli("moe", "deepseek-v3", "--batch", "1..3000:1")
    assert r.code == 0, r.err
    batches = [_number(row[0]) for row in _table_rows(r.out) if row and row[0].replace(",", "").isdigit()]
    assert batches[0] == 1 and batches[-1] == 3000 and len(batches) == 20
    assert "20 of 3,000 rows" in r.out
    every = cli("moe", "deepseek-v3", "--batch", "1..3000:1", "--all-rows")
    assert "of 3,000 rows" not in every.out and len(_table_rows(every.out)) >= 3000


def test_a_long_spec_grid_prints_its_knee_and_break_even(cli):
    """The table keeps the batches the facts name (the knee, where verification turns
    compute-bound, and the break-even, where the speedup falls under 1x) and the batch before each."""
    argv = ["spec", "llama3-8b", "--gpu", "h100", "--alpha", "0.8", "--gamma", "4", "--c", "0.1"]
    r = cli(*argv, "--batch", "1..3000:1")
    assert r.code == 0, r.err
    knee = _number(re.search(r"compute-bound at batch\s+([\d,]+)", r.out)[1])
    even = _number(re.search(r"stops paying at batch\s+([\d,]+)", r.out)[1])
    batches = [_number(row[0]) for row in _table_rows(r.out) if row and row[0].replace(",", "").isdigit()]
    assert {1, knee - 1, knee, even - 1, even, 3000} <= set(batches) and len(batches) <= 24
    assert f"{len(batches)} of 3,000 rows" in r.out
    every = cli(*argv, "--batch", "1..3000:1", "--all-rows")
    assert len(_table_rows(every.out)) == 3000
