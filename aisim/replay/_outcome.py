"""Per-request outcomes, finalised when a request finishes: one ``RequestRecord`` each, released
in traffic order to a sink (or kept), plus the run-wide aggregates the summary needs.

A finished request's simulation state (KV holdings, cache keys, its RNG) is dropped once its
record is taken, so a replay holds state for in-flight requests only, plus records that wait for
an earlier request of the traffic to finish (rows leave in traffic order).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Final

from aisim.replay._request import PHASE_DONE, SimRequest
from aisim.replay._sketch import Distribution

#: Records handed to a sink per call (a parquet row group).
CHUNK_ROWS: Final = 16_384

RequestSink = Callable[[list["RequestRecord"]], None]
#: ``(request ids, times in ms, tokens)`` of emission events, one entry per event.
TokenSink = Callable[[list[str], list[float], list[int]], None]


class RequestRecord:
    """One row of ``requests.parquet`` (NaN where undefined; docs/replay.md "Outputs").

    TTFT = first token - arrival; time to second token = second - first token; TPOT = (last -
    first token) / (output tokens - 1) for completed outputs of 2+ tokens; E2E = last token -
    arrival for completed requests. ``itl_count``/``mean_itl_ms``/``max_itl_ms``: the request's
    gaps between consecutive emission events.
    """

    def __init__(self, request: SimRequest) -> None:
        nan = math.nan
        spec = request.spec
        done = request.phase == PHASE_DONE
        arrived = request.arrival_ms >= 0.0
        first = request.first_token_ms if request.first_token_ms >= 0.0 else nan
        second = request.second_token_ms if request.second_token_ms >= 0.0 else nan
        last = request.last_token_ms if request.last_token_ms >= 0.0 else nan
        self.index = request.index
        self.request_id = spec.request_id
        self.completed = done
        self.reason = request.reason
        self.arrival_ms = request.arrival_ms if arrived else nan
        self.first_token_ms = first
        self.second_token_ms = second
        self.last_token_ms = last
        self.ttft_ms = first - request.arrival_ms if arrived else nan
        self.time_to_second_token_ms = second - first
        tpot = nan
        if done and request.output_tokens > 1:
            tpot = (last - first) / (request.output_tokens - 1)
        self.tpot_ms = tpot
        self.e2e_latency_ms = last - request.arrival_ms if done else nan
        self.prompt_tokens = request.prompt_tokens
        self.output_tokens = request.output_tokens
        self.emitted_tokens = request.emitted
        self.cached_prompt_tokens = request.cached_tokens
        self.decode_rounds = request.rounds
        self.sd_rounds = request.sd_rounds
        self.accepted_drafts = request.accepted_drafts
        self.preemptions = request.preemptions
        gaps = request.emissions - 1 if request.emissions > 1 else 0
        self.itl_count = gaps
        self.mean_itl_ms = (last - first) / gaps if gaps > 0 else nan
        self.max_itl_ms = request.max_itl_ms if gaps > 0 else nan


#: Value kinds of the request columns (``_parquet`` maps them to arrow types: string, int64,
#: float64; NaN marks an undefined float).
TEXT: Final = "text"
INTEGER: Final = "integer"
FLOAT: Final = "float"

#: The columns of ``requests.parquet``, in order, with their kinds: attributes of
#: ``RequestRecord`` (``status`` is derived from ``completed``).
REQUEST_COLUMN_KINDS: Final[tuple[tuple[str, str], ...]] = (
    ("request_id", TEXT),
    ("status", TEXT),
    ("reason", TEXT),
    ("arrival_ms", FLOAT),
    ("first_token_ms", FLOAT),
    ("second_token_ms", FLOAT),
    ("last_token_ms", FLOAT),
    ("ttft_ms", FLOAT),
    ("time_to_second_token_ms", FLOAT),
    ("tpot_ms", FLOAT),
    ("e2e_latency_ms", FLOAT),
    ("prompt_tokens", INTEGER),
    ("output_tokens", INTEGER),
    ("emitted_tokens", INTEGER),
    ("cached_prompt_tokens", INTEGER),
    ("decode_rounds", INTEGER),
    ("sd_rounds", INTEGER),
    ("accepted_drafts", INTEGER),
    ("preemptions", INTEGER),
    ("itl_count", INTEGER),
    ("mean_itl_ms", FLOAT),
    ("max_itl_ms", FLOAT),
)
#: Column names of ``requests.parquet``, in order.
REQUEST_COLUMNS: Final[tuple[str, ...]] = tuple(name for name, _ in REQUEST_COLUMN_KINDS)


class RequestLog:
    """Takes finished requests in any order, releases their records in traffic order, and keeps
    the aggregates of the summary. With a ``sink``, released records go to it in chunks of
    ``chunk_rows``; without one they are kept in ``records``."""

    def __init__(self, sink: RequestSink | None, chunk_rows: int = CHUNK_ROWS) -> None:
        self.sink = sink
        self.chunk_rows = chunk_rows if chunk_rows > 0 else CHUNK_ROWS
        self.records: list[RequestRecord] = []
        self._held: dict[int, RequestRecord] = {}
        self._next_index = 0
        # Run-wide aggregates over released records.
        self.total = 0
        self.completed = 0
        self.reasons: dict[str, int] = {}
        self.start_ms = math.inf
        self.end_ms = -math.inf
        self.input_tokens = 0
        self.output_tokens = 0
        self.decode_rounds = 0
        self.cached_prompt_tokens = 0
        # Latencies of completed requests, fed in traffic order (as the summary always took them).
        self.ttft = Distribution()
        self.time_to_second_token = Distribution()
        self.tpot = Distribution()
        self.e2e_latency = Distribution()

    def add(self, record: RequestRecord) -> None:
        """Take ``record``; release it and every held record that follows it in traffic order."""
        if record.index != self._next_index:
            self._held[record.index] = record
            return
        self._release(record)
        held = self._held
        while self._next_index in held:
            self._release(held.pop(self._next_index))

    def has_record(self, index: int) -> bool:
        """Whether request ``index``'s record was added."""
        return index < self._next_index or index in self._held

    @property
    def held(self) -> int:
        """Records waiting for an earlier request of the traffic."""
        return len(self._held)

    def close(self) -> None:
        """Hand the last chunk to the sink (every request must have been added)."""
        assert not self._held, "a request's record was never added"
        if self.sink is not None and self.records:
            self.sink(self.records)
            self.records = []

    def _release(self, record: RequestRecord) -> None:
        self._next_index += 1
        self.total += 1
        self.decode_rounds += record.decode_rounds
        self.cached_prompt_tokens += record.cached_prompt_tokens
        if not math.isnan(record.arrival_ms) and record.arrival_ms < self.start_ms:
            self.start_ms = record.arrival_ms
        if record.completed:
            self.completed += 1
            self.input_tokens += record.prompt_tokens
            self.output_tokens += record.output_tokens
            if record.last_token_ms > self.end_ms:
                self.end_ms = record.last_token_ms
            _add_defined(self.ttft, record.ttft_ms)
            _add_defined(self.time_to_second_token, record.time_to_second_token_ms)
            _add_defined(self.tpot, record.tpot_ms)
            _add_defined(self.e2e_latency, record.e2e_latency_ms)
        else:
            self.reasons[record.reason] = self.reasons.get(record.reason, 0) + 1
        self.records.append(record)
        if self.sink is not None and len(self.records) >= self.chunk_rows:
            self.sink(self.records)
            self.records = []


def _add_defined(distribution: Distribution, value: float) -> None:
    if not math.isnan(value):
        distribution.add(value)
