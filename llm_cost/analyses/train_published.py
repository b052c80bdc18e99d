"""The training planner against published runs: each row of
``llm_cost/data/measurements/training/published-runs.yaml`` predicted from its model, GPU, cluster,
batch, framework and the layout knobs its source states (the others searched, as their authors
tuned them), compared in tokens/s per GPU (a row quoted in TFLOP/s per GPU is converted by its
source's FLOP convention).

The training factors (:mod:`llm_cost.analyses.train_rates`) are fitted per GPU family on these rows
(:func:`fit_factors`: each source weighs the same, whatever its number of rows), and each row is
predicted **out of source**: with the factors fitted on the other sources only (:func:`fit_all`),
so no row, and no row of its source, takes part in predicting it. Two predictions per row: with
the published layout, and with the free search (the cluster, the batch, the dtype and the
framework given; every knob searched).
"""

from __future__ import annotations

import math
from dataclasses import field
from functools import lru_cache
from pathlib import Path
from statistics import median
from typing import Any, Optional

from llm_cost.analyses.train_plan import (
    Candidate,
    Cluster,
    default_space,
    evaluate,
    fixed,
    model_flops_per_sequence,
    search,
)
from llm_cost.analyses.train_ranks import links_of
from llm_cost.analyses.train_rates import (
    EFFICIENCY_FILE,
    TrainRates,
    efficiency_family,
    training_rates,
    with_flash2,
)
from llm_cost.analyses.train_step import MoeRouting, TrainLayout
from llm_cost.core.choices import Fp8Recipe, Framework, Logits, MoeDispatcher, Recompute
from llm_cost.core.notes import Note, note
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import Dtype
from llm_cost.specs.schema import HardwareSpec, ModelSpec

__all__ = [
    "PublishedRow",
    "published_rows",
    "row_spec",
    "row_family",
    "measured_tokens_per_s",
    "published_layout",
    "predict",
    "fit_factors",
    "fit_all",
    "row_framework",
    "published_errors",
    "training_validation",
    "TrainingValidation",
    "SourceErrors",
    "RUNS_FILE",
    "FACTOR_BOUNDS",
]

#: The published runs.
RUNS_FILE = Path(__file__).resolve().parent.parent / "data" / "measurements" / "training" / "published-runs.yaml"
#: The range a fitted factor may take (a fit that reaches a bound says so in the table).
FACTOR_BOUNDS = (0.3, 2.0)
#: Where a fit starts, and the factors the layouts of the rows' unstated knobs are searched at.
START: dict[str, Any] = {"gemm": 1.0, "fp8_gemm": {}}


@record
class PublishedRow:
    """One published run, its prediction with the published layout and the free search's, both
    with the factors fitted out of its source."""

    id: str
    source: str
    family: str
    moe: bool
    measured_tokens_per_s_per_gpu: float
    predicted_tokens_per_s_per_gpu: float
    error: float  # predicted / measured - 1, out of source
    layout: str  # the published layout (stated knobs + the best of the rest)
    search_layout: str
    search_error: float  # the free search's pick: predicted / measured - 1


def published_rows(path: Path = RUNS_FILE) -> list[dict[str, Any]]:
    """The rows of the published-runs file, as written."""
    import yaml

    with path.open(encoding="utf-8") as f:
        return list(yaml.safe_load(f)["rows"])


@lru_cache(maxsize=128)
def _spec_of(model: str) -> ModelSpec:
    from llm_cost.specs.hf import hf_to_spec
    from llm_cost.specs.load import load_model

    if model.startswith("{"):
        import json

        return hf_to_spec(json.loads(model), "a published run's config")[0]
    return load_model(model)


def row_spec(row: dict[str, Any]) -> ModelSpec:
    """The row's model: a shipped name, or its Hugging Face config."""
    import json

    model = row["model"]
    return _spec_of(json.dumps(model, sort_keys=True) if isinstance(model, dict) else str(model))


def row_family(row: dict[str, Any]) -> str:
    """The profile family of a row's GPU (:func:`~llm_cost.analyses.train_rates.efficiency_family`)."""
    from llm_cost.analyses.train_rates import training_profile
    from llm_cost.specs.load import load_gpu

    return efficiency_family(row["gpu"], training_profile(load_gpu(row["gpu"])))


def measured_tokens_per_s(row: dict[str, Any]) -> float:
    """The row's measured tokens/s per GPU: as published, or its TFLOP/s per GPU over the FLOPs per
    token of its source's convention."""
    from llm_cost.workload.step import build_step, prefill

    measured = row["measured"]
    if "tokens_per_s_per_gpu" in measured:
        return float(measured["tokens_per_s_per_gpu"])
    spec, seq = row_spec(row), int(row["seq"])
    forward = float(build_step(spec, prefill(1, seq), logits=Logits.ALL).flops)
    per_sequence = model_flops_per_sequence(spec, seq, measured["convention"], forward)
    return float(measured["tflops_per_gpu"]) * 1e12 * seq / per_sequence


def _gpu(row: dict[str, Any]) -> HardwareSpec:
    from llm_cost.specs.load import load_gpu

    return load_gpu(row["gpu"])


def _dtype(row: dict[str, Any]) -> Dtype:
    return Dtype.BF16 if row["dtype"] in ("bf16", "fp16") else Dtype(row["dtype"])


def row_framework(row: dict[str, Any]) -> Framework:
    """The framework a row states (Megatron-Core when it states none)."""
    return Framework(row["stated"].get("framework", "megatron"))


def _cluster(row: dict[str, Any], factors: Optional[dict[str, Any]]) -> Cluster:
    """The row's cluster, timed at ``factors`` (a table entry; None: the shipped table's)."""
    gpu = _gpu(row)
    recipe = Fp8Recipe(row.get("fp8_recipe", "delayed"))
    framework = row_framework(row)
    rates: TrainRates = training_rates(gpu, recipe, framework=framework, factors=factors)
    if row.get("attention_kernel") == "flash2":
        rates = with_flash2(rates)
    q = rates.q
    links = links_of(gpu, float(row["network_gb_s"]), q["collective_latency_s"], q["link_efficiency"])
    overlap = bool(row.get("tp_comm_overlap", framework == Framework.MEGATRON))
    moe = MoeRouting(MoeDispatcher(row.get("moe_dispatcher", "alltoall")))
    flash = bool(row.get("flash_attention", True))
    return Cluster(
        gpu,
        int(row["gpus"]),
        links,
        rates,
        _dtype(row),
        tp_overlap=overlap,
        moe=moe,
        flash_attention=flash,
    )


def _space(row: dict[str, Any], free: bool):  # noqa: ANN202 - a SearchSpace
    """The knobs searched for ``row``: its framework's space with the knobs it states fixed; ``free``:
    only those its framework's version could not vary (``supports``: the 2021 Megatron-LM had no
    distributed optimizer and only full recompute; llm-foundry ran FSDP alone)."""
    stated = dict(row["stated"] if not free else row.get("supports", {}))
    framework = Framework(stated.pop("framework", row["stated"].get("framework", "megatron")))
    spec, gpu = row_spec(row), _gpu(row)
    space = default_space(spec, gpu, int(row["gpus"]), int(row["seq"]), framework)
    if "recompute" in stated:
        stated["recompute"] = Recompute(stated["recompute"])
    return fixed(space, **stated)


def published_layout(row: dict[str, Any], factors: Optional[dict[str, Any]] = None, free: bool = False) -> Candidate:
    """The layout a row is predicted with: its stated knobs and the best of the rest at ``factors``
    (``free``: every knob searched); when none fits, the fastest (the run did fit, so its time is
    still the prediction to check)."""
    ranked = search(row_spec(row), _cluster(row, factors), int(row["seq"]), int(row["sequences"]), _space(row, free))
    fitting = [c for c in ranked if c.memory.fits]
    if fitting:
        return fitting[0]
    timed = [evaluate(row_spec(row), _cluster(row, factors), int(row["seq"]), c.layout) for c in ranked]
    return min(timed, key=lambda c: c.step_time_s)


def predict(row: dict[str, Any], layout: TrainLayout, factors: Optional[dict[str, Any]] = None) -> float:
    """Tokens/s per GPU of ``row`` with ``layout`` at ``factors``."""
    best = evaluate(row_spec(row), _cluster(row, factors), int(row["seq"]), layout)
    sequences = layout.micro_batch * layout.micro_batches * layout.dp
    return sequences * int(row["seq"]) / (best.step_time_s * int(row["gpus"]))


def fit_factors(rows: list[dict[str, Any]], layouts: dict[str, TrainLayout]) -> dict[str, Any]:
    """The family's factors that minimise the rows' squared log errors with their layouts, each row
    weighed by 1 / sqrt(rows of its source) so that every source counts the same: one GEMM factor,
    and an FP8 GEMM factor per framework with FP8 rows (:func:`~llm_cost.analyses.train_rates.
    fp8_factor`). Needs scipy (``pip install 'llm-cost[fit]'``)."""
    from scipy.optimize import least_squares

    per_source: dict[str, int] = {}
    for r in rows:
        per_source[r["source"]] = per_source.get(r["source"], 0) + 1
    fp8 = sorted({str(row_framework(r)) for r in rows if r["dtype"] == "fp8"})
    measured = [measured_tokens_per_s(r) for r in rows]

    def entry(x: Any) -> dict[str, Any]:
        return {"gemm": float(x[0]), "fp8_gemm": {f: float(v) for f, v in zip(fp8, x[1:])}}

    def residuals(x: Any) -> list[float]:
        factors = entry(x)
        return [
            math.log(predict(r, layouts[r["id"]], factors) / m) / math.sqrt(per_source[r["source"]])
            for r, m in zip(rows, measured)
        ]

    n = 1 + len(fp8)
    result = least_squares(residuals, [1.0] * n, bounds=([FACTOR_BOUNDS[0]] * n, [FACTOR_BOUNDS[1]] * n),
                           diff_step=1e-3, xtol=1e-4)  # fmt: skip
    out = entry([round(float(v), 3) for v in result.x])
    out["at_bound"] = [k for k, v in [("gemm", out["gemm"]), *out["fp8_gemm"].items()] if v in FACTOR_BOUNDS]
    return out


def _range(rows: list[dict[str, Any]], layouts: dict[str, TrainLayout]) -> dict[str, Any]:
    """The layouts, frameworks, dtypes and sequence lengths the rows cover (a plan outside widens
    its band: :func:`llm_cost.analyses.train_plan.band_widening`)."""
    lays = [layouts[r["id"]] for r in rows]

    def span(values: list[int]) -> list[int]:
        return [min(values), max(values)]

    return {
        "frameworks": sorted({str(lay.framework) for lay in lays}),
        "dtypes": sorted({str(_dtype(r)) for r in rows}),
        "moe": any(row_spec(r).moe is not None for r in rows),
        "gpus": span([lay.gpus for lay in lays]),
        "tp": span([lay.tp for lay in lays]),
        "pp": span([lay.pp for lay in lays]),
        "cp": span([lay.cp for lay in lays]),
        "ep": span([lay.ep for lay in lays]),
        "seq": span([int(r["seq"]) for r in rows]),
    }


def fit_all(path: Path = RUNS_FILE, progress: Any = None) -> dict[str, Any]:
    """The training-efficiency table (:data:`~llm_cost.analyses.train_rates.EFFICIENCY_FILE`)
    refitted: per family the factors on all its rows, their bands (:func:`time_ratio_band` of the
    family's out-of-source errors with the published layouts and with the free search's picks) and
    range; per row the out-of-source prediction
    with the published layout and with the free search."""
    rows = published_rows(path)
    families: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        families.setdefault(row_family(r), []).append(r)
    layouts = {r["id"]: published_layout(r, START).layout for r in rows}  # the unstated knobs at the start
    table: dict[str, Any] = {"families": {}, "rows": {}}
    for family, members in families.items():
        factors = fit_factors(members, layouts)
        oos: list[float] = []
        errors: dict[str, list[float]] = {"error": [], "search_error": []}
        for source in sorted({r["source"] for r in members}):
            held = [r for r in members if r["source"] == source]
            rest = [r for r in members if r["source"] != source]
            out = fit_factors(rest, layouts) if rest else factors
            for r in held:
                table["rows"][r["id"]] = _row_entry(r, layouts[r["id"]], out, source)
                oos.append(abs(table["rows"][r["id"]]["error"]))
                for key, signed in errors.items():
                    signed.append(table["rows"][r["id"]][key])
                if progress:
                    progress(r["id"], table["rows"][r["id"]])
        table["families"][family] = {
            **factors,
            "time_ratio": time_ratio_band(errors["error"]),
            "search_time_ratio": time_ratio_band(errors["search_error"]),
            "rows": len(members),
            "sources": sorted({r["source"] for r in members}),
            "median_out_of_source": round(median(oos), 3),
            "range": _range(members, layouts),
        }
    return table


#: The least a training band reaches either side of its prediction (published figures round to 2-3
#: digits, and a handful of runs says little of a tail).
BAND_FLOOR = 0.05


def time_ratio_band(errors: list[float]) -> list[float]:
    """The 10th and 90th percentiles (nearest rank) of measured / predicted step time over
    out-of-source ``errors`` (each predicted / measured tokens/s - 1, so the time ratio is 1 +
    error), widened to reach at least :data:`BAND_FLOOR` either side of 1. Not symmetric: the free
    search's picks run slower than predicted far more often than faster (it prices some layouts too
    cheaply), and a band of absolute errors hid that."""
    ratios = sorted(1 + e for e in errors)
    n = len(ratios)
    low, high = ratios[max(0, math.ceil(0.1 * n) - 1)], ratios[min(n - 1, math.ceil(0.9 * n) - 1)]
    return [round(min(low, 1 - BAND_FLOOR), 3), round(max(high, 1 + BAND_FLOOR), 3)]


def _row_entry(row: dict[str, Any], layout: TrainLayout, factors: dict[str, Any], held: str) -> dict[str, Any]:
    """A row's out-of-source figures: factors fitted without source ``held``."""
    measured = measured_tokens_per_s(row)
    predicted = predict(row, layout, factors)
    pick = published_layout(row, factors, free=True)
    searched = predict(row, pick.layout, factors)
    return {
        "source": row["source"],
        "measured": round(measured, 1),
        "predicted": round(predicted, 1),
        "error": round(predicted / measured - 1, 4),
        "layout": layout.label(),
        "search_layout": pick.layout.label(),
        "search_predicted": round(searched, 1),
        "search_error": round(searched / measured - 1, 4),
        "factors": factors,
    }


@record
class SourceErrors:
    """The out-of-source errors of one source's rows (or of a group of rows)."""

    name: str
    rows: int
    median_error: float  # median |predicted / measured - 1|, published layouts
    median_search_error: float  # the same with the free search's picks


@record
class TrainingValidation(Result):
    """Every shipped training row predicted out of source (``llm-cost validate --training``): with
    the factors fitted without its source, with its published layout and with the free search."""

    rows: list[PublishedRow]
    sources: list[SourceErrors]  # per source, then "all", "MoE" and "dense"
    families: dict[str, dict[str, Any]]  # the fitted factors and bands, per GPU family
    table: str  # where the errors are recorded
    conventions: list[Note] = field(default_factory=list)


def _errors(name: str, rows: list[PublishedRow]) -> SourceErrors:
    return SourceErrors(
        name,
        len(rows),
        median(abs(r.error) for r in rows),
        median(abs(r.search_error) for r in rows),
    )


def training_validation(path: Path = EFFICIENCY_FILE) -> TrainingValidation:
    """The shipped table's out-of-source errors (:func:`fit_all`, written by
    ``scripts/fit_training.py``), row by row and per source, MoE and dense."""
    from llm_cost.analyses.train_rates import training_efficiency

    rows = published_errors(path)
    sources = [_errors(s, [r for r in rows if r.source == s]) for s in dict.fromkeys(r.source for r in rows)]
    groups = [("all", rows), ("MoE", [r for r in rows if r.moe]), ("dense", [r for r in rows if not r.moe])]
    sources += [_errors(name, members) for name, members in groups if members]
    table = training_efficiency(path)
    conventions = [note("train_validate.method"), note("train_validate.reserved")]
    return TrainingValidation(rows, sources, dict(table["families"]), str(path.name), conventions)


def published_errors(path: Path = EFFICIENCY_FILE) -> list[PublishedRow]:
    """Every shipped row's out-of-source errors as the shipped table records them."""
    from llm_cost.analyses.train_rates import training_efficiency

    table = training_efficiency(path)
    moe = {r["id"]: row_spec(r).moe is not None for r in published_rows()}
    families = {r["id"]: row_family(r) for r in published_rows()}
    return [
        PublishedRow(
            rid, e["source"], families.get(rid, ""), moe.get(rid, False), e["measured"], e["predicted"], e["error"],
            e["layout"], e["search_layout"], e["search_error"],
        )
        for rid, e in table["rows"].items()
    ]  # fmt: skip
