"""The refusal of a rate whose prompts outrun what a replica can prefill says what would work (a
new user's trial: 1,000 requests/s of 2,048-token prompts on one H100 was told to 'give --chunk
1,048,576 or more', which no chunk could honour and which then failed on memory)."""

from __future__ import annotations

import math
import re

import pytest

import llm_cost
from llm_cost.core.errors import InputError


def test_a_rate_past_the_replicas_compute_asks_for_replicas_not_a_chunk():
    """2,048,000 prompt tokens/s of Llama-3-8B (2 x 8.03e9 FLOPs a token) is 3.29e16 FLOP/s: at the
    H100's dense BF16 peak of 989.4 TFLOP/s no fewer than 34 GPUs could prefill it."""
    with pytest.raises(InputError) as err:
        llm_cost.serve("llama3-8b", "h100", 2048, 256, layout=llm_cost.Layout(tp=1), qps=1000.0, requests=2000)
    text = str(err.value)
    assert text.startswith("qps: ") and "at any token budget" in text and "max_num_batched_tokens" not in text
    gpus, needed = (
        int(g.replace(",", "")) for g in re.search(r"give gpus ([\d,]+) \(([\d,]+) replicas\)", text).groups()
    )
    assert gpus == needed >= math.ceil(2_048_000 * 2 * 8_030_261_248 / 989.4e12)
    assert err.value.fields == ("qps", "gpus")


def test_the_replicas_a_rate_needs_are_named_by_the_flag_that_gives_them(cli):
    """One H100 at 50 requests/s of 2K prompts: the error had begun 'max_num_batched_tokens:' (no
    flag) and said 'give 3 replicas' with no flag to give them by (a helper's attack); --gpus 3
    plans three replicas."""
    out = cli("serve", "llama3-8b", "--gpu", "h100", "--tp", "1", "--qps", "50", "--input", "2K", "--output", "256")
    assert out.code == 2 and out.err.startswith("error: --qps: ") and "give --gpus 3 (3 replicas)" in out.err


def test_a_small_chunk_that_a_larger_one_would_cure_names_the_chunk(cli):
    out = cli("serve", "llama3-8b", "--gpu", "h100", "--tp", "1", "--qps", "21", "--input", "2K", "--output", "64",
              "--chunk", "1024", "--max-num-seqs", "256", "--requests", "500")  # fmt: skip
    assert out.code == 2 and "grow without end" in out.err
    assert re.search(r"give --chunk [\d,]+ or more", out.err), out.err


def test_the_chunk_named_is_the_least_that_keeps_up(cli):
    """An attacker: --chunk 80 at 5 requests/s of 2K prompts was told 'give --chunk 160 or more'
    (the doubling's step) while 81 runs. The chunk named keeps up and one token fewer does not."""
    argv = ("serve", "llama3-8b", "--gpu", "h100", "--tp", "1", "--qps", "5", "--requests", "100")
    out = cli(*argv, "--chunk", "80")
    named = int(re.search(r"give --chunk ([\d,]+) or more", out.err).group(1).replace(",", ""))
    assert out.code == 2 and named < 160
    assert cli(*argv, "--chunk", str(named)).code == 0
    assert "grow without end" in cli(*argv, "--chunk", str(named - 1)).err


def test_requests_longer_than_the_models_context_ask_for_shorter_requests_not_a_max_model_len(cli):
    """agentic-long-context's prompts (about 121K tokens) on Llama-3-8B (context 8,192): no
    max_model_len can take them, so the error no longer asks for one (a new user's trial)."""
    out = cli("serve", "llama3-8b", "--gpu", "h100", "--workload", "agentic-long-context", "--qps", "1")
    assert out.code == 2 and "longer than the model's context of 8,192 tokens" in out.err
    assert "give --max-model-len" not in out.err


def test_requests_longer_than_max_model_len_name_the_length_that_takes_them(cli):
    out = cli("serve", "llama3.1-8b", "--gpu", "h100", "--tp", "1", "--qps", "1", "--input", "20K", "--output", "100",
              "--max-model-len", "16384")  # fmt: skip
    assert out.code == 2 and "give --max-model-len 20,580 or more" in out.err  # 20,480 + 100


def test_requests_past_the_context_are_refused_for_their_length_before_the_load(cli):
    """200K-token prompts on Llama-3-8B at 1 req/s: no engine admits one, so the error is their
    length, not the prefill rate of requests that would never run (it had said 'give 6 replicas
    or more', a new user's trial)."""
    out = cli("serve", "llama3-8b", "--gpu", "h100", "--tp", "1", "--qps", "1", "--input", "200K", "--output", "256")
    assert out.code == 2 and "longer than the model's context of 8,192 tokens" in out.err
    assert "replicas" not in out.err


def test_whole_prompts_past_the_replicas_compute_are_refused_too(cli):
    """An attack: with ``--chunk off`` the check was skipped, and 30 requests/s of 8,000-token
    prompts on one H100 (2 x 8.03e9 x 240,000 = 3.85e15 FLOP/s, 3.9x its 989.4 TFLOP/s dense BF16
    peak) ran and printed "4.35 requests/s meet every target". Whole prompts outrun it as chunks do:
    refused, naming the GPUs (at least 4 by the peak alone)."""
    out = cli("serve", "llama3-8b", "--gpu", "h100", "--tp", "1", "--qps", "30", "--input", "8000", "--output", "100",
              "--requests", "2000", "--chunk", "off")  # fmt: skip
    assert out.code == 2 and out.err.startswith("error: --qps: ") and "a whole prompt a step" in out.err
    gpus = int(re.search(r"give --gpus ([\d,]+)", out.err).group(1).replace(",", ""))
    assert gpus >= math.ceil(30 * 8000 * 2 * 8_030_261_248 / 989.4e12)


@pytest.mark.parametrize("analytic", [(), ("--analytic",)])
def test_outputs_past_the_context_are_refused_by_every_form_naming_the_output(cli, analytic):
    """2,048 + 100,000 tokens on Llama-3-8B (max_position_embeddings 8,192): the simulated plan
    refused them, the analytic plan printed a plan of 6 such sequences (an attacker); both refuse
    them now, and name --output, the length past the context (an attacker's --output 1e9 was told of
    --input)."""
    out = cli("serve", "llama3-8b", "--gpus", "1", "--output", "100000", *analytic)
    assert out.code == 2 and out.err.startswith("error: --output: ") and "context of 8,192 tokens" in out.err


def test_requests_no_kv_cache_of_the_layout_holds_are_refused_for_that_before_the_rate(cli):
    """An attacker: 120K-token prompts on one L4 were told 'give --gpus 21' by the prefill check,
    and with --gpus 21 were refused because no request fits the replica's empty KV cache. The KV
    cache is judged first: more replicas of the same layout never hold one request."""
    argv = ("serve", "llama3.1-8b", "--gpu", "l4", "--tp", "1", "--qps", "1", "--input", "120K", "--output", "200",
            "--requests", "20")  # fmt: skip
    first, more = cli(*argv), cli(*argv, "--gpus", "21")
    assert first.code == more.code == 2 and first.err == more.err
    assert "do not fit the replica's empty KV cache" in first.err and "--gpus" not in first.err
