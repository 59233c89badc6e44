"""Run-time state of one request as it moves through the simulated engine."""

from __future__ import annotations

from typing import Final

from aisim.replay._kv_pool import KvHolding
from aisim.replay._plan import RequestSpec
from aisim.replay._rng import RandomStream

PHASE_PENDING: Final = 0  # not arrived yet (or waiting for dependencies)
PHASE_WAITING: Final = 1  # queued at a rank, holds no KV
PHASE_PREFILL: Final = 2  # running, computing its known tokens (chunked)
PHASE_DECODE: Final = 3  # running, one decode (or SD) round per pass
PHASE_TRANSFER: Final = 4  # prefilled on the prefill pool, KV on its way to the decode pool
PHASE_DONE: Final = 5
PHASE_FAILED: Final = 6

WORK_NONE: Final = 0
WORK_PREFILL: Final = 1
WORK_DECODE: Final = 2
# vLLM P/D: the decode pool computes the last prompt token of a request whose KV it pulled. One
# query token: the attention backends count it as a decode (``split_decodes_and_prefills``).
WORK_FIRST_TOKEN: Final = 3


class SimRequest:
    """A request's progress. Invariant while decoding: ``computed == prompt + emitted - 1`` (the
    last emitted token is the next round's input, its KV not written yet)."""

    def __init__(self, spec: RequestSpec, rng: RandomStream | None) -> None:
        self.spec = spec
        self.index = spec.index
        self.prompt_tokens = spec.prompt_tokens
        self.output_tokens = spec.output_tokens
        self.phase = PHASE_PENDING
        self.arrival_ms = -1.0
        self.first_token_ms = -1.0
        self.second_token_ms = -1.0
        self.last_token_ms = -1.0
        self.emitted = 0
        self.computed = 0
        # Tokens to compute before the next emission (prompt, or prompt + output on recompute).
        self.prefill_target = 0
        # P/D hand-off on the decode pool. vLLM (the decode worker pulls the KV): ``kv_remote``
        # until its pool allocates the prompt's blocks, ``kv_loading`` while the transfer runs.
        # ``kv_transferred``: the prompt's KV has arrived (SGLang: admission pending; vLLM: the
        # last prompt token is still to be computed).
        self.kv_remote = False
        self.kv_loading = False
        self.kv_transferred = False
        # Prompt tokens the transfer carries (vLLM: minus the decode pool's prefix hits).
        self.transfer_tokens = 0
        self.rank = -1
        self.kv = KvHolding()
        # The prefill pool's KV of a handed-off request, held there until the transfer ends.
        self.source_kv = KvHolding()
        self.source_rank = -1
        self.rng = rng
        self.rounds = 0
        self.sd_rounds = 0
        self.accepted_drafts = 0
        self.preemptions = 0
        self.cached_tokens = 0
        self.pending_dependencies = len(spec.wait_for)
        self.dependents: list[int] = []
        self.reason = ""
        # The work of the pass in flight.
        self.work = WORK_NONE
        self.work_tokens = 0
        self.work_past_kv = 0
        self.emissions = 0
        # Longest gap between two of its emission events (ms).
        self.max_itl_ms = 0.0
        self._unit_keys: list[tuple[int, ...]] = []
        self._unit_tokens = 0
        # Whether a pool holds cache entries of this request's unique units (fast path: until
        # then no match can hit them, so admission matches only the trace-hashed units).
        self.unique_entries = False

    def retire(self) -> None:
        """Drop the simulation state of a finished request (its record has been taken)."""
        self._unit_keys = []
        self.kv = KvHolding()
        self.source_kv = self.kv
        self.rng = None
        self.dependents = []

    def hand_off(self) -> None:
        """Leave the prefill pool: its KV stays held there (``source_kv``) until the transfer
        ends; the decode pool starts from an empty holding."""
        self.source_kv = self.kv
        self.source_rank = self.rank
        self.kv = KvHolding()
        self.computed = 0
        self.prefill_target = 0

    @property
    def known_tokens(self) -> int:
        """Tokens whose identity is known: prompt plus emitted output."""
        return self.prompt_tokens + self.emitted

    @property
    def remaining_output(self) -> int:
        return self.output_tokens - self.emitted

    def unit_keys(self, count: int, unit_tokens: int) -> list[tuple[int, ...]]:
        """Content keys of units ``0..count-1`` (a new list; see ``unit_key``)."""
        if count > 0:
            self.unit_key(count - 1, unit_tokens)
        return self._unit_keys[:count]

    def unit_key(self, unit: int, unit_tokens: int) -> tuple[int, ...]:
        """Content key of unit ``unit``, cached with every key before it (recomputed when a pool
        with another unit size asks, e.g. after a P/D hand-off). No list copy: called once per
        unit a request fills."""
        keys = self._unit_keys
        if self._unit_tokens != unit_tokens:
            keys.clear()
            self._unit_tokens = unit_tokens
        while len(keys) <= unit:
            keys.append(self.unit_content(len(keys), unit_tokens))
        return keys[unit]

    def first_unique_unit(self, unit_tokens: int) -> int:
        """The first unit whose content is unique to this request: units before it lie inside
        the prompt and are covered by trace ``hash_ids`` that other requests may share; every
        unit from it on is unique (``unit_content`` has no hash id, or its chain holds a block
        whose id occurs nowhere else in the traffic, ``RequestSpec.private_from_block``), so
        only this request can ever match it."""
        spec = self.spec
        block = spec.hash_block_tokens
        if block <= 0:
            return 0
        covered = len(spec.hash_ids) * block
        private = spec.private_from_block
        if private >= 0 and private * block < covered:
            covered = private * block
        if covered > spec.prompt_tokens:
            covered = spec.prompt_tokens
        return covered // unit_tokens

    def unit_hash_id(self, unit: int, unit_tokens: int) -> int:
        """The trace hash id that is unit ``unit``'s whole content (``unit_content`` is then
        ``(hash_id,)``: the unit is one hash block of the prompt), or -1."""
        spec = self.spec
        block = spec.hash_block_tokens
        if unit_tokens != block:
            return -1
        end = (unit + 1) * unit_tokens
        if end > spec.prompt_tokens or unit >= len(spec.hash_ids):
            return -1
        return spec.hash_ids[unit]

    def unit_content(self, unit: int, unit_tokens: int) -> tuple[int, ...]:
        """Content key of KV unit ``unit`` (tokens ``[unit * unit_tokens, +unit_tokens)``).

        Inside the prompt and covered by trace ``hash_ids``: the ids it spans plus its offset in
        the first one (so prefixes shared in the trace are shared here). Anything else is unique
        to this request, yet stable across its own preemptions (recompute hits its own blocks).
        """
        start = unit * unit_tokens
        end = start + unit_tokens
        spec = self.spec
        block = spec.hash_block_tokens
        if end <= spec.prompt_tokens and block > 0:
            first = start // block
            last = (end - 1) // block
            if last < len(spec.hash_ids):
                if first == last and start % block == 0 and unit_tokens == block:
                    return (spec.hash_ids[first],)
                content = [start - first * block]
                content.extend(spec.hash_ids[first : last + 1])
                return tuple(content)
        return (-1 - self.index, unit)
