"""Every row of the documents' regression table, recomputed from the shipped specs.

The expected values live in llm_cost/data/document_numbers.yaml, transcribed from the seed
documents (shared/reference/document-numbers.md); the computations go through the public
engine (llm_cost.reproduce). Integers must match exactly; floats after the stated rounding.
"""

from __future__ import annotations

import pytest

from llm_cost.analyses.reproduce import ROWS, check_rows, load_rows

ROW_IDS = [row["id"] for row in load_rows()]


@pytest.mark.parametrize("row_id", ROW_IDS)
def test_row(row_id):
    (result,) = check_rows([row_id])
    failures = [f"{c.name}: expected {c.expected}, computed {c.computed} ({c.rule})" for c in result.checks if not c.ok]
    assert result.checks, f"{row_id} has no values to check"
    assert not failures, f"{row_id} ({result.claim}): " + "; ".join(failures)


def test_every_row_has_a_computation_and_no_computation_is_orphaned():
    assert set(ROW_IDS) == set(ROWS)


def test_a_wrong_expected_value_is_reported(monkeypatch):
    """The checker can fail: perturb one expected value and see the row fail."""
    import llm_cost.analyses.reproduce as rep

    rows = rep.load_rows()
    p7 = next(r for r in rows if r["id"] == "P7")
    p7["values"]["total_params"] += 1
    monkeypatch.setattr(rep, "load_rows", lambda: rows)
    (result,) = rep.check_rows(["P7"])
    assert not result.ok
