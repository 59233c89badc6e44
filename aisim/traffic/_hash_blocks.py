"""Which trace hash ids occur once in a replay's traffic, so the fast path can count the blocks
from there on instead of interning one prefix-cache entry per block (docs/design.md, Replay).

A unit's identity in the prefix cache is its chain of block contents from the prompt's start,
so a prompt block whose hash id occurs once in the whole traffic, and every unit after it, can
only ever be matched by that same request (its own recompute): the same condition as a unit no
hash id covers, which the fast path already counts lazily (``KvPool.register_lazy``).
``RequestSpec.private_from_block`` carries the first such block; the results are those of the
step-by-step path, which ignores it (tests/replay/test_replay_fast_path.py).

Counting is bounded whatever the trace's size: ids are counted per bucket of a fixed table
(``2**TABLE_BITS`` one-byte counters saturating at 2, filled in numpy chunks), and an id counts
as occurring once only when its whole bucket counted one id. A collision can only make such an
id look shared (then the fast path interns more entries, with the same results), never the
reverse. Interpreted (the config edge).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Final

import numpy as np

from aisim.replay import RequestSpec

TABLE_BITS: Final = 23
#: Ids gathered before they are counted into the table (bounded memory).
CHUNK_IDS: Final = 1 << 20
_MIX: Final = 0x9E3779B97F4A7C15  # Fibonacci hashing: spreads sequential ids over the buckets
_MASK64: Final = (1 << 64) - 1


class HashIdCounts:
    """Bucketed counts of the hash ids of a traffic: ``add`` every request's ids, then
    ``private_from`` tells a request's first block whose id occurred once."""

    def __init__(self, table_bits: int = TABLE_BITS) -> None:
        self.table_bits = table_bits
        self._shift = 64 - table_bits
        self._counts: np.ndarray | None = None
        self._pending: list[int] = []
        self._table: bytes = b""

    def add(self, hash_ids: list[int]) -> None:
        if not hash_ids:
            return
        self._pending.extend(hash_ids)
        if len(self._pending) >= CHUNK_IDS:
            self._count_pending()

    def close(self) -> None:
        """Count what is pending; ``private_from`` reads the table from then on."""
        self._count_pending()
        if self._counts is not None:
            self._table = self._counts.tobytes()
            self._counts = None

    def private_from(self, hash_ids: list[int]) -> int:
        """The first position of ``hash_ids`` whose id occurred once in the traffic (every
        block from it on is this request's alone), or -1."""
        table = self._table
        if not table:
            return -1
        shift = self._shift
        for position, hash_id in enumerate(hash_ids):
            if table[((hash_id * _MIX) & _MASK64) >> shift] == 1:
                return position
        return -1

    def _count_pending(self) -> None:
        if not self._pending:
            return
        if self._counts is None:
            self._counts = np.zeros(1 << self.table_bits, dtype=np.uint8)
        counts = self._counts
        ids = np.array(self._pending, dtype=np.uint64)
        self._pending = []
        buckets = ((ids * np.uint64(_MIX)) >> np.uint64(self._shift)).astype(np.intp)
        buckets.sort()
        repeated = buckets[1:][buckets[1:] == buckets[:-1]]
        # A bucket hit several times in this chunk gets +1 from the assignment, then 2.
        counts[buckets] = np.minimum(counts[buckets] + 1, 2)
        counts[repeated] = 2


def mark_private_blocks(requests: Iterable[RequestSpec], counts: HashIdCounts) -> None:
    """Set ``private_from_block`` of each request from ``counts`` (closed, and counted over a
    traffic that holds at least these requests)."""
    for request in requests:
        request.private_from_block = counts.private_from(request.hash_ids)


def count_hash_ids(requests: Iterable[RequestSpec]) -> HashIdCounts:
    """The closed counts of ``requests``' hash ids."""
    counts = HashIdCounts()
    for request in requests:
        counts.add(request.hash_ids)
    counts.close()
    return counts
