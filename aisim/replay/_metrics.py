"""What a simulation records beyond per-request state: ITL samples, SD histogram, counters."""

from __future__ import annotations

from aisim.replay._request import SimRequest


class Recorder:
    """Shared by every rank of one simulation (never global: each run owns its own)."""

    def __init__(self, max_draft_length: int) -> None:
        self.itl_ms: list[float] = []
        # accepted_histogram[k] = SD rounds that accepted k drafts (bonus token excluded).
        self.accepted_histogram: list[int] = [0] * (max_draft_length + 1)
        self.passes = 0
        self.completed = 0
        self.preemptions = 0
        # Preemptions (vLLM) and retractions (SGLang) that a plain decode step (one slot, no SD
        # lookahead) would not have needed: caused by the SD reservation.
        self.sd_preemptions = 0

    def emit(self, request: SimRequest, count: int, now_ms: float) -> None:
        """``request`` emits ``count`` tokens at ``now_ms`` (one emission event)."""
        if request.emitted == 0:
            request.first_token_ms = now_ms
        else:
            self.itl_ms.append(now_ms - request.last_token_ms)
        if request.emitted < 2 <= request.emitted + count:
            request.second_token_ms = now_ms
        request.emitted += count
        request.last_token_ms = now_ms
        request.emissions += 1

    def emit_unseen(self, request: SimRequest) -> None:
        """A P/D prefill pool sampled ``request``'s first token; the client sees it only when
        the decode pool takes the request in (``reveal_first``)."""
        request.emitted += 1

    def reveal_first(self, request: SimRequest, now_ms: float) -> None:
        """The client receives the first token, sampled earlier by the prefill pool."""
        request.first_token_ms = now_ms
        request.last_token_ms = now_ms
        request.emissions += 1
