"""SGLang's adaptive speculation policy as one typed value (``AdaptiveSpeculation``), shared by the
resolved scheme (``ResolvedSpeculation.adaptive_policy``) and replay (``SpeculationPlan``'s tiers,
``aisim/replay/_sd_policy.py``), so nothing reads the policy back from a mapping.

SGLang: ``python/sglang/srt/speculative/adaptive_spec_params.py`` (``DEFAULT_ADAPTIVE_CONFIG``,
``AdaptiveStepSlot``); docs/speculation.md, "Dynamic draft lengths in replay". Compiled by mypyc:
plain classes, no I/O.
"""

from __future__ import annotations

from typing import Any


class AdaptiveTier:
    """One batch-size tier of SGLang's adaptive config, every setting filled."""

    def __init__(
        self,
        batch_size: int,
        candidate_steps: list[int],
        ema_alpha: float,
        update_interval: int,
        warmup_batches: int,
        down_hysteresis: float,
        up_hysteresis: float,
        ceiling_coeff: float,
    ) -> None:
        self.batch_size = batch_size
        self.candidate_steps = sorted(set(candidate_steps))
        self.ema_alpha = ema_alpha
        self.update_interval = update_interval
        self.warmup_batches = warmup_batches
        self.down_hysteresis = down_hysteresis
        self.up_hysteresis = up_hysteresis
        self.ceiling_coeff = ceiling_coeff

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (a replay summary's ``config.workers[].adaptive.tiers[]``)."""
        return {
            "batch_size": self.batch_size,
            "candidate_steps": list(self.candidate_steps),
            "ema_alpha": self.ema_alpha,
            "update_interval": self.update_interval,
            "warmup_batches": self.warmup_batches,
            "down_hysteresis": self.down_hysteresis,
            "up_hysteresis": self.up_hysteresis,
            "ceiling_coeff": self.ceiling_coeff,
        }


class AdaptiveSpeculation:
    """SGLang's ``--speculative-adaptive``: the steps drafted before the first update
    (``initial_steps``), the batch-size tiers sorted by batch size, and the captured CUDA-graph
    batch sizes a batch is padded up to (sorted, or None when not given)."""

    def __init__(
        self, initial_steps: int, tiers: list[AdaptiveTier], cuda_graph_bs: list[int] | None
    ) -> None:
        self.initial_steps = initial_steps
        self.tiers = sorted(tiers, key=_batch_size)
        self.cuda_graph_bs = None if cuda_graph_bs is None else sorted(set(cuda_graph_bs))

    def to_dict(self) -> dict[str, Any]:
        """The JSON form (``ResolvedSpeculation.to_dict()["adaptive"]``); ``cuda_graph_bs`` only
        when given."""
        result: dict[str, Any] = {
            "initial_steps": self.initial_steps,
            "tiers": [tier.to_dict() for tier in self.tiers],
        }
        if self.cuda_graph_bs is not None:
            result["cuda_graph_bs"] = list(self.cuda_graph_bs)
        return result


def _batch_size(tier: AdaptiveTier) -> int:
    return tier.batch_size
