"""Shared fixtures: run the CLI in-process (fast) and capture stdout, stderr and exit code."""

from __future__ import annotations

import json
from dataclasses import dataclass

import pytest


@dataclass
class Run:
    code: int
    out: str
    err: str

    def json(self):
        return json.loads(self.out)


@pytest.fixture
def cli(capsys):
    """Call ``llm-cost ARGS...`` in-process through the real entry point."""
    from llm_cost.cli import main

    def run(*args: str) -> Run:
        import sys

        old = sys.argv
        sys.argv = ["llm-cost", *args]
        code = 0
        try:
            main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        finally:
            sys.argv = old
        captured = capsys.readouterr()
        return Run(code, captured.out, captured.err)

    return run


#: The fixtures that replay measured or published runs (:func:`pytest_collection_modifyitems`).
REPLAYS = {"replayed_experiments", "served_experiment", "saturation"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items):
    """Every test that uses the replays of the shipped vLLM experiments (:func:`replayed_experiments`,
    about 20 s of CPU once per session, and :func:`served_experiment`) or of the published saturation runs (the ``saturation``
    fixture of tests/analyses/test_saturation.py, about 20 s) is a ``replay`` test: the quick loop
    (``pytest -m "not replay"``) leaves them out; ``pytest`` and CI run them.

    Under pytest-xdist (``pytest -n auto --dist loadgroup``, as CI runs it) each test file is one
    group, so that its module fixtures are computed by one worker only; the replay tests of
    every file are one more, so that one worker computes the replays, and the files that render
    shared results (:func:`shared_api_results`) one more, so that each result is computed once.
    The marks are set first (``tryfirst``): pytest-xdist reads them in its own hook of the same
    name, and a mark set after it groups nothing."""
    for item in items:
        replay = bool(REPLAYS & set(getattr(item, "fixturenames", ())))
        if replay:
            item.add_marker(pytest.mark.replay)
        rendered = "shared_api_results" in getattr(item, "fixturenames", ())
        group = "replay" if replay else "rendered" if rendered else item.nodeid.split("::")[0]
        item.add_marker(pytest.mark.xdist_group(group))


def pytest_xdist_node_collection_finished(node, ids):
    """Under ``--dist loadgroup``, stop if a worker's tests came back ungrouped: xdist marks a
    grouped test by appending ``@group`` to its node id, which pytest 9.2 ignores (pytest-xdist
    issue 1386), and then every worker recomputes every module and session fixture (the replays
    twice: about 60 s of CPU) without a word. pyproject.toml keeps pytest below 9.2 until xdist
    follows."""
    if node.config.getoption("dist") == "loadgroup" and ids and "@" not in ids[0]:
        pytest.exit(
            "pytest-xdist's --dist loadgroup did not group the tests (pytest-xdist issue 1386); "
            "install pytest<9.2 as pyproject.toml's test extra says",
            returncode=pytest.ExitCode.USAGE_ERROR,
        )


@pytest.fixture(autouse=True)
def _pipe_width(monkeypatch):
    """Every test sees the width a pipe gets (160 columns: ``report.base``), whatever runs it: a
    terminal reports its own, and pytest-xdist's workers get COLUMNS=80."""
    monkeypatch.setenv("COLUMNS", "160")


@pytest.fixture(autouse=True)
def _no_network(monkeypatch, tmp_path_factory):
    """Every test runs offline against an empty Hugging Face cache unless it builds its own, so a
    MODEL that looks like a Hub id can never reach the network."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path_factory.getbasetemp() / "empty-hf-cache"))
    monkeypatch.delenv("HF_TOKEN", raising=False)


# -- the 18 shipped vLLM experiments through the public API (tests/test_api_serve.py,
# tests/simulate/test_vllm_serving.py) ---------------------------------------------------------------


def experiment_call(e, folder) -> dict:
    """The ``llm_cost.serve`` arguments of one experiment: its layout and engine settings, its
    stages, prefixes and lengths in a workload file written to ``folder`` (the command line:
    ``scripts/check_serving_runs.py --commands``)."""
    from llm_cost import Layout
    from llm_cost.analyses.serving_runs import workload_file_text

    path = folder / f"experiment-{e.id}.yaml"
    path.write_text(workload_file_text(e))
    return dict(
        model=e.spec,
        gpu=e.gpu,
        layout=Layout(tp=e.layout.tp),
        workload=str(path),
        max_num_seqs=e.entry["max_num_seqs"],
        chunk_tokens=e.entry["max_num_batched_tokens"],
        max_model_len=e.entry["max_model_len"],
        gpu_memory_utilization=e.entry["gpu_mem_util"],
    )


@pytest.fixture(scope="session")
def replayed_experiments():
    """Each shipped experiment replayed by the simulator, once per session: (experiment, its
    result, its comparisons: the whole run, then each stage), as
    ``analyses.serving_runs.run_experiment`` gives them. ``serve`` gives the same run through the
    front door (:func:`served_experiment`, tests/test_api_serve.py)."""
    from llm_cost.analyses.serving_runs import load_experiments, run_experiment

    return [(e, *run_experiment(e)) for e in load_experiments()]


#: The experiment the front door is checked on: Qwen3-14B in two stages, 5,100 requests (the
#: shortest two-stage run).
SERVED_EXPERIMENT = 59


@pytest.fixture(scope="session")
def served_experiment(tmp_path_factory, replayed_experiments):
    """Experiment :data:`SERVED_EXPERIMENT` as one ``llm_cost.serve`` call with its workload file:
    (experiment, its serve result, its replay and comparisons from :func:`replayed_experiments`)."""
    import llm_cost

    e, replay, comparisons = next(x for x in replayed_experiments if x[0].id == SERVED_EXPERIMENT)
    served = llm_cost.serve(**experiment_call(e, tmp_path_factory.mktemp("experiments")))
    return e, served, replay, comparisons


# -- one result rendered several ways (tests/report/test_plain_console.py, test_text_in_json.py,
# tests/test_front_door.py) ---------------------------------------------------------------------------

#: The API's costly calls (a serve plan simulates; validate refits folds; the command line plans
#: through serve_request and compare_request, a notebook through serve) whose results the
#: rendering tests share: the same arguments give the same result object (every simulation is
#: seeded), so a command run as text and as JSON, into a narrow and a wide pipe, through Rich's
#: console and the plain one, computes its result once per session.
SHARED_CALLS = ("serve", "serve_compare", "serve_request", "compare_request", "validate", "validate_training")
_shared_results: dict[str, object] = {}


def _shared(name, function):
    def call(*args, **kwargs):
        key = repr((name, args, sorted(kwargs.items())))
        if key not in _shared_results:
            _shared_results[key] = function(*args, **kwargs)
        return _shared_results[key]

    return call


@pytest.fixture(scope="module")
def shared_api_results():
    """For a module that renders results (and not one that checks how they are computed): each
    call of :data:`SHARED_CALLS` through ``llm_cost.api`` (the command line's way in) with arguments
    seen before in the session returns the result computed then. The key is the arguments' repr:
    names, numbers, layouts and paths of files no test rewrites. A call that raises is not kept."""
    from llm_cost import api

    with pytest.MonkeyPatch.context() as patch:
        for name in SHARED_CALLS:
            patch.setattr(api, name, _shared(name, getattr(api, name)))
        yield
