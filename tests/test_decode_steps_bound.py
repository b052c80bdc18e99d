"""A simulation whose requests decode nearly alone is bounded by its engine steps, not only its
tokens (a new user's trial: 20,000 requests of 419 output tokens at 0.01/s, within every documented
limit, ran 9 s of CPU and 18 s of wall time: 8.4 million steps of one sequence each)."""

from __future__ import annotations

import pytest

import llm_cost
from llm_cost.core.errors import InputError


def test_a_low_rate_with_many_requests_is_refused_naming_the_requests_that_fit():
    with pytest.raises(InputError) as err:
        llm_cost.serve("llama3-8b", "h100", 128, 419, layout=llm_cost.Layout(tp=1), qps=0.01, requests=20000)
    assert err.value.fields == ("requests",)
    assert "about 8,380,000 engine steps" in str(err.value)  # 20,000 x 419, one sequence at a time


def test_the_same_requests_at_a_rate_that_batches_them_run():
    run = llm_cost.serve("llama3-8b", "h100", 128, 64, layout=llm_cost.Layout(tp=1), qps=50.0, requests=2000, seed=0)
    assert run.simulation.summary.requests == 2000
