"""A decode sweep by columns: the figures of many decode steps of one context at once, each equal
to the one :func:`~llm_cost.workload.step.build_step` and the time models give that point.

For a fixed context every exact figure of a decode step's operators (FLOPs, weight, KV and
activation bytes, bytes sent) is affine in the sequences per replica b' (the operators of
seed 003 §02: a GEMM multiplies b' rows, attention reads b' caches, a collective sends b' hidden
states), except the routed experts' expected reads, float(W) x hit(T) (W the GPU's routed
weights, hit the expected fraction of experts T routed tokens reach,
:func:`~llm_cost.workload.routing.expert_hit_fraction`), and their rows per expert, T k / (E hit).
So the real steps at b' = 1, 2 and 3 give each figure's intercept and slope, a step at b' = 10^7
(where every expert is hit, hit = 1.0) the routed weights float(W), and the three probes check
that every figure follows its form exactly; a figure that does not (a form this module does not
know) makes :func:`decode_columns` answer None, and the caller times each point on its own.

Exact figures stay exact (int or Fraction, computed in Python or in int64 where no value can
overflow); each float is computed by the same operations in the same order as the per-point
path: a float of an exact figure is its correctly rounded value (NumPy's int64 to float64
conversion rounds as Python's ``float(int)``), sums run operator by operator, and every power
(the calibrated model's p-norm and KV knee) is Python's own float power, element by element. So
every row equals that point's :func:`~llm_cost.analyses.roofline.decode_step`, as a property test
checks (tests/analyses/test_decode_grid.py). NumPy (an extra: ``checkpoints`` or ``fit``) is
required; without it the caller takes the per-point path.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from llm_cost.core.choices import WeightBytes
from llm_cost.core.labels import Bound
from llm_cost.core.records import record
from llm_cost.core.types import OpKind, OpRole
from llm_cost.core.units import Number, exact
from llm_cost.model.layout import ONE_GPU, Layout
from llm_cost.perf import calibrated as cal
from llm_cost.perf.calibrated import SPLIT_KV_GAP, CalibratedModel, split_kv_notes
from llm_cost.perf.kernels import attention_blocks
from llm_cost.perf.timemodel import hop_rate, link_of
from llm_cost.specs.schema import HardwareSpec, ModelSpec
from llm_cost.workload.routing import expert_hit_fraction
from llm_cost.workload.step import Operator, Step, build_step, decode, sum_of

__all__ = ["Column", "decode_columns"]

#: Sequences per replica of the probe where every routed expert is hit (hit = 1.0 exactly).
_ALL_HIT = 10**7
#: Exact figures above this are summed in Python, not in int64.
_INT64_SAFE = 2**62

#: The operator figures a decode step's totals and time models read.
_FIGURES: dict[str, Callable[[Operator], Any]] = {
    "flops": lambda op: op.flops,
    "weight_bytes": lambda op: op.weight_bytes,
    "kv_read_bytes": lambda op: op.kv_read_bytes,
    "kv_write_bytes": lambda op: op.kv_write_bytes,
    "activation_bytes": lambda op: op.activation_bytes,
    "bytes": lambda op: op.bytes,
    "comm_bytes": lambda op: op.comm_bytes,
    "call_bytes": lambda op: op.collective.bytes_per_call if op.collective else 0,
    "m": lambda op: op.m or 1,
    "x": lambda op: (op.batch or 1) * (op.kv_heads or 1),
}


def _shape(op: Operator) -> tuple:
    """What must not change with the batch: the operator's identity and dimensions."""
    c = op.collective
    return (op.name, op.kind, op.role, op.layers, op.n, op.k, op.heads, op.kv_heads, c and (c.algorithm, c.ranks))


@record
class Column:
    """One figure of one operator over the sweep's b': ``form`` "affine" (``a`` + (b' - 1) ``d``,
    exact), "routed_weight" or "routed_bytes" (``a`` = float(W), times hit) or "routed_m"
    (T k / (E hit))."""

    form: str
    a: Number
    d: Number


def _is_exact(v: Any) -> bool:
    return type(v) is int or type(v) is Fraction


class _Context:
    """The columns of one context's operators, evaluated at the b' of its points."""

    def __init__(self, probes: list[Step], full: Step, spec: ModelSpec, layout: Layout, resident: bool) -> None:
        self.ok = True
        self.probe = probes[0]
        moe = spec.moe
        self.moe = moe
        self.routed_factor = layout.dp if layout.ep > 1 else 1
        self.resident = resident
        self.memo: dict[tuple, list[Number]] = {}
        self.hits: list[float] | None = None
        self.largest: int | None = None
        ops = [p.ops for p in probes]
        self.all_ops = ops
        self.ops = ops[0]
        self.stage_of = [i for i, stage in enumerate(probes[0].stages) for _ in stage.ops]
        if any(list(map(_shape, o)) != list(map(_shape, ops[0])) for o in [*ops[1:], full.ops]) or any(
            [len(s.ops) for s in p.stages] != [len(s.ops) for s in probes[0].stages] for p in probes[1:]
        ):
            self.ok = False
            return
        self.columns: list[dict[str, Column]] = []
        for i, op in enumerate(self.ops):
            cols: dict[str, Column] = {}
            for name, get in _FIGURES.items():
                v = [get(o[i]) for o in ops]
                col = self._classify(name, op, v, get(full.ops[i]))
                if col is None:
                    self.ok = False
                    return
                cols[name] = col
            self.columns.append(cols)

    def probe_ops(self, i: int) -> list[Operator]:
        """Operator ``i`` of the probes at b' = 1, 2 and 3."""
        return [o[i] for o in self.all_ops]

    def _hit(self, b: int) -> float:
        assert self.moe is not None
        return expert_hit_fraction(self.moe.num_experts, self.moe.num_experts_per_tok, b * self.routed_factor)

    def _routed(self, col: Column, b: int) -> Number:
        """A routed-expert figure at b', as :func:`~llm_cost.workload.step.build_step` computes it."""
        assert self.moe is not None
        if col.form == "routed_weight":
            return float(col.a) * (1.0 if self.resident else self._hit(b))
        if col.form == "routed_bytes":
            return float(col.a) * (1.0 if self.resident else self._hit(b)) + 0 + 0
        tokens = b * self.routed_factor
        return tokens * self.moe.num_experts_per_tok / (self.moe.num_experts * self._hit(b))

    def _classify(self, name: str, op: Operator, v: list[Any], full: Any) -> Column | None:
        if all(_is_exact(x) for x in v) and v[1] - v[0] == v[2] - v[1]:
            return Column("affine", v[0], v[1] - v[0])
        if op.role != OpRole.ROUTED_EXPERTS or self.moe is None or not all(type(x) is float for x in v):
            return None
        if name in ("weight_bytes", "bytes"):
            if type(full) is not float or self._hit(_ALL_HIT) != 1.0:
                return None
            col = Column("routed_weight" if name == "weight_bytes" else "routed_bytes", full, 0)
        elif name == "m":
            col = Column("routed_m", 0, 0)
        else:
            return None
        if any(self._routed(col, b) != x for b, x in zip((1, 2, 3), v)):
            return None
        return col

    def values(self, col: Column, bs: list[int], np: Any) -> list[Number]:
        """Exact (or routed float) values of ``col`` at every b' of ``bs`` (kept for the next call)."""
        key = (col.form, col.a, col.d)
        if key not in self.memo:
            self.memo[key] = self._values(col, bs, np)
        return self.memo[key]

    def top(self, bs: list[int]) -> int:
        """The largest b' of the context's points."""
        if self.largest is None:
            self.largest = max(bs)
        return self.largest

    def _values(self, col: Column, bs: list[int], np: Any) -> list[Number]:
        if col.form != "affine":
            assert self.moe is not None
            if self.hits is None:
                self.hits = [1.0 if self.resident else self._hit(b) for b in bs]
            if col.form == "routed_weight":
                w = float(col.a)
                return [w * hit for hit in self.hits]
            if col.form == "routed_bytes":
                w = float(col.a)
                return [w * hit + 0 + 0 for hit in self.hits]
            k, e, f = self.moe.num_experts_per_tok, self.moe.num_experts, self.routed_factor
            return [b * f * k / (e * self._hit(b)) for b in bs]
        a, d = col.a, col.d
        if type(a) is int and type(d) is int:
            if max(abs(a), abs(a + (self.top(bs) - 1) * d)) < _INT64_SAFE and abs(d) < _INT64_SAFE:
                return list((a + (np.asarray(bs, dtype=np.int64) - 1) * d).tolist())
            return [a + (b - 1) * d for b in bs]
        return [exact(Fraction(a) + (b - 1) * Fraction(d)) for b in bs]

    def total(self, name: str, keep: Callable[[int, Operator], bool], bs: list[int], np: Any) -> list[Number]:
        """``sum_of`` of one figure over the operators ``keep`` selects, at every b'."""
        chosen = [i for i, op in enumerate(self.ops) if keep(i, op)]
        cols = [self.columns[i][name] for i in chosen]
        if all(c.form == "affine" for c in cols):  # an exact sum: the sum of the columns
            a = sum((c.a for c in cols), 0)
            d = sum((c.d for c in cols), 0)
            return self.values(Column("affine", exact(a) if type(a) is Fraction else a, d), bs, np)
        per_op = [self.values(c, bs, np) for c in cols]
        if all(c.form != "affine" or type(c.a) is int and type(c.d) is int for c in cols):
            # exact ints and a float in every row: sum_of is the float of the sum, in order
            return [float(sum(row)) for row in zip(*per_op)]
        return [sum_of(list(row)) for row in zip(*per_op)]


def _column_class(np: Any) -> Any:
    """A float64 array whose powers are Python's float power element by element: NumPy's own power
    may differ from the C library's ``pow`` in the last bit (vectorised implementations)."""

    class PyPow(np.ndarray):
        def __pow__(self, p: Any) -> Any:
            return np.array([a**p for a in self.tolist()], dtype=np.float64).view(PyPow)

        def __rpow__(self, base: Any) -> Any:
            return np.array([base**a for a in self.tolist()], dtype=np.float64).view(PyPow)

    return PyPow


def _floats(values: list[Number], np: Any, cls: Any) -> Any:
    """``float(v)`` of each value, as a column."""
    ints = [v for v in values if type(v) is int]
    if len(ints) == len(values) and max(map(abs, ints), default=0) < _INT64_SAFE:
        return np.asarray(values, dtype=np.int64).astype(np.float64).view(cls)
    return np.array([float(v) for v in values], dtype=np.float64).view(cls)


def _divided(values: list[Number], rate: float, np: Any, cls: Any) -> Any:
    """``_divide`` of the time model: float(v) / rate, None where a value is not finite."""
    out = _floats(values, np, cls) / rate
    return out if bool(np.isfinite(out).all()) else None


def decode_columns(
    spec: ModelSpec,
    gpu: HardwareSpec,
    points: Sequence[tuple[int, int]],
    *,
    compute: Any,
    bits: Fraction,
    kv_bits: int,
    weight_bytes: WeightBytes,
    layout: Layout,
    rates: tuple[float, float, float, float],
    network_gb_s: float,
    predictor: CalibratedModel | None,
    detail: bool = False,
) -> list[tuple[dict[str, Any], tuple[float, float, float, float, Bound], float, float | None, Step]] | None:
    """Per point of ``points`` (batch, context): its totals (``flops``, ``weight_flops``,
    ``matmul``, ``rows``, ``other``, ``kv_read``, ``kv_write``, ``bytes``, ``sent``,
    ``expert_bytes``, ``seqs``, ``tokens``, ``total_flops`` on all GPUs, with ``detail`` the
    ``split_kv_notes``), its bound's (compute, memory, link, time, bound), its estimate's and
    prediction's seconds, and a step of its context (for the conventions); None when NumPy is
    missing, a figure does not follow the forms of the module docstring, or a pipeline hop runs on
    a link of its own (across nodes, or one link of a mesh: :func:`~llm_cost.perf.timemodel.hop_rate`,
    which the columns do not time apart). ``rates``: peak FLOP/s
    and bandwidth of the bound, then of the estimate. Split-KV notes
    (:func:`~llm_cost.perf.calibrated.split_kv_notes`) are worked out on the real step of each point
    whose prediction with split-KV is more than ``SPLIT_KV_GAP`` faster, the others have none."""
    try:
        import numpy as np
    except ImportError:  # pragma: no cover - numpy is a dependency; a broken install takes the per-point path
        return None
    cls = _column_class(np)
    dp = layout.dp
    resident = weight_bytes == WeightBytes.RESIDENT
    by_context: dict[int, list[int]] = {}
    for i, (_, c) in enumerate(points):
        by_context.setdefault(c, []).append(i)
    out: list[Any] = [None] * len(points)
    link_s_rate = None
    for context, where in by_context.items():

        def step_at(b: int, context: int = context) -> Step:
            return build_step(
                spec,
                decode(b * dp, context),
                layout=layout,
                weight_bits=bits,
                kv_bits=kv_bits,
                compute_dtype=compute,
                weight_bytes=weight_bytes,
            )

        probes = [step_at(b) for b in (1, 2, 3)]
        ctx = _Context(probes, step_at(_ALL_HIT), spec, layout, resident)
        if not ctx.ok:
            return None
        if link_s_rate is None:
            link_name, link_gb_s = link_of(ctx.probe, gpu, network_gb_s)
            link_s_rate = link_gb_s * 1e9
            rate = link_s_rate
            if any(hop_rate(ctx.probe, gpu, s.index, rate, network_gb_s) != rate for s in ctx.probe.stages):
                return None  # a pipeline hop on its own link (across nodes, one mesh link): the points' own path
        bs = [-(-points[i][0] // dp) for i in where]
        every = lambda i, op: True  # noqa: E731
        gemm = lambda i, op: op.kind == OpKind.GEMM  # noqa: E731
        totals: dict[str, list[Any]] = {
            "flops": ctx.total("flops", every, bs, np),
            "kv_read": ctx.total("kv_read_bytes", every, bs, np),
            "kv_write": ctx.total("kv_write_bytes", every, bs, np),
            "bytes": ctx.total("bytes", every, bs, np),
            "sent": ctx.total("comm_bytes", every, bs, np),
            "weight_flops": ctx.total("flops", gemm, bs, np),
            "matmul": ctx.total("weight_bytes", gemm, bs, np),
            "rows": ctx.total("weight_bytes", lambda i, op: op.role == OpRole.EMBEDDING_ROWS, bs, np),
            "other": ctx.total("weight_bytes", lambda i, op: op.kind in (OpKind.ELEMENTWISE, OpKind.EMBEDDING), bs, np),
        }
        routed = [
            ctx.values(ctx.columns[i]["weight_bytes"], bs, np)
            for i, op in enumerate(ctx.ops)
            if op.role == OpRole.ROUTED_EXPERTS
        ]
        totals["expert_bytes"] = [sum(float(v) for v in row) for row in zip(*routed)] if routed else [0] * len(bs)
        # the bound and the estimate: per stage, its exact totals divided once (timemodel._time)
        times = []
        for flop_rate, byte_rate in (rates[:2], rates[2:]):
            stages = []
            for s in range(len(ctx.probe.stages)):
                here = lambda i, op, s=s, ctx=ctx: ctx.stage_of[i] == s  # noqa: E731
                c = _divided(ctx.total("flops", here, bs, np), flop_rate, np, cls)
                m = _divided(ctx.total("bytes", here, bs, np), byte_rate, np, cls)
                l_ = _divided(ctx.total("comm_bytes", here, bs, np), link_s_rate, np, cls)
                if c is None or m is None or l_ is None:
                    return None
                stages.append((c, m, l_, np.maximum(c, m) + l_))
            times.append([_sum([s[k] for s in stages]) for k in range(4)])
        if layout == ONE_GPU:
            totals["total_flops"] = totals["flops"]
        else:  # the same steps on one GPU: exact FLOPs, affine in the batch
            one = [
                build_step(
                    spec,
                    decode(b, context),
                    weight_bits=bits,
                    kv_bits=kv_bits,
                    compute_dtype=compute,
                    weight_bytes=weight_bytes,
                ).flops
                for b in (1, 2, 3)
            ]
            if not all(_is_exact(f) for f in one) or one[1] - one[0] != one[2] - one[1]:
                return None
            batches = [points[i][0] for i in where]
            totals["total_flops"] = [exact(Fraction(one[0]) + (b - 1) * Fraction(one[1] - one[0])) for b in batches]
        predicted = None
        if predictor is not None:
            split = predictor.profile.decode_split_kv
            predicted = _predicted(ctx, gpu, predictor, bs, link_s_rate, np, cls, split)
            if predicted is None:
                return None
        totals["split_kv_notes"] = [[] for _ in bs]
        if detail and predictor is not None and _gap_possible(ctx, predictor, gpu):
            then = _predicted(ctx, gpu, predictor, bs, link_s_rate, np, cls, True)
            if then is None:
                return None
            assert predicted is not None
            for j in np.nonzero(predicted > then * (1 + SPLIT_KV_GAP))[0].tolist():
                b = bs[j]
                totals["split_kv_notes"][j] = split_kv_notes(predictor, step_at(b), gpu)
        (bc, bm, bl, bt), est = times[0], times[1][3]
        bc, bm, bl, bt, est = bc.tolist(), bm.tolist(), bl.tolist(), bt.tolist(), est.tolist()
        pred = predicted.tolist() if predicted is not None else None
        for j, i in enumerate(where):
            figures = {key: value[j] for key, value in totals.items()}
            figures["seqs"] = figures["tokens"] = bs[j]
            bound = (bc[j], bm[j], bl[j], bt[j], Bound.of(bc[j], bm[j], bl[j], bt[j]))
            out[i] = (figures, bound, est[j], pred[j] if pred is not None else None, ctx.probe)
    return out


def _sum(columns: list[Any]) -> Any:
    """Python's ``sum`` of a list, in order (0 + the first is the first)."""
    total = columns[0]
    for c in columns[1:]:
        total = total + c
    return total


def _gap_possible(ctx: _Context, model: CalibratedModel, gpu: HardwareSpec) -> bool:
    """Whether :func:`~llm_cost.perf.calibrated.split_kv_gap` can find a gap in a step of the context."""
    return (
        not model.profile.decode_split_kv
        and gpu.sm_count is not None
        and any(op.kind == OpKind.ATTENTION and op.kv_read_bytes for op in ctx.ops)
    )


def _blocks(ctx: _Context, i: int, bs: list[int], sms: int, split: bool, np: Any, cls: Any) -> Any:
    """:func:`~llm_cost.perf.kernels.attention_blocks` of attention operator ``i`` at every b' (the
    operator at b' is the probe's with its batch replaced, as the probes check), or None."""
    op = ctx.ops[i]
    if not split:
        return _floats(ctx.values(ctx.columns[i]["x"], bs, np), np, cls)
    at = [dataclasses.replace(op, batch=b * (op.batch or 1)) for b in (1, 2, 3)]
    if any(attention_blocks(a, sms, True) != attention_blocks(p, sms, True) for a, p in zip(at, ctx.probe_ops(i))):
        return None
    return np.array(
        [attention_blocks(dataclasses.replace(op, batch=b * (op.batch or 1)), sms, True) for b in bs], dtype=np.float64
    ).view(cls)


def _loads(op: Operator, flops: list[Number]) -> list[float]:
    """:func:`~llm_cost.perf.calibrated.routed_load` of a GEMM at every b' (1 unless routed)."""
    if op.role != OpRole.ROUTED_EXPERTS:
        return [1.0] * len(flops)
    return [cal.routed_load(float(f), op.n, op.k, op.layers, op.ep_ranks) for f in flops]


def _shaped(op: Operator, flops: list[Number], m: list[Number], sms: int, np: Any, cls: Any) -> Any:
    """A GEMM's FLOPs times :func:`~llm_cost.perf.calibrated.gemm_shape_factor` (routed experts:
    :func:`~llm_cost.perf.calibrated.grouped_gemm_factor` and their load) at every b', each
    computed as :meth:`CalibratedModel.step_time` computes it for that point."""
    out = []
    for f, rows, load in zip(flops, m, _loads(op, flops)):
        point = dataclasses.replace(op, flops=f, m=rows)
        count = float(rows or 1)
        groups = cal.gemm_groups(point)
        routed = op.role == OpRole.ROUTED_EXPERTS
        shape = (
            cal.grouped_gemm_factor(count, op.n, groups, sms)
            if routed
            else cal.gemm_shape_factor(count, op.n, groups, sms)
        )
        out.append(float(f) * shape * load)
    return np.array(out, dtype=np.float64).view(cls)


def _predicted(
    ctx: _Context,
    gpu: HardwareSpec,
    model: CalibratedModel,
    bs: list[int],
    link_bytes_s: float,
    np: Any,
    cls: Any,
    split: bool,
) -> Any:
    """The calibrated prediction at every b': the formulas of :meth:`CalibratedModel.step_time`
    (the same functions of :mod:`llm_cost.perf.calibrated`, column by column, each float by the same
    operations in the same order), the attention's KV read by the thread blocks of a kernel with
    split-KV or without; None when the blocks do not follow the probes."""
    step = ctx.probe
    v = cal.rates_of(model.profile, step, gpu)
    f_, e_ = v.f, v.e
    seqs = np.array([float(b) for b in bs], dtype=np.float64).view(cls)
    stage_times = []
    start = 0
    for index, stage in enumerate(step.stages):
        times = []
        for i in range(start, start + len(stage.ops)):
            op, cols = ctx.ops[i], ctx.columns[i]

            def f(name: str, cols: dict[str, Column] = cols) -> Any:
                return _floats(ctx.values(cols[name], bs, np), np, cls)

            if op.kind == OpKind.COLLECTIVE:
                assert op.collective is not None
                t = cal.collective_time(
                    op.layers, f("call_bytes"), link_bytes_s, f_["collective_latency_s"] * e_["collective_latency_share"],
                    f_["link_efficiency"],
                    cal.latency_hops(op.collective.ranks, v.node_gpus),
                )  # fmt: skip
                times.append(t)
                continue
            if op.kind == OpKind.GEMM:
                flops = ctx.values(cols["flops"], bs, np)
                shaped = _shaped(op, flops, ctx.values(cols["m"], bs, np), v.sms, np, cls)
                moved = f("activation_bytes") * np.array(_loads(op, flops), dtype=np.float64).view(cls)
                moe = e_["moe_gemm_share"] if op.role == OpRole.ROUTED_EXPERTS else 1.0
                c, m = cal.gemm_terms(
                    shaped, f("weight_bytes"), moved, v.peak, v.bw, v.e_gemm,
                    f_["bandwidth_efficiency"], v.format_share * e_["stream_share"], moe,
                )  # fmt: skip
            elif op.kind == OpKind.ATTENTION:
                blocks = _blocks(ctx, i, bs, v.sms, split, np, cls)
                if blocks is None:
                    return None
                e_kv = cal.kv_efficiency(blocks, f_["kv_efficiency_max"], v.x_sat)
                c, m = cal.attention_terms(
                    f("flops"), f("kv_read_bytes"), f("kv_write_bytes"), blocks, v.peak16, v.bw,
                    f_["flash_efficiency"], e_kv, f_["bandwidth_efficiency"],
                )  # fmt: skip
            else:
                c, m = cal.other_terms(
                    f("flops"), f("bytes"), v.peak16, v.bw, f_["gemm_efficiency_16"], f_["bandwidth_efficiency"]
                )
            times.append(cal.smooth_max(c, m, f_["overlap_p"]))
        start += len(stage.ops)
        fixed = cal.fixed_time(stage.layers, cal.moe_layers(stage.ops), 1 if index == 0 else 0, seqs, e_)
        stage_times.append(_sum([0.0, *times]) + fixed)
    return _sum(stage_times)
