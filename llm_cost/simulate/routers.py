"""Which replica a request goes to: the routers in front of a deployment's replicas, each from the
engine or gateway that routes that way (:func:`router_of`). The engine loop
(:func:`~llm_cost.simulate.engine.run_replicas`) asks its router at each arrival, with every
replica's state at that instant in view."""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from typing import Protocol

from llm_cost.core.choices import Router
from llm_cost.simulate.workload import Request

__all__ = ["Replica", "router_of", "CACHE_THRESHOLD", "BALANCE_ABS", "BALANCE_REL"]


class Pool(Protocol):
    """What a router reads of a replica's KV cache: blocks in use and in all."""

    @property
    def used(self) -> int: ...

    @property
    def total(self) -> int: ...


class Replica(Protocol):
    """What a router reads of a replica (an engine of :mod:`llm_cost.simulate.engine`)."""

    @property
    def pool(self) -> Pool: ...

    def load(self) -> tuple[int, int]:
        """(waiting, running) requests: routed here and not yet scheduled, and scheduled."""
        ...


#: SGLang model gateway's cache-aware policy: a request goes to the replica whose cache matches
#: more than this share of its prompt (``cache_threshold``), unless the loads are imbalanced:
#: max - min above ``balance_abs_threshold`` and max above ``balance_rel_threshold`` x min (the
#: defaults its start-up log prints: 0.3, 64, 1.5).
CACHE_THRESHOLD, BALANCE_ABS, BALANCE_REL = 0.3, 64, 1.5


def router_of(router: Router, engines: Sequence[Replica]) -> Callable[[Request], int]:
    """The routing rule of ``router`` over ``engines``: a function from a request to the index
    of the replica it goes to.

    * ``round-robin``: replicas in turn (SGLang's ``--dp-size`` default, ``--load-balance-method
      auto`` resolving to ``round_robin`` outside disaggregation: ``ServerArgs._handle_load_balance_method``
      in ``python/sglang/srt/server_args.py``; a generic load balancer in front of separate servers);
    * ``least-loaded``: vLLM's data-parallel load balancer (``DPLBAsyncMPClient.get_core_engine_for_request``
      in ``vllm/v1/engine/core_client.py``, vllm-project/vllm @ 00080ee13c7a): the replica of the
      least waiting + running requests, waiting ones weighted up by 6 x (KV use - 0.5) past half a
      full cache, ties broken by a scan start that turns by one each request;
    * ``prefix-aware``: SGLang model gateway's ``cache_aware`` policy (``sgl-router/src/policies/cache_aware.rs``,
      sgl-project/sglang @ b6f20641ad6b): when the loads (requests routed and not finished) are
      imbalanced (:data:`BALANCE_ABS`, :data:`BALANCE_REL`) the least loaded; else the replica
      that has seen the longest of the request's shared prefixes if it covers more than
      :data:`CACHE_THRESHOLD` of the prompt, else the replica that has seen the fewest tokens
      (the smallest approximate tree, which the gateway keeps of the text each replica was sent).
    """
    n = len(engines)
    if router == Router.ROUND_ROBIN:
        turn = iter(range(1 << 62))
        return lambda r: next(turn) % n
    if router == Router.LEAST_LOADED:
        return _least_loaded(engines)
    return _prefix_aware(engines)


def _least_loaded(engines: Sequence[Replica]) -> Callable[[Request], int]:
    start = [0]
    n = len(engines)

    def pick(r: Request) -> int:
        best, chosen = math.inf, 0
        for i in range(n):
            idx = (start[0] + i) % n
            e = engines[idx]
            waiting, running = e.load()
            score: float = waiting + running
            if waiting:
                score += waiting * 6.0 * max(0.0, e.pool.used / e.pool.total - 0.5)
            if score < best:
                best, chosen = score, idx
        start[0] = (start[0] + 1) % n
        return chosen

    return pick


def _prefix_aware(engines: Sequence[Replica]) -> Callable[[Request], int]:
    n = len(engines)
    seen: list[dict[Hashable, int]] = [{} for _ in range(n)]  # prefix key -> tokens, per replica
    size = [0] * n  # tokens of each replica's approximate tree
    holder: dict[Hashable, int] = {}  # prefix key -> the replica that saw it last

    def pick(r: Request) -> int:
        loads = [sum(e.load()) for e in engines]
        most, least = max(loads), min(loads)
        if most - least > BALANCE_ABS and most > least * BALANCE_REL:
            chosen = loads.index(least)
        else:
            matched = [(tokens, holder[key]) for key, tokens in r.shared if key in holder]
            tokens, best = max(matched, default=(0, -1))
            chosen = best if tokens > CACHE_THRESHOLD * r.input_tokens else size.index(min(size))
        known = seen[chosen]
        covered = max((t for key, t in r.shared if key in known), default=0)
        for key, tokens in r.shared:
            known[key] = tokens
            holder[key] = chosen
        size[chosen] += r.input_tokens - covered
        return chosen

    return pick
