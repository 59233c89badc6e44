"""Replay traffic (docs/design.md#replay: traffic): trace files and request rows read and checked
into the replay core's ``RequestSpec`` requests, whole or streamed, and the per-process trace
cache that lets sweep points share one reading.

Below the config edge: ``aisim.config`` validates the ``traffic`` block and hands these readers
typed values (a file, a format, a ``LoadClock``); nothing here imports ``aisim.config``. Not
compiled: it reads files (msgspec decodes plain Mooncake rows in C).
"""

from __future__ import annotations

from aisim.traffic._hash_blocks import HashIdCounts, count_hash_ids, mark_private_blocks
from aisim.traffic._limits import MAX_REQUESTS, MAX_TIME_MS, MAX_TOKENS
from aisim.traffic._readers import (
    TRACE_FORMATS,
    LoadClock,
    SyntheticStream,
    TraceStream,
    TrafficStream,
    agentic_file_requests,
    apply_arrivals,
    check_arrivals,
    graph_requests,
    synthetic_requests,
    trace_rows,
)
from aisim.traffic._trace_cache import TRACES, Contents, TraceCache, file_sha256, read_contents

__all__ = [
    "MAX_REQUESTS",
    "MAX_TIME_MS",
    "MAX_TOKENS",
    "TRACES",
    "TRACE_FORMATS",
    "Contents",
    "HashIdCounts",
    "LoadClock",
    "SyntheticStream",
    "TraceCache",
    "TraceStream",
    "TrafficStream",
    "agentic_file_requests",
    "apply_arrivals",
    "check_arrivals",
    "count_hash_ids",
    "file_sha256",
    "graph_requests",
    "mark_private_blocks",
    "read_contents",
    "synthetic_requests",
    "trace_rows",
]
