"""Issue 22's new-user faults in ``serve`` (after the ladder, tests/test_serve_ladder.py): any
percentile target, every request refused, the $/M convention stated, the closed-loop users shown.
Each against hand arithmetic or the simulation's own per-request times."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from llm_cost import Layout, LlmCostError, Statistic, Target, api
from llm_cost.analyses.serving import COST_ALL_OUTPUT, COST_SPLIT
from llm_cost.cli.program import _run
from llm_cost.simulate.results import distribution, weighted_distribution

GEMMA = str(Path(__file__).parent / "fixtures" / "hf" / "gemma-4-26b-a4b-it")


def test_any_percentile_of_a_distribution_by_hand():
    """1, 2, ..., 100: the 95th percentile sits at position 0.95 x 99 = 94.05, between the 95th
    and 96th values: 95 + 0.05 x (96 - 95) = 95.05; P99.9 at 98.901: 99 + 0.901 = 99.901. The
    multiset {1: 3, 10: 1} (1, 1, 1, 10): P95 at 0.95 x 3 = 2.85, 1 + 0.85 x 9 = 8.65."""
    d = distribution(float(i) for i in range(1, 101))
    assert d.at(95) == pytest.approx(95.05) and d.at(99.9) == pytest.approx(99.901)
    assert d.at(99) == pytest.approx(d.p99)
    assert weighted_distribution({1.0: 3, 10.0: 1}).at(95) == pytest.approx(8.65)


def test_a_p95_target_is_accepted_and_reported():
    """``--ttft p95:2s`` was refused. The target reads as percentile 95; the run's JSON reports
    P95 of TTFT under ``percentiles.ttft_s.more.p95``, the 95th percentile of its requests' TTFTs
    computed here by the linear rule (position 0.95 x (n - 1))."""
    run = api.serve("llama3-8b", "h100", 2048, 256, qps=5, layout=api.Layout(tp=1), ttft_s="p95:2s", requests=200)
    t = run.targets["ttft_s"]
    assert t.statistic == Statistic.PERCENTILE and t.percentile == 95 and t.name == "p95"
    ttfts = sorted(r.ttft_s for r in run.simulation.requests)
    pos = 0.95 * (len(ttfts) - 1)
    lo = math.floor(pos)
    by_hand = ttfts[lo] + (ttfts[min(lo + 1, len(ttfts) - 1)] - ttfts[lo]) * (pos - lo)
    assert run.percentiles["ttft_s"].more["p95"] == pytest.approx(by_hand)
    assert run.meets == (by_hand <= 2.0)
    data = run.to_dict()
    assert data["percentiles"]["ttft_s"]["more"]["p95"] == pytest.approx(by_hand)
    assert api.serve("llama3-8b", "h100", 2048, 256, qps=5, layout=api.Layout(tp=1), ttft_s=Target(
        Statistic.PERCENTILE, 2.0, 95.0), requests=200).percentiles == run.percentiles  # fmt: skip


@pytest.mark.parametrize("text", ["p0:1s", "p100:1s", "px:1s", "q50:1s"])
def test_a_percentile_outside_0_100_is_refused_naming_the_target(text):
    with pytest.raises(LlmCostError) as info:
        api.serve("llama3-8b", "h100", 2048, 256, ttft_s=text)
    assert info.value.fields == ("ttft_s",)


def test_every_request_refused_is_an_error_naming_what_would_take_them():
    """``serve llama3-8b --qps 0.1 --input 32K``: 32,768 + 256 tokens is more than the default
    max_model_len of 8,192, Llama-3-8B's context, so every request is refused; this was exit 0
    with an empty table. Now one line, for one configuration and for the plan: past the model's
    context it names the requests' length (no max_model_len may exceed the context); within it,
    the max_model_len that takes them."""
    for layout in (api.Layout(tp=1), None):
        with pytest.raises(LlmCostError) as info:
            api.serve("llama3-8b", "h100", 32768, 256, qps=0.1, layout=layout, requests=50)
        assert "input_tokens" in info.value.fields and "context of 8,192 tokens" in str(info.value)
        with pytest.raises(LlmCostError) as info:
            api.serve("llama3.1-8b", "h100", 32768, 256, qps=0.1, layout=layout, requests=50, max_model_len=8192)
        assert "max_model_len" in info.value.fields and "33,024 or more" in str(info.value)


def test_the_cost_convention_is_stated_in_both_modes():
    """Simulated plans charge all GPU time to output tokens: $/M output = price x GPUs / 3600 over
    output tokens/s, x 1e6; so does the analytic form's $/M output (a new user compared $1.11 analytic
    with $2.64 simulated for the same 8 H100s, and a disaggregated plan's decode pool alone with an
    aggregated plan's every GPU), which also splits the same GPU time: per request, $/M in x I / 1e6
    + $/M out (split) x O / 1e6 = $ per request = $/M out x O / 1e6."""
    sim = api.serve("llama3-8b", "h100", 2048, 256, gpus=1, ttft_s="p99:2s", usd_per_gpu_hour=2.0, requests=100)
    assert sim.cost_convention == sim.chosen.cost_convention == COST_ALL_OUTPUT
    c = sim.chosen
    assert c.usd_per_million_output_tokens == pytest.approx(2.0 * c.gpus / 3600 / c.output_tokens_per_s * 1e6)
    assert any(n.code == "serve.cost_simulated" for n in sim.conventions)
    ana = api.serve("llama3-8b", "h100", 2048, 256, gpus=1, analytic=True, usd_per_gpu_hour=2.0)
    assert ana.cost_convention == COST_SPLIT
    k = ana.chosen
    per_request = k.usd_per_million_input_tokens * 2048 / 1e6 + k.usd_per_million_output_tokens_split * 256 / 1e6
    assert per_request == pytest.approx(k.usd_per_request)
    assert k.usd_per_million_output_tokens == pytest.approx(2.0 * k.gpus / 3600 / k.output_tokens_per_s * 1e6)
    disaggregated = api.serve("llama3-8b", "h100", 2048, 256, gpus=4, modes=["disaggregated"], usd_per_gpu_hour=2.0)
    d = disaggregated.chosen
    assert d.usd_per_million_output_tokens == pytest.approx(2.0 * d.gpus / 3600 / d.output_tokens_per_s * 1e6)


def test_the_saturated_header_names_the_closed_loop_users(capsys):
    """A saturated plan prints its closed-loop users (max_num_seqs x replicas) and reads
    "1 GPU serves" for one GPU."""
    _run(["serve", "llama3-8b", "--gpu", "h100", "--gpus", "1", "--ttft", "p99:2s", "--requests", "100", "--json"])
    data = json.loads(capsys.readouterr().out)
    users = data["chosen"]["max_num_seqs"] * data["chosen"]["replicas"]
    _run(["serve", "llama3-8b", "--gpu", "h100", "--gpus", "1", "--ttft", "p99:2s", "--requests", "100"])
    head = " ".join(capsys.readouterr().out.split())
    assert f"as much as 1 GPU serves, saturated by {users:,} closed-loop users" in head


def test_trtllm_runs_print_its_own_setting_names_and_no_preemption_line(capsys):
    """TensorRT-LLM names its caps ``max_batch_size`` and ``max_num_tokens``
    (``tensorrt_llm/commands/serve.py``), and its GUARANTEED_NO_EVICT scheduler reserves each
    request's whole length, so it never preempts: no vLLM setting names, no preemption count."""
    _run(["serve", "llama3-8b", "--gpu", "h100", "--gpus", "1", "--ttft", "p99:2s", "--engine", "trtllm",
          "--requests", "100"])  # fmt: skip
    out = " ".join(capsys.readouterr().out.split())
    assert "max_batch_size" in out and "max_num_tokens" in out
    assert "max_num_seqs 1" not in out and "max_num_batched_tokens" not in out
    assert "preemptions" not in out and "no preemption" in out


# -- the launch command (serve --emit) ---------------------------------------------------------


def test_two_replicas_on_one_node_run_as_one_data_parallel_command():
    """The issue's plan at TP4 is 2 x TP4 on an 8-GPU H100 node: 2 x 4 = 8 GPUs fit the node, so
    vLLM runs both as ``--data-parallel-size 2`` (an EngineArgs field, vllm/engine/arg_utils.py)
    and SGLang as ``--dp-size 2`` (ServerArgs.dp_size); TensorRT-LLM's command stays one
    replica's, the note splitting the devices 0-3 and 4-7."""
    kw = dict(gpus=8, ttft_s="p99:2s", tpot_s="p90:50ms", layout=Layout(tp=4))
    plan = api.serve("llama3-70b", "h100", 2048, 256, emit="vllm", **kw)
    run, launch = plan.chosen, plan.launch
    assert run.replicas * run.layout.gpus <= 8 and run.layout.pp == 1 and run.replicas == 2
    argv = list(launch.argv)
    assert argv[argv.index("--data-parallel-size") + 1] == "2" and launch.data_parallel == 2
    sglang = list(api.serve("llama3-70b", "h100", 2048, 256, emit="sglang", **kw).launch.argv)
    assert sglang[sglang.index("--dp-size") + 1] == "2"
    trt = api.serve("llama3-70b", "h100", 2048, 256, emit="trtllm", **kw).launch
    assert trt.data_parallel == 1 and "--dp-size" not in trt.argv
    split = [n for n in trt.conventions if n.code == "launch.replicas"][0].params
    assert split["first"] == "0,1,2,3" and split["second"] == "4,5,6,7"


def test_vllms_registry_is_checked_for_the_models_family():
    """vllm/model_executor/models/registry.py @ bf8e7624 lists ``"LlamaForCausalLM"``,
    ``"DeepseekV3ForCausalLM"`` and ``"Qwen2VLForConditionalGeneration"`` but no Gemma 4 or gpt-oss
    (its Gemma entries stop at ``Gemma3ForCausalLM``): those run by later model files of vLLM
    (``gemma4.py``, ``gpt_oss.py``: an attacker was warned that vLLM may not run gpt-oss-120b) are
    known by those; MiniMax-M3's model_type is in neither, so its command carries a warning,
    Llama's and gpt-oss's none, SGLang's says it is unchecked."""
    from llm_cost.analyses.launch import vllm_knows

    assert vllm_knows("llama") and vllm_knows("deepseek_v3") and vllm_knows("qwen2_vl")
    assert vllm_knows("gemma3_text") and vllm_knows("gemma4") and vllm_knows("gpt_oss")
    assert not vllm_knows("minimax_m3")
    layout = dict(layout=Layout(tp=8), qps=0.5, requests=20, emit="vllm")
    minimax = api.serve(str(Path(GEMMA).parent / "minimax-m3"), "h200", 2048, 256, **layout).launch
    assert any(n.code == "launch.unsupported" for n in minimax.conventions)
    for model in ("llama3-8b", "gpt-oss-120b"):
        launch = api.serve(model, "h100", 2048, 256, gpus=1 if model == "llama3-8b" else 2, ttft_s="p99:2s",
                           requests=100, emit="vllm").launch  # fmt: skip
        assert not any(n.code.startswith("launch.unsupported") for n in launch.conventions), model
    sglang = api.serve("llama3-8b", "h100", 2048, 256, gpus=1, ttft_s="p99:2s", requests=100, emit="sglang").launch
    assert any(n.code == "launch.support_unchecked" for n in sglang.conventions)


def test_emitted_max_model_len_fits_the_plans_kv_cache():
    """vLLM refuses to start when one request of max_model_len tokens does not fit its KV cache
    (vllm/v1/core/kv_cache_utils.py check_enough_kv_cache_memory: "To serve at least one request with
    the models's max seq len ..."). Llama-3-8B on one H100 holds a few hundred thousand tokens of KV
    (2 x 32 x 8 x 128 x 2 B = 128 KiB each): a 10M-token max_model_len is emitted as the replica's KV
    capacity, with a note; a length that fits (8,192) is kept. Llama-3.1-8B at a GPU memory
    utilisation of 0.3 holds fewer tokens than its 131,072-token context."""
    kw = dict(gpus=1, ttft_s="p99:2s", requests=100, emit="vllm")
    plan = api.serve("llama3.1-8b", "h100", 2048, 256, max_model_len=131072, gpu_memory_utilization=0.3, **kw)
    argv = list(plan.launch.argv)
    emitted = int(argv[argv.index("--max-model-len") + 1])
    assert emitted == plan.chosen.kv_capacity_tokens < 131072
    assert any(n.code == "launch.max_model_len_capped" for n in plan.launch.conventions)
    fits = list(api.serve("llama3-8b", "h100", 2048, 256, max_model_len=8192, **kw).launch.argv)
    assert fits[fits.index("--max-model-len") + 1] == "8192"


def test_a_command_for_another_engine_than_the_plans_says_so():
    """The plan simulates one engine's scheduler (vLLM by default); a TensorRT-LLM command for it
    carries a warning, and none when the plan was made under TensorRT-LLM."""
    kw = dict(gpus=1, ttft_s="p99:2s", requests=100, emit="trtllm")
    other = api.serve("llama3-8b", "h100", 2048, 256, **kw).launch
    assert any(n.code == "launch.other_engine" for n in other.conventions)
    same = api.serve("llama3-8b", "h100", 2048, 256, engine="trtllm", **kw).launch
    assert not any(n.code == "launch.other_engine" for n in same.conventions)


@pytest.mark.parametrize("extra", [[], ["--gpus", "8", "--qps", "1"]])
def test_a_prompt_past_the_context_is_refused_for_its_length(cli, extra):
    """Llama-3-8B's context is 8,192 tokens (max_position_embeddings): a 1G-token prompt is refused
    by every engine, so the error names --input and the context, not the --chunk nor the memory it
    would have taken (a new user's trial: it had blamed a --chunk they never gave)."""
    r = cli("serve", "llama3-8b", "--input", "1G", *extra)
    assert r.code == 2 and r.err.startswith("error: --input:") and "context of 8,192 tokens" in r.err, r.err


def test_a_plan_says_when_it_simulates_more_requests_than_asked(cli):
    """A plan runs at least three rounds of each candidate's users, so --requests 1 cannot hold:
    the plan must say what it simulated instead of silently raising it (a new user's trial)."""
    args = ("serve", "llama3-8b", "--gpus", "2", "--requests", "1")
    simulated = cli(*args, "--json").json()["chosen"]["simulated_requests"]
    assert simulated > 1
    assert f"requests: 1 asked, {simulated:,} simulated" in cli(*args).out


def test_an_overloaded_configuration_says_its_queue_grows_without_end():
    """One H100 at 15 requests/s of 2K-token prompts and 256 outputs serves about 10.8/s: the queue
    grows, so the P99 TTFT is the run's length talking (14.9 s over 1,000 requests, 51.6 s over
    3,000, a new-user trial found). The run says it is overloaded, with the rates it compares;
    at 5 requests/s, which it serves, it says nothing of the kind."""
    over = api.serve("llama3-8b", "h100", 2048, 256, qps=15.0, layout=api.Layout(tp=1))
    flagged = [n for n in over.conventions if n.code == "warning.serve_overloaded"]
    assert len(flagged) == 1 and flagged[0].params["offered"] == 15.0
    assert flagged[0].params["served"] == pytest.approx(over.throughput_rps) and over.throughput_rps < 0.9 * 15
    assert "overloaded" in over.violates and "overloaded" in over.violates_upper  # it meets no target
    longer = api.serve("llama3-8b", "h100", 2048, 256, qps=15.0, layout=api.Layout(tp=1), requests=3000)
    assert longer.percentiles["ttft_s"].p99 > 2 * over.percentiles["ttft_s"].p99  # no steady state to report
    fine = api.serve("llama3-8b", "h100", 2048, 256, qps=5.0, layout=api.Layout(tp=1))
    assert fine.throughput_rps > 0.9 * 5 and not any(n.code == "warning.serve_overloaded" for n in fine.conventions)
    assert "overloaded" not in fine.violates
    # near its capacity a short run reads under its rate while its batch still fills (an attack
    # helper: 11.4/s over 400 requests served 88%, over 2,455 97%): its E2E does not grow, so it keeps up
    edge = api.serve("llama3-8b", "h100", 2048, 256, qps=11.4, layout=api.Layout(tp=1), requests=400)
    assert edge.throughput_rps < 0.95 * 11.4 and "overloaded" not in edge.violates
    # a short light run serves its few arrivals' rate (30 at 1/s: about 0.8/s), with nobody waiting
    short = api.serve("llama3-8b", "h100", 2048, 256, qps=1.0, layout=api.Layout(tp=1), requests=30)
    assert short.waiting_mean < 1 and not any(n.code == "warning.serve_overloaded" for n in short.conventions)


def test_a_run_serving_under_three_quarters_of_its_rate_is_overloaded_however_short():
    """A new user's finding: a candidate of 2 x TP4 (Llama-3.1-70B, H200, 10 requests/s of 2K/512)
    served 4.1 of the 10 requests/s offered, yet was not called overloaded: vLLM admitted every
    arrival (nothing waiting) and over 400 requests its E2E fell by arrival (the drain serves the
    last ones fastest), so neither rule saw it. Below 75% of the offered rate (a run that keeps up
    read 88% at the least, its batch still filling) it is overloaded, and says so."""
    run = api.serve(
        "llama3.1-70b", "h200", 2048, 512, qps=10.0, gpus=8, layout=api.Layout(tp=4), requests=400,
        ttft_s="p99:2s", tpot_s="p90:50ms",
    )  # fmt: skip
    assert run.replicas == 2 and run.throughput_rps < 0.75 * 10
    assert "overloaded" in run.violates and any(n.code == "warning.serve_overloaded" for n in run.conventions)


def test_an_extreme_percentile_plan_is_bounded_and_says_its_tail_is_thin():
    """An attack: P99.99 targets at 20 requests/s took 19 s on one GPU and 58 s on three, each
    candidate simulating 20,000 requests to put 10 beyond the percentile (which would take
    100,000). A plan's run now takes at most 5,000 for its tail, and the plan says that its P99.99
    stands on fewer than 10 requests (5,000 x 0.01% = 0.5); of a P99 target (1,000 requests
    resolve it) nothing is said."""
    plan = api.serve("llama3-8b", "h100", 2048, 256, qps=20.0, ttft_s="p99.99:100ms")
    assert len(plan.chosen.simulation.requests) <= 5_000
    said = [n for n in plan.conventions if n.code == "warning.serve_tail"]
    assert len(said) == 1 and said[0].params["metric"] == "ttft_s"
    assert said[0].params["beyond"] == pytest.approx(len(plan.chosen.simulation.requests) * 1e-4)
    p99 = api.serve("llama3-8b", "h100", 2048, 256, qps=20.0, ttft_s="p99:100ms")
    assert not any(n.code == "warning.serve_tail" for n in p99.conventions)


def test_a_plan_at_ten_times_the_rate_needs_about_ten_times_the_gpus():
    """An attack on the planner found plans that did not grow with the rate: llama3-8b on H100 at
    100 requests/s chose 8 GPUs (12.5 requests/s each), at 1,000 67 (15 each) and at 10,000 232 (43
    each), all "targets met". Past 20,000 arrivals the one replica standing for all got its share
    of a truncated stream: 299 requests, 20 s of a backlog growing unseen (serving 408 of 1,000
    requests/s). Each replica's run is now its own length whatever the replicas, and a run that does
    not keep up with its rate meets no target. A GPU's rate cannot grow with the deployment (one
    replica per GPU, each its share of the traffic): at 1,000 requests/s each carries at most a tenth
    more than at 100. (1K-token prompts and 128-token answers: the same failure, a shorter E2E and so
    shorter runs than the attack's 2K/256.)"""

    def per_gpu(qps: float) -> tuple[float, int]:
        plan = api.serve("llama3-8b", "h100", 1024, 128, qps=qps, gpus=4096, ttft_s="p99:2s")
        assert not plan.chosen.violates_upper
        return qps / plan.chosen.gpus, plan.chosen.simulated_requests

    low, _ = per_gpu(100.0)
    high, simulated = per_gpu(1000.0)
    assert high <= 1.1 * low
    assert simulated >= 1000  # the replica's own run: a P99 needs 1,000 requests


@pytest.mark.parametrize("budget", ["4", "8"])
def test_a_rate_the_gpu_budget_cannot_carry_names_the_gpus_that_can(cli, budget):
    """A new user's report: 10 requests/s of llama3-70b on 8 H100 with P99 TTFT 2 s and P90 TPOT
    50 ms was refused as a TPOT out of reach ("the fastest configuration simulated reaches 72.8
    ms"), though 12 GPUs meet it: at a rate more replicas each take less. The refusal names the
    fewest GPUs whose plan meets the targets, and a plan at that count does. With 4 GPUs the
    screen refuses first, and its own count (8, sized without the targets, an attack found such
    counts failing on the retry) is left out for the plan's."""
    argv = ["serve", "llama3-70b", "--gpu", "h100", "--qps", "10", "--input", "2K", "--output", "256",
            "--ttft", "p99:2s", "--tpot", "p90:50ms"]  # fmt: skip
    run = cli(*argv, "--gpus", budget)
    assert run.code == 2 and run.err.count("\n") == 1 and run.err.startswith(f"error: --gpus {budget}:")
    fewest = int(run.err.split("give --gpus ")[-1].split()[0])
    assert fewest > int(budget) and run.err.count("give --gpus") == 1  # 4: the screen's own count left out
    plan = api.serve("llama3-70b", "h100", "2K", 256, qps=10, gpus=fewest, ttft_s="p99:2s", tpot_s="p90:50ms")
    assert plan.chosen.meets and plan.chosen.gpus <= fewest


def test_a_refusal_that_names_more_gpus_does_not_also_say_relax_a_target(cli):
    """An attacker: 30 requests/s of llama3-70b on 28 H100 was refused with "relax one of them"
    beside "32 do (4 x TP8)", and a plan on 32 then chose 8 x TP4. More GPUs meet every target, so
    no target need be relaxed; the layout named is the plan's without a budget, and says so."""
    argv = ["serve", "llama3-70b", "--gpu", "h100", "--qps", "30", "--input", "2K", "--output", "256",
            "--ttft", "p99:2s", "--tpot", "p90:50ms", "--gpus", "28"]  # fmt: skip
    run = cli(*argv)
    assert run.code == 2 and run.err.count("\n") == 1 and "give --gpus 32 or more" in run.err
    assert "relax one of them" not in run.err and "do (the plan without a budget: " in run.err


def test_a_rate_no_budget_carries_is_blamed_on_where_the_rate_comes_from(cli, tmp_path):
    """An attack: a trace whose arrivals come 1e-300 s apart, and a workload file's rate, were
    refused as '--qps ...', a flag never given, with a 300-digit figure. The refusal names the
    trace or the workload; --qps stays named for a rate given as --qps."""
    trace = tmp_path / "burst.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n" + "".join(f"{i}e-300,512,64\n" for i in range(100)))
    run = cli("serve", "llama3-8b", "--trace", str(trace))
    assert run.code == 2 and run.err.startswith("error: --trace: its 100 requests arrive within"), run.err  # a burst
    assert "--qps" not in run.err and len(run.err) < 400
    work = tmp_path / "work.yaml"
    work.write_text(
        "arrivals: {process: poisson, rate_rps: 20, duration_s: 100}\ninput_tokens: 4000\noutput_tokens: 100\n"
    )
    run = cli("serve", "llama3-8b", "--workload", str(work), "--gpus", "1")
    assert run.code == 2 and "(--workload: 20 requests/s: no configuration" in run.err and "--qps" not in run.err
    run = cli("serve", "llama3-8b", "--qps", "1e6", "--gpus", "8")
    assert run.code == 2 and run.err.startswith("error: --qps 1,000,000: no configuration"), run.err


@pytest.mark.parametrize(
    "argv,flag",
    [
        (
            [
                "serve",
                "llama3-8b",
                "--tp",
                "1",
                "--qps",
                "3",
                "--engine",
                "trtllm",
                "--gpu",
                "mi300x",
                "--requests",
                "50",
            ],
            "--engine",
        ),
        (["serve", "llama3-8b", "--tp", "1", "--batch", "8", "--emit", "trtllm", "--gpu", "mi300x"], "--emit"),
        (["roofline", "llama3-8b", "--gpu", "mi300x", "--engine", "trtllm", "--batch", "4"], "--engine"),
    ],
)
def test_tensorrt_llm_is_refused_on_a_gpu_not_nvidias(cli, argv, flag):
    """An attacker: TensorRT-LLM was simulated on an MI300X with a 'cdna3-trtllm (combined)'
    profile and its trtllm-serve command emitted, though it builds CUDA engines for NVIDIA GPUs
    only. Each is refused in one line naming the flag and the engines that run there."""
    r = cli(*argv)
    assert r.code == 2 and r.err.count("\n") == 1
    assert r.err.startswith(f"error: {flag}: trtllm (TensorRT-LLM) runs on NVIDIA GPUs only") and "AMD" in r.err
    assert f"give {flag} vllm or sglang" in r.err


def test_a_plan_of_the_users_requests_has_the_one_configurations_step_bound(cli):
    """An attacker: 20,000 requests at 0.01/s (each decoding alone, about 8.4 million engine steps)
    were refused in 0.14 s for one configuration but planned for 30 s on four GPUs. A plan of the
    user's own request count meets the same bound and names the most it takes; a plan that sizes
    its own runs (no --requests) is not refused."""
    argv = ("serve", "llama3-8b", "--gpu", "h100", "--qps", "0.01", "--input", "100", "--output", "419")
    plan = cli(*argv, "--requests", "20000", "--ttft", "p99:2s")
    one = cli(*argv, "--requests", "20000", "--tp", "1")
    assert plan.code == one.code == 2 and plan.err == one.err
    assert plan.err.startswith("error: --requests: 20,000 arrivals of 419 output tokens") and "give at most" in plan.err
    assert cli(*argv, "--ttft", "p99:2s").code == 0
