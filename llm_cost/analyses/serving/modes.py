"""The steady state of aggregated (chunked prefill) and disaggregated (prefill and decode pools)
serving: every candidate configuration of a replica layout and what it achieves (see
:mod:`llm_cost.analyses.serving`)."""

from __future__ import annotations

import bisect
import math
from collections.abc import Callable, Iterator, Sequence

from llm_cost.analyses.capacity import MemoryPolicy
from llm_cost.analyses.serving.queues import md1_wait_s, mdc_wait_s
from llm_cost.analyses.serving.replicas import (
    Replica,
    StepTimes,
    chunk_groups,
    decode_groups,
)
from llm_cost.analyses.serving.results import (
    MAX_PREFILL_TOKENS,
    PREFILL_BATCH_GRID,
    Candidate,
    Targets,
    Traffic,
)
from llm_cost.core.choices import ServingMode
from llm_cost.core.labels import Limit
from llm_cost.core.records import record
from llm_cost.model.kv import kv_bytes
from llm_cost.model.layout import Layout
from llm_cost.specs.schema import HardwareSpec, ModelSpec
from llm_cost.workload.step import SeqGroup

#: GPU budgets up to this are split between prefill and decode pools every way they fit.
_ALL_SPLITS = 16
#: Decode pool sizes a larger budget tries (without a rate, a larger pool only repeats a ratio).
_POOL_COUNTS = (1, 2, 3, 4, 5, 6, 7, 8, 12, 16)


def _cost(c: dict, price: float | None, traffic: Traffic) -> dict:
    """Dollar figures of a candidate's rates (None without a price; :data:`~llm_cost.analyses.serving.results.COST_SPLIT`):
    per request; per million output tokens with all the GPU time charged to them, as a simulated run
    prices them; and the GPU time split between input and output tokens by what prefill adds."""
    names = ("usd_per_request", "usd_per_million_input_tokens", "usd_per_million_output_tokens",
             "usd_per_million_output_tokens_split")  # fmt: skip
    if price is None or not c["requests_per_s"]:
        return dict.fromkeys(names)
    usd_s = price * c["gpus"] / 3600
    per_request = usd_s / c["requests_per_s"]
    share = c["prefill_share"]
    return {
        "usd_per_request": per_request,
        "usd_per_million_input_tokens": per_request * share / traffic.input_tokens * 1e6,
        "usd_per_million_output_tokens": per_request / traffic.output_tokens * 1e6,
        "usd_per_million_output_tokens_split": per_request * (1 - share) / traffic.output_tokens * 1e6,
    }


def _finish(
    c: dict, traffic: Traffic, targets: Targets, price: float | None, also: tuple[Limit, ...] = ()
) -> Candidate:
    """The candidate of the figures ``c``, with its rates, costs and the targets it misses (and
    ``also``: MEMORY for a configuration evaluated beyond what its KV cache holds)."""
    violates = also + tuple(
        name
        for name, value, target in (
            (Limit.TTFT, c["ttft_s"], targets.ttft_s),
            (Limit.TPOT, c["tpot_s"], targets.tpot_s),
        )
        if target is not None and value > target
    )
    rate = c["requests_per_s"]
    out_rate = rate * traffic.output_tokens
    return Candidate(
        **c,
        output_tokens_per_s=out_rate,
        output_tokens_per_s_per_gpu=out_rate / c["gpus"],
        tokens_per_s_per_user=1 / c["tpot_s"],
        **_cost(c, price, traffic),
        violates=violates,
    )


def _slots(
    replica_rate: float, qps: float | None, gpus_per_replica: int, cap: int, wait: Callable[[float], float]
) -> Iterator[tuple[int, float, float]]:
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


@record
class _Point:
    """One aggregated configuration past the checks that need no step time (:func:`_point`): its
    steps' groups and what its figures need besides their times."""

    rep: Replica
    C: int
    T: int | None
    q: int
    f: float
    decoding: list[SeqGroup]
    chunk: list[SeqGroup]
    max_c: int
    over: bool


def _point(
    spec: ModelSpec, rep: Replica, traffic: Traffic, policy: MemoryPolicy, C: int, T: int | None, strict_memory: bool
) -> tuple[_Point | None, Limit | None]:
    """The configuration of ``C`` decoding sequences and a ``T``-token budget on ``rep`` before its
    steps are timed, or (None, why not): :func:`aggregated_point`'s BUDGET, MEMORY and PREFILL."""
    I, O, h = traffic.computed_tokens, traffic.output_tokens, traffic.input_tokens - traffic.computed_tokens
    arrivals = C / (O - 1)  # prompts per step in steady state
    if T is None:
        q = I * max(1, math.ceil(arrivals))  # whole prompts per prefill step
    elif T - C < 1:
        return None, Limit.BUDGET
    else:
        q = min(T - C, math.ceil(I * max(1.0, arrivals)))  # prompt tokens a step with a chunk carries
    in_flight = -(-q // I)  # prompts whose KV the step writes
    room = rep.room(spec, q if T is None else T, C + in_flight, policy)
    over = C * rep.seq_kv_bytes + in_flight * rep.prompt_kv_bytes > room
    if over and strict_memory:
        return None, Limit.MEMORY
    f = arrivals * I / q
    if f > 1:
        return None, Limit.PREFILL
    max_c = max(0, int(room // rep.seq_kv_bytes)) if rep.seq_kv_bytes else C
    decoding = decode_groups(C, traffic.input_tokens, O)
    return _Point(rep, C, T, q, f, decoding, chunk_groups(q, I, h), max_c, over), None


def _t_dec(steps: StepTimes, p: _Point) -> float:
    """The time of the point's step without prompt tokens."""
    return steps.seconds(p.rep.layout, p.decoding)


def _priced(
    steps: StepTimes, p: _Point, traffic: Traffic, targets: Targets, budget: int, price: float | None
) -> tuple[list[Candidate], Limit | None]:
    """The candidates of a point (:func:`aggregated_point`), its steps timed."""
    I, O, C, q, f = traffic.computed_tokens, traffic.output_tokens, p.C, p.q, p.f
    g = p.rep.layout.gpus
    t_dec = _t_dec(steps, p)
    if p.T is None:
        t_mix = steps.seconds(p.rep.layout, p.chunk) + t_dec
    else:  # a step with a chunk does more than one without: never faster (a memoised time may round below)
        t_mix = max(t_dec, steps.seconds(p.rep.layout, p.decoding + p.chunk))
    t = f * t_mix + (1 - f) * t_dec
    mu = C / ((O - 1) * t)
    service = I * t_mix / q  # the prompt server's time per prompt
    own = -(-I // q) * t_mix
    out = []
    for n, lam, slot_wait in _slots(mu, traffic.qps, g, budget, lambda rho: mdc_wait_s(rho, C, own + (O - 1) * t)):
        replicas = n or budget // g
        wait = md1_wait_s(lam * service, service)
        if traffic.qps is None:  # a closed loop of C requests holds at most C - 1 prompts ahead
            wait = min(wait, (C - 1) * service)
        queue = wait + slot_wait
        if not replicas or math.isinf(queue):
            continue
        c = dict(
            mode=ServingMode.AGGREGATED,
            layout=p.rep.layout,
            replicas=replicas,
            prefill_layout=None,
            prefill_replicas=0,
            gpus=replicas * g,
            concurrency=C,
            chunk_tokens=p.T,
            prefill_batch=None,
            max_concurrency=p.max_c,
            ttft_s=queue + own,
            tpot_s=t,
            tpot_max_s=t_mix,
            queue_s=queue,
            kv_transfer_s=0.0,
            requests_per_s=lam * replicas,
            prefill_share=f * (t_mix - t_dec) / t,
        )
        out.append(_finish(c, traffic, targets, price, (Limit.MEMORY,) if p.over else ()))
    return out, None if out else Limit.PREFILL


def aggregated_point(
    spec: ModelSpec,
    steps: StepTimes,
    rep: Replica,
    traffic: Traffic,
    targets: Targets,
    budget: int,
    price: float | None,
    policy: MemoryPolicy,
    C: int,
    T: int | None,
    strict_memory: bool = True,
) -> tuple[list[Candidate], Limit | None]:
    """The candidates of ``C`` decoding sequences and a ``T``-token budget on one replica layout
    (one, or with a rate one per replica count tried), or ([], why not): BUDGET (no room for
    prompt tokens), MEMORY (the KV cache does not hold them; with ``strict_memory=False`` the
    candidate is kept and marked), PREFILL (prompts arrive faster than chunks take them).
    ``T=None``: no chunking; waiting prompts run whole in a step of their own while decoding
    waits (vLLM without chunked prefill). A prompt's tokens found in the prefix cache
    (``traffic.cached_tokens``) are not computed: I below is the tokens computed, each chunk
    attending to the cached ones too."""
    p, why = _point(spec, rep, traffic, policy, C, T, strict_memory)
    if p is None:
        return [], why
    return _priced(steps, p, traffic, targets, budget, price)


def aggregated(
    spec: ModelSpec,
    steps: StepTimes,
    rep: Replica,
    traffic: Traffic,
    targets: Targets,
    budget: int,
    price: float | None,
    policy: MemoryPolicy,
    concurrency: Sequence[int],
    chunks: Sequence[int | None],
    counts: list[int],
    refusals: dict[Limit, int],
) -> list[Candidate]:
    """Every aggregated candidate of one replica layout; ``refusals`` counts why others were not."""
    out = []
    for T in chunks:
        for C in concurrency:
            found, why = aggregated_point(spec, steps, rep, traffic, targets, budget, price, policy, C, T)
            counts[0] += max(1, len(found))  # each replica count tried for a rate is a configuration
            out += found
            if why:
                refusals[why] = refusals.get(why, 0) + 1
    return out


#: Bounds of a configuration not priced are widened by this share, so that the rounding of its own
#: figures cannot carry them past the bound (:func:`saturated_frontier`).
_BOUND_SLACK = 1e-9


def saturated_frontier(
    spec: ModelSpec,
    steps: StepTimes,
    reps: Sequence[tuple[Replica, Sequence[int | None]]],
    traffic: Traffic,
    targets: Targets,
    budget: int,
    price: float | None,
    policy: MemoryPolicy,
    concurrency: Sequence[int],
    counts: list[int],
    refusals: dict[Limit, int],
) -> tuple[list[Candidate], set[tuple[Layout, int, int | None, int]]]:
    """:func:`aggregated` of every replica in ``reps`` (with its token budgets) without a rate or
    ``targets`` (each None), pricing only what can be on the frontier or chosen: (the candidates priced, in
    :func:`aggregated`'s order; the (layout, replicas, budget, concurrency) of those not priced).
    A configuration's step with prompt tokens is never faster than its step without (the time per
    output token t >= t_dec), so its tokens/s per user is at most 1 / t_dec and its output tokens/s
    per GPU at most C O / ((O - 1) t_dec G); one whose bounds a priced candidate beats on both is
    dominated (not on the frontier, and fewer tokens/s per GPU than that one: never chosen), and is
    counted as a feasible configuration without its step with prompt tokens timed. Configurations
    are priced by falling bound of tokens/s per GPU, so that the ones that dominate come first."""
    O = traffic.output_tokens
    points: list[_Point] = []
    for rep, chunks in reps:
        for T in chunks:
            for C in concurrency:
                p, why = _point(spec, rep, traffic, policy, C, T, True)
                counts[0] += 1
                if p is None:
                    assert why is not None
                    refusals[why] = refusals.get(why, 0) + 1
                else:
                    points.append(p)
    bounds = []
    for p in points:
        t_dec = _t_dec(steps, p)
        bounds.append(
            ((1 + _BOUND_SLACK) / t_dec, p.C * O / ((O - 1) * t_dec * p.rep.layout.gpus) * (1 + _BOUND_SLACK))
        )
    found: dict[int, list[Candidate]] = {}
    pruned: set[tuple[Layout, int, int | None, int]] = set()
    staircase = _Staircase()
    for i in sorted(range(len(points)), key=lambda i: (-bounds[i][1], -bounds[i][0], i)):
        p = points[i]
        if staircase.beats(*bounds[i]):
            pruned.add((p.rep.layout, budget // p.rep.layout.gpus, p.T, p.C))
            continue
        cands, why = _priced(steps, p, traffic, targets, budget, price)
        found[i] = cands
        for c in cands:
            staircase.add(c.tokens_per_s_per_user, c.output_tokens_per_s_per_gpu)
        if why:  # pragma: no cover - a saturated point always gives its candidate
            refusals[why] = refusals.get(why, 0) + 1
    return [c for i in sorted(found) for c in found[i]], pruned


class _Staircase:
    """Points (u, x) seen, kept as their frontier: by rising u, falling x."""

    def __init__(self) -> None:
        self.us: list[float] = []
        self.xs: list[float] = []

    def beats(self, u: float, x: float) -> bool:
        """Whether a point seen has both a higher u and a higher x than (u, x)."""
        i = bisect.bisect_right(self.us, u)
        return i < len(self.us) and self.xs[i] > x

    def add(self, u: float, x: float) -> None:
        """Add (u, x), dropping the points it beats or equals on both."""
        i = bisect.bisect_left(self.us, u)
        if i < len(self.us) and self.xs[i] >= x:  # one with u' >= u already has x' >= x
            return
        j, k = i, i
        while j > 0 and self.xs[j - 1] <= x:  # those with u' < u and x' <= x are beaten
            j -= 1
        while k < len(self.us) and self.us[k] == u:  # and those with u' = u (their x' < x)
            k += 1
        self.us[j:k] = [u]
        self.xs[j:k] = [x]


def _link_bytes_s(gpu: HardwareSpec, gpus: int, network_gb_s: float) -> float:
    ic = gpu.interconnect
    if gpus <= ic.gpus_per_node and ic.bandwidth_gb_s_per_direction > 0:
        return ic.group_gb_s(2) * 1e9  # GPU to GPU: over a mesh, the one link between them
    return network_gb_s * 1e9


def disaggregated(
    spec: ModelSpec,
    gpu: HardwareSpec,
    steps: StepTimes,
    reps: list[Replica],
    traffic: Traffic,
    targets: Targets,
    budget: int,
    price: float | None,
    policy: MemoryPolicy,
    kv_bits: int,
    concurrency: Sequence[int],
    network_gb_s: float,
    counts: list[int],
) -> list[Candidate]:
    """Every disaggregated candidate: a prefill pool and a decode pool of any two replica layouts."""
    I, O = traffic.input_tokens, traffic.output_tokens
    computed, cached = traffic.computed_tokens, I - traffic.computed_tokens  # the prefix cache's share
    kv_request = kv_bytes(spec, I, kv_bits)
    prefills = []  # (replica, batch, t_pf)
    examined_prefills = 0
    for rep in reps:
        for b in PREFILL_BATCH_GRID:
            if b > 1 and b * computed > MAX_PREFILL_TOKENS:
                continue
            examined_prefills += 1
            if b * rep.prompt_kv_bytes > rep.room(spec, b * computed, b, policy):
                continue
            prefills.append((rep, b, steps.seconds(rep.layout, [SeqGroup(b, computed, cached)])))
    decodes = []  # (replica, C, t_dec, max_c)
    for rep in reps:
        room = rep.room(spec, max(concurrency), max(concurrency), policy)
        max_c = int(room // rep.seq_kv_bytes) if rep.seq_kv_bytes and room > 0 else 0
        fitting = [C for C in concurrency if C <= max_c]
        # configurations whose decode pool does not hold C sequences are examined and refused
        counts[0] += examined_prefills * (len(concurrency) - len(fitting))
        for C in fitting:
            decodes.append((rep, C, steps.seconds(rep.layout, decode_groups(C, I, O)), max_c))
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
                c = dict(
                    mode=ServingMode.DISAGGREGATED,
                    layout=drep.layout,
                    replicas=n_d,
                    prefill_layout=prep.layout,
                    prefill_replicas=n_p,
                    gpus=gpus,
                    concurrency=C,
                    chunk_tokens=None,
                    prefill_batch=b,
                    max_concurrency=max_c,
                    ttft_s=queue + t_pf + transfer,
                    tpot_s=t_dec,
                    tpot_max_s=t_dec,
                    queue_s=queue,
                    kv_transfer_s=transfer,
                    requests_per_s=lam,
                    prefill_share=n_p * gp / gpus,
                )
                out.append(_finish(c, traffic, targets, price))
    return out


def _undominated(prefills: list[tuple[Replica, int, float]]) -> list[tuple[Replica, int, float]]:
    """The prefill configurations no other beats on both prompts/s per GPU and time per batch
    (a large budget's pools are sized to keep up, so a dominated one only costs GPUs or TTFT)."""

    def rate(p: tuple[Replica, int, float]) -> float:
        return p[1] / p[2] / p[0].layout.gpus

    return [
        p
        for p in prefills
        if not any(
            rate(q) >= rate(p) and q[2] <= p[2] and q != p and (rate(q) > rate(p) or q[2] < p[2]) for q in prefills
        )
    ]


def _pool_sizes(
    gp: int, gd: int, mu_p: float, mu_d: float, qps: float | None, budget: int
) -> Iterator[tuple[int, int]]:
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
