"""The serving planner: its queueing formulas against simulation, its steady state against
Little's law and the Roofline bound, its search against the issue's questions."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import llm_cost
from llm_cost.analyses.serving import Targets, Traffic, evaluate, md1_wait_s, mdc_wait_s, plan
from llm_cost.core.choices import ServingMode
from llm_cost.core.errors import InputError
from llm_cost.core.types import Engine
from llm_cost.model.layout import Layout
from llm_cost.perf.calibrated import CalibratedModel
from llm_cost.perf.choose import profile_for
from llm_cost.perf.timemodel import RooflineBound
from llm_cost.specs.load import load_gpu, load_model
from llm_cost.specs.load import load_gpu as _gpu_spec
from llm_cost.workload.step import SeqGroup, build_step

H100 = load_gpu("h100")
PREDICTION = CalibratedModel(profile_for(_gpu_spec("h100"), Engine.VLLM))


def _simulated_wait(rho: float, servers: int, service: float, n: int = 200_000, seed: int = 1) -> float:
    """Mean wait of an M/D/c FIFO queue by simulation: Poisson arrivals at rho c / S, each served
    for S by the first free server."""
    rng = random.Random(seed)
    free = [0.0] * servers
    t = total = 0.0
    rate = rho * servers / service
    for _ in range(n):
        t += rng.expovariate(rate)
        i = min(range(servers), key=free.__getitem__)
        start = max(t, free[i])
        total += start - t
        free[i] = start + service
    return total / n


@pytest.mark.parametrize("rho", [0.5, 0.8, 0.9])
def test_md1_wait_is_pollaczek_khinchine(rho):
    sim = _simulated_wait(rho, 1, 1.0)
    assert abs(md1_wait_s(rho, 1.0) / sim - 1) < 0.06


@pytest.mark.parametrize("rho, servers", [(0.7, 4), (0.9, 4), (0.9, 16)])
def test_mdc_wait_is_within_a_quarter_of_simulation(rho, servers):
    """Sakasegawa x Allen-Cunneen is an approximation: within 25% of a simulated M/D/c."""
    sim = _simulated_wait(rho, servers, 1.0)
    assert abs(mdc_wait_s(rho, servers, 1.0) / sim - 1) < 0.25, (mdc_wait_s(rho, servers, 1.0), sim)


def test_queues_refuse_a_full_server():
    assert md1_wait_s(1.0, 1.0) == float("inf") and mdc_wait_s(1.2, 4, 1.0) == float("inf")


@settings(max_examples=12, deadline=None)
@given(
    st.sampled_from([128, 1000, 4096]),
    st.sampled_from([2, 64, 1000]),
    st.sampled_from([1, 8, 64]),
    st.sampled_from([2048, 8192]),
)
def test_one_configuration_obeys_littles_law_and_the_bound(input_tokens, output_tokens, concurrency, chunk):
    """Requests/s x (O - 1) x TPOT = the decoding sequences (Little's law), and TPOT is never
    below the Roofline bound of a decode step of those sequences."""
    spec = load_model("llama3-8b")
    try:
        r = evaluate(
            spec,
            H100,
            Traffic(input_tokens, output_tokens),
            Targets(),
            PREDICTION,
            Layout(1),
            concurrency,
            chunk_tokens=chunk,
        )
    except InputError:
        return  # this traffic cannot keep that many sequences decoding in that budget
    c = r.chosen
    assert c.requests_per_s * (output_tokens - 1) * c.tpot_s == pytest.approx(concurrency, rel=1e-9)
    bound = RooflineBound().step_time(build_step(spec, [SeqGroup(concurrency, 1, input_tokens)]), H100).time_s
    assert c.tpot_s >= bound and c.ttft_s > 0 and c.tpot_max_s >= c.tpot_s


def test_issue_13_plan_searches_ten_thousand_and_meets_its_targets(cli):
    """serve llama3-70b --gpu h100 --gpus 8 --input 2K --output 256 --ttft 2s --tpot 50ms: at least
    10,000 configurations, the chosen one meets both targets and uses at most 8 GPUs."""
    data = cli(
        "serve",
        "llama3-70b",
        "--gpu",
        "h100",
        "--gpus",
        "8",
        "--input",
        "2K",
        "--output",
        "256",
        "--ttft",
        "2s",
        "--tpot",
        "50ms",
        "--usd-per-gpu-hour",
        "2.5",
        "--analytic",
        "--json",
    ).json()
    assert data["candidates_evaluated"] >= 10_000
    assert data["ttft_s"] <= 2 and data["tpot_s"] <= 0.05 and data["gpus"] <= 8
    for key in (
        "ttft_s",
        "tpot_s",
        "output_tokens_per_s",
        "output_tokens_per_s_per_gpu",
        "max_concurrency",
        "gpus",
        "usd_per_million_output_tokens",
    ):
        assert data[key] is not None
    # the price arithmetic: $2.5 per GPU-hour over the requests served, all of it on the output
    # tokens, and split by the prefill share
    c = data["chosen"]
    per_request = 2.5 * c["gpus"] / 3600 / c["requests_per_s"]
    assert data["usd_per_million_output_tokens"] == pytest.approx(per_request / 256 * 1e6)
    split = per_request * (1 - c["prefill_share"]) / 256 * 1e6
    assert (
        data["usd_per_million_output_tokens_split"] == c["usd_per_million_output_tokens_split"] == pytest.approx(split)
    )
    frontier = data["frontier"]
    for a in frontier:  # nothing on the frontier is beaten on both axes by another point of it
        assert not any(
            b["output_tokens_per_s_per_gpu"] > a["output_tokens_per_s_per_gpu"]
            and b["tokens_per_s_per_user"] > a["tokens_per_s_per_user"]
            for b in frontier
        )


def test_one_configuration_has_the_issues_keys(cli):
    data = cli(
        "serve",
        "llama3-70b",
        "--gpu",
        "h100",
        "--tp",
        "2",
        "--batch",
        "64",
        "--input",
        "2048",
        "--output",
        "2048",
        "--json",
    ).json()
    assert data["chosen"]["layout"]["tp"] == 2 and data["chosen"]["concurrency"] == 64
    assert data["gpus"] == 2 and len(data["frontier"]) == 1
    assert data["usd_per_million_output_tokens"] is None  # no price given
    assert data["output_tokens_per_s_per_gpu"] == pytest.approx(data["output_tokens_per_s"] / 2)


def test_an_impossible_tpot_names_the_fastest_configuration(cli):
    r = cli("serve", "llama3-70b", "--gpu", "h100", "--tpot", "1ms", "--analytic")
    assert r.code == 2 and r.out == "" and len(r.err.strip().splitlines()) == 1
    assert "--tpot 1.00 ms: the fastest configuration reaches" in r.err and "concurrency 1" in r.err


def test_a_model_too_big_for_the_budget_says_how_many_gpus_it_needs(cli):
    """Llama-3.1-405B in BF16 (810 GB) cannot fit 8 H100s (8 x 72 GiB usable = 618 GB). TP must
    divide its 128 heads, so 10 or 11 GPUs are TP 1 or 2 pipelines of 81 or 74 GB of weights per
    GPU, more than the 77 GB usable less the 2.15 GB reserve and the workspace; 12 are TP 4 x PP 3
    at 67.5 GB each, the fewest ``fit`` lists too."""
    r = cli("serve", "llama3.1-405b", "--gpu", "h100", "--gpus", "8")
    assert r.code == 2 and "does not fit 8 x h100" in r.err and "it needs 12 (TP 4 x PP 3)" in r.err
    assert llm_cost.fit("llama3.1-405b", "h100", context=2304).smallest_layouts[0].layout.gpus == 12


def test_a_pipeline_of_any_length_is_planned_as_the_engines_run_it():
    """A new user's finding: ``serve deepseek-v3 --gpu h100 --gpus 10`` answered "it needs 16 (TP 2
    x PP 8)" while ``fit`` lists TP 2 x PP 5 on 10 GPUs (673.15 GB of weights: 67.3 GB per GPU of the
    77 GB usable); vLLM and SGLang split 61 layers over 5 stages (13 + 4 x 12). The plan on 10
    GPUs uses at most 10 and meets its target."""
    plan = llm_cost.serve("deepseek-v3", "h100", "2K", 256, gpus=10, tpot_s="p90:50ms", requests=100)
    assert plan.gpus <= 10 and plan.chosen.meets
    assert (plan.chosen.layout.tp, plan.chosen.layout.pp) == (2, 5)


def test_a_rate_sizes_the_deployment():
    """--qps: the GPUs needed grow with the rate; each replica carries at most its saturated rate."""
    spec = load_model("llama3-8b")
    small = plan(spec, H100, Traffic(1024, 128, 5.0), Targets(1.0, 0.05), PREDICTION, gpus=16)
    large = plan(spec, H100, Traffic(1024, 128, 50.0), Targets(1.0, 0.05), PREDICTION, gpus=16)
    assert small.gpus < large.gpus
    assert large.chosen.requests_per_s == pytest.approx(50.0)


def test_disaggregated_transfer_is_the_prompts_kv_over_the_link():
    """Llama-3-8B, 2,048-token prompts: 2,048 x 128 KiB = 268,435,456 B per request over one
    NVLink 4 link (450 GB/s per direction) from a one-GPU prefill replica: 0.597 ms."""
    r = plan(
        load_model("llama3-8b"),
        H100,
        Traffic(2048, 256),
        Targets(),
        PREDICTION,
        gpus=4,
        modes=(ServingMode.DISAGGREGATED,),
        layouts=[Layout(1)],
    )
    assert r.chosen.kv_transfer_s == pytest.approx(268_435_456 / 450e9)
    assert r.chosen.ttft_s >= r.chosen.kv_transfer_s + r.chosen.queue_s


def test_memory_limits_concurrency():
    """The concurrency chosen never exceeds what the KV cache holds."""
    r = plan(
        load_model("llama3-8b"),
        H100,
        Traffic(8192, 1024),
        Targets(),
        PREDICTION,
        gpus=1,
        modes=(ServingMode.AGGREGATED,),
    )
    assert r.chosen.concurrency <= r.chosen.max_concurrency and r.binding == "memory"


def test_unchunked_prompts_stall_decoding_for_a_whole_prefill():
    """--chunk off: the slowest step a token waits for is a prefill of the waiting prompt plus the
    decode step it held up (vLLM without chunked prefill); chunked, it is one mixed step, faster."""
    spec = load_model("llama3-8b")
    apart = evaluate(spec, H100, Traffic(2048, 256), Targets(), PREDICTION, Layout(1), 16, chunk_tokens=None).chosen
    decoding = [SeqGroup(4, 1, 2048 + (2 * i + 1) * 255 // 8) for i in range(4)]
    prefill = PREDICTION.step_time(build_step(spec, [SeqGroup(1, 2048, 0)]), H100).time_s
    decode = PREDICTION.step_time(build_step(spec, decoding), H100).time_s
    assert apart.tpot_max_s == pytest.approx(prefill + decode)
    chunked = evaluate(spec, H100, Traffic(2048, 256), Targets(), PREDICTION, Layout(1), 16, chunk_tokens=4096).chosen
    assert chunked.tpot_max_s < apart.tpot_max_s


def test_chunk_off_on_the_command_line(cli):
    r = cli("serve", "llama3-8b", "--tp", "1", "--batch", "16", "--chunk", "off", "--json")
    assert r.code == 0 and r.json()["chosen"]["chunk_tokens"] is None
    bad = cli("serve", "llama3-8b", "--chunk", "many")
    assert bad.code == 2 and "or off" in bad.err


def test_latency_targets_need_a_unit(cli):
    r = cli("serve", "llama3-8b", "--tpot", "50")
    assert r.code == 2 and "no unit" in r.err and "50ms" in r.err


def test_a_rate_the_budget_cannot_carry_says_what_it_carries(cli):
    r = cli("serve", "llama3-8b", "--qps", "1000", "--gpus", "1")
    assert r.code == 2 and "carry at most" in r.err and "requests/s" in r.err and len(r.err.splitlines()) == 1


def test_the_verdict_says_which_modes_were_searched(cli):
    only = cli("serve", "llama3-8b", "--mode", "aggregated", "--analytic", "--json").json()
    assert only["mode_verdict"] == "aggregated only (the one mode searched)" and only["best_disaggregated"] is None
    one = cli("serve", "llama3-8b", "--gpus", "1", "--analytic", "--json").json()
    assert "needs at least 2 GPUs" in one["mode_verdict"]


def test_disaggregated_pools_that_cannot_each_hold_the_model_say_so(cli):
    """A MoE user: disaggregated DeepSeek-V3 on 8 H200 was refused because "the KV cache holds none
    of the concurrencies", though the reason is that a prefill pool and a decode pool of 4 GPUs
    each cannot hold its 671B weights (FP8: 671 GB at one byte each, against 4 x 141 GB). The
    refusal names the pools and the smallest count whose two pools each hold a replica, and that
    count plans."""
    args = ("serve", "deepseek-v3", "--gpu", "h200", "--input", "2K", "--output", "256", "--mode", "disaggregated")
    refused = cli(*args, "--gpus", "8")
    assert refused.code == 2 and len(refused.err.strip().splitlines()) == 1
    assert refused.err.startswith("error: --mode: disaggregated serving needs a prefill pool and a decode pool")
    named = int(refused.err.split("give --gpus ")[1].split()[0])
    assert named > 8 and named % 2 == 0
    planned = cli(*args, "--gpus", str(named), "--json")
    assert planned.code == 0, planned.err
    assert planned.json()["chosen"]["mode"] == "disaggregated" and planned.json()["chosen"]["gpus"] <= named


def test_the_most_a_budget_carries_is_what_a_plan_at_a_rate_finds():
    """An attacker: a refusal on 4,096 H100s said "they carry at most 672 requests/s" of one
    configuration of 402 GPUs, where a plan at 1,000 requests/s found 928 GPUs carrying them.
    The figure named is the saturated configuration copied over the budget, so a plan at 90% of
    it fits in the budget and one at 105% is refused."""
    import re

    spec, traffic = load_model("llama3-70b"), Traffic(2048, 256, 1e5)
    with pytest.raises(InputError) as refused:
        plan(spec, H100, traffic, Targets(), PREDICTION, gpus=256)
    most = float(re.search(r"at most ([\d,.]+) requests/s", str(refused.value)).group(1).replace(",", ""))
    assert "copies of" in str(refused.value)
    assert plan(spec, H100, Traffic(2048, 256, 0.9 * most), Targets(), PREDICTION, gpus=256).chosen.gpus <= 256
    with pytest.raises(InputError):
        plan(spec, H100, Traffic(2048, 256, 1.05 * most), Targets(), PREDICTION, gpus=256)


def test_counts_are_consistent():
    r = plan(load_model("llama3-8b"), H100, Traffic(2048, 256, 20.0), Targets(1.0, 0.03), PREDICTION, gpus=8)
    assert r.candidates_feasible <= r.candidates_evaluated


def test_few_kv_heads_in_flight_are_flagged_as_pessimistic(cli):
    """One sequence on TP 8 holds one KV head per GPU: far below the profile's decode-attention
    saturation, where engines with split-KV read the cache faster than the profile's kernels (the h100
    profile, PyTorch eager, splits none; the default vLLM profile does, and is not flagged)."""
    args = ("--tp", "8", "--batch", "1", "--input", "32K", "--output", "512", "--json")
    data = cli("serve", "llama3.1-70b", *args, "--profile", "hopper-pytorch-eager").json()  # a 128K context
    assert any(c["code"] == "serve.few_kv_heads" for c in data["conventions"])
    split = cli("serve", "llama3.1-70b", *args).json()
    assert not any(c["code"] == "serve.few_kv_heads" for c in split["conventions"])
    busy = (
        "--tp",
        "1",
        "--batch",
        "64",
        "--input",
        "2K",
        "--output",
        "256",
        "--profile",
        "hopper-pytorch-eager",
        "--json",
    )
    assert not any(c["code"] == "serve.few_kv_heads" for c in cli("serve", "llama3-8b", *busy).json()["conventions"])


def test_a_large_budget_is_searched_in_bounded_work():
    """4,096 GPUs: decode pools of up to 16 replicas (larger ones repeat their ratios), and only
    undominated prefill configurations: a bounded search, not every split of 4,096."""
    r = plan(load_model("llama3-8b"), H100, Traffic(2048, 256), Targets(), PREDICTION, gpus=4096)
    assert r.candidates_evaluated < 100_000 and r.gpus <= 4096
