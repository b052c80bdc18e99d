"""A TPOT target can hold while prompt steps stall every decode: TPOT is each request's mean gap,
ITL every gap (a new user's trial: a plan 'met' TPOT 50 ms with ITL P90 three times that). The run
says so when its ITL P90 is at least twice the TPOT target it meets and no ITL target is set."""

from __future__ import annotations

import pytest

import llm_cost
from llm_cost.api import Statistic, Target
from llm_cost.report.notes import sentence


@pytest.fixture(scope="module")
def stalled():
    """llama3-8b on one H100, 6 req/s of 6K-token prompts, 256 output tokens: vLLM's default
    8,192-token steps carry a prompt chunk in most steps."""
    return llm_cost.serve(
        "llama3-8b", "h100", 6144, 256, qps=6, layout=llm_cost.Layout(tp=1), requests=200, seed=0,
        tpot_s=Target(Statistic.MEAN, 0.070),
    )  # fmt: skip


def _codes(run) -> set[str]:
    return {n.code for n in run.conventions}


def test_a_met_tpot_target_with_stalled_gaps_warns(stalled):
    assert stalled.tpot_s <= 0.070  # the target holds on its face ...
    assert stalled.percentiles["itl_s"].p90 >= 2 * 0.070  # ... while one gap in ten or more is twice it
    assert "warning.itl_stalls" in _codes(stalled)
    text = sentence(next(n for n in stalled.conventions if n.code == "warning.itl_stalls"))
    assert "max_num_batched_tokens" in text and "8,192" in text


def test_an_itl_target_is_the_answer_and_silences_it():
    run = llm_cost.serve(
        "llama3-8b", "h100", 6144, 256, qps=6, layout=llm_cost.Layout(tp=1), requests=200, seed=0,
        tpot_s=Target(Statistic.MEAN, 0.070), itl_s=Target(Statistic.P90, 0.5),
    )  # fmt: skip
    assert "warning.itl_stalls" not in _codes(run)


def test_a_light_load_has_no_stalls_to_warn_of():
    run = llm_cost.serve(
        "llama3-8b", "h100", 1024, 256, qps=1, layout=llm_cost.Layout(tp=1), requests=100, seed=0,
        tpot_s=Target(Statistic.MEAN, 0.070),
    )  # fmt: skip
    assert run.percentiles["itl_s"].p90 < 2 * 0.070
    assert "warning.itl_stalls" not in _codes(run)
