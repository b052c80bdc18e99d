"""InputError's message, its advice and its reason (llm_cost.core.errors)."""

from __future__ import annotations

from llm_cost.core.errors import InputError
from llm_cost.core.limits import MAX_ECHO


def test_advice_follows_the_message_and_the_reason_leaves_it_out():
    """A refusal's advice is printed after a semicolon; a caller that gives its own advice (the
    serve plan naming the fewest GPUs that meet the targets) takes the reason alone, where it used
    to cut the message's text at '; give gpus' and strip '; relax one of them' by hand."""
    e = InputError("qps 30: no configuration within 28 x h100 carries it", fields=("qps", "gpus"), advice="raise gpus")
    assert str(e) == "qps 30: no configuration within 28 x h100 carries it; raise gpus"
    assert e.reason == "qps 30: no configuration within 28 x h100 carries it" and e.fields == ("qps", "gpus")
    plain = InputError("tp: 3 does not divide 32 heads", fields=("tp",))
    assert str(plain) == plain.reason == "tp: 3 does not divide 32 heads"


def test_the_reason_is_cut_as_the_message_is():
    """A long value echoed in the reason is cut to MAX_ECHO characters, as in the whole message."""
    long = "x" * (MAX_ECHO * 4)
    e = InputError(f"model: {long!r} is not a model", advice="give a shipped name")
    assert len(e.reason) < len(long) and str(e).startswith(e.reason) and str(e).endswith("; give a shipped name")
