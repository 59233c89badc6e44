"""KvPool accounting under random operation sequences: pages are never over-committed and the
pool's counts agree with an independent tally of what the holdings reference."""

from __future__ import annotations

from collections import OrderedDict

from hypothesis import given, settings
from hypothesis import strategies as st

from aisim.replay._kv_pool import KvHolding, KvPool

OPERATIONS = st.lists(
    st.tuples(
        st.sampled_from(["grow", "shrink", "register", "release", "reuse"]),
        st.integers(0, 3),
        st.integers(0, 200),
    ),
    max_size=60,
)


@given(
    total=st.integers(1, 40),
    page=st.sampled_from([1, 4, 16]),
    unit_multiple=st.integers(1, 2),
    operations=OPERATIONS,
)
def test_pool_accounting(
    total: int, page: int, unit_multiple: int, operations: list[tuple[str, int, int]]
) -> None:
    unit = page * unit_multiple
    pool = KvPool(total, page, unit, True)
    holdings = [KvHolding() for _ in range(4)]

    # Holdings 0 and 1 write the same content (they share prefixes); 2 and 3 are unique.
    def content(owner: int, index: int) -> tuple[int, ...]:
        return (index,) if owner < 2 else (-1 - owner, index)

    for kind, owner, amount in operations:
        holding = holdings[owner]
        if kind == "grow":
            before = pool.available_pages
            needed = pool.extra_pages_needed(holding, amount)
            grown = pool.grow(holding, amount)
            assert grown == (needed <= before)
        elif kind == "shrink":
            pool.shrink(holding, amount)
        elif kind == "register" and holding.private_pages >= pool.unit_pages:
            pool.register(holding, content(owner, len(holding.shared)))
        elif kind == "release":
            pool.release(holding)
        elif kind == "reuse" and not holding.shared and holding.private_pages == 0:
            keys = [content(owner, index) for index in range(amount % 5)]
            pool.acquire(holding, pool.match(keys))
        referenced = {id(entry): entry for h in holdings for entry in h.shared}
        tally = sum(h.private_pages for h in holdings) + len(referenced) * pool.unit_pages
        assert pool.used_pages == tally
        assert pool.free_pages >= 0 and pool.evictable_pages >= 0
        assert pool.used_pages + pool.free_pages + pool.evictable_pages == total
        assert pool.peak_used_pages <= total
        for entry in referenced.values():
            assert entry.refcount == sum(h.shared.count(entry) for h in holdings)


def test_lru_evicts_the_least_recently_released_unit_first() -> None:
    # 4 pages of 1 token. A registers units 0, 1 then releases them (unit 1 goes first in line,
    # as a request frees its blocks in reverse order). Growing B by 3 pages evicts unit 1 only.
    pool = KvPool(4, 1, 1, True)
    first = KvHolding()
    assert pool.grow(first, 2)
    pool.register(first, (10,))
    pool.register(first, (11,))
    pool.release(first)
    assert (pool.free_pages, pool.evictable_pages) == (2, 2)
    second = KvHolding()
    assert pool.grow(second, 3)
    assert (pool.free_pages, pool.evictable_pages) == (0, 1)
    third = KvHolding()
    assert [entry.key for entry in pool.match([(10,), (11,)])] == [(-1, 10)]
    pool.acquire(third, pool.match([(10,), (11,)]))
    assert pool.used_pages == 4
    assert not pool.grow(third, 2)  # unit 0 is shared, one more page is not available


class _ReferencePool:
    """The pool's observable rules written the plain way (the implementation before the lean
    tables): one ``(parent, *content)`` -> entry table, an ordered LRU keyed by entry id, lazy
    units released as one anonymous run. The oracle of ``test_pool_equals_the_reference``."""

    def __init__(self, total: int, page: int, unit: int) -> None:
        self.unit_tokens = unit
        self.page_tokens = page
        self.unit_pages = unit // page
        self.free_pages = total
        self.evictable_pages = 0
        self.entries: dict[tuple[int, ...], list[int]] = {}  # key -> [entry id, refcount]
        self.lru: OrderedDict[int, tuple[tuple[int, ...], int]] = OrderedDict()  # id -> key, units
        self.next_id = 0

    def extra(self, holding: _RefHolding, tokens: int) -> int:
        private = tokens - (len(holding.shared) + holding.lazy) * self.unit_tokens
        if private <= 0:
            return 0
        return max(0, -(-private // self.page_tokens) - holding.private)

    def grow(self, holding: _RefHolding, tokens: int) -> bool:
        needed = self.extra(holding, tokens)
        if needed == 0:
            return True
        if needed > self.free_pages + self.evictable_pages:
            return False
        while self.free_pages < needed:
            entry_id, (key, units) = self.lru.popitem(last=False)
            if units > 0:
                taken = min(units, -(-(needed - self.free_pages) // self.unit_pages))
                self.evictable_pages -= taken * self.unit_pages
                self.free_pages += taken * self.unit_pages
                if units > taken:
                    self.lru[entry_id] = (key, units - taken)
                    self.lru.move_to_end(entry_id, last=False)
                continue
            del self.entries[key]
            self.evictable_pages -= self.unit_pages
            self.free_pages += self.unit_pages
        self.free_pages -= needed
        holding.private += needed
        return True

    def shrink(self, holding: _RefHolding, tokens: int) -> None:
        private = tokens - (len(holding.shared) + holding.lazy) * self.unit_tokens
        keep = -(-private // self.page_tokens) if private > 0 else 0
        if holding.private > keep:
            self.free_pages += holding.private - keep
            holding.private = keep

    def ref(self, key: tuple[int, ...]) -> None:
        found = self.entries[key]
        if found[1] == 0 and found[0] in self.lru:
            del self.lru[found[0]]
            self.evictable_pages -= self.unit_pages
        found[1] += 1

    def register(self, holding: _RefHolding, content: tuple[int, ...]) -> None:
        parent = self.entries[holding.shared[-1]][0] if holding.shared else -1
        key = (parent, *content)
        holding.private -= self.unit_pages
        if key in self.entries:
            self.free_pages += self.unit_pages
        else:
            self.entries[key] = [self.next_id, 0]
            self.next_id += 1
        self.ref(key)
        holding.shared.append(key)

    def match(self, contents: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
        hits: list[tuple[int, ...]] = []
        parent = -1
        for content in contents:
            key = (parent, *content)
            if key not in self.entries:
                break
            hits.append(key)
            parent = self.entries[key][0]
        return hits

    def release(self, holding: _RefHolding) -> None:
        self.free_pages += holding.private
        holding.private = 0
        if holding.lazy > 0:
            self.lru[self.next_id] = ((), holding.lazy)
            self.next_id += 1
            self.evictable_pages += holding.lazy * self.unit_pages
            holding.lazy = 0
        for key in reversed(holding.shared):
            found = self.entries[key]
            found[1] -= 1
            if found[1] == 0:
                self.lru[found[0]] = (key, 0)
                self.evictable_pages += self.unit_pages
        holding.shared = []


class _RefHolding:
    def __init__(self) -> None:
        self.shared: list[tuple[int, ...]] = []
        self.private = 0
        self.lazy = 0


# Contents: trace hash ids (one int, repeated under different parents), offset keys, unique keys.
CONTENTS = st.sampled_from([(0,), (1,), (2,), (5, 0, 1), (-1, 0), (-2,)])


@settings(max_examples=400)
@given(
    total=st.integers(1, 24),
    page=st.sampled_from([1, 4]),
    unit_multiple=st.integers(1, 2),
    lazy=st.booleans(),
    compact_min=st.integers(0, 3),
    operations=st.lists(
        st.tuples(
            st.sampled_from(["grow", "shrink", "register", "batch", "lazy", "release", "reuse"]),
            st.integers(0, 3),
            st.integers(0, 60),
            st.lists(CONTENTS, max_size=6),
        ),
        min_size=30,
        max_size=80,
    ),
)
def test_pool_equals_the_reference(
    total: int,
    page: int,
    unit_multiple: int,
    lazy: bool,
    compact_min: int,
    operations: list[tuple[str, int, int, list[tuple[int, ...]]]],
) -> None:
    """Every grow, match, page count and eviction agrees with ``_ReferencePool`` (stale LRU
    copies, hash ids cached under several parents, batched hash blocks, partly evicted lazy
    runs included)."""
    unit = page * unit_multiple
    pool = KvPool(total, page, unit, True, lazy_units=lazy)
    # Compact the LRU queue and trim its consumed head as early as possible.
    pool.lru_compact_min = compact_min
    pool.lru_trim_min = compact_min
    reference = _ReferencePool(total, page, unit)
    holdings = [KvHolding() for _ in range(4)]
    shadows = [_RefHolding() for _ in range(4)]
    written: list[list[tuple[int, ...]]] = [[] for _ in range(4)]
    for kind, owner, amount, contents in operations:
        holding, shadow = holdings[owner], shadows[owner]
        if kind == "grow":
            assert pool.grow(holding, amount) == reference.grow(shadow, amount)
        elif kind == "shrink":
            pool.shrink(holding, amount)
            reference.shrink(shadow, amount)
        elif kind in ("register", "lazy"):
            # Grow by one unit, then share it (a hashed or keyed unit, or a lazy one).
            tokens = (len(holding.shared) + holding.lazy_units + 1) * unit
            grown = pool.grow(holding, tokens)
            assert grown == reference.grow(shadow, tokens)
            if grown and kind == "register" and contents:
                pool.register(holding, contents[0])
                reference.register(shadow, contents[0])
                written[owner].append(contents[0])
            elif grown and lazy:
                pool.register_lazy(holding, 1)
                shadow.private -= reference.unit_pages
                shadow.lazy += 1
        elif kind == "batch":
            # A prompt's hash-id blocks registered at once (KvPool.register_hashes).
            ids = [content[0] for content in contents if len(content) == 1 and content[0] >= 0]
            tokens = (len(holding.shared) + holding.lazy_units + len(ids)) * unit
            grown = pool.grow(holding, tokens)
            assert grown == reference.grow(shadow, tokens)
            if grown and not holding.lazy_units:
                pool.register_hashes(holding, [9, *ids], 1, 1 + len(ids))
                for hash_id in ids:
                    reference.register(shadow, (hash_id,))
                    written[owner].append((hash_id,))
        elif kind == "release":
            pool.release(holding)
            reference.release(shadow)
            written[owner] = []
        else:
            # Start again from a release: match a chain of contents and acquire the hits.
            pool.release(holding)
            reference.release(shadow)
            written[owner] = []
            # Mostly a chain another holding wrote (so matches hit), then the drawn contents.
            contents = written[amount % 4][: amount % 7] + contents
            hits = pool.match(contents)
            assert [entry.key for entry in hits] == reference.match(contents)
            pool.acquire(holding, hits)
            for key in reference.match(contents):
                reference.ref(key)
                shadow.shared.append(key)
            written[owner] = contents[: len(hits)]
        assert (pool.free_pages, pool.evictable_pages) == (
            reference.free_pages,
            reference.evictable_pages,
        )
        assert [entry.key for entry in holding.shared] == shadow.shared
        assert pool.evictable() == list(reference.lru.values())


def test_lru_compaction_keeps_the_release_order() -> None:
    # Unit (1,) is taken back out of the LRU and released again after (5,): its first queued
    # copy is stale. Dropping stale copies keeps the order (2), (5), (1); eviction follows it.
    pool = KvPool(6, 1, 1, True)
    first, second, third = KvHolding(), KvHolding(), KvHolding()
    assert pool.grow(first, 2)
    pool.register_hashes(first, [1, 2], 0, 2)
    pool.release(first)
    pool.acquire(second, pool.match([(1,)]))
    assert pool.grow(third, 1)
    pool.register_hashes(third, [5], 0, 1)
    pool.release(third)
    pool.release(second)
    order = [((0, 2), 0), ((-1, 5), 0), ((-1, 1), 0)]
    assert pool.evictable() == order
    pool._compact()
    assert pool.evictable() == order
    # Needing 4 of 6 pages (3 free) evicts the first in line only.
    assert pool.grow(KvHolding(), 4)
    assert pool.evictable() == order[1:]
    assert [entry.key for entry in pool.match([(1,)])] == [(-1, 1)]
