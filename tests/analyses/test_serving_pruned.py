"""A saturated screen without targets prices only what can be on its frontier or be chosen
(``saturated_frontier``): every configuration it leaves unpriced is beaten on both tokens/s per user
and output tokens/s per GPU by one it priced, and the candidates it prices are those of the whole
enumeration (``aggregated``, every configuration priced), figure for figure, with the same
frontier, the same counts and refusals. The independent value is the whole enumeration itself, on
dense, MoE (attention data parallel among the layouts), MLA and hybrid models, chunked and
unchunked budgets, a prefix-cache share."""

from __future__ import annotations

from fractions import Fraction

import pytest

from llm_cost.analyses.capacity import DEPLOYMENT
from llm_cost.analyses.serving import CHUNK_GRID, CONCURRENCY_GRID, Targets, Traffic
from llm_cost.analyses.serving.modes import aggregated, saturated_frontier
from llm_cost.analyses.serving.moe_layouts import attention_dp_layouts, chunks_for
from llm_cost.analyses.serving.replicas import StepTimes, replica, replica_layouts
from llm_cost.analyses.serving.search import _frontier
from llm_cost.core.types import Dtype, Engine
from llm_cost.perf.calibrated import CalibratedModel
from llm_cost.perf.choose import profile_for
from llm_cost.specs.load import load_gpu, load_model

CASES = [
    ("llama3-70b", "h100", 8, Traffic(2048, 256), 16),
    ("deepseek-v3", "h200", 8, Traffic(2048, 512), 8),
    ("qwen3-next-80b-a3b", "h100", 8, Traffic(4096, 1024), 16),
    ("mixtral-8x7b", "a100", 4, Traffic(1024, 128, cached_tokens=512), 16),
]


def _enumerated(name, gpu_name, budget, traffic, bits):
    spec, gpu = load_model(name), load_gpu(gpu_name)
    model = CalibratedModel(profile_for(gpu, Engine.VLLM))
    layouts = replica_layouts(spec, gpu, budget) + attention_dp_layouts(spec, gpu, budget)
    reps = [replica(spec, gpu, lay, traffic, DEPLOYMENT, Fraction(bits), 16) for lay in layouts]
    return spec, gpu, model, reps


@pytest.mark.parametrize("name, gpu_name, budget, traffic, bits", CASES)
def test_the_pruned_screen_keeps_the_frontier_and_counts_of_the_whole(name, gpu_name, budget, traffic, bits):
    spec, gpu, model, reps = _enumerated(name, gpu_name, budget, traffic, bits)
    full, full_counts, full_refusals = [], [0], {}
    whole = StepTimes(spec, gpu, model, Fraction(bits), 16, Dtype.BF16)
    for rep in reps:
        full += aggregated(
            spec, whole, rep, traffic, Targets(), budget, 2.0, DEPLOYMENT, CONCURRENCY_GRID,
            chunks_for(rep.layout, CHUNK_GRID), full_counts, full_refusals,
        )  # fmt: skip
    counts, refusals = [0], {}
    pruned_steps = StepTimes(spec, gpu, model, Fraction(bits), 16, Dtype.BF16)
    priced, pruned = saturated_frontier(
        spec, pruned_steps, [(rep, chunks_for(rep.layout, CHUNK_GRID)) for rep in reps], traffic, Targets(), budget,
        2.0, DEPLOYMENT, CONCURRENCY_GRID, counts, refusals,
    )  # fmt: skip
    assert full and (counts, refusals) == (full_counts, full_refusals)
    assert len(priced) + len(pruned) == len(full)
    by_key = {(c.layout, c.replicas, c.chunk_tokens, c.concurrency): c for c in full}
    assert [by_key[(c.layout, c.replicas, c.chunk_tokens, c.concurrency)] for c in priced] == priced  # in order
    assert [c for c in full if (c.layout, c.replicas, c.chunk_tokens, c.concurrency) not in pruned] == priced
    for key in pruned:
        c = by_key[key]
        assert any(
            d.tokens_per_s_per_user > c.tokens_per_s_per_user
            and d.output_tokens_per_s_per_gpu > c.output_tokens_per_s_per_gpu
            for d in priced
        )
    assert _frontier(priced) == _frontier(full)
    assert max(c.output_tokens_per_s_per_gpu for c in priced) == max(c.output_tokens_per_s_per_gpu for c in full)
    assert pruned and len(pruned_steps.cache) < len(whole.cache)  # the point: fewer steps timed
