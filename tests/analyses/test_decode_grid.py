"""A decode sweep worked out by columns (llm_cost/analyses/decode_grid.py) gives every row exactly
the result of that point's own decode step: the same exact integers and Fractions, the same floats
to the last bit, the same conventions. The independent value is the per-point path itself
(``decode_step``: one step built, timed by the bound, the estimate and the calibrated model), on
random points of random setups: dense, MoE (expected expert reads, a float), sliding window,
MLA with sparse attention, linear attention, layouts with TP, PP, DP and EP, quantised weights
and KV, both weight-byte conventions, GPUs with and without a shipped profile, profiles with and
without split-KV decode attention (and, with the conventions, the split-KV warnings of rows where
a profile without it is far slower)."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_cost import api
from llm_cost.analyses import decode_grid
from llm_cost.analyses.roofline import GRID_POINTS
from llm_cost.core.types import Engine
from llm_cost.perf.choose import profile_for
from llm_cost.specs.load import load_gpu as _gpu_spec

pytest.importorskip("numpy")

#: (model, layouts it can run) of the shipped specs.
SETUPS = [
    ("llama3-8b", [None, api.Layout(tp=2), api.Layout(pp=2), api.Layout(tp=2, dp=3)]),
    ("mixtral-8x7b", [None, api.Layout(tp=2), api.Layout(tp=2, ep=2), api.Layout(tp=2, ep=4, dp=2)]),
    ("mistral-7b", [None, api.Layout(tp=4)]),
    ("deepseek-v3", [api.Layout(tp=8), api.Layout(tp=8, ep=8), api.Layout(tp=4, pp=2)]),
    ("qwen3-next-80b-a3b", [None, api.Layout(tp=2)]),
    ("llama3-70b", [api.Layout(tp=4), api.Layout(tp=2, pp=2, dp=2)]),
    ("gpt-oss-120b", [None, api.Layout(tp=2, ep=2)]),
]


@st.composite
def sweeps(draw):
    model, layouts = draw(st.sampled_from(SETUPS))
    batches = draw(st.lists(st.integers(1, 100_000), min_size=3, max_size=12, unique=True))
    contexts = draw(st.lists(st.integers(0, 300_000), min_size=1, max_size=3, unique=True))
    if len(batches) * len(contexts) <= GRID_POINTS:
        batches += [max(batches) + i for i in range(1, GRID_POINTS + 2)]
    options = dict(
        layout=draw(st.sampled_from(layouts)),
        weights_dtype=draw(st.sampled_from([None, "fp8", "int4", "int8"])),
        kv_dtype=draw(st.sampled_from([None, "fp8"])),
        weight_bytes=draw(st.sampled_from(["read", "resident"])),
        mfu=draw(st.sampled_from([None, 0.37])),
    )
    gpu = draw(st.sampled_from(["h100", "a100", "h200", "mi300x"]))
    if draw(st.booleans()):  # a profile whose decode attention splits the KV cache (FlashAttention-2's launch)
        shipped = profile_for(_gpu_spec(gpu), Engine.VLLM)
        if shipped is not None:
            options["profile"] = dataclasses.replace(shipped, decode_split_kv=True)
    return model, gpu, batches, contexts, options


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(sweeps(), st.booleans(), st.data())
def test_every_row_of_a_column_sweep_is_its_points_own_result(monkeypatch, sweep, detail, data):
    model, gpu, batches, contexts, options = sweep
    taken = []
    real = decode_grid.decode_columns
    monkeypatch.setattr(decode_grid, "decode_columns", lambda *a, **k: taken.append(real(*a, **k)) or taken[-1])
    try:
        rows = api.decode_sweep(model, gpu, batches, contexts, detail=detail, ops=False, **options)
    except api.LlmCostError:  # a setup the GPU cannot run (a dtype it lacks): the point refuses it too
        with pytest.raises(api.LlmCostError):
            api.decode(model, gpu, batches[0], contexts[0], detail=detail, ops=False, **options)
        return
    layout = options.get("layout")
    own_hop = layout is not None and layout.pp > 1 and gpu == "mi300x"  # one mesh link per hop: timed per point
    assert taken and (taken[0] is not None or own_hop), "the sweep did not take the column path"
    points = [(b, c) for b in batches for c in contexts]
    for i in data.draw(st.lists(st.integers(0, len(points) - 1), min_size=1, max_size=6, unique=True)):
        b, c = points[i]
        one = api.decode(model, gpu, b, c, detail=detail, ops=False, **options)
        assert rows[i] == one, (b, c)
        assert rows[i].to_dict() == one.to_dict()


def test_a_sweep_whose_steps_follow_no_known_form_is_timed_point_by_point(monkeypatch):
    """Without the column path (NumPy missing, or a figure of another form) the sweep is the same."""
    batches = list(range(1, 40, 3))
    by_columns = api.decode_sweep("mixtral-8x7b", "h100", batches, [1024, 4096], detail=False)
    monkeypatch.setattr(decode_grid, "decode_columns", lambda *a, **k: None)
    assert api.decode_sweep("mixtral-8x7b", "h100", batches, [1024, 4096], detail=False) == by_columns
