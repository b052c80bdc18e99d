"""``spec`` times its steps as ``roofline`` predicts them (the same time model, the same layouts)."""

from __future__ import annotations

import pytest

from llm_cost import api
from llm_cost.core.choices import Logits
from llm_cost.model.layout import Layout
from llm_cost.perf.calibrated import CalibratedModel
from llm_cost.perf.choose import load_profile
from llm_cost.specs.load import load_gpu, load_model
from llm_cost.workload.step import SeqGroup, build_step


@pytest.mark.parametrize("layout", [None, Layout(tp=4)])
def test_baseline_step_is_roofline_s_prediction(layout):
    model = "llama3-70b" if layout else "llama3-8b"
    s = api.spec(model, "h100", alpha=0.8, gamma=4, c=0.05, batches=[1, 32], context=4096, layout=layout)
    assert s.time_model == "prediction (profile hopper-vllm)" and s.time_kind == "prediction"  # the default engine
    for row in s.rows:
        d = api.decode(model, "h100", batch=row.batch, context=4096, layout=layout)
        assert row.baseline_step_s == pytest.approx(d.predicted_s, rel=1e-12)
        assert row.baseline_tokens_per_s == pytest.approx(row.batch / d.predicted_s, rel=1e-12)


@pytest.mark.parametrize(("model", "gpu"), [("gpt-oss-120b", "h100"), ("qwen3-30b-a3b-nvfp4", "b200")])
def test_a_quantized_checkpoint_is_timed_in_its_own_formats_as_roofline_times_it(model, gpu):
    """A consistency audit: spec timed gpt-oss-120b's MXFP4 experts and Qwen3-30B-A3B's NVFP4 ones at
    the config's torch_dtype, 16 bits (81.2 ms against roofline's 34.5 ms at batch 32 on an H100,
    and no batch in memory against roofline's 130). It now reads the checkpoint's formats as roofline
    does: the same steps and the same memory ceiling."""
    s = api.spec(model, gpu, alpha=0.8, gamma=3, c=0.1, batches=[1, 32], context=4096)
    for row in s.rows:
        d = api.decode(model, gpu, batch=row.batch, context=4096)
        assert row.baseline_step_s == pytest.approx(d.predicted_s, rel=1e-12)
        assert row.fits_memory == (row.batch <= d.max_batch_in_memory)
    (step_model,) = [n for n in s.conventions if n.code == "spec.step_model"]
    assert step_model.params["bits"] < 5  # 4.47 (MXFP4 experts beside BF16 attention) and 4.74 bits


@pytest.mark.parametrize("layout", [Layout(), Layout(tp=4)])
def test_verify_step_is_the_time_model_of_the_same_shape(layout):
    """The verify step: B sequences scoring gamma + 1 = 5 tokens after 4,096 cached, logits at every
    position, timed by roofline's time model (CalibratedModel with the GPU's profile of the default
    engine, vLLM) per GPU of the layout."""
    model = "llama3-70b" if layout.tp > 1 else "llama3-8b"
    s = api.spec(model, "h100", alpha=0.8, gamma=4, c=0.05, batches=[8], context=4096, layout=layout)
    step = build_step(load_model(model), [SeqGroup(8, 5, 4096)], logits=Logits.ALL, layout=layout)
    expected = CalibratedModel(load_profile("hopper-vllm")).step_time(step, load_gpu("h100")).time_s
    assert s.rows[0].verify_step_s == pytest.approx(expected, rel=1e-12)


def test_spec_accepts_tp_on_the_command_line(cli):
    out = cli("spec", "llama3-70b", "--gpu", "h100", "--tp", "4", "--alpha", "0.8", "--gamma", "4", "--c", "0.05")
    assert out.code == 0, out.err
    assert "TP 4" in out.out and "prediction (profile hopper-vllm)" in out.out
    data = cli(
        "spec", "llama3-70b", "--gpu", "h100", "--tp", "4", "--alpha", "0.8", "--gamma", "4", "--c", "0.05", "--json"
    ).json()
    assert data["layout"]["tp"] == 4


def test_a_given_mbu_asks_for_the_estimate(cli):
    data = cli(
        "spec", "llama3-8b", "--gpu", "h100", "--alpha", "0.8", "--gamma", "4", "--c", "0.1", "--mbu", "1", "--json"
    ).json()
    assert data["time_kind"] == "estimate" and data["time_model"] == "estimate at MFU 60%, MBU 100%"


def test_layout_without_a_gpu_is_refused():
    from llm_cost.core.errors import InputError

    with pytest.raises(InputError, match="layout"):
        api.spec(alpha=0.8, gamma=4, c=0.1, layout=Layout(tp=2))


def test_prefill_with_tp_labels_per_gpu_and_total_flops(cli):
    """By hand, Llama-3-70B (70,553,706,496 parameters: 128,256 x 8,192 embedding and as many in the
    untied LM head, 161 norm vectors of 8,192) prefilling 8,192 tokens, logits on the last position:
    decoder matmul weights 70,553,706,496 - 2 x 1,050,673,152 - 1,318,912 = 68,451,041,280, so weight
    FLOPs 2 x 68,451,041,280 x 8,192 + 2 x 1,050,673,152 (one LM-head row) = 1,121,507,962,077,184 in
    all; with TP 4 each GPU does a quarter of them (every matrix splits by 4)."""
    one = api.prefill("llama3-70b", "h100", seq=8192)
    tp4 = api.prefill("llama3-70b", "h100", seq=8192, layout=Layout(tp=4))
    assert one.weight_flops == 2 * 68_451_041_280 * 8192 + 2 * 1_050_673_152
    assert tp4.total_flops == one.flops == one.total_flops
    assert tp4.weight_flops * 4 == one.weight_flops
    out = cli("roofline", "llama3-70b", "--phase", "prefill", "--seq", "8K", "--tp", "4").out
    assert "FLOPs per GPU" in out and "FLOPs, all 4 GPUs (the model's)" in out and "bytes per GPU" in out
    single = cli("roofline", "llama3-70b", "--phase", "prefill", "--seq", "8K").out
    assert "per GPU" not in single.split("\n")[1]


def test_every_printed_prediction_has_its_tokens_per_second(cli):
    """Decode: batch / predicted seconds; prefill: prompt tokens / predicted seconds; in the text
    beside the time and in JSON as predicted_tokens_per_s."""
    d = cli("roofline", "llama3-8b", "--gpu", "h100", "--batch", "8", "--context", "1K", "--json").json()
    assert d["predicted_tokens_per_s"] == pytest.approx(8 / d["predicted_s"], rel=1e-12)
    text = cli("roofline", "llama3-8b", "--gpu", "h100", "--batch", "8", "--context", "1K").out
    assert f"· {8 / d['predicted_s']:,.0f} tokens/s" in text
    p = cli("roofline", "llama3-8b", "--gpu", "h100", "--phase", "prefill", "--seq", "8K", "--json").json()
    assert p["predicted_tokens_per_s"] == pytest.approx(8192 / p["predicted_s"], rel=1e-12)
    fit = cli("fit", "llama3-8b", "--gpu", "h100", "--tp", "1", "--batch", "1", "--context", "8K").out
    line = next(x for x in fit.splitlines() if "decode prediction" in x)
    assert "tokens/s" in line


def test_each_predicted_step_carries_roofline_s_band(cli):
    """A new user's trial (F22): spec printed its predicted steps with no band. The baseline step is
    roofline's decode prediction, so its band is roofline's (the same held-out residuals, the fast
    end held at the step's Roofline bound); the verify step's fast end is never under its own
    Roofline bound (a step of B x (gamma + 1) tokens on datasheet peaks); the draft's is the
    baseline's times gamma x c. The table shows each band beside its step."""
    from llm_cost.perf.timemodel import RooflineBound

    s = api.spec("llama3-8b", "h100", alpha=0.8, gamma=4, c=0.1, batches=[1, 64], context=2048)
    for row in s.rows:
        d = api.decode("llama3-8b", "h100", batch=row.batch, context=2048)
        assert (row.baseline_step_low_s, row.baseline_step_high_s) == pytest.approx(
            (d.predicted_low_s, d.predicted_high_s), rel=1e-12
        )
        step = build_step(load_model("llama3-8b"), [SeqGroup(row.batch, 5, 2048)], logits=Logits.ALL)
        bound = RooflineBound().step_time(step, load_gpu("h100")).time_s
        assert bound <= row.verify_step_low_s < row.verify_step_s < row.verify_step_high_s
        assert row.draft_low_s == pytest.approx(0.4 * row.baseline_step_low_s, rel=1e-12)
        assert row.draft_high_s == pytest.approx(0.4 * row.baseline_step_high_s, rel=1e-12)
    argv = ["spec", "llama3-8b", "--gpu", "h100", "--alpha", "0.8", "--gamma", "4", "--c", "0.1", "--batch", "1"]
    text = cli(*argv, "--context", "2K").out
    d = api.decode("llama3-8b", "h100", batch=1, context=2048)
    below, above = 1 - d.predicted_low_s / d.predicted_s, d.predicted_high_s / d.predicted_s - 1
    assert f"-{below:.0%} / +{above:.0%}" in text and "band: the prediction's error band" in text
    rows = cli(*argv, "--context", "2K", "--json").json()["rows"]
    assert {"baseline_step_low_s", "verify_step_high_s", "draft_low_s"} <= set(rows[0])


def test_an_estimate_has_no_band(cli):
    s = api.spec("llama3-8b", "h100", alpha=0.8, gamma=4, c=0.1, batches=[8], mbu=0.8)
    assert s.rows[0].baseline_step_low_s is None and s.rows[0].verify_step_high_s is None
