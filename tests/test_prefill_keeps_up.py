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
    assert "no token budget keeps up" in text and "max_num_batched_tokens 1,048,576" not in text
    needed = int(re.search(r"give ([\d,]+) replicas", text).group(1).replace(",", ""))
    assert needed >= math.ceil(2_048_000 * 2 * 8_030_261_248 / 989.4e12)
    assert err.value.fields == ("qps",)


def test_a_small_chunk_that_a_larger_one_would_cure_names_the_chunk(cli):
    out = cli("serve", "llama3-8b", "--gpu", "h100", "--tp", "1", "--qps", "21", "--input", "2K", "--output", "64",
              "--chunk", "1024", "--max-num-seqs", "256", "--requests", "500")  # fmt: skip
    assert out.code == 2 and "grow without end" in out.err
    assert re.search(r"give --chunk [\d,]+ or more", out.err), out.err
