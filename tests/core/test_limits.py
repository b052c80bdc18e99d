"""The limit table (``llm_cost/core/limits.py``) is the one home of every size an input may set, and
each bound is the same whichever way the value comes in: a flag, a workload or trace file, an
API argument."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import llm_cost
from llm_cost.core import limits

PACKAGE = Path(llm_cost.__file__).parent
#: Module constants named MAX_* that are facts of a model or an engine, not bounds on input.
FACTS = {
    ("analyses/multimodal.py", "MAX_PIXELS"),  # Qwen2-VL's image processor default
    ("analyses/serving/results.py", "MAX_PREFILL_TOKENS"),  # a disaggregated prefill step's batch
    ("analyses/serving/moe_layouts.py", "MAX_SPAN"),  # the widest attention-DP replica the search builds
    ("perf/kernels.py", "MAX_SPLITS"),  # split-KV decode kernels' most splits
}


def test_no_module_but_the_table_sets_a_bound():
    """A module-level ``MAX_...`` or ``..._RANGE`` constant assigned anywhere else is a second home
    (the generated indexes hold data, no constants)."""
    assignment = re.compile(r"^(_?MAX_\w+|\w+_RANGE)\s*(?::[^=\n]*)?=", re.M)
    found = {
        (str(path.relative_to(PACKAGE)), name)
        for path in PACKAGE.rglob("*.py")
        if path.name not in ("limits.py", "shipped_index.py", "catalog_index.py", "catalog_names.py")
        for name in assignment.findall(path.read_text(encoding="utf-8"))
    }
    assert found == FACTS


def _file(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize(
    "flag_args,file_text",
    [
        (["--qps", "5", "--requests", str(limits.MAX_REQUESTS + 1)], f"requests: {limits.MAX_REQUESTS + 1}\n"),
        (
            ["--qps", "5", "--prefix", "100", "--prefix-groups", str(limits.MAX_PREFIX_USERS + 1)],
            f"prefix: {{tokens: 100, groups: {limits.MAX_PREFIX_USERS + 1}}}\n",
        ),
    ],
    ids=["requests", "prefix-groups"],
)
def test_the_flag_and_the_workload_file_have_one_bound(cli, tmp_path, flag_args, file_text):
    """One more than the table's bound is refused from the flag and from the file, each message
    naming the bound; the bound itself is taken by both."""
    bound = f"{limits.MAX_REQUESTS:,}"
    head = "arrivals: {process: poisson, rate_rps: 5, duration_s: 10}\ninput_tokens: 500\noutput_tokens: 10\n"
    flag = cli("serve", "llama3-8b", "--tp", "1", *flag_args)
    work = cli("serve", "llama3-8b", "--tp", "1", "--workload", _file(tmp_path, "w.yaml", head + file_text))
    assert flag.code == work.code == 2 and bound in flag.err and bound in work.err, (flag.err, work.err)


def test_a_trace_has_the_request_bound(cli, tmp_path):
    row = json.dumps({"arrival_s": 0, "input_tokens": 10, "output_tokens": 1}) + "\n"
    r = cli("serve", "llama3-8b", "--tp", "1", "--trace", _file(tmp_path, "t.jsonl", row * (limits.MAX_REQUESTS + 1)))
    assert r.code == 2 and f"more than {limits.MAX_REQUESTS:,} rows" in r.err, r.err


def test_the_api_has_the_flag_bounds():
    with pytest.raises(llm_cost.LlmCostError, match=f"requests: .* to {limits.MAX_REQUESTS:,}"):
        llm_cost.simulate_serving("llama3-8b", qps=1, requests=limits.MAX_REQUESTS + 1)
    with pytest.raises(llm_cost.LlmCostError, match=f"prefix_groups: .* to {limits.MAX_PREFIX_USERS:,}"):
        llm_cost.simulate_serving("llama3-8b", qps=1, prefix_tokens=10, prefix_groups=limits.MAX_PREFIX_USERS + 1)


def test_a_runaway_step_budget_is_refused_from_every_door(cli):
    """The least steps a simulation needs (its tokens over the step budget) are held to the
    table's bound from the flag and the API: --chunk 2 under the default traffic is 1,000 x 2,304
    tokens / 2 = 1,152,000 steps (with a sequence cap of 2: vLLM refuses a budget below the cap)."""
    steps = f"{1000 * 2304 // 2:,} steps at the least, more than the {limits.MAX_SIMULATED_STEPS:,}"
    r = cli("serve", "llama3-8b", "--tp", "1", "--qps", "5", "--chunk", "2", "--max-num-seqs", "2")
    assert r.code == 2 and r.err.startswith("error: --chunk: 2 tokens a step") and steps in r.err, r.err
    with pytest.raises(llm_cost.LlmCostError, match="max_num_batched_tokens: 2 tokens a step") as info:
        llm_cost.simulate_serving("llama3-8b", qps=5, max_num_batched_tokens=2, max_num_seqs=2)
    assert steps in str(info.value)


def test_a_vllm_budget_below_its_sequence_cap_is_refused_from_every_door(cli):
    """vLLM refuses max_num_batched_tokens < max_num_seqs (vllm/config/scheduler.py,
    SchedulerConfig.verify_max_model_len): serve's plan and simulate_serving both say so."""
    r = cli("serve", "llama3-8b", "--tp", "1", "--qps", "5", "--chunk", "512", "--max-num-seqs", "1024")
    assert r.code == 2 and "--chunk: 512 is fewer than --max-num-seqs 1,024, which vLLM refuses" in r.err, r.err
    with pytest.raises(llm_cost.LlmCostError, match="max_num_batched_tokens: 512 is fewer than max_num_seqs 1,024"):
        llm_cost.simulate_serving("llama3-8b", qps=5, max_num_batched_tokens=512, max_num_seqs=1024)


def test_a_token_budget_alone_lowers_vllms_default_sequence_cap_to_it(cli):
    """vLLM sets ``max_num_seqs = min(default, max_num_batched_tokens)`` when only the budget is
    given (vllm/engine/arg_utils.py, ``_set_default_max_num_seqs_and_batched_tokens_args``,
    vllm-project/vllm @ 99d7eb5d6a51): ``--chunk 512`` on an H100 (default cap 1,024) runs at
    most 512 sequences, in one configuration and in a plan, whose command then states both flags.
    An attacker had been refused over a 1,024 default never given."""
    one = cli("serve", "llama3-8b", "--gpu", "h100", "--tp", "1", "--qps", "5", "--chunk", "512", "--requests", "50")
    assert one.code == 0 and "vllm: max_num_seqs 512, max_num_batched_tokens 512" in one.out, one.err
    r = cli("serve", "llama3-8b", "--gpu", "h100", "--gpus", "2", "--input", "1K", "--output", "128",
            "--ttft", "p99:1s", "--tpot", "p90:40ms", "--chunk", "512", "--emit", "vllm")  # fmt: skip
    assert r.code == 0, r.err
    command = r.out.splitlines()[-1]
    seqs = int(command.split("--max-num-seqs ")[1].split()[0])
    assert "--max-num-batched-tokens 512" in command and 1 <= seqs <= 512, command
    for engine, cap in (("trtllm", "max_batch_size 2,048"), ("sglang", "max_running_requests 1,024")):
        other = cli("serve", "llama3-8b", "--gpu", "h100", "--tp", "1", "--qps", "5", "--chunk", "512",
                    "--requests", "50", "--engine", engine)  # fmt: skip
        assert other.code == 0 and cap in other.out, other.err  # their caps do not follow the token budget


def test_an_echoed_value_is_cut_to_the_table_width():
    from llm_cost.core.errors import InputError

    message = str(InputError(f"context: {'9' * 5000!r} is larger than 1e+15"))
    assert max(len(word) for word in message.split()) <= limits.MAX_ECHO and "(5,000 characters)" in message
    assert "(5,002 characters)" not in message  # a new user's trial (F17): the quotes were counted


def test_a_cap_past_the_budget_without_chunking_is_told_to_lower_the_cap(cli):
    """Without chunked prefill vLLM's budget is max(max_model_len, 2,048) = 8,192 for Llama-3-8B: a
    cap of 9,000 is refused naming --max-num-seqs alone (a second attacker was told to give --chunk
    9,000, which turns chunking on)."""
    r = cli("serve", "llama3-8b", "--tp", "1", "--qps", "5", "--chunk", "off", "--max-num-seqs", "9000")
    assert r.code == 2 and r.err.startswith("error: --max-num-seqs: 9,000 is more than the token budget without"), r.err
    assert "--chunk" not in r.err and "give --max-num-seqs 8,192 or fewer" in r.err
