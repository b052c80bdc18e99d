"""Fit the time model's parameters to measured step times, across sources, and check it leave one
SOURCE out.

The fit (``scripts/fit_profiles.py`` writes the shipped one) takes every shipped measurement at
once: one set of :class:`~llm_cost.perf.profile.FamilyParameters` per kernel family with rows (each
row against its own GPU's datasheet peaks) and one set of
:class:`~llm_cost.perf.profile.EngineParameters` per engine with rows, so a family's efficiencies
rest on every engine's rows of its GPUs and an engine's fixed costs on every GPU it was timed on.
It minimises the log residuals log(predicted / measured) (a relative error: the same weight for a
3 ms and a 1.4 s row; each row weighted 1 / sqrt(its source's rows), :func:`source_weights`) plus a
weak pull of each parameter towards its prior (its residual (value -
prior) / (half its range)), within each parameter's physical bounds (scipy.optimize.least_squares,
trust-region reflective). A parameter no row moves stays at its prior, and the fit says so; one that
ends at a bound is named.

Checked leave-one-source-out: for each source (one publication: a blog post, a vendor table, an
issue's benchmark), the fit without its rows predicts them, the family or engine that then has no
rows being taken from the nearest fitted one as a prediction would (:func:`llm_cost.perf.choose.resolve`).
Those held-out residuals, by the prediction's situation (fitted, combined, transferred) and regime
(decode at batch <= 8, decode above, prefill), give the error bands at their 10th and 90th
percentiles; each source's rows are checked against the bands of the other sources' residuals, so
the band's coverage is measured, not assumed.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import field
from typing import Any, Literal

from llm_cost.analyses.measurements import (
    Measurement,
    category,
    check_distinct,
    load_measurements,
    measurements_dir,
    shipped_files,
    steps_of,
)
from llm_cost.core.errors import InputError
from llm_cost.core.records import record
from llm_cost.core.serialize import Result
from llm_cost.core.types import DTYPE_BITS, Engine, OpKind, OpRole, Phase
from llm_cost.perf.calibrated import (
    DEFAULT_SMS,
    attention_terms,
    collective_time,
    fixed_time,
    gemm_shape_factor,
    gemm_terms,
    grouped_gemm_factor,
    kv_efficiency,
    latency_hops,
    moe_layers,
    other_terms,
    regime_of,
    routed_load,
    smooth_max,
    weight_format,
    width_class,
)
from llm_cost.perf.choose import resolve
from llm_cost.perf.eras import EngineBlock, block_of, current_block, engine_of_block
from llm_cost.perf.families import KernelFamily, family_of
from llm_cost.perf.kernels import SPLIT_KV_ENGINES, attention_blocks
from llm_cost.perf.profile import ENGINE_PARAMETERS, FAMILY_PARAMETERS, Regime, RegimeBand, Situation
from llm_cost.perf.timemodel import DEFAULT_NETWORK_GB_S, EfficiencyEstimate, RooflineBound, host_gpus, link_of
from llm_cost.specs.declare import to_data
from llm_cost.specs.load import load_gpu
from llm_cost.specs.schema import HardwareSpec
from llm_cost.workload.step import Step

__all__ = [
    "FIT_INSTALL_HINT",
    "FAMILIES",
    "ENGINES",
    "PRIOR_WEIGHT",
    "Features",
    "features_of",
    "predict",
    "Fit",
    "fit",
    "HeldOut",
    "held_out",
    "bands_of",
    "weighted_percentile",
    "source_weights",
    "SourceRow",
    "by_source",
    "RowResult",
    "row_results",
    "shipped_rows",
    "measurements_dir",
    "priors",
    "fit_file",
    "stored_fit",
    "Validation",
    "validation",
    "UserCalibration",
    "calibrate_files",
    "profile_yaml",
    "write_profile",
]

FIT_INSTALL_HINT = "fitting needs numpy and scipy: pip install 'llm-cost[fit]'"
#: ``validate`` predicts from the stored folds and refits nothing: numpy alone.
VALIDATE_INSTALL_HINT = "validate needs numpy (it predicts from the stored fits: no refit, no scipy): pip install numpy"
#: Every family and engine block (an engine's current release, or an earlier one fitted apart:
#: :mod:`llm_cost.perf.eras`), in the order of the parameter matrices' rows.
FAMILIES: tuple[KernelFamily, ...] = tuple(KernelFamily)
ENGINES: tuple[EngineBlock, ...] = tuple(EngineBlock)
#: Weight of each parameter's pull towards its prior, against one row's log residual: a parameter
#: moved across half its range costs as much as one row predicted e (2.7x) off. Weak beside a few
#: rows that determine it; decisive for one that no row moves.
PRIOR_WEIGHT = 1.0
#: Held-out residuals a band needs: rows and sources (fewer: the band of a wider situation or regime).
BAND_MIN_ROWS = 10
BAND_MIN_SOURCES = 3


def _np(hint: str = FIT_INSTALL_HINT) -> Any:
    """numpy, or InputError with ``hint`` (how to install what the asking command needs)."""
    try:
        import numpy as np
    except ImportError:
        raise InputError(hint) from None
    return np


@record
class Features:
    """Rows' operators as flat arrays (numpy): what the time model's formulas read, without any
    parameter, built once per set of rows. Per row: its family and engine indexes (into
    :data:`FAMILIES`, :data:`ENGINES`; -1 for a GPU without a family), layers, MoE layers and
    sequences, and whether it is a prefill (its measured time is a time to first token: the step plus
    the engine's request overhead). Per GEMM / attention / other / collective operator: its row and figures."""

    n: int
    family: Any
    engine: Any
    prefill: Any
    layers: Any
    moe_layers: Any
    sequences: Any
    gemm: dict[str, Any]
    attn: dict[str, Any]
    other: dict[str, Any]
    coll: dict[str, Any]


_GEMM = ("row", "shaped", "w", "act", "peak", "bw", "width", "fmt", "routed")
_ATTN = ("row", "flops", "read", "write", "x", "x_sat_sms", "peak16", "bw")
_OTHER = ("row", "flops", "bytes", "peak16", "bw")
_COLL = ("row", "calls", "bytes", "link", "hops")
_WIDTHS = (16, 8, 4)
_FORMATS = ("native", "int8", "int4")


def _peak16(gpu: HardwareSpec, step: Step) -> float:
    from llm_cost.core.types import Dtype

    return gpu.peak_flops(Dtype.BF16) if "bf16" in gpu.dense_tflops else gpu.peak_flops(step.compute_dtype)


def _add_ops(out: dict[str, dict[str, list]], i: int, step: Step, gpu: HardwareSpec, split_kv: bool) -> None:
    sms = gpu.sm_count or DEFAULT_SMS
    peak, peak16, bw = gpu.peak_flops(step.compute_dtype), _peak16(gpu, step), gpu.bandwidth_bytes_s
    width = _WIDTHS.index(width_class(step.compute_dtype))
    fmt = _FORMATS.index(weight_format(step.weight_bits, DTYPE_BITS[step.compute_dtype]))
    link_bytes_s = link_of(step, gpu, DEFAULT_NETWORK_GB_S)[1] * 1e9
    from llm_cost.perf.calibrated import gemm_groups

    for op in step.ops:
        if op.kind == OpKind.GEMM:
            routed = 1.0 if op.role == OpRole.ROUTED_EXPERTS else 0.0
            rows, groups = float(op.m or 1), gemm_groups(op)
            shape = (
                grouped_gemm_factor(rows, op.n, groups, sms) if routed else gemm_shape_factor(rows, op.n, groups, sms)
            )
            load = routed_load(float(op.flops), op.n, op.k, op.layers, op.ep_ranks) if routed else 1.0
            shaped, moved = float(op.flops) * shape * load, float(op.activation_bytes) * load
            values: tuple[Any, ...] = (i, shaped, op.weight_bytes, moved, peak, bw, width, fmt, routed)
            target = out["gemm"]
        elif op.kind == OpKind.ATTENTION:
            x = attention_blocks(op, sms, split_kv)
            values = (i, op.flops, op.kv_read_bytes, op.kv_write_bytes, x, sms, peak16, bw)
            target = out["attn"]
        elif op.kind == OpKind.COLLECTIVE:
            assert op.collective is not None
            values = (
                i,
                op.layers,
                op.collective.bytes_per_call,
                link_bytes_s,
                latency_hops(op.collective.ranks, host_gpus(gpu)),
            )
            target = out["coll"]
        else:
            values = (i, op.flops, op.bytes, peak16, bw)
            target = out["other"]
        for k, v in zip(target, values):
            target[k].append(float(v))


def features_of(rows: Sequence[Measurement], steps: Sequence[Step] | None = None) -> Features:
    """The :class:`Features` of ``rows`` (their steps built by :func:`step_of` unless given)."""
    np = _np()
    steps = list(steps) if steps is not None else steps_of(rows)
    out: dict[str, dict[str, list]] = {
        "gemm": {k: [] for k in _GEMM},
        "attn": {k: [] for k in _ATTN},
        "other": {k: [] for k in _OTHER},
        "coll": {k: [] for k in _COLL},
    }
    fam, eng, pre, layers, moe, seqs = [], [], [], [], [], []
    for i, (m, step) in enumerate(zip(rows, steps)):
        gpu = load_gpu(m.gpu)
        engine = m.engine_family or Engine.VLLM
        _add_ops(out, i, step, gpu, SPLIT_KV_ENGINES[engine])
        block = block_of(engine, m.engine, gpu.vendor)
        f = family_of(gpu)
        fam.append(FAMILIES.index(f) if f is not None else -1)
        eng.append(ENGINES.index(block))
        pre.append(1.0 if m.phase == Phase.PREFILL else 0.0)
        layers.append(sum(s.layers for s in step.stages))
        moe.append(sum(moe_layers(s.ops) for s in step.stages))
        seqs.append(step.sequences)
    arr = lambda d: {k: np.asarray(v, dtype=float) for k, v in d.items()}  # noqa: E731
    return Features(
        len(rows),
        np.asarray(fam, dtype=int),
        np.asarray(eng, dtype=int),
        np.asarray(pre, dtype=float),
        np.asarray(layers, dtype=float),
        np.asarray(moe, dtype=float),
        np.asarray(seqs, dtype=float),
        arr(out["gemm"]),
        arr(out["attn"]),
        arr(out["other"]),
        arr(out["coll"]),
    )


def _column(matrix: Any, names: tuple[str, ...], name: str, index: Any) -> Any:
    return matrix[index, names.index(name)]


def predict(feats: Features, fam_params: Any, eng_params: Any, fam_of_row: Any, eng_of_row: Any) -> Any:
    """Predicted seconds of every row by the formulas of :mod:`llm_cost.perf.calibrated` (the same
    functions, on arrays). ``fam_params`` [families x family parameters] and ``eng_params`` [engines
    x engine parameters] in :data:`FAMILIES` / :data:`ENGINES` order; ``fam_of_row`` /
    ``eng_of_row``: the family and engine whose parameters time each row (its own, or the one
    standing in for it)."""
    np = _np()
    fn, en = tuple(FAMILY_PARAMETERS), tuple(ENGINE_PARAMETERS)
    F = lambda name, rows: _column(fam_params, fn, name, fam_of_row[rows])  # noqa: E731
    E = lambda name, rows: _column(eng_params, en, name, eng_of_row[rows])  # noqa: E731
    all_rows = np.arange(feats.n)
    e_row = {
        k: E(k, all_rows)
        for k in ("layer_overhead_s", "moe_layer_overhead_s", "step_overhead_s", "sequence_overhead_s")
    }
    total = fixed_time(feats.layers, feats.moe_layers, 1.0, feats.sequences, e_row)
    total = total + feats.prefill * E("request_overhead_s", all_rows)  # a prefill row is a time to first token
    g = feats.gemm
    if g["row"].size:
        r = g["row"].astype(int)
        widths = np.stack([F(f"gemm_efficiency_{w}", r) for w in _WIDTHS])
        e_gemm = widths[g["width"].astype(int), np.arange(r.size)]
        shares = np.stack([np.ones(r.size), E("int8_bandwidth_share", r), E("int4_bandwidth_share", r)])
        fmt_share = shares[g["fmt"].astype(int), np.arange(r.size)]
        moe_share = 1.0 + g["routed"] * (E("moe_gemm_share", r) - 1.0)
        c, m = gemm_terms(
            g["shaped"], g["w"], g["act"], g["peak"], g["bw"], e_gemm, F("bandwidth_efficiency", r),
            fmt_share * E("stream_share", r), moe_share,
        )  # fmt: skip
        total = total + np.bincount(r, smooth_max(c, m, F("overlap_p", r)), feats.n)
    a = feats.attn
    if a["row"].size:
        r = a["row"].astype(int)
        e_kv = kv_efficiency(a["x"], F("kv_efficiency_max", r), F("kv_saturation_blocks_per_sm", r) * a["x_sat_sms"])
        c, m = attention_terms(
            a["flops"],
            a["read"],
            a["write"],
            a["x"],
            a["peak16"],
            a["bw"],
            F("flash_efficiency", r),
            e_kv,
            F("bandwidth_efficiency", r),
        )
        total = total + np.bincount(r, smooth_max(c, m, F("overlap_p", r)), feats.n)
    o = feats.other
    if o["row"].size:
        r = o["row"].astype(int)
        c, m = other_terms(
            o["flops"], o["bytes"], o["peak16"], o["bw"], F("gemm_efficiency_16", r), F("bandwidth_efficiency", r)
        )
        total = total + np.bincount(r, smooth_max(c, m, F("overlap_p", r)), feats.n)
    k = feats.coll
    if k["row"].size:
        r = k["row"].astype(int)
        latency = F("collective_latency_s", r) * E("collective_latency_share", r)
        t = collective_time(k["calls"], k["bytes"], k["link"], latency, F("link_efficiency", r), k["hops"])
        total = total + np.bincount(r, t, feats.n)
    return total


def priors() -> tuple[Any, Any]:
    """The parameter matrices at every parameter's prior."""
    np = _np()
    f = np.asarray([[p.prior for p in FAMILY_PARAMETERS.values()]] * len(FAMILIES))
    e = np.asarray([[p.prior for p in ENGINE_PARAMETERS.values()]] * len(ENGINES))
    return f, e


@record
class Fit:
    """Parameters fitted on some rows: the matrices (every family and engine; those without rows at
    their priors), which families, engines and (family, engine) pairs had rows, the parameters that
    ended at a bound, and those no row moved."""

    families: Any
    engines: Any
    fitted_families: tuple[int, ...]
    fitted_engines: tuple[int, ...]
    pairs: frozenset[tuple[int, int]]
    at_bounds: dict[str, list[str]] = field(default_factory=dict)  # "family:hopper" -> parameter names
    fixed: dict[str, list[str]] = field(default_factory=dict)


#: A parameter within this share of its range from a bound is reported at the bound.
AT_BOUND = 1e-3
#: A parameter whose full range moves the rows' residuals by less than this (norm) is undetermined.
UNDETERMINED = 0.02


def source_weights(rows: Sequence[Measurement]) -> Any:
    """Each row's weight in a fit: 1 / sqrt(its source's rows). A source of 56 rows weighs about 7
    one-row sources, not 56: its rows share a setup and its bias, so they are less than 56
    independent measurements, yet more than one."""
    from collections import Counter

    np = _np()
    count = Counter(m.source for m in rows)
    return np.asarray([count[m.source] ** -0.5 for m in rows])


def fit(
    feats: Features,
    measured: Any,
    mask: Any,
    start: Fit | None = None,
    center: Fit | None = None,
    weights: Any = None,
) -> Fit:
    """Parameters minimising the log residuals of the rows in ``mask`` (each times the square root
    of its weight: :func:`source_weights`; default all 1) and the pull towards ``center``'s values
    (default: every parameter's prior; module docstring), from ``start`` (or the priors). InputError
    without scipy."""
    np = _np()
    try:
        from scipy.optimize import least_squares
    except ImportError:
        raise InputError(FIT_INSTALL_HINT) from None
    fams = tuple(sorted({int(f) for f in feats.family[mask] if f >= 0}))
    engs = tuple(sorted({int(e) for e in feats.engine[mask]}))
    pairs = frozenset((int(f), int(e)) for f, e in zip(feats.family[mask], feats.engine[mask]) if f >= 0)
    fp, ep = (start.families.copy(), start.engines.copy()) if start is not None else priors()
    fspec, espec = list(FAMILY_PARAMETERS.values()), list(ENGINE_PARAMETERS.values())
    lo = np.asarray([p.lower for _ in fams for p in fspec] + [p.lower for _ in engs for p in espec])
    hi = np.asarray([p.upper for _ in fams for p in fspec] + [p.upper for _ in engs for p in espec])
    if center is None:
        prior = np.asarray([p.prior for _ in fams for p in fspec] + [p.prior for _ in engs for p in espec])
    else:
        prior = np.concatenate([center.families[list(fams)].ravel(), center.engines[list(engs)].ravel()])
    span = hi - lo
    nf, ne = len(fspec), len(espec)
    fam_rows, eng_rows = feats.family.clip(0), feats.engine

    def matrices(u: Any) -> tuple[Any, Any]:
        theta = lo + span * u
        f, e = fp.copy(), ep.copy()
        for j, fi in enumerate(fams):
            f[fi] = theta[j * nf : (j + 1) * nf]
        off = len(fams) * nf
        for j, ei in enumerate(engs):
            e[ei] = theta[off + j * ne : off + (j + 1) * ne]
        return f, e

    root = np.sqrt(weights[mask]) if weights is not None else 1.0

    def residuals(u: Any) -> Any:
        f, e = matrices(u)
        data = root * np.log(predict(feats, f, e, fam_rows, eng_rows)[mask] / measured[mask])
        return np.concatenate([data, PRIOR_WEIGHT * (u - (prior - lo) / span) * 2.0])

    current = np.concatenate([fp[list(fams)].ravel(), ep[list(engs)].ravel()])
    u0 = np.clip((current - lo) / span, 1e-6, 1 - 1e-6)
    result = least_squares(residuals, u0, bounds=(0.0, 1.0), method="trf", x_scale="jac")
    f, e = matrices(result.x)
    names = [f"family:{FAMILIES[fi].value}" for fi in fams for _ in fspec] + [
        f"engine:{ENGINES[ei].value}" for ei in engs for _ in espec
    ]
    params = [n for _ in fams for n in FAMILY_PARAMETERS] + [n for _ in engs for n in ENGINE_PARAMETERS]
    data_jac = result.jac[: int(mask.sum())]
    at_bounds: dict[str, list[str]] = {}
    fixed: dict[str, list[str]] = {}
    for j, (owner, name) in enumerate(zip(names, params)):
        if result.x[j] < AT_BOUND or result.x[j] > 1 - AT_BOUND:
            at_bounds.setdefault(owner, []).append(name)
        elif float(np.linalg.norm(data_jac[:, j])) < UNDETERMINED:
            fixed.setdefault(owner, []).append(name)
    return Fit(f, e, fams, engs, pairs, at_bounds, fixed)


@record
class HeldOut:
    """Every row predicted by the fit without its source: its seconds, the situation of that
    prediction (what the fold had of its family and engine) and the fold's fit."""

    predicted_s: Any
    situation: list[Situation]
    folds: dict[str, Fit]


def _resolved(
    feats: Features, rows: Sequence[Measurement], index: Sequence[int], f: Fit
) -> tuple[Any, Any, list[Situation]]:
    """For the rows ``index``: the family and engine whose parameters time each under fit ``f``
    (:func:`llm_cost.perf.choose.resolve`), and its situation."""
    fams, engs, sits = [], [], []
    fitted_f = {FAMILIES[i] for i in f.fitted_families}
    fitted_e = {ENGINES[i] for i in f.fitted_engines}
    pairs = {(FAMILIES[a], ENGINES[b]) for a, b in f.pairs}
    for i in index:
        gpu = load_gpu(rows[i].gpu)
        engine = ENGINES[int(feats.engine[i])]
        sf, se, sit = resolve(gpu, engine, fitted_f, fitted_e, pairs)
        fams.append(FAMILIES.index(sf))
        engs.append(ENGINES.index(se))
        sits.append(sit)
    return fams, engs, sits


def held_out(
    rows: Sequence[Measurement],
    feats: Features,
    measured: Any,
    whole: Fit,
    folds: dict[str, Fit] | None = None,
    weights: Any = None,
) -> HeldOut:
    """Each source's rows predicted by the fit without them (refitted from ``whole``, with the
    rows' ``weights``, unless ``folds`` gives them: the shipped file's folds, checked without
    scipy). No fold fits a ``check_only`` row (:func:`fittable`): a check-only source's fold is
    ``whole``."""
    np = _np()
    sources = sorted({m.source for m in rows})
    out = np.zeros(feats.n)
    situation: list[Situation] = [Situation.FITTED] * feats.n
    made = {}
    usable = fittable(rows)
    for s in sources:
        mask = usable & np.asarray([m.source != s for m in rows])
        if folds is not None:
            f = folds[s]
        else:
            f = fit(feats, measured, mask, whole, weights=weights) if (mask != usable).any() else whole
        made[s] = f
        index = [i for i, m in enumerate(rows) if m.source == s]
        fam, eng, sits = _resolved(feats, rows, index, f)
        fam_rows, eng_rows = feats.family.clip(0).copy(), feats.engine.copy()
        fam_rows[index], eng_rows[index] = fam, eng
        seconds = predict(feats, f.families, f.engines, fam_rows, eng_rows)
        out[index] = seconds[index]
        for i, sit in zip(index, sits):
            situation[i] = sit
    return HeldOut(out, situation, made)


def fittable(rows: Sequence[Measurement]) -> Any:
    """The rows a fit may use: a boolean array, False for ``check_only`` rows (validated only:
    :mod:`llm_cost.analyses.measurements`)."""
    return _np().asarray([m.check_only is None for m in rows])


def weighted_percentile(values: Sequence[float], weights: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0-100) of ``values`` with ``weights``: the least value whose
    cumulative weight reaches q% of the total, interpolated linearly between the midpoints of
    neighbouring weights (with equal weights: numpy's default percentile)."""
    np = _np()
    order = np.argsort(values)
    v, w = np.asarray(values, dtype=float)[order], np.asarray(weights, dtype=float)[order]
    mid = (np.cumsum(w) - w / 2) / w.sum()
    return float(np.interp(q / 100, mid, v))


def _band(rows: Sequence[Measurement], ratios: list[float], situation: Situation, regime: Regime) -> RegimeBand:
    """A band from held-out ``ratios`` (measured / predicted) of ``rows``, each source weighing the
    same (a row weighs 1 / its source's rows here): a source the fit never saw brings its own bias,
    so the spread between sources, not the count of one source's rows, is what a new one meets."""
    from collections import Counter

    count = Counter(m.source for m in rows)
    weights = [1 / count[m.source] for m in rows]
    low, high = weighted_percentile(ratios, weights, 10), weighted_percentile(ratios, weights, 90)
    n_sources = len(count)
    return RegimeBand(
        situation=situation,
        regime=regime,
        low=round(min(low, 1.0), 4),
        high=round(max(high, 1.0), 4),
        rows=len(ratios),
        sources=n_sources,
    )


def bands_of(rows: Sequence[Measurement], ratio: Sequence[float], situation: Sequence[Situation]) -> list[RegimeBand]:
    """The error bands: measured / predicted of held-out rows at the 10th / 90th percentiles, for
    each situation and regime with at least :data:`BAND_MIN_ROWS` rows of :data:`BAND_MIN_SOURCES`
    sources, and over all regimes of the situation; a situation short of rows takes the residuals of
    the next wider one (fitted -> combined -> transferred), and the transferred band over all
    regimes is always given (from every held-out row if it has too few)."""
    order = (Situation.FITTED, Situation.COMBINED, Situation.TRANSFERRED)
    regimes = [regime_of(m.phase == Phase.PREFILL, m.batch) for m in rows]
    out = []
    for k, sit in enumerate(order):
        wider = set(order[k:])
        for regime in (Regime.DECODE_SMALL, Regime.DECODE_LARGE, Regime.PREFILL, Regime.ALL):
            for pool in ({sit}, wider):
                picked = [
                    i
                    for i, own in enumerate(regimes)
                    if situation[i] in pool and (regime is Regime.ALL or own is regime)
                ]
                n_sources = len({rows[i].source for i in picked})
                if len(picked) >= BAND_MIN_ROWS and n_sources >= BAND_MIN_SOURCES:
                    out.append(_band([rows[i] for i in picked], [ratio[i] for i in picked], sit, regime))
                    break
    if not any(b.situation is Situation.TRANSFERRED and b.regime is Regime.ALL for b in out):
        out.append(_band(rows, list(ratio), Situation.TRANSFERRED, Regime.ALL))
    return out


def _inside(ratio: float, bands: list[RegimeBand], situation: Situation, m: Measurement) -> bool:
    from llm_cost.perf.calibrated import _chosen_band

    chosen = _chosen_band(tuple(bands), situation, regime_of(m.phase == Phase.PREFILL, m.batch))
    return chosen is not None and chosen.low <= ratio <= chosen.high


@record
class SourceRow:
    """One source out of sample: its rows predicted by the fit without it. ``in_band``: its rows
    inside the band drawn from the OTHER sources' held-out residuals (nested: the coverage a user
    would see on a source the project never had). ``check_only``: the reason no fit uses the
    source's rows (None: the whole fit and the other sources' folds use them)."""

    source: str
    files: tuple[str, ...]
    engine: str
    engine_versions: tuple[str, ...]
    gpus: tuple[str, ...]
    situation: str
    rows: int
    median: float
    max: float
    within_10pct: int
    in_band: int
    check_only: str | None = None


def by_source(rows: Sequence[Measurement], ratio: Sequence[float], situation: Sequence[Situation]) -> list[SourceRow]:
    """:class:`SourceRow` of every source, in source order (module docstring)."""
    out = []
    for s in sorted({m.source for m in rows}):
        mine = [i for i, m in enumerate(rows) if m.source == s]
        others = [i for i, m in enumerate(rows) if m.source != s]
        bands = bands_of([rows[i] for i in others], [ratio[i] for i in others], [situation[i] for i in others])
        errors = [abs(1 / ratio[i] - 1) for i in mine]
        sits = sorted({str(situation[i]) for i in mine})
        out.append(
            SourceRow(
                s,
                tuple(sorted({rows[i].file for i in mine})),
                str(rows[mine[0]].engine_family),
                tuple(sorted({rows[i].engine for i in mine})),
                tuple(sorted({load_gpu(rows[i].gpu).name for i in mine})),
                "/".join(sits),
                len(mine),
                statistics.median(errors),
                max(errors),
                sum(e <= 0.1 for e in errors),
                sum(_inside(ratio[i], bands, situation[i], rows[i]) for i in mine),
                rows[mine[0]].check_only,
            )
        )
    return out


@record
class RowResult:
    """One measurement beside its held-out prediction (the fit without its source), the Roofline
    bound and the MFU/MBU estimate, seconds; errors are predicted / measured - 1."""

    id: str
    source: str
    category: str
    model: str
    gpu: str
    engine: str
    phase: Phase
    batch: int
    context: int
    tp: int
    weights: str
    situation: str
    measured_s: float
    predicted_s: float
    bound_s: float
    estimate_s: float
    error: float
    bound_error: float
    estimate_error: float


def row_results(
    rows: Sequence[Measurement], steps: Sequence[Step], predicted: Sequence[float], situation: Sequence[Situation]
) -> list[RowResult]:
    """Every row beside its held-out prediction, bound and estimate."""
    out = []
    for m, step, t_pred, sit in zip(rows, steps, predicted, situation):
        gpu = load_gpu(m.gpu)
        t = m.measured_ms / 1e3
        bound = RooflineBound().step_time(step, gpu, operators=False).time_s
        estimate = EfficiencyEstimate().step_time(step, gpu, operators=False).time_s
        out.append(
            RowResult(
                m.id,
                m.source,
                category(m),
                step.model,
                gpu.name,
                str(m.engine_family),
                Phase(m.phase),
                m.batch,
                m.context,
                m.tp,
                m.weights_dtype + (f" g{m.group_size}" if m.group_size else ""),
                str(sit),
                t,
                float(t_pred),
                bound,
                estimate,
                float(t_pred) / t - 1,
                bound / t - 1,
                estimate / t - 1,
            )
        )
    return out


def shipped_rows() -> list[Measurement]:
    """Every shipped step-time row (checked distinct), in file order."""
    rows = load_measurements(shipped_files())
    check_distinct(rows)
    return rows


def _params(matrix: Any, names: tuple[str, ...], i: int) -> dict[str, float]:
    return {k: float(f"{v:.4g}") for k, v in zip(names, matrix[i])}


def _span(values: list[int]) -> list[int]:
    return [min(values), max(values)]


def _block(rows: list[Measurement]) -> dict[str, Any]:
    return {
        "rows": len(rows),
        "sources": sorted({m.source for m in rows}),
        "batch": _span([m.batch for m in rows]),
        "context": _span([m.context for m in rows]),
    }


def _fit_block(whole: Fit, owner: str, names: tuple[str, ...], why: str) -> dict[str, Any]:
    return {
        "at_bounds": whole.at_bounds.get(owner, []),
        "fixed": {k: why for k in whole.fixed.get(owner, [])},
    }


def fit_file(rows: list[Measurement], written_by: str) -> dict[str, Any]:
    """The shipped fit file's data (:data:`llm_cost.perf.profile.FIT_FILE`) from ``rows``: the whole
    fit, each source's fold, the bands and the per-source table (module docstring). Minutes of CPU:
    a fit per source."""
    np = _np()
    steps = steps_of(rows)
    feats = features_of(rows, steps)
    measured = np.asarray([m.measured_ms / 1e3 for m in rows])
    weights = source_weights(rows)
    usable = fittable(rows)
    whole = fit(feats, measured, usable, weights=weights)
    ho = held_out(rows, feats, measured, whole, weights=weights)
    fn, en = tuple(FAMILY_PARAMETERS), tuple(ENGINE_PARAMETERS)
    why = "no row moves it: at its prior"
    families = {}
    for i in whole.fitted_families:
        mine = [m for m, f, u in zip(rows, feats.family, usable) if f == i and u]
        owner = f"family:{FAMILIES[i].value}"
        families[FAMILIES[i].value] = (
            {"parameters": _params(whole.families, fn, i)} | _block(mine) | _fit_block(whole, owner, fn, why)
        )
    engines = {}
    for i in whole.fitted_engines:
        mine = [m for m, e, u in zip(rows, feats.engine, usable) if e == i and u]
        owner = f"engine:{ENGINES[i].value}"
        engines[ENGINES[i].value] = (
            {"parameters": _params(whole.engines, en, i)}
            | _block(mine)
            | {
                "versions": sorted({m.engine for m in mine}),
                "decode_split_kv": SPLIT_KV_ENGINES[engine_of_block(ENGINES[i])],
            }
            | _fit_block(whole, owner, en, why)
        )
    pairs = {
        f"{FAMILIES[f].value}/{ENGINES[e].value}": _block(
            [m for m, a, b, u in zip(rows, feats.family, feats.engine, usable) if a == f and b == e and u]
        )
        for f, e in sorted(whole.pairs)
    }
    folds = {
        s: {
            "families": {FAMILIES[i].value: _params(f.families, fn, i) for i in f.fitted_families},
            "engines": {ENGINES[i].value: _params(f.engines, en, i) for i in f.fitted_engines},
        }
        for s, f in ho.folds.items()
    }
    data = {
        "written_by": written_by,
        "files": sorted({m.file for m in rows}),
        "rows": len(rows),
        "families": families,
        "engines": engines,
        "pairs": pairs,
        "folds": folds,
    }
    # the table and bands from the folds as stored (rounded to 4 digits), as validate reads them
    stored = held_out(rows, feats, measured, stored_fit(data), {s: stored_fit(data, s) for s in folds})
    ratio = [float(x) for x in measured / stored.predicted_s]
    table = by_source(rows, ratio, stored.situation)
    errors = [abs(1 / r - 1) for r in ratio]
    data["out_of_source"] = {
        "rows": len(rows),
        "sources": len(table),
        "median": round(statistics.median(errors), 6),  # printed to 0.1%: no double rounding
        "in_band": sum(t.in_band for t in table),
    }
    data["bands"] = [to_data(b) for b in bands_of(rows, ratio, stored.situation)]
    data["by_source"] = [to_data(t) for t in table]
    return data


def stored_fit(data: dict[str, Any], source: str | None = None) -> Fit:
    """The shipped fit file's whole fit (``source`` None) or its fold without ``source``, as a
    :class:`Fit` (parameter matrices at their priors where the fit had no rows)."""
    np = _np()
    fp, ep = priors()
    block = data["folds"][source] if source is not None else None
    families = block["families"] if block is not None else {k: v["parameters"] for k, v in data["families"].items()}
    engines = block["engines"] if block is not None else {k: v["parameters"] for k, v in data["engines"].items()}
    for name, params in families.items():
        fp[FAMILIES.index(KernelFamily(name))] = np.asarray([params[k] for k in FAMILY_PARAMETERS])
    for name, params in engines.items():
        ep[ENGINES.index(EngineBlock(name))] = np.asarray([params[k] for k in ENGINE_PARAMETERS])
    pairs = frozenset(
        (FAMILIES.index(KernelFamily(p.split("/")[0])), ENGINES.index(EngineBlock(p.split("/")[1])))
        for p, v in data["pairs"].items()
        if source is None or set(v["sources"]) - {source}
    )
    fams = tuple(sorted(FAMILIES.index(KernelFamily(f)) for f in families))
    engs = tuple(sorted(ENGINES.index(EngineBlock(e)) for e in engines))
    return Fit(fp, ep, fams, engs, pairs)


@record
class Validation(Result):
    """``llm-cost validate``: the shipped fit checked leave-one-source-out on the shipped rows (each
    source predicted by the fit without it: :func:`held_out`), per source (:class:`SourceRow`), with
    the bands those held-out errors give, the parameters the whole fit left at a bound, and every
    row (``profile`` given: the rows of that profile's family and engine)."""

    rows: int
    sources: int
    median: float
    within_10pct: int
    in_band: int
    by_source: list[SourceRow]
    bands: list[RegimeBand]
    at_bounds: dict[str, list[str]]
    results: list[RowResult]
    profile: str | None = None
    method: str = "leave-one-source-out"


def validation(profile_name: str | None = None, own: Any = None) -> Validation:
    """The shipped fit's leave-one-source-out check (:class:`Validation`), from its stored folds
    (no fit: numpy only); ``profile_name`` (a shipped ``<family>-<engine>``) keeps the rows of that
    family and engine in ``results``; ``own`` (a user's profile, e.g. from ``llm-cost calibrate``)
    predicts the shipped rows of its family and engine itself, out of sample, in ``results``."""
    from llm_cost.perf.profile import fit_data

    np = _np(VALIDATE_INSTALL_HINT)
    data = fit_data()
    rows = shipped_rows()
    steps = steps_of(rows)
    feats = features_of(rows, steps)
    measured = np.asarray([m.measured_ms / 1e3 for m in rows])
    folds = {s: stored_fit(data, s) for s in data["folds"]}
    ho = held_out(rows, feats, measured, stored_fit(data), folds)
    ratio = [float(x) for x in measured / ho.predicted_s]
    table = by_source(rows, ratio, ho.situation)
    results = row_results(rows, steps, list(ho.predicted_s), ho.situation)
    if own is not None:
        return _own_validation(own, rows, steps, table, data, results)
    if profile_name is not None:
        keep = {
            f"{FAMILIES[int(f)].value}-{ENGINES[int(e)].value}" if f >= 0 else ""
            for f, e in zip(feats.family, feats.engine)
        }
        if profile_name not in keep:
            raise InputError(
                f"profile: no shipped rows of {profile_name!r}; profiles with rows: {', '.join(sorted(keep - {''}))}",
                fields=("profile",),
            )
        results = [
            r for r, f, e in zip(results, feats.family, feats.engine)
            if f >= 0 and f"{FAMILIES[int(f)].value}-{ENGINES[int(e)].value}" == profile_name
        ]  # fmt: skip
    errors = [abs(1 / r - 1) for r in ratio]
    bounds = {f"family {k}": v["at_bounds"] for k, v in data["families"].items() if v["at_bounds"]} | {
        f"engine {k}": v["at_bounds"] for k, v in data["engines"].items() if v["at_bounds"]
    }
    return Validation(
        len(rows),
        len(table),
        statistics.median(errors),
        sum(e <= 0.1 for e in errors),
        sum(t.in_band for t in table),
        table,
        [RegimeBand(**b) for b in data["bands"]],
        bounds,
        results,
        profile_name,
    )


def _own_validation(
    own: Any,
    rows: list[Measurement],
    steps: list[Step],
    table: list[SourceRow],
    data: dict[str, Any],
    shipped: list[RowResult],
) -> Validation:
    """:func:`validation` of a user's profile: the shipped rows of its family and engine predicted by
    it, each out of sample unless the profile lists the row's source among those it was fitted on
    (``sources``): a new user's profile calibrated on the shipped H200 file was reported "out of
    sample" at 3.0% on the very rows it was fitted on. ``method`` says which the rows are."""
    from dataclasses import replace

    from llm_cost.perf.calibrated import CalibratedModel

    model = CalibratedModel(own)
    mine = [
        (m, step, r) for m, step, r in zip(rows, steps, shipped)
        if _family_name(m) == own.family and m.engine_family == own.engine
    ]  # fmt: skip
    if not mine:
        raise InputError(
            f"profile: no shipped rows of the {own.family} family under {own.engine} to check {own.name} on",
            fields=("profile",),
        )
    results, fitted = [], set(getattr(own, "sources", ()) or ())
    for m, step, r in mine:
        t = model.step_time(step, load_gpu(m.gpu), operators=False).time_s
        if m.phase == Phase.PREFILL:
            t += own.parameters.engine.request_overhead_s
        measured = m.measured_ms / 1e3
        situation = "in sample" if r.source in fitted else "out of sample"
        results.append(replace(r, predicted_s=t, error=t / measured - 1, situation=situation))
    errors = [abs(r.error) for r in results]
    inside = sum(r.situation == "in sample" for r in results)
    method = "out of sample" if not inside else "in sample" if inside == len(results) else f"{inside} rows in sample"
    return Validation(
        len(results), len({r.source for r in results}), statistics.median(errors), sum(e <= 0.1 for e in errors),
        0, [], [RegimeBand(**b) for b in data["bands"]], {}, results, own.name, method,
    )  # fmt: skip


@record
class UserCalibration(Result):
    """``llm-cost calibrate``: a profile fitted to a user's measurements of one GPU family and one
    engine, pulled towards the shipped fit's parameters of that family and engine (or the priors),
    and its rows predicted held out (``method``: leave-one-source-out when the files hold two or
    more sources, else leave-one-row-out, which says less), with their median error; ``out``, the
    file the profile went to."""

    profile: Any
    results: list[RowResult]
    method: str
    median: float
    out: str | None = None


def _one_family(rows: Sequence[Measurement]) -> KernelFamily:
    found = {family_of(load_gpu(m.gpu)) for m in rows}
    if None in found or len(found) != 1:
        names = sorted({load_gpu(m.gpu).name for m in rows})
        raise InputError(
            f"gpu: the rows name {', '.join(names)}, GPUs of "
            + ("no known kernel family" if None in found else f"{len(found)} kernel families")
            + "; a profile is for the GPUs of one family (llm_cost.perf.families)",
            fields=("gpu",),
        )
    return next(iter(found))  # type: ignore[return-value]


def _family_name(m: Measurement) -> str | None:
    """The kernel family of a row's GPU (None: a GPU of no family)."""
    family = family_of(load_gpu(m.gpu))
    return None if family is None else family.value


def _user_rows(paths: Sequence[Any], engine: Engine | None) -> tuple[list[Measurement], Engine]:
    from dataclasses import replace

    rows = load_measurements(paths)
    check_distinct(rows)
    declared = {m.engine_family for m in rows if m.engine_family is not None}
    if engine is None and len(declared) != 1:
        raise InputError(
            "engine: "
            + (
                "the files declare engines " + ", ".join(sorted(e.value for e in declared))
                if declared
                else "the files do not say their engine (a YAML file's engine_family)"
            )
            + f"; give engine, one of {', '.join(e.value for e in Engine)}",
            fields=("engine",),
        )
    chosen = engine if engine is not None else next(iter(declared))
    return [replace(m, engine_family=chosen) for m in rows], chosen


def _below_bound(rows: Sequence[Measurement], steps: Sequence[Step]) -> None:
    below = []
    for m, step in zip(rows, steps):
        bound = RooflineBound().step_time(step, load_gpu(m.gpu), operators=False).time_s
        if m.measured_ms / 1e3 < bound:
            below.append(f"{m.id} ({m.measured_ms:g} ms < bound {bound * 1e3:.3g} ms)")
    if below:
        raise InputError(
            "measured faster than the Roofline bound allows (a wrong GPU, model, dtype or unit?): "
            + ", ".join(below[:5])
            + (f" and {len(below) - 5} more" if len(below) > 5 else "")
        )


def slowest() -> tuple[Any, Any]:
    """The slowest parameters within the bounds: the least shares and overlap, the longest fixed
    times, the most blocks to saturate (a row measured slower than they predict is one no profile
    can fit: a wrong unit, a stalled step)."""
    np = _np()

    def worst(name: str, p: Any) -> float:
        return p.upper if name.endswith("_s") or name == "kv_saturation_blocks_per_sm" else p.lower

    f = np.asarray([[worst(k, p) for k, p in FAMILY_PARAMETERS.items()]] * len(FAMILIES))
    e = np.asarray([[worst(k, p) for k, p in ENGINE_PARAMETERS.items()]] * len(ENGINES))
    return f, e


def _beyond_slowest(rows: Sequence[Measurement], feats: Features) -> None:
    f, e = slowest()
    limit = predict(feats, f, e, feats.family.clip(0), feats.engine)
    over = [f"{m.id} ({m.measured_ms:g} ms > {t * 1e3:.3g} ms)" for m, t in zip(rows, limit) if m.measured_ms / 1e3 > t]
    if over:
        raise InputError(
            "measured slower than any profile within the parameters' bounds predicts (a wrong unit, or a stalled "
            "step?): " + ", ".join(over[:5]) + (f" and {len(over) - 5} more" if len(over) > 5 else "")
        )


def calibrate_files(
    paths: Sequence[Any], name: str, engine: Engine | None = None, split_kv: bool | None = None
) -> UserCalibration:
    """Fit a profile named ``name`` to the measurement files (one kernel family, one engine:
    ``engine`` or the files' ``engine_family``), pulled towards the shipped fit of that family and
    engine; its rows predicted held out (:class:`UserCalibration`). ``split_kv``: whether the
    engine's decode attention splits the KV cache (default: the engine's, :data:`SPLIT_KV_ENGINES`).
    InputError for rows of several families or engines, rows faster than the bound, or fewer than
    3 rows."""
    from dataclasses import replace

    from llm_cost.perf.profile import Profile, SourceError, fit_data, join

    np = _np()
    rows, chosen = _user_rows(paths, engine)
    family = _one_family(rows)
    if len(rows) < 3:
        raise InputError(f"{len(rows)} rows: a profile needs at least 3 (one is left out at a time)")
    steps = steps_of(rows)
    _below_bound(rows, steps)
    _beyond_slowest(rows, features_of(rows, steps))
    if split_kv is not None and split_kv != SPLIT_KV_ENGINES[chosen]:
        raise InputError(
            f"split_kv: {chosen.value}'s decode attention {'splits' if SPLIT_KV_ENGINES[chosen] else 'does not split'} the "
            "KV cache (llm_cost.perf.kernels.SPLIT_KV_ENGINES); give the engine whose kernels the rows ran",
            fields=("split_kv", "engine"),
        )
    by_source = len({m.source for m in rows}) >= 2
    grouped = rows if by_source else [replace(m, source=m.id) for m in rows]
    feats = features_of(grouped, steps)
    # the user's rows are the profile's engine, whatever release: its current build for the family's vendor
    feats.engine[:] = ENGINES.index(current_block(chosen, load_gpu(rows[0].gpu).vendor))
    measured = np.asarray([m.measured_ms / 1e3 for m in rows])
    shipped = stored_fit(fit_data())
    whole = fit(feats, measured, fittable(rows), shipped, shipped)
    ho = held_out(grouped, feats, measured, whole)
    ratio = [float(x) for x in measured / ho.predicted_s]
    band = _band(grouped, ratio, Situation.FITTED, Regime.ALL) if len(rows) >= BAND_MIN_ROWS else RegimeBand(
        situation=Situation.FITTED, regime=Regime.ALL, low=round(min(min(ratio), 1.0), 4),
        high=round(max(max(ratio), 1.0), 4), rows=len(rows), sources=len({m.source for m in grouped}),
    )  # fmt: skip
    fi, ei = FAMILIES.index(family), ENGINES.index(current_block(chosen, load_gpu(rows[0].gpu).vendor))
    fn, en = tuple(FAMILY_PARAMETERS), tuple(ENGINE_PARAMETERS)
    errors = [abs(1 / r - 1) for r in ratio]
    method: Literal["leave-one-source-out", "leave-one-row-out"] = (
        "leave-one-source-out" if by_source else "leave-one-row-out"
    )
    profile = Profile(
        name=name,
        family=family.value,
        engine=chosen,
        situation=Situation.FITTED,
        note=f"fitted by llm-cost calibrate on {len(rows)} rows of {', '.join(sorted({m.file for m in rows}))}, pulled towards the shipped {family.value} and {chosen.value} parameters",
        parameters=join(_params(whole.families, fn, fi), _params(whole.engines, en, ei)),
        decode_split_kv=SPLIT_KV_ENGINES[chosen],
        sources=tuple(sorted({m.source for m in rows})),
        rows=len(rows),
        engine_version="; ".join(sorted({m.engine for m in rows} - {""})),
        fitted_batch=tuple(_span([m.batch for m in rows])),
        fitted_context=tuple(_span([m.context for m in rows])),
        bands=(band,),
        out_of_source=SourceError(
            method=method,
            rows=len(rows),
            sources=len({m.source for m in grouped}),
            median=round(statistics.median(errors), 4),
            in_band=sum(band.low <= r <= band.high for r in ratio),
        ),  # fmt: skip
        at_bounds=tuple(
            whole.at_bounds.get(f"family:{family.value}", []) + whole.at_bounds.get(f"engine:{chosen.value}", [])
        ),
        source_family=family.value,
    )
    results = row_results(rows, steps, list(ho.predicted_s), ho.situation)
    return UserCalibration(profile, results, method, statistics.median(errors))


def profile_yaml(profile: Any) -> str:
    """The profile as YAML text, with a header comment."""
    import yaml

    head = (
        f"# llm-cost calibration profile {profile.name}: the {profile.family} family under {profile.engine}.\n"
        "# Parameters of llm_cost.perf.calibrated (units: llm-cost validate, or llm_cost.perf.profile.PARAMETERS).\n"
    )
    return head + yaml.safe_dump(to_data(profile, exclude_none=True), sort_keys=False, width=110)


def write_profile(result: UserCalibration, out: Any) -> UserCalibration:
    """Write the fitted profile to ``out`` (an :class:`~llm_cost.specs.files.OutFile` checked by
    :func:`~llm_cost.specs.files.check_out`) whole or not at all
    (:func:`~llm_cost.specs.files.write_file`). The result, with ``out`` set."""
    from dataclasses import replace

    from llm_cost.specs.files import write_file

    write_file(out, profile_yaml(result.profile))
    return replace(result, out=str(out.path))
