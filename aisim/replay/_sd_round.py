"""One decode round of one request: reserve, sample acceptance, emit, release, hash (docs/design.md#replay).

The round's verification width ``w`` (KV slots reserved, token budget used) is ``d + 1``; on the
SGLang-like scheduler it is clamped to the remaining output, ``min(d + 1, remaining output)``,
while vLLM schedules every draft of a running request even past its ``max_tokens``
(``vllm/v1/core/sched/scheduler.py``, ``Scheduler.schedule``: ``num_new_tokens`` is capped by the
token budget and ``max_model_len`` only) and drops the extra tokens afterwards. The accepted
drafts ``a`` are sampled separately from the request's own seeded stream, stop at the first
rejection and never exceed ``min(w, remaining output) - 1``, so ``1 + a`` tokens are emitted
without passing the requested output length.

A request's first ``undrafted_rounds`` rounds (``ngram``: before any n-gram of its context
matches, ``vllm/v1/spec_decode/ngram_proposer.py``, ``NgramProposer.propose``) carry no drafts:
width 1, nothing sampled, one token emitted.

The drafts of a round are the rank's current draft length (``RankState.round_drafts``: the
configured chain, or what vLLM's batch-size table or SGLang's adaptive policy chose, see
``_sd_policy``), or the trace's drafted count for that round; 0 makes an undrafted round. With
an acceptance trace the accepted drafts are the trace's, capped by the round's width, instead
of sampled.
"""

from __future__ import annotations

from aisim.errors import ConfigError
from aisim.replay._kv_pool import CacheEntry, KvPool
from aisim.replay._plan import SpeculationPlan
from aisim.replay._recorder import Recorder
from aisim.replay._request import SimRequest
from aisim.replay._rng import RandomStream


def round_drafts(speculation: SpeculationPlan, request: SimRequest, rank_drafts: int) -> int:
    """Drafts of the request's next decode round: 0 in its first ``undrafted_rounds``, the
    trace's drafted count when the trace gives one, else the rank's current length."""
    if request.rounds < speculation.undrafted_rounds:
        return 0
    drafted = speculation.trace_drafted
    if drafted is not None:
        rounds = _trace_rounds(drafted, request, "drafted")
        count = rounds[request.rounds]
        return count if count < speculation.draft_length else speculation.draft_length
    return rank_drafts


def is_undrafted(speculation: SpeculationPlan, request: SimRequest, rank_drafts: int) -> bool:
    """Whether the request's next decode round proposes no drafts."""
    return round_drafts(speculation, request, rank_drafts) == 0


def round_width(
    speculation: SpeculationPlan, request: SimRequest, clamp: bool, rank_drafts: int
) -> int:
    """Verification slots of the request's next round: its drafts + 1, clamped to its remaining
    output when ``clamp`` (SGLang-like; vLLM verifies every draft, see the module docstring);
    1 in an undrafted round."""
    # Called for every decode round planned: ``round_drafts`` is inlined for the common case
    # (no trace), and a request with no output left (width 1 at least) gets ``remaining``.
    remaining = request.remaining_output
    if remaining <= 0:
        return remaining
    if request.rounds < speculation.undrafted_rounds:
        return 1
    drafts = rank_drafts
    if speculation.trace_drafted is not None:
        drafts = round_drafts(speculation, request, rank_drafts)
    if drafts == 0:
        return 1
    width = speculation.verify_width if drafts == speculation.draft_length else drafts + 1
    if width < remaining or not clamp:
        return width
    return remaining


def sample_accepted(rng: RandomStream, thresholds: list[int], max_drafts: int) -> int:
    """Accepted drafts: position i is accepted with probability ``thresholds[i] / 2**32`` (the
    conditional rate) given all earlier ones were; the first rejection ends the chain. Draws one
    32-bit number per examined position."""
    accepted = 0
    limit = max_drafts if max_drafts < len(thresholds) else len(thresholds)
    while accepted < limit:
        if rng.next_u32() < thresholds[accepted]:
            accepted += 1
        else:
            break
    return accepted


def register_full_units(pool: KvPool, request: SimRequest) -> None:
    """Share every fully computed unit of ``request`` not shared yet (prefix caching). On the
    fast path a unit with unique content is counted, not interned (``KvPool.register_lazy``)."""
    if not pool.prefix_caching:
        return
    unit_tokens = pool.unit_tokens
    kv = request.kv
    full = request.computed // unit_tokens
    have = len(kv.shared) + kv.lazy_units
    if full <= have:
        return
    unit = have
    if pool.lazy_units:
        eager_end = request.first_unique_unit(unit_tokens)
        if eager_end > full:
            eager_end = full
        if unit < eager_end and unit_tokens == request.spec.hash_block_tokens:
            # Every unit before eager_end is one hash block of the prompt.
            pool.register_hashes(kv, request.spec.hash_ids, unit, eager_end)
            unit = eager_end
        while unit < eager_end:
            _register_unit(pool, request, unit, unit_tokens)
            unit += 1
        if unit < full:
            pool.register_lazy(kv, full - unit)
        return
    while unit < full:
        _register_unit(pool, request, unit, unit_tokens)
        unit += 1


def _register_unit(pool: KvPool, request: SimRequest, unit: int, unit_tokens: int) -> None:
    """``pool.register`` of the unit's content, without a key tuple when it is one hash id."""
    hash_id = request.unit_hash_id(unit, unit_tokens)
    if hash_id >= 0:
        pool.register_hash(request.kv, hash_id)
    else:
        pool.register(request.kv, request.unit_key(unit, unit_tokens))


def materialize_units(pool: KvPool, request: SimRequest) -> None:
    """Give ``request``'s lazy units their cache entries before a release it may recompute
    from (a preemption, dropped landed KV): its recompute can then hit them, as it would have
    with the step-by-step path."""
    kv = request.kv
    if kv.lazy_units == 0:
        return
    unit_tokens = pool.unit_tokens
    start = len(kv.shared)
    contents = [request.unit_key(unit, unit_tokens) for unit in range(start, start + kv.lazy_units)]
    pool.materialize(kv, contents)
    request.unique_entries = True


def match_units(pool: KvPool, request: SimRequest, count: int) -> list[CacheEntry]:
    """Cached entries for the longest prefix of ``request``'s first ``count`` units. On the fast
    path, units with unique content are looked up only once the request has entries for them
    (nobody else can have created them), so a trace without ``hash_ids`` builds no keys."""
    if not pool.prefix_caching:
        return []
    unit_tokens = pool.unit_tokens
    if pool.lazy_units and not request.unique_entries:
        first_unique = request.first_unique_unit(unit_tokens)
        if first_unique < count:
            count = first_unique
    hits: list[CacheEntry] = []
    parent = -1
    for unit in range(count):
        # As ``pool.match`` on ``request.unit_keys(count, unit_tokens)``, each key built only
        # when its unit is not one hash id and the units before it hit.
        hash_id = request.unit_hash_id(unit, unit_tokens)
        if hash_id >= 0:
            entry = pool.lookup_hash(parent, hash_id)
        else:
            entry = pool.lookup(parent, request.unit_key(unit, unit_tokens))
        if entry is None:
            break
        hits.append(entry)
        parent = entry.entry_id
    return hits


def finish_decode_round(
    pool: KvPool,
    speculation: SpeculationPlan,
    request: SimRequest,
    recorder: Recorder,
    now_ms: float,
    batch_accepted: int = -1,
) -> None:
    """Apply a finished round whose ``work_tokens`` verification slots were reserved.
    ``batch_accepted`` >= 0: the pass's one accepted count (SGLang's simulated acceptance),
    capped by this round's usable drafts, instead of a draw from the request's stream."""
    width = request.work_tokens
    accepted = 0
    if speculation.enabled:
        rng = request.rng
        assert rng is not None
        remaining = request.remaining_output
        usable = width if width < remaining else remaining
        trace = speculation.trace_accepted
        if trace is not None:
            accepted = _trace_rounds(trace, request, "accepted")[request.rounds]
            if accepted > usable - 1:
                accepted = usable - 1
        elif batch_accepted >= 0:
            accepted = batch_accepted if batch_accepted < usable - 1 else usable - 1
        else:
            accepted = sample_accepted(rng, speculation.acceptance_thresholds, usable - 1)
        request.sd_rounds += 1
        request.accepted_drafts += accepted
        recorder.accepted_histogram[accepted] += 1
        if remaining > speculation.draft_length:
            recorder.uncapped_histogram[accepted] += 1
    emitted = 1 + accepted
    request.rounds += 1
    request.computed += emitted
    recorder.emit(request, emitted, now_ms)
    pool.shrink(request.kv, request.computed)
    register_full_units(pool, request)


def _trace_rounds(trace: dict[str, list[int]], request: SimRequest, what: str) -> list[int]:
    """The trace's rounds of ``request``; a request the trace lacks, or one it runs out of
    before the request's output ends, is a ``ConfigError`` (a trace replays exactly or not at
    all)."""
    rounds = trace.get(request.spec.request_id)
    if rounds is None:
        raise ConfigError(
            f"speculation.acceptance_trace: request {request.spec.request_id!r} of the traffic "
            f"has no rounds in the trace ({what})"
        )
    if request.rounds >= len(rounds):
        raise ConfigError(
            f"speculation.acceptance_trace: request {request.spec.request_id!r} needs decode "
            f"round {request.rounds + 1}, but the trace has {len(rounds)} ({what}); its rounds "
            f"emit fewer tokens than the request's output length"
        )
    return rounds
