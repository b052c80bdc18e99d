"""``spec`` times its steps as ``roofline`` predicts them (the same time model, the same layouts)."""

from __future__ import annotations

import pytest

from llm_cost import api
from llm_cost.core.choices import Logits
from llm_cost.model.layout import Layout
from llm_cost.perf.calibrated import CalibratedModel
from llm_cost.perf.profile import load_profile
from llm_cost.specs.load import load_gpu, load_model
from llm_cost.workload.step import SeqGroup, build_step


@pytest.mark.parametrize("layout", [None, Layout(tp=4)])
def test_baseline_step_is_roofline_s_prediction(layout):
    model = "llama3-70b" if layout else "llama3-8b"
    s = api.spec(model, "h100", alpha=0.8, gamma=4, c=0.05, batches=[1, 32], context=4096, layout=layout)
    assert s.time_model == "prediction (profile h100)" and s.time_kind == "prediction"
    for row in s.rows:
        d = api.decode(model, "h100", batch=row.batch, context=4096, layout=layout)
        assert row.baseline_step_s == pytest.approx(d.predicted_s, rel=1e-12)
        assert row.baseline_tokens_per_s == pytest.approx(row.batch / d.predicted_s, rel=1e-12)


@pytest.mark.parametrize("layout", [Layout(), Layout(tp=4)])
def test_verify_step_is_the_time_model_of_the_same_shape(layout):
    """The verify step: B sequences scoring gamma + 1 = 5 tokens after 4,096 cached, logits at every
    position, timed by roofline's time model (CalibratedModel with the GPU's profile) per GPU of the
    layout."""
    model = "llama3-70b" if layout.tp > 1 else "llama3-8b"
    s = api.spec(model, "h100", alpha=0.8, gamma=4, c=0.05, batches=[8], context=4096, layout=layout)
    step = build_step(load_model(model), [SeqGroup(8, 5, 4096)], logits=Logits.ALL, layout=layout)
    expected = CalibratedModel(load_profile("h100")).step_time(step, load_gpu("h100")).time_s
    assert s.rows[0].verify_step_s == pytest.approx(expected, rel=1e-12)


def test_spec_accepts_tp_on_the_command_line(cli):
    out = cli("spec", "llama3-70b", "--gpu", "h100", "--tp", "4", "--alpha", "0.8", "--gamma", "4", "--c", "0.05")
    assert out.code == 0, out.err
    assert "TP 4" in out.out and "prediction (profile h100)" in out.out
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
