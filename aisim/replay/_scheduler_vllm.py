"""vLLM-like continuous batching (V1 style) for one rank.

Running requests are served first, in admission order: a prefilling request gets the rest of its
prompt (chunked by the token budget), a decoding request one round of ``w`` verification tokens
(fewer drafts when less budget is left, as vLLM trims ``spec_token_ids``).
When KV runs out the most recently admitted request is preempted (its KV freed, recomputed
later) until the current one fits. Waiting requests are admitted (FIFO, prefix hits first) only
when nothing was preempted in this pass and the sequence cap allows.
"""

from __future__ import annotations

from aisim.replay._rank import RankState
from aisim.replay._request import PHASE_PREFILL


def schedule_vllm(rank: RankState) -> None:
    """Fill ``rank.batch`` for the next pass (possibly empty)."""
    plan = rank.scheduler
    pool = rank.pool
    budget = plan.token_budget
    preempted = False
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
        # Bounded: each failed attempt removes one running request.
        while not pool.grow(request.kv, request.computed + tokens):
            victim = rank.running[-1]
            rank.preempt(victim)
            preempted = True
            if victim is request:
                fits = False
                break
        if not fits:
            break
        if is_prefill:
            rank.plan_prefill(request, tokens)
        else:
            rank.plan_decode(request, tokens)
        budget -= tokens
        index += 1
    if preempted:
        return
    while rank.waiting and len(rank.running) < plan.max_sequences and budget > 0:
        tokens = rank.admit(rank.waiting[0], budget, plan.chunked_prefill)
        if tokens == 0:
            break
        rank.waiting.popleft()
        budget -= tokens
