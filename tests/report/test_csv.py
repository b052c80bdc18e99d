"""CSV grids: one header line, one row per point, the JSON's keys as columns, exact integers."""

from __future__ import annotations

import csv
import io


def _rows(text: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO(text)))


def test_roofline_sweep_has_a_row_per_batch_and_the_json_values(cli):
    rows = _rows(cli("roofline", "llama3-8b", "--gpu", "h100", "--batch", "1..256", "--context", "2K", "--csv").out)
    assert [int(r["batch"]) for r in rows] == [1, 2, 4, 8, 16, 32, 64, 128, 256]
    one = cli("roofline", "llama3-8b", "--gpu", "h100", "--batch", "64", "--context", "2K", "--json").json()
    row = next(r for r in rows if r["batch"] == "64")
    assert int(row["kv_read_bytes"]) == one["kv_read_bytes"] == 64 * 2048 * 131_072
    assert float(row["bound_s"]) == one["bound_s"] and row["layout_tp"] == "1"


def test_kv_grid_is_batch_by_context(cli):
    """128 KiB per token (seed 000 §七) x context x batch, for 8 contexts and 3 batches."""
    rows = _rows(cli("kv", "llama3-8b", "--context", "1K..128K", "--batch", "1,8,64", "--csv").out)
    assert len(rows) == 24
    assert all(int(r["total_bytes"]) == int(r["batch"]) * int(r["context"]) * 131_072 for r in rows)


def test_a_batch_list_needs_a_machine_format(cli):
    r = cli("kv", "llama3-8b", "--batch", "1,8")
    assert r.code == 2 and "--json or --csv" in r.err
