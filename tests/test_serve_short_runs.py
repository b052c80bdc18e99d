"""A run too short for a steady state says its rates are a burst's (a new user's trial: three
requests at once reported 'goodput 41.5 requests/s' and a $/M from a 72 ms window, silently)."""

from __future__ import annotations

from pathlib import Path

import llm_cost


def _codes(run) -> set[str]:
    return {n.code for n in run.conventions}


def test_three_requests_at_once_warn_that_the_rates_are_a_bursts(tmp_path: Path):
    trace = tmp_path / "three.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0,100,10\n0,100,10\n0,100,10\n", encoding="utf-8")
    run = llm_cost.serve("llama3-8b", "h100", layout=llm_cost.Layout(tp=1), trace=str(trace))
    assert "warning.no_steady_window" in _codes(run)


def test_a_sustained_load_has_its_steady_window_and_no_warning():
    run = llm_cost.serve("llama3-8b", "h100", 1024, 64, layout=llm_cost.Layout(tp=1), qps=2.0, requests=200, seed=0)
    assert run.simulation.steady is not None and "warning.no_steady_window" not in _codes(run)
