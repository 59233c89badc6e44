"""The served trace: seeded arrivals, prompt token ids and fixed output lengths."""

from __future__ import annotations

import math
from dataclasses import dataclass

from aisim.errors import ConfigError


@dataclass(frozen=True)
class TraceSpec:
    """``num_requests`` Poisson arrivals at ``rate_rps``; prompt and output lengths uniform in
    their inclusive ranges; ``prompts``: ``random`` token ids, or ``repeating`` (a short random
    pattern repeated, so n-gram drafting finds matches)."""

    num_requests: int
    rate_rps: float
    prompt_min: int
    prompt_max: int
    output_min: int
    output_max: int
    prompts: str
    seed: int

    def check(self) -> None:
        """Refusals name the ``aisim record engine`` flag that set each field (the spec's only
        source)."""
        if self.num_requests < 1:
            raise ConfigError(f"--requests: expected an integer >= 1, got {self.num_requests}")
        if not (self.rate_rps > 0 and math.isfinite(self.rate_rps)):
            raise ConfigError(
                f"--rate: expected a finite number > 0 (requests/s), got {self.rate_rps}"
            )
        for flag, low, high in (
            ("--prompt", self.prompt_min, self.prompt_max),
            ("--output", self.output_min, self.output_max),
        ):
            if not 1 <= low <= high:
                raise ConfigError(
                    f"{flag}: expected MIN:MAX with 1 <= MIN <= MAX tokens, got {low}:{high}"
                )
        if self.prompts not in ("random", "repeating"):
            raise ConfigError(f"--prompts: expected random or repeating, got {self.prompts!r}")


@dataclass(frozen=True)
class TraceRequest:
    request_id: str
    arrival_ms: float
    prompt: tuple[int, ...]
    output_tokens: int


def make_trace(spec: TraceSpec, vocab_size: int) -> list[TraceRequest]:
    """The same spec and vocabulary give the same trace (numpy's PCG64, seeded)."""
    import numpy as np

    spec.check()
    rng = np.random.default_rng(spec.seed)
    gaps = rng.exponential(1000.0 / spec.rate_rps, size=spec.num_requests)
    gaps[0] = 0.0
    arrivals = np.cumsum(gaps)
    requests = []
    for index in range(spec.num_requests):
        length = int(rng.integers(spec.prompt_min, spec.prompt_max + 1))
        output = int(rng.integers(spec.output_min, spec.output_max + 1))
        if spec.prompts == "random":
            prompt = rng.integers(10, vocab_size, size=length)
        else:
            pattern = rng.integers(10, vocab_size, size=8)
            prompt = np.resize(pattern, length)
        requests.append(
            TraceRequest(
                f"r{index:04d}",
                round(float(arrivals[index]), 3),
                tuple(int(token) for token in prompt),
                output,
            )
        )
    return requests
