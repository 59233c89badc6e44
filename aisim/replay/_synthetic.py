"""Seeded traffic generation: token-length distributions and arrival processes.

File formats are read at the edge (``aisim.config``); this module only draws numbers, from its
own ``RandomStream`` so both builds produce identical traffic for a seed.
"""

from __future__ import annotations

import math
from typing import Final

from aisim.replay._plan import RequestSpec
from aisim.replay._rng import RandomStream

DIST_FIXED: Final = "fixed"
DIST_UNIFORM: Final = "uniform"
DIST_NORMAL: Final = "normal"
DIST_LOGNORMAL: Final = "lognormal"
DISTRIBUTIONS: Final = (DIST_FIXED, DIST_UNIFORM, DIST_NORMAL, DIST_LOGNORMAL)

LOAD_TRACE: Final = "trace_timestamps"
LOAD_POISSON: Final = "poisson"
LOAD_CONSTANT: Final = "constant"
LOAD_CONCURRENCY: Final = "concurrency"
LOADS: Final = (LOAD_TRACE, LOAD_POISSON, LOAD_CONSTANT, LOAD_CONCURRENCY)


class LengthDistribution:
    """Token counts: ``fixed`` (``value``), ``uniform`` (integers in [minimum, maximum]),
    ``normal`` or ``lognormal`` with the given ``mean`` and ``std`` of the token count (for
    lognormal converted to the underlying normal's parameters), rounded to the nearest integer
    and clipped to [minimum, maximum]."""

    def __init__(
        self, kind: str, value: int, mean: float, std: float, minimum: int, maximum: int
    ) -> None:
        self.kind = kind
        self.value = value
        self.mean = mean
        self.std = std
        self.minimum = minimum
        self.maximum = maximum

    def draw(self, rng: RandomStream) -> int:
        if self.kind == DIST_FIXED:
            return self.value
        if self.kind == DIST_UNIFORM:
            return rng.integer(self.minimum, self.maximum)
        if self.kind == DIST_NORMAL:
            sample = rng.normal(self.mean, self.std)
        else:
            variance = math.log(1.0 + (self.std * self.std) / (self.mean * self.mean))
            mu = math.log(self.mean) - variance / 2.0
            sample = math.exp(rng.normal(mu, math.sqrt(variance)))
        rounded = int(math.floor(sample + 0.5))
        if rounded < self.minimum:
            return self.minimum
        if rounded > self.maximum:
            return self.maximum
        return rounded


class SyntheticLengths:
    """Synthetic requests' (prompt, output) token counts, one request at a time: prompt and
    output draw from separate streams of ``seed``, so the n-th pair is the same whether the
    traffic is built whole or drawn as it is replayed."""

    def __init__(self, prompt: LengthDistribution, output: LengthDistribution, seed: int) -> None:
        self.prompt = prompt
        self.output = output
        self.prompt_rng = RandomStream(seed, 1)
        self.output_rng = RandomStream(seed, 2)

    def next_pair(self) -> tuple[int, int]:
        return self.prompt.draw(self.prompt_rng), self.output.draw(self.output_rng)


def synthetic_lengths(
    count: int, prompt: LengthDistribution, output: LengthDistribution, seed: int
) -> list[tuple[int, int]]:
    """``count`` (prompt, output) pairs; prompt and output use separate streams of ``seed``."""
    lengths = SyntheticLengths(prompt, output, seed)
    pairs: list[tuple[int, int]] = []
    for _ in range(count):
        pairs.append(lengths.next_pair())
    return pairs


class ArrivalClock:
    """Arrivals of an open-loop load, one request at a time in traffic order: ``poisson`` (the
    first at 0 ms, then exponential gaps of mean ``1000 / rate_rps`` ms from stream 3 of
    ``seed``) or ``constant`` (request i at ``i * 1000 / rate_rps`` ms). Never decreasing."""

    def __init__(self, load: str, rate_rps: float, seed: int) -> None:
        self.poisson = load == LOAD_POISSON
        self.gap_ms = 1000.0 / rate_rps if rate_rps > 0.0 else 0.0
        self.rng = RandomStream(seed, 3)
        self.position = 0
        self.now = 0.0

    def next_arrival(self) -> float:
        arrival = self.now
        self.position += 1
        if self.poisson:
            self.now += self.rng.exponential(self.gap_ms)
        else:
            self.now = self.position * self.gap_ms
        return arrival


def apply_load(
    requests: list[RequestSpec], load: str, rate_rps: float, users: int, think_ms: float, seed: int
) -> None:
    """Set arrivals in place. ``poisson``/``constant``: the first request at 0 ms, then gaps of
    mean/exactly ``1000 / rate_rps`` ms. ``concurrency``: ``users`` closed loops, request i of the
    list belonging to user ``i % users``; each user's next request arrives ``think_ms`` after its
    previous one completes. ``trace_timestamps`` keeps the given arrivals."""
    if load == LOAD_TRACE:
        return
    if load == LOAD_CONCURRENCY:
        for position, request in enumerate(requests):
            request.arrival_ms = 0.0
            if position >= users:
                request.wait_for = [position - users]
                request.delay_ms = think_ms
        return
    clock = ArrivalClock(load, rate_rps, seed)
    for request in requests:
        request.arrival_ms = clock.next_arrival()
