"""Errors name fields: below the command line a message names the API argument or spec field a
Python caller gave, never a flag; the command line writes those names as its flags through its
one table (:data:`llm_cost.cli.flags.FLAGS`)."""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path

import pytest

import llm_cost
from llm_cost import Layout, LlmCostError
from llm_cost.cli.flags import FLAGS, as_flags, flag
from llm_cost.core.errors import InputError

PACKAGE = Path(llm_cost.__file__).parent
#: Modules that speak the command line's language.
COMMAND_LINE = ("cli", "report")
#: A flag as a shell user types it.
FLAG = re.compile(r"(?<![\w-])--[a-z]")
#: A whole command line quoted for the reader to run (a profile's note: "`llm-cost validate
#: --profile h100` checks it"): it names a command, not an argument the reader passed.
COMMAND = re.compile(r"`llm-cost [^`]*`")


def _engine_modules() -> list[Path]:
    return [p for p in sorted(PACKAGE.rglob("*.py")) if p.relative_to(PACKAGE).parts[0] not in COMMAND_LINE]


@functools.cache
def _engine_trees() -> tuple[tuple[Path, ast.Module], ...]:
    """Each engine module and its syntax tree, parsed once for the module's tests (the trees are
    only read)."""
    return tuple((path, ast.parse(path.read_text(encoding="utf-8"))) for path in _engine_modules())


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes of a module, its classes and functions."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _texts(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, text) of every string literal outside docstrings; an f-string is one text, its
    replacement fields written ``{}``."""
    docs, parts, out = _docstrings(tree), set(), []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            text = ""
            for value in node.values:
                parts.add(id(value))
                text += value.value if isinstance(value, ast.Constant) else "{}"
            out.append((node.lineno, text))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs | parts:
            out.append((node.lineno, node.value))
    return out


def test_no_string_below_the_command_line_names_a_flag():
    """Every string literal of the engine and the API (docstrings aside) is free of ``--flag``s."""
    found = [
        f"{path.relative_to(PACKAGE)}:{line}: {text[:80]!r}"
        for path, tree in _engine_trees()
        for line, text in _texts(tree)
        if FLAG.search(COMMAND.sub("", text))
    ]
    assert not found, "\n".join(found)


@functools.cache
def _listed_fields() -> frozenset[str]:
    """Every name a literal ``fields=(...)`` below the command line lists, in the layers a command reaches."""
    names = set()
    for _, tree in _engine_trees():
        for node in ast.walk(tree):
            if isinstance(node, ast.keyword) and node.arg == "fields" and isinstance(node.value, ast.Tuple):
                names.update(e.value for e in node.value.elts if isinstance(e, ast.Constant))
    return frozenset(names)


def _cli_flags() -> set[str]:
    import typer.main

    from llm_cost.cli import load_commands

    group = typer.main.get_command(load_commands())
    params = [p for c in group.commands.values() for p in c.params]
    options = {o for p in params for o in getattr(p, "opts", ()) if o[:2] == "--"}
    return options | {str(p.name).upper() for p in params if p.param_type_name == "argument"}


def test_every_field_named_is_a_flag_of_the_command_line():
    """The table and its default (``_`` as ``-``) give a real flag (or argument) for each field an error lists."""
    flags = _cli_flags()
    names = _listed_fields() | set(FLAGS)
    assert len(names) > 40
    missing = {n: flag(n) for n in names if not {part.split()[0] for part in flag(n).split("/")} <= flags}
    assert not missing


def test_as_flags_rewrites_the_fields_only():
    """Field names become flags; quoted values (paths, names) and other words stay; a flag named
    twice in a row is written once; a name that is already a flag stays as it is."""
    e = InputError("out: 'out.yaml' is a folder; give out a file path", fields=("out",))
    assert as_flags(e) == "--out: 'out.yaml' is a folder; give --out a file path"
    e = InputError("width and height: aspect ratio 300 exceeds 200", fields=("width", "height"))
    assert as_flags(e) == "--size: aspect ratio 300 exceeds 200"
    e = InputError("tp: 3 does not divide the 32 query heads; the paper's tp rule", fields=("tp",))
    assert as_flags(e) == "--tp: 3 does not divide the 32 query heads; the paper's --tp rule"
    assert (
        as_flags(InputError("--chunk: '0' must be at least 2", fields=("--chunk",)))
        == "--chunk: '0' must be at least 2"
    )
    assert as_flags(InputError("tp_x: 1", fields=("tp",))) == "tp_x: 1"


#: (a bad call through the API, the argument its message names, the flag the CLI writes for it)
API_MISTAKES = [
    (lambda: llm_cost.serve("llama3-70b", gpu="h100", input_tokens=2048, output_tokens=1), "output_tokens", "--output"),
    (lambda: llm_cost.decode("llama3-8b", batch=0), "batch", "--batch"),
    (lambda: llm_cost.kv("llama3-8b", contexts=[]), "contexts", "--context"),
    (lambda: llm_cost.decode("llama3-8b", kv_dtype="fp9"), "kv_dtype", "--kv-dtype"),
    (lambda: llm_cost.decode("llama3-8b", gpu="a100", dtype="fp8"), "dtype", "--dtype"),
    (lambda: llm_cost.decode("llama3-8b", weight_bytes="some"), "weight_bytes", "--weight-bytes"),
    (lambda: llm_cost.prefill("llama3-8b", logits="some"), "logits", "--logits"),
    (lambda: llm_cost.fit("llama3-8b", layout=Layout(tp=3)), "tp", "--tp"),
    (lambda: llm_cost.fit("deepseek-v3", layout=Layout(tp=8, ep=4)), "ep", "--ep"),
    (lambda: llm_cost.fit("llama3-8b", layout=Layout(pp=33)), "pp", "--pp"),
    (lambda: llm_cost.moe("deepseek-v3", ep=7), "ep", "--ep"),
    (lambda: llm_cost.train("llama3-8b", tokens=10**12), "mfu", "--mfu"),
    (lambda: llm_cost.train("llama3-8b", tokens=10**12, mfu=0.5, gpus=7, tp=2), "gpus", "--gpus"),
    (lambda: llm_cost.train("llama3-8b", tokens=10**12, mfu=0.5, tp=1, zero=5), "zero", "--zero"),
    (lambda: llm_cost.spec(alpha=0.8, gamma=4), "c", "--c"),
    (lambda: llm_cost.spec(alpha=0.8, gamma=4, mtp=True), "mtp", "--mtp"),
    (lambda: llm_cost.serve("llama3-70b", tpot_s=0.001), "tpot_s", "--tpot"),
    (lambda: llm_cost.serve("llama3.1-405b", gpus=8), "gpus", "--gpus"),
    (lambda: llm_cost.serve("llama3-8b", gpus=1, modes=["disaggregated"]), "modes", "--mode"),
]


@pytest.mark.parametrize("call, name, flag_", API_MISTAKES)
def test_api_errors_name_the_argument(call, name, flag_):
    with pytest.raises(LlmCostError) as info:
        call()
    message = str(info.value)
    assert re.search(rf"(?<![\w-]){name}(?![\w-])", message) and name in info.value.fields
    assert "--" not in message
    assert flag_ in as_flags(info.value)


def test_engine_errors_name_the_argument():
    """Below the API too: the engine's own checks (a plan, a parser, a profile). Closed sets (an
    MLA form, a weight convention) are enums there, checked by the API (tests/test_api_fuzz.py)."""
    from llm_cost.analyses.multimodal import image_cost
    from llm_cost.analyses.rope import rope_analysis
    from llm_cost.analyses.serving import Targets, Traffic, plan
    from llm_cost.core.types import Engine
    from llm_cost.core.units import parse_context, parse_integer
    from llm_cost.perf.choose import load_profile, time_model_for
    from llm_cost.specs.load import load_gpu, load_model

    spec, gpu = load_model("llama3-8b"), load_gpu("h100")
    calls = [
        (lambda: plan(spec, gpu, Traffic(2048, 1), Targets(), time_model_for(gpu, Engine.VLLM)), "output_tokens"),
        (lambda: rope_analysis(1e4, 127, 8192, 32768), "dims"),
        (lambda: image_cost(load_model("qwen2-vl-7b"), 64, 64, connector="x"), "connector"),
        (lambda: load_profile("h2000"), "profile"),
        (lambda: parse_context("8X"), "context"),
        (lambda: parse_integer("8K", "batch"), "batch"),
    ]
    for call, name in calls:
        with pytest.raises(InputError) as info:
            call()
        assert str(info.value).startswith(f"{name}:") and name in info.value.fields
        assert "--" not in str(info.value)


#: (argv with the mistake, the flag its message names, text of the message)
CLI_MISTAKES = [
    (["serve", "llama3-70b", "--tpot", "1ms"], "--tpot 1.00 ms", "the fastest configuration"),
    (["serve", "llama3.1-405b", "--gpus", "8"], "--gpus:", "it needs 12"),
    (["serve", "llama3-8b", "--mode", "disaggregated", "--gpus", "1"], "--mode:", "give --gpus 2 or more"),
    (["serve", "llama3.1-405b", "--tp", "1", "--batch", "8"], "--tp/--pp:", "does not hold"),
    (["serve", "llama3-8b", "--profile", "h2000"], "--profile:", "<family>-<engine>"),
    (["fit", "llama3-8b", "--tp", "3"], "--tp:", "query heads"),
    (["fit", "deepseek-v3", "--tp", "8", "--ep", "4"], "--ep:", "--ep: 4 must be 1 or --tp x --dp"),
    # an attacker's 1e-320 W and kg/kWh were taken from the API (the CLI refused the intensity alone)
    (
        ["train", "llama3-8b", "--tokens", "1T", "--gpus", "8", "--mfu", "0.4", "--power-w", "1e-320"],
        "--power-w:",
        "at least 1 and at most 10000",
    ),
    (
        ["train", "llama3-8b", "--tokens", "1T", "--gpus", "8", "--mfu", "0.4", "--grid-kg-per-kwh", "3"],
        "--grid-kg-per-kwh:",
        "larger than 2",
    ),
    # an attacker went in a circle: --ep 8 alone was told tp x dp = 1, moe's copies of a tp it does not use
    (["serve", "deepseek-v3", "--gpu", "h200", "--ep", "8"], "--ep:", "(e.g. --dp 8 with --tp 1)"),
    (["fit", "deepseek-v3", "--gpu", "h200", "--ep", "16", "--tp", "8"], "--ep:", "(e.g. --dp 2 with --tp 8)"),
    # an attacker: "TP 1 x PP 1 does not hold llama3-8b ...; the fewest GPUs that do: 1 (TP 1 x PP 1)"
    (["serve", "llama3-8b", "--tp", "1", "--batch", "8", "--chunk", "1M"], "--chunk:", "give a smaller --chunk"),
    # an attacker was told to raise a --max-model-len already at the model's context
    (
        ["serve", "llama3-8b", "--input", "uniform:low=100,high=15000", "--ttft", "p99:2s"],
        "--input:",
        "which --max-model-len cannot pass",
    ),
    # an attacker without targets was told to relax one of them
    (
        ["serve", "llama3-8b", "--qps", "250000", "--input", "512", "--output", "64"],
        "--gpus:",
        "(4,096 x TP1) fall behind the rate offered",
    ),
    (["moe", "deepseek-v3", "--redundant-experts", "3"], "--redundant-experts:", "give --ep above 1 (a divisor of"),
    (["moe", "deepseek-v3", "--ep", "7"], "--ep:", "divisor of 256"),
    (["roofline", "--gpu", "a100", "--dtype", "fp8"], "--dtype:", "no fp8"),
    (["train", "llama3-8b", "--tokens", "1e12"], "--mfu", "--gpu-hours"),
    (["train", "llama3-8b", "--tokens", "1e12", "--mfu", "0.5", "--gpus", "7", "--tp", "2"], "--gpus:", "--tp x --pp"),
    (["spec", "--alpha", "0.8", "--gamma", "4"], "--c is required", "--mtp"),
    (
        ["rope", "--base", "1e4", "--head-dim", "128", "--train-length", "8K", "--target-length", "4K"],
        "--target-length:",
        "--train-length",
    ),
    (["image", "qwen2-vl-7b", "--size", "100000x10"], "--size:", "aspect ratio"),
    (["image", "qwen2-vl-7b", "--size", "64x64", "--connector", "x"], "--connector:", "is not one of"),
    (["image", "llama3-8b", "--size", "64x64"], "--decoder", "no vision tower"),
]


@pytest.mark.parametrize("argv, flag_, text", CLI_MISTAKES)
def test_the_command_line_names_the_flag(cli, argv, flag_, text):
    r = cli(*argv)
    assert r.code == 2 and r.out == ""
    assert flag_ in r.err and text in r.err, r.err
    left = [n for n in _listed_fields() if "_" in n and re.search(rf"(?<![\w-]){n}(?![\w-])", r.err)]
    assert not left, left  # no argument name is left unwritten as its flag


@pytest.mark.parametrize("argv", [["roofline", "--gpu", "h100,h200,b200"], ["fit", "llama3-8b", "--gpu", "h100,h200"]])
def test_a_gpu_list_outside_serve_says_only_serve_compares(cli, argv):
    """A new user's report: ``roofline --gpu h100,h200,b200`` answered "unknown GPU ...; closest
    match: h200", as if a name were misspelt. It is a list where one GPU is taken: the line says so
    and where lists are compared."""
    r = cli(*argv)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert "names several GPUs; give one" in r.err and "serve" in r.err and "closest match" not in r.err


@pytest.mark.parametrize(
    "extra, flag",
    [(["--mode", "disaggregated"], "--mode"), (["--analytic"], "--analytic"), (["--tp", "1", "--qps", "5"], "--tp")],
)
def test_a_comparison_refuses_what_it_cannot_compare_naming_that_flag(cli, extra, flag):
    """An attack found ``serve --gpu h100,h200 --mode disaggregated`` refused as "--tp/--pp: ...
    leave out a --tp/--pp with a rate, or --mode disaggregated": a flag not given, and the one
    given offered as the way out. Each refusal names the flag given and asks to leave it out."""
    r = cli("serve", "llama3-8b", "--gpu", "h100,h200", *extra, "--ttft", "p99:2s")
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert r.err.startswith(f"error: {flag}") and "comparison" in r.err


def test_a_gpu_spec_file_whose_name_holds_a_comma_is_one_gpu(cli, tmp_path):
    """``--gpu`` splits a comparison's names on commas; a spec file that exists is taken whole,
    its name's commas included (the attack helper's ``g,comma path.yaml`` read as ``g``)."""
    from llm_cost.specs import load

    path = tmp_path / "my gpu,v2.yaml"
    path.write_text((load.data_dir("hardware") / "h100.yaml").read_text())
    r = cli("serve", "llama3-8b", "--gpu", str(path), "--tp", "1", "--batch", "8", "--input", "1K", "--output", "128")
    assert r.code == 0, r.err
    assert "H100" in r.out


@pytest.mark.parametrize(("field", "value"), [("power_w", 1e-320), ("power_w", 0.5), ("grid_kg_per_kwh", 1e-320),
                                              ("grid_kg_per_kwh", 3.0)])  # fmt: skip
def test_train_costs_take_physical_values_from_the_api_too(field, value):
    """A GPU's board power from 1 W to 10 kW and a grid's intensity 0 or from the least normal float
    to 2 kg/kWh (POWER_W_RANGE, MAX_GRID_KG_PER_KWH): an attacker's API 1e-320 of each was taken."""
    with pytest.raises(llm_cost.LlmCostError) as info:
        llm_cost.train("llama3-8b", 10**12, gpus=8, mfu=0.4, **{field: value})
    assert info.value.fields == (field,)


_HUGE = 10**5000  # past Python's 4,300-digit limit on int-to-str conversion


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda cfg: llm_cost.params({**cfg, "hidden_size": _HUGE}), "model"),
        (lambda cfg: llm_cost.params({**cfg, "rope_scaling": {"rope_type": "yarn", "factor": _HUGE}}), "model"),
        (lambda cfg: llm_cost.kv("llama3-8b", contexts=[_HUGE]), "contexts"),
        (lambda cfg: llm_cost.train("llama3-8b", _HUGE, mfu=0.4), "tokens"),
        (lambda cfg: llm_cost.train("llama3-8b", 10**12, gpus=8, mfu=0.4, power_w=_HUGE), "power_w"),
        (lambda cfg: llm_cost.serve("llama3-8b", "h100", ttft_s=_HUGE), "ttft_s"),
    ],
    ids=["config-int", "config-nested", "kv-context", "train-tokens", "train-power", "serve-target"],
)
def test_an_integer_too_long_to_print_is_refused_not_raised(call, field):
    """An attacker's 10**5000 through the API: the error message's repr raised Python's ValueError
    (over 4,300 digits), a traceback; it is refused naming the field, its size said in digits."""
    from llm_cost.api.model import config_of

    config, _ = config_of(str(Path(__file__).parent / "fixtures" / "hf" / "qwen3-8b"))
    with pytest.raises(llm_cost.LlmCostError) as info:
        call(config)
    assert field in info.value.fields and "5,001 digits" in str(info.value)


def test_a_disaggregated_search_with_an_itl_target_is_told_what_simulates_it():
    """``serve llama3-70b --mode disaggregated --itl p99:30ms`` (an attacker, no --analytic given) was
    told to leave out --analytic: the disaggregated search has no simulated form, so the remedy is
    to search aggregated serving too."""
    with pytest.raises(llm_cost.LlmCostError) as info:
        llm_cost.serve("llama3-70b", "h100", modes=["disaggregated"], itl_s="p99:30ms")
    assert info.value.fields == ("itl_s", "modes") and "leave out analytic" not in str(info.value)


def test_a_value_just_past_a_bound_is_shown_as_given():
    """An attacker's 2.0000001 kg/kWh was echoed as '2 must be ... at most 2'; a float that its short
    form would round is echoed whole."""
    with pytest.raises(llm_cost.LlmCostError) as info:
        llm_cost.train("llama3-8b", 10**12, gpus=8, mfu=0.4, grid_kg_per_kwh=2.0000001)
    assert str(info.value).startswith("grid_kg_per_kwh: 2.0000001 must be")


def test_an_analytic_form_refuses_a_trace_naming_the_trace(cli, tmp_path):
    """An attacker's disaggregated search over a trace was told '--input: ... take fixed lengths',
    naming a flag never given: the refusal names the trace."""
    trace = tmp_path / "two.jsonl"
    trace.write_text('{"arrival_s": 0, "input_tokens": 100, "output_tokens": 10}\n'
                     '{"arrival_s": 2, "input_tokens": 120, "output_tokens": 10}\n')  # fmt: skip
    out = cli("serve", "llama3-8b", "--mode", "disaggregated", "--trace", str(trace))
    assert out.code == 2 and out.err.startswith("error: --trace: ") and "not a --trace's rows" in out.err
