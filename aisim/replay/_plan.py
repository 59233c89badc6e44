"""The validated, plain inputs of one replay: requests, workers and their policies.

Built by the config edge (``aisim.config.replay``) after every field is checked, so the core can
trust them. Lengths are tokens, times are milliseconds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Final

from aisim.replay._pricing import PassPricer
from aisim.speculation import AdaptiveTier

ROLE_AGGREGATED: Final = "aggregated"
ROLE_PREFILL: Final = "prefill"
ROLE_DECODE: Final = "decode"

SCHEDULER_VLLM: Final = "vllm"
SCHEDULER_SGLANG: Final = "sglang"


class RequestSpec:
    """One request of the traffic.

    ``arrival_ms`` is the release time of a request without dependencies; a request with
    ``wait_for`` (indices of earlier requests) arrives ``delay_ms`` after the last of them
    completes. ``hash_ids`` name the content of the prompt's blocks of ``hash_block_tokens``
    tokens (requests sharing a prefix of ids share those KV blocks); empty means unique content.
    ``private_from_block``: the first block whose id occurs nowhere else in the traffic (from it
    on the prompt's KV is this request's alone, see ``aisim/traffic/_hash_blocks.py``), or -1
    when not known (then every hashed block may be shared).
    """

    def __init__(
        self,
        index: int,
        request_id: str,
        prompt_tokens: int,
        output_tokens: int,
        arrival_ms: float,
        wait_for: list[int],
        delay_ms: float,
        hash_ids: list[int],
        hash_block_tokens: int,
    ) -> None:
        self.index = index
        self.request_id = request_id
        self.prompt_tokens = prompt_tokens
        self.output_tokens = output_tokens
        self.arrival_ms = arrival_ms
        self.wait_for = wait_for
        self.delay_ms = delay_ms
        self.hash_ids = hash_ids
        self.hash_block_tokens = hash_block_tokens
        self.private_from_block = -1


class RequestStream:
    """A traffic read lazily, one validated request at a time (a trace file, synthetic
    traffic): ``requests()`` starts a fresh pass over it (each simulation of a plan reads it
    again), yielding ``count`` requests in traffic order (``index`` 0, 1, ...) whose arrivals
    never decrease. With ``closed_loop_users`` = 0 none waits for another; with U > 0 (a
    ``concurrency`` load) the first U wait for nothing and request i >= U waits for request
    i - U alone (``wait_for``, ``delay_ms``). The edge checked every request in a first pass,
    so the simulation holds only the requests in flight plus those read ahead (the next
    arrival; in a closed loop, the next request of each user), never the whole traffic.
    With ``closed_loop_slots`` = S > 0 (a ``concurrency`` load with ``queue: shared``) no
    request waits for another: the simulation keeps S requests in flight, each completion
    releasing the next request in traffic order ``slot_think_ms`` later (its arrival is set
    then)."""

    def __init__(
        self,
        opener: Callable[[], Iterator[RequestSpec]],
        count: int,
        closed_loop_users: int = 0,
        closed_loop_slots: int = 0,
        slot_think_ms: float = 0.0,
    ) -> None:
        self.opener = opener
        self.count = count
        self.closed_loop_users = closed_loop_users
        self.closed_loop_slots = closed_loop_slots
        self.slot_think_ms = slot_think_ms

    def requests(self) -> Iterator[RequestSpec]:
        return self.opener()


@dataclass(frozen=True, eq=False)
class SpeculationPlan:
    """Replay's view of a resolved speculation config: a chain of ``draft_length`` drafts.

    ``verify_width`` (target query tokens per request per round, ``draft_length + 1``) and the
    accepted depth are kept apart: KV reservation and pricing use the width, progress uses the
    sampled acceptance. ``conditional_rates[i]`` is P(draft i+1 accepted | drafts 1..i accepted).
    ``lookahead_tokens`` are the KV slots the engine's scheduler reserves for every running
    request on every step beyond the tokens it schedules (``lookahead_tokens_for``).
    ``undrafted_rounds``: the first decode rounds of every request in which the drafter
    proposes nothing (``ngram``: no n-gram of the context matches yet); such a round schedules
    one token, accepts nothing, and a pass whose decode rounds are all undrafted is priced as a
    plain decode step.

    Per-round draft lengths (docs/speculation.md, "Dynamic draft lengths in replay"):
    ``draft_lengths`` is vLLM's dense batch-size table (``draft_lengths[b]``: the drafts the
    next step verifies after a step that scheduled ``b`` requests); ``adaptive_tiers`` SGLang's
    adaptive policy starting at ``adaptive_initial`` steps. ``draft_length`` stays the deepest
    chain (KV reservation, acceptance rates). ``trace_accepted`` / ``trace_drafted``: measured
    accepted (and drafted) drafts per request id and decode round, replayed instead of sampled.
    ``batch_acceptance``: one accepted count per decode pass, shared by every request in it
    (SGLang's simulated acceptance, ``generate_simulated_accept_index``), drawn from the rank's
    own stream instead of each request's.
    """

    kind: str
    draft_length: int
    verify_width: int
    conditional_rates: list[float]
    seed: int
    lookahead_tokens: int
    undrafted_rounds: int = 0
    draft_lengths: list[int] | None = None
    adaptive_tiers: list[AdaptiveTier] | None = None
    adaptive_initial: int = 0
    adaptive_cuda_graph_bs: list[int] | None = None
    trace_accepted: dict[str, list[int]] | None = None
    trace_drafted: dict[str, list[int]] | None = None
    batch_acceptance: bool = False
    acceptance_thresholds: list[int] = field(init=False)

    def __post_init__(self) -> None:
        # P(accept) = threshold / 2**32: rates are quantized to 2**-32 so one 32-bit draw decides.
        thresholds = [rate_threshold(rate) for rate in self.conditional_rates]
        object.__setattr__(self, "acceptance_thresholds", thresholds)

    @property
    def enabled(self) -> bool:
        return self.draft_length > 0

    @property
    def varies(self) -> bool:
        """Whether the draft length changes from round to round (a batch-size table, an
        adaptive policy, or a trace with drafted counts)."""
        return (
            self.draft_lengths is not None
            or self.adaptive_tiers is not None
            or self.trace_drafted is not None
        )


def rate_threshold(rate: float) -> int:
    """``round(rate * 2**32)`` clamped to [0, 2**32]: 1.0 always accepts, 0.0 never does."""
    scaled = int(rate * 4294967296.0 + 0.5)
    if scaled < 0:
        return 0
    return scaled if scaled < 4294967296 else 4294967296


def no_speculation() -> SpeculationPlan:
    """Plain decoding: one query token per request per step."""
    return SpeculationPlan("none", 0, 1, [], 0, 0)


def lookahead_tokens_for(scheduler_kind: str, kind: str, draft_length: int) -> int:
    """KV slots reserved per running request per step on top of the scheduled tokens.

    vLLM V1 (``Scheduler.__init__``): ``num_lookahead_tokens = num_speculative_tokens`` when
    ``SpeculativeConfig.use_eagle()`` (eagle, eagle3, mtp, dflash, dspark) or
    ``uses_draft_model()``, else 0 (ngram); ``schedule`` passes it to every running request's
    ``allocate_slots``. SGLang (``Scheduler.decode_mem_cache_buf_multiplier``): a decode step
    checks ``speculative_num_draft_tokens + topk * num_steps`` free slots per request, the verify
    width plus ``d`` draft slots for a chain (topk 1, d steps). Plain decoding reserves none.
    """
    if draft_length <= 0:
        return 0
    if scheduler_kind == SCHEDULER_VLLM and kind in ("ngram", "suffix", "medusa", "mlp_speculator"):
        # Neither use_eagle() nor uses_draft_model(): no lookahead slots.
        return 0
    return draft_length


@dataclass(frozen=True, eq=False)
class SchedulerPlan:
    """Batching policy of one worker's ranks (``kind`` is ``vllm`` or ``sglang``).

    vLLM-like: ``token_budget`` = max batched tokens per pass, ``max_sequences`` running cap,
    ``chunked_prefill``. SGLang-like: ``token_budget`` = chunked prefill size per prefill pass,
    ``max_sequences`` = max running requests, and the new-token-ratio admission reserve;
    ``recv_interval``: SGLang's ``--scheduler-recv-interval`` (1: new requests are taken in
    before every pass). ``adp_balance`` (TensorRT-LLM's ``attention_dp_config``): with several
    attention ranks, new context requests wait until every rank has one, at most
    ``adp_timeout_iters`` passes, then ``adp_batching_wait_iters`` more while every rank decodes.
    ``host_ms_per_request``: host work per request of a pass that runs between GPU passes instead
    of behind them (SGLang without its overlap scheduler, ``Scheduler.event_loop_normal``): a pass
    lasts that much longer per request of its busiest rank. ``host_overlapped``: that host work
    runs beside the GPU's pass (SGLang's overlap scheduler, ``Scheduler.event_loop_overlap``,
    prepares the next batch and processes the last one's results while the GPU runs), so a pass
    lasts the longer of the two.
    """

    kind: str
    token_budget: int
    max_sequences: int
    chunked_prefill: bool
    init_new_token_ratio: float
    min_new_token_ratio: float
    new_token_ratio_decay: float
    recv_interval: int = 1
    adp_balance: bool = False
    adp_timeout_iters: int = 50
    adp_batching_wait_iters: int = 10
    host_ms_per_request: float = 0.0
    host_overlapped: bool = False


@dataclass(frozen=True, eq=False)
class KvPlan:
    """Paged KV pool of one rank: ``blocks`` pages of ``block_size`` tokens; prefix caching
    shares whole units of ``prefix_unit_tokens`` (a multiple of ``block_size``)."""

    blocks: int
    block_size: int
    prefix_unit_tokens: int
    prefix_caching: bool


@dataclass(frozen=True, eq=False)
class WorkerPlan:
    """One worker (``role``): ``attention_data`` ranks in lockstep, each a group of ``tensor``
    GPUs with its own KV pool."""

    role: str
    path: str
    attention_data: int
    tensor: int
    scheduler: SchedulerPlan
    kv: KvPlan
    pricer: PassPricer
    speculation: SpeculationPlan


@dataclass(frozen=True, eq=False)
class ReplayPlan:
    """Everything a simulation needs. ``workers`` is ``[aggregated]`` or ``[prefill, decode]``.

    ``transfer_ms_per_token`` and ``transfer_latency_ms`` price the P/D KV hand-off;
    ``horizon_ms < 0`` means run to completion; ``max_events`` bounds the event loop;
    ``per_token`` asks for every emission event (an output option: it never changes results).
    The traffic is ``requests`` (held whole), or, when ``stream`` is given, read from it while
    the simulation runs (``requests`` is then empty). ``admission_ms``: a serving front end's
    cost per request before the engine sees it (``aisim.fpm.FrontEndCost.request_ms``): each
    request reaches the scheduler that long after it arrives, and its TTFT and E2E count from
    its arrival (the client's clock); that work is on the engine's core, so a request arriving
    while a pass is in flight makes the engine's next pass end ``admission_ms`` later.
    """

    requests: list[RequestSpec]
    workers: list[WorkerPlan]
    transfer_ms_per_token: float
    transfer_latency_ms: float
    horizon_ms: float
    max_events: int
    per_token: bool
    stream: RequestStream | None = None
    admission_ms: float = 0.0
