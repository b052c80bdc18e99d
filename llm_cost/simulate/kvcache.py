"""The paged KV cache with prefix caching, as vLLM V1 keeps it (``vllm/v1/core/kv_cache_manager.py``,
``vllm/v1/core/block_pool.py``, ``vllm/v1/core/kv_cache_utils.py``).

Rules followed:

* The cache is ``blocks`` blocks of ``block_tokens`` tokens (16 by default); a request holds
  ceil(computed tokens / 16) blocks (``allocate_slots`` allocates the blocks of the tokens it
  schedules, before they run).
* A full block is known by the hash of its tokens and of the blocks before it (the hash chain of
  ``hash_request_tokens``); here a block wholly inside a shared prefix is known by that prefix's key
  and its index, and any other block by its request and index, which no other request can match.
* ``get_computed_blocks``: a request being admitted takes the longest run of leading blocks whose
  hashes are cached, at most (prompt tokens - 1) tokens (the last token is always recomputed to get
  its logits), so its computation starts after them.
* ``cache_full_blocks``: a block is cached (hashable by others) as soon as the tokens scheduled fill
  it; a block another request cached first is not cached twice.
* Freed blocks keep their hash until reused (``free_blocks`` appends them to the free queue's tail,
  a request's blocks in reverse order so that its last blocks are evicted first); a new block is
  taken from the queue's head, evicting the hash it held (LRU over free blocks); a cache hit on a
  free block takes it out of the queue. Never-used blocks come first.
* ``allocate_slots`` fails (None) when the blocks to allocate, counting the cached hits that sit in
  the free queue, exceed the free blocks.

A hybrid model's fixed per-sequence state (the recurrent and convolution state of its
linear-attention or Mamba layers) is held as ``state`` blocks of the same pool from admission to
release (:meth:`BlockPool.hold_state`), however long the request grows: vLLM V1's hybrid KV cache
manager gives each Mamba-type layer group one page per request in the same block pool
(``vllm/v1/kv_cache_interface.py`` ``MambaSpec.max_memory_usage_bytes``: ``page_size_bytes x (1 +
num_speculative_blocks)`` in the default ``mamba_cache_mode`` "none", vllm-project/vllm @
bc8282e61df21719b12b391c3a976b1c900dfbb4; ``vllm/v1/core/single_type_kv_cache_manager.py``
``MambaManager.get_num_skipped_tokens`` keeps only the last computed token's state, @
129ab7c60cbb8eb11e875373e67f7e521b74aa30).

Only what timing needs is kept: counts of blocks, the hashes of shared blocks with their reference
counts, and a free queue of hashed entries and runs of plain blocks (a finished request's own
blocks can never be hit again, so they return as one plain run).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

__all__ = ["BlockPool", "Seq"]


class Seq:
    """One request's KV blocks: ``hashes`` (blocks known to the cache, held by reference, the
    leading ones) and ``own`` (blocks only this request can use)."""

    __slots__ = ("key", "shared", "shareable", "hashes", "own", "blocks", "registered", "memo", "state", "looked")

    def __init__(self, key: Hashable, shared: tuple[tuple[Hashable, int], ...], block_tokens: int) -> None:
        self.key = key
        self.shared = shared  # (prefix key, tokens) levels, innermost last
        #: Leading blocks that lie wholly inside a shared prefix.
        self.shareable = max((t for _, t in shared), default=0) // block_tokens
        self.hashes: list[Hashable] = []
        self.own = 0
        self.blocks = 0  # len(hashes) + own: the blocks it holds
        self.registered = 0  # leading blocks whose hash is known (looked up or cached)
        self.memo: list[Hashable] = []  # block_hash(i) of the leading blocks looked up so far
        self.state = 0  # blocks its fixed per-sequence state holds (not in ``blocks``)
        #: Its last :meth:`BlockPool.lookup`: (the pool's version and evictions then, tokens, hits,
        #: free hits).
        self.looked: tuple[int, int, int, int, int] = (-1, 0, 0, 0, 0)

    def block_hash(self, i: int, block_tokens: int) -> Hashable:
        """The hash of block ``i``: its innermost shared prefix's key and ``i``, or (request, i)."""
        end = (i + 1) * block_tokens
        for key, tokens in self.shared:
            if end <= tokens:
                return (key, i)
        return (self.key, i)


class BlockPool:
    """``blocks`` KV blocks of ``block_tokens`` tokens with vLLM's prefix caching (``caching``)."""

    def __init__(self, blocks: int, block_tokens: int = 16, caching: bool = True) -> None:
        self.total = blocks
        self.block_tokens = block_tokens
        self.caching = caching
        self.never_used = blocks
        #: Free queue after the never-used blocks: hash -> 1 for a cached free block, or
        #: ("plain", n) -> count for a run of blocks without a hash; oldest first.
        self.queue: OrderedDict[Hashable, int] = OrderedDict()
        self.queued = 0  # blocks in the queue
        self.refs: dict[Hashable, int] = {}  # cached hash -> requests holding it (0: in the queue)
        self.runs = 0
        self.hit_tokens = 0
        self.queried_tokens = 0
        #: Bumped whenever ``refs`` gains a hash or a count changes; evictions (a hash dropped) are
        #: logged in ``evicted`` instead, ``evictions`` counting them all. A lookup's answer holds
        #: while the version stands, cut at the first evicted block of the request's prefix (a
        #: preempted 120,000-token request at the head of the queue was looked up block by block
        #: every step, 25 s for 4 requests and over a minute for a plan: an attacker).
        self.version = 0
        self.evicted: list[Hashable] = []  # the hashes evicted since the version last changed
        self.evictions = 0

    @property
    def free(self) -> int:
        """Free blocks (never used, plain, or cached and unreferenced)."""
        return self.never_used + self.queued

    @property
    def used(self) -> int:
        """Blocks held by requests."""
        return self.total - self.free

    def lookup(self, seq: Seq, tokens: int) -> tuple[int, int]:
        """(cached leading blocks, of which free) for a request of ``tokens`` tokens being admitted:
        at most (tokens - 1) // block_tokens blocks (vLLM's max_cache_hit_length)."""
        if not self.caching:
            return 0, 0
        version, seen, asked, hits, free = seq.looked
        if version == self.version and asked == tokens:
            return self._after_evictions(seq, seen, hits, free, tokens)
        limit = (tokens - 1) // self.block_tokens
        hits = free = 0
        refs = self.refs
        memo = seq.memo
        while hits < limit:
            if hits == len(memo):
                memo.append(seq.block_hash(hits, self.block_tokens))
            count = refs.get(memo[hits])
            if count is None:
                break
            hits += 1
            free += count == 0
        seq.looked = (self.version, self.evictions, tokens, hits, free)
        return hits, free

    def _after_evictions(self, seq: Seq, seen: int, hits: int, free: int, tokens: int) -> tuple[int, int]:
        """:meth:`lookup`'s answer from its last one (``hits``, ``free``, when ``seen`` evictions had
        happened), with no hash gained and no count changed since: only evictions, which cut the
        prefix at the first evicted block of it (a block hash (key, i) is block i of a request's
        prefix). The free blocks cut off are those now gone (evicted, so free before) and those of
        count 0."""
        new = self.evicted[len(self.evicted) - (self.evictions - seen) :] if self.evictions > seen else ()
        memo, cut = seq.memo, hits
        for key in new:
            i = key[1] if isinstance(key, tuple) and len(key) == 2 and isinstance(key[1], int) else -1
            if 0 <= i < cut and memo[i] == key:
                cut = i
        if cut < hits:
            refs = self.refs
            free -= sum(1 for h in memo[cut:hits] if not refs.get(h))
        seq.looked = (self.version, self.evictions, tokens, cut, free)
        return cut, free

    def _changed(self) -> None:
        """``refs`` gained a hash or a count changed: every remembered lookup is void."""
        self.version += 1
        self.evicted.clear()

    def take_hits(self, seq: Seq, hits: int, tokens: int) -> None:
        """Hold the ``hits`` cached leading blocks :meth:`lookup` found for a request of ``tokens``
        tokens (counted in the hit rate)."""
        self.queried_tokens += tokens
        self.hit_tokens += hits * self.block_tokens
        if hits:
            self._changed()
        for i in range(hits):
            h = seq.block_hash(i, self.block_tokens)
            if self.refs[h] == 0:
                del self.queue[h]
                self.queued -= 1
            self.refs[h] += 1
            seq.hashes.append(h)
        seq.blocks += hits
        seq.registered = hits

    def grow(self, seq: Seq, n: int) -> None:
        """Give ``seq`` ``n`` more blocks of its own (the caller checked that they are free)."""
        self._fresh(n)
        seq.own += n
        seq.blocks += n

    def take(self, n: int) -> None:
        """Take ``n`` free blocks for requests' own use (the caller counts them in each request's
        ``own`` and ``blocks``, and checked that they are free)."""
        self._fresh(n)

    def _fresh(self, n: int) -> None:
        """Take ``n`` free blocks: never-used first, then the queue's head (evicting hashes)."""
        take = min(n, self.never_used)
        self.never_used -= take
        n -= take
        queue = self.queue
        while n:
            key, count = next(iter(queue.items()))
            if count > n:
                queue[key] = count - n
                self.queued -= n
                return
            del queue[key]
            self.queued -= count
            n -= count
            if count == 1 and key in self.refs:
                del self.refs[key]  # an evicted cached block
                self.evicted.append(key)
                self.evictions += 1

    def hold_state(self, seq: Seq, n: int) -> None:
        """Give ``seq`` the ``n`` blocks of its fixed per-sequence state (once, at admission; the
        caller checked that they are free); :meth:`release` frees them."""
        self._fresh(n)
        seq.state += n

    def reserve(self, seq: Seq, tokens: int) -> None:
        """Hold the blocks of ``tokens`` tokens for ``seq`` now (TensorRT-LLM's reservation at
        admission; the caller checked that they are free)."""
        need = -(-tokens // self.block_tokens) - seq.blocks
        if need > 0:
            self.grow(seq, need)

    def allocate(self, seq: Seq, computed_after: int) -> bool:
        """Give ``seq`` the blocks for ``computed_after`` computed tokens (its computed tokens
        after this step's), caching the shareable blocks they fill; False (and nothing taken) when
        too few blocks are free."""
        bt = self.block_tokens
        need = -(-computed_after // bt) - seq.blocks
        if need > self.free:
            return False
        if need > 0:
            self.grow(seq, need)
        if self.caching:
            full = min(computed_after // bt, seq.shareable)
            refs = self.refs
            while seq.registered < full:
                h = seq.block_hash(seq.registered, bt)
                if h not in refs:  # cache_full_blocks: the first to fill a block caches it
                    refs[h] = 1
                    self._changed()
                    seq.hashes.append(h)
                    seq.own -= 1
                seq.registered += 1
        return True

    def release(self, seq: Seq, preempted_at: int | None = None) -> None:
        """Free a request's blocks, last first. A request preempted with ``preempted_at`` computed
        tokens keeps its full own blocks cached under its own hashes, so that it finds them when it
        is resumed; a finished one's can never be hit and return as plain blocks, as do the blocks
        of its fixed state (a resumed request recomputes its state)."""
        bt = self.block_tokens
        refs = self.refs
        self._changed()
        keep = 0
        if preempted_at is not None and self.caching:
            first = len(seq.hashes)
            keep = max(0, min(seq.own, preempted_at // bt - first))
        self._append_plain(seq.own - keep + seq.state)
        seq.state = 0
        for i in reversed(range(len(seq.hashes), len(seq.hashes) + keep)):
            h = seq.block_hash(i, bt)
            if h in refs:  # a duplicate of a block another request cached first
                self._append_plain(1)
                continue
            refs[h] = 0
            self.queue[h] = 1
            self.queued += 1
        for h in reversed(seq.hashes):
            count = refs[h] - 1
            refs[h] = count
            if count == 0:
                self.queue[h] = 1
                self.queued += 1
        seq.hashes = []
        seq.own = 0
        seq.blocks = 0
        seq.registered = 0

    def _append_plain(self, n: int) -> None:
        if n > 0:
            self.runs += 1
            self.queue[("plain", self.runs)] = n
            self.queued += n
