"""The spec classes' declaration (llm_cost.specs.declare): frozen values compared by their fields,
validated by pydantic with the bounds their types carry, and loadable without pydantic."""

from __future__ import annotations

import copy
import dataclasses
import pickle
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from llm_cost.specs.declare import field_names, to_data, validated
from llm_cost.specs.load import load_gpu, load_model, model_names
from llm_cost.specs.schema import MAX_WIDTH, GQAAttention, HardwareSpec, ModelSpec, MoE


def test_instances_are_frozen_and_compared_by_their_fields():
    spec = load_model("llama3-8b")
    with pytest.raises(dataclasses.FrozenInstanceError):
        spec.hidden_size = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del spec.hidden_size
    same = dataclasses.replace(spec)
    assert same == spec and same is not spec and hash(same.attention) == hash(spec.attention)
    assert dataclasses.replace(spec, hidden_size=8192) != spec
    assert GQAAttention(num_attention_heads=32) != MoE(num_experts=1, num_experts_per_tok=1, moe_intermediate_size=1)
    assert repr(spec.attention).startswith("GQAAttention(kind='gqa', num_attention_heads=32, num_key_value_heads=8")


def test_construction_names_a_wrong_or_missing_field():
    with pytest.raises(TypeError, match="unknown fields \\['heads'\\]"):
        GQAAttention(num_attention_heads=32, heads=8)
    with pytest.raises(TypeError, match="missing field 'num_attention_heads'"):
        GQAAttention()


@pytest.mark.parametrize(
    "data,rule",
    [
        ({"num_attention_heads": MAX_WIDTH * 64}, "less_than_equal"),
        ({"num_attention_heads": 0}, "greater_than_equal"),
        ({"num_attention_heads": 32.0}, "int_type"),
        ({"num_attention_heads": "32"}, "int_type"),
        ({"num_attention_heads": 32, "num_key_value_heads": 5}, "value_error"),
        ({"num_attention_heads": 32, "heads": 8}, "unexpected_keyword_argument"),
        ({}, "missing"),
    ],
)
def test_validation_applies_the_declared_bounds_and_rules(data, rule):
    with pytest.raises(ValidationError) as exc:
        validated(GQAAttention, data)
    assert exc.value.errors()[0]["type"] == rule


def test_a_float_field_refuses_non_finite_values():
    data = to_data(load_gpu("h100"))
    for bad in (float("inf"), float("nan")):
        with pytest.raises(ValidationError, match="finite"):
            validated(HardwareSpec, {**data, "memory_bandwidth_tb_s": bad})


def test_nested_specs_are_validated_again_when_given_as_instances():
    data = to_data(load_model("llama3-8b"))
    bad = dataclasses.replace(load_model("llama3-8b").attention, num_key_value_heads=7)
    with pytest.raises(ValidationError, match="multiple of num_key_value_heads"):
        validated(ModelSpec, {**data, "attention": bad})


@settings(max_examples=30, deadline=None)
@given(st.sampled_from(model_names()), st.booleans())
def test_plain_data_validates_back_to_the_same_spec(name, defaults):
    """to_data, with or without the fields at their defaults, is a lossless form of a spec (the
    discriminator ``kind`` is restored as ``spec_to_yaml`` restores it)."""
    spec = load_model(name)
    data = to_data(spec, exclude_defaults=defaults)
    data["attention"] = {"kind": spec.attention.kind, **data.get("attention", {})}
    for key in ("linear_attention", "mamba", "vision"):
        if getattr(spec, key) is not None:
            data[key] = {"kind": getattr(spec, key).kind, **data.get(key, {})}
    assert validated(ModelSpec, data) == spec
    assert list(to_data(spec)) == field_names(ModelSpec)


def test_a_shipped_spec_loads_without_pydantic():
    """The cold start's main saving: the shipped specs come from the index, never through pydantic."""
    code = (
        "import sys; from llm_cost.specs.load import load_model, load_gpu; from llm_cost.model.params import "
        "count_params; count_params(load_model('deepseek-v3')); load_gpu('h100'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pydantic', 'pydantic_core', 'yaml')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_a_loaded_spec_shares_no_list_with_the_index():
    """A loaded spec's sequences are tuples (nothing to change), and changing a mapping of one
    loaded spec changes no later load (it is a copy)."""
    spec, gpu = load_model("llama3-8b"), load_gpu("h100")
    assert isinstance(spec.aliases, tuple) and isinstance(gpu.aliases, tuple)
    with pytest.raises(AttributeError):
        spec.aliases.append("changed")  # type: ignore[attr-defined]
    gpu.dense_tflops["bf16"] = 1.0
    assert load_gpu("h100").dense_tflops["bf16"] == 989.4  # the H100 SXM datasheet's dense BF16 TFLOP/s


def test_a_gpu_needs_at_least_one_peak():
    with pytest.raises(ValidationError, match="at least 1 item"):
        validated(HardwareSpec, {**to_data(load_gpu("h100")), "dense_tflops": {}})


def test_a_spec_built_in_python_is_validated_by_the_api():
    """The constructor checks only the field names; the API validates a spec it is handed as it
    validates a file, so bad values are an LlmCostError naming the field, not a ZeroDivisionError."""
    import llm_cost

    spec = load_model("llama3-8b")
    assert llm_cost.params(spec).total_params == 8_030_261_248  # Meta-Llama-3-8B's safetensors total / 2 B
    for bad, field in [
        (dict(hidden_size=0), "hidden_size"),
        (dict(vocab_size="128256"), "vocab_size"),
        (dict(attention=dataclasses.replace(spec.attention, num_key_value_heads=7)), "attention"),
    ]:
        with pytest.raises(llm_cost.LlmCostError, match=f"model: invalid spec: field {field}"):
            llm_cost.params(dataclasses.replace(spec, **bad))


@pytest.mark.parametrize("name", model_names())
def test_a_model_spec_is_hashable_and_equal_specs_hash_equal(name):
    """A model spec and every spec in it hold tuples, not lists: an equal spec built another way
    (validated from its plain data, copied, pickled) hashes equal and finds the same dict entry."""
    spec = load_model(name)
    again = validated(ModelSpec, to_data(spec))
    assert again == spec and again is not spec
    assert hash(again) == hash(spec) == hash(copy.deepcopy(spec)) == hash(pickle.loads(pickle.dumps(spec)))
    assert {spec: name}[again] == name
    assert dataclasses.replace(spec, num_hidden_layers=spec.num_hidden_layers + 1) not in {spec}


def test_plain_data_has_lists_and_a_spec_has_tuples():
    """to_data writes a spec's sequences as the lists YAML and JSON hold; validating them (or
    rebuilding them from the shipped index) gives tuples back."""
    data = to_data(load_model("qwen3-next-80b-a3b"))
    assert isinstance(data["aliases"], list) and isinstance(data["layer_types"], list)
    from_data = validated(ModelSpec, data)
    assert isinstance(from_data.layer_types, tuple) and from_data == load_model("qwen3-next-80b-a3b")
