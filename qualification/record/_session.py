"""Build a target and a drafter once, then time STP forward passes and whole SD rounds.

Every shape is warmed up once (untimed) before its repetitions; all inputs, masks and rotary
tables are prepared before the clock starts, so what is timed is the model's work.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from qualification.record._clock import Clock
from qualification.record._geometry import DecoderGeometry, DrafterGeometry, Grid
from qualification.record._models import (
    Decoder,
    Drafter,
    KVCache,
    StepMeta,
    init_random,
    make_step_meta,
)


def split_kv(total_kv_tokens: int, requests: int) -> list[int]:
    """Per-request past KV: floor(K / n) each, the first K mod n one larger (no token dropped)."""
    base, extra = divmod(total_kv_tokens, requests)
    return [base + 1 if index < extra else base for index in range(requests)]


@dataclass(frozen=True)
class StpSample:
    primary_ms: list[float]
    wall_ms: list[float]


@dataclass(frozen=True)
class RoundSample:
    duration_ms: list[float]
    draft_ms: list[float]
    verify_ms: list[float]
    wall_ms: list[float]
    accepted_mean: list[float]
    tokens_emitted: list[int]


def _target_capacity(grid: Grid) -> int:
    """Tokens the target cache must hold for the largest STP or verification shape."""
    need = 0
    for d, b, k in grid.configurations():
        for requests, width in ((b, 1), ((d + 1) * b, 1), (b, d + 1)):
            need = max(need, requests * (max(split_kv(k, requests)) + width))
    return need


def _draft_capacity(grid: Grid) -> int:
    return max(b * (max(split_kv(k, b)) + d) for d, b, k in grid.configurations())


class Session:
    """Models, caches and a clock for one (target, drafter, device) recording."""

    def __init__(
        self,
        target: DecoderGeometry,
        drafter: DrafterGeometry,
        grid: Grid,
        device: str,
        seed: int,
        dtype: str = "float32",
    ) -> None:
        self.device = device
        self.dtype = getattr(torch, dtype)
        self.clock = Clock(device)
        self.generator = torch.Generator().manual_seed(seed)
        self.target = Decoder(target)
        init_random(self.target, seed)
        self.drafter = Drafter(drafter, self.target)
        init_random(self.drafter, seed + 1)
        self.target.to(device, self.dtype).eval()
        self.drafter.to(device, self.dtype).eval()
        self.target_cache = KVCache(target, _target_capacity(grid), device, self.dtype)
        self.draft_cache = KVCache(
            self.drafter.cache_geometry(), _draft_capacity(grid), device, self.dtype
        )

    def _meta(self, g: DecoderGeometry, past: list[int], offset: int, queries: int) -> StepMeta:
        return make_step_meta(
            past, offset, queries, g.head_dim, g.rope_theta, self.device, self.dtype
        )

    def _tokens(self, batch: int, queries: int) -> Tensor:
        values = torch.randint(
            0, self.target.g.vocab_size, (batch, queries), generator=self.generator
        )
        return values.to(self.device)

    def measure_stp(self, batch: int, total_kv: int, repetitions: int) -> StpSample:
        """One query token per request over ``split_kv(total_kv, batch)`` past tokens."""
        past = split_kv(total_kv, batch)
        meta = self._meta(self.target.g, past, 0, 1)
        tokens = self._tokens(batch, 1)
        self.target_cache.shape_for(batch, max(past) + 1)
        primary, wall = [], []
        with torch.inference_mode():
            for repetition in range(repetitions + 1):  # the first pass is the warm-up
                self.clock.start()
                next_tokens, _, _ = self.target(tokens, meta, self.target_cache)
                next_tokens.sum().item()  # the sampled tokens reach the host, as in an engine
                lap = self.clock.stop()
                if repetition:
                    primary.append(lap.primary_ms[0])
                    wall.append(lap.wall_ms[0])
        return StpSample(primary, wall)

    def measure_round(self, d: int, batch: int, total_kv: int, repetitions: int) -> RoundSample:
        """d draft steps (one token per request each) + one verification of d + 1 tokens."""
        past = split_kv(total_kv, batch)
        draft_g = self.drafter.cache_geometry()
        draft_metas = [self._meta(draft_g, past, j, 1) for j in range(d)]
        verify_meta = self._meta(self.target.g, past, 0, d + 1)
        last_tokens = self._tokens(batch, 1)
        width = (
            3 * self.target.g.hidden_size
            if self.drafter.kind == "eagle3"
            else self.target.g.hidden_size
        )
        carried = torch.randn(batch, 1, width, generator=self.generator) * 0.5
        carried = carried.to(self.device, self.dtype)
        self.target_cache.shape_for(batch, max(past) + d + 1)
        self.draft_cache.shape_for(batch, max(past) + d)
        sample = RoundSample([], [], [], [], [], [])
        with torch.inference_mode():
            for repetition in range(repetitions + 1):
                self.clock.start()
                tokens, hidden, drafts = last_tokens, carried, []
                for j in range(d):
                    tokens, hidden = self.drafter.step(
                        tokens, hidden, j == 0, draft_metas[j], self.draft_cache
                    )
                    drafts.append(tokens)
                self.clock.mark()
                verify_tokens = torch.cat([last_tokens, *drafts], dim=1)
                target_next, _, _ = self.target(verify_tokens, verify_meta, self.target_cache)
                drafted = torch.cat(drafts, dim=1)
                matches = (drafted == target_next[:, :d]).to(torch.int64)
                accepted = matches.cumprod(dim=1).sum(dim=1).tolist()  # host sync, as an engine
                lap = self.clock.stop()
                if repetition:
                    sample.duration_ms.append(sum(lap.primary_ms))
                    sample.draft_ms.append(lap.primary_ms[0])
                    sample.verify_ms.append(lap.primary_ms[1])
                    sample.wall_ms.append(sum(lap.wall_ms))
                    sample.accepted_mean.append(sum(accepted) / batch)
                    sample.tokens_emitted.append(batch + sum(accepted))
        return sample
