"""README sentences a new user's trial found wrong (F17), held to what the program says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

README = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text)


def test_the_catalog_counts_partition_the_catalog(cli):
    """Every catalog entry is one of: read and counted against an independent total, read with no
    total found, or pending; the README's three counts are those of ``list models --json`` and sum
    to the catalog's size (they said 57 + 46 + 14 of 110)."""
    m = re.search(
        r"Of the ([\d,]+), (\d+) are read and counted exactly .*?, (\d+) are read with no independent total "
        r"found, and (\d+) are pending",
        _flat(README),
    )
    assert m, "the catalog counts sentence"
    size, exact, untotalled, pending = (int(g.replace(",", "")) for g in m.groups())
    catalog = [x for x in cli("list", "models", "--json").json() if "hub_ids" in x]
    waiting = [x for x in catalog if str(x.get("reader", "")).startswith("pending")]
    read = [x for x in catalog if x not in waiting]
    assert size == len(catalog) == exact + untotalled + pending
    assert exact == sum(x.get("checkpoint_total") is not None for x in read)
    assert untotalled == sum(x.get("checkpoint_total") is None for x in read)
    assert pending == len(waiting)


def test_the_h100_memory_is_what_the_card_reports():
    """nvidia-smi's memory.total of an H100 SXM5 80GB: 81,559 MiB = 79.6474609375 GiB; the spec
    ships it and the README's conventions say so (they said an H100 holds 80 GiB)."""
    from llm_cost.specs.load import load_gpu

    assert load_gpu("h100").memory_gib == pytest.approx(81_559 / 1024, abs=1e-12)
    assert 'an "80 GB" H100 holds 81,559 MiB = 79.6475 GiB' in _flat(README)
    assert 'an "80 GB" H100 holds 80 GiB' not in _flat(README)


@pytest.mark.parametrize("command", [["params", "llama3-8b"], ["train", "llama3-8b"]])
def test_csv_where_there_are_no_rows_points_to_json(cli, command):
    """They said 'No such option: --csv'; the README lists the commands with CSV rows (fit's are
    its layouts: tests/report/test_csv.py)."""
    r = cli(*command, "--csv")
    assert r.code == 2 and "use --json" in r.err and "No such option" not in r.err


@pytest.mark.parametrize(
    "argv",
    [["activations", "llama3-8b", "--seq", "1K,2K"], ["train", "llama3-8b", "--tokens", "1T", "--seq", "1K..8K"]],
)
def test_a_single_seq_refuses_a_list_as_a_list(cli, argv):
    """They said "'1K,2K' is not a number"; the README says which commands take a --seq grid."""
    r = cli(*argv)
    assert r.code == 2 and "is a list or range; this command takes one value" in r.err
    assert "`activations` and `train` take one `--seq`" in _flat(README)


def test_the_comparisons_prose_quotes_its_table():
    """A new user found the prose's B200 range ($2.49 to $25.73, x3.96) left behind by the table
    it describes ($2.558 and $26.888, x3.99): the prose's range is the table's B200 fast-end and
    slow-end $/M, rounded to cents, and its factor the slow end the table's notes give."""
    text = README
    m = re.search(r"widened to x([\d.]+) at the slow end: the\s+B200's \$/M runs from \$([\d.]+) to \$([\d.]+)", text)
    assert m, "the comparison's B200 sentence"
    factor, low, high = m.groups()
    rows = re.search(r"│ b200 .*?\n(.*fast end.*)\n(.*slow end.*)\n", text)
    assert rows, "the comparison table's b200 rows"
    cell = [re.findall(r"\$([\d.]+) │\s*$", line)[0] for line in rows.groups()]
    assert [f"{float(c):.2f}" for c in cell] == [low, high]
    assert f"every step's time x{factor}" in text
