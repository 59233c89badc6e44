"""The replay config's limits and defaults, in one place (docs/replay.md "Limits"): the
pydantic models of ``_replay_models`` and the readers that build the plan both use them. The limits
of every traffic value (tokens, requests, times) are the trace readers' (``aisim.traffic``)."""

from __future__ import annotations

from typing import Final

from aisim.traffic import MAX_REQUESTS, MAX_TIME_MS, MAX_TOKENS

#: Largest count a config may give (KV blocks, token budgets, sequences).
MAX_COUNT: Final = 1 << 40
#: Largest ``time_scale`` (the scaled arrivals must still be within ``MAX_TIME_MS``).
MAX_TIME_SCALE: Final = float(1 << 20)
#: Poisson/constant rates, requests per second: at most one request per ~11.6 days and a
#: billion per second.
MIN_RATE_RPS: Final = 1e-6
MAX_RATE_RPS: Final = 1e9
MAX_SEED: Final = (1 << 63) - 1
#: Default share of GPU memory the engine may use (vLLM's gpu_memory_utilization default).
DEFAULT_MEMORY_FRACTION: Final = 0.9
#: Default activation/workspace reserve per GPU, GiB (a documented round number, not profiled).
DEFAULT_ACTIVATION_RESERVE_GIB: Final = 2.0
#: P/D hand-off limits: a fixed latency within the traffic time limit (2**32 ms), a bandwidth
#: of 1 byte/s to 1e20 bytes/s, at most 2**40 KV bytes per token: transfer times stay finite.
MAX_TRANSFER_MS: Final = float(1 << 32)
MAX_BANDWIDTH_BYTES_PER_S: Final = 1e20
MAX_KV_BYTES_PER_TOKEN: Final = 1 << 40
#: Largest KV block and prefix-cache unit, tokens.
MAX_BLOCK_TOKENS: Final = 1 << 20
#: Largest tensor-parallel group and number of attention-data-parallel ranks.
MAX_PARALLEL: Final = 1024

__all__ = [
    "DEFAULT_ACTIVATION_RESERVE_GIB",
    "DEFAULT_MEMORY_FRACTION",
    "MAX_BANDWIDTH_BYTES_PER_S",
    "MAX_BLOCK_TOKENS",
    "MAX_COUNT",
    "MAX_KV_BYTES_PER_TOKEN",
    "MAX_PARALLEL",
    "MAX_RATE_RPS",
    "MAX_REQUESTS",
    "MAX_SEED",
    "MAX_TIME_MS",
    "MAX_TIME_SCALE",
    "MAX_TOKENS",
    "MAX_TRANSFER_MS",
    "MIN_RATE_RPS",
]
