"""The per-pass cost-factor wrapper of a Monte Carlo replica (``ScaledModel``), compiled with
mypyc: it runs once per priced pass of every replica, so it is kept to typed attributes and
precomputed per-kind factors (``aisim.uncertainty._draw`` builds it from a ``CostFactors``).

Plain typed values only: no I/O, no parsing, no numpy.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

#: The quantiles of a kind without per-step scatter.
NoQuantiles = tuple[float, ...] | None


class ScaledModel:
    """A forward-pass model whose answers are multiplied by the factor of the pass's kind:
    ``mixed`` (prefill beside decode), ``prefill``, ``sd_round`` (decode work of a speculating
    worker) or ``decode``; a kind with scatter ``quantiles`` is also multiplied by one draw from
    ``noise`` per pass (``interpolate``). ``speculating`` is False for the model that prices plain
    decode steps of a speculating worker."""

    def __init__(
        self,
        model: Any,
        factors: tuple[float, float, float, float],
        quantiles: tuple[NoQuantiles, NoQuantiles, NoQuantiles, NoQuantiles],
        speculating: bool,
        noise: random.Random,
    ) -> None:
        self.model: Any = model
        #: Draws of the per-step scatter (shared with the plain-decode model of the same pricer,
        #: so the passes draw in simulation order from one stream).
        self.noise: random.Random = noise
        self.speculating: bool = speculating
        self.name: str = str(getattr(model, "name", type(model).__name__))
        self.prices_speculation_natively: bool = bool(
            getattr(model, "prices_speculation_natively", False)
        )
        self.supports_draft_length: bool = bool(getattr(model, "supports_draft_length", False))
        # Per kind (prefill, mixed, decode, sd_round): the factor and the scatter quantiles.
        self.prefill_factor: float = factors[0]
        self.mixed_factor: float = factors[1]
        self.decode_factor: float = factors[2]
        self.sd_round_factor: float = factors[3]
        self.prefill_quantiles: NoQuantiles = quantiles[0]
        self.mixed_quantiles: NoQuantiles = quantiles[1]
        self.decode_quantiles: NoQuantiles = quantiles[2]
        self.sd_round_quantiles: NoQuantiles = quantiles[3]
        self.estimate: Callable[..., Any] = model.estimate_forward_pass_time_ms

    def estimate_forward_pass_time_ms(self, metrics: Any, draft_length: int | None = None) -> float:
        if draft_length is None:
            price = float(self.estimate(metrics))
        else:
            price = float(self.estimate(metrics, draft_length=draft_length))
        prefill = False
        decode = False
        # Replay passes a list of one metrics object per rank (one rank: the common case).
        if isinstance(metrics, list):
            for rank in metrics:
                if rank.num_prefill_requests > 0:
                    prefill = True
                if rank.num_decode_requests > 0:
                    decode = True
        else:
            prefill = metrics.num_prefill_requests > 0
            decode = metrics.num_decode_requests > 0
        if prefill and decode:
            factor = self.mixed_factor
            quantiles = self.mixed_quantiles
        elif prefill:
            factor = self.prefill_factor
            quantiles = self.prefill_quantiles
        elif self.speculating and (draft_length is not None or self.prices_speculation_natively):
            factor = self.sd_round_factor
            quantiles = self.sd_round_quantiles
        else:
            factor = self.decode_factor
            quantiles = self.decode_quantiles
        if quantiles is None:
            return price * factor
        return price * factor * interpolate(quantiles, self.noise.random())


def interpolate(quantiles: tuple[float, ...], u: float) -> float:
    """The value at probability ``u`` of evenly spaced ``quantiles`` (0 .. 100 %), linear
    between them: an inverse-CDF draw from the recorded per-step scatter."""
    position = u * (len(quantiles) - 1)
    index = min(int(position), len(quantiles) - 2)
    fraction = position - index
    return quantiles[index] + (quantiles[index + 1] - quantiles[index]) * fraction
