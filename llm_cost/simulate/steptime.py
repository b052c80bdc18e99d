"""Step times for the simulator: an engine step's operators from :func:`~llm_cost.workload.step.build_step`
timed by a :class:`~llm_cost.perf.timemodel.TimeModel`, memoised on buckets of the step's shape.

A step of continuous batching holds ``decodes`` sequences adding one token each after a mean of
``decode_context`` cached tokens, and ``prefills`` prompt chunks of ``prefill_tokens`` tokens in all
after a mean of ``prefill_cached`` cached tokens (chunked prefill, prefix-cache hits and resumed
requests). It is built as the groups [decodes x (1 new, decode_context cached)] and the prefill
tokens split evenly over ``prefills`` sequences at ``prefill_cached`` cached, the same operators
the serving planner builds for a mixed step (``analyses/serving/replicas.py``). Decode KV reads and
attention pairs depend only on the sum of the contexts, so the mean loses nothing there; an even
split of the prompt chunks approximates the pairs of uneven chunks.

Buckets: token counts below 64 are kept (decode contexts: rounded to 16); larger ones are rounded to
a grid of 1/16 of their power of two (64-127 to 4 tokens, 512-1023 to 32, 2048-4095 to 128: within
half a grid step, 1/32 = 3.1%). The sequence counts are kept exactly; from
:data:`INTERPOLATE_FROM` decoding sequences on, a count between two points of the same grid
(64-127: every 4th, 128-255: every 8th) is timed by linear interpolation between the steps of the
two grid points around it (each built and timed), which differ by at most 1/16 of the count: a
step's time is nearly linear in its decoding sequences there (weights read once, KV reads and
attention per sequence, MoE experts touched by a smooth expected count), and a plan's runs of
other caps meet the same grid points. Not across a GEMM tile boundary: a dense GEMM's rows (the
step's tokens) are computed in 64-row tiles (:func:`~llm_cost.perf.families.gemm_tile_m`), so the
time steps up where the tokens pass a multiple of 64; a count whose two grid points hold different
numbers of row tiles is built and timed itself (within 0.2% of the exact step either way, where an
interpolation across 256 -> 257 tokens was 6.8% off). The rounding of a chunk's tokens is not
tile-aware: it can carry a step's tokens across a tile boundary, a step of up to one tile's compute
(8% for 209 decodes beside a 300-token chunk, rounded to 304, on an H100). A run of thousands of requests meets a few hundred distinct
buckets, each built and timed once (about 80 us each for a dense 8B model).

The memo is the process's, one per timer key (:func:`timer_key`: the time model, the model
spec, the GPU, the layout and the formats, each by its whole ``repr``, so two equal objects share
it and two that differ in any field do not): every candidate of a plan, the plans of a
comparison, the seeds of a check and the runs of a test session that step the same replica under
the same time model time each bucket once. The most recent :data:`SHARED_TIMERS` keys are kept.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from fractions import Fraction

from llm_cost.core.types import Dtype
from llm_cost.model.layout import ONE_GPU, Layout
from llm_cost.perf.calibrated import fast_end_s, step_seconds
from llm_cost.perf.families import gemm_tile_m
from llm_cost.perf.timemodel import RooflineBound, TimeModel
from llm_cost.specs.schema import HardwareSpec, ModelSpec
from llm_cost.workload.ranks import rank_groups
from llm_cost.workload.step import SeqGroup

__all__ = [
    "StepTimer", "ScaledTimer", "bucket", "context_bucket", "same_context_bucket", "timer_key", "INTERPOLATE_FROM",
    "SHARED_TIMERS",
]  # fmt: skip

#: Decoding sequences from which a step's count is timed by interpolation between grid points
#: (module docstring).
INTERPOLATE_FROM = 64


#: Timer keys whose memo the process keeps (module docstring), the least recently used dropped.
SHARED_TIMERS = 64
_SHARED: OrderedDict[tuple[str, ...], dict[tuple[int, int, int, int, int], float]] = OrderedDict()


def timer_key(
    spec: ModelSpec,
    gpu: HardwareSpec,
    model: TimeModel,
    layout: Layout,
    weight_bits: int | Fraction,
    kv_bits: int,
    compute_dtype: Dtype,
) -> tuple[str, ...]:
    """What a step's time depends on besides its bucket: the time model, the spec, the GPU, the
    layout and the formats, each by its ``repr`` (every field)."""
    return (
        repr(model),
        repr(spec),
        repr(gpu),
        repr(layout),
        repr(Fraction(weight_bits)),
        repr(kv_bits),
        repr(compute_dtype),
    )


def _shared_memo(key: tuple[str, ...]) -> dict[tuple[int, int, int, int, int], float]:
    """The process's memo of the timer ``key`` (module docstring)."""
    memo = _SHARED.get(key)
    if memo is None:
        memo = _SHARED[key] = {}
        while len(_SHARED) > SHARED_TIMERS:
            _SHARED.popitem(last=False)
    else:
        _SHARED.move_to_end(key)
    return memo


def _grid_points(key: tuple[int, int, int, int, int]) -> tuple[int, int] | None:
    """The two grid points a step bucket's decoding sequences are interpolated between (module
    docstring), or None for a bucket timed itself: below :data:`INTERPOLATE_FROM`, on a grid
    point, or where the step's tokens at the two points fill different numbers of GEMM row tiles."""
    decodes, prefill_tokens = key[0], key[2]
    grid = 1 << max(0, decodes.bit_length() - 5)
    low = decodes // grid * grid
    if decodes < INTERPOLATE_FROM or low == decodes:
        return None
    if _row_tiles(low + prefill_tokens) != _row_tiles(low + grid + prefill_tokens):
        return None
    return low, low + grid


def _row_tiles(rows: int) -> int:
    """The row tiles a dense GEMM of ``rows`` rows is computed in (:func:`~llm_cost.perf.families.gemm_tile_m`)."""
    tile = gemm_tile_m(rows)
    return -(-rows // tile)


def bucket(tokens: int) -> int:
    """``tokens`` below 64 as they are, else rounded to a multiple of 2^(floor(log2 tokens) - 4)."""
    if tokens < 64:
        return tokens
    grid = 1 << (tokens.bit_length() - 5)
    return (tokens + grid // 2) // grid * grid


def context_bucket(tokens: int) -> int:
    """A decode context's bucket: :func:`bucket` from 64 tokens on, below it the nearest multiple
    of 16 (a context of a few tokens costs nothing next to the weights)."""
    return bucket(tokens) if tokens >= 64 else (tokens + 8) // 16 * 16


def same_context_bucket(context: int) -> int:
    """How many consecutive contexts from ``context`` on share its bucket (at least 1)."""
    if context < 64:
        return min((context + 8) // 16 * 16 + 8, 64) - context
    width = context.bit_length()
    grid = 1 << (width - 5)
    last = ((context + grid // 2) // grid + 1) * grid - grid // 2 - 1
    return min(last, (1 << width) - 1) - context + 1


def step_groups(
    decodes: int, decode_context: int, prefill_tokens: int, prefill_cached: int, prefills: int
) -> list[SeqGroup]:
    """The sequence groups of a step of this shape (see the module docstring)."""
    groups = [SeqGroup(decodes, 1, decode_context)] if decodes else []
    if prefills:
        each, rest = divmod(prefill_tokens, prefills)
        if rest:
            groups.append(SeqGroup(rest, each + 1, prefill_cached))
        if prefills - rest:
            groups.append(SeqGroup(prefills - rest, each, prefill_cached))
    return groups


class StepTimer:
    """Seconds of an engine step on one replica of ``layout`` under ``model``, memoised."""

    def __init__(
        self,
        spec: ModelSpec,
        gpu: HardwareSpec,
        model: TimeModel,
        layout: Layout = ONE_GPU,
        weight_bits: int | Fraction = 16,
        kv_bits: int = 16,
        compute_dtype: Dtype = Dtype.BF16,
    ) -> None:
        self.spec, self.gpu, self.model, self.layout = spec, gpu, model, layout
        self.weight_bits, self.kv_bits, self.compute_dtype = weight_bits, kv_bits, compute_dtype
        #: The buckets this timer met (their count is the run's step shapes), over the process's
        #: memo of its key (module docstring), which times each bucket once for every timer.
        self.cache: dict[tuple[int, int, int, int, int], float] = {}
        self.shared = self.memo()
        #: The buckets asked for since :meth:`count_shapes` began counting (None: not counting):
        #: a run's own, where ``cache`` holds every run's that shared this timer; ``last_met``: those
        #: of the count :meth:`shapes_met` ended last.
        self.met: set[tuple[int, int, int, int, int]] | None = None
        self.last_met: frozenset[tuple[int, int, int, int, int]] = frozenset()

    def memo(self) -> dict[tuple[int, int, int, int, int], float]:
        """The process's memo of this timer's key (module docstring)."""
        key = timer_key(
            self.spec, self.gpu, self.model, self.layout, self.weight_bits, self.kv_bits, self.compute_dtype
        )
        return _shared_memo(key)

    def seconds(
        self, decodes: int, decode_context: int, prefill_tokens: int = 0, prefill_cached: int = 0, prefills: int = 0
    ) -> float:
        """Seconds of a step of ``decodes`` decoding sequences at a mean context of
        ``decode_context`` tokens and ``prefills`` prompt chunks of ``prefill_tokens`` tokens in all
        at a mean of ``prefill_cached`` cached tokens (the step's time under the model: the sum of
        its pipeline stages)."""
        key = (
            decodes,
            context_bucket(decode_context) if decodes else 0,
            max(bucket(prefill_tokens), prefills),
            bucket(prefill_cached) if prefills else 0,
            prefills,
        )
        if self.met is not None:
            self.met.add(key)
        hit = self.cache.get(key)
        return hit if hit is not None else self.lookup(key)

    def count_shapes(self) -> None:
        """Count, from now, the buckets asked for (:meth:`shapes_met`)."""
        self.met = set()

    def shapes_met(self) -> int:
        """The buckets asked for since :meth:`count_shapes`, with the grid points each interpolated
        one is timed between (module docstring), as ``cache`` counts them; counting stops."""
        met, self.met = self.met or set(), None
        self.last_met = frozenset(met)
        shapes = set(met)
        for key in met:
            ends = _grid_points(key)
            if ends is not None:
                shapes.update((n, *key[1:]) for n in ends)
        return len(shapes)

    def lookup(self, key: tuple[int, int, int, int, int]) -> float:
        """Seconds of the step bucket ``key``, memoised (this timer's and the process's): timed,
        or interpolated between the two grid points around its decoding sequences (module
        docstring)."""
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        hit = self.shared.get(key)
        ends = _grid_points(key)
        if hit is None:
            if ends is None:
                hit = self.time_of(key)
            else:
                (low, t_low), (high, t_high) = ((n, self.lookup((n, *key[1:]))) for n in ends)
                hit = t_low + (t_high - t_low) * (key[0] - low) / (high - low)
            self.shared[key] = hit
        elif ends is not None:  # the grid points it was interpolated between count as met
            for n in ends:
                self.lookup((n, *key[1:]))
        self.cache[key] = hit
        return hit

    def time_of(self, key: tuple[int, int, int, int, int]) -> float:
        """Seconds of the step bucket ``key`` (its groups, :func:`step_groups`), built and timed."""
        return step_seconds(
            self.model,
            self.spec,
            rank_groups(step_groups(*key), self.layout.dp),  # an attention-DP replica: each rank's share
            self.gpu,
            layout=self.layout,
            weight_bits=self.weight_bits,
            kv_bits=self.kv_bits,
            compute_dtype=self.compute_dtype,
        ).time_s


class ScaledTimer(StepTimer):
    """``base``'s step times, each multiplied by ``factor(decodes, decode_context, prefill_tokens,
    prefill_cached, prefills)`` of the step's bucket (the key :meth:`StepTimer.seconds` memoises
    on; a factor of 1 gives ``base``'s times exactly). Re-simulating a run with every step
    ``factor`` times slower or faster carries a step-time error band through the scheduler's
    queueing, which is not linear in step time (``llm_cost.analyses.simulated_serving``). A step
    made faster (a factor under 1) is never faster than its Roofline bound (``floor``: the same
    step under :class:`~llm_cost.perf.timemodel.RooflineBound`): no measured step beats it
    (tests/perf/test_measurement_files.py), so neither does a band's fast end. Shares ``base``'s
    memo of unscaled times, so that it times no step ``base`` has timed."""

    def __init__(self, base: StepTimer, factor: Callable[[int, int, int, int, int], float]) -> None:
        super().__init__(
            base.spec, base.gpu, base.model, base.layout, base.weight_bits, base.kv_bits, base.compute_dtype
        )
        self.base, self.factor = base, factor
        self.floor = StepTimer(
            base.spec, base.gpu, RooflineBound(), base.layout, base.weight_bits, base.kv_bits, base.compute_dtype
        )

    def memo(self) -> dict[tuple[int, int, int, int, int], float]:
        """No process memo of its own (the factor is a function, not a key): ``base``'s holds the
        unscaled times."""
        return {}

    def shapes_met(self) -> int:
        """The buckets asked for since :meth:`count_shapes` (``base`` interpolates, not this timer:
        no grid points of its own); counting stops."""
        met, self.met = self.met or set(), None
        self.last_met = frozenset(met)
        return len(met)

    def lookup(self, key: tuple[int, int, int, int, int]) -> float:
        """``base``'s seconds of the bucket ``key`` times its factor, memoised."""
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        factor = self.factor(*key)
        base = self.base.lookup(key)
        seconds = fast_end_s(base, factor, self.floor.lookup(key)) if factor < 1 else base * factor
        self.cache[key] = seconds
        return seconds
