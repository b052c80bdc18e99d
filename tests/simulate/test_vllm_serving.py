"""The simulator against 18 real vLLM v0.15.1 serving runs (inference-perf, from inference-sim's
sim-to-real accuracy benchmark; llm_cost/data/measurements/serving/): every experiment and stage
replayed, errors of mean ITL, mean E2E, mean TTFT and P99 E2E.

The step times come from the one time model (hopper/ampere/ada under vLLM), whose fit includes the
mixed decode steps these runs imply (scripts/serving_runs_to_steps.py: one source among 19, weighted
as one; ``llm-cost validate`` predicts it held out at a median 10%). So the replay checks the
simulator and the step model together, not a prediction the runs never informed; the medians
asserted are the ones reached (deterministic for the seed). Issue 32 asks, on runs kept outside the
project, for mean ITL and E2E within 10%, TTFT within 20% and P99 E2E within 15%: the replays meet
none of them (the closing note says so), where the earlier per-GPU fit tuned to these runs met
issue 22's."""

from __future__ import annotations

import pytest

from llm_cost.analyses.serving_runs import error_summary

#: Issue 32's targets on held-out runs: median absolute percentage error over the experiments.
TARGETS = {"itl_mean": 10.0, "e2e_mean": 10.0, "ttft_mean": 20.0, "e2e_p99": 15.0}
#: What the replay reaches (15.9%, 20.7%, 30.2%, 38.2%; 15.5%, 20.3%, 29.6%, 38.2% before the
#: collective latency became flat within a node, which took the time model's out-of-source median
#: from 24.2% to 18.4%), with a little room: a guard against regressions, not the targets.
REACHED = {"itl_mean": 16.5, "e2e_mean": 21.5, "ttft_mean": 31.0, "e2e_p99": 42.0}


@pytest.fixture
def runs(replayed_experiments):
    """Each experiment's replay and its comparisons (the whole run, then each stage), as
    ``run_experiment`` gives them (conftest's session fixture; ``serve`` gives the same runs:
    tests/test_api_serve.py)."""
    return replayed_experiments


def test_every_experiment_and_stage_is_replayed(runs):
    assert len(runs) == 18
    for e, result, comparisons in runs:
        stages = e.entry["measured"]["stages"]
        assert [c.stage for c in comparisons] == [-1] + [s["index"] for s in stages]
        assert len(result.stages) == (len(stages) if len(stages) > 1 else 0)
        nominal = sum(round(s["rate_rps"] * s["duration_s"]) for s in e.entry["workload"]["stages"])
        assert result.summary.requests == nominal and result.summary.rejected == 0


def test_median_errors_stay_where_they_were_reached(runs):
    medians, worst = error_summary([c for _, _, cs in runs for c in cs])
    for metric in TARGETS:
        assert medians[metric] <= REACHED[metric], (metric, medians[metric], worst[metric])


def test_the_llama_8b_h100_runs_are_close(runs):
    """The eight Llama-3.1-8B single-GPU H100 runs (general, codegen, roleplay, reasoning, and the
    sweeps of token budget, CPU offload and memory share): mean ITL within 30% each, mean E2E
    within 40% (the reasoning run, the longest contexts and the fullest engine, is the farthest:
    +26% ITL, +35% E2E)."""
    h100 = [cs[0] for e, _, cs in runs if e.gpu.name == "h100" and e.layout.tp == 1 and "Llama" in e.entry["model"]]
    assert len(h100) == 8
    for c in h100:
        assert c.error_pct["itl_mean"] < 30 and c.error_pct["e2e_mean"] < 40, c


def test_littles_law_holds_on_every_run(runs):
    """Requests in the system on average = throughput x mean time in the system, on every run."""
    for e, result, _ in runs:
        s = result.summary
        assert result.running_mean + result.waiting_mean == pytest.approx(s.throughput_rps * s.e2e_s.mean, rel=0.01), (
            e.id
        )


def test_prefix_caching_serves_the_system_prompts(runs):
    """Each prompt's system prompt (100 or 150 tokens: 6 or 9 whole blocks) is found cached after
    its group's first request."""
    for e, result, _ in runs:
        w = e.entry["workload"]
        blocks = w["system_prompt_len"] // 16 * 16
        cached = sorted({t.cached_tokens for t in result.requests})
        assert cached == [0, blocks], e.id
        assert sum(t.cached_tokens == 0 for t in result.requests) == w["num_unique_system_prompts"], e.id
