"""vLLM-like continuous batching (V1 style) for one rank.

Running requests are served first, in admission order: a prefilling request gets the rest of its
prompt (chunked by the token budget), a decoding request one round of ``w`` verification tokens
(fewer drafts when less budget is left, as vLLM trims ``spec_token_ids``).
Every running request's blocks must also cover the SD lookahead (``allocate_slots(...,
num_lookahead_tokens)``; 0 without a drafter). When KV runs out the most recently admitted
request is preempted (its KV freed, recomputed later) until the current one fits. Waiting
requests are admitted (FIFO, prefix hits first, no lookahead) only when nothing was preempted in
this pass and the sequence cap allows. On a decode pool a handed-off request first gets the
blocks its prompt KV is pulled into, then waits (skipped, keeping its place) until the load
ends, then computes its last prompt token with the lookahead reserved.
"""

from __future__ import annotations

from aisim.replay._plan import SchedulerPlan
from aisim.replay._rank import RankRules, RankState
from aisim.replay._request import PHASE_PREFILL
from aisim.replay._scheduler import Scheduler


class VllmScheduler(Scheduler):
    """vLLM's V1 ``Scheduler`` (``vllm/v1/core/sched/scheduler.py``) at replay's grain: every
    draft verified, free blocks checked before prefix hits are touched, the prefill server's
    token discarded, prompt KV pulled by the decode pool; steady decode stretches apply; the
    attention-DP balance (TensorRT-LLM's, on this scheduler) applies when the plan asks."""

    def __init__(self, plan: SchedulerPlan) -> None:
        super().__init__(
            plan,
            RankRules(
                clamp_rounds=False, check_fit_before_touch=True, prefill_sends_first_token=False
            ),
            prefill_pushes_kv=False,
            steady_stretches=True,
            skips_receives=False,
            balances_attention_dp=True,
        )

    def schedule(self, rank: RankState) -> None:
        schedule_vllm(rank)

    def on_idle(self, rank: RankState) -> None:
        """vLLM keeps no admission state that idling resets."""


def schedule_vllm(rank: RankState) -> None:
    """Fill ``rank.batch`` for the next pass (possibly empty)."""
    plan = rank.scheduler
    pool = rank.pool
    budget = plan.token_budget
    preempted = False
    # Pages this pass's SD reservations took beyond plain decode steps: a preemption they
    # make necessary is counted as caused by SD.
    sd_pages = 0
    index = 0
    while index < len(rank.running):
        request = rank.running[index]
        is_prefill = request.phase == PHASE_PREFILL
        if is_prefill:
            tokens = request.prefill_target - request.computed
            if tokens > budget:
                tokens = budget
        else:
            tokens = rank.width(request)
            if tokens > budget:
                # vLLM trims the round's drafts to the budget left (none left: not this pass).
                tokens = budget
        if tokens <= 0:
            index += 1
            continue
        fits = True
        needed = request.computed + tokens + rank.lookahead
        # A plain decode step needs one slot; a prefill chunk its tokens.
        plain = request.computed + (tokens if is_prefill else 1)
        sd_extra = 0
        # Most rounds fit in the pages the request holds: nothing to grow or count.
        extra = pool.extra_pages_needed(request.kv, needed)
        if extra > 0 and needed != plain:
            sd_extra = extra - pool.extra_pages_needed(request.kv, plain)
        # Bounded: each failed attempt removes one running request.
        while extra > 0 and not pool.grow(request.kv, needed):
            plain_extra = pool.extra_pages_needed(request.kv, plain)
            by_sd = plain_extra <= pool.available_pages + sd_pages
            victim = rank.running[-1]
            if victim is request and rank.drop_landed_kv():
                continue
            rank.preempt(victim, by_sd)
            preempted = True
            if victim is request:
                fits = False
                break
        if not fits:
            break
        sd_pages += sd_extra
        if is_prefill:
            rank.plan_prefill(request, tokens)
        else:
            rank.plan_decode(request, tokens)
        budget -= tokens
        index += 1
    if preempted or rank.hold_admission:
        return
    # Requests whose prompt KV is being pulled stay at the head of the queue, skipped.
    skipped = 0
    while len(rank.waiting) > skipped and len(rank.running) < plan.max_sequences and budget > 0:
        request = rank.waiting[skipped]
        if request.kv_loading:
            skipped += 1
            continue
        if request.kv_remote:
            if not rank.start_kv_load(request):
                break
            skipped += 1
            continue
        if request.kv_transferred:
            tokens = rank.admit_landed(request, True)
        else:
            tokens = rank.admit(request, budget, plan.chunked_prefill)
        if tokens == 0:
            break
        del rank.waiting[skipped]
        budget -= tokens
    if not rank.running and budget > 0:
        _unblock_landed(rank)


def _unblock_landed(rank: RankState) -> None:
    """Nothing runs and the queue is stuck: its head waits for KV that queued requests hold (a
    pulled prompt), and vLLM would stall for good. To keep replay live, the first request whose
    KV has landed computes its last prompt token without the lookahead (its blocks already cover
    it); it may be preempted once it decodes, freeing them. Never reached in a state vLLM
    progresses from."""
    for index in range(len(rank.waiting)):
        request = rank.waiting[index]
        if request.kv_transferred:
            if rank.admit_landed(request, False) > 0:
                del rank.waiting[index]
            return
