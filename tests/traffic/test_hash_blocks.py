"""Bucketed hash-id counts (aisim/traffic/_hash_blocks.py): a block is called private only when
its id occurs once in the traffic (checked against an exact count), repeats saturate instead
of wrapping, and the counts do not depend on how the ids were chunked."""

from __future__ import annotations

from collections import Counter
from unittest import mock

from hypothesis import given
from hypothesis import strategies as st

from aisim.replay._plan import RequestSpec
from aisim.traffic import _hash_blocks
from aisim.traffic._hash_blocks import HashIdCounts, count_hash_ids


def request(hash_ids: list[int]) -> RequestSpec:
    return RequestSpec(0, "0", 16 * max(1, len(hash_ids)), 1, 0.0, [], 0.0, hash_ids, 16)


def counted(traffic: list[list[int]], table_bits: int) -> HashIdCounts:
    counts = HashIdCounts(table_bits)
    for hash_ids in traffic:
        counts.add(hash_ids)
    counts.close()
    return counts


ID_LISTS = st.lists(
    st.lists(st.one_of(st.integers(0, 40), st.integers(0, 2**62 - 1)), max_size=12),
    max_size=12,
)


@given(ID_LISTS, st.sampled_from([1, 3, 6, 23]), st.sampled_from([1, 5, 1 << 20]))
def test_a_block_called_private_has_an_id_that_occurs_once(
    traffic: list[list[int]], table_bits: int, chunk: int
) -> None:
    exact = Counter(hash_id for hash_ids in traffic for hash_id in hash_ids)
    with mock.patch.object(_hash_blocks, "CHUNK_IDS", chunk):
        counts = counted(traffic, table_bits)
    for hash_ids in traffic:
        position = counts.private_from(hash_ids)
        first_once = next((i for i, h in enumerate(hash_ids) if exact[h] == 1), -1)
        if position >= 0:
            # Sound: that id occurs once, and no earlier block was taken for private.
            assert exact[hash_ids[position]] == 1
            assert first_once <= position
        else:
            assert all(exact[h] > 1 for h in hash_ids) or table_bits < 23


def test_without_collisions_every_first_once_block_is_found() -> None:
    # 2,000 sequential ids (as Mooncake traces number blocks) in 2**23 buckets: no collision.
    traffic = [[i, i + 1, 5000] for i in range(0, 2000, 2)] + [[1, 2, 3]]
    counts = counted(traffic, 23)
    assert counts.private_from([0, 1, 5000]) == 0
    assert counts.private_from([2, 3, 5000]) == -1  # 2 and 3 also occur in [1, 2, 3]
    assert counts.private_from([4, 5, 5000]) == 0
    assert counts.private_from([1, 2, 3]) == -1  # 1, 2 and 3 each occur twice
    assert counts.private_from([5000, 4]) == 1
    assert counts.private_from([]) == -1


def test_repeats_saturate_instead_of_wrapping() -> None:
    # 256 and 257 occurrences would wrap a one-byte counter to 0 and 1.
    for repeats in (2, 255, 256, 257, 1000):
        with mock.patch.object(_hash_blocks, "CHUNK_IDS", 100):
            counts = counted([[7]] * repeats, 23)
        assert counts.private_from([7]) == -1, repeats
        assert counted([[7] * repeats], 23).private_from([7]) == -1, repeats


def test_a_traffic_without_hash_ids_allocates_no_table() -> None:
    counts = count_hash_ids([request([]), request([])])
    assert counts.private_from([1, 2]) == -1
    assert counts._counts is None and counts._table == b""
