"""JSON text: :func:`llm_cost.core.serialize.dumps` writes exactly what ``json.dumps(indent=2,
ensure_ascii=False, allow_nan=False)`` writes (the independent value: the standard library), for
any plain data and for the results of commands; ``plain`` of a result is its fields by name."""

from __future__ import annotations

import json
from enum import Enum

from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost import api
from llm_cost.core.serialize import dumps, plain


class Colour(str, Enum):
    RED = "red"


def _json(data):
    return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False)


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**30), 10**30),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
    st.just(Colour.RED),
)
data = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(), inner, max_size=4)),
    max_leaves=30,
)


@settings(max_examples=300, deadline=None)
@given(data)
def test_dumps_writes_what_the_json_module_writes(value):
    assert dumps(value) == _json(value)


def test_dumps_hands_what_it_does_not_write_to_the_json_module():
    assert dumps({1: "a", "b": (1, 2.5)}) == _json({1: "a", "b": (1, 2.5)})
    assert dumps([{"x": [[], {}]}]) == _json([{"x": [[], {}]}])


def test_results_dump_as_the_json_module_dumps_them():
    for result in (
        api.params("llama3-8b"),
        api.decode("mixtral-8x7b", "h100", 16, 1024),
        api.decode_sweep("llama3-8b", "h100", list(range(1, 30)), [0, 2048], detail=False),
        api.kv("llama3-8b", [1024, 8192]),
        api.flops("deepseek-v3", "prefill", [128, 8192]),
    ):
        data = plain(result)
        assert dumps(data) == _json(data)
