"""What a simulation records beyond per-request state: ITL samples, SD histogram, counters, and
(when asked) every emission event."""

from __future__ import annotations

from aisim.replay._outcome import CHUNK_ROWS, TokenSink
from aisim.replay._request import SimRequest
from aisim.replay._sketch import Distribution


class Recorder:
    """Shared by every rank of one simulation (never global: each run owns its own).

    ``per_token``: keep one entry per emission event (request id, time, tokens), handed to
    ``token_sink`` in chunks when one is given, else kept in ``token_*``.
    """

    def __init__(
        self,
        max_draft_length: int,
        per_token: bool = False,
        token_sink: TokenSink | None = None,
        chunk_rows: int = CHUNK_ROWS,
        batch_gaps: bool = False,
    ) -> None:
        self.itl = Distribution()
        # Fast path: consecutive equal gaps (every request of a pass that also emitted in the
        # previous one) are added to ``itl`` as one run (``flush_gaps`` before reading it).
        self.batch_gaps = batch_gaps
        self._gap_value = 0.0
        self._gap_run = 0
        # accepted_histogram[k] = SD rounds that accepted k drafts (bonus token excluded).
        self.accepted_histogram: list[int] = [0] * (max_draft_length + 1)
        # The same over the rounds whose request had more output left than the deepest chain
        # drafts (no cap by the output: the acceptance as sampled; chosen before the draw, so
        # an unbiased sample of it). Not in the summary; read by the acceptance checks.
        self.uncapped_histogram: list[int] = [0] * (max_draft_length + 1)
        self.passes = 0
        self.completed = 0
        self.preemptions = 0
        # Preemptions (vLLM) and retractions (SGLang) that a plain decode step (one slot, no SD
        # lookahead) would not have needed: caused by the SD reservation.
        self.sd_preemptions = 0
        self.per_token = per_token
        self.token_sink = token_sink
        self.chunk_rows = chunk_rows if chunk_rows > 0 else CHUNK_ROWS
        self.token_request: list[str] = []
        self.token_time_ms: list[float] = []
        self.token_count: list[int] = []

    def emit(self, request: SimRequest, count: int, now_ms: float) -> None:
        """``request`` emits ``count`` tokens at ``now_ms`` (one emission event)."""
        if request.emitted == 0:
            request.first_token_ms = now_ms
        else:
            gap = now_ms - request.last_token_ms
            if not self.batch_gaps:
                self.itl.add(gap)
            elif self._gap_run > 0 and gap == self._gap_value:
                self._gap_run += 1
            else:
                self.flush_gaps()
                self._gap_value = gap
                self._gap_run = 1
            if gap > request.max_itl_ms:
                request.max_itl_ms = gap
        if request.emitted < 2 <= request.emitted + count:
            request.second_token_ms = now_ms
        request.emitted += count
        request.last_token_ms = now_ms
        request.emissions += 1
        if self.per_token:
            self._token(request, count, now_ms)

    def emit_unseen(self, request: SimRequest) -> None:
        """A P/D prefill pool sampled ``request``'s first token; the client sees it only when
        the decode pool takes the request in (``reveal_first``)."""
        request.emitted += 1

    def reveal_first(self, request: SimRequest, now_ms: float) -> None:
        """The client receives the first token, sampled earlier by the prefill pool."""
        request.first_token_ms = now_ms
        request.last_token_ms = now_ms
        request.emissions += 1
        if self.per_token:
            self._token(request, 1, now_ms)

    def add_gaps(self, gap: float, count: int) -> None:
        """``count`` requests emitted after the same ``gap`` (a stretch's pass; fast path)."""
        if self._gap_run > 0 and gap == self._gap_value:
            self._gap_run += count
        else:
            self.flush_gaps()
            self._gap_value = gap
            self._gap_run = count

    def flush_gaps(self) -> None:
        """Add the pending run of equal gaps to ``itl`` (the simulation calls it at its end)."""
        if self._gap_run > 0:
            self.itl.add_repeated(self._gap_value, self._gap_run)
            self._gap_run = 0

    def flush_tokens(self) -> None:
        """Hand the kept emission events to the token sink (if any)."""
        sink = self.token_sink
        if sink is not None and self.token_request:
            sink(self.token_request, self.token_time_ms, self.token_count)
            self.token_request = []
            self.token_time_ms = []
            self.token_count = []

    def _token(self, request: SimRequest, count: int, now_ms: float) -> None:
        self.token_request.append(request.spec.request_id)
        self.token_time_ms.append(now_ms)
        self.token_count.append(count)
        if self.token_sink is not None and len(self.token_request) >= self.chunk_rows:
            self.flush_tokens()
