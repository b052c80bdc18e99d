"""The block pool's prefix-cache lookup, remembered per request while no hash is gained and no count
changes, and cut at the first block evicted since (llm_cost/simulate/kvcache.py): the remembered
answer is always the one a fresh lookup gives."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from llm_cost.simulate.kvcache import BlockPool, Seq

BT = 16


def _fresh_lookup(pool: BlockPool, seq: Seq, tokens: int) -> tuple[int, int]:
    """The lookup with the request's remembered answer forgotten."""
    seq.looked = (-1, 0, 0, 0, 0)
    return pool.lookup(seq, tokens)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["grow", "preempt", "finish", "take"]), st.integers(1, 40)), max_size=25))
def test_a_remembered_lookup_is_the_fresh_one(ops):
    """Random admissions, preemptions (their blocks kept cached), completions and takings that evict
    cached blocks, with a waiting request of a shared prefix looked up after each: the answer
    remembered from the last lookup, cut by the evictions since, equals a fresh one (a test that
    fails when the cut or its free count is left out). A preempted 120,000-token request had been
    looked up block by block every step: 25 s for 4 requests, over a minute for a plan."""
    pool = BlockPool(90, BT)
    shared = (("system", 40 * BT),)
    waiting = Seq("waiting", shared, BT)
    live: list[Seq] = []
    for i, (op, n) in enumerate(ops):
        if op == "grow" and n <= pool.free:
            seq = Seq(f"r{i}", shared, BT)
            pool.allocate(seq, n * BT)
            live.append(seq)
        elif op in ("preempt", "finish") and live:
            seq = live.pop(0)
            pool.release(seq, seq.blocks * BT if op == "preempt" else None)
        elif op == "take" and n <= pool.free:
            pool.take(n)
        remembered = pool.lookup(waiting, 30 * BT)
        again = pool.lookup(waiting, 30 * BT)  # served from memory when nothing changed
        assert remembered == again == _fresh_lookup(pool, waiting, 30 * BT)
