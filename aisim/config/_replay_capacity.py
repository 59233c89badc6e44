"""Replay config edge, part two: the ``kv_cache`` and ``kv_transfer`` blocks validated into a KV
plan per rank and the P/D KV transfer price (docs/design.md#replay: capacity and disaggregation).
The sizing arithmetic and the feasibility check of every request against every pool live with the
pool they size (``aisim/replay/_kv_sizing.py``)."""

from __future__ import annotations

from typing import Final

from aisim._fields import join_path
from aisim.catalogue import GpuSpec, ModelSpec
from aisim.config._replay_models import DefaultCapacity, FixedCapacity, KvCache, KvTransfer
from aisim.errors import ConfigError
from aisim.replay import (
    SCHEDULER_VLLM,
    KvPlan,
    SpeculationPlan,
    WorkerPlan,
    free_kv_bytes_per_gpu,
    kv_blocks,
    kv_bytes_per_token_per_gpu,
)

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
    block: KvCache | None,
    context: Hardware,
    tensor: int,
    speculation: SpeculationPlan,
    path: str,
) -> KvPlan:
    """The worker's KV pool per rank, from its validated ``kv_cache`` block (absent: every
    default)."""
    kv_path = join_path(path, "kv_cache")
    if block is None:
        block = KvCache()
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
    default = block.capacity
    if isinstance(default, FixedCapacity):
        return KvPlan(default.blocks, block_size, unit, caching)
    if default is None:
        default = DefaultCapacity(type="default")
    if speculation.enabled and speculation.kind != "ngram":
        raise ConfigError(
            f"{capacity_path}: kind {speculation.kind}: speculation with a drafter needs an explicit "
            f"capacity {{type: fixed, blocks: N}} (reserve the draft weights and draft KV yourself); "
            f"type default is allowed only without speculation or with ngram"
        )
    model = context.need_model(f"{capacity_path} type default")
    gpu = context.need_gpu(f"{capacity_path} type default")
    free_bytes = free_kv_bytes_per_gpu(
        model, gpu, tensor, default.memory_fraction, default.activation_reserve_gib
    )
    blocks = kv_blocks(model, tensor, free_bytes, block_size)
    if blocks < 1:
        raise ConfigError(
            f"{capacity_path}: {model.name} on {gpu.name} with tensor {tensor} leaves no KV memory "
            f"({free_bytes / GIB:.2f} GiB after weights and reserve); use more tensor parallelism "
            "or a fixed capacity"
        )
    return KvPlan(blocks, block_size, unit, caching)


def transfer_price(
    block: KvTransfer | None, context: Hardware, workers: list[WorkerPlan]
) -> tuple[float, float]:
    """(ms per prompt token, fixed latency ms) of the P/D KV hand-off, from the validated
    ``kv_transfer`` block (absent: every default); (0, 0) for an aggregated deployment."""
    path = "engine.kv_transfer"
    if block is None:
        block = KvTransfer()
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
