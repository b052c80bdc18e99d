"""The Python API refuses bad arguments with its one exception, LlmCostError, never another.

Every public function of ``llm_cost.api`` is called with one argument replaced by a hostile value
(wrong types, zero, negatives, NaN, infinities, integers past a float's range, numpy arrays and
scalars, empty, odd and 100,000-character strings and paths, lists); the call either answers or
raises LlmCostError, whose message names the argument it was given, within 3 s of CPU and 500 MB
of resident memory. ``LLM_COST_FUZZ_EXAMPLES``
sets the calls per function (40 here; issue 36's run: 300 each).
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
from fractions import Fraction
from pathlib import Path

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
    "step_request": dict(request=api.StepRequest("llama3-8b", "h100", "prefill", [1], [128])),
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
    "serve_request": dict(
        request=api.ServeRequest("llama3-8b", "h100", 512, 64, gpus=1, concurrency=8, layout=api.Layout(tp=1))
    ),
    "compare_request": dict(request=api.ServeRequest("llama3-8b", ["h100"], 256, 16, gpus=1, requests=20)),
    "simulate_serving": dict(model="llama3-8b", gpu="h100", input_tokens=256, output_tokens=16, qps=2.0, requests=20),
    "train_plan": dict(model="llama3-8b", tokens=10**12, gpus=8, tp=8, cp=1, pp=1, dp=1, global_batch=2**20),
    "image": dict(model="qwen2-vl-7b", width=448, height=448),
    "video": dict(model="qwen2-vl-7b", width=448, height=448, seconds=2.0, fps=1.0),
    "rope": dict(base=10000.0, head_dim=128),
    "numerics": dict(k=4096, head_dim=128),
    "reproduce": dict(rows=["P1"]),
    "show": dict(name="h100"),
    "catalog": dict(kind="gpus"),
    "load_model": dict(model="llama3-8b"),
    "load_gpu": dict(gpu="h100"),
    "defaults_used": dict(model=str(Path(__file__).parent / "fixtures" / "hf" / "gpt2" / "config.json")),
}
#: Valid calls of the functions that write or fit, run on fewer examples (a fit takes a second):
#: ``out`` names a file under the test's folder.
WRITERS = {
    "import_config": dict(config=str(Path(__file__).parent / "fixtures" / "hf" / "gpt2" / "config.json"), out="{tmp}/x.yaml"),
    "calibrate": dict(measurements=["{measurements}"], out="{tmp}/p.yaml"),
    "validate": dict(profile="ampere-trtllm"),
}  # fmt: skip
EXAMPLES = int(os.environ.get("LLM_COST_FUZZ_EXAMPLES", "40"))
#: The same examples on every run (hypothesis's derandomize): a random draw that lands on a slow but
#: valid call once in a while (serve_compare with its default output, 11.6 s of CPU once in a CI run
#: and 1.5 s when hypothesis replayed it) must not decide whether a change lands; more examples with
#: LLM_COST_FUZZ_EXAMPLES.
DERANDOMIZE = True

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
            10**400,
            -(10**400),
            Fraction(10**400, 3),
            "9" * 5000,
            "x" * 100_000,
            "x" * 100_000 + ".yaml",
            "x" * 100_000 + ".json",
            "a/" + "b" * 100_000,
            "/dev/null",
            "/etc/passwd",
            "../../x.yaml",
            Path("/nonexistent/x.yaml"),
            [10**400],
            ["x" * 100_000],
            [None],
            [[1]],
        ]
    ),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)


def _numpy_values() -> list:
    """numpy arrays and scalars, whose truth value and comparisons are not Python's."""
    np = pytest.importorskip("numpy")
    return [np.array([1024, 2048]), np.array([]), np.array([[1.0]]), np.int64(8), np.float64("nan"), np.bool_(True)]


def test_every_public_function_is_fuzzed():
    """Every public function but validate_training (no arguments) is in VALID or WRITERS."""
    functions = set(api.EXPORTS) - {"validate_training"}
    assert functions <= set(VALID) | set(WRITERS), sorted(functions - set(VALID) - set(WRITERS))


@pytest.mark.parametrize("name", sorted(VALID))
def test_each_valid_call_answers(name):
    getattr(api, name)(**VALID[name])


#: Issue 36's bounds on one call: CPU seconds and the growth of peak resident memory over what the
#: process held before it (the suite may have loaded torch for the transformers checks first).
TIME_LIMIT_S, MEMORY_LIMIT_MB = 3.0, 500


def _status_mb(field: str) -> float:
    """``VmHWM`` (peak resident memory since the last reset) or ``VmRSS`` (now), Linux."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(f"{field}:")) / 1024


def _call(function, valid: dict, data, values) -> None:  # noqa: ANN001 - hypothesis's data
    """``function`` with one argument of ``valid`` replaced by a drawn value: it answers or raises
    LlmCostError (any other exception fails the test), within 3 s of CPU and 500 MB of resident
    memory beyond what the process held before the call."""
    import time

    arguments = [p for p in inspect.signature(function).parameters.values() if p.kind != p.VAR_KEYWORD]
    chosen = data.draw(st.sampled_from(arguments), label="argument")
    value = data.draw(values, label="value")
    with open("/proc/self/clear_refs", "w") as refs:  # reset the peak resident memory
        refs.write("5")
    before_mb = _status_mb("VmRSS")
    start = time.process_time()
    try:
        function(**{**valid, chosen.name: value})
    except api.LlmCostError:
        pass
    cpu_s, grown_mb = time.process_time() - start, _status_mb("VmHWM") - before_mb
    assert cpu_s < TIME_LIMIT_S and grown_mb < MEMORY_LIMIT_MB, (chosen.name, f"{cpu_s:.1f} s", f"+{grown_mb:.0f} MB")


@pytest.mark.parametrize("name", sorted(VALID))
@settings(max_examples=EXAMPLES, deadline=None, derandomize=DERANDOMIZE, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_hostile_argument_raises_only_llm_cost_error(name, data):
    _call(getattr(api, name), VALID[name], data, HOSTILE | st.sampled_from(_numpy_values()))


def _serve_by_record(**fields):  # noqa: ANN003, ANN202 - a request's fields
    """``serve_request`` of a ServeRequest built by hand from ``fields``: each field is checked
    where serve reads it, as serve's keyword arguments are."""
    return api.serve_request(api.ServeRequest(**fields))


_serve_by_record.__signature__ = inspect.signature(api.ServeRequest)  # type: ignore[attr-defined]


def _step_by_record(**fields):  # noqa: ANN003, ANN202 - a request's fields
    """``step_request`` of a StepRequest and its StepOptions built by hand from ``fields``."""
    names = {f.name for f in dataclasses.fields(api.StepOptions)}
    options = api.StepOptions(**{k: v for k, v in fields.items() if k in names})
    return api.step_request(api.StepRequest(**{k: v for k, v in fields.items() if k not in names}, options=options))


_step_by_record.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
    [p for p in inspect.signature(api.StepRequest).parameters.values() if p.name != "options"]
    + list(inspect.signature(api.StepOptions).parameters.values())
)


@pytest.mark.parametrize(
    ("function", "valid"),
    [
        (_serve_by_record, VALID["serve"]),
        (_step_by_record, dict(model="llama3-8b", gpu="h100", phase="decode", batches=[1, 8], lengths=[128])),
    ],
    ids=["serve", "step"],
)
@settings(max_examples=EXAMPLES, deadline=None, derandomize=DERANDOMIZE, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_request_record_with_a_hostile_field_raises_only_llm_cost_error(function, valid, data):
    _call(function, valid, data, HOSTILE | st.sampled_from(_numpy_values()))


def _not_none(value) -> bool:  # noqa: ANN001
    return value is not None


@pytest.mark.parametrize("name", sorted(WRITERS))
@settings(
    max_examples=max(3, EXAMPLES // 13),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(data=st.data())
def test_a_writer_given_a_hostile_argument_raises_only_llm_cost_error(name, tmp_path, data):
    """import_config, calibrate and validate: each answers (writing under the test's folder) or
    refuses with LlmCostError; a file an earlier example wrote is refused without force."""
    from llm_cost.analyses.measurements import measurements_dir

    files = {"{tmp}": str(tmp_path), "{measurements}": str(measurements_dir() / "local-a100-gpt-fast-decode.yaml")}

    def filled(value):  # noqa: ANN001, ANN202
        if isinstance(value, list):
            return [filled(v) for v in value]
        for key, path in files.items():
            value = value.replace(key, path) if isinstance(value, str) else value
        return value

    # None is a valid profile for validate (every shipped profile, seconds): left out here
    _call(getattr(api, name), {k: filled(v) for k, v in WRITERS[name].items()}, data, HOSTILE.filter(_not_none))


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


def test_a_model_or_gpu_given_as_a_path_object_is_read_as_its_path():
    """An attack: ``llm_cost.params(pathlib.Path("my.yaml"))`` was refused as 'not a name, a path,
    ...', a contradiction, where traces and workloads take a Path."""
    import pathlib

    import llm_cost

    model, gpu = pathlib.Path("models/llama3-8b.yaml"), pathlib.Path("hardware/h100.yaml")
    root = pathlib.Path(__file__).resolve().parents[1]
    assert llm_cost.params(root / model).total_params == llm_cost.params(str(root / model)).total_params
    step = llm_cost.decode(root / model, root / gpu, batch=8, context=1024)
    assert step == llm_cost.decode(str(root / model), str(root / gpu), batch=8, context=1024)


#: A two-layer Llama config.json as a dict: 1,000 x 64 embedding and LM head, per layer Q, K, V, O
#: 4 x 64 x 64, gate, up, down 3 x 64 x 128 and two norms of 64, a final norm of 64: 210,240
#: parameters counted by hand.
TINY_LLAMA = {"model_type": "llama", "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 2,
              "intermediate_size": 128, "vocab_size": 1000}  # fmt: skip


@pytest.mark.parametrize(
    ("config", "says"),
    [
        ({**TINY_LLAMA, 3: 4}, "model: the config dict's key 3 is not a string"),
        ({**TINY_LLAMA, "hidden_size": object()}, "model: the config dict's hidden_size holds a value of type object"),
        ({**TINY_LLAMA, "rope_scaling": {"factor": {1}}}, "model: the config dict's rope_scaling.factor holds"),
        ({**TINY_LLAMA, "x": [1, {2: 3}]}, "model: the config dict's key 2 in x[1] is not a string"),
    ],
)
def test_a_config_dict_json_would_not_give_names_the_key(config, says):
    """An attacker's config dicts reached a bare TypeError (sorting an int key beside strings, JSON
    encoding an object for the message)."""
    with pytest.raises(api.LlmCostError) as info:
        api.params(config)
    assert str(info.value).startswith(says), str(info.value)


def test_numpy_integers_are_integers():
    """A config dict or a list of contexts built with numpy (an array's elements are numpy's int64)
    is read as the same ints: an attacker's ``kv(contexts=[np.int64(1024)])`` was refused as "must
    be an integer"."""
    np = pytest.importorskip("numpy")
    assert api.params({**TINY_LLAMA, "hidden_size": np.int64(64)}).total_params == 210_240
    assert api.params(TINY_LLAMA).total_params == 210_240
    assert api.kv("llama3-8b", contexts=[np.int64(1024)]) == api.kv("llama3-8b", contexts=[1024])
    assert api.kv("llama3-8b", contexts=list(np.array([1024, 8192]))) == api.kv("llama3-8b", contexts=[1024, 8192])


def test_numpy_scalars_are_numbers_at_every_door_and_leave_no_trace():
    """A second attacker: numpy scalars were refused as out of range in a Layout (tp=np.int64(2)),
    in token counts (input_tokens=np.int64(256)) and in reals (mfu=np.float32(0.5)), and leaked
    into results (requests=np.int64(100) came out as 100.0 in a note's JSON, zero=np.int64(1) as
    1.0). Each now gives the same answer as Python's numbers, with Python's numbers inside."""
    import json

    np = pytest.importorskip("numpy")
    import llm_cost

    assert llm_cost.Layout(tp=np.int64(2)) == llm_cost.Layout(tp=2) and type(llm_cost.Layout(tp=np.int64(2)).tp) is int
    same = dict(batch=8, context=1024)
    assert llm_cost.decode("llama3-8b", "h100", mfu=np.float32(0.5), **same) == llm_cost.decode(
        "llama3-8b", "h100", mfu=0.5, **same
    )
    run = llm_cost.serve("llama3-8b", "h100", np.int64(256), np.int64(32), qps=2.0, requests=np.int64(100),
                         layout=llm_cost.Layout(tp=1))  # fmt: skip
    plain = llm_cost.serve("llama3-8b", "h100", 256, 32, qps=2.0, requests=100, layout=llm_cost.Layout(tp=1))
    assert json.dumps(run.to_dict()) == json.dumps(plain.to_dict())
    trained = llm_cost.train("llama3-8b", 10**10, gpus=8, zero=np.int64(1), mfu=0.4, tp=1)
    assert json.dumps(trained.to_dict()) == json.dumps(
        llm_cost.train("llama3-8b", 10**10, gpus=8, zero=1, mfu=0.4, tp=1).to_dict()
    )
    for bad in (np.array([8, 9]), np.bool_(True)):
        with pytest.raises(llm_cost.LlmCostError, match="batch"):
            llm_cost.decode("llama3-8b", "h100", batch=bad)


def test_a_zero_dimensional_array_is_its_element_whatever_its_dtype():
    """A 0-d array is read as its element, float or int alike (stop 53 left a 0-d float array refused
    where a 0-d int array was taken): mfu=np.array(0.5) is mfu=0.5, batch=np.array(8) is batch=8,
    and a 0-d float array as a count is refused as the float itself is."""
    np = pytest.importorskip("numpy")
    import llm_cost

    same = dict(batch=8, context=1024)
    assert llm_cost.decode("llama3-8b", "h100", mfu=np.array(0.5), **same) == llm_cost.decode(
        "llama3-8b", "h100", mfu=0.5, **same
    )
    assert llm_cost.decode("llama3-8b", "h100", batch=np.array(8), context=1024) == llm_cost.decode(
        "llama3-8b", "h100", **same
    )
    for count in (np.array(4096.0), 4096.0):
        with pytest.raises(llm_cost.LlmCostError, match="contexts: .* must be an integer"):
            api.kv("llama3-8b", contexts=[count])


def test_a_config_dicts_numpy_bool_is_a_bool_and_a_cycle_is_refused():
    """numpy's bool is a boolean (tied embeddings: 210,240 - 64,000 = 146,240 parameters, the LM
    head the embedding's); a cyclic or 100,000-deep dict is refused naming model, not with a
    RecursionError's 'too large to compute' (a second attacker)."""
    np = pytest.importorskip("numpy")
    assert api.params({**TINY_LLAMA, "tie_word_embeddings": np.bool_(True)}).total_params == 146_240
    cyclic: dict = {}
    cyclic["x"] = cyclic
    deep: list = []
    tail = deep
    for _ in range(100_000):
        tail.append([])
        tail = tail[0]
    for bad in ({**TINY_LLAMA, "a": cyclic}, {**TINY_LLAMA, "deep": deep}):
        with pytest.raises(api.LlmCostError, match="^model: the config dict nests past 32 levels"):
            api.params(bad)
