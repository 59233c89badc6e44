"""Per-round draft lengths that change during a replay: vLLM's dynamic speculation length and
SGLang's adaptive speculation (docs/speculation.md, "Dynamic draft lengths in replay").

* vLLM (``vllm/v1/core/sched/scheduler.py``, ``Scheduler.schedule``): after scheduling a step,
  ``num_spec_tokens_to_schedule = dynamic_sd_lookup[len(num_scheduled_tokens)]``, the table of
  ``build_dynamic_sd_schedule_lookup``; the drafter proposes that many tokens, which the *next*
  step verifies. ``RankState`` keeps the length chosen by the last step.
* SGLang (``python/sglang/srt/speculative/adaptive_spec_params.py``): ``AdaptiveStepSlot`` per
  batch-size tier, an EMA of the accepted drafts per request updated after every verify
  (``update``), stepping through the tier's candidate steps with hysteresis after a warm-up
  and every ``update_interval`` batches (``_recompute_params``); the decode pass drafts the
  current steps of the tier its batch size routes to (``AdaptiveStepRouter.
  batch_size_key_for_batch``: padded up to a captured CUDA-graph size when ``cuda_graph_bs`` is
  given, then the largest tier key <= it, else the smallest key). ``AdaptivePolicy`` below is that code, line for line.

Compiled by mypyc: plain classes, no I/O.
"""

from __future__ import annotations

import math

from aisim.speculation import AdaptiveTier


class AdaptiveSlot:
    """SGLang's ``AdaptiveStepSlot``: the EMA of accepted drafts and the current steps."""

    def __init__(self, initial_steps: int, tier: AdaptiveTier) -> None:
        self.tier = tier
        self.candidate_steps = tier.candidate_steps
        if initial_steps in self.candidate_steps:
            self.current_steps = initial_steps
        else:
            self.current_steps = self.candidate_steps[len(self.candidate_steps) // 2]
        self.ema_accept_len = float(self.current_steps - 1)
        self.batch_count = 0

    def update(self, accepted_drafts: list[int]) -> bool:
        """``AdaptiveStepSlot.update``: feed one verify's per-request accepted drafts; True
        when the steps changed."""
        if not accepted_drafts:
            return False
        tier = self.tier
        if self.current_steps > 0:
            total = 0
            for count in accepted_drafts:
                total += count
            batch_avg = total / len(accepted_drafts)
            self.ema_accept_len = (
                1 - tier.ema_alpha
            ) * self.ema_accept_len + tier.ema_alpha * batch_avg
        self.batch_count += 1
        if self.batch_count <= tier.warmup_batches:
            return False
        if (self.batch_count - tier.warmup_batches) % tier.update_interval != 0:
            return False
        return self._recompute()

    def _recompute(self) -> bool:
        """``AdaptiveStepSlot._recompute_params``."""
        tier = self.tier
        candidates = self.candidate_steps
        old_steps = self.current_steps
        index = candidates.index(old_steps)
        old_index = index
        if old_steps == 0:
            index = min(index + 1, len(candidates) - 1)
            target = candidates[index]
            if target > 0 and self.ema_accept_len < 0:
                self.ema_accept_len = float(target - 1)
            return self._apply(old_steps, target)
        while index > 0:
            previous = candidates[index - 1]
            threshold = 0.5 if previous == 0 else previous - 0.5
            threshold += tier.down_hysteresis
            if self.ema_accept_len <= threshold:
                index -= 1
            else:
                break
        if not index < old_index:
            while index < len(candidates) - 1:
                rise = candidates[index] - 0.5 + tier.up_hysteresis
                if self.ema_accept_len > rise:
                    index += 1
                else:
                    break
        target = candidates[index]
        if tier.ceiling_coeff > 0:
            ceiling = max(1, math.ceil(self.ema_accept_len * tier.ceiling_coeff))
            if target > ceiling and target <= old_steps:
                while index > 0 and candidates[index] > ceiling:
                    index -= 1
                target = candidates[index]
        return self._apply(old_steps, target)

    def _apply(self, old_steps: int, target: int) -> bool:
        if target != old_steps:
            self.current_steps = target
            return True
        return False


class AdaptivePolicy:
    """SGLang's ``AdaptiveSpeculativeParams``: one slot per tier, routed by batch size."""

    def __init__(
        self,
        initial_steps: int,
        tiers: list[AdaptiveTier],
        cuda_graph_bs: list[int] | None = None,
    ) -> None:
        ordered = sorted(tiers, key=_tier_key)
        self.keys = [tier.batch_size for tier in ordered]
        self.slots = [AdaptiveSlot(initial_steps, tier) for tier in ordered]
        self.cuda_graph_bs = sorted(cuda_graph_bs) if cuda_graph_bs else []

    def slot_for(self, batch_size: int) -> AdaptiveSlot:
        """``AdaptiveStepRouter.batch_size_key_for_batch``: the batch size padded up to the
        smallest captured CUDA-graph size >= it (when graphs are given and one is), then the
        tier with the largest key <= it (the smallest key below them)."""
        for size in self.cuda_graph_bs:
            if size >= batch_size:
                batch_size = size
                break
        chosen = 0
        for index, key in enumerate(self.keys):
            if key <= batch_size:
                chosen = index
        return self.slots[chosen]

    def steps_for_batch(self, batch_size: int) -> int:
        return self.slot_for(batch_size).current_steps

    def on_verify_complete(self, accepted_drafts: list[int], batch_size: int) -> None:
        self.slot_for(batch_size).update(accepted_drafts)


def _tier_key(tier: AdaptiveTier) -> int:
    return tier.batch_size
