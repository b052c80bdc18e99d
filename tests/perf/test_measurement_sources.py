"""Provenance and schema of the shipped measurement files (llm_cost/data/measurements): every
step-time file names one source, an engine family and an engine with its version, and each of its
rows points at that source (files split from one publication share a ``source_id``; a row's reported TPOT or
TTFT agrees with its step time); every serving-run file (measurements/serving/saturation-*.yaml) has the
run schema the simulator checks read (issue #32 item 5, issue #38): required keys, positive numbers,
an engine version, a model that ``load_model`` builds and a GPU that ``load_gpu`` knows. Ids are
unique across all files. Fast: YAML reads and spec loads, cached per model."""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import cache
from pathlib import Path

import pytest

from llm_cost.analyses.calibration import measurements_dir
from llm_cost.specs.files import read_yaml
from llm_cost.specs.load import load_gpu, load_model

# Files that hold more than one source: each is listed with why it is not split (a new one fails).
MULTI_SOURCE = {
    "llamacpp-pr-tables-rtx4090": "three PR threads (7676, 7860, 17505); four profiles and scripts/fit_profiles.py list "
    "the file by name, so splitting it waits for the profile rewrite (issue #32)",
}
STEP_FILES = sorted(measurements_dir().glob("*.yaml"))
RUN_FILES = sorted((measurements_dir() / "serving").glob("saturation-*.yaml"))
ENGINE_FAMILIES = {"vllm", "sglang", "trtllm", "pytorch-eager", "torch-compile", "llamacpp"}
# A version: "vLLM 0.11.0", "SGLang 0.5.7", "TensorRT-LLM 1.2.0rc1", or a source revision ("commit f3c3b4b",
# "PR #7676 branch"), or a dated build (llama.cpp "build of Dec 2023").
VERSION = re.compile(r"\d+\.\d+|\b[0-9a-f]{7,40}\b|PR #\d+|build of \w+ \d{4}|builds of \w+ \d{4}")
DEFERRED = re.compile(r"per row|each row names")  # the file's engine defers the version to its rows
# Files written before engine versions were required whose source names none (none left: a new file
# without a version fails).
UNVERSIONED: dict[str, str] = {}
RUN_KEYS = {
    "id", "model", "gpu", "tp", "weights_dtype", "kv_dtype", "input_tokens", "output_tokens", "concurrency",
    "request_rate_rps", "num_prompts", "max_num_seqs", "max_num_batched_tokens", "measured", "quote", "derivation",
}  # fmt: skip
MEASURED_KEYS = {
    "output_tokens_per_s", "total_tokens_per_s", "request_throughput_rps", "duration_s", "ttft_mean_ms",
    "ttft_p50_ms", "ttft_p99_ms", "tpot_mean_ms", "tpot_p50_ms", "tpot_p99_ms", "itl_mean_ms", "itl_p50_ms",
    "itl_p90_ms", "itl_p99_ms", "e2e_mean_ms",
}  # fmt: skip


def _ids(paths: list[Path]) -> list[str]:
    return [p.stem for p in paths]


@cache
def _model(spec: str) -> str:
    return load_model(spec).name


def _spec(folder: Path, target: str) -> str:
    return str(folder / target) if target.endswith((".yaml", ".yml", ".json")) else target


def _file_header_is_complete(data: dict, versioned: bool = True) -> None:
    assert isinstance(data.get("source"), str) and data["source"].strip(), "source"
    if "source_id" in data:  # one publication split over several files names it once for leave-one-source-out
        assert isinstance(data["source_id"], str) and data["source_id"].strip(), "source_id"
    assert data.get("retrieved"), "retrieved"
    assert data.get("engine_family") in ENGINE_FAMILIES, data.get("engine_family")
    assert data.get("engine"), "engine"
    named = bool(VERSION.search(data["engine"]) or DEFERRED.search(data["engine"]))
    assert named == versioned, f"engine version: {data['engine']!r}"


@pytest.mark.parametrize("path", STEP_FILES, ids=_ids(STEP_FILES))
def test_step_file_names_one_source_and_a_versioned_engine(path):
    data = read_yaml(path)
    _file_header_is_complete(data, versioned=path.stem not in UNVERSIONED)
    file_source = data["source"].split()[0].split("#")[0]
    for row in data["rows"]:
        if row.get("source"):  # a row's source is the file's (a line or table anchor, or a revision of it)
            row_source = str(row["source"]).split()[0].split("#")[0]
            if path.stem in MULTI_SOURCE:  # the row's document is one of those the file's source lists
                assert row_source.rsplit("/", 2)[-2] + "/" + row_source.rsplit("/", 1)[-1] in data["source"], row["id"]
            else:
                assert _same_document(row_source, file_source), (row["id"], row_source, file_source)
        if DEFERRED.search(data["engine"]):
            assert VERSION.search(str(row.get("engine", ""))), row["id"]
        _reported_figure_agrees(row)


def _reported_figure_agrees(row: dict) -> None:
    """A row's reported TPOT (decode) or TTFT (prefill) is the figure its step time comes from: they agree
    within 1% (a decode row's step is the TPOT; a prefill row's is the TTFT, less nothing it does not say)."""
    key = {"decode": "tpot_ms", "prefill": "ttft_ms"}.get(row.get("phase"))
    if key and row.get(key) is not None:
        assert abs(row[key] - row["measured_ms"]) <= 0.01 * row["measured_ms"], (row["id"], key, row[key])


def _same_document(row: str, file: str) -> bool:
    """A row's URL names the file's document: equal, the same GitHub path at another revision, or (a
    publication that is a folder of result files, cited as ``/tree/<rev>/<folder>``) a file under it."""
    strip = re.compile(r"/blob/[^/]+/")
    in_folder = "/tree/" in file and row.startswith(file.replace("/tree/", "/blob/", 1) + "/")
    return (
        row == file
        or strip.sub("/blob/", row) == strip.sub("/blob/", file)
        or in_folder
        or file.startswith("local file")
    )


@pytest.mark.parametrize("path", RUN_FILES, ids=_ids(RUN_FILES))
def test_serving_run_file_has_the_run_schema(path):
    data = read_yaml(path)
    _file_header_is_complete(data)
    models = data.get("models") or {}
    assert data.get("runs"), "runs"
    for run in data["runs"]:
        missing = RUN_KEYS - set(run)
        assert not missing, (run.get("id"), sorted(missing))
        assert run["model"] in models, (run["id"], run["model"])
        _model(_spec(path.parent, models[run["model"]]))
        load_gpu(run["gpu"])
        for key in ("tp", "pp", "dp", "input_tokens", "output_tokens"):
            assert run.get(key, 1) > 0, (run["id"], key)
        for key in ("concurrency", "num_prompts", "max_num_seqs", "max_num_batched_tokens", "request_rate_rps"):
            assert run[key] is None or run[key] > 0, (run["id"], key)
        assert run["concurrency"] is not None or run["request_rate_rps"] is not None, run["id"]
        measured = run["measured"]
        assert measured and set(measured) <= MEASURED_KEYS, (run["id"], sorted(set(measured) - MEASURED_KEYS))
        assert all(isinstance(v, (int, float)) and math.isfinite(v) and v > 0 for v in measured.values()), run["id"]
        assert VERSION.search(str(run.get("engine", data["engine"]))), run["id"]


def test_a_source_id_names_one_publication():
    """Files sharing a source_id cite one publication: the same URL, or on GitHub one repository (a page,
    a thread or a folder of result files split over several files; the check is no finer than the repository)."""
    by_id: dict[str, set[str]] = {}
    for path in STEP_FILES + RUN_FILES:
        data = read_yaml(path)
        if data.get("source_id"):
            by_id.setdefault(data["source_id"], set()).add(
                re.sub(r"/(blob|tree)/[^/]+/.*", "", data["source"].split()[0])
            )
    assert {k: v for k, v in by_id.items() if len(v) > 1} == {}


def test_ids_are_unique_within_each_kind():
    steps = Counter(r["id"] for p in STEP_FILES for r in read_yaml(p)["rows"])
    runs = Counter(r["id"] for p in RUN_FILES for r in read_yaml(p)["runs"])
    assert [i for i, n in steps.items() if n > 1] == []
    assert [i for i, n in runs.items() if n > 1] == []
