"""One engine replica under load: a discrete-event simulation of continuous batching, step by step.

The scheduler is vLLM V1's (``vllm/v1/core/sched/scheduler.py``, ``Scheduler.schedule``), with
its KV cache manager (:mod:`llm_cost.simulate.kvcache`). Each step:

1. Running requests first, in the order they were admitted: each is given the tokens it still
   needs (1 while decoding; the rest of its prompt, up to the budget, while prefilling: chunked
   prefill) out of a budget of ``max_num_batched_tokens`` tokens (optionally at most
   ``long_prefill_token_threshold`` per request). If its KV blocks cannot be allocated, the newest
   running request is preempted (``self.running.pop()``): its blocks are freed, its computed
   tokens reset to 0 (recompute), and it goes back to the head of the waiting queue; repeated
   until the allocation succeeds or the request preempted itself.
2. Then, unless a request was preempted in this step, waiting requests in arrival order (FCFS)
   while fewer than ``max_num_seqs`` are running and the budget lasts: each takes its cached
   prefix blocks (``get_computed_blocks``), then is given its remaining tokens up to the budget
   (without chunked prefill it must fit whole, else admission stops) if their blocks can be
   allocated, else admission stops.
3. The step runs; its time comes from the step model (:class:`~llm_cost.simulate.steptime.StepTimer`).
   A request whose computed tokens reach all its tokens samples one output token at the step's end
   (the first one ends its TTFT); a request with all its output tokens finishes and frees its blocks.

With ``async_scheduling`` (vLLM's default since v0.14, ``vllm/v1/core/sched/async_scheduler.py``,
``EngineCore.step_with_batch_queue``) step N + 1 is scheduled while step N runs, so while steps run
back to back a request that arrives during step N is first scheduled into step N + 2; an idle
engine schedules an arriving request at once.

A hybrid model's fixed per-sequence state (linear-attention / Mamba layers) takes
``state_blocks`` blocks of the pool per running request, once, from its admission to its finish
or preemption (vLLM V1's hybrid KV cache manager: one page per request for each Mamba-type layer
group, :mod:`llm_cost.simulate.kvcache`); admission needs them free besides its KV blocks.

A resumed request recomputes its prompt and the tokens it had generated, less what the prefix cache
still holds of them (its own blocks stay cached until evicted). A request whose prompt and output
exceed ``max_model_len``, or that cannot fit in an empty cache, is rejected, as vLLM refuses it.

Where SGLang and TensorRT-LLM depart from these rules (SGLang's admission estimate and its steps
of prompts alone; TensorRT-LLM's blocks reserved whole at admission), :mod:`llm_cost.simulate.policies`
gives each engine's rules, with their sources; the loop asks its replica's policy.

The API server (chat template, tokenisation, the request's HTTP and stream set-up) is one serial
stage in front of the engine: each request holds it ``frontend_request_s`` seconds, in arrival
order, before it reaches the waiting queue (a request's TTFT counts that wait: 1,000 prompts sent at
once reach the engine over 1,000 x ``frontend_request_s``).

Not modelled: detokenisation and streaming of each token by the API server, CPU time between steps
(hidden behind the GPU by async scheduling), CUDA-graph padding, speculative decoding,
pipeline parallelism's concurrent micro-batches (a step's time is the sum of its stages).

Speed: decoding requests form a cohort that one tick counter advances (see :class:`_Engine`), so a
step costs the prompts it schedules, not the sequences decoding in it; while only the cohort runs
and no waiting request can be admitted, the steps differ only by their contexts and are advanced
together, bucket by bucket of the step timer's memo, up to the next completion, arrival, or block
shortage. A step the cohort cannot take whole (blocks or budget short, preemption) is scheduled
request by request, in vLLM's order. The cohort takes its budget before the prompts being
prefilled: vLLM's running order too, since a chunked prompt uses the rest of a step's budget and so
nothing is admitted behind it while it lasts.
"""

from __future__ import annotations

import bisect
import heapq
import math
import random
from collections import Counter, deque
from collections.abc import Sequence

from llm_cost.core.choices import Router
from llm_cost.core.errors import InputError
from llm_cost.core.records import record
from llm_cost.core.types import SERVING_ENGINES, Engine
from llm_cost.simulate.kvcache import BlockPool, Seq
from llm_cost.simulate.policies import policy_for
from llm_cost.simulate.results import RequestTimes
from llm_cost.simulate.routers import router_of
from llm_cost.simulate.steptime import StepTimer, same_context_bucket
from llm_cost.simulate.workload import ClosedLoop, Request, Workload, draw_lengths, user_table
from llm_cost.specs.schema import HardwareSpec

__all__ = [
    "EngineConfig",
    "vllm_defaults",
    "engine_defaults",
    "Run",
    "run_engine",
    "run_replicas",
]


@record
class EngineConfig:
    """An engine's scheduling settings (``engine``: one of
    :data:`~llm_cost.core.types.SERVING_ENGINES`, whose admission rules
    the module docstring gives), named as vLLM names them (``--max-num-seqs``,
    ``--max-num-batched-tokens``, ``--block-size``, ``--enable-prefix-caching``,
    ``--enable-chunked-prefill``, ``--max-model-len``, ``--long-prefill-token-threshold``,
    ``--async-scheduling``). ``max_model_len`` None: no limit. ``frontend_request_s``: the API
    server's serial time per request, seconds (module docstring; 0 by default:
    ``scripts/check_saturation_runs.py --fit-frontend`` says why)."""

    engine: Engine = Engine.VLLM
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    block_tokens: int = 16
    prefix_caching: bool = True
    chunked_prefill: bool = True
    max_model_len: int | None = None
    long_prefill_token_threshold: int = 0
    async_scheduling: bool = True
    frontend_request_s: float = 0.0


def vllm_defaults(gpu: HardwareSpec, **changes: object) -> EngineConfig:
    """vLLM's defaults for its OpenAI server (``EngineArgs.get_batch_defaults`` in
    ``vllm/engine/arg_utils.py``): 8,192 batched tokens and 1,024 sequences on a GPU of at least
    70 GiB that is not an A100, else 2,048 and 256; prefix caching and chunked prefill on (V1).
    A token budget given without a sequence cap lowers vLLM's default cap to it
    (``EngineArgs._set_default_max_num_seqs_and_batched_tokens_args``: ``max_num_seqs = min(
    max_num_seqs, max_num_batched_tokens)`` when ``max_num_seqs`` was not given; vllm-project/vllm @
    99d7eb5d6a51), so that ``--max-num-batched-tokens 512`` alone runs at most 512 sequences."""
    big = gpu.capacity_bytes >= 70 * 2**30 and "a100" not in gpu.name.lower()
    base = EngineConfig(Engine.VLLM, 1024 if big else 256, 8192 if big else 2048)
    config = EngineConfig(**{**base.__dict__, **changes})
    if config.engine == Engine.VLLM and "max_num_seqs" not in changes:
        config = EngineConfig(
            **{**config.__dict__, "max_num_seqs": min(config.max_num_seqs, config.max_num_batched_tokens)}
        )
    return config


#: The bounds of an API server's serial time per request, seconds (:class:`EngineConfig`): none, to
#: 50 ms (a chat template and a tokeniser over a prompt of a few thousand tokens take milliseconds of
#: Python; 50 ms is beyond every one the shipped saturation runs imply).
FRONTEND_BOUNDS_S = (0.0, 0.05)

#: TensorRT-LLM's own defaults for ``trtllm-serve``: ``BuildConfig.max_batch_size`` 2,048 requests
#: and ``max_num_tokens`` 8,192 (``tensorrt_llm/builder.py``, the defaults of ``--max_batch_size``
#: and ``--max_num_tokens`` in ``tensorrt_llm/commands/serve.py``).
TRTLLM_MAX_BATCH_SIZE, TRTLLM_MAX_NUM_TOKENS = 2048, 8192


def engine_defaults(gpu: HardwareSpec, engine: Engine = Engine.VLLM, **changes: object) -> EngineConfig:
    """The server defaults of ``engine`` on ``gpu``: vLLM's (:func:`vllm_defaults`); TensorRT-LLM's
    ``max_batch_size`` and ``max_num_tokens`` (:data:`TRTLLM_MAX_BATCH_SIZE`,
    :data:`TRTLLM_MAX_NUM_TOKENS`); SGLang sizes ``max_running_requests`` from its KV pool at start,
    so it runs with vLLM's caps for the GPU here (the pool bounds it again in admission). The caps
    bound the concurrency a plan searches."""
    if engine == Engine.TRTLLM:
        base = EngineConfig(Engine.TRTLLM, TRTLLM_MAX_BATCH_SIZE, TRTLLM_MAX_NUM_TOKENS)
        return EngineConfig(**{**base.__dict__, **changes})
    return vllm_defaults(gpu, **{"engine": engine, **changes})


def check_config(config: EngineConfig) -> None:
    """InputError for settings no engine accepts (ValueError for an API-server time outside
    :data:`FRONTEND_BOUNDS_S`, which no flag sets)."""
    if config.engine not in SERVING_ENGINES:
        shown = ", ".join(map(str, SERVING_ENGINES))
        raise InputError(f"engine: {str(config.engine)!r} is not one of {shown}", fields=("engine",))
    if not FRONTEND_BOUNDS_S[0] <= config.frontend_request_s <= FRONTEND_BOUNDS_S[1]:
        # no flag sets it: a caller's error, not a user's
        raise ValueError(f"frontend_request_s: {config.frontend_request_s} is not from 0 to {FRONTEND_BOUNDS_S[1]} s")
    for name in ("max_num_seqs", "max_num_batched_tokens", "block_tokens"):
        if getattr(config, name) < 1:
            raise InputError(f"{name}: {getattr(config, name)} must be at least 1", fields=(name,))
    if config.max_model_len is not None and config.max_model_len < 2:
        raise InputError(f"max_model_len: {config.max_model_len} must be at least 2", fields=("max_model_len",))
    if config.long_prefill_token_threshold < 0:
        raise InputError("long_prefill_token_threshold: must be at least 0", fields=("long_prefill_token_threshold",))


class _Live:
    """A request inside the engine."""

    __slots__ = (
        "req",
        "out",
        "seq",
        "tokens",
        "computed",
        "generated",
        "stage",
        "scheduled_s",
        "first_s",
        "last_s",
        "itl_max",
        "cached",
        "preemptions",
        "user",
        "tick0",
        "version",
    )

    def __init__(self, req: Request, block_tokens: int, stage: int, user: int) -> None:
        self.req = req
        self.out = req.output_tokens
        self.seq = Seq(("request", req.index), req.shared, block_tokens)
        self.tokens = req.input_tokens  # prompt + generated
        self.computed = 0
        self.generated = 0
        self.stage = stage
        self.scheduled_s = -1.0
        self.first_s = -1.0
        self.last_s = 0.0
        self.itl_max = 0.0
        self.cached = -1
        self.preemptions = 0
        self.user = user
        self.tick0 = -1  # decoding in the cohort since this tick (-1: not in it)
        self.version = 0  # bumped when it leaves the cohort (its finish-heap entry is stale)


@record
class Run:
    """What :func:`run_engine` measured: the completed requests (in completion order) with the
    stage each arrived in, rejections per stage, inter-token gaps per stage (seconds -> count), the
    time integrals of running and waiting requests and of KV blocks held (per second), the largest
    number of blocks held, preemptions, steps, the end of the run (the last completion), the
    prompt tokens found in the prefix cache and those looked up, and the KV blocks of the pool."""

    done: tuple[tuple[int, RequestTimes], ...]
    rejected: tuple[int, ...]
    gaps: tuple[dict[float, int], ...]
    running_integral: float
    waiting_integral: float
    kv_integral: float
    kv_max: int
    preemptions: int
    steps: int
    end_s: float
    hit_tokens: int
    queried_tokens: int
    kv_blocks: int = 1


def _stage_of(t: float, bounds: Sequence[float]) -> int:
    """The stage an arrival at ``t`` belongs to (0 without stages)."""
    for i, end in enumerate(bounds):
        if t <= end:
            return i
    return max(0, len(bounds) - 1)


class _Engine:
    """The state of one run (see the module docstring).

    Decoding requests form a cohort advanced by a tick counter: each step in which all of them
    decode is one tick, and a member's computed, generated and held-block counts are those of the
    tick it joined plus the ticks since, brought up to date (:meth:`sync`) only when it finishes or
    a step needs every request explicitly. The blocks the cohort takes each tick are counted by
    the members' block phase (computed tokens mod the block size), its context sum by one
    running total, its completions by a heap of finishing ticks; so a step costs the prompts it
    runs, not the sequences that decode in it. A step the cohort cannot take whole (too few blocks
    or tokens of budget, a preemption) is scheduled request by request (:meth:`explicit_step`),
    exactly as vLLM's loop over its running list."""

    def __init__(
        self,
        timer: StepTimer,
        config: EngineConfig,
        kv_blocks: int,
        bounds: Sequence[float],
        state_blocks: int = 0,
    ) -> None:
        self.timer, self.config = timer, config
        self.state_blocks = state_blocks
        self.pool = BlockPool(kv_blocks, config.block_tokens, config.prefix_caching)
        self.bounds = list(bounds)
        self.stages = max(1, len(self.bounds))
        self.now = 0.0
        #: Arrivals up to this time are seen by the next scheduling decision: the current time, or
        #: with async scheduling while steps run back to back the start of the step just run.
        self.horizon = 0.0
        self.lag = config.async_scheduling
        self.future: list[tuple[float, int, Request, int]] = []  # (arrival, index, request, user)
        self.waiting: deque[_Live] = deque()
        self.running: list[_Live] = []  # in admission order (the cohort's members included)
        self.finished: list[_Live] = []  # finished since running last dropped them
        self.explicit: list[_Live] = []  # running requests outside the cohort (prompts), in order
        self.done: list[tuple[int, RequestTimes]] = []
        self.rejected = [0] * self.stages
        self.gaps: list[Counter[float]] = [Counter() for _ in range(self.stages)]
        self.run_int = self.wait_int = self.kv_int = 0.0
        self.kv_max = 0
        self.preemptions = 0
        self.steps = 0
        self.policy = policy_for(config.engine)  # the engine's admission and preemption rules
        self.reserve = self.policy.reserves_whole
        self.prompts_apart = self.policy.prompts_apart
        self.closed = False
        self.finished_users: list[tuple[float, int]] = []  # closed loop: (time, user) of each completion
        self.users: _Users | None = None  # a closed loop's users (one engine alone)
        #: Co-simulated replicas: the router's next arrival, not yet routed; no scheduling decision
        #: may see it before it is (math.inf for an engine alone).
        self.limit = math.inf
        # the decoding cohort
        self.tick = 0
        # the ticks' step times that are the longest of all ticks since (a stack of falling
        # times: each tick's time pops the shorter ones before it), each with its last tick
        self.peak_ticks: list[int] = []
        self.peak_times: list[float] = []
        self.members = 0
        self.member_stages = [0] * self.stages
        self.context_base = 0  # sum over members of (computed - tick0): contexts sum to this + members x tick
        self.phases = [0] * config.block_tokens  # members by (computed - tick0) mod block size
        self.finishing: list[tuple[int, int, int, _Live]] = []  # (tick, index, version, member)
        self.frontend_free = 0.0  # when the API server's serial stage is next free
        self.stall = 0.0  # seconds of steps of prompts alone since the cohort's last tick (policies.py)

    def enter(self, t: float, req: Request, user: int) -> None:
        """``req``, sent at ``t``, passes the API server's serial stage (module docstring) and
        is queued for the engine when it leaves it; requests must enter in the order they are sent."""
        cost = self.config.frontend_request_s
        ready = max(t, self.frontend_free) + cost if cost else t
        self.frontend_free = ready
        heapq.heappush(self.future, (ready, req.index, req, user))

    # -- arrivals and completions ------------------------------------------------------------
    def arrive(self) -> None:
        """Move the requests that have arrived by the horizon into the waiting queue (rejecting
        those that cannot run)."""
        limit = self.config.max_model_len
        while self.future and self.future[0][0] <= self.horizon:
            t, _, req, user = heapq.heappop(self.future)
            stage = _stage_of(t, self.bounds)
            if limit is not None and req.input_tokens + req.output_tokens > limit:
                self.rejected[stage] += 1
                self.user_done(self.now, user)
                continue
            self.wait_int += self.now - t  # it arrived before this step
            self.waiting.append(_Live(req, self.config.block_tokens, stage, user))

    def finish(self, r: _Live) -> None:
        self.pool.release(r.seq)
        self.finished.append(r)
        q = r.req
        out = q.output_tokens
        times = RequestTimes(
            q.index,
            q.arrival_s,
            q.input_tokens,
            out,
            r.cached,
            r.scheduled_s - q.arrival_s,
            r.first_s - q.arrival_s,
            (r.last_s - r.first_s) / (out - 1) if out > 1 else None,
            r.last_s - q.arrival_s,
            r.itl_max,
            r.preemptions,
        )
        self.done.append((r.stage, times))
        self.user_done(r.last_s, r.user)

    def user_done(self, t: float, user: int) -> None:
        if self.closed:
            self.finished_users.append((t, user))

    def reject_head(self) -> None:
        """The waiting queue's head cannot fit even in an empty cache: vLLM would refuse it."""
        r = self.waiting.popleft()
        self.rejected[r.stage] += 1
        self.user_done(self.now, r.user)

    def drop_finished(self) -> None:
        """Take the requests finished since the last call out of ``running`` (a few one by one: a
        run of fixed lengths finishes them at distinct ticks, and rebuilding a list of hundreds
        per finish took most of a long run's time)."""
        finished = self.finished
        if len(finished) <= 8:
            for r in finished:
                self.running.remove(r)
        else:
            self.running = [r for r in self.running if r.generated < r.out]
        finished.clear()

    # -- the decoding cohort -------------------------------------------------------------------
    def join(self, r: _Live) -> None:
        """``r`` (decoding, up to date) joins the cohort at the current tick."""
        r.tick0 = self.tick
        self.members += 1
        self.member_stages[r.stage] += 1
        key = r.computed - self.tick
        self.context_base += key
        self.phases[key % self.config.block_tokens] += 1
        heapq.heappush(self.finishing, (self.tick + r.out - r.generated, r.req.index, r.version, r))

    def sync(self, r: _Live) -> None:
        """Bring member ``r``'s counts up to the current tick and take it out of the cohort."""
        ticks = self.tick - r.tick0
        key = r.computed - r.tick0
        if ticks:
            r.computed += ticks
            r.tokens += ticks
            r.generated += ticks
            r.last_s = self.now - self.stall  # the last tick ended then (steps of prompts alone since)
            longest = self.longest_tick(r.tick0)
            if longest > r.itl_max:
                r.itl_max = longest
            seq = r.seq
            extra = -(-r.computed // self.config.block_tokens) - seq.blocks
            if extra > 0:  # taken from the pool tick by tick already
                seq.own += extra
                seq.blocks += extra
        self.members -= 1
        self.member_stages[r.stage] -= 1
        self.context_base -= key
        self.phases[key % self.config.block_tokens] -= 1
        r.tick0 = -1
        r.version += 1

    def longest_tick(self, since: int) -> float:
        """The longest step time of the ticks from ``since`` to now (the first peak at or after it)."""
        return self.peak_times[bisect.bisect_left(self.peak_ticks, since)]

    def next_finish(self) -> int:
        """The tick at which the next member finishes (stale heap entries dropped)."""
        heap = self.finishing
        while heap and heap[0][2] != heap[0][3].version:
            heapq.heappop(heap)
        return heap[0][0] if heap else 1 << 62

    def retire(self) -> bool:
        """Finish the members whose last token came at this tick; whether any did."""
        any_done = False
        while self.next_finish() <= self.tick:
            r = heapq.heappop(self.finishing)[3]
            self.sync(r)
            self.finish(r)
            any_done = True
        return any_done

    def disband(self) -> None:
        """Every member up to date and out of the cohort (before an explicit step)."""
        for r in self.running:
            if r.tick0 >= 0:
                self.sync(r)
        self.finishing.clear()
        self.explicit = list(self.running)
        self.stall = 0.0

    def regroup(self) -> None:
        """After an explicit step, the decoding requests form the cohort again."""
        self.explicit = []
        for r in self.running:
            if r.generated and r.computed == r.tokens - 1:
                self.join(r)
            else:
                self.explicit.append(r)

    def tick_cohort(self, seconds: float, steps: int = 1) -> None:
        """``steps`` ticks of ``seconds`` each: every member decodes a token per tick (the first
        tick's gap also spans the steps of prompts alone since the last tick, ``stall`` seconds)."""
        stall, self.stall = self.stall, 0.0
        if stall:
            self.ticks(seconds + stall, 1)
            steps -= 1
        if steps:
            self.ticks(seconds, steps)

    def ticks(self, seconds: float, steps: int) -> None:
        """``steps`` ticks whose gaps are ``seconds`` each."""
        self.tick += steps
        peaks, ticks = self.peak_times, self.peak_ticks
        while peaks and peaks[-1] <= seconds:
            peaks.pop()
            ticks.pop()
        peaks.append(seconds)
        ticks.append(self.tick - 1)
        for stage, count in enumerate(self.member_stages):
            if count:
                self.gaps[stage][seconds] += count * steps

    def cohort_blocks(self, ticks: int) -> int:
        """Blocks the members take over the next ``ticks`` ticks: a member needs one at the tick
        its computed tokens are a multiple of the block size (none when its request's blocks were
        reserved at admission)."""
        if self.reserve:
            return 0
        bt = self.config.block_tokens
        phases, start = self.phases, self.tick
        if ticks >= bt:
            whole, rest = divmod(ticks, bt)
            return whole * self.members + sum(phases[(-(start + j)) % bt] for j in range(rest))
        return sum(phases[(-(start + j)) % bt] for j in range(ticks))

    # -- scheduling ------------------------------------------------------------------------------
    def preempt(self, victim: _Live) -> None:
        self.pool.release(victim.seq, preempted_at=victim.computed)
        self.policy.preempted(self.steps)
        victim.computed = 0
        victim.preemptions += 1
        self.preemptions += 1
        self.waiting.appendleft(victim)

    def admit(self, budget: int, out: list[tuple[_Live, int]]) -> None:
        """vLLM's loop over the waiting queue: admit requests, FCFS, while fewer than
        ``max_num_seqs`` run and the budget lasts, each with its cached prefix; stop at the first
        whose blocks cannot be allocated or that the policy's gate refuses
        (:meth:`~llm_cost.simulate.policies.Policy.admission`)."""
        cfg, pool, waiting, running = self.config, self.pool, self.waiting, self.running
        bt, threshold = cfg.block_tokens, cfg.long_prefill_token_threshold
        gate = self.policy.admission(self.steps, self.outputs_left) if waiting else None
        while waiting and budget > 0 and len(running) < cfg.max_num_seqs:
            r = waiting[0]
            if (running or out) and self.fewest_blocks(r, budget) + self.state_blocks > pool.free:
                break  # whatever the cache holds of it, it does not fit (skips the lookup)
            hits, free_hits = pool.lookup(r.seq, r.tokens)
            computed = hits * bt
            if gate is not None and not gate(
                r.tokens - computed, r.out - r.generated, (pool.free - self.state_blocks) * bt, not (running or out)
            ):
                break
            n = r.tokens - computed
            if 0 < threshold < n:
                n = threshold
            if not cfg.chunked_prefill and n > budget:
                break
            n = min(n, budget)
            held = (r.req.input_tokens + r.req.output_tokens) if self.reserve else computed + n
            if -(-held // bt) - hits + free_hits + self.state_blocks > pool.free:
                if not running and not out:
                    self.reject_head()  # nothing runs, so nothing will free blocks for it
                    continue
                break
            pool.take_hits(r.seq, hits, r.tokens)
            if self.reserve:
                pool.reserve(r.seq, held)  # the whole request's blocks, held from admission
            pool.allocate(r.seq, computed + n)
            if self.state_blocks:
                pool.hold_state(r.seq, self.state_blocks)
            r.computed = computed
            waiting.popleft()
            running.append(r)
            self.explicit.append(r)
            if r.scheduled_s < 0:
                r.scheduled_s = self.now
                r.cached = computed
            out.append((r, n))
            budget -= n

    def outputs_left(self) -> list[int]:
        """The output tokens each running request has still to generate (the cohort's members at
        the current tick)."""
        tick = self.tick
        return [r.out - r.generated - (tick - r.tick0 if r.tick0 >= 0 else 0) for r in self.running]

    def fewest_blocks(self, r: _Live, budget: int) -> int:
        """A lower bound of the blocks admitting ``r`` takes from the free pool, whatever the
        prefix cache holds of it: a hit block other requests hold costs none, but only blocks of
        its shared prefix can be held by others (its own cached blocks are free, so taking them
        costs as much as computing them), so the bound is the need with its whole shared prefix
        hit and held."""
        bt = self.config.block_tokens
        h = min(r.seq.shareable, (r.tokens - 1) // bt) if self.config.prefix_caching else 0
        if self.reserve:
            return -(-(r.req.input_tokens + r.req.output_tokens) // bt) - h
        n = min(r.tokens - h * bt, budget)
        threshold = self.config.long_prefill_token_threshold
        if 0 < threshold < n:
            n = threshold
        return -(-n // bt)

    def schedule_explicit(self) -> list[tuple[_Live, int]]:
        """One scheduling decision over every request (vLLM's ``schedule``, no cohort): the
        requests of the step and the tokens each computes."""
        cfg, pool = self.config, self.pool
        budget = cfg.max_num_batched_tokens
        threshold = cfg.long_prefill_token_threshold
        running = self.running
        out: list[tuple[_Live, int]] = []
        preempted = False
        i = 0
        while i < len(running) and budget > 0:
            r = running[i]
            n = r.tokens - r.computed
            if 0 < threshold < n:
                n = threshold
            n = min(n, budget)
            while not pool.allocate(r.seq, r.computed + n):
                victim = running.pop()
                self.preempt(victim)
                preempted = True
                if victim is r:
                    break
            else:
                out.append((r, n))
                budget -= n
                i += 1
                continue
            break
        if not preempted:
            self.admit(budget, out)
        return out

    def step_seconds(self, batch: Sequence[tuple[_Live, int]], decodes: int = 0, context: int = 0) -> float:
        """The step's time: ``decodes`` cohort members with contexts summing to ``context`` and
        the requests of ``batch``."""
        prefills = pf_tokens = pf_cached = 0
        for r, n in batch:
            if n == 1 and r.computed == r.tokens - 1:
                decodes += 1
                context += r.computed
            else:
                prefills += 1
                pf_tokens += n
                pf_cached += r.computed
        return self.timer.seconds(
            decodes,
            context // decodes if decodes else 0,
            pf_tokens,
            pf_cached // prefills if prefills else 0,
            prefills,
        )

    def account(self, seconds: float, steps: int = 1, used_before: int | None = None) -> None:
        """Time integrals over ``seconds`` (``steps`` steps): running and waiting requests, and KV
        blocks held (the mean of the use before and now)."""
        used = self.pool.used
        before = used if used_before is None else used_before
        self.run_int += len(self.running) * seconds
        self.wait_int += len(self.waiting) * seconds
        self.kv_int += (before + used) / 2 * seconds
        if used > self.kv_max:
            self.kv_max = used
        self.steps += steps

    def emit(self, batch: Sequence[tuple[_Live, int]], start: float, end: float, seconds: float) -> bool:
        """The tokens of the explicitly scheduled requests at the step's end; whether any finished."""
        finished = False
        steady = [0] * self.stages  # decodes whose last token ended the previous step: gap = seconds
        for r, n in batch:
            r.computed += n
            if r.computed != r.tokens:
                continue
            r.tokens += 1
            r.generated += 1
            if r.first_s < 0:
                r.first_s = end
            elif r.last_s == start:
                steady[r.stage] += 1
                if seconds > r.itl_max:
                    r.itl_max = seconds
            else:  # after a wait: a preemption, or a step it was not scheduled in
                gap = end - r.last_s
                self.gaps[r.stage][gap] += 1
                if gap > r.itl_max:
                    r.itl_max = gap
            r.last_s = end
            if r.generated == r.out:
                self.finish(r)
                finished = True
        for stage, count in enumerate(steady):
            if count:
                self.gaps[stage][seconds] += count
        return finished

    def advance(self, seconds: float) -> tuple[float, float]:
        start = self.now
        end = self.now = start + seconds
        self.horizon = start if self.lag else end
        return start, end

    def explicit_step(self) -> None:
        """Schedule and run one step request by request (the cohort disbanded first, formed again
        after)."""
        self.disband()
        batch = self.schedule_explicit()
        if batch:
            seconds = self.step_seconds(batch)
            self.account(seconds)
            start, end = self.advance(seconds)
            if self.emit(batch, start, end, seconds):
                self.drop_finished()
        self.regroup()

    def cohort_step(self) -> bool:
        """One step in which every member decodes, then the prompts in order and the waiting
        requests admitted; False (nothing done) if the members or the prompts need more blocks or
        budget than there is (an explicit step decides then, with its preemptions)."""
        if self.prompts_apart:
            prefilled = self.prompt_step()
            if prefilled is not None:
                return prefilled
        cfg, pool = self.config, self.pool
        bt = cfg.block_tokens
        budget = cfg.max_num_batched_tokens - self.members
        if budget < 0:
            return False
        member_blocks = 0 if self.reserve else self.phases[(-self.tick) % bt]
        need = member_blocks
        threshold = cfg.long_prefill_token_threshold
        chunks = []
        for r in self.explicit:  # prompts being prefilled, after the members in running order
            if budget <= 0:
                break
            n = r.tokens - r.computed
            if 0 < threshold < n:
                n = threshold
            n = min(n, budget)
            need += max(0, -(-(r.computed + n) // bt) - r.seq.blocks)
            chunks.append((r, n))
            budget -= n
        if need > pool.free:
            return False
        pool.take(member_blocks)
        for r, n in chunks:
            pool.allocate(r.seq, r.computed + n)
        if not self.prompts_apart:  # else admission was tried for a step of prompts
            self.admit(budget, chunks)
        if not chunks and not self.members:
            return True  # nothing to run: the caller jumps ahead
        members = self.members
        seconds = self.step_seconds(chunks, members, self.context_base + members * self.tick)
        self.account(seconds)
        start, end = self.advance(seconds)
        if members:
            self.tick_cohort(seconds)
        finished = self.emit(chunks, start, end, seconds)
        finished = self.retire() or finished
        if finished:
            self.drop_finished()
        joined = [r for r, _ in chunks if r.generated and r.generated < r.out and r.computed == r.tokens - 1]
        if joined or finished:
            for r in joined:
                self.join(r)
            self.explicit = [r for r in self.explicit if r.generated < r.out and r.tick0 < 0]
        return True

    def prompt_step(self) -> bool | None:
        """A step of prompts alone, for a policy whose prompts run apart (SGLang's prefill-first
        steps without mixed chunks, :mod:`~llm_cost.simulate.policies`): the prompts being
        prefilled and the waiting requests admitted, the decoding requests waiting for the next
        decode step (the cohort's next tick spans this step); None if no prompt can run (a decode
        step follows), False if their blocks are short (an explicit step)."""
        cfg, pool = self.config, self.pool
        bt, threshold = cfg.block_tokens, cfg.long_prefill_token_threshold
        budget, need, chunks = cfg.max_num_batched_tokens, 0, []
        for r in self.explicit:
            n = r.tokens - r.computed
            if budget <= 0 or (r.generated and n == 1):
                continue  # a decoding request
            n = min(threshold if 0 < threshold < n else n, budget)
            need += max(0, -(-(r.computed + n) // bt) - r.seq.blocks)
            chunks.append((r, n))
            budget -= n
        if need > pool.free:
            return False
        for r, n in chunks:
            pool.allocate(r.seq, r.computed + n)
        if self.waiting and len(self.running) < cfg.max_num_seqs:
            self.admit(budget, chunks)
        if not chunks:
            return None
        seconds = self.step_seconds(chunks)
        self.account(seconds)
        start, end = self.advance(seconds)
        if self.members:
            self.stall += seconds  # the members wait: their next gap spans this step
        if self.emit(chunks, start, end, seconds):
            self.drop_finished()
            self.explicit = [r for r in self.explicit if r.generated < r.out]
        return True

    # -- fast path: runs of identical decode steps ---------------------------------------------
    def decode_span(self) -> bool:
        """Advance a run of steps in which only the cohort decodes (see the module docstring);
        False if the next step is not one."""
        cfg = self.config
        n = self.members
        if not n or self.explicit or n > cfg.max_num_batched_tokens:
            return False
        if self.waiting and len(self.running) < cfg.max_num_seqs:
            return False
        steps = self.next_finish() - self.tick
        if steps <= 0:
            return False
        if self.cohort_blocks(steps) > self.pool.free:
            free = self.pool.free
            lo, hi = 0, steps  # the most ticks whose blocks fit
            while lo < hi:
                mid = (lo + hi + 1) // 2
                if self.cohort_blocks(mid) <= free:
                    lo = mid
                else:
                    hi = mid - 1
            steps = lo
            if not steps:
                return False
        watch = self.future[0][0] if self.future and len(self.running) < cfg.max_num_seqs else math.inf
        watch = min(watch, self.limit)  # the router's next arrival, which may come here
        seconds_of = self.timer.seconds
        now, done = self.now, 0
        used = self.pool.used
        span_start = now
        t = 0.0
        while done < steps:  # the steps of one context bucket at a time
            context = (self.context_base + n * self.tick) // n
            t = seconds_of(n, context)
            m = min(same_context_bucket(context), steps - done)
            if watch < math.inf:  # up to the step after which the arrival is seen
                m = max(1, min(m, math.ceil((watch - now) / t) + self.lag))
            blocks = self.cohort_blocks(m)
            self.tick_cohort(t, m)
            self.pool.take(blocks)
            now += t * m
            done += m
            if (now - t if self.lag else now) >= watch:
                break
        elapsed = now - span_start
        self.now = now
        self.horizon = now - t if self.lag else now
        self.account(elapsed, done, used)
        if self.retire():
            self.drop_finished()
        return True

    # -- the run -------------------------------------------------------------------------------
    def run_until(self, limit: float) -> None:
        """Run steps until the next scheduling decision would see an arrival at ``limit`` (the
        router's next arrival, not yet routed: :func:`run_replicas`), or until nothing is left to
        run (``limit`` math.inf: the whole run of an engine alone)."""
        self.limit = limit
        users = self.users
        while True:
            if self.horizon >= limit and (self.running or self.waiting):
                return
            self.arrive()
            if not self.running and not self.waiting:
                if users is not None and self.finished_users:
                    users.come_back(self)
                    continue
                if not self.future or self.future[0][0] > limit:
                    return
                self.now = self.horizon = max(self.now, self.future[0][0])  # an idle engine wakes up
                continue
            if not self.decode_span() and not self.cohort_step():
                self.explicit_step()
            if users is not None and self.finished_users:
                users.come_back(self)

    def result(self) -> Run:
        """What the run measured (:class:`Run`)."""
        pool = self.pool
        return Run(
            tuple(self.done),
            tuple(self.rejected),
            tuple(dict(g) for g in self.gaps),
            self.run_int,
            self.wait_int,
            self.kv_int,
            self.kv_max,
            self.preemptions,
            self.steps,
            max((t.arrival_s + t.e2e_s for _, t in self.done), default=self.now),
            pool.hit_tokens,
            pool.queried_tokens,
            self.pool.total,
        )

    def load(self) -> tuple[int, int]:
        """(waiting, running) requests: those routed here not yet scheduled (arrived or on their
        way) and those scheduled."""
        return len(self.waiting) + len(self.future), len(self.running)


class _Users:
    """A closed loop's users: each finished user sends its next request after its think time."""

    def __init__(self, workload: Workload, seed: int | str) -> None:
        loop = workload.arrivals
        assert isinstance(loop, ClosedLoop)
        self.workload, self.loop = workload, loop
        self.lengths = random.Random(f"{seed}:lengths")
        self.think = random.Random(f"{seed}:think")
        self.users = user_table(workload, seed)
        self.sent = 0

    def send(self, engine: _Engine, t: float, user: int) -> None:
        """Queue ``user``'s next request at ``t`` (none after the loop's duration or requests)."""
        if self.workload.requests is not None and self.sent >= self.workload.requests:
            return
        if t > self.loop.duration_s:
            return
        prompt, out, shared = draw_lengths(self.workload, self.lengths, self.users, self.sent)
        engine.enter(t, Request(self.sent, t, prompt, out, shared), user)
        self.sent += 1

    def come_back(self, engine: _Engine) -> None:
        """Send the next request of every user whose request finished."""
        loop = self.loop
        for t, user in engine.finished_users:
            exponential = loop.think == "exponential" and loop.think_s > 0
            self.send(engine, t + (self.think.expovariate(1 / loop.think_s) if exponential else loop.think_s), user)
        engine.finished_users.clear()


def _checked(config: EngineConfig, kv_blocks: int, state_blocks: int) -> None:
    """InputError for invalid engine settings, a pool without a block or a negative state."""
    check_config(config)
    if kv_blocks < 1:
        raise InputError(f"kv_blocks: {kv_blocks} must be at least 1", fields=("kv_blocks",))
    if state_blocks < 0:
        raise InputError(f"state_blocks: {state_blocks} must be at least 0", fields=("state_blocks",))


def run_engine(
    timer: StepTimer,
    config: EngineConfig,
    kv_blocks: int,
    requests: Sequence[Request] | None = None,
    *,
    workload: Workload | None = None,
    seed: int | str = 0,
    bounds: Sequence[float] = (),
    state_blocks: int = 0,
) -> Run:
    """Simulate the engine on open-loop ``requests`` (arrival times given) or a closed-loop
    ``workload`` (drawn from ``seed``); ``bounds`` the end of each stage, seconds (requests are
    counted in the stage they arrived in); ``state_blocks`` the blocks of ``kv_blocks`` each
    running request's fixed state holds (module docstring). InputError for invalid settings."""
    _checked(config, kv_blocks, state_blocks)
    engine = _Engine(timer, config, kv_blocks, bounds, state_blocks)
    if requests is not None:
        for r in sorted(requests, key=lambda r: (r.arrival_s, r.index)):
            engine.enter(r.arrival_s, r, -1)
    else:
        assert workload is not None and isinstance(workload.arrivals, ClosedLoop)
        engine.closed = True
        users = engine.users = _Users(workload, seed)
        loop = workload.arrivals
        for user in range(loop.users):
            users.send(engine, loop.ramp_s * user / loop.users, user)
    engine.run_until(math.inf)
    return engine.result()


def run_replicas(
    timer: StepTimer,
    config: EngineConfig,
    kv_blocks: int,
    requests: Sequence[Request],
    replicas: int,
    router: Router,
    *,
    bounds: Sequence[float] = (),
    state_blocks: int = 0,
) -> tuple[Run, ...]:
    """Simulate ``replicas`` engines of the same settings side by side, each open-loop request
    sent at its arrival to the replica ``router`` picks (:func:`router_of`), every replica's
    state at that instant in view: each engine runs until its next scheduling decision would see
    the arrival, the router picks one, the request joins its queue. The runs of the replicas, in
    order. InputError for invalid settings."""
    _checked(config, kv_blocks, state_blocks)
    if replicas < 1:
        raise InputError(f"replicas: {replicas} must be at least 1", fields=("replicas",))
    engines = [_Engine(timer, config, kv_blocks, bounds, state_blocks) for _ in range(replicas)]
    pick = router_of(router, engines)
    for r in sorted(requests, key=lambda r: (r.arrival_s, r.index)):
        for e in engines:
            e.run_until(r.arrival_s)
        engines[pick(r)].enter(r.arrival_s, r, -1)
    for e in engines:
        e.run_until(math.inf)
    return tuple(e.result() for e in engines)
