"""Serving planner: TTFT, TPOT, throughput, GPUs and dollars for a traffic and latency targets.

Continuous batching in steady state (as vLLM and TensorRT-LLM run it), every step timed from its
operators (:func:`~llm_cost.workload.step.build_step`) by one time model (the GPU's calibrated
profile where there is one, else the MFU/MBU estimate). Requests have ``I`` prompt tokens and
``O`` output tokens: the prefill yields the first output token, then ``O - 1`` decode steps.

**Aggregated** (chunked prefill, Agrawal et al. 2024, "Sarathi-Serve"). A replica keeps ``C``
sequences decoding; a step holds their ``C`` tokens and, when prompts are waiting, up to
``P = T - C`` of their tokens (``T`` the token budget per step, vLLM's ``max_num_batched_tokens``).
In steady state ``r = C / (O - 1)`` requests finish, and arrive, per step; a step with prompt
tokens carries what is waiting, ``q = min(P, I max(1, r))``, so a fraction ``f = r I / q`` of
the steps carry prompt tokens (``f < 1``, else the replica cannot keep ``C`` sequences
decoding). With ``t_mix`` and ``t_dec`` the times of a step with and without them::

    mean step   t = f t_mix + (1 - f) t_dec      TPOT = t (mean time between output tokens)
    requests/s per replica  mu = C / ((O - 1) t)
    TTFT = wait for the prompts ahead + ceil(I / q) t_mix (the prompt's own chunks)

The decoding sequences sit at contexts spread evenly over ``I .. I + O - 1`` (four groups), so
sliding windows and the KV read see the distribution, not one mean context.

**Disaggregated** (Zhong et al. 2024, "DistServe"; Patel et al. 2024, "Splitwise"). A pool of
prefill replicas runs batches of ``b`` prompts (``t_pf`` each) and sends each request's KV cache
(kv(I) bytes, over NVLink when both pools share a node, else the network, one link per GPU of
the prefill replica) to a pool of decode replicas that run pure decode steps of ``C`` sequences:
TPOT = t_dec, TTFT = wait + t_pf + transfer.

**Queueing.** Arrivals are Poisson. The prefill server (the chunk slot of a replica, or a
prefill replica) is an M/D/1 queue: mean wait rho S / (2 (1 - rho)) (Pollaczek-Khinchine), with
S the server's time per request. With ``--qps``, the wait for one of the ``C`` decode slots of a
replica is M/D/c by the Sakasegawa (1977) approximation of M/M/c scaled by Allen-Cunneen's
(1 + C_s^2) / 2 = 1/2 for a fixed service time. Without a rate, a configuration runs saturated
(closed loop at concurrency ``C``, as benchmarks run): no slot wait, and the prefill server's
load is what the decode rate brings.

**Pipeline parallelism** keeps ``pp`` micro-batches of ``C / pp`` sequences in flight: a token
passes every stage, so TPOT = pp x the slowest stage's time for one micro-batch.

**Memory**: :mod:`llm_cost.analyses.capacity` (physical GiB x 0.9, weights, workspace of the
step's tokens, reserve, 16-token KV blocks), for the decoding sequences and the prompt in
flight.

**Cost**: ``usd_per_gpu_hour`` x GPUs over the requests served; the GPU time is split between
prompt and output tokens by what prefill adds (aggregated: the chunks' share of step time;
disaggregated: the pools' shares of GPUs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Callable, Iterator, Sequence

from llm_cost.analyses.capacity import DEPLOYMENT, MemoryPolicy, capacity_bytes, policy_note, sequence_kv_bytes, \
    workspace_bytes
from llm_cost.core.errors import InputError
from llm_cost.core.notes import Note, note
from llm_cost.core.serialize import Result
from llm_cost.core.types import Dtype, ServingMode
from llm_cost.core.units import fmt_seconds
from llm_cost.model.kv import kv_bytes
from llm_cost.model.layout import Layout, kv_heads_per_gpu, per_gpu
from llm_cost.perf.timemodel import DEFAULT_NETWORK_GB_S, TimeModel
from llm_cost.specs.schema import HardwareSpec, MLAAttention, ModelSpec
from llm_cost.workload.step import SeqGroup, build_step

__all__ = ["Traffic", "Targets", "Candidate", "ServePlan", "plan", "evaluate", "CONCURRENCY_GRID", "CHUNK_GRID",
           "PREFILL_BATCH_GRID", "MAX_PLAN_GPUS", "DEFAULT_CHUNK_TOKENS", "mdc_wait_s", "md1_wait_s"]

#: Decode concurrencies a search tries per replica (those the KV cache holds).
CONCURRENCY_GRID = tuple(range(1, 33)) + tuple(range(36, 129, 4)) + tuple(range(144, 513, 16)) + tuple(
    range(576, 1025, 64))
#: Token budgets per step (chunked prefill) a search tries; None: prompts run whole in steps of their own.
CHUNK_GRID = (512, 1024, 2048, 4096, 8192, 16384, None)
#: The most prompt tokens a disaggregated prefill step batches (one prompt may be longer).
MAX_PREFILL_TOKENS = 16384
#: Prompts per prefill step a disaggregated prefill replica runs.
PREFILL_BATCH_GRID = (1, 2, 3, 4, 6, 8)
#: The token budget of one evaluated configuration when none is given.
DEFAULT_CHUNK_TOKENS = 8192
#: The most GPUs a plan may use (a search over more would take minutes).
MAX_PLAN_GPUS = 4096
#: GPU budgets up to this are split between prefill and decode pools every way they fit.
_ALL_SPLITS = 16
#: Decode pool sizes a larger budget tries (without a rate, a larger pool only repeats a ratio).
_POOL_COUNTS = (1, 2, 3, 4, 5, 6, 7, 8, 12, 16)
#: Two configurations within this share of each other's tokens/s per GPU are a tie (aggregated wins it).
_TIE = 0.005
#: Decoding-position groups a step's sequences are spread over.
_CONTEXT_GROUPS = 4


@dataclass(frozen=True)
class Traffic:
    """Requests of ``input_tokens`` prompt and ``output_tokens`` output tokens, at ``qps`` per
    second (None: as many as the deployment serves)."""

    input_tokens: int
    output_tokens: int
    qps: float | None = None


@dataclass(frozen=True)
class Targets:
    """Latency targets, seconds (None: no target)."""

    ttft_s: float | None = None
    tpot_s: float | None = None


@dataclass(frozen=True)
class Candidate(Result):
    """One serving configuration and what it achieves. Times are predictions of the plan's time
    model; rates per second; ``usd_*`` only with a price."""

    mode: ServingMode
    layout: Layout  # of one (decode) replica
    replicas: int
    prefill_layout: Layout | None  # disaggregated: one prefill replica
    prefill_replicas: int
    gpus: int
    concurrency: int  # decoding sequences per (decode) replica
    chunk_tokens: int | None  # aggregated: the token budget per step (None: prompts not chunked)
    prefill_batch: int | None  # disaggregated: prompts per prefill step
    max_concurrency: int  # sequences the (decode) replica's KV cache holds at these lengths
    ttft_s: float
    tpot_s: float
    tpot_max_s: float  # the slowest step a token waits for (a step with a chunk)
    queue_s: float  # of TTFT: waiting for the prefill server and, with a rate, for a slot
    kv_transfer_s: float
    requests_per_s: float
    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    tokens_per_s_per_user: float
    prefill_share: float  # of GPU time, what prompts add
    usd_per_request: float | None
    usd_per_million_input_tokens: float | None
    usd_per_million_output_tokens: float | None
    violates: tuple[str, ...]  # "TTFT", "TPOT" (targets missed)

    @property
    def meets(self) -> bool:
        """Whether the configuration meets every target."""
        return not self.violates

    def describe(self) -> str:
        """``2 x TP4`` (replicas x layout) or ``P 2 x TP1 PP2 + D 1 x TP4`` (prefill and decode pools)."""
        def one(layout: Layout, n: int) -> str:
            parts = [f"TP{layout.tp}"] + ([f"PP{layout.pp}"] if layout.pp > 1 else []) + (
                [f"EP{layout.ep}"] if layout.ep > 1 else [])
            return f"{n} x " + " ".join(parts)

        if self.mode == ServingMode.DISAGGREGATED and self.prefill_layout is not None:
            return f"P {one(self.prefill_layout, self.prefill_replicas)} + D {one(self.layout, self.replicas)}"
        return one(self.layout, self.replicas)


@dataclass(frozen=True)
class ServePlan(Result):
    """``llm-cost serve``: the chosen configuration, the frontier, and how they were found."""

    model: str
    gpu: str
    input_tokens: int
    output_tokens: int
    qps: float | None
    ttft_target_s: float | None
    tpot_target_s: float | None
    gpu_budget: int
    usd_per_gpu_hour: float | None
    time_model: str
    weight_bits: float
    kv_bits: int
    compute_dtype: str
    chosen: Candidate
    ttft_s: float
    tpot_s: float
    output_tokens_per_s: float
    output_tokens_per_s_per_gpu: float
    max_concurrency: int
    gpus: int
    usd_per_million_output_tokens: float | None
    usd_per_million_input_tokens: float | None
    usd_per_request: float | None
    binding: str  # what stops the chosen configuration from going faster per GPU
    best_aggregated: Candidate | None
    best_disaggregated: Candidate | None
    mode_verdict: str
    frontier: list[Candidate]  # over every mode searched
    frontier_by_mode: dict[str, list[Candidate]]
    candidates_evaluated: int  # configurations examined (memory, prefill capacity, targets)
    candidates_feasible: int  # of those, the ones that hold their sequences and keep up with their prompts
    steps_timed: int
    conventions: list[Note] = field(default_factory=list)


def md1_wait_s(rho: float, service_s: float) -> float:
    """Mean wait of an M/D/1 queue (Pollaczek-Khinchine): rho S / (2 (1 - rho)); inf at rho >= 1."""
    return math.inf if rho >= 1 else rho * service_s / (2 * (1 - rho))


def mdc_wait_s(rho: float, servers: int, service_s: float) -> float:
    """Mean wait of an M/D/c queue: Sakasegawa's M/M/c approximation rho^(sqrt(2(c+1)) - 1) S /
    (c (1 - rho)), times Allen-Cunneen's (C_a^2 + C_s^2) / 2 = 1/2; inf at rho >= 1."""
    if rho >= 1:
        return math.inf
    if rho <= 0:
        return 0.0
    return rho ** (math.sqrt(2 * (servers + 1)) - 1) * service_s / (servers * (1 - rho)) / 2


def _decode_groups(count: int, input_tokens: int, output_tokens: int) -> list[SeqGroup]:
    """``count`` decoding sequences spread evenly over their output positions 1 .. O - 1: up to
    four groups at the midpoints of equal shares (contexts I + position)."""
    k = min(count, _CONTEXT_GROUPS)
    span = output_tokens - 1
    groups = []
    for i in range(k):
        n = count // k + (1 if i < count % k else 0)
        groups.append(SeqGroup(n, 1, input_tokens + (2 * i + 1) * span // (2 * k)))
    return groups


def _decode_contexts(input_tokens: int, output_tokens: int) -> list[int]:
    """The contexts the KV cache holds for decoding sequences, one per share (whole sequences at
    the midpoints of their output positions)."""
    span = output_tokens - 1
    return [input_tokens + 1 + (2 * i + 1) * span // (2 * _CONTEXT_GROUPS) for i in range(_CONTEXT_GROUPS)]


def _chunk_groups(chunk: int, input_tokens: int) -> list[SeqGroup]:
    """The prompt tokens of one step: whole prompts when the chunk holds them, else one chunk of a
    prompt at the mean cached length of its chunks."""
    if chunk >= input_tokens:
        whole, rest = divmod(chunk, input_tokens)
        return [SeqGroup(whole, input_tokens, 0)] + ([SeqGroup(1, rest, 0)] if rest else [])
    n_chunks = -(-input_tokens // chunk)
    return [SeqGroup(1, chunk, chunk * (n_chunks - 1) // 2)]


class _Steps:
    """Times steps under one time model, each (layout, groups) once."""

    def __init__(self, spec: ModelSpec, gpu: HardwareSpec, model: TimeModel, weight_bits: Fraction, kv_bits: int,
                 compute: Dtype) -> None:
        self.spec, self.gpu, self.model = spec, gpu, model
        self.weight_bits, self.kv_bits, self.compute = weight_bits, kv_bits, compute
        self.cache: dict[tuple, float] = {}

    def seconds(self, layout: Layout, groups: Sequence[SeqGroup]) -> float:
        """Time per token of the step: pp x the slowest stage of one micro-batch of 1/pp of the
        sequences (pp = 1: the step's time)."""
        pp = layout.pp
        groups = [SeqGroup(-(-g.count // pp), g.new_tokens, g.cached) for g in groups] if pp > 1 else list(groups)
        key = (layout, tuple(groups))
        if key not in self.cache:
            step = build_step(self.spec, groups, layout=layout, weight_bits=self.weight_bits, kv_bits=self.kv_bits,
                              compute_dtype=self.compute)
            t = self.model.step_time(step, self.gpu)
            self.cache[key] = pp * max(s.time_s for s in t.stages) if pp > 1 else t.time_s
        return self.cache[key]


@dataclass(frozen=True)
class _Replica:
    """What one replica layout holds: usable bytes, weights, KV per decoding sequence."""

    layout: Layout
    usable_bytes: int
    weight_bytes: int | Fraction
    reserve_bytes: int
    seq_kv_bytes: Fraction  # mean per decoding sequence, paged
    prompt_kv_bytes: Fraction  # one prompt of I tokens, paged

    def room(self, spec: ModelSpec, step_tokens: int, sequences: int, policy: MemoryPolicy) -> Fraction:
        """KV budget with a workspace for a step of ``step_tokens`` tokens and ``sequences`` rows."""
        work = workspace_bytes(spec, self.layout, step_tokens, sequences) if policy.workspace else 0
        return Fraction(self.usable_bytes) - self.weight_bytes - work - self.reserve_bytes


def _replica(spec: ModelSpec, gpu: HardwareSpec, layout: Layout, traffic: Traffic, policy: MemoryPolicy,
             weight_bits: Fraction, kv_bits: int) -> _Replica:
    usable = math.floor(capacity_bytes(gpu, policy.convention) * policy.utilization)
    weights = per_gpu(spec, layout, weight_bits, kv_bits).max_weight_bytes
    seq = sequence_kv_bytes(spec, layout, _decode_contexts(traffic.input_tokens, traffic.output_tokens), kv_bits,
                            policy.block_tokens)
    prompt = sequence_kv_bytes(spec, layout, [traffic.input_tokens], kv_bits, policy.block_tokens)
    return _Replica(layout, usable, weights, policy.reserve_bytes, seq, prompt)


def _layouts(spec: ModelSpec, gpu: HardwareSpec, budget: int) -> list[Layout]:
    """Replica layouts up to ``budget`` GPUs: TP 1, 2, 4, 8 (or 16) dividing the query heads
    within a node, PP 1, 2, 4 or 8, EP 1 or TP for MoE models (:func:`plan` keeps a pipeline only
    where TP alone does not hold the model)."""
    from llm_cost.model.layout import validate_layout

    node = max(1, gpu.interconnect.gpus_per_node)
    heads = spec.attention.num_attention_heads
    out = []
    for tp in (t for t in (1, 2, 4, 8, 16) if t <= node and heads % t == 0):
        for pp in (1, 2, 4, 8):
            if tp * pp > budget or pp > spec.num_hidden_layers:
                continue
            for ep in ([1] if spec.moe is None else sorted({1, tp})):
                layout = Layout(tp, pp, ep, 1)
                try:
                    validate_layout(spec, layout)
                except InputError:
                    continue
                out.append(layout)
    return out


def _smallest_step(chunks: Sequence[int | None], traffic: Traffic) -> int:
    """Tokens of the smallest step a search runs: the smallest budget, or a whole prompt."""
    return min((c for c in chunks if c is not None), default=traffic.input_tokens)


def _useful_pipelines(reps: list[_Replica]) -> list[_Replica]:
    """For each TP (and EP) degree, the replica with the fewest pipeline stages that holds the
    model: a pipeline buys memory and costs every token a pass through each stage."""
    fewest: dict[tuple[int, int], int] = {}
    for r in reps:
        key = (r.layout.tp, r.layout.ep)
        fewest[key] = min(fewest.get(key, r.layout.pp), r.layout.pp)
    return [r for r in reps if r.layout.pp == fewest[(r.layout.tp, r.layout.ep)]]


def _cost(c: dict, price: float | None, traffic: Traffic) -> dict:
    """Dollar figures of a candidate's rates (None without a price)."""
    if price is None or not c["requests_per_s"]:
        return {"usd_per_request": None, "usd_per_million_input_tokens": None, "usd_per_million_output_tokens": None}
    usd_s = price * c["gpus"] / 3600
    per_request = usd_s / c["requests_per_s"]
    share = c["prefill_share"]
    return {"usd_per_request": per_request,
            "usd_per_million_input_tokens": per_request * share / traffic.input_tokens * 1e6,
            "usd_per_million_output_tokens": per_request * (1 - share) / traffic.output_tokens * 1e6}


def _finish(c: dict, traffic: Traffic, targets: Targets, price: float | None,
            also: tuple[str, ...] = ()) -> Candidate:
    """The candidate of the figures ``c``, with its rates, costs and the targets it misses (and
    ``also``: "memory" for a configuration evaluated beyond what its KV cache holds)."""
    violates = also + tuple(name for name, value, target in (("TTFT", c["ttft_s"], targets.ttft_s),
                                                              ("TPOT", c["tpot_s"], targets.tpot_s))
                            if target is not None and value > target)
    rate = c["requests_per_s"]
    out_rate = rate * traffic.output_tokens
    return Candidate(**c, output_tokens_per_s=out_rate, output_tokens_per_s_per_gpu=out_rate / c["gpus"],
                     tokens_per_s_per_user=1 / c["tpot_s"], **_cost(c, price, traffic), violates=violates)


def _slots(replica_rate: float, qps: float | None, gpus_per_replica: int, cap: int,
           wait: Callable[[float], float]) -> Iterator[tuple[int, float, float]]:
    """(replicas, per-replica request rate, slot wait) options: without ``qps`` the saturated
    rate (replicas 0: as many as the budget holds); with it, the fewest replicas that carry
    ``qps`` and up to seven more (a shorter wait for a slot), within ``cap`` GPUs."""
    if qps is None:
        yield 0, replica_rate, 0.0
        return
    first = max(1, math.ceil(qps / replica_rate * (1 + 1e-12)))
    for n in range(first, first + 8):
        if n * gpus_per_replica > cap:
            return
        lam = qps / n
        yield n, lam, wait(lam / replica_rate)


def _aggregated_point(spec: ModelSpec, steps: _Steps, rep: _Replica, traffic: Traffic, targets: Targets,
                      budget: int, price: float | None, policy: MemoryPolicy, C: int, T: int | None,
                      strict_memory: bool = True) -> tuple[list[Candidate], str | None]:
    """The candidates of ``C`` decoding sequences and a ``T``-token budget on one replica layout
    (one, or with a rate one per replica count tried), or ([], why not): "budget" (no room for
    prompt tokens), "memory" (the KV cache does not hold them; with ``strict_memory=False`` the
    candidate is kept and marked), "prefill" (prompts arrive faster than chunks take them).
    ``T=None``: no chunking; waiting prompts run whole in a step of their own while decoding
    waits (vLLM without chunked prefill)."""
    I, O = traffic.input_tokens, traffic.output_tokens
    g = rep.layout.gpus
    arrivals = C / (O - 1)  # prompts per step in steady state
    if T is None:
        q = I * max(1, math.ceil(arrivals))  # whole prompts per prefill step
    elif T - C < 1:
        return [], "budget"
    else:
        q = min(T - C, math.ceil(I * max(1.0, arrivals)))  # prompt tokens a step with a chunk carries
    in_flight = -(-q // I)  # prompts whose KV the step writes
    room = rep.room(spec, q if T is None else T, C + in_flight, policy)
    over = C * rep.seq_kv_bytes + in_flight * rep.prompt_kv_bytes > room
    if over and strict_memory:
        return [], "memory"
    f = arrivals * I / q
    if f > 1:
        return [], "prefill"
    decoding = _decode_groups(C, I, O)
    t_dec = steps.seconds(rep.layout, decoding)
    if T is None:
        t_mix = steps.seconds(rep.layout, _chunk_groups(q, I)) + t_dec
    else:
        t_mix = steps.seconds(rep.layout, decoding + _chunk_groups(q, I))
    t = f * t_mix + (1 - f) * t_dec
    mu = C / ((O - 1) * t)
    service = I * t_mix / q  # the prompt server's time per prompt
    own = -(-I // q) * t_mix
    max_c = max(0, int(room // rep.seq_kv_bytes)) if rep.seq_kv_bytes else C
    out = []
    for n, lam, slot_wait in _slots(mu, traffic.qps, g, budget, lambda rho: mdc_wait_s(rho, C, own + (O - 1) * t)):
        replicas = n or budget // g
        wait = md1_wait_s(lam * service, service)
        if traffic.qps is None:  # a closed loop of C requests holds at most C - 1 prompts ahead
            wait = min(wait, (C - 1) * service)
        queue = wait + slot_wait
        if not replicas or math.isinf(queue):
            continue
        c = dict(mode=ServingMode.AGGREGATED, layout=rep.layout, replicas=replicas, prefill_layout=None,
                 prefill_replicas=0, gpus=replicas * g, concurrency=C, chunk_tokens=T, prefill_batch=None,
                 max_concurrency=max_c, ttft_s=queue + own, tpot_s=t, tpot_max_s=t_mix, queue_s=queue,
                 kv_transfer_s=0.0, requests_per_s=lam * replicas, prefill_share=f * (t_mix - t_dec) / t)
        out.append(_finish(c, traffic, targets, price, ("memory",) if over else ()))
    return out, None if out else "prefill"


def _aggregated(spec: ModelSpec, steps: _Steps, rep: _Replica, traffic: Traffic, targets: Targets, budget: int,
                price: float | None, policy: MemoryPolicy, concurrency: Sequence[int], chunks: Sequence[int],
                counts: list[int], refusals: dict[str, int]) -> list[Candidate]:
    """Every aggregated candidate of one replica layout; ``refusals`` counts why others were not."""
    out = []
    for T in chunks:
        for C in concurrency:
            found, why = _aggregated_point(spec, steps, rep, traffic, targets, budget, price, policy, C, T)
            counts[0] += max(1, len(found))  # each replica count tried for a rate is a configuration
            out += found
            if why:
                refusals[why] = refusals.get(why, 0) + 1
    return out


def _link_bytes_s(gpu: HardwareSpec, gpus: int, network_gb_s: float) -> float:
    ic = gpu.interconnect
    if gpus <= ic.gpus_per_node and ic.bandwidth_gb_s_per_direction > 0:
        return ic.bandwidth_gb_s_per_direction * 1e9
    return network_gb_s * 1e9


def _disaggregated(spec: ModelSpec, gpu: HardwareSpec, steps: _Steps, reps: list[_Replica], traffic: Traffic,
                   targets: Targets, budget: int, price: float | None, policy: MemoryPolicy, kv_bits: int,
                   concurrency: Sequence[int], network_gb_s: float, counts: list[int]) -> list[Candidate]:
    """Every disaggregated candidate: a prefill pool and a decode pool of any two replica layouts."""
    I, O = traffic.input_tokens, traffic.output_tokens
    kv_request = kv_bytes(spec, I, kv_bits)
    prefills = []  # (replica, batch, t_pf)
    examined_prefills = 0
    for rep in reps:
        for b in PREFILL_BATCH_GRID:
            if b > 1 and b * I > MAX_PREFILL_TOKENS:
                continue
            examined_prefills += 1
            if b * rep.prompt_kv_bytes > rep.room(spec, b * I, b, policy):
                continue
            prefills.append((rep, b, steps.seconds(rep.layout, [SeqGroup(b, I, 0)])))
    decodes = []  # (replica, C, t_dec, max_c)
    for rep in reps:
        room = rep.room(spec, max(concurrency), max(concurrency), policy)
        max_c = int(room // rep.seq_kv_bytes) if rep.seq_kv_bytes and room > 0 else 0
        fitting = [C for C in concurrency if C <= max_c]
        # configurations whose decode pool does not hold C sequences are examined and refused
        counts[0] += examined_prefills * (len(concurrency) - len(fitting))
        for C in fitting:
            decodes.append((rep, C, steps.seconds(rep.layout, _decode_groups(C, I, O)), max_c))
    counts[0] += (examined_prefills - len(prefills)) * len(decodes)  # prefill replicas too small
    if budget > _ALL_SPLITS and traffic.qps is None:
        dominated = len(prefills)
        prefills = _undominated(prefills)
        counts[0] += (dominated - len(prefills)) * len(decodes)
    out = []
    for prep, b, t_pf in prefills:
        gp = prep.layout.gpus
        mu_p = b / t_pf
        for drep, C, t_dec, max_c in decodes:
            gd = drep.layout.gpus
            mu_d = C / ((O - 1) * t_dec)
            for n_p, n_d in _pool_sizes(gp, gd, mu_p, mu_d, traffic.qps, budget):
                counts[0] += 1
                lam = traffic.qps if traffic.qps is not None else n_d * mu_d
                rho_p = lam / (n_p * mu_p)
                if rho_p >= 1 or (traffic.qps is not None and lam >= n_d * mu_d):
                    continue
                lam_p = lam / n_p
                queue = md1_wait_s(rho_p, t_pf) + (b - 1) / (2 * lam_p)
                if traffic.qps is not None:
                    queue += mdc_wait_s(lam / (n_d * mu_d), C, (O - 1) * t_dec)
                link = _link_bytes_s(gpu, n_p * gp + n_d * gd, network_gb_s)
                transfer = kv_request / (gp * link)
                if lam * transfer >= n_p:  # the prefill pool's links cannot send the KV as fast as it comes
                    continue
                gpus = n_p * gp + n_d * gd
                c = dict(mode=ServingMode.DISAGGREGATED, layout=drep.layout, replicas=n_d, prefill_layout=prep.layout,
                         prefill_replicas=n_p, gpus=gpus, concurrency=C, chunk_tokens=None, prefill_batch=b,
                         max_concurrency=max_c, ttft_s=queue + t_pf + transfer, tpot_s=t_dec, tpot_max_s=t_dec,
                         queue_s=queue, kv_transfer_s=transfer, requests_per_s=lam, prefill_share=n_p * gp / gpus)
                out.append(_finish(c, traffic, targets, price))
    return out


def _undominated(prefills: list[tuple[_Replica, int, float]]) -> list[tuple[_Replica, int, float]]:
    """The prefill configurations no other beats on both prompts/s per GPU and time per batch
    (a large budget's pools are sized to keep up, so a dominated one only costs GPUs or TTFT)."""
    def rate(p: tuple[_Replica, int, float]) -> float:
        return p[1] / p[2] / p[0].layout.gpus

    return [p for p in prefills if not any(rate(q) >= rate(p) and q[2] <= p[2] and q != p
                                           and (rate(q) > rate(p) or q[2] < p[2]) for q in prefills)]


def _pool_sizes(gp: int, gd: int, mu_p: float, mu_d: float, qps: float | None,
                budget: int) -> Iterator[tuple[int, int]]:
    """(prefill replicas, decode replicas) within ``budget`` GPUs. Without a rate: every pair that
    fits a budget of up to :data:`_ALL_SPLITS` GPUs; beyond, decode pools of :data:`_POOL_COUNTS`
    replicas, each with the two smallest prefill pools that keep up with it.
    With a rate: the fewest decode replicas that carry it and up to four prefill pool sizes from
    the fewest that carry it."""
    if qps is None:
        if budget <= _ALL_SPLITS:
            for n_d in range(1, (budget - gp) // gd + 1):
                for n_p in range(1, (budget - n_d * gd) // gp + 1):
                    yield n_p, n_d
            return
        for n_d in _POOL_COUNTS:  # larger pools repeat these ratios: the same tokens/s per GPU
            fewest = max(1, math.ceil(n_d * mu_d / mu_p * (1 + 1e-12)))  # a prefill pool that keeps up
            for n_p in (fewest, fewest + 1):
                if n_p * gp + n_d * gd <= budget:
                    yield n_p, n_d
        return
    n_d = max(1, math.ceil(qps / mu_d * (1 + 1e-12)))
    first = max(1, math.ceil(qps / mu_p * (1 + 1e-12)))
    for n_p in range(first, first + 4):
        if n_p * gp + n_d * gd <= budget:
            yield n_p, n_d


def _frontier(cands: list[Candidate]) -> list[Candidate]:
    """The Pareto frontier of output tokens/s per GPU against tokens/s per user, by rising speed
    per user (no other candidate is better on both)."""
    best: list[Candidate] = []
    for c in sorted(cands, key=lambda c: (-c.tokens_per_s_per_user, -c.output_tokens_per_s_per_gpu, c.violates != (),
                                          c.ttft_s)):
        if not best or c.output_tokens_per_s_per_gpu > best[-1].output_tokens_per_s_per_gpu:
            best.append(c)
    return list(reversed(best))


def _choose(cands: list[Candidate], qps: float | None) -> Candidate:
    """The best candidate meeting the targets: with a rate, the fewest GPUs (then the most
    tokens/s per GPU); without, the most output tokens/s per GPU (then the fewest GPUs).
    Within a tie (:data:`_TIE`) aggregated serving is chosen: one pool is simpler to run."""
    def simpler(c: Candidate) -> int:
        return 0 if c.mode == ServingMode.AGGREGATED else 1

    if qps is not None:
        fewest = min(c.gpus for c in cands)
        pool = [c for c in cands if c.gpus == fewest]
    else:
        pool = cands
    top = max(c.output_tokens_per_s_per_gpu for c in pool)
    near = [c for c in pool if c.output_tokens_per_s_per_gpu >= top * (1 - _TIE)]
    return min(near, key=lambda c: (simpler(c), -c.output_tokens_per_s_per_gpu, c.gpus, c.ttft_s))


def _impossible(cands: list[Candidate], targets: Targets, label: str,
                few_kv_heads: Callable[[Candidate], bool]) -> InputError:
    """The one-line error for targets no candidate meets, with the nearest achievable values
    (said to be pessimistic where the profile's decode attention has few KV heads in flight)."""
    def best(metric: str, pool: list[Candidate]) -> Candidate:
        return min(pool, key=lambda c: getattr(c, metric))

    parts = []
    for flag, metric, target in (("--tpot", "tpot_s", targets.tpot_s), ("--ttft", "ttft_s", targets.ttft_s)):
        if target is None:
            continue
        b = best(metric, cands)
        if getattr(b, metric) > target:
            caveat = (", pessimistic: few KV heads in flight and no split-KV in the profile"
                      if metric == "tpot_s" and few_kv_heads(b) else "")
            parts.append(f"{flag} {fmt_seconds(target)}: the fastest configuration reaches {fmt_seconds(getattr(b, metric))} "
                         f"({b.describe()}, concurrency {b.concurrency}; {label}{caveat})")
    if not parts:  # each target alone is reachable, both together are not
        assert targets.tpot_s is not None and targets.ttft_s is not None
        pool = [c for c in cands if c.tpot_s <= targets.tpot_s]
        b = best("ttft_s", pool)
        parts.append(f"--ttft {fmt_seconds(targets.ttft_s)} with --tpot {fmt_seconds(targets.tpot_s)}: no configuration meets "
                     f"both; at that TPOT the lowest TTFT is {fmt_seconds(b.ttft_s)} ({b.describe()}, concurrency "
                     f"{b.concurrency}; {label})")
    return InputError("; ".join(parts))


def _binding(chosen: Candidate, cands: list[Candidate], concurrency: Sequence[int]) -> str:
    """What stops the chosen configuration going further: the next concurrency of the same
    configuration misses a target, or its KV cache would not hold it ("memory")."""
    bigger = [c for c in concurrency if c > chosen.concurrency]
    if not bigger:
        return "the largest concurrency searched"
    same = [c for c in cands if c.concurrency == bigger[0] and (c.mode, c.layout, c.replicas, c.prefill_layout,
                                                                 c.prefill_replicas, c.chunk_tokens,
                                                                 c.prefill_batch) ==
            (chosen.mode, chosen.layout, chosen.replicas, chosen.prefill_layout, chosen.prefill_replicas,
             chosen.chunk_tokens, chosen.prefill_batch)]
    if not same:
        return "memory" if bigger[0] > chosen.max_concurrency else "prefill capacity"
    if same[0].violates:
        return " and ".join(same[0].violates)
    return "throughput per GPU (a larger concurrency is slower per GPU)"


def _verdict(agg: Candidate | None, dis: Candidate | None, modes: Sequence[ServingMode], budget: int) -> str:
    """Which serving mode wins for this traffic, and the figures that say why."""
    if ServingMode.DISAGGREGATED not in modes:
        return "aggregated only (--mode aggregated)"
    if ServingMode.AGGREGATED not in modes:
        return "disaggregated only (--mode disaggregated)"
    if dis is None:
        return ("aggregated: disaggregated serving needs at least 2 GPUs" if budget < 2 else
                "aggregated: no disaggregated split meets the targets")
    if agg is None:
        return "disaggregated: no aggregated configuration meets the targets"
    ratio = dis.output_tokens_per_s_per_gpu / agg.output_tokens_per_s_per_gpu
    why = (f"aggregated: TPOT {fmt_seconds(agg.tpot_s)}, prompt chunks take {agg.prefill_share:.0%} of step time; "
           f"disaggregated: TPOT {fmt_seconds(dis.tpot_s)}, {dis.prefill_share:.0%} of GPUs prefill, KV transfer "
           f"{fmt_seconds(dis.kv_transfer_s)} per request")
    if abs(ratio - 1) < _TIE:
        return f"a tie: both serve the same output tokens/s per GPU within {_TIE:.1%}; aggregated is simpler ({why})"
    winner = "disaggregated" if ratio > 1 else "aggregated"
    return f"{winner} serves {max(ratio, 1 / ratio):.2f}x the output tokens/s per GPU ({why})"


def plan(spec: ModelSpec, gpu: HardwareSpec, traffic: Traffic, targets: Targets, model: TimeModel, *,
         gpus: int | None = None, weight_bits: int | Fraction = 16, kv_bits: int = 16,
         compute_dtype: Dtype = Dtype.BF16, usd_per_gpu_hour: float | None = None,
         policy: MemoryPolicy = DEPLOYMENT, network_gb_s: float = DEFAULT_NETWORK_GB_S,
         modes: Sequence[ServingMode] = (ServingMode.AGGREGATED, ServingMode.DISAGGREGATED),
         layouts: Sequence[Layout] | None = None, concurrency: Sequence[int] = CONCURRENCY_GRID,
         chunks: Sequence[int] = CHUNK_GRID, extra_notes: Sequence[Note] = ()) -> ServePlan:
    """Search serving configurations and choose the best meeting ``targets`` (module docstring).

    ``gpus`` is the GPU budget (default: one node, or :data:`MAX_PLAN_GPUS` with ``traffic.qps``).
    InputError when no layout holds the model within the budget (saying how many GPUs it needs),
    or when no configuration meets the targets (naming the nearest achievable values)."""
    if traffic.output_tokens < 2:
        raise InputError("--output: at least 2 tokens (the prefill gives the first, decode steps the rest)")
    budget = gpus or (MAX_PLAN_GPUS if traffic.qps is not None else max(1, gpu.interconnect.gpus_per_node))
    if budget > MAX_PLAN_GPUS:
        raise InputError(f"--gpus: {budget:,} is more than the {MAX_PLAN_GPUS:,} GPUs a plan covers")
    bits = Fraction(weight_bits).limit_denominator(1000)
    steps = _Steps(spec, gpu, model, bits, kv_bits, compute_dtype)
    candidate_layouts = list(layouts) if layouts is not None else _layouts(spec, gpu, budget)
    reps = [rep for rep in (_replica(spec, gpu, layout, traffic, policy, bits, kv_bits) for layout in candidate_layouts)
            if rep.room(spec, _smallest_step(chunks, traffic), 1, policy) >= rep.seq_kv_bytes + rep.prompt_kv_bytes]
    if layouts is None:
        reps = _useful_pipelines(reps)
    if not reps:
        raise _too_big(spec, gpu, traffic, policy, bits, kv_bits, budget, layouts)
    if tuple(modes) == (ServingMode.DISAGGREGATED,) and budget < 2:
        raise InputError("--mode disaggregated: a prefill pool and a decode pool need at least 2 GPUs; give --gpus 2 "
                         "or more")
    counts, refusals = [0], {}
    cands: list[Candidate] = []
    if ServingMode.AGGREGATED in modes:
        for rep in reps:
            cands += _aggregated(spec, steps, rep, traffic, targets, budget, usd_per_gpu_hour, policy, concurrency,
                                 chunks, counts, refusals)
    if ServingMode.DISAGGREGATED in modes:
        cands += _disaggregated(spec, gpu, steps, reps, traffic, targets, budget, usd_per_gpu_hour, policy, kv_bits,
                                concurrency, network_gb_s, counts)
    if not cands:
        most = None
        if traffic.qps is not None:  # what the budget carries at most, saturated, for the message
            try:
                most = plan(spec, gpu, Traffic(traffic.input_tokens, traffic.output_tokens), Targets(), model,
                            gpus=budget, weight_bits=weight_bits, kv_bits=kv_bits, compute_dtype=compute_dtype,
                            policy=policy, network_gb_s=network_gb_s, modes=modes, layouts=layouts,
                            concurrency=concurrency, chunks=chunks).frontier
            except InputError:
                most = None
        raise _nothing_sustains(spec, gpu, traffic, budget, refusals,
                                max(most, key=lambda c: c.requests_per_s) if most else None)
    meeting = [c for c in cands if c.meets]
    if not meeting:
        raise _impossible(cands, targets, model.label, lambda c: bool(_few_kv_heads_note(spec, model, c)))
    chosen = _choose(meeting, traffic.qps)
    agg = [c for c in meeting if c.mode == ServingMode.AGGREGATED]
    dis = [c for c in meeting if c.mode == ServingMode.DISAGGREGATED]
    best_agg = _choose(agg, traffic.qps) if agg else None
    best_dis = _choose(dis, traffic.qps) if dis else None
    fronts = {m.value: _frontier([c for c in cands if c.mode == m]) for m in modes}
    return _result(spec, gpu, traffic, targets, model, budget, usd_per_gpu_hour, bits, kv_bits, compute_dtype, policy,
                   extra_notes, chosen, _binding(chosen, cands, concurrency), best_agg, best_dis,
                   _verdict(best_agg, best_dis, modes, budget), _frontier(cands), fronts, counts[0], len(cands), len(steps.cache))


def _result(spec: ModelSpec, gpu: HardwareSpec, traffic: Traffic, targets: Targets, model: TimeModel, budget: int,
            price: float | None, bits: Fraction, kv_bits: int, compute: Dtype, policy: MemoryPolicy,
            extra_notes: Sequence[Note], chosen: Candidate, binding: str, best_agg: Candidate | None,
            best_dis: Candidate | None, verdict: str, frontier: list[Candidate],
            fronts: dict[str, list[Candidate]], evaluated: int, feasible: int, steps: int) -> ServePlan:
    """The plan's result around its chosen configuration, with the conventions it rests on."""
    conventions = [note("serve.model", label=model.label), note("serve.queueing", qps=traffic.qps),
                   policy_note(gpu, policy), note("serve.concurrency"), note("serve.cost", price=price), *extra_notes,
                   *spec.context_note([traffic.input_tokens + traffic.output_tokens]),
                   *_few_kv_heads_note(spec, model, chosen)]
    return ServePlan(spec.name, gpu.name, traffic.input_tokens, traffic.output_tokens, traffic.qps, targets.ttft_s,
                     targets.tpot_s, budget, price, model.label, float(bits), kv_bits, compute.value, chosen,
                     chosen.ttft_s, chosen.tpot_s, chosen.output_tokens_per_s, chosen.output_tokens_per_s_per_gpu,
                     chosen.max_concurrency, chosen.gpus, chosen.usd_per_million_output_tokens,
                     chosen.usd_per_million_input_tokens, chosen.usd_per_request, binding, best_agg, best_dis, verdict,
                     frontier, fronts, evaluated, feasible, steps, conventions)


def _few_kv_heads_note(spec: ModelSpec, model: TimeModel, chosen: Candidate) -> list[Note]:
    """A warning when the chosen decode steps have fewer sequences x KV heads per GPU in flight
    than the profile's decode-attention saturation: its kernels split no KV (no flash-decoding),
    so engines that do read the cache faster there and TPOT is pessimistic."""
    profile = getattr(model, "profile", None)
    if profile is None or isinstance(spec.attention, MLAAttention):
        return []
    in_flight = chosen.concurrency * kv_heads_per_gpu(spec, chosen.layout.tp)
    saturation = profile.parameters.kv_saturation_heads
    if in_flight >= saturation:
        return []
    return [note("serve.few_kv_heads", in_flight=in_flight, saturation=saturation, profile=profile.name)]


def _nothing_sustains(spec: ModelSpec, gpu: HardwareSpec, traffic: Traffic, budget: int,
                      refusals: dict[str, int], most: Candidate | None = None) -> InputError:
    """The error when no configuration searched is feasible, naming the commonest reason (with a
    rate: the most requests/s the budget carries, ``most``)."""
    if traffic.qps is not None:
        carried = (f"; they carry at most {most.requests_per_s:.3g} requests/s ({most.describe()}, concurrency "
                   f"{most.concurrency}, saturated)" if most is not None else "")
        return InputError(f"--qps {traffic.qps:g}: no configuration within {budget:,} x {gpu.name} carries it"
                          f"{carried}; raise --gpus or lower --qps")
    if refusals.get("memory", 0) >= refusals.get("prefill", 0):
        return InputError(f"{spec.name} on {gpu.name}: the KV cache holds none of the concurrencies searched at "
                          f"{traffic.input_tokens:,} + {traffic.output_tokens:,} tokens; use more GPUs (--gpus), "
                          "fewer bits (--weights-dtype, --kv-dtype) or shorter requests")
    return InputError(f"{spec.name} on {gpu.name}: {traffic.input_tokens:,}-token prompts arrive faster than the "
                      "token budgets searched take them; give a larger --chunk or fewer output tokens per prompt")


def _too_big(spec: ModelSpec, gpu: HardwareSpec, traffic: Traffic, policy: MemoryPolicy, bits: Fraction,
             kv_bits: int, budget: int, forced: Sequence[Layout] | None) -> InputError:
    """The error for a model no layout within the budget (or none of the ``forced`` layouts)
    holds, with the GPUs it would need and the memory accounting that decided it."""
    usable = math.floor(capacity_bytes(gpu, policy.convention) * policy.utilization)
    memory = (f"{usable / 1e9:,.1f} GB usable per GPU at {float(policy.utilization):.0%}, less a "
              f"{policy.reserve_bytes / 1e9:,.2f} GB reserve")
    what = f"{spec.name} at {float(bits):g} bits with one {traffic.input_tokens + traffic.output_tokens:,}-token sequence"
    for layout in _layouts(spec, gpu, MAX_PLAN_GPUS):
        rep = _replica(spec, gpu, layout, traffic, policy, bits, kv_bits)
        if rep.room(spec, _smallest_step(CHUNK_GRID, traffic), 1, policy) >= rep.seq_kv_bytes + rep.prompt_kv_bytes:
            if forced:
                shown = ", ".join(f"TP {f.tp} x PP {f.pp}" for f in forced)
                return InputError(f"--tp/--pp: {shown} does not hold {what} ({memory}); the fewest GPUs that do: "
                                  f"{layout.gpus} (TP {layout.tp} x PP {layout.pp})")
            if layout.gpus > budget:
                return InputError(f"--gpus: {what} does not fit {budget:,} x {gpu.name} ({memory}); it needs "
                                  f"{layout.gpus} (TP {layout.tp} x PP {layout.pp})")
    return InputError(f"{what} fits no layout searched (TP up to the node, PP up to 8) of {gpu.name} ({memory}); "
                      "give fewer bits (--weights-dtype, --kv-dtype), shorter requests or more usable memory")


def evaluate(spec: ModelSpec, gpu: HardwareSpec, traffic: Traffic, targets: Targets, model: TimeModel,
             layout: Layout, concurrency: int, *, chunk_tokens: int | None = DEFAULT_CHUNK_TOKENS, replicas: int = 1,
             weight_bits: int | Fraction = 16, kv_bits: int = 16, compute_dtype: Dtype = Dtype.BF16,
             usd_per_gpu_hour: float | None = None, policy: MemoryPolicy = DEPLOYMENT,
             network_gb_s: float = DEFAULT_NETWORK_GB_S, extra_notes: Sequence[Note] = ()) -> ServePlan:
    """One aggregated configuration, saturated: ``replicas`` x ``layout`` at ``concurrency``
    decoding sequences each and a token budget of ``chunk_tokens`` per step; the same result as
    :func:`plan`, whose frontier is that one row. Targets it misses, and a KV cache that does not
    hold its sequences ("memory"), are reported in ``violates``, not refused. InputError for a
    budget with no room for prompt tokens, or prompts that arrive faster than chunks take them."""
    I, O = traffic.input_tokens, traffic.output_tokens
    if O < 2:
        raise InputError("--output: at least 2 tokens (the prefill gives the first, decode steps the rest)")
    if chunk_tokens is not None and concurrency >= chunk_tokens:
        raise InputError(f"--batch {concurrency:,} leaves no room for prompt tokens in a step of --chunk "
                         f"{chunk_tokens:,} tokens; give a larger --chunk")
    bits = Fraction(weight_bits).limit_denominator(1000)
    steps = _Steps(spec, gpu, model, bits, kv_bits, compute_dtype)
    rep = _replica(spec, gpu, layout, Traffic(I, O), policy, bits, kv_bits)
    if rep.room(spec, _smallest_step([chunk_tokens], Traffic(I, O)), 1, policy) < rep.seq_kv_bytes + rep.prompt_kv_bytes:
        raise _too_big(spec, gpu, Traffic(I, O), policy, bits, kv_bits, layout.gpus, [layout])
    budget = layout.gpus * replicas
    found, _ = _aggregated_point(spec, steps, rep, Traffic(I, O), targets, budget, usd_per_gpu_hour, policy,
                                 concurrency, chunk_tokens, strict_memory=False)
    if not found:
        raise InputError(f"--batch {concurrency:,}: each request brings {I:,} prompt tokens per {O - 1:,} decode "
                         "steps, more than the steps take; lower --batch or raise --chunk")
    c = found[0]
    binding = (f"memory: the KV cache holds {c.max_concurrency:,} of these {concurrency:,} sequences per replica"
               if "memory" in c.violates else "none (one configuration evaluated)")
    return _result(spec, gpu, Traffic(I, O), targets, model, budget, usd_per_gpu_hour, bits, kv_bits, compute_dtype,
                   policy, extra_notes, c, binding, c, None, "one aggregated configuration evaluated", [c],
                   {ServingMode.AGGREGATED.value: [c]}, 1, 0 if "memory" in c.violates else 1,
                   len(steps.cache))
