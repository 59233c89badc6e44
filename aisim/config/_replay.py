"""The replay config edge (docs/design.md#replay): validate the YAML/JSON mapping once and build the core's
plain ``ReplayPlan``. Not compiled: it reads files and talks to the catalogue and estimators.

Every error is a ``ConfigError`` naming the full field path (``engine.workers.decode.kv_cache.
capacity.blocks``), the speculation kind where it matters, and what is allowed.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from aisim._fields import join_path
from aisim.catalogue import GpuSpec, ModelSpec
from aisim.config._catalogue import check_tensor_parallel, get_gpu, get_model
from aisim.config._edge import check_input, validate
from aisim.config._estimator import WorkerDefaults, worker_estimator
from aisim.config._replay_capacity import Hardware, kv_cache_plan, transfer_price
from aisim.config._replay_models import (
    Engine,
    EstimatorTiming,
    FixedTiming,
    ReplayFile,
    SglangScheduler,
    Simulation,
    VllmScheduler,
    Worker,
)
from aisim.config._speculation_models import SpeculationConfig
from aisim.config._traffic import build_traffic
from aisim.errors import ConfigError
from aisim.replay import (
    ROLE_AGGREGATED,
    ROLE_DECODE,
    ROLE_PREFILL,
    SCHEDULER_SGLANG,
    SCHEDULER_VLLM,
    PassPricer,
    ReplayPlan,
    RequestSpec,
    RequestStream,
    SchedulerPlan,
    SpeculationPlan,
    WorkerPlan,
    check_request_fits,
    check_requests_fit,
    lookahead_tokens_for,
    no_speculation,
)
from aisim.speculation import ResolvedSpeculation
from aisim.traffic import HashIdCounts, TrafficStream, count_hash_ids, mark_private_blocks

#: Most requests of a fixed-content traffic ``_scan`` keeps for the simulation's first pass (a
#: larger one is read again, so a replay holds O(in-flight) requests; sweeps replay small
#: traces, as the trace cache's ``STREAM_ROWS`` assumes).
HELD_REQUESTS: Final = 20_000


class EngineContext(Hardware):
    """What every worker's reading needs from the validated ``engine`` block: its model and
    GPU looked up once (a relative config path taken from the config file's folder)."""

    def __init__(self, block: Engine, base_dir: Path | None = None) -> None:
        model: ModelSpec | None = None
        if block.model is not None:
            model = get_model(block.model, "engine.model", base_dir)
        gpu: GpuSpec | None = None
        if block.hardware is not None:
            gpu = get_gpu(block.hardware, "engine.hardware", base_dir)
        super().__init__(block.backend, model, gpu)
        self.block = block
        #: Where relative paths in the config (``acceptance_from.path``) are taken from.
        self.base_dir = base_dir


def build_plan(config: object, base_dir: Path | None = None) -> tuple[ReplayPlan, dict[str, Any]]:
    """Validate a replay config; returns the plan and a JSON-ready description of the resolved
    configuration (capacities, pricing, speculation) for the summary."""
    root = validate(ReplayFile, config, "")
    context = EngineContext(root.engine, base_dir)
    traffic = build_traffic(root.traffic, base_dir)
    given = context.block.workers
    roles = sorted(given.model_fields_set & {ROLE_AGGREGATED, ROLE_PREFILL, ROLE_DECODE})
    roles = [role for role in roles if getattr(given, role) is not None]
    if roles == [ROLE_AGGREGATED]:
        order = [ROLE_AGGREGATED]
    elif roles == [ROLE_DECODE, ROLE_PREFILL]:
        order = [ROLE_PREFILL, ROLE_DECODE]
    else:
        raise ConfigError(
            f"engine.workers: expected either aggregated, or prefill and decode; got "
            f"{', '.join(roles) or 'nothing'}"
        )
    workers: list[WorkerPlan] = []
    described: list[dict[str, Any]] = []
    for role in order:
        block = getattr(given, role)
        assert isinstance(block, Worker)
        worker, info = _worker(block, role, context)
        if not isinstance(traffic, TrafficStream):
            check_requests_fit(worker, traffic)
        workers.append(worker)
        described.append(info)
    transfer_ms_per_token, transfer_latency_ms = transfer_price(
        context.block.kv_transfer, context, workers
    )
    horizon_ms, per_token = _simulation(root.simulation)
    stream: RequestStream | None = None
    if isinstance(traffic, TrafficStream):
        requests, stream, count, total_tokens = _scan(traffic, workers)
    else:
        requests = traffic
        mark_private_blocks(requests, count_hash_ids(requests))
        count = len(requests)
        total_tokens = sum(request.prompt_tokens + request.output_tokens for request in requests)
    max_events = 20 * total_tokens + 100 * count + 10_000
    plan = ReplayPlan(
        requests,
        workers,
        transfer_ms_per_token,
        transfer_latency_ms,
        horizon_ms,
        max_events,
        per_token,
        stream,
    )
    description = {
        "backend": context.backend,
        "model": None if context.model is None else context.model.name,
        "hardware": None if context.gpu is None else context.gpu.name,
        "workers": described,
        "kv_transfer_ms_per_token": transfer_ms_per_token if len(workers) == 2 else None,
    }
    check_input(config)
    return plan, description


def _scan(
    trace: TrafficStream, workers: list[WorkerPlan]
) -> tuple[list[RequestSpec], RequestStream | None, int, int]:
    """Pass over the streamed traffic once, checking every request (and that each fits every
    worker) before the first event, in O(1) memory: ``(requests, stream, count, total
    tokens)``. A traffic in arrival order is streamed (``requests`` empty); a trace that is not
    is held whole, so the simulation can take its arrivals in order (the summary says so:
    ``arrival_order``). A small traffic whose content cannot change (``content_fixed``: a
    sweep's pinned trace) keeps the requests of this pass, and the simulation's first pass
    takes them instead of reading them again (the same requests: the second reading would
    rebuild each from the same content)."""
    count = 0
    held: list[RequestSpec] | None = [] if trace.content_fixed else None
    total_tokens = 0
    in_order = True
    last_ms = 0.0
    hash_ids = HashIdCounts()
    for request in trace.requests():
        for worker in workers:
            check_request_fits(worker, request)
        hash_ids.add(request.hash_ids)
        if held is not None:
            held.append(request)
            if len(held) > HELD_REQUESTS:
                held = None
        count += 1
        total_tokens += request.prompt_tokens + request.output_tokens
        if request.arrival_ms < last_ms:
            in_order = False
        last_ms = request.arrival_ms
    if count == 0:
        raise ConfigError(f"{trace.source_path}: the traffic has no requests")
    hash_ids.close()
    # The second reading must see this content: the hash-id counts describe it.
    digest = trace.digest
    if not in_order:
        held = list(trace.requests(digest))
        mark_private_blocks(held, hash_ids)
        return held, None, count, total_tokens

    def reread() -> Iterator[RequestSpec]:
        """The traffic again; a file that changed since ``_scan`` read it is an error. The
        first pass takes the requests ``_scan`` kept, if it kept them."""
        nonlocal held
        if held is not None:
            kept, held = held, None
            for request in kept:
                request.private_from_block = hash_ids.private_from(request.hash_ids)
                yield request
            return
        previous_ms = 0.0
        for request in trace.requests(digest):
            if request.index >= count or request.arrival_ms < previous_ms:
                raise ConfigError(
                    trace.changed_error(f"request {request.index} differs from the first reading")
                )
            previous_ms = request.arrival_ms
            request.private_from_block = hash_ids.private_from(request.hash_ids)
            yield request

    stream = RequestStream(
        reread, count, trace.closed_loop_users, trace.closed_loop_slots, trace.clock.think_ms
    )
    return [], stream, count, total_tokens


def _worker(block: Worker, role: str, context: EngineContext) -> tuple[WorkerPlan, dict[str, Any]]:
    path = f"engine.workers.{role}"
    tensor = block.parallelism.tensor
    if context.model is not None:
        check_tensor_parallel(tensor, context.model, f"{path}.parallelism.tensor")
    ranks = block.parallelism.attention_data
    resolved, speculation = _speculation(block, role, tensor, context, path)
    if speculation.adaptive_tiers is not None and ranks > 1:
        # SGLang's adaptive_unsupported_reason: tier decisions are not synchronized across ranks.
        raise ConfigError(
            f"{path}.parallelism.attention_data: SGLang does not support adaptive speculation "
            f"with attention DP (its tier decisions are not synchronized across DP ranks), got "
            f"{ranks} ranks"
        )
    scheduler = _scheduler(block.scheduler, context.backend)
    if speculation.verify_width > scheduler.token_budget and scheduler.kind == SCHEDULER_VLLM:
        raise ConfigError(
            f"{path}.scheduler.max_batched_tokens: {scheduler.token_budget} cannot hold one "
            f"{speculation.kind} round of verify width {speculation.verify_width}"
        )
    kv = kv_cache_plan(block.kv_cache, context, tensor, speculation, path)
    pricer = _timing(block.timing, context, role, tensor, resolved, speculation, path)
    worker = WorkerPlan(role, path, ranks, tensor, scheduler, kv, pricer, speculation)
    info = {
        "role": role,
        "attention_data": ranks,
        "tensor": tensor,
        "scheduler": scheduler.kind,
        "kv_capacity_blocks": kv.blocks,
        "block_size": kv.block_size,
        "timing": pricer.describe(),
        "speculation": speculation.kind,
        "draft_length": speculation.draft_length,
        "lookahead_tokens": speculation.lookahead_tokens,
    }
    source = None if resolved is None else resolved.acceptance_source
    if source is not None and speculation.enabled:
        info["acceptance_from"] = source
    if resolved is not None and speculation.enabled:
        # Per-round draft lengths (docs/speculation.md, "Dynamic draft lengths in replay").
        if resolved.draft_length_schedule is not None:
            info["draft_length_schedule"] = resolved.draft_length_schedule
        if resolved.adaptive is not None:
            info["adaptive"] = resolved.adaptive
    return worker, info


def _speculation(
    block: Worker, role: str, tensor: int, context: EngineContext, path: str
) -> tuple[ResolvedSpeculation | None, SpeculationPlan]:
    """Resolve the worker's speculation: its own block, else the engine's (with the legacy
    ``engine.nextn``/``nextn_accepted`` folded in), resolved once for every worker that shares
    it. Prefill pools never speculate: a prefill worker's own block is still resolved (its
    errors reported), the engine's is not resolved for it."""
    from aisim.config._speculation import resolve_speculation

    if block.speculation is not None:
        resolved = resolve_speculation(
            block.speculation,
            model=context.model,
            backend=context.backend,
            role=role,
            path=join_path(path, "speculation"),
            tensor_parallel=tensor,
            base_dir=context.base_dir,
        )
    elif role == ROLE_PREFILL:
        return None, no_speculation()
    else:
        resolved = _engine_speculation(context, role, tensor)
    spec_path = resolved.path
    if not resolved.enabled or role == ROLE_PREFILL:
        return resolved, no_speculation()
    from aisim.config._speculation_replay import replay_depth

    depth = replay_depth(resolved, context.backend, spec_path)
    if resolved.acceptance is None:
        raise ConfigError(
            f"{spec_path}: kind {resolved.kind}: replay needs an acceptance input (one of "
            "expected_accepted_tokens, acceptance_rates, unconditional_acceptance_rates, "
            "acceptance_length, acceptance_rate, acceptance_from)"
        )
    rates = [float(rate) for rate in resolved.acceptance.conditional_rates]
    seed = 0 if resolved.seed is None else int(resolved.seed)
    lookahead = lookahead_tokens_for(context.backend, resolved.kind, depth)
    if resolved.is_tree:
        # SGLang's decode_mem_cache_buf_multiplier: the verify width plus topk x steps draft
        # slots (every candidate a draft step writes).
        lookahead = int(resolved.num_draft_tokens)
    from aisim.config._speculation_replay import varying_lengths

    varying = varying_lengths(resolved, depth, spec_path)
    plan = SpeculationPlan(
        resolved.kind,
        depth,
        int(resolved.verify_width),
        rates,
        seed,
        lookahead,
        int(resolved.undrafted_rounds),
        varying.draft_lengths,
        varying.adaptive_tiers,
        varying.adaptive_initial,
        varying.adaptive_cuda_graph_bs,
        varying.trace_accepted,
        varying.trace_drafted,
        _simulated_per_batch(resolved),
    )
    return resolved, plan


def _engine_speculation(context: EngineContext, role: str, tensor: int) -> ResolvedSpeculation:
    """The engine's speculation block (legacy ``nextn``/``nextn_accepted`` folded in) resolved
    for the (one) speculating worker, of ``role`` and ``tensor`` parallelism."""
    from aisim.config._speculation import resolve_speculation

    engine = context.block
    legacy = {key: getattr(engine, key) for key in ("nextn", "nextn_accepted")}
    legacy = {key: value for key, value in legacy.items() if key in engine.model_fields_set}
    block: SpeculationConfig | None = engine.speculation
    spec_path = "engine.speculation"
    if legacy:
        if block is None:
            block, spec_path = SpeculationConfig().model_copy(update=legacy), "engine"
        else:
            block = block.model_copy(update=legacy)
    return resolve_speculation(
        block,
        model=context.model,
        backend=context.backend,
        role=role,
        path=spec_path,
        tensor_parallel=tensor,
        base_dir=context.base_dir,
    )


def _simulated_per_batch(resolved: ResolvedSpeculation) -> bool:
    """SGLang's simulated acceptance draws one length per verify batch, not per request."""
    source = resolved.acceptance_source
    return source is not None and source.get("format") == "sglang-simulated"


def _scheduler(block: VllmScheduler | SglangScheduler | None, backend: str) -> SchedulerPlan:
    """The worker's validated scheduler block (the engine's backend's model; absent: every
    default)."""
    if block is None:
        block = VllmScheduler() if backend == SCHEDULER_VLLM else SglangScheduler()
    if isinstance(block, VllmScheduler):
        return SchedulerPlan(
            SCHEDULER_VLLM,
            block.max_batched_tokens,
            block.max_sequences,
            block.chunked_prefill,
            0.0,
            0.0,
            0.0,
            1,
            block.attention_dp_enable_balance,
            block.attention_dp_time_out_iters,
            block.attention_dp_batching_wait_iters,
        )
    return SchedulerPlan(
        SCHEDULER_SGLANG,
        block.chunked_prefill_size,
        block.max_running_requests,
        block.chunked_prefill,
        block.init_new_token_ratio,
        block.min_new_token_ratio,
        block.new_token_ratio_decay,
        block.scheduler_recv_interval,
        host_ms_per_request=block.host_us_per_request / 1000.0,
        host_overlapped=block.host_overlapped,
    )


def _timing(
    block: FixedTiming | EstimatorTiming | None,
    context: EngineContext,
    role: str,
    tensor: int,
    resolved: ResolvedSpeculation | None,
    speculation: SpeculationPlan,
    path: str,
) -> PassPricer:
    timing_path = join_path(path, "timing")
    if isinstance(block, FixedTiming):
        return PassPricer.fixed(block.prefill_ms, block.decode_ms)
    from aisim import fpm

    # The engine's model, GPU and the worker's scheme, as the edge resolved them: handed on
    # resolved, never looked up or resolved again.
    estimator = EstimatorTiming() if block is None else block
    defaults = WorkerDefaults(
        context.model,
        context.gpu,
        context.backend,
        tensor,
        role,
        resolved if speculation.enabled else None,
        context.base_dir,
    )
    model = worker_estimator(estimator, timing_path, defaults)
    if speculation.enabled and not (
        model.prices_speculation_natively or model.supports_draft_length
    ):
        raise ConfigError(
            f"{timing_path}: kind {speculation.kind}: the selected estimator {model.name!r} can "
            "neither price SD rounds natively nor apply the STP->SD scaling rule"
        )
    if speculation.verify_width != speculation.draft_length + 1 and not (
        model.prices_speculation_natively
    ):
        raise ConfigError(
            f"{timing_path}: kind {speculation.kind}: a tree verifies {speculation.verify_width} "
            f"tokens per request for at most {speculation.draft_length} accepted; the "
            f"STP->SD scaling rule of {model.name!r} prices chains only; use fixed timing or an "
            "estimator that prices the tree natively (roofline)"
        )
    lengths = None
    if speculation.varies and model.prices_speculation_natively:
        lengths = _length_models(model, speculation)
    if lengths is None and speculation.varies and model.prices_speculation_natively:
        raise ConfigError(
            f"{timing_path}: kind {speculation.kind}: the draft length varies per round "
            f"(a batch-size table, an adaptive policy or a trace), but the estimator "
            f"{model.name!r} prices the scheme's full length natively; use fixed timing or an "
            "estimator with the STP->SD scaling rule"
        )
    plain = None
    if speculation.undrafted_rounds > 0 and model.prices_speculation_natively:
        plain = _plain_decode_model(estimator, defaults, model.name, timing_path)
    return PassPricer.from_model(
        model,
        fpm.ForwardPassMetrics,
        bool(model.prices_speculation_natively),
        plain_model=plain,
        length_models=lengths,
    )


def _length_models(model: Any, speculation: SpeculationPlan) -> list[Any] | None:
    """Suffix decoding under the roofline: one estimator per drafted count 0..K, so a pass is
    priced at its widest round (``SelectedModel.at_draft_count``); None when the estimator
    cannot be narrowed (not suffix, or not every candidate a roofline)."""
    narrow = getattr(model, "at_draft_count", None)
    if speculation.kind != "suffix" or narrow is None:
        return None
    models = [narrow(drafts) for drafts in range(speculation.draft_length + 1)]
    if any(entry is None for entry in models):
        return None
    return models


def _plain_decode_model(
    estimator: EstimatorTiming, defaults: WorkerDefaults, name: str, timing_path: str
) -> Any:
    """The worker's estimator without speculation: it prices the passes whose decode requests
    all drafted nothing (``speculation.undrafted_rounds``) when the configured one prices only
    whole SD rounds."""
    try:
        return worker_estimator(estimator, timing_path, defaults, speculating=False)
    except ConfigError as exc:
        raise ConfigError(
            f"{timing_path}: speculation.undrafted_rounds: the {name!r} estimator prices only "
            f"whole SD rounds, and no plain decode estimator is available for the rounds that "
            f"draft nothing: {exc}"
        ) from None


def _simulation(block: Simulation | None) -> tuple[float, bool]:
    """``(horizon_ms, per_token)``: ``horizon_ms`` -1 when absent (run to completion)."""
    if block is None:
        block = Simulation()
    horizon = -1.0 if block.horizon_ms is None else block.horizon_ms
    return horizon, block.per_token
