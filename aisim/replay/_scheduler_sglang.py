"""SGLang-like scheduling for one rank: prefill passes and decode passes alternate.

A pass is a prefill ("extend") pass whenever a chunked prefill is in progress or a waiting
request can be admitted: the chunked request continues first, then waiting requests (FIFO) while
the chunk budget (``chunked_prefill_size``), the running cap and the KV reserve allow; at most one
request is split. The reserve keeps ``new_token_ratio`` x the remaining output of every running
request free, and a new request needs its known tokens plus its whole remaining output (clipped
at ``CLIP_MAX_NEW_TOKENS``, as SGLang's ``PrefillAdder`` does) to fit below that; the ratio
decays by ``new_token_ratio_decay`` per decode pass to its minimum, is reset by an idle worker
(``Worker``) and after a retraction becomes SGLang's estimate from the kept requests
(``ratio_after_retraction``).
Otherwise the pass decodes every running request; when the KV pool cannot hold all their rounds
(with SD, each round's verify slots plus ``d`` draft slots: ``check_decode_mem`` with
``decode_mem_cache_buf_multiplier``), requests are retracted (fewest emitted tokens first, then
longest prompt; with SD the last request of the batch first, as ``retract_decode`` does) and
later recomputed. On a decode pool a handed-off request's first token (sampled by the prefill
pool) reaches the client when the request is taken in.
"""

from __future__ import annotations

from typing import Final

from aisim.replay._plan import SchedulerPlan
from aisim.replay._rank import RankRules, RankState
from aisim.replay._request import PHASE_DECODE, WORK_NONE, SimRequest
from aisim.replay._scheduler import Scheduler

#: SGLang's ``SGLANG_RETRACT_DECODE_STEPS`` (``global_config.retract_decode_steps``) default.
RETRACT_DECODE_STEPS: Final = 20
#: SGLang's ``SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION`` default: admission counts at most this many
#: future output tokens per request.
CLIP_MAX_NEW_TOKENS: Final = 4096


class SglangScheduler(Scheduler):
    """SGLang's scheduler (``python/sglang/srt/managers/scheduler.py``, ``Scheduler``) at
    replay's grain: rounds clamped to the remaining output, prefix hits refreshed by the match,
    the prefill server's first token sent with the KV, which the prefill pool pushes; new
    requests taken in every ``recv_interval`` passes (``SchedulerRecvSkipper``)."""

    def __init__(self, plan: SchedulerPlan) -> None:
        super().__init__(
            plan,
            RankRules(
                clamp_rounds=True, check_fit_before_touch=False, prefill_sends_first_token=True
            ),
            prefill_pushes_kv=True,
            steady_stretches=False,
            skips_receives=True,
            balances_attention_dp=False,
        )

    def schedule(self, rank: RankState) -> None:
        schedule_sglang(rank)

    def on_idle(self, rank: RankState) -> None:
        """SGLang's idle check resets ``new_token_ratio`` to its initial value
        (``self_check_during_idle``)."""
        rank.new_token_ratio = self.plan.init_new_token_ratio


def schedule_sglang(rank: RankState) -> None:
    """Fill ``rank.batch`` for the next pass (possibly empty)."""
    if _schedule_prefill(rank):
        return
    if _schedule_decode(rank) and not rank.batch:
        # Every decode was retracted to make room for the chunked prefill: run it now.
        _schedule_prefill(rank)


def _schedule_prefill(rank: RankState) -> bool:
    plan = rank.scheduler
    pool = rank.pool
    budget = plan.token_budget
    chunked = rank.chunked
    if chunked is not None:
        tokens = chunked.prefill_target - chunked.computed
        if tokens > budget:
            tokens = budget
        if not pool.grow(chunked.kv, chunked.computed + tokens):
            # KV is held by decodes: let them run (and retract if they must) instead of
            # re-admitting prefills, which could starve the decodes forever.
            return False
        rank.plan_prefill(chunked, tokens)
        budget -= tokens
        if chunked.computed + tokens < chunked.prefill_target:
            return True
        rank.chunked = None
    ratio = rank.new_token_ratio
    reserved = 0.0
    for request in rank.running:
        reserved += ratio * _clipped_output(rank, request)
    while (
        rank.waiting
        and budget > 0
        and len(rank.running) < plan.max_sequences
        and not rank.waiting[0].kv_transferred
    ):
        request = rank.waiting[0]
        if rank.running:
            # PrefillAdder.add_one_req: the whole extend plus the whole (clipped) remaining
            # output of the new request must fit below what the running ones reserve.
            wanted = request.known_tokens + _clipped_output(rank, request)
            if wanted >= pool.available_pages * pool.page_tokens - reserved:
                break
        tokens = rank.admit(request, budget, plan.chunked_prefill)
        if tokens == 0:
            break
        rank.waiting.popleft()
        budget -= tokens
        # Admitted in this pass: its extend holds pages now; its output is reserved in full.
        reserved += _clipped_output(rank, request)
        if request.computed + tokens < request.prefill_target:
            rank.chunked = request
            break
    return bool(rank.batch)


def _schedule_decode(rank: RankState) -> bool:
    """Plan a decode pass; returns whether anything was retracted."""
    plan = rank.scheduler
    pool = rank.pool
    while (
        rank.waiting and rank.waiting[0].kv_transferred and len(rank.running) < plan.max_sequences
    ):
        request = rank.waiting[0]
        if request.remaining_output == 0:
            rank.waiting.popleft()
            rank.finish_on_arrival(request)
            continue
        if rank.admit(request, rank.speculation.verify_width, True) == 0:
            break
        rank.waiting.popleft()
    decodes = [
        request
        for request in rank.running
        if request.phase == PHASE_DECODE and request.work == WORK_NONE
    ]
    retracted = False
    lookahead = rank.lookahead
    policy = rank.policy
    if policy is not None:
        # The memory check reserves the deepest candidate (SGLang sizes for it).
        rank.round_drafts = rank.speculation.draft_length
    # Bounded: each iteration retracts one request.
    while decodes and _pages_needed(rank, decodes, lookahead) > pool.available_pages:
        by_sd = _pages_needed(rank, decodes, -1) <= pool.available_pages
        victim = decodes[-1] if rank.speculation.enabled else _retraction_victim(decodes)
        decodes.remove(victim)
        rank.preempt(victim, by_sd)
        retracted = True
    if policy is not None and decodes:
        # EAGLEWorkerV2: activate_step_by_batch(batch size) before the draft round.
        rank.round_drafts = policy.steps_for_batch(len(decodes))
    for request in decodes:
        width = rank.width(request)
        grown = pool.grow(request.kv, request.computed + width + lookahead)
        assert grown, "retraction left too few KV pages"
        rank.plan_decode(request, width)
    if retracted:
        rank.new_token_ratio = ratio_after_retraction(decodes)
    elif decodes:
        lowered = rank.new_token_ratio - plan.new_token_ratio_decay
        rank.new_token_ratio = max(plan.min_new_token_ratio, lowered)
    return retracted


def _clipped_output(rank: RankState, request: SimRequest) -> int:
    """Remaining output as SGLang's admission estimates it (``CLIP_MAX_NEW_TOKENS``); a prefill
    pool counts one token (SGLang's disaggregated prefill sets ``max_new_tokens = 1``)."""
    remaining = request.remaining_output
    limit = 1 if rank.is_prefill_pool else CLIP_MAX_NEW_TOKENS
    return remaining if remaining < limit else limit


def ratio_after_retraction(kept: list[SimRequest]) -> float:
    """SGLang's ``new_token_ratio`` after a retraction, estimated from the requests it kept:
    (tokens they decoded + ``RETRACT_DECODE_STEPS`` per request) / (their output lengths + 1),
    at most 1 (``retract_decode``; it is not reset to the initial ratio)."""
    decoded = 0
    budget = 0
    for request in kept:
        decoded += request.emitted
        budget += request.output_tokens
    ratio = (decoded + RETRACT_DECODE_STEPS * len(kept)) / (budget + 1)
    return ratio if ratio < 1.0 else 1.0


def _pages_needed(rank: RankState, decodes: list[SimRequest], lookahead: int) -> int:
    """Pages the decodes' rounds need: each round's width plus ``lookahead`` slots; a negative
    ``lookahead`` asks for a plain decode step (one slot per request, no SD)."""
    total = 0
    for request in decodes:
        slots = 1 if lookahead < 0 else rank.width(request) + lookahead
        total += rank.pool.extra_pages_needed(request.kv, request.computed + slots)
    return total


def _retraction_victim(decodes: list[SimRequest]) -> SimRequest:
    """Fewest emitted tokens, then longest prompt, then the latest request."""
    victim = decodes[0]
    for request in decodes:
        if (request.emitted, -request.prompt_tokens, -request.index) < (
            victim.emitted,
            -victim.prompt_tokens,
            -victim.index,
        ):
            victim = request
    return victim
