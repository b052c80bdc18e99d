"""The simulator through the front door (``llm_cost.simulate_serving``): one vLLM replica under Poisson
load, with the engine's defaults and the deployment's KV budget. The simulator's accuracy on real
vLLM runs is checked in tests/simulate/test_vllm_serving.py; here, what the API adds."""

from __future__ import annotations

import pytest

import llm_cost


@pytest.fixture(scope="module")
def run():
    return llm_cost.simulate_serving("llama3-8b", "h100", 1024, 128, qps=4.0, requests=400, seed=1)


def test_littles_law_holds_through_the_api(run):
    """Requests in the system = arrival rate x mean time in the system (Little 1961): the mean
    occupancy (running + waiting) is the rate times the mean E2E, within sampling error."""
    s = run.to_dict()
    in_system = s["running_mean"] + s["waiting_mean"]
    assert in_system == pytest.approx(s["summary"]["throughput_rps"] * s["summary"]["e2e_s"]["mean"], rel=0.1)


def test_percentiles_are_ordered_and_deterministic(run):
    for name in ("ttft_s", "itl_s", "tpot_s", "e2e_s"):
        d = run.to_dict()["summary"][name]
        assert 0 < d["p50"] <= d["p90"] <= d["p99"] <= d["max"]
    again = llm_cost.simulate_serving("llama3-8b", "h100", 1024, 128, qps=4.0, requests=400, seed=1)
    assert again.to_dict() == run.to_dict()


def test_a_light_load_waits_for_no_one():
    """At 0.2 requests/s of short prompts a request finds the replica idle: its TTFT is its own
    prefill plus the steps async scheduling adds, far below its E2E; no preemption."""
    r = llm_cost.simulate_serving("llama3-8b", "h100", 128, 64, qps=0.2, requests=50, seed=2).to_dict()
    assert r["preemptions"] == 0 and r["summary"]["ttft_s"]["p99"] < r["summary"]["e2e_s"]["p50"] / 10


@pytest.mark.parametrize(
    ("options", "name"),
    [
        (dict(qps=0), "qps"),
        (dict(qps=1.0, requests=0), "requests"),
        (dict(qps=1.0, engine="tgi"), "engine"),
        (dict(qps=1.0, max_num_seqs=0), "max_num_seqs"),
        (dict(qps=1.0, input_tokens=1.5), "input_tokens"),
    ],
)
def test_bad_arguments_name_themselves(options, name):
    with pytest.raises(llm_cost.LlmCostError) as info:
        llm_cost.simulate_serving("llama3-8b", "h100", **options)
    assert str(info.value).startswith(f"{name}:")


def test_simulate_serving_refuses_prefix_shapes_without_a_prefix():
    """prefix_groups / users_per_prefix shape a shared prefix; without prefix_tokens there is none,
    so simulate_serving refuses them as serve does (one rule, api.traffic.shared_prefix)."""
    import pytest

    import llm_cost

    with pytest.raises(llm_cost.LlmCostError, match="prefix_groups"):
        llm_cost.simulate_serving("llama3-8b", qps=1, prefix_groups=4)


def test_simulate_serving_takes_each_engines_own_defaults():
    """simulate_serving took vLLM's caps whatever the engine (a second attacker): TensorRT-LLM's
    max_batch_size is 2,048 (trtllm-serve's default), vLLM's max_num_seqs 1,024 on an H100. 3,000
    short requests at 2,000/s keep more than 1,024 running under TensorRT-LLM, never under vLLM."""
    import llm_cost

    burst = dict(gpu="h100", qps=2000, input_tokens=64, output_tokens=64, requests=3000)
    trt = llm_cost.simulate_serving("llama3-8b", engine="trtllm", **burst)
    vllm = llm_cost.simulate_serving("llama3-8b", engine="vllm", **burst)
    assert vllm.running_mean <= 1024 < trt.running_mean <= 2048
