"""The Python API refuses bad arguments with its one exception, LlmCostError, never another.

Every public function of ``llm_cost.api`` is called with one argument replaced by a hostile value
(wrong types, zero, negatives, NaN, infinities, huge integers, empty and odd strings and lists);
the call either answers or raises LlmCostError, whose message names the argument it was given.
"""

from __future__ import annotations

import inspect
import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from llm_cost import api

#: A valid call of each function: the arguments every fuzzed call starts from.
VALID = {
    "params": dict(model="llama3-8b"),
    "kv": dict(model="llama3-8b", contexts=[1024]),
    "kv_sweep": dict(model="llama3-8b", contexts=[1024], batches=[1]),
    "flops": dict(model="llama3-8b", lengths=[128]),
    "ridges": dict(gpu="h100"),
    "decode": dict(model="llama3-8b", gpu="h100", batch=1, context=128),
    "decode_sweep": dict(model="llama3-8b", gpu="h100", batches=[1], contexts=[128]),
    "prefill": dict(model="llama3-8b", gpu="h100", seq=128),
    "prefill_sweep": dict(model="llama3-8b", gpu="h100", batches=[1], seqs=[128]),
    "context": dict(model="llama3-8b", contexts=[8192]),
    "fit": dict(model="llama3-8b", gpu="h100", max_gpus=8),
    "activations": dict(model="llama3-8b", seq=1024),
    "moe": dict(model="mixtral-8x7b", batches=[1]),
    "spec": dict(alpha=0.8, gamma=4, c=0.1),
    "serve": dict(
        model="llama3-8b",
        gpu="h100",
        input_tokens=512,
        output_tokens=64,
        gpus=1,
        concurrency=8,
        layout=api.Layout(tp=1),
    ),
    "serve_compare": dict(model="llama3-8b", gpu=["h100"], input_tokens=256, output_tokens=16, gpus=1, requests=20),
    "train": dict(model="llama3-8b", tokens=10**12, mfu=0.4),
    "simulate_serving": dict(model="llama3-8b", gpu="h100", input_tokens=256, output_tokens=16, qps=2.0, requests=20),
    "train_plan": dict(model="llama3-8b", tokens=10**12, gpus=8, tp=8, cp=1, pp=1, dp=1, global_batch=2**20),
    "image": dict(model="qwen2-vl-7b", width=448, height=448),
    "video": dict(model="qwen2-vl-7b", width=448, height=448, seconds=2.0, fps=1.0),
    "rope": dict(base=10000.0, head_dim=128),
    "numerics": dict(k=4096, head_dim=128),
    "reproduce": dict(rows=["P1"]),
    "show": dict(name="h100"),
    "catalog": dict(kind="gpus"),
}

HOSTILE = st.one_of(
    st.sampled_from(
        [
            None,
            True,
            False,
            0,
            -1,
            1,
            2**70,
            -(2**70),
            0.0,
            -0.5,
            1e-300,
            1e300,
            math.nan,
            math.inf,
            -math.inf,
            "",
            " ",
            "x",
            "fp3",
            "-1",
            "8K",
            "\x00",
            [],
            [0],
            [-1],
            [1.5],
            ["a"],
            {},
            {"a": 1},
            (),
            object(),
            b"bytes",
            1 + 2j,
        ]
    ),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)


def test_every_public_function_is_fuzzed():
    functions = {
        n
        for n in api.EXPORTS
        if n
        not in (
            "load_model",
            "load_gpu",
            "defaults_used",
            "import_config",
            "calibrate",
            "validate",
            "validate_profiles",
            "validate_training",  # no arguments: the shipped table
        )
    }
    assert functions <= set(VALID), sorted(functions - set(VALID))


@pytest.mark.parametrize("name", sorted(VALID))
def test_each_valid_call_answers(name):
    getattr(api, name)(**VALID[name])


@pytest.mark.parametrize("name", sorted(VALID))
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_hostile_argument_raises_only_llm_cost_error(name, data):
    function = getattr(api, name)
    arguments = [p for p in inspect.signature(function).parameters.values() if p.kind != p.VAR_KEYWORD]
    chosen = data.draw(st.sampled_from(arguments), label="argument")
    value = data.draw(HOSTILE, label="value")
    call = {**VALID[name], chosen.name: value}
    try:
        function(**call)
    except api.LlmCostError:
        pass


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: api.import_config({"model_type": "llama"}, "/tmp/x.yaml"), "config"),
        (lambda: api.import_config("config.json", None), "out"),
        (lambda: api.calibrate(["rows.yaml"], 5), "out"),
        (lambda: api.kv("llama3-8b", batch=0), "batch"),
        (lambda: api.image("qwen2-vl-7b", 448, 448, decoder=5), "decoder"),
        (lambda: api.decode("llama3-8b", logits="all"), "logits"),
        (lambda: api.prefill("llama3-8b", context=8192), "context"),
    ],
)
def test_what_the_attack_found_names_the_argument(call, name):
    with pytest.raises(api.LlmCostError) as info:
        call()
    assert str(info.value).startswith(f"{name}:") and "--" not in str(info.value)
