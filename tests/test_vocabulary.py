"""One vocabulary below the command line: no module compares a layer type or an operator by a
string literal (an operator is identified by its role, a layer by its LayerType), and the spec
schema accepts exactly the LayerType and MlpType values, with the errors it always gave."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from llm_cost.core.choices import Logits
from llm_cost.core.errors import SpecError
from llm_cost.core.types import Dtype, LayerType, MlpType, OpRole
from llm_cost.model.layout import Layout
from llm_cost.specs.hf import load_hf_config
from llm_cost.specs.load import load_model
from llm_cost.workload.step import SeqGroup, build_step

PACKAGE = Path(__file__).resolve().parents[1] / "llm_cost"
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "hf"

#: Models whose steps hold every kind of operator: GQA, MLA with MTP, MoE, sliding, chunked,
#: linear-attention, Mamba-2 and short-convolution layers, sparse attention's indexer, a vision tower; with TP, EP and PP collectives.
STEPS = [
    ("llama3-8b", Layout(tp=2, pp=2)),
    ("deepseek-v3", Layout(tp=8, pp=2, ep=8)),
    ("mixtral-8x7b", Layout(tp=2)),
    ("mistral-7b", Layout()),
    ("qwen3-next-80b-a3b", Layout(tp=2)),
    ("qwen2-vl-7b", Layout()),
    (FIXTURES / "llama-4-scout-17b-16e" / "config.json", Layout(tp=2)),
    (FIXTURES / "nvidia-nemotron-nano-9b-v2" / "config.json", Layout(tp=2)),
    (FIXTURES / "gpt2" / "config.json", Layout()),
    (FIXTURES.parent / "hf-kinds" / "lfm2.5-1.2b" / "config.json", Layout(tp=2)),
    (FIXTURES.parent / "hf-kinds" / "glm-5.1" / "config.json", Layout(tp=8, ep=8)),
    (FIXTURES.parent / "hf-kinds" / "kimi-linear-48b-a3b" / "config.json", Layout(tp=2)),
]


def _spec(name):
    return load_hf_config(name) if isinstance(name, Path) else load_model(name)


def _operators() -> dict[str, set[OpRole]]:
    """Every operator name the steps of :data:`STEPS` hold (read and resident conventions), with
    the roles that carry it."""
    names: dict[str, set[OpRole]] = {}
    for name, layout in STEPS:
        spec = _spec(name)
        for convention in ("read", "resident"):
            step = build_step(spec, [SeqGroup(4, 1, 64), SeqGroup(1, 32, 0)], layout=layout, weight_bytes=convention)
            for op in step.ops:
                names.setdefault(op.name, set()).add(op.role)
        training = build_step(  # a training step's elementwise kernels, FP8 casts, unfused attention's scores
            spec, [SeqGroup(2, 32, 0)], layout=Layout(tp=layout.tp, pp=layout.pp), logits=Logits.ALL, elementwise=True,
            sequence_parallel=True, compute_dtype=Dtype.FP8, materialised_scores=True,
        )  # fmt: skip
        for op in training.ops:
            names.setdefault(op.name, set()).add(op.role)
    return names


def _literals(node: ast.AST) -> list[str]:
    """The string constants of a comparison operand, inside a tuple, list or set literal too."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value]
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [s for e in node.elts for s in _literals(e)]
    return []


def _is_group(node: ast.AST) -> bool:
    """A tensor's breakdown group (``t.group``, ``group``): a name such as "linear_attention" there
    is a TensorGroup, a separate vocabulary that shares some spellings with LayerType."""
    return (isinstance(node, ast.Attribute) and node.attr == "group") or (
        isinstance(node, ast.Name) and node.id == "group"
    )


def _string_comparisons(banned: set[str]) -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "cli" in path.relative_to(PACKAGE).parts:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Compare):
                continue
            operands = [node.left, *node.comparators]
            if any(_is_group(o) for o in operands):
                continue
            for text in (s for o in operands for s in _literals(o)):
                if text in banned:
                    found.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno}: {text!r}")
    return found


def test_the_scan_sees_every_kind_of_operator():
    """The steps the scan draws operator names from hold every role (so a new operator's name is
    covered as soon as a step builds it)."""
    roles = set().union(*_operators().values())
    assert roles == set(OpRole)


def test_no_module_below_the_cli_compares_a_layer_type_or_operator_by_its_text():
    banned = {t.value for t in LayerType} | set(_operators())
    assert _string_comparisons(banned) == []


def test_the_scan_finds_a_string_comparison():
    """The scan is not vacuous: it flags the comparisons the vocabulary replaced."""
    source = 'if op.name == "embedding rows" or kind in ("linear_attention", "mamba2"): pass'
    tree = ast.parse(source)
    compares = [n for n in ast.walk(tree) if isinstance(n, ast.Compare)]
    texts = {s for c in compares for o in [c.left, *c.comparators] for s in _literals(o)}
    assert texts == {"embedding rows", "linear_attention", "mamba2"}


def test_spec_layer_types_are_the_enum_values():
    """The schema's layer_types and mlp_layer_types accept exactly the LayerType and MlpType values
    (they are derived from the enums), and a spec holds their text, as a file gives it."""
    from typing import get_args

    from llm_cost.specs import schema

    assert get_args(schema.LayerTypeName) == tuple(t.value for t in LayerType)
    assert get_args(schema.MlpTypeName) == tuple(m.value for m in MlpType)
    qwen = load_model("qwen3-next-80b-a3b")
    assert all(type(t) is str for t in qwen.layer_types)
    assert qwen.layer_type(3) is LayerType.FULL_ATTENTION and qwen.layer_type(0) is LayerType.LINEAR_ATTENTION


def test_an_unknown_layer_type_names_the_valid_ones(tmp_path):
    """The message a spec with a bad layer type gets lists the seven types, as the Literal did."""
    import yaml

    data = yaml.safe_load((PACKAGE.parent / "models" / "llama3-8b.yaml").read_text())
    data["layer_types"] = ["full_attention"] * 31 + ["sparse_attention"]
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(SpecError) as err:
        load_model(str(path))
    assert (
        "Input should be 'full_attention', 'sliding_attention', 'chunked_attention', 'linear_attention', "
        "'mamba2', 'short_conv' or 'mlp_only'" in str(err.value)
    )


# -- the engines: one definition (issue 37) ------------------------------------------------------------


def _engine_name_definitions(tree: ast.AST) -> list[int]:
    """Lines where a tuple, list, set or class body spells two or more engine names as string
    literals: a second definition of :class:`~llm_cost.core.types.Engine`'s vocabulary."""
    from llm_cost.core.types import Engine

    names = {e.value for e in Engine}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
            values = [e.value for e in node.elts if isinstance(e, ast.Constant)]
        elif isinstance(node, ast.ClassDef):
            values = [
                s.value.value for s in node.body if isinstance(s, ast.Assign) and isinstance(s.value, ast.Constant)
            ]
        else:
            continue
        if len(names.intersection(v for v in values if isinstance(v, str))) >= 2:
            found.append(node.lineno)
    return found


def test_engine_names_are_defined_once():
    """The engines are named in one place, core/types.py's Engine: no other module of the package
    (the command line included) spells them as a tuple, a list or an enum of its own; the serving
    engines (vLLM, SGLang, TensorRT-LLM: the schedulers simulated, the launch commands printed) are
    Engine members and ServingEngine carries exactly their values."""
    from llm_cost.core.types import SERVING_ENGINES, Engine, ServingEngine

    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = _engine_name_definitions(ast.parse(path.read_text(encoding="utf-8")))
        if lines:
            found[str(path.relative_to(PACKAGE))] = lines
    assert list(found) == ["core/types.py"] and len(found["core/types.py"]) == 1, found
    assert SERVING_ENGINES == (Engine.VLLM, Engine.SGLANG, Engine.TRTLLM)
    assert [e.value for e in ServingEngine] == [e.value for e in SERVING_ENGINES]


def test_the_engine_scan_finds_a_second_definition():
    code = 'ENGINES = ("vllm", "sglang")\nclass Choice(str, Enum):\n    vllm = "vllm"\n    trtllm = "trtllm"\n'
    assert sorted(_engine_name_definitions(ast.parse(code))) == [1, 2]


def test_an_engine_config_holds_the_enum():
    """EngineConfig.engine is an Engine member wherever the API builds one, and its JSON is the value."""
    import llm_cost
    from llm_cost.core.types import Engine

    run = llm_cost.simulate_serving("llama3-8b", "h100", 256, 16, qps=2.0, requests=20, engine="sglang")
    assert run.engine is Engine.SGLANG
    assert run.to_dict()["engine"] == "sglang"
