"""The simulator against measured serving runs: each shipped experiment of
``data/measurements/serving/`` replayed stage by stage, with its errors.

An experiment of ``vllm-serving-under-load.yaml`` (real vLLM v0.15.1 runs measured with
inference-perf; see that file's ``about``) becomes:

* a workload: inference-perf's ``constant`` load (int(rate x duration) exponential gaps rescaled to
  each stage's duration: ``fixed_count``) in its stages; prompts of ``system_prompt_len +
  question_len`` tokens whose first ``system_prompt_len`` are one of ``num_unique_system_prompts``
  system prompts, each used by ``num_users_per_system_prompt`` users; ``output_len`` output tokens
  (``ignore_eos``). Every question is new, as the file's ``assumptions`` and the benchmark's own
  simulators take them (the campaign ran ``enable_multi_turn_chat``; its measured TTFTs, two to
  three decode steps, are those of prefilling the question, not of a whole-prompt cache hit);
* vLLM's scheduler with the experiment's ``max_num_seqs``, ``max_num_batched_tokens`` and
  ``max_model_len``, chunked prefill and prefix caching on (v0.15.1's defaults);
* a KV cache of what ``gpu_mem_util`` of each GPU leaves after the weights, the workspace and the
  runtime reserve (:func:`llm_cost.analyses.capacity.kv_room`);
* step times from the time model the one rule gives the GPU under vLLM
  (:func:`llm_cost.perf.choose.time_model_for`, :func:`vllm_model`): the same seconds ``roofline``
  and ``serve`` give. Nothing is fitted on the serving runs.

Errors are absolute percentage errors |predicted - measured| / measured of mean ITL (the file's
definition: (E2E - TTFT) / (output tokens - 1) of the means, which for fixed outputs is the mean
TPOT), mean E2E, mean TTFT, P90 and P99 E2E and TTFT, per stage and for the whole run (stage -1,
the figure the benchmark aggregates by its median).
"""

from __future__ import annotations

import functools
import json
import math
import statistics
from collections.abc import Callable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from llm_cost.analyses.capacity import MemoryPolicy, kv_room
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Engine
from llm_cost.model.layout import Layout, stage_kv_bytes
from llm_cost.perf.choose import time_model_for
from llm_cost.perf.timemodel import TimeModel
from llm_cost.simulate import EngineConfig, SharedPrefix, SimResult, simulate
from llm_cost.simulate.results import Summary
from llm_cost.simulate.workload import Fixed, OpenLoop, Stage, Workload
from llm_cost.specs.files import read_yaml
from llm_cost.specs.load import load_gpu, load_model
from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = [
    "RUNS_FILE",
    "METRICS",
    "Experiment",
    "Comparison",
    "ServingCheck",
    "load_experiments",
    "experiment_workload",
    "experiment_engine",
    "workload_file_text",
    "kv_capacity_tokens",
    "KvPool",
    "replica_kv_pool",
    "replica_kv_tokens",
    "vllm_model",
    "run_experiment",
    "compare_stage",
    "check_runs",
    "error_summary",
    "BAND_FILE",
    "BAND_PERCENTILES",
    "SATURATION_BAND_FILE",
    "RUN_GPUS",
    "ServingBand",
    "linear_percentile",
    "band_runs",
    "band_file_data",
    "band_ratios",
    "vllm_serving_band",
    "transfer_widening",
]

#: The shipped measured serving runs.
RUNS_FILE = (
    Path(__file__).resolve().parent.parent / "data" / "measurements" / "serving" / "vllm-serving-under-load.yaml"
)

#: The hardware names of the file and the GPU specs they are.
_GPUS = {"H100": "h100", "A100-80GB": "a100", "L40S": "l40s"}
#: The GPUs (spec names) the measured serving runs ran on: their serving band applies as is.
RUN_GPUS = frozenset(_GPUS.values())

#: The serving band's calibration (``scripts/check_serving_runs.py --write-band``): per shipped run,
#: the whole run's mean ITL measured and predicted by the one rule's vLLM time model
#: (:func:`llm_cost.perf.choose.time_model_for`). JSON (a YAML subset), so that ``serve`` reads it
#: without a YAML parser.
BAND_FILE = Path(__file__).resolve().parent.parent / "data" / "serving-band.json"
#: The percentiles of the runs' measured / predicted mean ITL that are the band's fast and slow
#: ends (:func:`linear_percentile`).
BAND_PERCENTILES = (10, 90)
#: The band's calibration for a closed loop (a plan without a rate: users at the engine's cap,
#: ``scripts/check_saturation_runs.py --write-band``): per published vLLM run at saturation or a
#: fixed concurrency, its ITL P50 measured and as the simulator replays it
#: (:mod:`llm_cost.analyses.saturation_runs`, never fitted on them or their sources). The runs of
#: :data:`BAND_FILE` were under Poisson load; at saturation the simulator's ITL was x0.66 to x2.06
#: of measured (p10, p90), where they say x0.68 to x0.99. Its percentiles are the file's own
#: (:func:`held_out_percentiles`), not :data:`BAND_PERCENTILES`.
SATURATION_BAND_FILE = Path(__file__).resolve().parent.parent / "data" / "saturation-band.json"

#: Metrics compared: name -> (the measured key in ms, the simulated value in seconds).
METRICS: dict[str, tuple[str, Callable[[Summary], float | None]]] = {
    "itl_mean": ("itl_mean", lambda s: s.tpot_s.mean),
    "e2e_mean": ("e2e_mean", lambda s: s.e2e_s.mean),
    "ttft_mean": ("ttft_mean", lambda s: s.ttft_s.mean),
    "e2e_p90": ("e2e_p90", lambda s: s.e2e_s.p90),
    "e2e_p99": ("e2e_p99", lambda s: s.e2e_s.p99),
    "ttft_p90": ("ttft_p90", lambda s: s.ttft_s.p90),
    "ttft_p99": ("ttft_p99", lambda s: s.ttft_s.p99),
}


def vllm_model(gpu: HardwareSpec) -> TimeModel:
    """The time model of vLLM on ``gpu``, by the one rule (:func:`llm_cost.perf.choose.time_model_for`)."""
    model: TimeModel = time_model_for(gpu, Engine.VLLM)
    return model


@record
class Experiment:
    """One measured run: its id, model, GPU, layout and settings, the raw entry of the file, and
    the spec its model is built from."""

    id: int
    label: str
    spec: ModelSpec
    gpu: HardwareSpec
    layout: Layout
    entry: dict[str, Any]


def load_experiments(path: Path = RUNS_FILE) -> list[Experiment]:
    """The experiments of a serving-runs file, in its order."""
    data = read_yaml(path)
    models = data.get("models") or {}
    out = []
    for e in data["experiments"]:
        target = str(models.get(e["model"], e["model"]))
        name = str(path.resolve().parent / target) if target.endswith((".yaml", ".yml", ".json")) else target
        label = f"{e['id']} {e['model'].split('/')[-1]} {e['hardware']} TP{e['tp']} {e['workload']['name']}"
        if e.get("notes"):
            label += f" ({'; '.join(e['notes'])})"
        out.append(Experiment(e["id"], label, load_model(name), load_gpu(_GPUS[e["hardware"]]), Layout(tp=e["tp"]), e))
    return out


def experiment_workload(e: Experiment) -> Workload:
    """The experiment's traffic (see the module docstring)."""
    w = e.entry["workload"]
    stages = tuple(Stage(float(s["duration_s"]), float(s["rate_rps"])) for s in w["stages"])
    prefix = SharedPrefix(w["num_unique_system_prompts"], w["system_prompt_len"], w["num_users_per_system_prompt"])
    return Workload(
        OpenLoop(stages, "fixed_count"),
        Fixed(w["system_prompt_len"] + w["question_len"]),
        Fixed(w["output_len"]),
        prefix,
    )


def workload_file_text(e: Experiment) -> str:
    """The experiment's traffic as a workload file (:mod:`llm_cost.simulate.workfile`): its stages
    of inference-perf's ``constant`` load, its prompt and output lengths and its shared prefixes;
    ``llm-cost serve`` replays it with ``llm_cost.serve(..., workload=path)``."""
    w = e.entry["workload"]
    stages = "".join(f"    - {{rate_rps: {s['rate_rps']}, duration_s: {s['duration_s']}}}\n" for s in w["stages"])
    return (
        f"# experiment {e.label}\narrivals:\n  process: fixed_count\n  stages:\n{stages}"
        f"input_tokens: {w['system_prompt_len'] + w['question_len']}\noutput_tokens: {w['output_len']}\n"
        f"prefix: {{tokens: {w['system_prompt_len']}, groups: {w['num_unique_system_prompts']}, "
        f"users_per_group: {w['num_users_per_system_prompt']}}}\n"
    )


def experiment_engine(e: Experiment) -> EngineConfig:
    """vLLM with the experiment's settings (chunked prefill and prefix caching on)."""
    return EngineConfig(
        Engine.VLLM,
        e.entry["max_num_seqs"],
        e.entry["max_num_batched_tokens"],
        max_model_len=e.entry["max_model_len"],
    )


@record
class KvPool(Result):
    """One replica's KV block pool as the simulator holds it: ``tokens`` of attention KV in whole
    blocks of ``block_tokens``, and ``state_blocks`` of those blocks that each running request's
    fixed state takes (a hybrid model's linear-attention / Mamba recurrent and convolution state;
    0 without one). Bytes are of the fullest GPU: ``block_bytes`` per block of attention KV,
    ``state_bytes`` per sequence, ``budget_bytes`` the KV budget (of one GPU; an attention-DP
    replica's ``tokens`` are its ranks' together)."""

    tokens: int
    block_tokens: int
    state_blocks: int
    block_bytes: int | Fraction
    state_bytes: int | Fraction
    budget_bytes: int | Fraction

    @property
    def blocks(self) -> int:
        """Blocks of the pool."""
        return self.tokens // self.block_tokens


def replica_kv_pool(
    spec: ModelSpec,
    gpu: HardwareSpec,
    layout: Layout,
    engine: EngineConfig,
    policy: MemoryPolicy,
    weight_bits: int | Fraction = 16,
    kv_bits: int = 16,
) -> KvPool:
    """One replica's KV pool (:class:`KvPool`): the budget :func:`~llm_cost.analyses.capacity.kv_room`
    leaves under ``policy`` (workspace for a step of the engine's token budget and sequences) over
    the attention KV bytes of a block on the fullest GPU (:func:`~llm_cost.model.layout.stage_kv_bytes`
    of a block less that of an empty sequence), floored to whole blocks; each sequence's fixed
    state (``stage_kv_bytes`` at context 0) rounded up to whole blocks, held once per running
    request, as vLLM V1's hybrid KV cache manager holds one page per request for each Mamba-type
    layer group (``vllm/v1/kv_cache_interface.py`` ``MambaSpec.max_memory_usage_bytes``,
    vllm-project/vllm @ bc8282e61df21719b12b391c3a976b1c900dfbb4). So ``tokens`` agrees with
    ``fit``'s KV budget over its KV per token, and the sequences of s tokens it holds, blocks //
    (ceil(s / block) + state blocks), with ``kv_room``'s max concurrency within a block's rounding
    per sequence. Per stage the larger attention block and the larger state are taken (equal at
    PP 1). A model with no attention KV at all (only fixed state) keeps one state per block. An
    attention data-parallel replica (``layout.dp`` ranks, each caching its own sequences) holds
    ``dp`` ranks' pools, each with the workspace of its 1/dp share of the engine's step."""
    block = engine.block_tokens
    dp = layout.dp
    room = kv_room(
        spec,
        gpu,
        [block],
        layout=layout,
        policy=policy,
        weight_bits=weight_bits,
        kv_bits=kv_bits,
        step_tokens=-(-engine.max_num_batched_tokens // dp),
        step_sequences=-(-engine.max_num_seqs // dp),
    )
    full = stage_kv_bytes(spec, layout, block, kv_bits)
    empty = stage_kv_bytes(spec, layout, 0, kv_bits)
    per_block = max(f - e for f, e in zip(full, empty))
    state = max(empty)
    budget = room.kv_budget_bytes
    if per_block <= 0:  # only fixed state: a block per sequence's state, as before
        per_block, state = max(full), 0
    blocks = max(0, int(budget // per_block)) * dp
    state_blocks = int(-(-state // per_block)) if state > 0 else 0
    return KvPool(blocks * block, block, state_blocks, per_block, state, budget)


def replica_kv_tokens(
    spec: ModelSpec,
    gpu: HardwareSpec,
    layout: Layout,
    engine: EngineConfig,
    policy: MemoryPolicy,
    weight_bits: int | Fraction = 16,
    kv_bits: int = 16,
) -> int:
    """Tokens of attention KV one replica's cache holds, in whole blocks (:func:`replica_kv_pool`)."""
    return replica_kv_pool(spec, gpu, layout, engine, policy, weight_bits, kv_bits).tokens


def kv_capacity_tokens(e: Experiment, block_tokens: int = 16) -> int:
    """Tokens the experiment's KV cache holds at its ``gpu_mem_util`` (:func:`replica_kv_tokens`)."""
    policy = MemoryPolicy(utilization=Fraction(str(e.entry["gpu_mem_util"])))
    engine = EngineConfig(
        Engine.VLLM, e.entry["max_num_seqs"], e.entry["max_num_batched_tokens"], block_tokens=block_tokens
    )
    return replica_kv_tokens(e.spec, e.gpu, e.layout, engine, policy)


@record
class Comparison(Result):
    """One experiment's stage (``stage`` -1: the whole run) predicted against measured: each
    metric's measured and predicted milliseconds and absolute percentage error."""

    id: int
    label: str
    stage: int
    measured_ms: dict[str, float]
    predicted_ms: dict[str, float]
    error_pct: dict[str, float]


def compare_stage(e: Experiment, stage: int, measured: dict[str, float], s: Summary) -> Comparison:
    """One stage's (-1: the whole run's) simulated summary against its measured milliseconds."""
    got, want, err = {}, {}, {}
    for name, (key, of) in METRICS.items():
        value = of(s)
        if key not in measured or value is None:
            continue
        want[name] = float(measured[key])
        got[name] = value * 1e3
        err[name] = abs(got[name] - want[name]) / want[name] * 100
    return Comparison(e.id, e.label, stage, want, got, err)


def run_experiment(
    e: Experiment, time_model: TimeModel | None = None, seed: int | str = 0
) -> tuple[SimResult, list[Comparison]]:
    """Simulate one experiment: the result and its comparisons (the whole run first, then each
    stage)."""
    model = time_model or vllm_model(e.gpu)
    result = simulate(
        e.spec,
        e.gpu,
        experiment_workload(e),
        experiment_engine(e),
        model,
        e.layout,
        kv_capacity_tokens=kv_capacity_tokens(e),
        seed=seed,
    )
    measured = e.entry["measured"]
    out = [compare_stage(e, -1, measured["summary"]["measured_ms"], result.summary)]
    stages = result.stages or (result.summary,)
    for st, summary in zip(measured["stages"], stages):
        out.append(compare_stage(e, st["index"], st["measured_ms"], summary))
    return result, out


@record
class ServingCheck(Result):
    """Every experiment's comparisons and, per metric, the median and the worst absolute
    percentage error over the experiments' whole runs (stage -1)."""

    time_model: str
    comparisons: tuple[Comparison, ...]
    median_error_pct: dict[str, float]
    worst: dict[str, tuple[int, float]]  # metric -> (experiment id, error %)


def check_runs(
    experiments: Sequence[Experiment] | None = None,
    time_model: Callable[[Experiment], TimeModel] | None = None,
    seed: int | str = 0,
) -> ServingCheck:
    """Simulate ``experiments`` (default: all shipped), each under ``time_model(experiment)``
    (default: :func:`vllm_model` of its GPU), and summarise the errors."""
    chosen = list(experiments) if experiments is not None else load_experiments()
    comparisons: list[Comparison] = []
    label = ""
    for e in chosen:
        model = time_model(e) if time_model else vllm_model(e.gpu)
        label = label if model.label in label else ", ".join(filter(None, (label, model.label)))
        comparisons += run_experiment(e, model, seed)[1]
    medians, worst = error_summary(comparisons)
    return ServingCheck(label, tuple(comparisons), medians, worst)


def error_summary(comparisons: Sequence[Comparison]) -> tuple[dict[str, float], dict[str, tuple[int, float]]]:
    """Per metric, the median absolute percentage error over the experiments' whole runs (stage
    -1) and the worst (experiment id, error)."""
    whole = [c for c in comparisons if c.stage == -1]
    medians, worst = {}, {}
    for name in METRICS:
        values = [(c.error_pct[name], c.id) for c in whole if name in c.error_pct]
        if values:
            medians[name] = statistics.median(v for v, _ in values)
            top = max(values)
            worst[name] = (top[1], top[0])
    return medians, worst


# -- the serving band: the prediction's spread on the measured runs ------------------------------


def linear_percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100) of ``values`` by linear interpolation between the closest
    ranks: sorted x_0..x_{n-1}, h = (n - 1) q / 100, x_floor(h) + (h - floor(h)) (x_floor(h)+1 -
    x_floor(h)); numpy.percentile's default ``method="linear"`` (Hyndman and Fan's type 7).
    ValueError for no values."""
    if not values:
        raise ValueError("no values")
    x = sorted(values)
    h = (len(x) - 1) * q / 100
    lo = int(h)
    return x[lo] if lo + 1 >= len(x) else x[lo] + (h - lo) * (x[lo + 1] - x[lo])


#: The share of measurements a band claims to hold: that of p10..p90.
BAND_COVERAGE = (BAND_PERCENTILES[1] - BAND_PERCENTILES[0]) / 100


def held_out_coverage(ratios: Sequence[float], sources: Sequence[str], q: float) -> int:
    """How many of ``ratios`` (each of the source at its index in ``sources``) lie inside the
    p``q``..p``100 - q`` band (:func:`linear_percentile`) of the ratios of the OTHER sources: the
    band as a source it never had meets it (issue 32: bands from out-of-source errors)."""
    inside = 0
    for source in set(sources):
        others = [r for r, s in zip(ratios, sources) if s != source]
        if not others:
            continue
        low, high = linear_percentile(others, q), linear_percentile(others, 100 - q)
        inside += sum(low <= r <= high for r, s in zip(ratios, sources) if s == source)
    return inside


def held_out_percentiles(ratios: Sequence[float], sources: Sequence[str]) -> tuple[int, int]:
    """The narrowest band (q, 100 - q), q a whole percent from :data:`BAND_PERCENTILES`'s 10 down
    to 1, whose :func:`held_out_coverage` is at least :data:`BAND_COVERAGE` of the ratios: the
    percentiles at which a band claiming 80% held 80% of each source's runs from the others' (on
    the 65 saturation runs of 7 sources, p10..p90 held 46, 71%; p5..p95 held 55, 85%). (1, 99)
    when none does."""
    for q in range(BAND_PERCENTILES[0], 0, -1):
        if held_out_coverage(ratios, sources, q) >= BAND_COVERAGE * len(ratios):
            return q, 100 - q
    return 1, 99


def band_runs(check: ServingCheck, experiments: Sequence[Experiment] | None = None) -> list[dict[str, Any]]:
    """Per experiment of ``check`` (its whole run, stage -1): id, model, hardware (the file's name),
    gpu (the spec), TP, mean ITL predicted and measured (ms) and their ratio measured / predicted."""
    by_id = {e.id: e for e in (experiments if experiments is not None else load_experiments())}
    out = []
    for c in check.comparisons:
        if c.stage != -1 or "itl_mean" not in c.error_pct:
            continue
        e = by_id[c.id]
        predicted, measured = c.predicted_ms["itl_mean"], c.measured_ms["itl_mean"]
        out.append(
            {
                "id": c.id,
                "model": e.entry["model"],
                "hardware": e.entry["hardware"],
                "gpu": e.gpu.name,
                "tp": e.layout.tp,
                "predicted_ms": round(predicted, 6),
                "measured_ms": measured,
                "ratio": round(measured / predicted, 6),
            }
        )
    return out


def band_file_data(
    check: ServingCheck, written_by: str, experiments: Sequence[Experiment] | None = None
) -> dict[str, Any]:
    """The content of :data:`BAND_FILE` from ``check`` (:func:`check_runs` under
    :func:`vllm_model`, seed 0): its provenance (``written_by``: the command that wrote it),
    the runs' ratios and their percentiles."""
    runs = band_runs(check, experiments)
    ratios = [r["ratio"] for r in runs]
    data = read_yaml(RUNS_FILE)
    bench = data.get("benchmark") or {}
    lo, hi = BAND_PERCENTILES
    return {
        "about": (
            "The spread of llm-cost's simulated vLLM serving prediction on measured runs: per run, the whole "
            "run's mean ITL (the runs file's definition: (E2E_mean - TTFT_mean) / (output_len - 1), the mean "
            "decode step time) measured / predicted. serve's band on the default simulated vLLM path multiplies "
            f"every step's time by the ratios' p{lo} (fast end) and p{hi} (slow end). Nothing is fitted on "
            "these runs: the prediction is the one time model's for vLLM on each run's GPU (fitted on the "
            "step-time measurements). Generated; do not edit."
        ),
        "source": {
            "script": written_by,
            "runs_file": "llm_cost/data/measurements/serving/vllm-serving-under-load.yaml",
            "engine": "vLLM v0.15.1",
            "harness": "inference-perf",
            "benchmark": f"{bench.get('repo', '')}@{bench.get('head', '')}",
            "time_model": check.time_model,
            "simulation_seed": 0,
        },
        "metric": "itl_mean",
        "percentile_method": "linear interpolation between closest ranks (numpy.percentile's default, type 7)",
        "percentiles": [lo, hi],
        f"p{lo}": round(linear_percentile(ratios, lo), 6),
        f"p{hi}": round(linear_percentile(ratios, hi), 6),
        "runs": runs,
    }


@functools.lru_cache(maxsize=2)
def band_ratios(path: Path = BAND_FILE) -> tuple[float, ...]:
    """The shipped runs' mean-ITL ratios measured / predicted (:data:`BAND_FILE`), in its order;
    of :data:`SATURATION_BAND_FILE`, their ITL P50's."""
    return tuple(float(r["ratio"]) for r in json.loads(path.read_text(encoding="utf-8"))["runs"])


@functools.lru_cache(maxsize=2)
def band_source(path: Path) -> tuple[str, frozenset[str], tuple[int, int]]:
    """Of a band file (:data:`BAND_FILE`, :data:`SATURATION_BAND_FILE`): its runs' engine and
    versions (``vLLM 0.10.2, 0.11.0``), the GPUs (spec names) they ran on, and the percentiles its
    band is drawn at (:data:`BAND_PERCENTILES`; at saturation :func:`held_out_percentiles`)."""
    data = json.loads(path.read_text(encoding="utf-8"))
    low, high = data["percentiles"]
    return str(data["source"]["engine"]), frozenset(str(r["gpu"]) for r in data["runs"]), (int(low), int(high))


@record
class ServingBand:
    """The step-time factors of a simulated vLLM run's error band from the measured serving runs:
    ``low`` (fast end, <= 1) and ``high`` (slow end, >= 1) for ``gpu``; ``p_low`` / ``p_high``:
    the runs' mean-ITL measured / predicted at :data:`BAND_PERCENTILES` (``percentiles``), over
    ``runs`` runs of ``engine``; ``widen``: 1 on a GPU the runs measured, else the transfer
    widening applied."""

    low: float
    high: float
    p_low: float
    p_high: float
    percentiles: tuple[int, int]
    runs: int
    gpu: str
    widen: float
    engine: str = "vLLM v0.15.1"
    measured: bool = True  # the runs measured ``gpu``
    closed_loop: bool = False  # the runs at saturation (:data:`SATURATION_BAND_FILE`), for a plan without a rate


def transfer_widening() -> float:
    """How much wider (log ratio of high / low) the shipped fit's held-out band over all regimes is
    for transferred predictions than for fitted ones (at least 1): measured by the fit's
    leave-one-source-out residuals (:mod:`llm_cost.analyses.calibration`)."""
    import math

    from llm_cost.perf.profile import Regime, Situation, fit_data

    bands = {(b["situation"], b["regime"]): b for b in fit_data()["bands"]}
    fitted = bands.get((Situation.FITTED.value, Regime.ALL.value))
    moved = bands.get((Situation.TRANSFERRED.value, Regime.ALL.value))
    if fitted is None or moved is None:
        return 1.0
    width = lambda b: math.log(b["high"] / b["low"])  # noqa: E731
    return max(1.0, width(moved) / max(width(fitted), 1e-9))


def _run_family(gpu: HardwareSpec) -> bool:
    """Whether ``gpu`` is of the kernel family of one of the GPUs the serving runs used."""
    from llm_cost.perf.families import family_of
    from llm_cost.specs.load import load_gpu

    family = family_of(gpu)
    return gpu.name in RUN_GPUS or (family is not None and family in {family_of(load_gpu(g)) for g in RUN_GPUS})


def vllm_serving_band(
    gpu: HardwareSpec, ratios: Sequence[float] | None = None, closed_loop: bool = False
) -> ServingBand | None:
    """The error band of :func:`vllm_model`'s simulated serving prediction on ``gpu``, from the
    held-out spread of that prediction on the shipped serving runs (``ratios``: default
    :func:`band_ratios`; ``closed_loop``, a plan without a rate: those of the runs at saturation,
    :data:`SATURATION_BAND_FILE`, the regime its users at the engine's cap run in, where the
    simulator's error is several times wider than under Poisson load: a new user read "met at the
    band's slow end" of x1.00 as a guarantee beside a saturation check 30.7% off), or None when
    ``gpu`` has no calibrated vLLM time model (the MFU/MBU estimate was not checked on the runs).

    Source: :data:`BAND_FILE`, the runs' whole-run mean ITL measured / predicted (nothing fitted on
    them). The fast-end and slow-end step factors are the ratios' 10th and 90th percentiles
    (:func:`linear_percentile`), clamped so that low <= 1 <= high: 8 of 10 runs' measured mean ITL
    lay within [predicted x low, predicted x high]. At saturation the percentiles are those at which
    the band held 80% of each source's runs from the other sources' (:func:`held_out_percentiles`:
    p5 and p95, where p10..p90 held 71%). On a GPU of a kernel family none of the runs' GPUs is of, the percentiles' spread is widened
    (:func:`~llm_cost.perf.calibrated.widened`) about its geometric centre, by how much wider, in
    log ratio, the step-time fit's held-out band is for a prediction on a family or engine it had
    no rows of than for one it had (:func:`transfer_widening`), then clamped: the runs say the
    simulator's steps are slower than measured on their GPUs, which says nothing of a GPU of
    another family, so its slow end leaves the nominal too (widened about nominal, a slow end at
    x1 stayed x1: "pessimistic" claimed of a GPU no run measured); a GPU of
    one of their families (an H200 beside the runs' H100) is timed by the same fitted family
    parameters, a fitted prediction as ``roofline`` labels it, and keeps the band as is. A closed
    loop's band on such a GPU gains the log width the band under load gains there, not that width
    times its own: multiplied, the saturation runs' x0.66-x2.06 became x0.09-x14.4 on a B200, the
    transfer's uncertainty counted over the regime's."""
    from llm_cost.perf.calibrated import widened

    if not hasattr(vllm_model(gpu), "profile"):  # the MFU/MBU estimate: not checked on the runs
        return None
    path = SATURATION_BAND_FILE if closed_loop else BAND_FILE
    values = list(band_ratios(path) if ratios is None else ratios)
    engines, gpus, percentiles = band_source(path)
    p_low, p_high = linear_percentile(values, percentiles[0]), linear_percentile(values, percentiles[1])
    widen = 1.0 if _run_family(gpu) else transfer_widening()
    if closed_loop and widen > 1:  # the GPU's transfer adds the log width it adds to the band under load
        under_load = band_ratios(BAND_FILE)
        lo_q, hi_q = BAND_PERCENTILES
        spread = math.log(linear_percentile(under_load, hi_q) / linear_percentile(under_load, lo_q))
        widen = 1 + (widen - 1) * spread / max(math.log(p_high / p_low), 1e-9)
    centre = math.sqrt(p_low * p_high)  # the runs' bias: the spread is widened about it, not about nominal
    low, high = centre * widened(p_low / centre, widen), centre * widened(p_high / centre, widen)
    low, high = min(low, 1.0), max(high, 1.0)
    return ServingBand(
        low, high, p_low, p_high, percentiles, len(values), gpu.name, widen, engines,
        measured=gpu.name in gpus, closed_loop=closed_loop,
    )  # fmt: skip
