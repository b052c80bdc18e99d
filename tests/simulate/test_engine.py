"""The engine against what must hold exactly: queueing formulas where they are exact, Little's law
on every run, and vLLM's scheduling rules (chunked prefill, prefix caching by block, LRU eviction,
preemption by recompute) on runs small enough to follow by hand."""

from __future__ import annotations

import math
from dataclasses import dataclass

import pytest

from llm_cost.core.errors import InputError
from llm_cost.perf.timemodel import StepTime
from llm_cost.simulate import (
    ClosedLoop,
    EngineConfig,
    Fixed,
    LogNormal,
    Request,
    SharedPrefix,
    Workload,
    poisson,
    simulate,
    vllm_defaults,
)
from llm_cost.simulate.kvcache import BlockPool, Seq
from llm_cost.specs.load import load_gpu, load_model


@dataclass(frozen=True)
class ConstantSteps:
    """A time model whose every step takes ``seconds`` (a deterministic server)."""

    seconds: float
    label: str = "constant"
    kind: str = "test"

    def step_time(self, step, gpu, operators=True) -> StepTime:
        s = self.seconds
        return StepTime(self.label, self.kind, [], [], s, 0.0, 0.0, s, "compute", "none", 0.0)


@dataclass(frozen=True)
class LinearSteps:
    """Steps of ``base`` seconds plus ``per_token`` per token in flight (a batch-sensitive server)."""

    base: float
    per_token: float
    label: str = "linear"
    kind: str = "test"

    def step_time(self, step, gpu, operators=True) -> StepTime:
        s = self.base + self.per_token * step.tokens
        return StepTime(self.label, self.kind, [], [], s, 0.0, 0.0, s, "compute", "none", 0.0)


SPEC = load_model("llama3-8b")
GPU = load_gpu("h100")
BIG = 1_000_000  # KV tokens: never the limit


DEFAULT = EngineConfig(async_scheduling=False)  # each step scheduled when the previous one ends


def run(workload, model, config=DEFAULT, kv=BIG, seed=0):
    return simulate(SPEC, GPU, workload, config, model, kv_capacity_tokens=kv, seed=seed)


def _little(result) -> None:
    """Little's law: requests in the system on average = throughput x mean time in the system."""
    s = result.summary
    in_system = result.running_mean + result.waiting_mean
    assert in_system == pytest.approx(s.throughput_rps * s.e2e_s.mean, rel=0.02)


@pytest.mark.parametrize("rho", [0.3, 0.6])
def test_batch_of_one_is_an_md1_queue(rho):
    """One sequence at a time, a one-token output, a constant step S: an M/D/1 queue, whose mean
    wait is rho S / (2 (1 - rho)) (Pollaczek-Khinchine) and P(no wait) = 1 - rho."""
    S = 0.010
    r = run(
        poisson(rho / S, Fixed(16), Fixed(1), requests=30_000),
        ConstantSteps(S),
        EngineConfig(max_num_seqs=1, async_scheduling=False),
        seed=11,
    )
    wait = rho * S / (2 * (1 - rho))
    # 30,000 requests: the mean wait's sampling error is about 2% at rho 0.6 (seeds 11-14 varied it by 1.7%)
    assert r.summary.queue_s.mean == pytest.approx(wait, rel=0.05)
    assert r.summary.ttft_s.mean == pytest.approx(wait + S, rel=0.04)
    assert sum(t.queue_s == 0 for t in r.requests) / len(r.requests) == pytest.approx(1 - rho, abs=0.01)
    _little(r)


def test_long_outputs_make_a_longer_deterministic_service():
    """Batch 1 and O output tokens: service O x S, still M/D/1; TPOT is exactly S."""
    S, O, rho = 0.002, 50, 0.6
    r = run(
        poisson(rho / (O * S), Fixed(16), Fixed(O), requests=10_000),
        ConstantSteps(S),
        EngineConfig(max_num_seqs=1, async_scheduling=False),
    )
    assert r.summary.queue_s.mean == pytest.approx(rho * O * S / (2 * (1 - rho)), rel=0.08)
    assert r.summary.tpot_s.p99 == pytest.approx(S) and r.summary.itl_s.max == pytest.approx(S)
    assert r.summary.e2e_s.mean == pytest.approx(r.summary.queue_s.mean + O * S, rel=1e-9)
    _little(r)


def _mdc_mean_in_system(lam: float, D: float, c: int, states: int = 150) -> float:
    """The exact mean number in an M/D/c system at an arbitrary time: seen every D seconds, every
    customer in service leaves within D and the first c waiting start, so N(t + D) =
    max(N(t) - c, 0) + Poisson(lam D) (the embedded chain of Crommelin 1932; with Poisson
    arrivals, lattice times at a random phase see the time-average distribution)."""
    a = lam * D
    arrivals = [math.exp(-a)]
    for k in range(1, states):
        arrivals.append(arrivals[-1] * a / k)
    p = [1.0] + [0.0] * (states - 1)
    mean = -1.0
    while True:  # power iteration to the stationary distribution
        nxt = [0.0] * states
        for n, pn in enumerate(p):
            if pn < 1e-18:
                continue
            base = max(n - c, 0)
            for k in range(states - base):
                nxt[base + k] += pn * arrivals[k]
        total = sum(nxt)
        p = [x / total for x in nxt]
        now = sum(n * pn for n, pn in enumerate(p))
        if abs(now - mean) < 1e-10:
            return now
        mean = now


@pytest.mark.parametrize("c, rho", [(4, 0.7), (8, 0.85)])
def test_continuous_batching_of_fixed_outputs_is_an_mdc_queue(c, rho):
    """At most c sequences, every request O output tokens at a constant step S: c servers of a
    deterministic service D = O S (the prefill step gives the first token), an M/D/c queue. The
    mean time in the system is the exact M/D/c value L / lambda (Little) plus the half step a
    request waits for the running step to end; the queueing wait alone is checked too."""
    S, O = 0.001, 100
    D = O * S
    lam = rho * c / D
    r = run(
        poisson(lam, Fixed(8), Fixed(O), requests=20_000),
        ConstantSteps(S),
        EngineConfig(max_num_seqs=c, async_scheduling=False),
        seed=3,
    )
    in_system = _mdc_mean_in_system(lam, D, c)
    exact_wait = in_system / lam - D
    assert r.summary.e2e_s.mean == pytest.approx(in_system / lam + S / 2, rel=0.03)
    assert r.summary.queue_s.mean == pytest.approx(exact_wait + S / 2, rel=0.05)
    _little(r)


def test_unbounded_batching_is_an_md_infinity_queue():
    """With no cap on sequences nobody waits: E2E is exactly O steps (after the arrival's partial
    step), and the mean occupancy is lambda x E2E, M/D/infinity's Poisson mean."""
    S, O, lam = 0.001, 200, 150.0
    r = run(poisson(lam, Fixed(8), Fixed(O), requests=20_000), ConstantSteps(S), EngineConfig(async_scheduling=False))
    assert r.summary.ttft_s.max <= 2 * S and r.summary.tpot_s.max == pytest.approx(S)
    assert r.running_mean == pytest.approx(lam * (O * S + S / 2), rel=0.03)


def test_littles_law_under_continuous_batching():
    """Occupancy feeds step time and step time occupancy; the time averages of the engine still
    equal throughput x time in the system (lognormal lengths, a shared prefix, two stages)."""
    from llm_cost.simulate import OpenLoop, Stage

    w = Workload(
        OpenLoop((Stage(120, 6.0), Stage(120, 14.0)), "gamma", 2.0),
        LogNormal(600, 300),
        LogNormal(150, 100),
        SharedPrefix(4, 128, 3),
    )
    r = run(w, LinearSteps(0.006, 2e-5), EngineConfig(max_num_seqs=64, max_num_batched_tokens=1024))
    _little(r)
    assert r.summary.requests == sum(s.requests for s in r.stages)
    assert r.stages[1].e2e_s.mean > r.stages[0].e2e_s.mean  # more load, longer steps


def test_results_are_deterministic_for_a_seed():
    w = poisson(10.0, LogNormal(500, 200), LogNormal(100, 50), requests=300, prefix=SharedPrefix(3, 64))
    a, b = run(w, LinearSteps(0.005, 1e-5), seed=4), run(w, LinearSteps(0.005, 1e-5), seed=4)
    assert a == b and a.to_dict() == b.to_dict()
    assert run(w, LinearSteps(0.005, 1e-5), seed=5).summary != a.summary


def test_chunked_prefill_splits_a_prompt_over_the_token_budget():
    """A 5,000-token prompt with a 2,048-token budget takes ceil(5000 / 2048) = 3 steps before its
    first token; without chunking it waits for a step of its own (here it still fits: 8,192)."""
    one = [Request(0, 0.0, 5000, 3)]
    r = run(one, ConstantSteps(0.01), EngineConfig(max_num_batched_tokens=2048, async_scheduling=False))
    assert r.requests[0].ttft_s == pytest.approx(0.03)
    assert r.requests[0].e2e_s == pytest.approx(0.05)
    r = run(one, ConstantSteps(0.01), EngineConfig(max_num_batched_tokens=8192, async_scheduling=False))
    assert r.requests[0].ttft_s == pytest.approx(0.01)


def test_decodes_go_first_and_the_budget_caps_a_step():
    """Running requests are scheduled before waiting ones: a prompt arriving while 3 sequences
    decode gets the budget less their 3 tokens (here 16 - 3 = 13 tokens a step)."""
    reqs = [Request(i, 0.0, 4, 100) for i in range(3)] + [Request(3, 0.055, 40, 2)]
    r = run(reqs, ConstantSteps(0.01), EngineConfig(max_num_batched_tokens=16, async_scheduling=False))
    late = r.requests[3]
    # admitted at the first step start after its arrival (0.06 s); 40 tokens at 13 a step: 4 steps
    assert late.queue_s == pytest.approx(0.005)
    assert late.ttft_s == pytest.approx(0.005 + 4 * 0.01)


def test_async_scheduling_sees_an_arrival_one_step_later():
    """vLLM's async scheduling decides step N + 1 while step N runs: a request arriving during
    step N is first scheduled into step N + 2 (one step later than with synchronous scheduling);
    an idle engine takes it at once."""
    reqs = [Request(0, 0.0, 4, 100), Request(1, 0.035, 16, 2)]
    sync = run(reqs, ConstantSteps(0.01))
    lagged = run(reqs, ConstantSteps(0.01), EngineConfig())
    assert sync.requests[1].queue_s == pytest.approx(0.005)  # the step starting at 0.04
    assert lagged.requests[1].queue_s == pytest.approx(0.015)  # decided at 0.04, run from 0.05
    alone = run([Request(0, 0.5, 16, 2)], ConstantSteps(0.01), EngineConfig())
    assert alone.requests[0].queue_s == 0 and alone.requests[0].ttft_s == pytest.approx(0.01)
    _little(lagged)


def test_prefix_cache_hits_whole_blocks_of_the_shared_prefix():
    """A 100-token system prompt is 6 whole 16-token blocks: later prompts find 96 tokens cached;
    a repeated whole prompt finds all of it but its last token's block (at most prompt - 1)."""
    w = poisson(2.0, Fixed(547), Fixed(4), requests=20, prefix=SharedPrefix(1, 100))
    r = run(w, ConstantSteps(0.01))
    assert [t.cached_tokens for t in r.requests] == [0] + [96] * 19
    assert r.prefix_hit_rate == pytest.approx(19 * 96 / (20 * 547))
    w = poisson(2.0, Fixed(547), Fixed(4), requests=6, prefix=SharedPrefix(1, 100, 1, repeat_questions=True))
    assert [t.cached_tokens for t in run(w, ConstantSteps(0.01)).requests] == [0] + [544] * 5  # 546 // 16 blocks
    off = run(w, ConstantSteps(0.01), EngineConfig(prefix_caching=False))
    assert {t.cached_tokens for t in off.requests} == {0} and off.prefix_hit_rate == 0


def test_blocks_are_hit_while_shared_and_evicted_least_recently_used():
    """vLLM's block pool: a cached block is hit while held or free; freed blocks join the free
    queue's tail, a request's last block first; new blocks come from the head, evicting hashes."""
    pool = BlockPool(blocks=8, block_tokens=16)
    a = Seq("a", ((("p", 0), 64),), 16)  # a 64-token prefix: 4 shareable blocks
    assert pool.allocate(a, 80) and a.blocks == 5 and pool.free == 3
    b = Seq("b", ((("p", 0), 64),), 16)
    assert pool.lookup(b, 100) == (4, 0)  # held by a: nothing to take from the free queue
    pool.take_hits(b, 4, 100)
    assert pool.allocate(b, 100) and pool.free == 0  # b's own 3 blocks
    pool.release(a)
    pool.release(b)
    assert pool.free == 8
    c = Seq("c", ((("p", 0), 64),), 16)
    assert pool.lookup(c, 65) == (4, 4)  # free but cached: all four hit
    assert pool.lookup(c, 64) == (3, 3)  # at most tokens - 1: the last block is recomputed
    d = Seq("d", (), 16)
    assert pool.allocate(d, 16 * 4)  # 4 blocks: the plain ones freed first (a's, then b's own)
    assert pool.lookup(c, 65) == (4, 4)
    assert pool.allocate(Seq("e", (), 16), 16)  # the next block is the prefix's last: evicted first
    assert pool.lookup(c, 65) == (3, 3)
    assert not pool.allocate(Seq("f", (), 16), 16 * 4)  # 3 free blocks left


def test_preemption_recomputes_the_newest_request():
    """Three requests that together outgrow a 10-block cache: the newest running one is preempted
    (vLLM's running.pop()), recomputes what it had when resumed, and everything completes."""
    reqs = [Request(i, 0.0, 32, 100) for i in range(3)]
    r = run(reqs, ConstantSteps(0.01), EngineConfig(), kv=10 * 16)
    assert r.summary.requests == 3 and r.preemptions >= 1
    by = {t.index: t for t in r.requests}
    assert by[0].preemptions == 0 and by[2].preemptions >= 1
    assert by[2].e2e_s > by[0].e2e_s
    assert r.kv_use_max <= 1.0
    _little(r)


def test_trtllm_reserves_whole_requests_and_never_preempts():
    """TensorRT-LLM's GUARANTEED_NO_EVICT: a request is admitted only when its prompt and whole
    output fit (9 blocks of 132 tokens here): one at a time in 10 blocks, no preemption."""
    reqs = [Request(i, 0.0, 32, 100) for i in range(3)]
    r = run(reqs, ConstantSteps(0.01), EngineConfig(engine="trtllm"), kv=10 * 16)
    assert r.preemptions == 0 and r.running_mean == pytest.approx(1.0)
    assert sorted(t.e2e_s for t in r.requests) == pytest.approx([1.0, 2.0, 3.0])


def test_sglang_admits_by_its_new_token_estimate():
    """SGLang's PrefillAdder: a request is admitted only if the free tokens, less 0.7 x the
    running requests' remaining outputs and the admitted ones' prompts and outputs, exceed its
    prompt and whole output. Three 32 + 100-token requests in 10 blocks (160 tokens): 132 tokens
    each, so one at a time, never preempted, where vLLM admits all three and preempts."""
    reqs = [Request(i, 0.0, 32, 100) for i in range(3)]
    r = run(reqs, ConstantSteps(0.01), EngineConfig(engine="sglang"), kv=10 * 16)
    assert r.preemptions == 0 and r.running_mean == pytest.approx(1.0)
    assert sorted(t.e2e_s for t in r.requests) == pytest.approx([1.0, 2.0, 3.0])
    assert run(reqs, ConstantSteps(0.01), EngineConfig(), kv=10 * 16).preemptions >= 1


def test_sglang_runs_prompts_alone_and_decodes_wait():
    """SGLang without --enable-mixed-chunk (its default): prefill first, a step of prompts alone.
    10 ms steps; A (16 + 5 tokens) at 0, B (16 + 5) at 15 ms. vLLM: B's prompt joins A's third
    decode step, A ends at 50 ms, B at 70 ms. SGLang: B's prompt runs alone from 20 to 30 ms
    while A waits, so A ends at 60 ms and its gap over B's prompt is 20 ms; B still ends at 70 ms."""
    reqs = [Request(0, 0.0, 16, 5), Request(1, 0.015, 16, 5)]
    vllm = run(reqs, ConstantSteps(0.01), DEFAULT)
    sglang = run(reqs, ConstantSteps(0.01), EngineConfig(engine="sglang", async_scheduling=False))
    assert sorted(t.e2e_s for t in vllm.requests) == pytest.approx([0.05, 0.055])
    assert sorted(t.e2e_s for t in sglang.requests) == pytest.approx([0.055, 0.06])
    assert max(t.itl_max_s for t in sglang.requests) == pytest.approx(0.02)
    assert sglang.preemptions == vllm.preemptions == 0


def test_sglang_estimate_falls_from_0_7_to_0_098_over_600_steps():
    """The ratio discounting a running request's remaining output starts at 0.7 and falls by
    (0.7 - 0.098) / 600 a step (SGLang's defaults): a long request holds a second one back until
    free tokens - ratio x its remaining output exceed the second's 32 + 100 tokens, worked out by
    hand step by step here (SGLang tries a prefill batch before the decode batch takes the slot
    of its next token, so at step k the long request holds the blocks of its 32 + k - 1 computed
    tokens); vLLM admits the second at once."""
    S, blocks = 0.01, 66
    reqs = [Request(0, 0.0, 32, 2000), Request(1, 3.0, 32, 100)]
    for k in range(300, 2000):  # the first step (after the arrival) whose estimate admits it
        ratio = max(0.098, 0.7 - (0.7 - 0.098) / 600 * k)
        free = (blocks - math.ceil((32 + k - 1) / 16)) * 16
        if 132 < free - ratio * (2000 - k):
            break
    r = run(reqs, ConstantSteps(S), EngineConfig(engine="sglang"), kv=blocks * 16)
    late = next(t for t in r.requests if t.index == 1)
    assert 3.0 + late.queue_s == pytest.approx(k * S, abs=2 * S) and late.queue_s > 0.5
    assert (
        next(t for t in run(reqs, ConstantSteps(S), EngineConfig(), kv=blocks * 16).requests if t.index == 1).queue_s
        < 2 * S
    )


def test_requests_longer_than_max_model_len_are_rejected():
    reqs = [Request(0, 0.0, 4000, 200), Request(1, 0.0, 3000, 200)]
    r = run(reqs, ConstantSteps(0.01), EngineConfig(max_model_len=4096))
    assert r.summary.requests == 1 and r.summary.rejected == 1


def test_a_closed_loop_keeps_its_users_busy():
    """N users without think time keep N requests in the engine: occupancy N and throughput
    N / E2E (Little's law with L = N)."""
    w = Workload(ClosedLoop(users=12), Fixed(200), Fixed(50), requests=1200)
    r = run(w, LinearSteps(0.004, 1e-5))
    assert r.running_mean + r.waiting_mean == pytest.approx(12, rel=0.02)
    _little(r)
    thinking = run(
        Workload(ClosedLoop(users=12, think_s=1.0), Fixed(200), Fixed(50), requests=1200), LinearSteps(0.004, 1e-5)
    )
    assert thinking.running_mean < 12 * 0.5  # about a third of the time in the engine


def test_vllm_defaults_follow_the_gpu():
    assert (vllm_defaults(GPU).max_num_batched_tokens, vllm_defaults(GPU).max_num_seqs) == (8192, 1024)
    a100 = load_gpu("a100")
    assert (vllm_defaults(a100).max_num_batched_tokens, vllm_defaults(a100).max_num_seqs) == (2048, 256)
    assert vllm_defaults(GPU, max_num_seqs=128).max_num_seqs == 128


def test_invalid_settings_are_refused():
    one = [Request(0, 0.0, 10, 2)]
    with pytest.raises(InputError, match="engine"):
        run(one, ConstantSteps(0.01), EngineConfig(engine="tgi"))
    with pytest.raises(InputError, match="kv_capacity_tokens"):
        run(one, ConstantSteps(0.01), kv=0)
    with pytest.raises(InputError, match="max_num_seqs"):
        run(one, ConstantSteps(0.01), EngineConfig(max_num_seqs=0))
    assert math.isfinite(run(one, ConstantSteps(0.01)).summary.e2e_s.mean)


def test_the_api_server_admits_requests_one_after_another():
    """A serial API-server stage of c seconds a request (``frontend_request_s``): N prompts sent at
    once reach the engine at c, 2c, ..., Nc; on an engine whose steps take S << c, each request's
    first token comes one step after it is admitted, so the TTFTs are kc + S (k = 1..N) and the
    run lasts N c + its last request's O steps (a D/D/1 queue, worked by hand)."""
    c, s, n, o = 0.01, 0.001, 50, 3
    requests = [Request(i, 0.0, 16, o) for i in range(n)]
    r = run(requests, ConstantSteps(s), EngineConfig(async_scheduling=False, frontend_request_s=c))
    assert r.summary.ttft_s.max == pytest.approx(n * c + s, rel=1e-6)
    assert r.summary.ttft_s.mean == pytest.approx((n + 1) / 2 * c + s, rel=1e-6)
    assert r.summary.e2e_s.max == pytest.approx(n * c + o * s, rel=1e-6)
    none = run(requests, ConstantSteps(s), EngineConfig(async_scheduling=False))
    assert none.summary.ttft_s.max < 2 * s * n  # without it all are admitted at once


def test_an_api_server_time_outside_its_bounds_is_refused():
    with pytest.raises(ValueError, match="frontend_request_s"):
        run([Request(0, 0.0, 16, 2)], ConstantSteps(0.001), EngineConfig(frontend_request_s=0.2))
