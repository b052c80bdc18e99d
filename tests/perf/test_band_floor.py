"""A band's fast end is never faster than the step's Roofline bound (a new user's trial found
``roofline llama3-8b --gpu h100 --batch 1 --context 2K`` printing a band down to 3.05 ms under a
4.56 ms bound, and serve fast ends under the time it takes to read the weights once). No shipped
measurement beats its bound (tests/perf/test_measurement_files.py), so no band end may."""

from __future__ import annotations

from pathlib import Path

from hypothesis import assume, given, settings
from hypothesis import strategies as st

from llm_cost import api


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(["llama3-8b", "mixtral-8x7b", "gpt-oss-120b"]),
    gpu=st.sampled_from(["h100", "a100", "mi300x", "rtx-5090", "b200"]),
    engine=st.sampled_from(["vllm", "sglang", "trtllm", "llamacpp"]),
    batch=st.integers(1, 256),
    context=st.integers(0, 16384),
)
def test_a_decode_band_never_reaches_under_the_bound(model, gpu, engine, batch, context):
    assume(not (engine == "trtllm" and gpu == "mi300x"))  # refused: TensorRT-LLM runs on NVIDIA GPUs only
    tp = 1 if model == "llama3-8b" else 8 if gpu != "rtx-5090" else None
    if tp is None:
        return
    d = api.decode(model, gpu, batch=batch, context=context, engine=engine, layout=api.Layout(tp=tp))
    if d.predicted_low_s is not None:
        assert d.bound_s <= d.predicted_low_s <= d.predicted_s <= d.predicted_high_s


def test_the_reported_case_is_held_at_the_bound():
    """llama3-8b on an H100, batch 1 at 2,048 tokens: 15.28 GB over 3.35 TB/s is 4.56 ms, the floor."""
    d = api.decode("llama3-8b", "h100", batch=1, context=2048)
    assert d.bound_s == d.predicted_low_s
    assert abs(d.bound_s - 15_278_000_000 / 3.35e12) / d.bound_s < 0.002


def test_a_prefill_band_never_reaches_under_the_bound():
    for seq in (128, 2048, 32768):
        p = api.prefill("llama3-70b", "h100", seq=seq, layout=api.Layout(tp=8))
        assert p.predicted_low_s is not None and p.predicted_low_s >= p.bound_s


def test_a_serve_fast_end_never_steps_faster_than_the_bound(tmp_path: Path):
    """Three requests at once, 100 tokens in and 10 out, on one H100: every decode step holds at
    most 3 sequences at at most 110 tokens, so its time is at least the bound of reading the
    weights once at batch 1; the fast end's TPOT cannot be under it."""
    trace = tmp_path / "three.csv"
    trace.write_text("arrival_s,input_tokens,output_tokens\n0,100,10\n0,100,10\n0,100,10\n", encoding="utf-8")
    run = api.serve("llama3-8b", "h100", layout=api.Layout(tp=1), trace=str(trace))
    floor = api.decode("llama3-8b", "h100", batch=1, context=100).bound_s
    tpot = run.percentiles["tpot_s"]
    assert tpot.p50_low_s is not None and tpot.p50_low_s >= floor
    assert run.tpot_low_s is not None and run.tpot_low_s >= floor
