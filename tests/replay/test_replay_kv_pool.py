"""KvPool accounting under random operation sequences: pages are never over-committed and the
pool's counts agree with an independent tally of what the holdings reference."""

from __future__ import annotations

from hypothesis import given
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
