"""KV pool sizing (docs/design.md#replay: capacity): KV bytes per token on one GPU of a TP group,
the blocks a GPU's free memory holds, and the check that every request fits every pool it meets.
"""

from __future__ import annotations

from typing import Final

from aisim.catalogue import GpuSpec, ModelSpec
from aisim.errors import ConfigError
from aisim.replay._plan import ROLE_PREFILL, SCHEDULER_VLLM, RequestSpec, WorkerPlan

GIB: Final = 1 << 30


def free_kv_bytes_per_gpu(
    model: ModelSpec, gpu: GpuSpec, tensor: int, memory_fraction: float, reserve_gib: float
) -> float:
    """Bytes one GPU of a TP group of ``tensor`` has left for KV: its share of HBM
    (``memory_fraction``) less its slice of the weights and an activation reserve (GiB);
    negative when nothing is left."""
    return (
        gpu.hbm_capacity_bytes * memory_fraction - model.weight_bytes / tensor - reserve_gib * GIB
    )


def kv_blocks(model: ModelSpec, tensor: int, free_bytes: float, block_size: int) -> int:
    """Whole KV blocks of ``block_size`` tokens that ``free_bytes`` on one GPU hold (0 if none)."""
    per_block = kv_bytes_per_token_per_gpu(model, tensor) * block_size
    return int(free_bytes // per_block) if free_bytes > 0 else 0


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
