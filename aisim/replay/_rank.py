"""One attention-DP rank of a worker: its queues, KV pool and the mechanics both schedulers share
(admission with prefix hits, preemption with recompute, applying a finished pass)."""

from __future__ import annotations

from collections import deque

from aisim.replay._kv_pool import KvHolding, KvPool
from aisim.replay._plan import ROLE_PREFILL, WorkerPlan
from aisim.replay._pricing import RankWork
from aisim.replay._recorder import Recorder
from aisim.replay._request import (
    PHASE_DECODE,
    PHASE_DONE,
    PHASE_PREFILL,
    PHASE_TRANSFER,
    PHASE_WAITING,
    WORK_DECODE,
    WORK_FIRST_TOKEN,
    WORK_NONE,
    WORK_PREFILL,
    SimRequest,
)
from aisim.replay._rng import RandomStream
from aisim.replay._sd_policy import AdaptivePolicy
from aisim.replay._sd_round import (
    finish_decode_round,
    is_undrafted,
    match_units,
    materialize_units,
    register_full_units,
    round_width,
    sample_accepted,
)


class RankRules:
    """How one backend runs the mechanics every rank shares (set by its ``Scheduler``).

    ``clamp_rounds``: a decode round's width is clamped to the request's remaining output
    (SGLang); vLLM verifies every draft, even in a request's last round (``_sd_round``).
    ``check_fit_before_touch``: an admission checks the free blocks before touching its prefix
    hits, so a request that does not fit leaves them where they are in the LRU (vLLM); SGLang's
    prefix match refreshes them even when the admission then fails.
    ``prefill_sends_first_token``: a prefill pool samples the first output token and sends it
    with the KV (SGLang's prefill server); vLLM's proxy discards the prefill server's token and
    the decode worker computes it again.
    """

    def __init__(
        self, clamp_rounds: bool, check_fit_before_touch: bool, prefill_sends_first_token: bool
    ) -> None:
        self.clamp_rounds = clamp_rounds
        self.check_fit_before_touch = check_fit_before_touch
        self.prefill_sends_first_token = prefill_sends_first_token


class RankState:
    """Queues and pool of one rank. ``running`` is in admission order (the first is the last to
    be preempted); ``batch`` is the work of the pass in flight."""

    def __init__(
        self,
        rank: int,
        worker: WorkerPlan,
        recorder: Recorder,
        lists: bool,
        rules: RankRules,
        fast: bool = True,
        worker_index: int = 0,
    ) -> None:
        self.rank = rank
        self.is_prefill_pool = worker.role == ROLE_PREFILL
        kv = worker.kv
        self.pool = KvPool(
            kv.blocks, kv.block_size, kv.prefix_unit_tokens, kv.prefix_caching, lazy_units=fast
        )
        self.scheduler = worker.scheduler
        self.speculation = worker.speculation
        # KV slots reserved per running request per step beyond its scheduled tokens.
        self.lookahead = worker.speculation.lookahead_tokens
        # Drafts of this rank's next rounds (docs/speculation.md, "Dynamic draft lengths in
        # replay"): the chain, or what vLLM's table / SGLang's adaptive policy chose.
        self.round_drafts = worker.speculation.draft_length
        # The draft length of the pass being planned (pricing of a varying length).
        self.pass_drafts = 0
        self.policy: AdaptivePolicy | None = None
        tiers = worker.speculation.adaptive_tiers
        if tiers is not None:
            self.policy = AdaptivePolicy(
                worker.speculation.adaptive_initial,
                tiers,
                worker.speculation.adaptive_cuda_graph_bs,
            )
            self.round_drafts = self.policy.steps_for_batch(1)
        # SGLang's simulated acceptance draws one length per verify, for the whole batch: the
        # rank's own stream (negative stream numbers: request streams are 0, 1, ...).
        self.batch_rng: RandomStream | None = None
        if worker.speculation.batch_acceptance:
            stream = -1 - (worker_index * 1048576 + rank)
            self.batch_rng = RandomStream(worker.speculation.seed, stream)
        self.clamp_rounds = rules.clamp_rounds
        self.recorder = recorder
        self.lists = lists
        self.waiting: deque[SimRequest] = deque()
        self.running: list[SimRequest] = []
        self.batch: list[SimRequest] = []
        # SGLang-like state: the request whose prefill is split across passes, and the reserve
        # ratio of future output tokens used at admission.
        self.chunked: SimRequest | None = None
        self.check_before_touch = rules.check_fit_before_touch
        self.prefill_sends_first_token = rules.prefill_sends_first_token
        self.new_token_ratio = worker.scheduler.init_new_token_ratio
        # Set by the worker before each plan: the time of the pass being planned.
        self.now_ms = 0.0
        # Filled while planning, drained by the engine: transfers this rank started (vLLM's
        # decode pool pulls prompt KV) and requests that finished without a pass.
        self.loads_started: list[SimRequest] = []
        self.finished_in_plan: list[SimRequest] = []
        # Set by the worker before each plan: no new request is admitted in this pass
        # (TensorRT-LLM's attention-DP balance holds context requests back).
        self.hold_admission = False

    @property
    def load(self) -> int:
        return len(self.waiting) + len(self.running)

    def has_work(self) -> bool:
        return bool(self.waiting) or bool(self.running)

    def enqueue(self, request: SimRequest) -> None:
        request.phase = PHASE_WAITING
        request.rank = self.rank
        self.waiting.append(request)

    def width(self, request: SimRequest) -> int:
        """Verification slots of ``request``'s next decode round (vLLM: every draft, even in a
        request's last round; SGLang-like: clamped to the remaining output)."""
        return round_width(self.speculation, request, self.clamp_rounds, self.round_drafts)

    # -- admission and eviction --------------------------------------------------------------

    def admit(self, request: SimRequest, token_budget: int, chunked: bool) -> int:
        """Try to start ``request`` (head of ``waiting``) with at most ``token_budget`` new
        tokens; returns the tokens scheduled (0: not admitted, and it holds no KV).

        A fresh or preempted request prefills its known tokens minus prefix-cache hits (at least
        one token is always computed); a request whose prompt KV arrived from a prefill pool
        starts decoding at once.
        """
        pool = self.pool
        known = request.known_tokens
        present = request.prompt_tokens if request.kv_transferred else 0
        hits = match_units(pool, request, (known - 1) // pool.unit_tokens)
        hit_tokens = len(hits) * pool.unit_tokens
        computed = hit_tokens if hit_tokens > present else present
        if request.kv_transferred:
            tokens = self.width(request)
            if tokens > token_budget:
                return 0
        else:
            tokens = known - computed
            if tokens > token_budget:
                if not chunked:
                    return 0
                tokens = token_budget
        if tokens <= 0:
            return 0
        if self.check_before_touch and not pool.can_start(hits, computed + tokens):
            # vLLM: a request that does not fit leaves its prefix hits where they are in LRU.
            return 0
        pool.acquire(request.kv, hits)
        if not pool.grow(request.kv, computed + tokens):
            # SGLang: matching a prefix refreshes it even when the admission then fails.
            pool.release(request.kv)
            return 0
        if hit_tokens > present:
            request.cached_tokens += hit_tokens - present
        request.computed = computed
        if request.kv_transferred:
            # SGLang's decode server streams the prefill server's first token when it takes the
            # request in (the prebuilt batch runs no forward pass), then decodes it.
            self.recorder.reveal_first(request, self.now_ms)
            request.phase = PHASE_DECODE
            request.kv_transferred = False
            self.plan_decode(request, tokens)
        else:
            request.phase = PHASE_PREFILL
            request.prefill_target = known
            self.plan_prefill(request, tokens)
        self.running.append(request)
        return tokens

    def start_kv_load(self, request: SimRequest) -> bool:
        """vLLM decode pool: allocate the blocks of a handed-off request's prompt (its local
        prefix hits first, no lookahead: ``effective_lookahead_tokens`` is 0 while
        ``num_computed_tokens`` is 0) so the KV connector can pull the rest into them; False
        (nothing taken) when they do not fit. The request stays queued until the load ends."""
        pool = self.pool
        prompt = request.prompt_tokens
        hits = match_units(pool, request, (prompt - 1) // pool.unit_tokens)
        if not pool.can_start(hits, prompt):
            return False
        pool.acquire(request.kv, hits)
        grown = pool.grow(request.kv, prompt)
        assert grown, "can_start promised the prompt's blocks"
        hit_tokens = len(hits) * pool.unit_tokens
        request.cached_tokens += hit_tokens
        request.computed = hit_tokens
        request.transfer_tokens = prompt - hit_tokens
        request.kv_remote = False
        request.kv_loading = True
        self.loads_started.append(request)
        return True

    def kv_landed(self, request: SimRequest) -> None:
        """vLLM decode pool: the pulled KV has arrived. As ``_update_waiting_for_remote_kv``
        does, the request counts every prompt token but the last as computed (so the decode
        worker computes the last one and samples the first output token itself) and caches
        its full blocks."""
        request.kv_loading = False
        request.kv_transferred = True
        request.computed = request.prompt_tokens - 1
        register_full_units(self.pool, request)

    def admit_landed(self, request: SimRequest, with_lookahead: bool) -> int:
        """vLLM decode pool: schedule the last prompt token of a request whose KV arrived; its
        blocks grow by the token plus the SD lookahead (``num_computed_tokens`` > 0 now). The
        step has one query token, so it is priced as decode work. Returns the tokens scheduled
        (0: it waits, keeping its blocks)."""
        lookahead = self.lookahead if with_lookahead else 0
        if not self.pool.grow(request.kv, request.computed + 1 + lookahead):
            return 0
        request.kv_transferred = False
        request.phase = PHASE_PREFILL
        request.prefill_target = request.known_tokens
        request.work = WORK_FIRST_TOKEN
        request.work_tokens = 1
        request.work_past_kv = request.computed
        self.batch.append(request)
        self.running.append(request)
        return 1

    def drop_landed_kv(self) -> bool:
        """Liveness, vLLM decode pool: the last running request would have to preempt itself
        while queued requests hold pulled KV that nothing will free (vLLM stalls there). Free
        the KV of the latest queued request whose KV has landed; it recomputes its prompt
        locally, as vLLM does after a failed load with the ``recompute`` policy. Returns
        whether one was found."""
        for index in range(len(self.waiting) - 1, -1, -1):
            request = self.waiting[index]
            if request.kv_transferred:
                materialize_units(self.pool, request)
                self.pool.release(request.kv)
                request.kv_transferred = False
                request.computed = 0
                return True
        return False

    def finish_on_arrival(self, request: SimRequest) -> None:
        """SGLang decode pool: a one-token request's only token was sampled by the prefill
        pool; the decode server streams it and finishes the request without a pass."""
        self.recorder.reveal_first(request, self.now_ms)
        request.kv_transferred = False
        request.phase = PHASE_DONE
        self.recorder.completed += 1
        self.finished_in_plan.append(request)

    def preempt(self, request: SimRequest, by_sd_reservation: bool) -> None:
        """Free all of ``request``'s KV and queue it first for recompute (vLLM preemption,
        SGLang retraction). ``by_sd_reservation``: a plain decode step would not have needed
        it (counted separately)."""
        materialize_units(self.pool, request)
        self.pool.release(request.kv)
        request.computed = 0
        request.prefill_target = 0
        request.work = WORK_NONE
        request.phase = PHASE_WAITING
        request.preemptions += 1
        self.recorder.preemptions += 1
        if by_sd_reservation:
            self.recorder.sd_preemptions += 1
        self.running.remove(request)
        if self.chunked is request:
            self.chunked = None
        self.waiting.appendleft(request)

    def plan_prefill(self, request: SimRequest, tokens: int) -> None:
        request.work = WORK_PREFILL
        request.work_tokens = tokens
        request.work_past_kv = request.computed
        self.batch.append(request)

    def plan_decode(self, request: SimRequest, width: int) -> None:
        request.work = WORK_DECODE
        request.work_tokens = width
        request.work_past_kv = request.computed
        self.batch.append(request)

    # -- the pass ------------------------------------------------------------------------------

    def work(self) -> RankWork:
        """The metrics of this rank's planned pass (call before ``next_draft_length``)."""
        work = RankWork()
        self.pass_drafts = 0
        for request in self.batch:
            if request.work == WORK_PREFILL:
                work.num_prefill_requests += 1
                work.sum_prefill_tokens += request.work_tokens
                if self.lists:
                    work.prefill_past_kv.append(request.work_past_kv)
                    work.prefill_extend.append(request.work_tokens)
            else:
                work.num_decode_requests += 1
                work.sum_decode_kv_tokens += request.work_past_kv
                if request.work_tokens == 1 and is_undrafted(
                    self.speculation, request, self.round_drafts
                ):
                    work.num_undrafted_decode_requests += 1
                elif request.work_tokens - 1 > self.pass_drafts:
                    self.pass_drafts = request.work_tokens - 1
                if self.lists:
                    work.decode_past_kv.append(request.work_past_kv)
        return work

    def next_draft_length(self) -> None:
        """vLLM's dynamic speculation length, after planning a pass: the drafter proposes
        ``lookup[number of requests scheduled]`` tokens, which the next pass verifies
        (``Scheduler.schedule``: ``dynamic_sd_lookup[len(num_scheduled_tokens)]``)."""
        lookup = self.speculation.draft_lengths
        if lookup is None or not self.batch:
            return
        scheduled = len(self.batch)
        self.round_drafts = lookup[scheduled if scheduled < len(lookup) else len(lookup) - 1]

    def complete(
        self, now_ms: float, finished: list[SimRequest], handoff: list[SimRequest]
    ) -> None:
        """Apply the pass that ends at ``now_ms``; completed requests go to ``finished``, those a
        prefill pool hands to the decode pool go to ``handoff`` (their KV still held)."""
        pool = self.pool
        left = False
        policy = self.policy
        verified: list[int] = []
        batch_accepted = self._batch_accepted()
        for request in self.batch:
            if request.work == WORK_PREFILL or request.work == WORK_FIRST_TOKEN:
                request.computed += request.work_tokens
                register_full_units(pool, request)
                prefilled = request.computed >= request.prefill_target
                if prefilled and self.is_prefill_pool:
                    # Clients receive tokens from the decode pool only (``RankRules``).
                    if self.prefill_sends_first_token:
                        self.recorder.emit_unseen(request)
                    request.phase = PHASE_TRANSFER
                    handoff.append(request)
                    left = True
                elif prefilled:
                    self.recorder.emit(request, 1, now_ms)
                    if request.emitted >= request.output_tokens:
                        self._finish(request, finished)
                        left = True
                    else:
                        request.phase = PHASE_DECODE
            elif request.work == WORK_DECODE:
                before = request.accepted_drafts
                finish_decode_round(
                    pool, self.speculation, request, self.recorder, now_ms, batch_accepted
                )
                if policy is not None:
                    verified.append(request.accepted_drafts - before)
                if request.emitted >= request.output_tokens:
                    self._finish(request, finished)
                    left = True
            request.work = WORK_NONE
        if policy is not None and verified:
            # SGLang: on_verify_complete(num_correct_drafts_per_req, batch_size) per decode pass.
            policy.on_verify_complete(verified, len(verified))
        self.batch = []
        if left:
            self.running = [
                request
                for request in self.running
                if request.phase == PHASE_PREFILL or request.phase == PHASE_DECODE
            ]

    def _batch_accepted(self) -> int:
        """SGLang's simulated acceptance (``eagle_utils.generate_simulated_accept_index``): one
        accept length for the whole verify batch, every request accepting ``L - 1`` drafts
        (each capped by its own output left); -1 when acceptance is per request. Drawn as the
        chain of the deepest round in the pass: the draw capped at a shallower round's drafts
        is the engine's length clamped to that round's ``steps + 1``."""
        rng = self.batch_rng
        if rng is None:
            return -1
        deepest = 0
        for request in self.batch:
            if request.work == WORK_DECODE and request.work_tokens - 1 > deepest:
                deepest = request.work_tokens - 1
        if deepest == 0:
            return -1
        return sample_accepted(rng, self.speculation.acceptance_thresholds, deepest)

    def release_transferred(self, request: SimRequest) -> None:
        """The KV of a handed-off request reached the decode pool: free it here."""
        self.pool.release(request.source_kv)
        request.source_kv = KvHolding()

    def _finish(self, request: SimRequest, finished: list[SimRequest]) -> None:
        request.phase = PHASE_DONE
        self.pool.release(request.kv)
        if self.chunked is request:
            self.chunked = None
        self.recorder.completed += 1
        finished.append(request)
