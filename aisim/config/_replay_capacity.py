"""Replay config edge, part two: KV capacity per rank, the feasibility check of every request
against every pool, and the P/D KV transfer price (docs/design.md#replay: capacity and disaggregation)."""

from __future__ import annotations

from typing import Final

from aisim._fields import join_path
from aisim.catalogue import GpuSpec, ModelSpec
from aisim.config._edge import check_mapping_at, choice, validate
from aisim.config._replay_models import DefaultCapacity, FixedCapacity, KvCache, KvTransfer
from aisim.errors import ConfigError
from aisim.replay._plan import (
    ROLE_PREFILL,
    SCHEDULER_VLLM,
    KvPlan,
    RequestSpec,
    SpeculationPlan,
    WorkerPlan,
)

CAPACITY_TYPES: Final = ("fixed", "default")
GIB: Final = 1 << 30


class Hardware:
    """The engine's model and GPU (either may be absent) and its backend."""

    def __init__(self, backend: str, model: ModelSpec | None, gpu: GpuSpec | None) -> None:
        self.backend = backend
        self.model = model
        self.gpu = gpu

    def need_model(self, why: str) -> ModelSpec:
        if self.model is None:
            raise ConfigError(f"engine.model: required for {why}")
        return self.model

    def need_gpu(self, why: str) -> GpuSpec:
        if self.gpu is None:
            raise ConfigError(f"engine.hardware: required for {why}")
        return self.gpu


def kv_cache_plan(
    raw: object, context: Hardware, tensor: int, speculation: SpeculationPlan, path: str
) -> KvPlan:
    kv_path = join_path(path, "kv_cache")
    block = validate(KvCache, {} if raw is None else raw, kv_path)
    default_block = 16 if context.backend == SCHEDULER_VLLM else 1
    block_size = default_block if block.block_size is None else block.block_size
    caching = block.prefix_caching
    default_unit = block_size if block_size >= 16 else block_size * (-(-16 // block_size))
    unit_path = join_path(kv_path, "prefix_unit_tokens")
    unit = default_unit if block.prefix_unit_tokens is None else block.prefix_unit_tokens
    if unit % block_size:
        raise ConfigError(
            f"{unit_path}: expected a multiple of block_size {block_size}, got {unit}"
        )
    capacity_path = join_path(kv_path, "capacity")
    raw_capacity = {"type": "default"} if block.capacity is None else block.capacity
    capacity = check_mapping_at(raw_capacity, capacity_path)
    kind = choice(capacity.get("type"), join_path(capacity_path, "type"), CAPACITY_TYPES)
    if kind == "fixed":
        fixed = validate(FixedCapacity, capacity, capacity_path)
        return KvPlan(fixed.blocks, block_size, unit, caching)
    default = validate(DefaultCapacity, capacity, capacity_path)
    if speculation.enabled and speculation.kind != "ngram":
        raise ConfigError(
            f"{capacity_path}: kind {speculation.kind}: speculation with a drafter needs an explicit "
            f"capacity {{type: fixed, blocks: N}} (reserve the draft weights and draft KV yourself); "
            f"type default is allowed only without speculation or with ngram"
        )
    fraction = default.memory_fraction
    reserve_gib = default.activation_reserve_gib
    model = context.need_model(f"{capacity_path} type default")
    gpu = context.need_gpu(f"{capacity_path} type default")
    free_bytes = gpu.hbm_capacity_bytes * fraction - model.weight_bytes / tensor - reserve_gib * GIB
    per_block = kv_bytes_per_token_per_gpu(model, tensor) * block_size
    blocks = int(free_bytes // per_block) if free_bytes > 0 else 0
    if blocks < 1:
        raise ConfigError(
            f"{capacity_path}: {model.name} on {gpu.name} with tensor {tensor} leaves no KV memory "
            f"({free_bytes / GIB:.2f} GiB after weights and reserve); use more tensor parallelism "
            "or a fixed capacity"
        )
    return KvPlan(blocks, block_size, unit, caching)


def kv_bytes_per_token_per_gpu(model: ModelSpec, tensor: int) -> float:
    """KV bytes one token occupies on one GPU of a TP group: KV heads are split across the group
    (replicated when there are fewer heads than GPUs); MLA's latent KV is replicated."""
    if model.uses_mla:
        return float(model.kv_bytes_per_token)
    heads_per_gpu = -(-model.num_kv_heads // tensor)
    return model.kv_bytes_per_token * heads_per_gpu / model.num_kv_heads


def check_requests_fit(worker: WorkerPlan, requests: list[RequestSpec]) -> None:
    """A request that can never fit the pool (or, without chunked prefill, the token budget)
    is an error before the first event."""
    for request in requests:
        check_request_fits(worker, request)


def check_request_fits(worker: WorkerPlan, request: RequestSpec) -> None:
    """``check_requests_fit`` for one request."""
    kv = worker.kv
    scheduler = worker.scheduler
    capacity_tokens = kv.blocks * kv.block_size
    budget_field = (
        "max_batched_tokens" if scheduler.kind == SCHEDULER_VLLM else "chunked_prefill_size"
    )
    peak = request.prompt_tokens
    if worker.role != ROLE_PREFILL:
        peak = request.prompt_tokens + request.output_tokens - 1
    # The engine reserves its SD lookahead on top of the last round's slots.
    reserved = peak + worker.speculation.lookahead_tokens
    pages = -(-reserved // kv.block_size)
    if pages > kv.blocks:
        lookahead = worker.speculation.lookahead_tokens
        lookahead_note = f" + {lookahead} SD lookahead slots" if lookahead else ""
        raise ConfigError(
            f"{worker.path}.kv_cache.capacity: request {request.request_id!r} "
            f"({request.prompt_tokens} prompt + {request.output_tokens} output tokens"
            f"{lookahead_note}) needs {pages} blocks of {kv.block_size} tokens but the "
            f"capacity is {kv.blocks} blocks "
            f"({capacity_tokens} tokens); it can never fit"
        )
    if not scheduler.chunked_prefill and peak > scheduler.token_budget:
        raise ConfigError(
            f"{worker.path}.scheduler.{budget_field}: request {request.request_id!r} needs "
            f"{peak} tokens in one prefill (recompute included) but chunked_prefill is false "
            f"and the budget is {scheduler.token_budget}"
        )


def transfer_price(
    raw: object, context: Hardware, workers: list[WorkerPlan]
) -> tuple[float, float]:
    """(ms per prompt token, fixed latency ms) of the P/D KV hand-off; (0, 0) for an aggregated
    deployment, whose ``kv_transfer`` fields are still checked."""
    path = "engine.kv_transfer"
    block = validate(KvTransfer, {} if raw is None else raw, path)
    latency = block.latency_ms
    bandwidth = block.bandwidth_bytes_per_s
    per_token = block.kv_bytes_per_token
    if len(workers) == 1:
        return 0.0, 0.0
    if bandwidth is None:
        bandwidth = context.need_gpu(
            f"{path}.bandwidth_bytes_per_s default (NVLink)"
        ).nvlink_bytes_per_s
    if per_token is None:
        model = context.need_model(f"{path} (KV bytes per token)")
        per_token = kv_bytes_per_token_per_gpu(model, workers[0].tensor)
    return per_token / bandwidth * 1000.0, latency
