"""Fit a calibration profile to measured step times, and validate one, leave-one-out.

Measurement files (YAML or CSV). YAML: a mapping with ``engine``, ``source``, optional ``models`` (a
row's model id -> an llm-cost model name or a spec path relative to the file) and ``rows``, a list of
mappings; CSV: one row per line with a header. The fields of a row:

``id`` (optional in CSV: ``line`` and the line number), ``model`` (a shipped name, a spec path, or a key of
``models``), ``gpu`` (shipped name or alias; one GPU per file), ``phase`` (decode | prefill), ``batch``
(sequences), ``context`` (decode: tokens cached per sequence; prefill: prompt tokens), ``tp`` (default
1), ``weights_dtype`` (bf16 | fp16 | fp8 | int8 | int4), ``group_size`` (weight-only quantisation group,
blank for per-channel int8; int4 without one is taken as 128), ``kv_dtype`` (default bf16),
``compute_dtype`` (bf16 | fp16 | fp8; default bf16, fp16 with fp16 weights or KV), ``measured_ms`` (milliseconds per step: per token at batch 1 for decode, the time to first token for a
prefill). Other fields (source, quote, notes) are kept but not read.

Weight bits (:func:`llm_cost.core.types.stored_weight_bits`): a group of G weights carries a bf16 scale and zero,
32 / G bits per weight (int4 at G = 32: 5 bits; int8 per channel: 8).

The fit (scipy.optimize.least_squares, trust-region reflective, within each parameter's physical
bounds of :data:`~llm_cost.perf.profile.PARAMETERS`) minimises the log residuals log(predicted /
measured): a relative error, the same weight for a 3 ms and a 1.4 s row. Parameters the rows cannot
determine (:data:`NEEDS`) stay at their prior and the profile says why and which rows would determine
them. Leave-one-out: each row predicted by the profile fitted to the others.
"""

from __future__ import annotations

import csv
import dataclasses
import statistics
from collections.abc import Callable, Sequence
from dataclasses import field, replace
from functools import lru_cache
from pathlib import Path
from typing import Annotated, Any, Literal, Optional

from pydantic import ValidationError

from llm_cost.core.errors import InputError, SpecError
from llm_cost.core.limits import MAX_CALIBRATION_ROWS
from llm_cost.core.records import record
from llm_cost.core.types import DTYPE_BITS, Dtype, Engine, OpKind, Phase, stored_weight_bits
from llm_cost.model.layout import Layout
from llm_cost.perf.calibrated import (
    CalibratedModel,
    attention_terms,
    collective_time,
    gemm_terms,
    other_terms,
    smooth_max,
    weight_format,
)
from llm_cost.perf.kernels import attention_blocks
from llm_cost.perf.profile import (
    PARAMETERS,
    FitError,
    Parameters,
    Profile,
    load_profile,
    profile_names,
    transferred,
)
from llm_cost.perf.timemodel import DEFAULT_NETWORK_GB_S, EfficiencyEstimate, RooflineBound, link_of
from llm_cost.specs.declare import Bounds, Spec, spec, to_data, validated
from llm_cost.specs.files import OutFile, read_text, read_yaml, real_path, shown, validation_message
from llm_cost.specs.load import load_gpu, load_model
from llm_cost.specs.schema import HardwareSpec
from llm_cost.workload.step import Step, build_step, decode, prefill

__all__ = [
    "Measurement",
    "load_measurements",
    "category",
    "step_of",
    "NEEDS",
    "SLOWEST",
    "MAX_CALIBRATION_ROWS",
    "check_distinct",
    "RowResult",
    "CategoryError",
    "categories",
    "Calibration",
    "calibrate",
    "engine_of_files",
    "transfer",
    "profile_yaml",
    "measurements_dir",
    "write_profile",
    "validate",
    "check",
    "validate_shipped",
    "ProfileCheck",
    "profile_checks",
    "measured_transfer_widen",
    "ProfileTable",
    "profile_table",
    "FIT_INSTALL_HINT",
]

#: What a measurement file is, for messages about its path.
_WHAT = "a .yaml or .csv measurement file"
FIT_INSTALL_HINT = "fitting needs numpy and scipy: pip install 'llm-cost[fit]'"


@spec
class Measurement(Spec):
    """One measured step time (fields in the module docstring). Validated from a file's row, as a
    spec is (CSV text such as ``"8"`` is read as the number it spells); keys it does not name (a
    row's source and quote) are left out."""

    __pydantic_config__ = {"extra": "ignore"}

    id: str
    model: str
    gpu: str
    phase: Phase
    batch: Annotated[int, Bounds(ge=1, le=2**20)]
    context: Annotated[int, Bounds(ge=0, le=2**30)]
    tp: Annotated[int, Bounds(ge=1, le=4096)] = 1
    weights_dtype: Literal["bf16", "fp16", "fp8", "int8", "int4"] = "bf16"
    group_size: Optional[Annotated[int, Bounds(ge=1, le=2**20)]] = None
    kv_dtype: Literal["bf16", "fp16", "fp8"] = "bf16"
    compute_dtype: Optional[Literal["bf16", "fp16", "fp8"]] = None
    measured_ms: Annotated[float, Bounds(gt=0)]
    spec: str = ""  # the model name or path the step is built from (resolved from ``models``)

    def _check(self) -> None:
        if self.phase == Phase.MIXED:
            raise ValueError("phase must be decode or prefill (a step is measured by itself)")


def _rows_of(path: Path) -> tuple[list[dict[str, Any]], dict[str, str]]:
    if path.suffix.lower() == ".csv":
        lines = list(csv.DictReader(read_text(path, "a .csv measurement file").splitlines()))
        rows = [
            {k: _csv_number(k, v) for k, v in r.items() if v not in (None, "")} | {"id": r.get("id") or f"line{i + 2}"}
            for i, r in enumerate(lines)
        ]
        return rows, {}
    data = read_yaml(path)
    listed = data.get("rows")
    if not isinstance(listed, list) or not all(isinstance(r, dict) for r in listed):
        raise SpecError(f"{shown(path)}: a measurement file needs 'rows', a list of mappings")
    models = data.get("models") or {}
    if not isinstance(models, dict) or not all(isinstance(v, str) for v in models.values()):
        raise SpecError(
            f"{shown(path)}: field models must map each row's model id to an llm-cost model name or spec path"
        )
    return listed, {str(k): v for k, v in models.items()}


def _csv_number(column: object, text: object) -> object:
    """A CSV cell of ``measured_ms`` as the number it spells (CSV holds only text; a YAML row's
    time must be a number): ASCII decimal notation, else the text, which validation refuses."""
    if column != "measured_ms" or not isinstance(text, str) or not text.strip().isascii():
        return text
    try:
        return float(text)
    except ValueError:
        return text


def _spec_name(model: str, models: dict[str, str], folder: Path) -> str:
    target = models.get(model, model)
    return str(folder / target) if target.endswith((".yaml", ".yml", ".json")) else target


def load_measurements(paths: Sequence[Path]) -> list[Measurement]:
    """The rows with a measured time of the files (rows without one, e.g. MFU-only, are skipped);
    SpecError naming the file and row for an invalid one."""
    out = []
    for path in paths:
        rows, models = _rows_of(path)
        if len(rows) > MAX_CALIBRATION_ROWS:
            raise InputError(
                f"{shown(path)}: {len(rows):,} rows; a profile is fitted on at most {MAX_CALIBRATION_ROWS:,} (leave-one-out "
                "refits it once per row): give a sample of the configurations"
            )
        for i, row in enumerate(rows):
            if row.get("measured_ms") in (None, ""):
                continue
            try:
                m = validated(Measurement, row)
            except ValidationError as exc:
                raise SpecError(validation_message(path, exc).replace("invalid spec", f"row {i + 1}")) from None
            out.append(replace(m, spec=_spec_name(m.model, models, real_path(path, _WHAT).parent)))
    if not paths:
        raise InputError("measurements: give at least one measurement file", fields=("measurements",))
    if not out:
        raise InputError(f"{', '.join(shown(p) for p in paths)}: no rows with measured_ms")
    return out


def _measured(m: Measurement) -> tuple:
    """What a row says: the step (model resolved, GPU, phase, sizes, dtypes, layout) and its time."""
    return (m.spec, m.gpu.lower(), m.phase, m.batch, m.context, m.tp, m.weights_dtype, m.group_size, m.kv_dtype,
            m.compute_dtype, m.measured_ms)  # fmt: skip


def check_distinct(rows: list[Measurement]) -> None:
    """InputError naming the first rows that share an id, or that repeat one another (the same
    step, the same time: a copied row): a copy weighs its row twice in the fit and hides its error
    leave-one-out (its twin stays in). Two measurements of one step that differ are kept."""
    ids: set[str] = set()
    seen: dict[tuple, Measurement] = {}
    for m in rows:
        if m.id in ids:
            raise InputError(f"row id {m.id!r} is given to two rows; give each row its own id")
        twin = seen.get(_measured(m))
        if twin is not None:
            raise InputError(f"rows {twin.id!r} and {m.id!r} repeat one measurement (the same step and time); keep one")
        ids.add(m.id)
        seen[_measured(m)] = m


def category(m: Measurement) -> str:
    """The row's category in error tables: phase, batch 1 or more, weight format, TP."""
    parts: list[str] = [m.phase.value]
    if m.phase == Phase.DECODE:
        parts.append("batch 1" if m.batch == 1 else "batch > 1")
    if m.weights_dtype in ("int8", "int4"):
        parts.append(f"{m.weights_dtype} weight-only")
    if m.tp > 1:
        parts.append("TP > 1")
    return ", ".join(parts)


def step_of(m: Measurement) -> Step:
    """The step a measurement timed: its model, layout, weight bits and dtypes. InputError naming
    the row and its field (``tp``, not an argument) for a layout the model cannot take."""
    try:
        return _step(m)
    except InputError as exc:
        if not exc.fields:
            raise
        raise InputError(f"row {m.id!r}: field {exc}") from None


def _step(m: Measurement) -> Step:
    spec = load_model(m.spec)
    bits = stored_weight_bits(m.weights_dtype, m.group_size)
    compute = (
        Dtype(m.compute_dtype)
        if m.compute_dtype
        else (Dtype.FP16 if "fp16" in (m.weights_dtype, m.kv_dtype) else Dtype.BF16)
    )
    groups = decode(m.batch, m.context) if m.phase == Phase.DECODE else prefill(m.batch, m.context)
    return build_step(
        spec,
        groups,
        layout=Layout(tp=m.tp),
        weight_bits=bits,
        kv_bits=DTYPE_BITS[Dtype(m.kv_dtype)],
        compute_dtype=compute,
    )


#: What determines each parameter: (a test on the rows, the rows that would determine it).
NEEDS: dict[str, tuple[Callable[[list[Measurement]], bool], str]] = {
    "gemm_efficiency_max": (
        lambda r: any(m.batch * (m.context if m.phase == Phase.PREFILL else 1) >= 1024 for m in r),
        "rows with >= 1,024 tokens in flight (a prefill)",
    ),
    "gemm_half_tokens": (
        lambda r: len({m.batch for m in r if m.phase == Phase.DECODE and m.batch >= 16}) >= 2,
        "decode rows at two or more batch sizes >= 16",
    ),
    "overlap_p": (
        lambda r: any(m.phase == Phase.DECODE and m.batch >= 64 for m in r),
        "decode rows with batch >= 64 (near the ridge)",
    ),
    "bandwidth_efficiency_native": (
        lambda r: len({(m.spec, m.tp) for m in r if m.weights_dtype in ("bf16", "fp16", "fp8")}) >= 2,
        "rows with 16-bit (or fp8) weights of two or more models or TP degrees (with one "
        "weight size it is not separable from the per-layer time)",
    ),
    "bandwidth_efficiency_int8": (lambda r: any(m.weights_dtype == "int8" for m in r), "rows with int8 weights"),
    "bandwidth_efficiency_int4": (lambda r: any(m.weights_dtype == "int4" for m in r), "rows with int4 weights"),
    "kv_efficiency_max": (
        lambda r: len({m.batch for m in r if m.phase == Phase.DECODE and m.context >= 4096}) >= 2,
        "decode rows with context >= 4,096 at two or more batch sizes",
    ),
    "kv_saturation_heads": (
        lambda r: len({m.batch for m in r if m.phase == Phase.DECODE and m.context >= 4096}) >= 2,
        "decode rows with context >= 4,096 at two or more batch sizes",
    ),
    "attention_efficiency_flash": (
        lambda r: any(m.phase == Phase.PREFILL and m.context >= 4096 for m in r),
        "prefill rows with prompts >= 4,096 tokens",
    ),
    "layer_overhead_s": (lambda r: any(m.phase == Phase.DECODE for m in r), "decode rows"),
    "step_overhead_s": (
        lambda r: len({load_model(m.spec).num_hidden_layers for m in r}) >= 2,
        "rows of models with different layer counts (else it is not separable from the per-layer time)",
    ),
    "collective_latency_s": (lambda r: any(m.tp > 1 for m in r), "rows with TP > 1"),
    "link_efficiency": (
        lambda r: any(m.tp > 1 and m.batch * (m.context if m.phase == Phase.PREFILL else 1) >= 1024 for m in r),
        "rows with TP > 1 and >= 1,024 tokens in flight",
    ),
}


@record
class _Features:
    """The rows' operators as flat arrays (numpy), to evaluate the calibrated model's formulas on
    every row at once; built once per data set."""

    n: int
    peak: Any
    bw: Any
    gemm: dict[str, Any]
    attn: dict[str, Any]
    other: dict[str, Any]
    coll: dict[str, Any]
    layers: Any
    stages: Any

    @classmethod
    def of(cls, steps: list[Step], gpu: HardwareSpec, np: Any, split_kv: bool = False) -> _Features:
        gemm: dict[str, list] = {k: [] for k in ("row", "flops", "w", "act", "m", "fmt")}
        attn: dict[str, list] = {k: [] for k in ("row", "flops", "read", "write", "x")}
        other: dict[str, list] = {k: [] for k in ("row", "flops", "bytes")}
        coll: dict[str, list] = {k: [] for k in ("row", "calls", "bytes", "link")}
        formats = ("native", "int8", "int4")
        for i, step in enumerate(steps):
            fmt = formats.index(weight_format(step.weight_bits, DTYPE_BITS[step.compute_dtype]))
            link_gb_s = link_of(step, gpu, DEFAULT_NETWORK_GB_S)[1]
            for op in step.ops:
                if op.kind == OpKind.GEMM:
                    for k, v in zip(gemm, (i, op.flops, op.weight_bytes, op.activation_bytes, op.m or 1, fmt)):
                        gemm[k].append(float(v))
                elif op.kind == OpKind.ATTENTION:
                    x = attention_blocks(op, gpu.sm_count, split_kv)
                    for k, v in zip(attn, (i, op.flops, op.kv_read_bytes, op.kv_write_bytes, x)):
                        attn[k].append(float(v))
                elif op.kind == OpKind.COLLECTIVE:
                    assert op.collective is not None
                    for k, v in zip(coll, (i, op.layers, op.collective.bytes_per_call, link_gb_s * 1e9)):
                        coll[k].append(float(v))
                else:
                    for k, v in zip(other, (i, op.flops, op.bytes)):
                        other[k].append(float(v))
        arr = lambda d: {k: np.asarray(v, dtype=float) for k, v in d.items()}  # noqa: E731
        peaks = np.asarray([gpu.peak_flops(s.compute_dtype) for s in steps])
        return cls(
            len(steps),
            peaks,
            float(gpu.bandwidth_bytes_s),
            arr(gemm),
            arr(attn),
            arr(other),
            arr(coll),
            np.asarray([sum(st.layers for st in s.stages) for s in steps], dtype=float),
            np.asarray([len(s.stages) for s in steps], dtype=float),
        )

    def predict(self, q: dict[str, float], np: Any) -> Any:
        """Predicted seconds of every row, by the formulas of
        :class:`~llm_cost.perf.calibrated.CalibratedModel`."""
        p = q["overlap_p"]
        total = q["layer_overhead_s"] * self.layers + q["step_overhead_s"] * self.stages
        g = self.gemm
        if g["row"].size:
            e_w = np.asarray(
                [q["bandwidth_efficiency_native"], q["bandwidth_efficiency_int8"], q["bandwidth_efficiency_int4"]]
            )[g["fmt"].astype(int)]
            peak = self.peak[g["row"].astype(int)]
            c, m = gemm_terms(g["flops"], g["w"], g["act"], g["m"], e_w, peak, self.bw, q)
            total = total + np.bincount(g["row"].astype(int), smooth_max(c, m, p), self.n)
        a = self.attn
        if a["row"].size:
            c, m = attention_terms(
                a["flops"], a["read"], a["write"], a["x"], self.peak[a["row"].astype(int)], self.bw, q
            )
            total = total + np.bincount(a["row"].astype(int), smooth_max(c, m, p), self.n)
        o = self.other
        if o["row"].size:
            c, m = other_terms(o["flops"], o["bytes"], self.peak[o["row"].astype(int)], self.bw, q)
            total = total + np.bincount(o["row"].astype(int), smooth_max(c, m, p), self.n)
        k = self.coll
        if k["row"].size:
            total = total + np.bincount(
                k["row"].astype(int), collective_time(k["calls"], k["bytes"], k["link"], q), self.n
            )
        return total


def _numpy() -> Any:
    try:
        import numpy as np
    except ImportError:
        raise InputError(FIT_INSTALL_HINT) from None
    return np


def _least_squares() -> Any:
    """scipy's least_squares, imported once the rows are checked (scipy.optimize takes about a
    second to import: a refused file is told so before)."""
    try:
        from scipy.optimize import least_squares
    except ImportError:
        raise InputError(FIT_INSTALL_HINT) from None
    return least_squares


@record
class RowResult:
    """One measurement beside the fitted (in-sample) and leave-one-out predictions, the Roofline
    bound and the MFU/MBU estimate, seconds."""

    id: str
    category: str
    model: str
    phase: Phase
    batch: int
    context: int
    tp: int
    weights: str
    measured_s: float
    predicted_s: float
    loo_s: float
    bound_s: float
    estimate_s: float
    loo_error: float  # loo_s / measured_s - 1
    bound_error: float  # bound_s / measured_s - 1 (never above 0: a bound)
    estimate_error: float  # estimate_s / measured_s - 1


@record
class CategoryError:
    """Median and max |relative error| of a category's rows: leave-one-out prediction, bound,
    MFU/MBU estimate; and how many rows each gets within 10%."""

    category: str
    rows: int
    loo_median: float
    loo_max: float
    loo_within_10pct: int
    bound_median: float
    estimate_median: float
    estimate_within_10pct: int


def categories(rows: list[RowResult]) -> list[CategoryError]:
    """The rows' errors by :func:`category`, in order of first appearance, and "all" last."""
    groups: dict[str, list[RowResult]] = {}
    for r in rows:
        groups.setdefault(r.category, []).append(r)
    groups["all"] = rows

    def med(xs: list[float]) -> float:
        return statistics.median(abs(x) for x in xs)

    return [
        CategoryError(
            c,
            len(rs),
            med([r.loo_error for r in rs]),
            max(abs(r.loo_error) for r in rs),
            sum(abs(r.loo_error) <= 0.1 for r in rs),
            med([r.bound_error for r in rs]),
            med([r.estimate_error for r in rs]),
            sum(abs(r.estimate_error) <= 0.1 for r in rs),
        )
        for c, rs in groups.items()
    ]


@record
class Calibration:
    """A fitted profile, the per-row results and errors by category, the parameters fitted and
    those fixed (with why), and the parameters of each leave-one-out fit; or (``method``
    "out-of-sample") a profile's predictions of rows it was not fitted on, in ``loo_s``."""

    profile: Profile
    rows: list[RowResult]
    categories: list[CategoryError]
    free: list[str]
    fixed: dict[str, str]
    loo_parameters: dict[str, Parameters] = field(repr=False, default_factory=dict)  # by left-out row id
    out: Optional[str] = None  # the file the profile was written to
    method: str = "leave-one-out"  # or "out-of-sample": a profile checked on rows it was not fitted on

    def loo_profile(self, row_id: str) -> Profile:
        """The profile fitted without row ``row_id``."""
        return dataclasses.replace(
            self.profile, name=f"{self.profile.name} (without {row_id})", parameters=self.loo_parameters[row_id]
        )


def _fit(
    feats: _Features, measured: Any, mask: Any, free: list[str], start: dict[str, float], np: Any, least_squares: Any
) -> dict[str, float]:
    """Parameters minimising the log residuals over the rows in ``mask``; the others at ``start``."""
    lo = np.asarray([PARAMETERS[k].lower for k in free])
    hi = np.asarray([PARAMETERS[k].upper for k in free])
    span = hi - lo

    def q_of(u: Any) -> dict[str, float]:
        return start | {k: float(v) for k, v in zip(free, lo + span * u)}

    def residuals(u: Any) -> Any:
        return np.log(feats.predict(q_of(u), np)[mask] / measured[mask])

    u0 = np.clip((np.asarray([start[k] for k in free]) - lo) / span, 1e-6, 1 - 1e-6)
    result = least_squares(residuals, u0, bounds=(0.0, 1.0), method="trf", x_scale="jac")
    return q_of(result.x)


def calibrate(
    paths: list[Path],
    name: str,
    note: str = "",
    decode_split_kv: bool = False,
    *,
    gpu: Optional[str] = None,
    peers: Sequence[str] = (),
    engine: Any = None,
    free: Optional[Sequence[str]] = None,
    base: Optional[Profile] = None,
    ids: Optional[Sequence[str]] = None,
) -> Calibration:
    """Fit a profile named ``name`` to the measurement files; leave-one-out errors. With
    ``decode_split_kv`` the engine's decode attention splits the keys (the profile's flag: the rows'
    attention blocks by :func:`~llm_cost.perf.kernels.attention_blocks`). InputError
    without numpy/scipy, for rows of more than one GPU, fewer rows than free parameters + 2, or a
    row faster than the bound. The same unchanged files fitted again in one process return the same
    (shared, not to be modified) result: validating and calibrating refit nothing twice.

    ``gpu``: fit only the rows of that GPU (and of ``peers``: GPUs with the same datasheet bandwidth
    and dense peaks, the same die, e.g. the H800 beside the H100; InputError otherwise). ``engine``
    (an :class:`~llm_cost.core.types.Engine`): the rows' engine, else the files' ``engine_family``.
    ``free``: fit these parameters (default: those the rows determine, :data:`NEEDS`; a caller naming
    one the test of :data:`NEEDS` does not pass vouches for it, as ``scripts/fit_profiles.py`` says
    why), the others at ``base``'s values (a transferred profile of the GPU: few rows fit only what they determine best),
    else at their priors. ``ids``: only the rows of these ids (a profile's ``fitted_on``)."""
    key = []
    for p in paths:
        real = real_path(p, _WHAT)
        status = real.stat()
        key.append((str(real), status.st_mtime_ns, status.st_size))
    options = (
        bool(decode_split_kv),
        gpu,
        tuple(peers),
        None if engine is None else str(engine),
        None if free is None else tuple(free),
        None if base is None else (base.name, base.parameters),
        None if ids is None else tuple(ids),
    )
    return _calibrate_once(tuple(key), tuple(paths), name, note, options)


@lru_cache(maxsize=32)
def _calibrate_once(key: tuple, paths: tuple[Path, ...], name: str, note: str, options: tuple) -> Calibration:
    return _calibrate(paths, name, note, *options)


def engine_of_files(paths: Sequence[Path]) -> Optional[Engine]:
    """The engine family the measurement files declare (their ``engine_family``), or None when
    none does; InputError naming the field when they declare two or an unknown one."""
    found = set()
    for p in paths:
        if p.suffix.lower() == ".csv":
            continue
        value = read_yaml(p).get("engine_family")
        if value is None:
            continue
        try:
            found.add(Engine(str(value).strip().lower()))
        except ValueError:
            raise InputError(
                f"{shown(p)}: field engine_family: {shown(str(value), 40)!r} is not one of "
                f"{', '.join(e.value for e in Engine)}"
            ) from None
    if len(found) > 1:
        raise InputError(
            f"the files declare engines {', '.join(sorted(e.value for e in found))}: a profile is for one engine"
        )
    return next(iter(found), None)


def _percentiles(signed: Any, np: Any) -> tuple[float, float]:
    """(low <= 0, high >= 0): the signed leave-one-out residuals at the 10th and 90th percentiles,
    or their least and greatest with fewer than 10 rows (a percentile of few rows is no estimate)."""
    if signed.size >= 10:
        low, high = float(np.percentile(signed, 10)), float(np.percentile(signed, 90))
    else:
        low, high = float(signed.min()), float(signed.max())
    import math

    # rounded outwards to 4 digits, so that the band still holds the rows that set it
    return math.floor(min(low, 0.0) * 1e4) / 1e4, math.ceil(max(high, 0.0) * 1e4) / 1e4


#: The slowest profile within the parameters' bounds: the least efficiency and overlap (p = 1, compute
#: and memory added), the most tokens and heads to saturate, the longest fixed times. A measured row
#: slower than it predicts is one no profile can fit (a wrong unit, a step that stalled).
SLOWEST = {k: p.lower if ("efficiency" in k or k == "overlap_p") else p.upper for k, p in PARAMETERS.items()}


def _check_reachable(rows: list[Measurement], slowest_s: Any, gpu: HardwareSpec) -> None:
    """InputError naming the rows measured slower than :data:`SLOWEST` predicts."""
    over = [
        f"{m.id} ({m.measured_ms:g} ms > {t * 1e3:.3g} ms)" for m, t in zip(rows, slowest_s) if m.measured_ms / 1e3 > t
    ]
    if over:
        raise InputError(
            f"measured slower than any profile of {gpu.name} within the parameters' bounds predicts (a wrong "
            f"unit, or a stalled step?): {', '.join(over[:5])}"
            + (f" and {len(over) - 5} more" if len(over) > 5 else "")
        )


def _same_die(a: HardwareSpec, b: HardwareSpec) -> bool:
    """The same bandwidth and tensor-core peaks of the inference dtypes (an H800 is an H100 with its
    NVLink and FP64 cut, neither of which a one-GPU inference step uses)."""
    peaks_a, peaks_b = dict(a.dense_tflops), dict(b.dense_tflops)
    return a.memory_bandwidth_tb_s == b.memory_bandwidth_tb_s and all(
        peaks_a.get(k) == peaks_b.get(k) for k in ("bf16", "fp16", "fp8", "int8")
    )


def _calibrate(
    paths: tuple[Path, ...],
    name: str,
    note: str,
    split_kv: bool = False,
    only_gpu: Optional[str] = None,
    peers: tuple[str, ...] = (),
    engine_given: Optional[str] = None,
    limit: Optional[tuple[str, ...]] = None,
    base: Optional[tuple[str, Parameters]] = None,
    ids: Optional[tuple[str, ...]] = None,
) -> Calibration:
    rows = load_measurements(paths)
    np = _numpy()
    if ids is not None:
        rows = [m for m in rows if m.id in set(ids)]
    if only_gpu is not None:
        target = load_gpu(only_gpu)
        allowed = {target.name}
        for peer in peers:
            other = load_gpu(peer)
            if not _same_die(target, other):
                raise InputError(f"{other.name}'s datasheet peaks differ from {target.name}'s: not a peer of its fit")
            allowed.add(other.name)
        rows = [m for m in rows if load_gpu(m.gpu).name in allowed]
        if not rows:
            raise InputError(f"the files hold no rows of {target.name}")
    gpus = {load_gpu(m.gpu).name for m in rows}
    if len(gpus) != 1 and not (only_gpu is not None and len(gpus) <= 1 + len(peers)):
        raise InputError(f"a profile is for one GPU; the rows name {', '.join(sorted(gpus))}: split the file")
    gpu = load_gpu(only_gpu) if only_gpu is not None else load_gpu(rows[0].gpu)
    used = {m.id for m in rows}
    texts = {
        str(read_yaml(p).get("engine", ""))
        for p in paths
        if p.suffix.lower() != ".csv" and any(m.id in used for m in load_measurements([p]))
    } - {""}
    determined = {k for k, (test, _) in NEEDS.items() if test(rows)}
    free = [k for k in NEEDS if (k in limit if limit is not None else k in determined)]
    start = {k: p.prior for k, p in PARAMETERS.items()} | (to_data(base[1]) if base is not None else {})
    fixed = {
        k: (
            f"at its prior {PARAMETERS[k].prior:g} {PARAMETERS[k].unit}: no {why} in the data"
            if base is None
            else f"at profile {base[0]}'s {start[k]:g} {PARAMETERS[k].unit}"
            + (f": no {why} in the data" if k not in determined else ": too few rows to fit it too")
        )
        for k, (test, why) in NEEDS.items()
        if k not in free
    }
    if len(rows) < len(free) + 2:
        raise InputError(
            f"{len(rows)} rows cannot determine {len(free)} parameters ({', '.join(free)}) with one "
            f"left out: give at least {len(free) + 2} rows, or fewer kinds of rows"
        )
    steps = [step_of(m) for m in rows]
    bounds = [RooflineBound().step_time(s, gpu).time_s for s in steps]
    below = [
        f"{m.id} ({m.measured_ms:g} ms < bound {b * 1e3:.3g} ms)"
        for m, b in zip(rows, bounds)
        if m.measured_ms / 1e3 < b
    ]
    if below:
        raise InputError(
            f"measured faster than the Roofline bound of {gpu.name} allows (a wrong GPU, model, dtype "
            f"or unit?): {', '.join(below[:5])}" + (f" and {len(below) - 5} more" if len(below) > 5 else "")
        )
    check_distinct(rows)
    feats = _Features.of(steps, gpu, np, split_kv)
    measured = np.asarray([m.measured_ms / 1e3 for m in rows])
    _check_reachable(rows, feats.predict(SLOWEST, np), gpu)
    engine = _engine_of(engine_given, paths)  # after the rows are checked: their faults are told first
    least_squares = _least_squares()
    everything = np.ones(len(rows), dtype=bool)
    q = _fit(feats, measured, everything, free, start, np, least_squares)
    loo_q = []
    for i in range(len(rows)):
        mask = everything.copy()
        mask[i] = False
        loo_q.append(_fit(feats, measured, mask, free, q, np, least_squares))
    fitted = feats.predict(q, np)
    loo = np.asarray([feats.predict(qi, np)[i] for i, qi in enumerate(loo_q)])
    ins, out = np.abs(fitted / measured - 1), np.abs(loo / measured - 1)
    low, high = _percentiles(loo / measured - 1, np)
    error = FitError.checked(
        rows=len(rows),
        loo_median=round(float(np.median(out)), 4),
        loo_max=round(float(out.max()), 4),
        in_sample_median=round(float(np.median(ins)), 4),
        in_sample_max=round(float(ins.max()), 4),
        loo_low=low,
        loo_high=high,
    )
    spans = {
        "fitted_batch": [min(m.batch for m in rows), max(m.batch for m in rows)],
        "fitted_context": [min(m.context for m in rows), max(m.context for m in rows)],
    }
    profile = Profile.checked(
        name=name,
        gpu=gpu.name,
        engine=engine,
        engine_version="; ".join(sorted(texts)),
        **spans,
        kind="fitted",
        note=note or f"fitted by llm-cost calibrate on {len(rows)} rows",
        parameters=Parameters.checked(**_rounded(q)),
        decode_split_kv=split_kv,
        fitted_on=[m.id for m in rows],
        measurements=[p.name if real_path(p, _WHAT).parent == measurements_dir() else str(p) for p in paths],
        fixed=fixed,
        error=error,
    )
    results = [
        _row_result(m, s, gpu, float(fitted[i]), float(loo[i]), b)
        for i, (m, s, b) in enumerate(zip(rows, steps, bounds))
    ]
    loo_parameters = {m.id: Parameters.checked(**_rounded(loo_q[i])) for i, m in enumerate(rows)}
    return Calibration(profile, results, categories(results), free, fixed, loo_parameters)


def _engine_of(given: Optional[str], paths: Sequence[Path]) -> Engine:
    """The engine of a fit: ``given``, else the files' ``engine_family``; InputError naming
    ``engine`` when neither says."""
    if given is not None:
        try:
            return Engine(str(given).strip().lower())
        except ValueError:
            raise InputError(
                f"engine: {shown(str(given), 40)!r} is not one of {', '.join(e.value for e in Engine)}",
                fields=("engine",),
            ) from None
    found = engine_of_files(paths)
    if found is None:
        raise InputError(
            "engine: the measurement files do not say their engine (a YAML file's engine_family); give engine, "
            f"one of {', '.join(e.value for e in Engine)}",
            fields=("engine",),
        )
    return found


def _row_result(
    m: Measurement, step: Step, gpu: HardwareSpec, predicted: float, held_out: float, bound: float
) -> RowResult:
    """A row beside its predictions (in-sample and held out), bound and MFU/MBU estimate."""
    t, e = m.measured_ms / 1e3, EfficiencyEstimate().step_time(step, gpu).time_s
    return RowResult(
        m.id,
        category(m),
        load_model(m.spec).name,
        Phase(m.phase),
        m.batch,
        m.context,
        m.tp,
        m.weights_dtype + (f" g{m.group_size}" if m.group_size else ""),
        t,
        predicted,
        held_out,
        bound,
        e,
        held_out / t - 1,
        bound / t - 1,
        e / t - 1,
    )


def _rounded(q: dict[str, float]) -> dict[str, float]:
    """Parameters at 4 significant digits (the data determine none better); below 1e-12 is 0."""
    return {k: 0.0 if abs(v) < 1e-12 else float(f"{v:.4g}") for k, v in q.items()}


def transfer(source: Profile, gpu: HardwareSpec, source_gpu: HardwareSpec, name: Optional[str] = None) -> Profile:
    """A profile for ``gpu`` from a fitted one (:func:`llm_cost.perf.profile.transferred`), validated."""
    made = transferred(source, gpu, source_gpu, name)
    return Profile.checked(**{f.name: getattr(made, f.name) for f in dataclasses.fields(made)})


def profile_yaml(profile: Profile) -> str:
    """The profile as YAML text, parameters in :data:`PARAMETERS` order, with a header comment."""
    import yaml

    head = (
        f"# llm-cost calibration profile {profile.name} ({profile.kind}): {profile.gpu}, {profile.engine}.\n"
        "# Parameters of llm_cost.perf.calibrated (units under 'units'); 'error' is leave-one-out.\n"
    )
    return head + yaml.safe_dump(to_data(profile, exclude_none=True), sort_keys=False, width=110)


def measurements_dir() -> Path:
    """Folder of the shipped measurement files."""
    return Path(__file__).resolve().parent.parent / "data" / "measurements"


def write_profile(result: Calibration, out: OutFile) -> Calibration:
    """Write the fitted profile to ``out`` (checked by :func:`~llm_cost.specs.files.check_out`)
    whole or not at all (:func:`~llm_cost.specs.files.write_file`). The result, with ``out`` set."""
    from llm_cost.specs.files import write_file

    write_file(out, profile_yaml(result.profile))
    return dataclasses.replace(result, out=str(out.path))


def validate(profile: Profile, base: Path | None = None) -> Calibration:
    """Refit ``profile``'s measurements (shipped files, or files beside ``base``, the profile's
    folder) leave-one-out: each row predicted by the profile fitted without it. A transferred
    profile is checked out-of-sample on the shipped rows of its GPU (:func:`check`). InputError for
    a measurement file that is not there, or a transferred profile whose GPU has no rows."""
    if profile.kind == "transferred":
        return check(profile, sorted(measurements_dir().glob("*.yaml")))
    if not profile.measurements:
        raise InputError(
            f"profile {profile.name}: field measurements is empty; a fitted profile lists the measurement files "
            "it was fitted on"
        )
    paths = []
    for name in profile.measurements:
        candidates = [measurements_dir() / name] + ([base / name] if base else []) + [Path(name)]
        found = next((p for p in candidates if p.is_file()), None)
        if found is None:
            raise InputError(f"profile {profile.name}: measurement file {shown(name)} not found")
        paths.append(found)
    fitted = set(profile.fitted_on)
    gpus = {load_gpu(m.gpu).name for m in load_measurements(paths) if m.id in fitted}
    values = to_data(profile.parameters)
    at_priors = all(values[k] == PARAMETERS[k].prior for k in profile.fixed)
    return calibrate(
        paths,
        profile.name,
        profile.note,
        profile.decode_split_kv,
        gpu=profile.gpu,
        peers=sorted(gpus - {profile.gpu}),
        engine=profile.engine,
        free=[k for k in NEEDS if k not in profile.fixed],
        base=None if at_priors else profile,
        ids=profile.fitted_on,
    )


def check(profile: Profile, paths: list[Path]) -> Calibration:
    """``profile``'s predictions of the rows of its GPU in ``paths`` that it was not fitted on
    (out-of-sample; no fit, so no scipy). InputError when the files hold no such row."""
    gpu = load_gpu(profile.gpu)
    fitted = set(profile.fitted_on)
    rows = [m for m in load_measurements(paths) if load_gpu(m.gpu).name == gpu.name and m.id not in fitted]
    if not rows:
        source = f" is transferred from {profile.transferred_from}" if profile.transferred_from else ""
        raise InputError(
            f"profile {profile.name}{source}: there are no other measurements of {profile.gpu} to "
            f"check it on" + (f"; validate {profile.transferred_from}" if source else "")
        )
    model = CalibratedModel(profile)
    results = []
    for m in rows:
        step = step_of(m)
        t = model.step_time(step, gpu).time_s
        results.append(_row_result(m, step, gpu, t, t, RooflineBound().step_time(step, gpu).time_s))
    return Calibration(profile, results, categories(results), [], {}, method="out-of-sample")


def validate_shipped() -> list[Calibration]:
    """Every fitted shipped profile leave-one-out, then every profile on the shipped rows of its GPU
    it was not fitted on (another engine's, for the shipped data), out-of-sample."""
    profiles = [load_profile(n) for n in profile_names()]
    files = sorted(measurements_dir().glob("*.yaml"))
    rows = load_measurements(files)
    unfitted = {
        p.name for p in profiles if any(load_gpu(m.gpu).name == p.gpu and m.id not in set(p.fitted_on) for m in rows)
    }
    return [validate(p) for p in profiles if p.kind == "fitted"] + [
        check(p, files) for p in profiles if p.name in unfitted
    ]


@record
class ProfileCheck:
    """One fitted (GPU, engine) profile against the shipped measurements: leave-one-out on its own
    rows, and out of sample on the rows it was not fitted on, of its engine on other GPUs (the profile
    transferred there: how the transfer rule does) and of other engines (on any GPU, transferred
    where the GPU differs). Errors are |predicted / measured - 1|; ``*_in_band``: the rows whose
    measured time lies inside the prediction's error band
    (:func:`llm_cost.perf.calibrated.band_factors`)."""

    profile: str
    gpu: str
    engine: Engine
    rows: int
    loo_median: float
    loo_max: float
    loo_low: float  # the band's residuals: 10th / 90th percentile (least / greatest under 10 rows)
    loo_high: float
    loo_in_band: int
    same_engine_rows: int  # the engine's rows on other GPUs
    same_engine_median: Optional[float]
    same_engine_max: Optional[float]
    same_engine_in_band: int
    other_engine_rows: int
    other_engine_median: Optional[float]
    other_engine_max: Optional[float]
    source: str  # the measurement files the profile was fitted on


def _inside(predicted: float, measured: float, band: Any) -> bool:
    return band is not None and predicted * band.low <= measured <= predicted * band.high


def profile_checks() -> list[ProfileCheck]:
    """:class:`ProfileCheck` of every fitted shipped profile (``llm-cost validate``), in name order."""
    from llm_cost.perf.calibrated import band_factors

    files = sorted(measurements_dir().glob("*.yaml"))
    rows = [(m, engine_of_files([f])) for f in files for m in load_measurements([f])]
    out = []
    for p in [load_profile(n) for n in profile_names()]:
        if p.kind != "fitted" or p.error is None:
            continue
        c = validate(p)
        loo_in = sum(_inside(r.loo_s, r.measured_s, band_factors(p, r.batch, r.context)) for r in c.rows)
        fitted = set(p.fitted_on)
        fitted_gpus = {load_gpu(m.gpu).name for m, _ in rows if m.id in fitted}
        same: list[tuple[float, bool]] = []
        other: list[float] = []
        for m, engine in rows:
            if m.id in fitted:
                continue
            gpu = load_gpu(m.gpu)
            if engine == p.engine and gpu.name in fitted_gpus:
                continue  # a row the fit left out on purpose (scripts/fit_profiles.py says why)
            used = p if gpu.name in fitted_gpus else transferred(p, gpu, load_gpu(p.gpu))
            t = CalibratedModel(used).step_time(step_of(m), gpu, operators=False).time_s
            measured = m.measured_ms / 1e3
            if engine == p.engine:
                same.append((abs(t / measured - 1), _inside(t, measured, band_factors(used, m.batch, m.context))))
            else:
                other.append(abs(t / measured - 1))
        errs = [e for e, _ in same]
        out.append(
            ProfileCheck(
                p.name,
                p.gpu,
                p.engine,
                p.error.rows,
                p.error.loo_median,
                p.error.loo_max,
                p.error.loo_low,
                p.error.loo_high,
                loo_in,
                len(same),
                statistics.median(errs) if errs else None,
                max(errs) if errs else None,
                sum(inside for _, inside in same),
                len(other),
                statistics.median(other) if other else None,
                max(other) if other else None,
                ", ".join(p.measurements),
            )
        )
    return out


def measured_transfer_widen(checks: list[ProfileCheck]) -> float:
    """How much worse profiles do carried to another GPU than held out on their own: the median,
    over the fitted profiles with rows of their engine on other GPUs, of that out-of-sample median
    error over the profile's leave-one-out median (what
    :data:`llm_cost.perf.profile.TRANSFER_WIDEN` states)."""
    ratios = [
        c.same_engine_median / c.loo_median for c in checks if c.same_engine_median is not None and c.loo_median > 0
    ]
    return statistics.median(ratios) if ratios else 1.0


@record
class ProfileTable:
    """``llm-cost validate``: :class:`ProfileCheck` of every fitted profile, the transfer widening
    the rows measure (:func:`measured_transfer_widen`) and the one the bands use."""

    profiles: list[ProfileCheck]
    measured_transfer_widen: float
    transfer_widen: float


def profile_table() -> ProfileTable:
    """The :class:`ProfileTable` of the shipped profiles and measurements."""
    from llm_cost.perf.profile import TRANSFER_WIDEN

    checks = profile_checks()
    return ProfileTable(checks, measured_transfer_widen(checks), TRANSFER_WIDEN)
