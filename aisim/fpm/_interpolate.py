"""Exact-hit-then-interpolate lookup over recorded (B, K_total) -> latency points; no extrapolation.

Points are grouped into rows of equal batch size B (sorted by K_total). A query (B, K):

1. exact hit: a recorded point at (B, K) answers with its latency (coverage ``measured``);
2. otherwise the rows B0 <= B <= B1 that bracket B (B0 == B1 == B when a row has exactly B) are
   each interpolated linearly in K_total between the two recorded points that bracket K in that
   row, and the two row values are interpolated linearly in B (coverage ``interpolated``). On a
   full rectangular grid this is bilinear interpolation; on scattered points it is row-wise linear
   then linear across rows.
3. a query outside [min B, max B], or whose K lies outside a bracketing row's recorded K range,
   is outside the measured envelope: ``UnsupportedQuery``, never extrapolated.

Plain lists only (compiled by mypyc); the numpy path in ``_vector`` mirrors this arithmetic.
"""

from __future__ import annotations

import hashlib
import json
from bisect import bisect_left
from collections.abc import Mapping
from typing import Any

from aisim.errors import UnsupportedQuery


def points_identity(points: list[tuple[int, int, float]], identity: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of the identity and the sorted points."""
    payload = {
        "identity": dict(identity),
        "points": [[batch, kv, repr(latency)] for batch, kv, latency in points],
    }
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class InterpolationGrid:
    """Recorded points grouped by batch size; see the module docstring for the scheme."""

    def __init__(self, points: list[tuple[int, int, float]]) -> None:
        self.batch_sizes: list[int] = []
        self.row_kv: list[list[int]] = []
        self.row_latency_ms: list[list[float]] = []
        for batch, kv, latency in sorted(points):
            if not self.batch_sizes or self.batch_sizes[-1] != batch:
                self.batch_sizes.append(batch)
                self.row_kv.append([])
                self.row_latency_ms.append([])
            self.row_kv[-1].append(kv)
            self.row_latency_ms[-1].append(latency)
        self.num_points = len(points)

    def is_exact(self, batch: int, kv: int) -> bool:
        row = self._row_index(batch)
        if row < 0:
            return False
        kvs = self.row_kv[row]
        position = bisect_left(kvs, kv)
        return position < len(kvs) and kvs[position] == kv

    def _row_index(self, batch: int) -> int:
        position = bisect_left(self.batch_sizes, batch)
        if position < len(self.batch_sizes) and self.batch_sizes[position] == batch:
            return position
        return -1

    def _row_value(self, row: int, kv: int, path: str) -> float:
        kvs = self.row_kv[row]
        latencies = self.row_latency_ms[row]
        position = bisect_left(kvs, kv)
        if position < len(kvs) and kvs[position] == kv:
            return latencies[position]
        if position == 0 or position == len(kvs):
            raise UnsupportedQuery(
                f"{path}: total_kv_tokens={kv} is outside the measured envelope of the table at "
                f"batch_size={self.batch_sizes[row]} (recorded K_total {kvs[0]}..{kvs[-1]}); "
                "the table never extrapolates"
            )
        k0 = float(kvs[position - 1])
        k1 = float(kvs[position])
        y0 = latencies[position - 1]
        y1 = latencies[position]
        return y0 + (y1 - y0) * (float(kv) - k0) / (k1 - k0)

    def latency_ms(self, batch: int, kv: int, path: str) -> float:
        """The recorded or interpolated latency at (``batch``, ``kv``), else ``UnsupportedQuery``."""
        sizes = self.batch_sizes
        position = bisect_left(sizes, batch)
        if position < len(sizes) and sizes[position] == batch:
            return self._row_value(position, kv, path)
        if position == 0 or position == len(sizes):
            raise UnsupportedQuery(
                f"{path}: batch_size={batch} is outside the measured envelope of the table "
                f"(recorded batch sizes {sizes[0]}..{sizes[-1]}); the table never extrapolates"
            )
        b0 = float(sizes[position - 1])
        b1 = float(sizes[position])
        v0 = self._row_value(position - 1, kv, path)
        v1 = self._row_value(position, kv, path)
        return v0 + (v1 - v0) * (float(batch) - b0) / (b1 - b0)

    def envelope(self) -> str:
        """A one-line description of the recorded coordinates."""
        rows = [
            f"B={batch}: K {kvs[0]}..{kvs[-1]}"
            for batch, kvs in zip(self.batch_sizes, self.row_kv, strict=True)
        ]
        return "; ".join(rows)
