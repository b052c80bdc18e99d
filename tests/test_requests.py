"""Request records: a question asked as a record (the command line's way) and by keywords (a
notebook's) gets the same answer, and a record mixing the forms of a question is refused naming
the field. The figures themselves are checked elsewhere against published values; here only that
the two doors lead to the same room."""

from __future__ import annotations

import pytest

from llm_cost import api


def test_a_step_request_is_the_sweep_it_names():
    options = api.StepOptions(weights_dtype="fp8", mfu=0.5, layout=api.Layout(tp=2))
    decode = api.StepRequest("llama3-8b", "h100", "decode", [1, 8], [1024], options=options)
    prefill = api.StepRequest("llama3-8b", "h100", "prefill", [1], [4096], logits="all", options=options)
    kw = dict(weights_dtype="fp8", mfu=0.5, layout=api.Layout(tp=2))
    assert [s.to_dict() for s in api.step_request(decode)] == [
        s.to_dict() for s in api.decode_sweep("llama3-8b", "h100", [1, 8], [1024], **kw)
    ]
    assert [s.to_dict() for s in api.step_request(prefill)] == [
        s.to_dict() for s in api.prefill_sweep("llama3-8b", "h100", [1], [4096], logits="all", **kw)
    ]


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        (dict(phase="prefill", weight_bytes="resident"), "weight_bytes"),
        (dict(phase="prefill", ops=False), "ops"),
        (dict(phase="decode", logits="all"), "logits"),
        (dict(phase="mixed"), "phase"),
        (dict(phase="decode", options="fp8"), "options"),
    ],
)
def test_a_step_request_mixing_the_phases_is_refused_naming_the_field(fields, named):
    with pytest.raises(api.LlmCostError) as info:
        api.step_request(api.StepRequest("llama3-8b", "h100", **fields))
    assert str(info.value).startswith(f"{named}:")


def test_a_serve_request_is_the_keyword_call():
    """One configuration, saturated (analytic: no simulation), asked both ways."""
    kw = dict(layout=api.Layout(tp=1), concurrency=16, usd_per_gpu_hour=2.5)
    by_record = api.serve_request(api.ServeRequest("llama3-8b", "h100", 1024, 128, **kw))
    assert by_record.to_dict() == api.serve("llama3-8b", "h100", 1024, 128, **kw).to_dict()


def test_a_request_must_be_a_record():
    for call, name in ((api.serve_request, "ServeRequest"), (api.step_request, "StepRequest")):
        with pytest.raises(api.LlmCostError, match=f"^request: .* is not a {name}"):
            call({"model": "llama3-8b"})
