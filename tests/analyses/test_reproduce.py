"""`reproduce`: every row of the documents' table, through the command."""

from __future__ import annotations


def test_reproduce_exits_0_with_every_row(cli):
    r = cli("reproduce")
    assert r.code == 0
    assert "86 of 86 rows match" in r.out
    rows = cli("reproduce", "--json").json()
    assert len(rows) == 86 and all(row["ok"] for row in rows)
