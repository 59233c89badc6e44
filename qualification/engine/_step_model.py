"""Price replay's passes from an engine step table (a separate recording of the same engine).

The table holds medians of timed engine steps: decode (or SD-round) steps at B requests of a
per-request context, and prefill steps at n requests of a per-request prompt length. A replay pass
is priced as:

* decode only: within the row of equal B, linear in the per-request context K_total / B; between
  rows, linear in B (row-wise, as aisim's ``table`` estimator does on recorder grids). Outside
  the recorded box the coordinates are **clamped** to it (never extrapolated) and the answer is
  counted as ``clamped``;
* prefill only: the same over (requests, prompt tokens per request);
* mixed (chunked prefill beside decodes, one engine step): decode part + prefill part - the
  per-step overhead, taken as the table's cheapest decode step (or SD round): one vLLM engine
  step is one scheduler pass, one model forward over the flattened tokens of every scheduled
  request and one sampling pass (``vllm/v1/engine/core.py``, ``EngineCore.step``;
  ``vllm/v1/worker/gpu_model_runner.py``, ``GPUModelRunner.execute_model``, which the CPU
  runner ``CPUModelRunner`` subclasses), so a mixed step pays that overhead once where the
  decode and prefill steps timed on their own each paid it. Priced so, served mixed steps cost
  the same multiple of their price as served prefill-only steps (docs/replay.md, "Against a
  real engine"); the decode part is never below the overhead, so a mixed step never costs
  less than its prefill part.

With SD on, the table may also hold plain decode steps (``ngram``: the rounds before any
n-gram matches, which draft nothing); they price replay's passes whose decode requests all drafted
nothing (``plain_decode_model``, ``speculation.undrafted_rounds``).

Every answer's coverage is counted, so a report says how much of a replay was clamped.
"""

from __future__ import annotations

import statistics
from collections import Counter
from typing import Any

import numpy as np

from aisim.errors import DataIntegrityError
from qualification.engine._recording import StepTable


class _Surface:
    """Row-wise piecewise-linear interpolation over (count, per-request tokens), clamped."""

    def __init__(self, points: list[tuple[int, float, float]], label: str) -> None:
        self.label = label
        rows: dict[int, list[tuple[float, float]]] = {}
        for count, per_request, latency in points:
            rows.setdefault(count, []).append((per_request, latency))
        self.rows = {count: sorted(values) for count, values in sorted(rows.items())}
        self.counts = sorted(self.rows)

    def _row(self, count: int, per_request: float) -> tuple[float, bool]:
        xs = [x for x, _ in self.rows[count]]
        ys = [y for _, y in self.rows[count]]
        inside = xs[0] <= per_request <= xs[-1]
        return float(np.interp(per_request, xs, ys)), inside

    def price(self, count: int, tokens: int, coverage: Counter[str]) -> float:
        per_request = tokens / count
        counts = self.counts
        if count <= counts[0] or count >= counts[-1]:
            edge = counts[0] if count <= counts[0] else counts[-1]
            value, inside = self._row(edge, per_request)
            inside = inside and count == edge
        else:
            upper = next(c for c in counts if c >= count)
            lower = max(c for c in counts if c <= count)
            low, low_inside = self._row(lower, per_request)
            high, high_inside = self._row(upper, per_request)
            weight = 0.0 if upper == lower else (count - lower) / (upper - lower)
            value = low + weight * (high - low)
            inside = low_inside and high_inside
        coverage[f"{self.label}:{'table' if inside else 'clamped'}"] += 1
        return value


def _points(
    frame: Any, tokens_column: str, latency_column: str, scale: float
) -> list[tuple[int, float, float]]:
    """One point per recorded grid point: (count, median tokens per request, median ms)."""
    points = []
    for _, group in frame.groupby("point_id", sort=True):
        count = int(group["batch_size"].iloc[0])
        tokens = float(statistics.median(int(v) for v in group[tokens_column]))
        latency = scale * float(statistics.median(float(v) for v in group[latency_column]))
        points.append((count, tokens / count, latency))
    return points


class EngineStepModel:
    """A forward-pass model over an engine step table (duck-typed like ``aisim.fpm`` models:
    ``estimate_forward_pass_time_ms(metrics)``; it prices SD rounds natively)."""

    name = "engine-step-table"
    prices_speculation_natively = True
    supports_draft_length = False

    def __init__(
        self,
        table: StepTable,
        draft_length: int,
        *,
        latency_column: str = "wall_ms",
        scale: float = 1.0,
    ) -> None:
        """``latency_column``: ``wall_ms`` (what a user sees; the default) or ``cpu_ms`` (the
        step's process CPU time), multiplied by ``scale`` (the drift-adjusted diagnostic)."""
        decode_phase = "sd" if draft_length > 0 else "decode"
        decode = table.timed(decode_phase)
        if decode_phase == "sd":
            decode = decode[decode["num_draft_tokens"] == draft_length]
        prefill = table.timed("prefill")
        where = repr(str(table.directory))
        if decode.empty:
            raise DataIntegrityError(
                f"{where}: the step table has no timed {decode_phase} steps"
                + (f" at d={draft_length}" if draft_length else "")
            )
        if prefill.empty:
            raise DataIntegrityError(f"{where}: the step table has no timed prefill steps")
        prefill = prefill.assign(prefill_tokens=prefill["scheduled_tokens"])
        self.decode_points = _points(decode, "total_kv_tokens", latency_column, scale)
        self.prefill_points = _points(prefill, "prefill_tokens", latency_column, scale)
        #: One engine step's fixed cost, counted once in a mixed step: the cheapest decode
        #: step (or SD round) of the table. Interpolation never goes below it.
        self.step_overhead_ms = min(latency for _, _, latency in self.decode_points)
        self.decode = _Surface(self.decode_points, decode_phase)
        self.prefill = _Surface(self.prefill_points, "prefill")
        self.coverage: Counter[str] = Counter()
        #: With SD: the same table's plain decode steps (rounds that drafted nothing), or None
        #: when it has none. Its coverage is counted in this model's ``coverage``.
        self.plain_decode_model: EngineStepModel | None = None
        if draft_length > 0 and not table.timed("decode").empty:
            plain = EngineStepModel(table, 0, latency_column=latency_column, scale=scale)
            plain.coverage = self.coverage
            self.plain_decode_model = plain

    def estimate_forward_pass_time_ms(self, metrics: Any, draft_length: int | None = None) -> float:
        if isinstance(metrics, list):
            return max((self.estimate_forward_pass_time_ms(rank) for rank in metrics), default=0.0)
        decode_ms = prefill_ms = 0.0
        if metrics.num_decode_requests > 0:
            decode_ms = self.decode.price(
                metrics.num_decode_requests, metrics.sum_decode_kv_tokens, self.coverage
            )
        if metrics.num_prefill_requests > 0:
            prefill_ms = self.prefill.price(
                metrics.num_prefill_requests, metrics.sum_prefill_tokens, self.coverage
            )
        if decode_ms and prefill_ms:
            self.coverage["mixed"] += 1
            return decode_ms + prefill_ms - self.step_overhead_ms
        return decode_ms + prefill_ms

    def describe(self) -> dict[str, Any]:
        plain = self.plain_decode_model
        return {
            "decode_points": len(self.decode_points),
            "plain_decode_points": 0 if plain is None else len(plain.decode_points),
            "prefill_points": len(self.prefill_points),
            "coverage": dict(sorted(self.coverage.items())),
        }
