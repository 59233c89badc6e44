"""Acceptance as an uncertain input: counts of rounds that accepted at least i drafts, and the
rates a replica samples from them.

With ``n`` drafted rounds of which ``k_i`` accepted at least ``i`` drafts (``k_0 = n``), the
conditional rate of position i was observed as ``k_i`` successes in ``k_(i-1)`` trials; a
replica draws it from the Jeffreys posterior Beta(k_i + 1/2, k_(i-1) - k_i + 1/2), independently
per position (the positions' trials are disjoint events of the same rounds, so their likelihood
factorizes). A position no round reached keeps its point rate.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Protocol

from aisim.errors import ConfigError


class AcceptanceSpread(Protocol):
    """Anything that draws a replica's conditional rates from the point rates."""

    @property
    def origin(self) -> str: ...

    def sample(self, rng: Any, point_rates: list[float]) -> list[float]: ...

    def to_dict(self) -> dict[str, Any]: ...


@dataclass(frozen=True)
class AcceptanceCounts:
    """``rounds`` drafted rounds; ``accepted_at_least[i - 1]``: rounds that accepted >= i drafts
    (non-increasing, each <= rounds); ``origin`` says where the counts came from."""

    rounds: int
    accepted_at_least: tuple[int, ...]
    origin: str

    def __post_init__(self) -> None:
        previous = self.rounds
        if self.rounds < 1:
            raise ConfigError(
                f"{self.origin}: expected at least 1 drafted round, got {self.rounds}"
            )
        for position, count in enumerate(self.accepted_at_least, start=1):
            if count < 0 or count > previous:
                raise ConfigError(
                    f"{self.origin}: rounds accepting >= {position} drafts must be in "
                    f"0..{previous} (non-increasing), got {count}"
                )
            previous = count

    @staticmethod
    def from_rates(conditional_rates: list[float], rounds: int, origin: str) -> AcceptanceCounts:
        """Counts as if the rates had been observed over ``rounds`` rounds (the nearest
        integers: ``k_i = round(rounds * p_1 * ... * p_i)``)."""
        if rounds < 1:
            raise ConfigError(f"{origin}: expected an integer >= 1, got {rounds}")
        counts = []
        survival = 1.0
        for rate in conditional_rates:
            survival *= rate
            counts.append(int(round(rounds * survival)))
        return AcceptanceCounts(rounds, tuple(counts), origin)

    @staticmethod
    def from_record(record: dict[str, Any], origin: str) -> AcceptanceCounts | None:
        """From an ``acceptance_from`` provenance record (summary ``config.workers[]``), or None
        for a mean-only source."""
        drafts = record.get("drafts")
        at_least = record.get("accepted_at_least")
        if not isinstance(drafts, int) or not isinstance(at_least, list) or drafts < 1:
            return None
        return AcceptanceCounts(drafts, tuple(int(count) for count in at_least), origin)

    def sample(self, rng: Any, point_rates: list[float]) -> list[float]:
        """One replica's conditional rates at the plan's depth (``point_rates``' length)."""
        rates = []
        previous = self.rounds
        for position, point in enumerate(point_rates):
            if position >= len(self.accepted_at_least) or previous == 0:
                # Beyond the counted positions or never reached: keep the draw order fixed.
                rng.beta(0.5, 0.5)
                rates.append(point)
                if position < len(self.accepted_at_least):
                    previous = self.accepted_at_least[position]
                continue
            count = self.accepted_at_least[position]
            rates.append(float(rng.beta(count + 0.5, previous - count + 0.5)))
            previous = count
        return rates

    def to_dict(self) -> dict[str, Any]:
        return {
            "rounds": self.rounds,
            "accepted_at_least": list(self.accepted_at_least),
            "origin": self.origin,
        }


def _unconditional(conditional: list[float]) -> list[float]:
    rates = []
    survival = 1.0
    for rate in conditional:
        survival *= rate
        rates.append(survival)
    return rates


def _conditional(unconditional: list[float]) -> list[float]:
    """Conditional rates of ``unconditional`` ones clamped to [0, 1] and non-increasing."""
    rates = []
    previous = 1.0
    for value in unconditional:
        value = min(max(value, 0.0), previous)
        rates.append(value / previous if previous > 0 else 0.0)
        previous = value
    return rates


@dataclass(frozen=True)
class ProfileSpread:
    """What a published acceptance profile says about its uncertainty (``spread`` of an
    ``aisim speculation profiles`` entry), as a sampling rule:

    * ``relative_tolerance`` r of each per-position rate: the unconditional rates times one
      factor drawn uniformly in [1 - r, 1 + r] (one factor per replica: the positions of one
      measurement move together);
    * ``range`` [low, high] of a depth-1 chain's rate: the rate drawn uniformly in it;
    * ``counts`` (drafts, accepted tokens behind a mean): the mean accepted drafts drawn from a
      normal with its standard error (the per-round variance of the point profile over the
      drafts), the unconditional rates scaled to it.
    """

    kind: str
    low: float
    high: float
    drafts: int
    origin: str

    @staticmethod
    def from_entry(entry: dict[str, Any], origin: str) -> ProfileSpread | None:
        spread = entry.get("spread")
        if not isinstance(spread, dict):
            return None
        kind = spread.get("kind")
        if kind == "relative_tolerance":
            value = float(spread["value"])
            return ProfileSpread(kind, 1.0 - value, 1.0 + value, 0, origin)
        if kind == "range":
            return ProfileSpread(kind, float(spread["low"]), float(spread["high"]), 0, origin)
        if kind == "counts":
            return ProfileSpread(kind, 0.0, 0.0, int(spread["num_drafts"]), origin)
        return None

    def sample(self, rng: Any, point_rates: list[float]) -> list[float]:
        unconditional = _unconditional(point_rates)
        if self.kind == "relative_tolerance":
            factor = float(rng.uniform(self.low, self.high))
            return _conditional([rate * factor for rate in unconditional])
        if self.kind == "range":
            return [float(rng.uniform(self.low, self.high))] + list(point_rates[1:])
        mean = sum(unconditional)
        square = sum((2 * i + 1) * rate for i, rate in enumerate(unconditional))
        error = math.sqrt(max(square - mean * mean, 0.0) / self.drafts)
        drawn = float(rng.normal(mean, error))
        scale = drawn / mean if mean > 0 else 1.0
        return _conditional([rate * scale for rate in unconditional])

    def to_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {"spread": self.kind, "origin": self.origin}
        if self.kind == "counts":
            record["drafts"] = self.drafts
        else:
            record["low"] = self.low
            record["high"] = self.high
        return record
