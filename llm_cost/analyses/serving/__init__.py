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

from llm_cost.analyses.serving.queues import md1_wait_s, mdc_wait_s
from llm_cost.analyses.serving.results import (
    CHUNK_GRID,
    CONCURRENCY_GRID,
    COST_ALL_OUTPUT,
    COST_SPLIT,
    DEFAULT_CHUNK_TOKENS,
    FRONTIER_TTFT_S,
    PREFILL_BATCH_GRID,
    SANE_TTFT_S,
    Candidate,
    ServePlan,
    StepBand,
    Targets,
    Traffic,
)
from llm_cost.analyses.serving.search import evaluate, plan
from llm_cost.core.limits import MAX_PLAN_GPUS

__all__ = [
    "SANE_TTFT_S",
    "FRONTIER_TTFT_S",
    "Traffic",
    "Targets",
    "Candidate",
    "ServePlan",
    "StepBand",
    "plan",
    "evaluate",
    "CONCURRENCY_GRID",
    "CHUNK_GRID",
    "PREFILL_BATCH_GRID",
    "MAX_PLAN_GPUS",
    "DEFAULT_CHUNK_TOKENS",
    "COST_SPLIT",
    "COST_ALL_OUTPUT",
    "mdc_wait_s",
    "md1_wait_s",
]
