"""Shared pieces of the forward-pass suites: named STP tables and metrics from case inputs.

Tables are named in case inputs (``"table": "grid"``) instead of inlined, so goldens stay
readable; each result carries the table's data identity, so editing a table shows in the diff.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from aisim.fpm import ForwardPassMetrics, ForwardPassModel, table_from_points

GRID_BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512)
GRID_KV_TOTALS = (0, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576)


def grid_latency_ms(batch_size: int, total_kv_tokens: int) -> float:
    """A smooth, non-bilinear STP cost surface (ms) so interpolation is exercised."""
    return 4.0 + 0.35 * math.sqrt(batch_size) + 1.5e-5 * total_kv_tokens + 1e-4 * batch_size


TABLE_POINTS: dict[str, list[dict[str, Any]]] = {
    "grid": [
        {"batch_size": b, "total_kv_tokens": k, "latency_ms": grid_latency_ms(b, k)}
        for b in GRID_BATCH_SIZES
        for k in GRID_KV_TOTALS
    ],
    # The published oracle: STP at B = 8, K = 64 costs 8 ms.
    "oracle": [
        {"batch_size": b, "total_kv_tokens": k, "latency_ms": 8.0}
        for b in (1, 8, 16, 24)
        for k in (0, 64, 128)
    ],
}


def table(name: str) -> ForwardPassModel:
    return table_from_points(TABLE_POINTS[name], identity={"table": name})


def metrics(spec: Any) -> ForwardPassMetrics | list[ForwardPassMetrics]:
    """``{field: value}`` -> one rank; a list of those -> one per rank."""
    if isinstance(spec, list):
        return [ForwardPassMetrics(**rank) for rank in spec]
    return ForwardPassMetrics(**spec)


def decode(batch_size: int, total_kv_tokens: int) -> dict[str, int]:
    return {"num_decode_requests": batch_size, "sum_decode_kv_tokens": total_kv_tokens}


def detailed(model: ForwardPassModel, inputs: Mapping[str, Any]) -> dict[str, Any]:
    """The detailed answer (``to_dict``) plus the plain-float query, which must agree."""
    query = metrics(inputs["metrics"])
    kwargs: dict[str, Any] = {}
    if "draft_length" in inputs:
        kwargs["draft_length"] = inputs["draft_length"]
    result = model.estimate_forward_pass_detailed(query, **kwargs).to_dict()
    plain = model.estimate_forward_pass_time_ms(query, **kwargs)
    if plain != result["latency_ms"]:
        raise AssertionError(f"time_ms {plain!r} != detailed latency {result['latency_ms']!r}")
    return result
