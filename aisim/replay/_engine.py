"""The discrete-event loop: arrivals, passes, KV hand-offs on one clock.

Event order follows SimPy: the heap key is (time, priority, sequence) with the sequence counter
owned by each ``Simulation``, so simultaneous events pop in a defined order and no two runs share
state. At one instant: finished passes first, then KV hand-offs, then arrivals, then the workers
wake and plan their next pass (so every request that arrived at that instant can join it).
With ``plan.admission_ms`` > 0 a request arrives (its TTFT and E2E count from then) and reaches
the engine that much later, at the arrivals' priority. That time is the front end's work on the
engine's core (``aisim.fpm.FrontEndCost``): a request that arrives while a pass is in flight shares
the core with it, so the engine's next pass also ends ``admission_ms`` later (the core does both
pieces of work in total; a request that finds the engine idle delays nothing, and one whose pass
was the engine's last before it reached the engine delays the next pass only by the time it
shared with that pass).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable, Iterator
from typing import Final

from aisim.errors import SimulationError
from aisim.replay._outcome import CHUNK_ROWS, RequestLog, RequestRecord, RequestSink, TokenSink
from aisim.replay._plan import ReplayPlan, RequestSpec
from aisim.replay._recorder import Recorder
from aisim.replay._request import PHASE_DONE, PHASE_FAILED, SimRequest
from aisim.replay._rng import RandomStream
from aisim.replay._stretch import (
    advance,
    affordable_passes,
    pass_ends,
    steady_requests,
    stretch_capable,
)
from aisim.replay._worker import Worker

EVENT_PASS_DONE: Final = 0
EVENT_TRANSFER_DONE: Final = 1
EVENT_ARRIVAL: Final = 2
EVENT_WAKE: Final = 3
#: A request reaching the engine ``plan.admission_ms`` after its arrival (popped at the
#: arrivals' priority: it is the engine's arrival).
EVENT_ADMIT: Final = 4

ProgressCallback = Callable[[int, int, float], None]


class SimulationResult:
    """Raw outcome: the request log (records and aggregates) plus run-wide counters."""

    def __init__(
        self,
        log: RequestLog,
        recorder: Recorder,
        workers: list[Worker],
        end_ms: float,
        events: int,
        sorted_arrivals: bool = False,
    ) -> None:
        self.log = log
        self.recorder = recorder
        self.workers = workers
        self.end_ms = end_ms
        self.events = events
        #: The traffic listed its arrivals out of order; the simulation took them in order.
        self.sorted_arrivals = sorted_arrivals


class Simulation:
    """One run of a ``ReplayPlan``. Call ``run()`` once.

    Requests exist as ``SimRequest`` only from their arrival until they finish (then their
    ``RequestRecord`` goes to the log, to ``request_sink`` in chunks when one is given), and
    arrivals enter the event heap one at a time in (arrival, traffic order), so the state held
    is O(in-flight requests). A streamed traffic (``plan.stream``, arrivals in traffic order) is
    read one request ahead of the clock: the next one is read when the previous one arrives (in
    a streamed closed loop, a user's next request when its previous one completes), so it is
    never held whole either. A held traffic whose roots are listed out of arrival order
    is taken in arrival order (``sorted_arrivals``). ``per_token`` keeps every emission event
    (``token_sink``). Sinks are called with ``chunk_rows`` rows at a time (the last chunk may be
    shorter).

    ``step_by_step``: the reference path, kept as the oracle of the fast one (tests compare
    them): every pass is an event, every cache unit gets its entry when it fills and every
    inter-token gap is added on its own. The default fast path counts unique units lazily, adds
    equal gaps of one pass as one run and advances steady decode stretches in one step
    (``_stretch``); outputs are identical (tests/replay/test_replay_fast_path.py).
    """

    def __init__(
        self,
        plan: ReplayPlan,
        progress: ProgressCallback | None = None,
        progress_every: int = 50000,
        request_sink: RequestSink | None = None,
        token_sink: TokenSink | None = None,
        per_token: bool = False,
        chunk_rows: int = CHUNK_ROWS,
        step_by_step: bool = False,
    ) -> None:
        self.plan = plan
        self.progress = progress
        self.progress_every = progress_every if progress_every > 0 else 50000
        max_draft = 0
        for worker_plan in plan.workers:
            max_draft = max(max_draft, worker_plan.speculation.draft_length)
        fast = not step_by_step
        self.recorder = Recorder(max_draft, per_token, token_sink, chunk_rows, batch_gaps=fast)
        self.log = RequestLog(request_sink, chunk_rows)
        self.workers = [Worker(i, w, self.recorder, fast) for i, w in enumerate(plan.workers)]
        self._stretches = (
            fast and len(self.workers) == 1 and stretch_capable(self.workers[0], self.recorder)
        )
        # Passes the fast path completed inside stretches (tests check stretches happen).
        self.passes_advanced = 0
        self._events = 0
        decode_plan = plan.workers[-1].speculation
        self._sd_seed = decode_plan.seed if decode_plan.enabled else -1
        # Live requests (arrived, not finished) by index.
        self.requests: dict[int, SimRequest] = {}
        # Agentic graphs: children of each parent, and how many parents each child waits for.
        self._children: dict[int, list[int]] = {}
        self._waiting_on: dict[int, int] = {}
        # A streamed traffic (``plan.stream``): the reader, and the requests read from it that
        # have not arrived yet (the next root arrival). Arrivals are in traffic order there.
        self._reader: Iterator[RequestSpec] | None = None
        self._unarrived: dict[int, RequestSpec] = {}
        # A streamed closed loop: requests 0..users-1 are the roots; how many specs were read.
        self._loop_users = 0
        self._read = 0
        # A streamed closed loop over shared slots: how many, the think time a freed slot
        # waits, and how many requests hold a slot (released, not completed).
        self._slots = 0
        self._slot_think_ms = 0.0
        self._in_slots = 0
        # Whether the roots had to be put in arrival order (the traffic lists them otherwise).
        self.sorted_arrivals = False
        # Roots in (arrival, traffic order); None: traffic order already is (no list kept).
        self._root_order: list[int] | None = None
        self._root_cursor = 0
        specs = plan.requests
        count = len(specs)
        if plan.stream is not None:
            count = plan.stream.count
            self._reader = plan.stream.requests()
            self._loop_users = plan.stream.closed_loop_users
            self._slots = plan.stream.closed_loop_slots
            self._slot_think_ms = plan.stream.slot_think_ms
        roots_sorted = True
        last_root_ms = -1.0
        for spec in specs:
            if spec.wait_for:
                self._waiting_on[spec.index] = len(spec.wait_for)
                for parent in spec.wait_for:
                    self._children.setdefault(parent, []).append(spec.index)
            else:
                if spec.arrival_ms < last_root_ms:
                    roots_sorted = False
                last_root_ms = spec.arrival_ms
        if not roots_sorted:
            order = [spec.index for spec in specs if not spec.wait_for]
            order.sort(key=lambda index: (specs[index].arrival_ms, index))
            self._root_order = order
            self.sorted_arrivals = True
        self._heap: list[tuple[float, int, int, int, int]] = []
        # Root arrivals take sequence index + 1 and every other event a later one, so events
        # pop in the order they did when every root arrival was pushed up front.
        self._sequence = count
        self.now_ms = 0.0
        self._ran = False
        self._admission_ms = plan.admission_ms
        # Front-end work done on the engine's core while a pass was in flight, not yet paid
        # for: the next pass of the first worker ends that much later (``_arrival``), and the
        # arrival times of the requests it came from, until that pass is planned (``_pass_done``
        # caps it when the engine runs out of work first).
        self._frontend_debt_ms = 0.0
        self._frontend_debt_arrivals_ms: list[float] = []

    def run(self) -> SimulationResult:
        if self._ran:
            raise SimulationError("a Simulation runs once; build a new one to run again")
        self._ran = True
        self._push_next_root()
        horizon = self.plan.horizon_ms
        limit = self.plan.max_events
        last_ms = 0.0
        while self._heap:
            time_ms, _, _, kind, target = self._heap[0]
            if horizon >= 0.0 and time_ms > horizon:
                break
            heapq.heappop(self._heap)
            self._events += 1
            # This event's number (a stretch planned by it adds the events it skips).
            popped = self._events
            if popped > limit:
                raise SimulationError(
                    f"replay exceeded its event bound ({limit} events at t={time_ms:.3f} ms); "
                    "the configuration makes no progress"
                )
            self.now_ms = time_ms
            if kind == EVENT_PASS_DONE:
                self._pass_done(target)
            elif kind == EVENT_TRANSFER_DONE:
                self._transfer_done(target)
            elif kind == EVENT_ARRIVAL:
                self._arrival(target)
            elif kind == EVENT_ADMIT:
                self._admit(self.requests[target])
            else:
                self._wake(target)
            # The time of the last event handled (after a stretch: of the last one it skipped).
            last_ms = self.now_ms
            if self.progress is not None and popped % self.progress_every == 0:
                self.progress(popped, self.recorder.completed, time_ms)
        self.recorder.flush_gaps()
        self._label_unfinished(horizon)
        self.log.close()
        self.recorder.flush_tokens()
        if self.progress is not None:
            self.progress(self._events, self.recorder.completed, self.now_ms)
        return SimulationResult(
            self.log, self.recorder, self.workers, last_ms, self._events, self.sorted_arrivals
        )

    def _push_next_root(self) -> None:
        """Push the next root arrival (in (arrival, traffic order)), if any is left."""
        reader = self._reader
        if reader is not None:
            if self._loop_users > 0 and self._read >= self._loop_users:
                return  # the rest of a closed loop waits for its users' previous requests
            if self._slots > 0 and self._in_slots >= self._slots:
                return  # every slot is taken: a completion releases the next request
            spec = self._read_spec(reader)
            if spec is not None:
                if self._slots > 0:
                    # The first requests fill the slots at once; later ones arrive a think
                    # time after the completion that freed their slot.
                    late = self._read > self._slots
                    spec.arrival_ms = self.now_ms + (self._slot_think_ms if late else 0.0)
                    self._in_slots += 1
                self._push_root(spec)
            return
        specs = self.plan.requests
        order = self._root_order
        if order is not None:
            if self._root_cursor < len(order):
                index = order[self._root_cursor]
                self._root_cursor += 1
                self._push_root(specs[index])
            return
        while self._root_cursor < len(specs):
            spec = specs[self._root_cursor]
            self._root_cursor += 1
            if not spec.wait_for:
                self._push_root(spec)
                return

    def _read_spec(self, reader: Iterator[RequestSpec]) -> RequestSpec | None:
        """The next spec of a streamed traffic (None at its end), kept until it arrives; one
        that waits for others is registered as their child (its parents were read before it,
        in traffic order, and none of them has completed: a completion reads its children)."""
        spec = next(reader, None)
        if spec is None:
            return None
        self._read += 1
        self._unarrived[spec.index] = spec
        if spec.wait_for:
            self._waiting_on[spec.index] = len(spec.wait_for)
            for parent in spec.wait_for:
                self._children.setdefault(parent, []).append(spec.index)
        return spec

    def _push_root(self, spec: RequestSpec) -> None:
        index = spec.index
        heapq.heappush(
            self._heap, (spec.arrival_ms, EVENT_ARRIVAL, index + 1, EVENT_ARRIVAL, index)
        )

    def _spec(self, index: int) -> RequestSpec:
        """The spec of request ``index``, which is arriving now (a streamed one is let go)."""
        if self._reader is not None:
            return self._unarrived.pop(index)
        return self.plan.requests[index]

    def _new_request(self, spec: RequestSpec) -> SimRequest:
        seed = self._sd_seed
        index = spec.index
        rng = RandomStream(seed, index) if seed >= 0 else None
        request = SimRequest(spec, rng)
        self.requests[index] = request
        return request

    def _retire(self, request: SimRequest) -> None:
        """``request`` finished: its record goes to the log, its state is dropped."""
        self.log.add(RequestRecord(request))
        request.retire()
        del self.requests[request.index]

    # -- events ----------------------------------------------------------------------------------

    def _push(self, time_ms: float, kind: int, target: int) -> None:
        self._sequence += 1
        heapq.heappush(self._heap, (time_ms, kind, self._sequence, kind, target))

    def _arrival(self, index: int) -> None:
        spec = self._spec(index)
        if not spec.wait_for:
            self._push_next_root()
        request = self._new_request(spec)
        request.arrival_ms = self.now_ms
        if self._admission_ms > 0.0:
            # A front end holds it first (``ReplayPlan.admission_ms``), working on the engine's
            # core: with a pass in flight, the engine's next pass pays for that work too.
            if self.workers[0].busy:
                self._frontend_debt_ms += self._admission_ms
                self._frontend_debt_arrivals_ms.append(self.now_ms)
            self._sequence += 1
            heapq.heappush(
                self._heap,
                (
                    self.now_ms + self._admission_ms,
                    EVENT_ARRIVAL,
                    self._sequence,
                    EVENT_ADMIT,
                    index,
                ),
            )
            return
        self._admit(request)

    def _admit(self, request: SimRequest) -> None:
        """``request`` reaches the engine now."""
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
            self._retire(request)
        if duration >= 0.0:
            if worker_index == 0 and self._frontend_debt_ms > 0.0:
                duration += self._frontend_debt_ms
                self._frontend_debt_ms = 0.0
                self._frontend_debt_arrivals_ms.clear()
            worker.busy = True
            self.recorder.passes += 1
            end_ms = self.now_ms + duration
            if self._stretches:
                end_ms = self._stretch(worker, duration, end_ms)
            self._push(end_ms, EVENT_PASS_DONE, worker_index)

    def _stretch(self, worker: Worker, duration: float, end_ms: float) -> float:
        """Fast path: when the pass just planned starts a steady decode stretch (``_stretch``),
        complete all its passes but the last at once; returns when the last one ends. The
        events the skipped passes would have been (a pass end and a wake each) are counted."""
        rank = worker.ranks[0]
        passes = steady_requests(rank, self.now_ms)
        if passes < 2:
            return end_ms
        events = self._events
        room = (self.plan.max_events - events) // 2
        if self.progress is not None:
            every = self.progress_every
            room = min(room, ((events // every + 1) * every - events - 1) // 2)
        if room + 1 < passes:
            passes = room + 1
        if passes < 2:
            return end_ms
        next_event_ms = self._heap[0][0] if self._heap else math.inf
        ends = pass_ends(worker, self.now_ms, duration, passes, next_event_ms, self.plan.horizon_ms)
        count = len(ends) - 1
        if count >= 2:
            count = affordable_passes(rank, count)
        if count < 2:
            return end_ms
        ends = ends[: count + 1]
        advance(rank, self.recorder, ends)
        skipped = count - 1
        self._events += 2 * skipped
        self._sequence += 2 * skipped
        self.passes_advanced += skipped
        self.now_ms = ends[skipped]
        return ends[count]

    def _pass_done(self, worker_index: int) -> None:
        worker = self.workers[worker_index]
        worker.busy = False
        finished: list[SimRequest] = []
        handoff: list[SimRequest] = []
        worker.complete_pass(self.now_ms, finished, handoff)
        for request in finished:
            self._release_dependents(request)
            self._retire(request)
        decode = self.workers[-1]
        for request in handoff:
            request.hand_off()
            if decode.scheduler.prefill_pushes_kv:
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
        elif worker_index == 0 and self._frontend_debt_arrivals_ms:
            # The engine ran out of work before the requests in the front end reached it: the
            # core shared them with the pass only from each one's arrival to now, at most their
            # whole front-end time; the rest ran on an idle core and delays no pass.
            admission = self._admission_ms
            self._frontend_debt_ms = sum(
                min(admission, self.now_ms - arrival) for arrival in self._frontend_debt_arrivals_ms
            )
            self._frontend_debt_arrivals_ms.clear()

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
        reader = self._reader
        if self._slots > 0:
            self._in_slots -= 1
            self._push_next_root()
        if reader is not None and self._loop_users > 0:
            # A streamed closed loop: read on to this user's next request (at most one
            # request per user is read ahead).
            child = request.index + self._loop_users
            while self._read <= child and self._read_spec(reader) is not None:
                pass
        for child_index in self._children.pop(request.index, []):
            remaining = self._waiting_on[child_index] - 1
            self._waiting_on[child_index] = remaining
            if remaining == 0:
                delay_ms = self._spec_of(child_index).delay_ms
                self._push(self.now_ms + delay_ms, EVENT_ARRIVAL, child_index)

    def _spec_of(self, index: int) -> RequestSpec:
        """The spec of a request that has not arrived yet."""
        if self._reader is not None:
            return self._unarrived[index]
        return self.plan.requests[index]

    def _label_unfinished(self, horizon: float) -> None:
        """Record every request that did not finish, in traffic order: live ones, and those
        that never arrived (waiting for a parent, or released after the horizon)."""
        for spec in self._all_specs():
            index = spec.index
            request = self.requests.get(index)
            if request is None:
                if self.log.has_record(index):
                    continue
                request = SimRequest(spec, None)
                if self._waiting_on.get(index, 0) > 0:
                    request.reason = "a request it waits for did not complete"
            assert request.phase != PHASE_DONE, "finished requests are retired"
            if request.reason:
                pass  # waiting for a parent
            elif horizon >= 0.0:
                request.reason = f"not finished by simulation.horizon_ms ({horizon!r} ms)"
            else:
                request.reason = "the simulation ended before it finished"
            request.phase = PHASE_FAILED
            self.log.add(RequestRecord(request))
        self.requests = {}

    def _all_specs(self) -> Iterator[RequestSpec]:
        """Every request that may lack a record, in traffic order: all of a held traffic; of a
        streamed one, the live requests, the one read but not arrived, and the unread rest."""
        reader = self._reader
        if reader is None:
            yield from self.plan.requests
            return
        for index in sorted(self.requests):
            yield self.requests[index].spec
        for index in sorted(self._unarrived):
            yield self._unarrived[index]
        self._unarrived = {}
        while True:
            # Registered as it is read, so one still waiting for a parent says so.
            spec = self._read_spec(reader)
            if spec is None:
                break
            self._unarrived = {}
            yield spec
