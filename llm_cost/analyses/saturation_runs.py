"""The simulator at saturation against published serving runs (issue 32, item 5): each run of
``data/measurements/serving/saturation-*.yaml`` (``vllm bench serve`` result blocks posted with their
serve commands and engine versions) replayed and compared on output tokens/s and the median ITL.

A run becomes:

* its requests: ``num_prompts`` prompts of ``input_tokens`` and ``output_tokens`` tokens each, or,
  for a ShareGPT run, of the lengths of :data:`SHAREGPT_LENGTHS` (1,000 (prompt, output) pairs of
  ShareGPT's first rounds drawn as ``vllm bench serve`` draws them, OPT tokenizer) scaled to the
  run's means (its chat template and tokenizer make its prompts longer, and its outputs end at EOS
  before the reference reply's length: the table gives the spread, the run its means); sent all at once
  (``request_rate_rps`` infinite and no ``concurrency``: the engine runs at its batch limit), or by
  ``concurrency`` users each sending its next request when the last completes (``--max-concurrency``;
  a run that does not say how many prompts it sent: ten per user, the steady state of a closed loop);
* the engine's scheduler (vLLM, SGLang or TensorRT-LLM) with the run's ``max_num_seqs`` and
  ``max_num_batched_tokens``, else the engine's defaults for the GPU
  (:func:`~llm_cost.simulate.engine.engine_defaults`);
* a KV cache of what the engine's memory share leaves after the weights
  (:func:`~llm_cost.analyses.serving_runs.replica_kv_pool`);
* step times from the one time model for the GPU and engine
  (:func:`llm_cost.perf.choose.time_model_for`), with the parameters of the shipped fit's fold
  without the run's source where that source also gave step-time rows
  (:func:`llm_cost.api.choices.saturation_formats`): nothing is fitted on these runs or their sources.

Compared: output tokens/s over the whole run (the benchmark's total generated tokens over its
duration) and the median inter-token latency (ITL P50: the benchmark's gaps between streamed tokens,
the simulator's between decode steps of a request; a published ITL P50 under a millisecond is a
server that streams several tokens per chunk, not a step time, and is not compared). Errors are
|predicted / measured - 1|.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from llm_cost.analyses.measurements import measurements_dir
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Engine
from llm_cost.model.layout import Layout
from llm_cost.specs.files import read_yaml
from llm_cost.specs.load import load_gpu, load_model

__all__ = [
    "SaturationRun",
    "RunCheck",
    "Formats",
    "SaturationCheck",
    "saturation_files",
    "load_runs",
    "check_run",
    "summarise",
    "band_file_data",
    "skipped_runs",
    "sharegpt_requests",
    "SHAREGPT_LENGTHS",
    "FRONTEND_GRID_S",
    "FrontendFit",
    "fit_frontend",
]

#: ShareGPT's first-round (prompt, output) token lengths as ``vllm bench serve`` samples them: a trace
#: (``arrival_s``, ``input_tokens``, ``output_tokens``) of 1,000 rows; source and draw in
#: ``data/workloads/README.md`` (made by ``scripts/make_sharegpt_lengths.py``).
SHAREGPT_LENGTHS = Path(__file__).resolve().parent.parent / "data" / "workloads" / "sharegpt-vllm-bench-1000.csv"

#: The metrics compared: name -> the measured key (milliseconds or tokens/s).
METRICS = ("output_tokens_per_s", "itl_p50_ms")


@record
class SaturationRun:
    """One published serving run (fields as the files name them; module docstring)."""

    id: str
    source: str
    file: str
    engine: Engine
    engine_version: str
    model: str
    gpu: str
    tp: int
    pp: int
    weights_dtype: str
    kv_dtype: str
    input_tokens: int
    output_tokens: int
    num_prompts: int
    concurrency: int | None
    max_num_seqs: int | None
    max_num_batched_tokens: int | None
    measured: dict[str, float]
    varied: bool = False  # lengths vary per request (ShareGPT): replayed from SHAREGPT_LENGTHS


def saturation_files() -> list[Path]:
    """The shipped serving-run files at saturation or fixed concurrency."""
    return sorted((measurements_dir() / "serving").glob("saturation-*.yaml"))


def _model(folder: Path, models: dict[str, str], name: str) -> str:
    target = str(models.get(name, name))
    return str(folder / target) if target.endswith((".yaml", ".yml", ".json")) else target


def load_runs(paths: Sequence[Path] | None = None) -> list[SaturationRun]:
    """The runs of the files (default: every shipped one) that the simulator can replay: one data-
    parallel rank without expert parallelism (the others are left out, and counted by
    :func:`check_saturation`)."""
    out = []
    for path in saturation_files() if paths is None else paths:
        data = read_yaml(path)
        models = data.get("models") or {}
        for r in data["runs"]:
            if int(r.get("dp") or 1) != 1 or r.get("ep") not in (None, False, 1) or r.get("attention_dp"):
                continue
            out.append(
                SaturationRun(
                    r["id"],
                    str(data.get("source_id") or data["source"]),
                    path.name,
                    Engine(data["engine_family"]),
                    str(r.get("engine") or data["engine"]),
                    _model(path.parent, models, r["model"]),
                    r["gpu"],
                    int(r.get("tp") or 1),
                    int(r.get("pp") or 1),
                    str(r["weights_dtype"]),
                    str(r.get("kv_dtype") or "bf16"),
                    max(1, round(float(r["input_tokens"]))),
                    max(1, round(float(r["output_tokens"]))),
                    int(r["num_prompts"] or 10 * int(r["concurrency"])),
                    None if r.get("concurrency") is None else int(r["concurrency"]),
                    r.get("max_num_seqs"),
                    r.get("max_num_batched_tokens"),
                    {k: float(v) for k, v in (r.get("measured") or {}).items() if v is not None},
                    "sharegpt" in str(r.get("input_dist") or ""),
                )
            )
    return out


@record
class RunCheck:
    """One run: measured and predicted output tokens/s and ITL P50 (ms), and their errors."""

    id: str
    source: str
    engine: str
    model: str
    gpu: str
    layout: str
    requests: int
    measured: dict[str, float]
    predicted: dict[str, float]
    error: dict[str, float]


def sharegpt_requests(count: int, input_mean: float, output_mean: float) -> list[Any]:
    """``count`` requests (at most the table's 1,000) arriving at once, with the (prompt, output)
    lengths of :data:`SHAREGPT_LENGTHS` in order, each scaled by the ratio of the wanted mean
    (``input_mean``, ``output_mean``, tokens) to the table's and rounded (at least 1 token)."""
    from llm_cost.simulate.workload import Request, read_trace

    rows = read_trace(SHAREGPT_LENGTHS).rows[:count]
    scale_in = input_mean * len(rows) / sum(r.input_tokens for r in rows)
    scale_out = output_mean * len(rows) / sum(r.output_tokens for r in rows)
    return [
        Request(i, 0.0, max(1, round(r.input_tokens * scale_in)), max(1, round(r.output_tokens * scale_out)))
        for i, r in enumerate(rows)
    ]


def _workload(run: SaturationRun) -> Any:
    from llm_cost.simulate.workload import ClosedLoop, Fixed, Request, Workload

    if run.varied and run.concurrency is None:
        return sharegpt_requests(run.num_prompts, run.input_tokens, run.output_tokens)
    if run.concurrency is None:
        return [Request(i, 0.0, run.input_tokens, run.output_tokens) for i in range(run.num_prompts)]
    return Workload(
        ClosedLoop(run.concurrency), Fixed(run.input_tokens), Fixed(run.output_tokens), requests=run.num_prompts
    )


@record
class Formats:
    """A run's resolved formats and time model (the API resolves them: ``llm_cost.api.choices``)."""

    weight_bits: Any
    kv_bits: int
    compute_dtype: Any
    time_model: Any


def check_run(run: SaturationRun, formats: Formats, seed: int = 0, frontend_request_s: float | None = None) -> RunCheck:
    """Simulate one run (module docstring) with its resolved ``formats`` and compare it;
    ``frontend_request_s``: the API server's serial time per request (None: the engine's default,
    :func:`~llm_cost.simulate.engine.engine_defaults`)."""
    from llm_cost.analyses.capacity import DEPLOYMENT
    from llm_cost.analyses.serving_runs import replica_kv_pool
    from llm_cost.simulate import simulate
    from llm_cost.simulate.engine import engine_defaults

    spec, gpu = load_model(run.model), load_gpu(run.gpu)
    layout = Layout(tp=run.tp, pp=run.pp)
    caps: dict[str, float] = {
        k: v
        for k, v in (("max_num_seqs", run.max_num_seqs), ("max_num_batched_tokens", run.max_num_batched_tokens))
        if v
    }
    if frontend_request_s is not None:
        caps["frontend_request_s"] = frontend_request_s
    config = engine_defaults(gpu, run.engine, max_model_len=None, **caps)
    pool = replica_kv_pool(spec, gpu, layout, config, DEPLOYMENT, formats.weight_bits, formats.kv_bits)
    result = simulate(
        spec, gpu, _workload(run), config, formats.time_model, layout,
        kv_capacity_tokens=pool.tokens, sequence_state_blocks=pool.state_blocks,
        weight_bits=formats.weight_bits, kv_bits=formats.kv_bits, compute_dtype=formats.compute_dtype, seed=seed,
    )  # fmt: skip
    s = result.summary
    assert s.itl_s.p50 is not None  # a saturated run decodes
    predicted = {"output_tokens_per_s": s.output_tokens_per_s, "itl_p50_ms": s.itl_s.p50 * 1e3}
    measured = {
        k: run.measured[k] for k in METRICS if k in run.measured and not (k == "itl_p50_ms" and run.measured[k] < 1)
    }
    error = {k: predicted[k] / v - 1 for k, v in measured.items()}
    return RunCheck(
        run.id, run.source, run.engine.value, spec.name, gpu.name, f"TP{run.tp} PP{run.pp}",
        s.requests, measured, {k: predicted[k] for k in measured}, error,
    )  # fmt: skip


@record
class SaturationCheck(Result):
    """Every replayed run and, per metric, the median |error| over the runs (and over MoE and dense
    runs, and runs of fixed lengths and of ShareGPT's varied ones, apart; and per engine);
    ``skipped``: runs the simulator does not replay (data or expert parallel)."""

    runs: list[RunCheck]
    median: dict[str, float]
    median_moe: dict[str, float]
    median_dense: dict[str, float]
    median_fixed_lengths: dict[str, float]
    median_sharegpt: dict[str, float]
    median_engine: dict[str, dict[str, float]]
    skipped: int


def _medians(checks: list[RunCheck]) -> dict[str, float]:
    out = {}
    for k in METRICS:
        errors = [abs(c.error[k]) for c in checks if k in c.error]
        if errors:
            out[k] = statistics.median(errors)
    return out


def summarise(runs: Sequence[SaturationRun], checks: list[RunCheck], skipped: int) -> SaturationCheck:
    """:class:`SaturationCheck` of ``checks`` (those of ``runs``, in order)."""
    moe = [c for c, r in zip(checks, runs) if load_model(r.model).moe is not None]
    dense = [c for c, r in zip(checks, runs) if load_model(r.model).moe is None]
    fixed = [c for c, r in zip(checks, runs) if not r.varied]
    varied = [c for c, r in zip(checks, runs) if r.varied]
    engines = {c.engine: _medians([d for d in checks if d.engine == c.engine]) for c in checks}
    return SaturationCheck(
        checks, _medians(checks), _medians(moe), _medians(dense), _medians(fixed), _medians(varied), engines, skipped
    )


def band_file_data(runs: Sequence[SaturationRun], checks: Sequence[RunCheck], written_by: str) -> dict[str, Any]:
    """The content of :data:`~llm_cost.analyses.serving_runs.SATURATION_BAND_FILE`: per vLLM run
    with a measured ITL P50, its ITL P50 measured / replayed (:func:`check_run`), the percentiles
    the band is drawn at (:func:`~llm_cost.analyses.serving_runs.held_out_percentiles`: those at
    which it held 80% of each source's runs from the others') and the ratios' values there."""
    from llm_cost.analyses.serving_runs import (
        BAND_COVERAGE,
        BAND_PERCENTILES,
        held_out_coverage,
        held_out_percentiles,
        linear_percentile,
    )

    rows: list[dict[str, Any]] = [
        {
            "id": r.id,
            "source": r.source,
            "engine_version": r.engine_version,
            "model": r.model,
            "gpu": r.gpu,
            "tp": r.tp,
            "input_tokens": r.input_tokens,
            "output_tokens": r.output_tokens,
            "concurrency": r.concurrency,
            "predicted_ms": round(c.predicted["itl_p50_ms"], 6),
            "measured_ms": c.measured["itl_p50_ms"],
            "ratio": round(c.measured["itl_p50_ms"] / c.predicted["itl_p50_ms"], 6),
        }  # fmt: skip
        for r, c in zip(runs, checks)
        if r.engine == Engine.VLLM and c.measured.get("itl_p50_ms")
    ]
    ratios = [float(row["ratio"]) for row in rows]
    sources = [str(row["source"]) for row in rows]
    versions = sorted({str(row["engine_version"]).removeprefix("vLLM ") for row in rows})
    lo, hi = held_out_percentiles(ratios, sources)
    at_p10 = held_out_coverage(ratios, sources, BAND_PERCENTILES[0])
    return {
        "about": (
            "The spread of llm-cost's simulated vLLM serving prediction at saturation: per published run (all "
            "prompts at once, or a fixed concurrency), its ITL P50 measured / as the simulator replays it "
            "(llm_cost/analyses/saturation_runs.py, the step times of the fit's fold without the run's source). "
            f"serve's band for a plan without a rate (a closed loop at the engine's cap) multiplies every step's "
            f"time by the ratios' p{lo} (fast end) and p{hi} (slow end): the narrowest whole percentiles at which "
            f"the band drawn from the other sources' runs held at least {BAND_COVERAGE:.0%} of each source's, "
            f"what a band claims (held_out). Nothing is fitted on these runs. Generated; do not edit."
        ),
        "source": {
            "script": written_by,
            "runs_files": "llm_cost/data/measurements/serving/saturation-*.yaml",
            "engine": f"vLLM {', '.join(versions)}",
            "metric": "itl_p50",
            "simulation_seed": 0,
        },
        "percentile_method": "linear interpolation between closest ranks (numpy.percentile's default, type 7)",
        "percentiles": [lo, hi],
        f"p{lo}": round(linear_percentile(ratios, lo), 6),
        f"p{hi}": round(linear_percentile(ratios, hi), 6),
        "held_out": {
            "sources": len(set(sources)),
            "runs": len(rows),
            "inside": held_out_coverage(ratios, sources, lo),
            f"inside_at_p{BAND_PERCENTILES[0]}_p{BAND_PERCENTILES[1]}": at_p10,
        },
        "runs": rows,
    }


def skipped_runs() -> int:
    """The shipped runs :func:`load_runs` leaves out (data or expert parallel)."""
    return sum(len(read_yaml(p)["runs"]) for p in saturation_files()) - len(load_runs())


#: The API server's serial times per request that :func:`fit_frontend` tries, seconds (within
#: :data:`~llm_cost.simulate.engine.FRONTEND_BOUNDS_S`).
FRONTEND_GRID_S = (0.0, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.008, 0.010, 0.012, 0.015, 0.020)


@record
class FrontendFit(Result):
    """One engine's API-server time per request fitted on its runs at saturation: ``fitted_s`` on
    all of them; ``folds_s`` each source's value fitted without it; the median |errors| with none
    (``median_none``) and out of source (``median_out_of_source``: each source's runs at its fold's
    value)."""

    engine: str
    runs: int
    fitted_s: float
    folds_s: dict[str, float]
    median_none: dict[str, float]
    median_out_of_source: dict[str, float]


def _best(checks: Sequence[Sequence[RunCheck]]) -> int:
    """The grid index whose checks have the least sum of median |errors| (the first of equals)."""
    scores = [sum(_medians(list(c)).values()) for c in checks]
    return scores.index(min(scores))


def fit_frontend(runs: Sequence[SaturationRun], checks: Sequence[Sequence[RunCheck]]) -> FrontendFit:
    """Fit the API server's serial time per request (:class:`~llm_cost.simulate.engine.EngineConfig`
    ``frontend_request_s``) of one engine's ``runs`` from ``checks[g][i]``, run ``i`` replayed at
    :data:`FRONTEND_GRID_S` ``[g]``: the value with the least sum of the median |errors| of output
    tokens/s and ITL P50, on all the runs and leaving each source out (:class:`FrontendFit`)."""
    folds, held = {}, [checks[0][0]] * len(runs)
    for source in sorted({r.source for r in runs}):
        g = _best([[c for c, r in zip(row, runs) if r.source != source] for row in checks])
        folds[source] = FRONTEND_GRID_S[g]
        held = [checks[g][i] if r.source == source else held[i] for i, r in enumerate(runs)]
    fitted = FRONTEND_GRID_S[_best(checks)]
    return FrontendFit(runs[0].engine.value, len(runs), fitted, folds, _medians(list(checks[0])), _medians(held))
