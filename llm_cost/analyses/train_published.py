"""The training planner against published runs: each row of
``llm_cost/data/measurements/training/published-runs.yaml`` predicted from its model, GPU, cluster,
batch and the layout knobs its source states (the others searched, as their authors tuned them), in
the FLOP convention the source quotes.

No coefficient of the planner is fitted on these rows: the time model's parameters are the GPU's
calibration profile (fitted on serving measurements) and the constants of
:mod:`llm_cost.analyses.train_step` with their sources. So each row's error is a leave-one-out
error: no row takes part in predicting itself.
"""

from __future__ import annotations

import math
from pathlib import Path
from statistics import median
from typing import Any

from llm_cost.analyses.train_plan import (
    TRAINING_EFFICIENCY,
    Candidate,
    Cluster,
    default_space,
    efficiency_family,
    fixed,
    model_flops_per_sequence,
    search,
)
from llm_cost.analyses.train_step import Links, profile_parameters
from llm_cost.core.choices import Logits
from llm_cost.core.records import record
from llm_cost.core.types import Dtype

__all__ = [
    "PublishedRow",
    "published_rows",
    "predict_row",
    "fit_efficiency",
    "fit_all",
    "reference_rows",
    "row_family",
    "published_errors",
    "RUNS_FILE",
]

#: The published runs.
RUNS_FILE = Path(__file__).resolve().parent.parent / "data" / "measurements" / "training" / "published-runs.yaml"


@record
class PublishedRow:
    """One published run and its prediction."""

    id: str
    source: str
    measured_tflops_per_gpu: float
    predicted_tflops_per_gpu: float
    relative_error: float  # predicted / measured - 1
    layout: str  # the layout the planner predicts the run with (stated knobs + the best of the rest)
    fits: bool


def published_rows(path: Path = RUNS_FILE) -> list[dict[str, Any]]:
    """The rows of the published-runs file, as written."""
    import yaml

    with path.open(encoding="utf-8") as f:
        return list(yaml.safe_load(f)["rows"])


def _spec(model: Any):  # noqa: ANN202 - a ModelSpec
    from llm_cost.specs.hf import hf_to_spec
    from llm_cost.specs.load import load_model

    return hf_to_spec(dict(model), "a published run's config")[0] if isinstance(model, dict) else load_model(model)


def row_family(row: dict[str, Any]) -> str:
    """The profile family of a row's GPU (:func:`llm_cost.analyses.train_plan.efficiency_family`)."""
    from llm_cost.analyses.train_plan import training_profile
    from llm_cost.specs.load import load_gpu

    return efficiency_family(row["gpu"], training_profile(load_gpu(row["gpu"])))


def predict_row(row: dict[str, Any], efficiency: float) -> tuple[float, Candidate]:
    """(predicted TFLOP/s per GPU in the row's convention, the layout predicted) of one row at a
    training-efficiency factor: the planner's best fitting layout with the row's stated knobs (or,
    when none fits, the best of all: the run did fit, so its time is still the prediction to check)."""
    from llm_cost.analyses.train_plan import training_profile
    from llm_cost.specs.load import load_gpu
    from llm_cost.workload.step import build_step, prefill

    spec, gpu = _spec(row["model"]), load_gpu(row["gpu"])
    profile = training_profile(gpu)
    q = profile_parameters(profile)
    ic = gpu.interconnect
    links = Links(
        ic.bandwidth_gb_s_per_direction,
        float(row["network_gb_s"]),
        ic.gpus_per_node,
        q["collective_latency_s"],
        q["link_efficiency"],
    )
    dtype = Dtype.BF16 if row["dtype"] in ("bf16", "fp16") else Dtype(row["dtype"])
    cluster = Cluster(gpu, row["gpus"], links, profile, efficiency, dtype)
    space = fixed(default_space(spec, gpu, row["gpus"], row["seq"]), **row["stated"])
    ranked = search(spec, cluster, row["seq"], row["sequences"], space)
    fitting = [c for c in ranked if c.memory.fits]
    best = fitting[0] if fitting else max(ranked, key=lambda c: c.mfu)
    forward = float(build_step(spec, prefill(1, row["seq"]), logits=Logits.ALL).flops)
    per_sequence = model_flops_per_sequence(spec, row["seq"], row["convention"], forward)
    lay = best.layout
    sequences = lay.micro_batch * lay.micro_batches * lay.dp
    return per_sequence * sequences / (row["gpus"] * best.step_time_s) / 1e12, best


def fit_efficiency(rows: list[dict[str, Any]], rounds: int = 4) -> float:
    """The factor that makes the rows' mean log error zero: the prediction is nearly proportional
    to it (communication does not scale with it), so a few fixed-point rounds settle it."""
    factor = 1.0
    for _ in range(rounds):
        logs = [math.log(float(r["tflops_per_gpu"]) / predict_row(r, factor)[0]) for r in rows]
        factor *= math.exp(sum(logs) / len(logs))
    return round(factor, 3)


def reference_rows(family: str, path: Path = RUNS_FILE) -> list[dict[str, Any]]:
    """The rows a family's factor is fitted on: those of the source the file names its reference."""
    import yaml

    with path.open(encoding="utf-8") as f:
        data = yaml.safe_load(f)
    source = data["reference"][family]
    return [r for r in data["rows"] if r["source"] == source and row_family(r) == family]


def fit_all(path: Path = RUNS_FILE) -> dict[str, dict[str, Any]]:
    """:data:`~llm_cost.analyses.train_plan.TRAINING_EFFICIENCY` refitted: per family, the factor
    on its reference rows and their leave-one-out errors."""
    import yaml

    with path.open(encoding="utf-8") as f:
        families = list(yaml.safe_load(f)["reference"])
    out = {}
    for family in families:
        rows = reference_rows(family, path)
        loo = []
        for i, row in enumerate(rows):
            factor = fit_efficiency(rows[:i] + rows[i + 1 :])
            loo.append(abs(predict_row(row, factor)[0] / float(row["tflops_per_gpu"]) - 1))
        out[family] = {
            "factor": fit_efficiency(rows),
            "source": rows[0]["source"],
            "rows": len(rows),
            "loo_median": round(median(loo), 3),
            "loo_max": round(max(loo), 3),
        }
    return out


def published_errors(path: Path = RUNS_FILE) -> list[PublishedRow]:
    """Every published row predicted with its family's shipped factor, and its relative error (a
    reference row's in-sample error; :func:`fit_all` gives the leave-one-out ones)."""
    out = []
    for row in published_rows(path):
        family = row_family(row)
        factor = float(TRAINING_EFFICIENCY.get(family, {}).get("factor", 1.0))
        predicted, best = predict_row(row, factor)
        measured = float(row["tflops_per_gpu"])
        out.append(
            PublishedRow(
                row["id"],
                row["source"],
                measured,
                predicted,
                predicted / measured - 1,
                best.layout.label(),
                best.memory.fits,
            )
        )
    return out
