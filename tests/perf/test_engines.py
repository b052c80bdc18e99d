"""One rule chooses the time model (issue 32): every command and the simulator reach
``llm_cost.perf.choose.time_model_for``; engines and GPU families without rows take a stated stand-in
and say so; the same step has the same seconds through roofline and serve."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import llm_cost
from llm_cost import api
from llm_cost.api import choices
from llm_cost.core.types import Engine
from llm_cost.perf.choose import STAND_IN, load_profile, profile_for
from llm_cost.perf.profile import Situation, fit_data
from llm_cost.simulate.steptime import StepTimer
from llm_cost.specs.load import load_gpu, load_model

PACKAGE = Path(llm_cost.__file__).parent


def _functions_calling(name: str) -> set[str]:
    """module:function of every function in the package whose body calls ``name``."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in ast.walk(fn):
                    if (
                        isinstance(node, ast.Call)
                        and getattr(node.func, "id", getattr(node.func, "attr", None)) == name
                    ):
                        found.add(f"{path.relative_to(PACKAGE).as_posix()}:{fn.name}")
    return found


def test_one_function_chooses_a_time_model():
    """Only perf/choose.py resolves a GPU and an engine to fitted parameters (profile_for); the rest of
    the package asks time_model_for through three thin callers (the API's, vLLM's serving check and
    the training planner's), and the old choosers are gone."""
    assert {f.split(":")[0] for f in _functions_calling("profile_for")} == {"perf/choose.py"}
    assert _functions_calling("time_model_for") <= {
        "api/choices.py:time_model_of",
        "analyses/serving_runs.py:vllm_model",
        "analyses/train_rates.py:training_profile",
    }
    source = "\n".join(p.read_text(encoding="utf-8") for p in PACKAGE.rglob("*.py"))
    for gone in (
        "def default_profile",
        "def serving_profile_of",
        "def training_profile_of",
        "def vllm_time_model",
        "def prediction_model",
    ):
        assert gone not in source, gone


def test_the_same_step_has_the_same_seconds_through_roofline_and_serve():
    """A decode step of 8 sequences at 2,048 cached tokens on an H100 under vLLM: roofline's
    prediction, the simulator's step timer under the time model serve uses (the same rule), and the
    analytic serve path's label all agree."""
    spec, gpu = load_model("llama3-8b"), load_gpu("h100")
    roofline = api.decode("llama3-8b", "h100", batch=8, context=2048)
    model = choices.time_model_of(gpu)
    assert StepTimer(spec, gpu, model).seconds(8, 2048) == pytest.approx(roofline.predicted_s, rel=1e-12)
    simulated = api.serve("llama3-8b", "h100", 1024, 64, layout=api.Layout(tp=1), qps=1.0, requests=20, seed=0)
    analytic = api.serve("llama3-8b", "h100", 1024, 64, layout=api.Layout(tp=1), concurrency=8)
    assert simulated.time_model == analytic.time_model == model.label == f"prediction (profile {roofline.profile})"


def test_the_default_engine_is_vllm_and_the_output_says_so(cli):
    out = cli("roofline", "llama3-8b", "--gpu", "h100", "--batch", "8", "--context", "2K")
    assert out.code == 0 and "profile hopper-vllm" in out.out and "engine vllm (default;" in out.out


def test_a_family_without_rows_is_transferred_from_the_nearest_and_says_so():
    """A GPU family no shipped row measures (the RTX 5090's, Blackwell GB202): its prediction takes
    the nearest fitted family's efficiencies (the same vendor, the nearest datasheet) on the card's
    own peaks, labelled transferred, with the band measured for transferred predictions."""
    data = fit_data()
    assert "blackwell-gb202" not in data["families"]
    p = profile_for(load_gpu("rtx-5090"), Engine.VLLM)
    assert p.situation is Situation.TRANSFERRED and p.source_family in data["families"]
    assert f"the {p.source_family} family's efficiencies" in p.note
    d = api.decode("llama3-8b", "rtx-5090", batch=8, context=2048)
    assert d.profile_kind == "transferred"


@pytest.mark.parametrize("engine", list(Engine))
def test_every_engine_has_its_own_or_a_named_stand_in(engine):
    p = profile_for(load_gpu("h100"), engine)
    engines = fit_data()["engines"]
    if engine.value in engines:
        assert p.situation in (Situation.FITTED, Situation.COMBINED)
    else:
        stand_in = next(e for e in STAND_IN[engine] if e.value in engines)
        assert p.situation is Situation.TRANSFERRED and f"{stand_in.value}'s fixed costs" in p.note


def test_llamacpp_on_an_rtx_4090_is_the_ada_family_under_llamacpp(cli):
    d = cli("roofline", "llama3-8b", "--gpu", "rtx-4090", "--engine", "llamacpp", "--json").json()
    assert d["profile"] == "ada-llamacpp" and d["engine"] == "llamacpp"


def test_an_unknown_engine_exits_2_naming_the_valid_ones(cli):
    out = cli("roofline", "llama3-8b", "--gpu", "h100", "--engine", "ollama")
    assert out.code == 2 and "vllm" in out.err and "llamacpp" in out.err


def test_a_shipped_profile_name_and_an_unknown_one(cli):
    assert load_profile("hopper-trtllm").engine is Engine.TRTLLM
    out = cli("roofline", "llama3-8b", "--gpu", "h100", "--profile", "h100-vllm")
    assert out.code == 2 and "<family>-<engine>" in out.err and "hopper" in out.err
