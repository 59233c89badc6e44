"""A worker: ``attention_data`` ranks that run each pass in lockstep; a pass ends at its slowest
rank. New requests go to the least loaded rank (lowest index on ties).

SGLang's ``--scheduler-recv-interval N`` (``SchedulerRecvSkipper.handle``,
python/sglang/srt/managers/scheduler_recv_skipper.py): the event loop takes in new requests only
when a counter, raised before every pass by the weight of the pass before it (a decode or verify
pass or no pass: 1; any other pass, a prefill: 1000), reaches N; it then restarts at 0. Until then
arrivals wait in the worker's inbox. An idle loop spins (weight 1 per turn, no GPU work), so an
idle worker takes them in at once.

TensorRT-LLM's attention-DP balance (``attention_dp_config.enable_balance``;
tensorrt_llm/_torch/pyexecutor/py_executor.py, ``PyExecutor._balance_adp_requests``), checked
before every pass with several attention ranks: when every rank has a free slot and a context
request to start, they start (after ``batching_wait_iters`` more passes while every rank also
decodes); otherwise a counter rises, no rank starts a context request, and when it reaches
``timeout_iters`` or some rank decodes nothing, it restarts at 0 and they start.
"""

from __future__ import annotations

from typing import Final

from aisim.errors import UnsupportedQuery
from aisim.replay._plan import SCHEDULER_SGLANG, SCHEDULER_VLLM, SchedulerPlan, WorkerPlan
from aisim.replay._pricing import RankWork
from aisim.replay._rank import RankState
from aisim.replay._recorder import Recorder
from aisim.replay._request import PHASE_DECODE, SimRequest
from aisim.replay._scheduler import Scheduler
from aisim.replay._scheduler_sglang import SglangScheduler
from aisim.replay._scheduler_vllm import VllmScheduler


def scheduler_for(plan: SchedulerPlan) -> Scheduler:
    """The implementation of ``plan.kind`` (the one place replay looks at the backend's name)."""
    if plan.kind == SCHEDULER_VLLM:
        return VllmScheduler(plan)
    if plan.kind == SCHEDULER_SGLANG:
        return SglangScheduler(plan)
    raise ValueError(f"scheduler kind: expected one of vllm, sglang, got {plan.kind!r}")


#: ``SchedulerRecvSkipper`` weights of the pass before: decode / verify (and no pass) 1, others.
RECV_WEIGHT_DECODE: Final = 1
RECV_WEIGHT_OTHER: Final = 1000


class Worker:
    """Scheduling state of one worker; the engine owns its clock and events."""

    def __init__(
        self, worker_index: int, plan: WorkerPlan, recorder: Recorder, fast: bool = True
    ) -> None:
        self.worker_index = worker_index
        self.plan = plan
        self.role = plan.role
        self.scheduler = scheduler_for(plan.scheduler)
        lists = plan.pricer.wants_request_lists
        rules = self.scheduler.rank_rules
        self.ranks = [
            RankState(rank, plan, recorder, lists, rules, fast, worker_index)
            for rank in range(plan.attention_data)
        ]
        self.busy = False
        self.wake_pending = False
        self.draft_length = plan.speculation.draft_length
        self.recv_interval = plan.scheduler.recv_interval if self.scheduler.skips_receives else 1
        # Newer SGLang starts the counter at the threshold: the first turn takes requests in.
        self.recv_counter = self.recv_interval
        self.last_pass_weight = RECV_WEIGHT_DECODE
        self.inbox: list[SimRequest] = []
        self.adp_balance = (
            plan.scheduler.adp_balance
            and len(self.ranks) > 1
            and self.scheduler.balances_attention_dp
        )
        self.adp_waiting_iters = 0
        self.adp_batching_iters = 0

    def route(self, request: SimRequest) -> None:
        """Queue ``request`` on the least loaded rank (into the inbox while the scheduler
        takes requests in every ``recv_interval`` passes only)."""
        if self.recv_interval > 1:
            self.inbox.append(request)
            return
        self._route_now(request)

    def _route_now(self, request: SimRequest) -> None:
        best = self.ranks[0]
        for rank in self.ranks:
            if rank.load < best.load:
                best = rank
        best.enqueue(request)

    def has_work(self) -> bool:
        return bool(self.inbox) or any(rank.has_work() for rank in self.ranks)

    def _balance_adp(self) -> None:
        """``_balance_adp_requests``: whether the ranks may start context requests this pass."""
        plan = self.plan.scheduler
        free = all(len(rank.running) < plan.max_sequences for rank in self.ranks)
        contexts = all(bool(rank.waiting) for rank in self.ranks)
        decoding = all(
            any(request.phase == PHASE_DECODE for request in rank.running) for rank in self.ranks
        )
        hold = False
        if free and contexts:
            self.adp_waiting_iters = 0
            if decoding:
                if self.adp_batching_iters < plan.adp_batching_wait_iters:
                    self.adp_batching_iters += 1
                    hold = True
                else:
                    self.adp_batching_iters = 0
        else:
            self.adp_waiting_iters += 1
            hold = True
            if self.adp_waiting_iters >= plan.adp_timeout_iters or not decoding:
                self.adp_waiting_iters = 0
                hold = False
        for rank in self.ranks:
            rank.hold_admission = hold

    def _receive(self) -> None:
        """One turn of SGLang's receive check before a pass (``recv_interval`` > 1)."""
        self.recv_counter += self.last_pass_weight
        due = self.recv_counter >= self.recv_interval
        idle = not any(rank.running for rank in self.ranks)
        if due or idle:
            self.recv_counter = 0
            inbox = self.inbox
            self.inbox = []
            for request in inbox:
                self._route_now(request)

    def plan_pass(self, now_ms: float) -> float:
        """Schedule every rank for a pass starting at ``now_ms``; returns the pass duration in
        ms, or -1.0 when no rank has work it can start now. Planning may also start KV loads
        and finish requests (``take_loads_started``, ``take_finished_in_plan``)."""
        works: list[RankWork] = []
        any_work = False
        has_decode = False
        # Whether some decode request drafts in this pass (undrafted rounds: a plain step).
        drafting = False
        if self.recv_interval > 1:
            self._receive()
        if self.adp_balance:
            self._balance_adp()
        has_prefill = False
        scheduler = self.scheduler
        for rank in self.ranks:
            rank.now_ms = now_ms
            scheduler.schedule(rank)
            work = rank.work()
            rank.next_draft_length()
            if not work.is_idle:
                any_work = True
            if work.num_prefill_requests > 0:
                has_prefill = True
            if work.num_decode_requests > 0:
                has_decode = True
                if work.num_undrafted_decode_requests < work.num_decode_requests:
                    drafting = True
            works.append(work)
        self.last_pass_weight = RECV_WEIGHT_OTHER if has_prefill else RECV_WEIGHT_DECODE
        if not any_work:
            self._idle()
            return -1.0
        draft_length = self.draft_length if has_decode else 0
        if has_decode and self.plan.speculation.varies:
            # The length this pass drafted (vLLM's table, SGLang's adaptive steps, a trace).
            draft_length = max(rank.pass_drafts for rank in self.ranks)
            if draft_length == 0:
                return self._with_host(self.plan.pricer.price_plain(works), works)
        plain = has_decode and not drafting and draft_length > 0
        try:
            if plain:
                return self._with_host(self.plan.pricer.price_plain(works), works)
            return self._with_host(self.plan.pricer.price(works, draft_length), works)
        except UnsupportedQuery as exc:
            raise UnsupportedQuery(
                f"{self.plan.path}.timing: the estimator cannot price a pass of this replay "
                f"({_describe(works)}): {exc}"
            ) from None

    def _with_host(self, gpu_ms: float, works: list[RankWork]) -> float:
        """The pass's duration from its GPU time and its host time (``_host_ms``): their sum
        when the host work lies between GPU passes, the longer of the two when it overlaps
        them (``host_overlapped``)."""
        host_ms = self._host_ms(works)
        if self.plan.scheduler.host_overlapped:
            return gpu_ms if gpu_ms >= host_ms else host_ms
        return gpu_ms + host_ms

    def _host_ms(self, works: list[RankWork]) -> float:
        """Host time on the pass's critical path: ``host_ms_per_request`` x the requests of the
        busiest rank (each attention rank's scheduler handles its own requests)."""
        per_request = self.plan.scheduler.host_ms_per_request
        if per_request <= 0.0:
            return 0.0
        most = max(work.num_prefill_requests + work.num_decode_requests for work in works)
        return per_request * most

    def take_loads_started(self) -> list[SimRequest]:
        """Requests whose prompt KV this worker started pulling in the last plan."""
        started: list[SimRequest] = []
        for rank in self.ranks:
            if rank.loads_started:
                started.extend(rank.loads_started)
                rank.loads_started = []
        return started

    def take_finished_in_plan(self) -> list[SimRequest]:
        """Requests the last plan finished without a pass."""
        finished: list[SimRequest] = []
        for rank in self.ranks:
            if rank.finished_in_plan:
                finished.extend(rank.finished_in_plan)
                rank.finished_in_plan = []
        return finished

    def complete_pass(
        self, now_ms: float, finished: list[SimRequest], handoff: list[SimRequest]
    ) -> None:
        for rank in self.ranks:
            rank.complete(now_ms, finished, handoff)
        if not self.has_work():
            self._idle()

    def _idle(self) -> None:
        """The worker has no pass to run: the scheduler's idle hook, on every rank."""
        for rank in self.ranks:
            self.scheduler.on_idle(rank)

    def peak_used_blocks(self) -> list[int]:
        return [rank.pool.peak_used_pages for rank in self.ranks]


def _describe(works: list[RankWork]) -> str:
    return "; ".join(
        f"rank {index}: {work.num_prefill_requests} prefill requests / "
        f"{work.sum_prefill_tokens} tokens, {work.num_decode_requests} decode requests / "
        f"{work.sum_decode_kv_tokens} past KV tokens"
        for index, work in enumerate(works)
    )
