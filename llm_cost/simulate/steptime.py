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
half a grid step, 1/32 = 3.1%). The sequence counts are kept exactly. A run of thousands of requests meets a few hundred distinct buckets, each built and timed
once (about 80 us each for a dense 8B model).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from llm_cost.core.types import Dtype
from llm_cost.model.layout import ONE_GPU, Layout
from llm_cost.perf.timemodel import TimeModel
from llm_cost.specs.schema import HardwareSpec, ModelSpec
from llm_cost.workload.ranks import rank_groups
from llm_cost.workload.step import SeqGroup, build_step

__all__ = ["StepTimer", "ScaledTimer", "bucket", "context_bucket", "same_context_bucket"]


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
        self.cache: dict[tuple[int, int, int, int, int], float] = {}

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
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        step = build_step(
            self.spec,
            rank_groups(step_groups(*key), self.layout.dp),  # an attention-DP replica: each rank's share
            layout=self.layout,
            weight_bits=self.weight_bits,
            kv_bits=self.kv_bits,
            compute_dtype=self.compute_dtype,
        )
        seconds = self.model.step_time(step, self.gpu, operators=False).time_s
        self.cache[key] = seconds
        return seconds


class ScaledTimer(StepTimer):
    """``base``'s step times, each multiplied by ``factor(decodes, decode_context, prefill_tokens,
    prefill_cached, prefills)`` of the step's bucket (the key :meth:`StepTimer.seconds` memoises
    on; a factor of 1 gives ``base``'s times exactly). Re-simulating a run with every step
    ``factor`` times slower or faster carries a step-time error band through the scheduler's
    queueing, which is not linear in step time (``llm_cost.analyses.simulated_serving``). Shares
    ``base``'s memo of unscaled times, so that it times no step ``base`` has timed."""

    def __init__(self, base: StepTimer, factor: Callable[[int, int, int, int, int], float]) -> None:
        super().__init__(
            base.spec, base.gpu, base.model, base.layout, base.weight_bits, base.kv_bits, base.compute_dtype
        )
        self.base, self.factor = base, factor

    def seconds(
        self, decodes: int, decode_context: int, prefill_tokens: int = 0, prefill_cached: int = 0, prefills: int = 0
    ) -> float:
        """``base``'s seconds of the step times the factor of its bucket."""
        key = (
            decodes,
            context_bucket(decode_context) if decodes else 0,
            max(bucket(prefill_tokens), prefills),
            bucket(prefill_cached) if prefills else 0,
            prefills,
        )
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        seconds = self.base.seconds(decodes, decode_context, prefill_tokens, prefill_cached, prefills) * self.factor(
            *key
        )
        self.cache[key] = seconds
        return seconds
