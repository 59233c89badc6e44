"""Steady decode stretches: passes in which nothing but one decode token per request happens,
advanced as one step over plain counters (docs/design.md#replay, "fast path").

A stretch starts where a vLLM-like worker with one rank and no SD has just planned a pass whose
batch is every running request, each decoding one token and each having emitted at the start
of the pass (so every inter-token gap of a pass is the pass's duration). Until the first of
  * the next event in the heap (an arrival or anything else) at or before a pass end,
  * a request's last output token (the pass in which one finishes is not skipped),
  * a KV page the pool could not give without preempting,
  * the simulation horizon, the event bound or a progress report,
every later pass is planned exactly like the first: the same requests, one token each, past KV
one more per request per pass, no admission (the queue is empty or the sequence cap is reached,
and neither changes without a finish), no preemption. Such passes are priced one by one (their
durations differ), but each request's counters, timestamps, KV pages and cache units are
brought up to date once, at the end, and the gaps go to the ITL distribution as one run per
pass. The last pass of a stretch is then completed by the ordinary path.

Every output is identical to stepping pass by pass (``Simulation(step_by_step=True)``, the
oracle of tests/replay/test_replay_fast_path.py). Grows that all succeed evict the same LRU
units however they are split: each eviction takes the LRU head until the free pages cover the
demand so far, so after any split the evicted units are the fewest that cover the total (and
nothing is released meanwhile). The skipped events would have changed nothing else.
"""

from __future__ import annotations

from aisim.errors import UnsupportedQuery
from aisim.replay._pricing import RankWork
from aisim.replay._rank import RankState
from aisim.replay._recorder import Recorder
from aisim.replay._request import WORK_DECODE
from aisim.replay._sd_round import register_full_units
from aisim.replay._worker import Worker


def stretch_capable(worker: Worker, recorder: Recorder) -> bool:
    """Whether ``worker`` (the simulation's only one) may ever run a stretch."""
    plan = worker.plan
    if not worker.scheduler.steady_stretches or len(worker.ranks) != 1 or plan.speculation.enabled:
        return False
    if plan.speculation.lookahead_tokens != 0 or plan.speculation.verify_width != 1:
        return False
    return not plan.pricer.wants_request_lists and not recorder.per_token


def steady_requests(rank: RankState, now_ms: float) -> int:
    """Passes (>= 1) the planned batch may run before one of its requests finishes, or 0 when
    the planned pass does not start a stretch."""
    batch = rank.batch
    if not batch or len(batch) != len(rank.running):
        return 0
    if rank.waiting and len(rank.running) < rank.scheduler.max_sequences:
        return 0
    passes = -1
    for request in batch:
        if request.work != WORK_DECODE or request.work_tokens != 1:
            return 0
        if request.last_token_ms != now_ms:
            return 0
        remaining = request.output_tokens - request.emitted
        if passes < 0 or remaining < passes:
            passes = remaining
    return passes if passes > 0 else 0


def pass_ends(
    worker: Worker,
    now_ms: float,
    first_duration_ms: float,
    max_passes: int,
    next_event_ms: float,
    horizon_ms: float,
) -> list[float]:
    """``[now, end of pass 1, ..., end of pass k]`` with k <= ``max_passes``: pass p + 1 is
    planned at the end of pass p only while no event comes at or before it (and within the
    horizon). Each pass is priced as the step-by-step path prices it (one more past KV token per
    request per pass); a pass the estimator refuses ends the stretch before it, so the ordinary
    path reports it."""
    rank = worker.ranks[0]
    work = rank.work()
    count = work.num_decode_requests
    ends = [now_ms, now_ms + first_duration_ms]
    pricer = worker.plan.pricer
    draft_length = worker.draft_length
    while len(ends) - 1 < max_passes:
        end = ends[-1]
        if end >= next_event_ms or (horizon_ms >= 0.0 and end > horizon_ms):
            break
        following = RankWork()
        following.num_decode_requests = count
        following.sum_decode_kv_tokens = work.sum_decode_kv_tokens + count
        try:
            duration = pricer.price([following], draft_length)
        except UnsupportedQuery:
            break
        work = following
        ends.append(end + duration)
    return ends


def affordable_passes(rank: RankState, passes: int) -> int:
    """The most passes (<= ``passes``) whose KV growth the pool covers for the whole batch
    (planning pass p needs ``computed + p`` tokens per request, ``computed`` as planned for
    pass 1)."""
    pool = rank.pool
    available = pool.available_pages
    low = 1
    high = passes
    while low < high:
        middle = (low + high + 1) // 2
        needed = 0
        for request in rank.batch:
            needed += pool.extra_pages_needed(request.kv, request.computed + middle)
        if needed <= available:
            low = middle
        else:
            high = middle - 1
    return low


def advance(rank: RankState, recorder: Recorder, ends: list[float]) -> None:
    """Complete passes 1..k-1 of the stretch (``ends`` has k + 1 times) and plan pass k for
    every request of the batch, as the step-by-step path would have."""
    skipped = len(ends) - 2
    pool = rank.pool
    batch = rank.batch
    count = len(batch)
    longest = 0.0
    for index in range(1, skipped + 1):
        gap = ends[index] - ends[index - 1]
        recorder.add_gaps(gap, count)
        if gap > longest:
            longest = gap
    last_ms = ends[skipped]
    second_ms = ends[1]
    for request in batch:
        emitted = request.emitted
        if emitted < 2 <= emitted + skipped:
            second_ms = ends[2 - emitted]
            request.second_token_ms = second_ms
        computed = request.computed + skipped
        request.computed = computed
        request.emitted = emitted + skipped
        request.rounds += skipped
        request.emissions += skipped
        request.last_token_ms = last_ms
        if longest > request.max_itl_ms:
            request.max_itl_ms = longest
        pool.shrink(request.kv, computed)
        register_full_units(pool, request)
        grown = pool.grow(request.kv, computed + 1)
        assert grown, "affordable_passes promised the pages"
        request.work_past_kv = computed
    recorder.passes += skipped
