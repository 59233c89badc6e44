"""The discrete-event loop: arrivals, passes, KV hand-offs on one clock.

Event order follows SimPy: the heap key is (time, priority, sequence) with the sequence counter
owned by each ``Simulation``, so simultaneous events pop in a defined order and no two runs share
state. At one instant: finished passes first, then KV hand-offs, then arrivals, then the workers
wake and plan their next pass (so every request that arrived at that instant can join it).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from typing import Final

from aisim.errors import SimulationError
from aisim.replay._metrics import Recorder
from aisim.replay._plan import ReplayPlan
from aisim.replay._request import PHASE_DONE, PHASE_FAILED, PHASE_PENDING, SimRequest
from aisim.replay._rng import RandomStream
from aisim.replay._worker import Worker

EVENT_PASS_DONE: Final = 0
EVENT_TRANSFER_DONE: Final = 1
EVENT_ARRIVAL: Final = 2
EVENT_WAKE: Final = 3

ProgressCallback = Callable[[int, int, float], None]


class SimulationResult:
    """Raw outcome: every request's final state plus run-wide counters."""

    def __init__(
        self,
        requests: list[SimRequest],
        recorder: Recorder,
        workers: list[Worker],
        end_ms: float,
        events: int,
    ) -> None:
        self.requests = requests
        self.recorder = recorder
        self.workers = workers
        self.end_ms = end_ms
        self.events = events


class Simulation:
    """One run of a ``ReplayPlan``. Call ``run()`` once."""

    def __init__(
        self,
        plan: ReplayPlan,
        progress: ProgressCallback | None = None,
        progress_every: int = 50000,
    ) -> None:
        self.plan = plan
        self.progress = progress
        self.progress_every = progress_every if progress_every > 0 else 50000
        max_draft = 0
        for worker_plan in plan.workers:
            max_draft = max(max_draft, worker_plan.speculation.draft_length)
        self.recorder = Recorder(max_draft)
        self.workers = [Worker(i, w, self.recorder) for i, w in enumerate(plan.workers)]
        decode_plan = plan.workers[-1].speculation
        self.requests: list[SimRequest] = []
        for spec in plan.requests:
            rng = RandomStream(decode_plan.seed, spec.index) if decode_plan.enabled else None
            self.requests.append(SimRequest(spec, rng))
        for request in self.requests:
            for parent in request.spec.wait_for:
                self.requests[parent].dependents.append(request.index)
        self._heap: list[tuple[float, int, int, int, int]] = []
        self._sequence = 0
        self.now_ms = 0.0
        self._ran = False

    def run(self) -> SimulationResult:
        if self._ran:
            raise SimulationError("a Simulation runs once; build a new one to run again")
        self._ran = True
        for request in self.requests:
            if request.pending_dependencies == 0:
                self._push(request.spec.arrival_ms, EVENT_ARRIVAL, request.index)
        horizon = self.plan.horizon_ms
        limit = self.plan.max_events
        events = 0
        last_ms = 0.0
        while self._heap:
            time_ms, _, _, kind, target = self._heap[0]
            if horizon >= 0.0 and time_ms > horizon:
                break
            heapq.heappop(self._heap)
            events += 1
            if events > limit:
                raise SimulationError(
                    f"replay exceeded its event bound ({limit} events at t={time_ms:.3f} ms); "
                    "the configuration makes no progress"
                )
            self.now_ms = time_ms
            last_ms = time_ms
            if kind == EVENT_PASS_DONE:
                self._pass_done(target)
            elif kind == EVENT_TRANSFER_DONE:
                self._transfer_done(target)
            elif kind == EVENT_ARRIVAL:
                self._arrival(target)
            else:
                self._wake(target)
            if self.progress is not None and events % self.progress_every == 0:
                self.progress(events, self.recorder.completed, self.now_ms)
        self._label_unfinished(horizon)
        if self.progress is not None:
            self.progress(events, self.recorder.completed, self.now_ms)
        return SimulationResult(self.requests, self.recorder, self.workers, last_ms, events)

    # -- events ----------------------------------------------------------------------------------

    def _push(self, time_ms: float, kind: int, target: int) -> None:
        self._sequence += 1
        heapq.heappush(self._heap, (time_ms, kind, self._sequence, kind, target))

    def _arrival(self, index: int) -> None:
        request = self.requests[index]
        request.arrival_ms = self.now_ms
        worker = self.workers[0]
        worker.route(request)
        self._schedule_wake(worker)

    def _schedule_wake(self, worker: Worker) -> None:
        if not worker.wake_pending and not worker.busy:
            worker.wake_pending = True
            self._push(self.now_ms, EVENT_WAKE, worker.worker_index)

    def _wake(self, worker_index: int) -> None:
        worker = self.workers[worker_index]
        worker.wake_pending = False
        if worker.busy:
            return
        duration = worker.plan_pass(self.now_ms)
        for request in worker.take_loads_started():
            self._push(
                self.now_ms + self._transfer_ms(request.transfer_tokens),
                EVENT_TRANSFER_DONE,
                request.index,
            )
        for request in worker.take_finished_in_plan():
            self._release_dependents(request)
        if duration >= 0.0:
            worker.busy = True
            self.recorder.passes += 1
            self._push(self.now_ms + duration, EVENT_PASS_DONE, worker_index)

    def _pass_done(self, worker_index: int) -> None:
        worker = self.workers[worker_index]
        worker.busy = False
        finished: list[SimRequest] = []
        handoff: list[SimRequest] = []
        worker.complete_pass(self.now_ms, finished, handoff)
        for request in finished:
            self._release_dependents(request)
        decode = self.workers[-1]
        for request in handoff:
            request.hand_off()
            if decode.is_sglang:
                # SGLang's prefill server pushes the KV as it computes it: the transfer ends
                # after the prefill, then the decode server takes the request in.
                self._push(
                    self.now_ms + self._transfer_ms(request.prompt_tokens),
                    EVENT_TRANSFER_DONE,
                    request.index,
                )
            else:
                # vLLM: the proxy now sends the request to the decode worker, which allocates
                # the prompt's blocks and pulls the KV into them (``take_loads_started``).
                request.kv_remote = True
                decode.route(request)
                self._schedule_wake(decode)
        if worker.has_work():
            self._schedule_wake(worker)

    def _transfer_ms(self, tokens: int) -> float:
        return self.plan.transfer_latency_ms + tokens * self.plan.transfer_ms_per_token

    def _transfer_done(self, index: int) -> None:
        request = self.requests[index]
        prefill = self.workers[0]
        prefill.ranks[request.source_rank].release_transferred(request)
        if prefill.has_work():
            # The freed KV may admit a request that was waiting for it.
            self._schedule_wake(prefill)
        decode = self.workers[-1]
        if request.kv_loading:
            decode.ranks[request.rank].kv_landed(request)
        else:
            request.kv_transferred = True
            decode.route(request)
        self._schedule_wake(decode)

    def _release_dependents(self, request: SimRequest) -> None:
        for child_index in request.dependents:
            child = self.requests[child_index]
            child.pending_dependencies -= 1
            if child.pending_dependencies == 0:
                self._push(self.now_ms + child.spec.delay_ms, EVENT_ARRIVAL, child_index)

    def _label_unfinished(self, horizon: float) -> None:
        for request in self.requests:
            if request.phase == PHASE_DONE:
                continue
            if request.phase == PHASE_PENDING and request.pending_dependencies > 0:
                request.reason = "a request it waits for did not complete"
            elif horizon >= 0.0:
                request.reason = f"not finished by simulation.horizon_ms ({horizon!r} ms)"
            else:
                request.reason = "the simulation ended before it finished"
            request.phase = PHASE_FAILED
