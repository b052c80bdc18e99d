"""A max_model_len past the model's context, which vLLM refuses to start with, is refused (a new
user's trial: --max-model-len 1,000,000 for Llama-3-8B, whose context is 8,192, was emitted as
--max-model-len 439424, what the KV cache held; then the run was simulated at 16,384, serving
9K-token requests, while the emitted command said 8,192 and would refuse them)."""

from __future__ import annotations

import pytest

from llm_cost.api import choices
from llm_cost.specs.load import load_model


@pytest.mark.parametrize(
    "model, context",
    [
        ("llama3-8b", 8192),  # max_position_embeddings 8,192, no rope_scaling
        ("llama3.1-8b", 131072),  # llama3 rope_scaling: max_position_embeddings is already the context
        ("deepseek-v3", 4096 * 40),  # YaRN: original_max_position_embeddings 4,096 x factor 40
        ("gpt-oss-120b", 4096 * 32),  # YaRN: 4,096 x 32
    ],
)
def test_the_context_vllm_starts_with(model, context):
    assert choices.engine_context(load_model(model)) == context


@pytest.mark.parametrize("asked", ["16384", "1000000"])
def test_a_max_model_len_past_the_context_is_refused_naming_the_context(cli, asked):
    out = cli("serve", "llama3-8b", "--gpu", "h100", "--tp", "1", "--qps", "5", "--input", "2K", "--output", "256",
              "--max-model-len", asked, "--emit", "vllm")  # fmt: skip
    assert out.code == 2 and out.out == ""
    assert out.err.count("\n") == 1 and "--max-model-len" in out.err and "give at most 8,192" in out.err


def test_the_context_itself_is_taken_and_emitted():
    """At the context (llama3.1-8b: 131,072, its llama3 rope_scaling already counted) the request
    stands and the command carries it."""
    run = choices.max_model_len_of(load_model("llama3.1-8b"), 131072)
    assert run == 131072
