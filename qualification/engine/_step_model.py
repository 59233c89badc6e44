"""Price replay's passes from an engine step table (a separate recording of the same engine),
as the engine runs its served steps.

The table holds medians of timed engine steps: decode (or SD-round) steps at B requests of a
per-request context, and prefill steps at n requests of a per-request prompt length, timed at
a step token count new to the engine (phase ``prefill``) and, in newer grids, again at the same
count (phase ``prefill-cached``). The pricing itself is aisim's ``ServedStepModel``
(``aisim/fpm/_served_steps.py``): row-wise interpolation, clamped outside the grid and counted;
a mixed step (chunked prefill beside decodes, one engine step) as decode + prefill - one step's
overhead (the table's cheapest decode step; ``vllm/v1/engine/core.py``, ``EngineCore.step``:
one scheduler pass, one model forward over the flattened tokens of every scheduled request, one
sampling pass), and what the engine does to a served step that a benchmarked one did not see:

* on vLLM's CPU platform, the oneDNN primitive cache (``aisim/fpm/_engine_steps.py``,
  ``PrimitiveCache``): a step whose token count is not among the last 32 pays primitive
  creation, priced as the table's prefill steps at a new token count minus the same steps
  cached (median over the points timed both ways; unknown, and not charged, on a table
  without cached prefill steps);
* on a CUDA platform with graphs on (``engine_settings.enforce_eager`` false), CUDA-graph
  padding to ``engine_settings.cudagraph_capture_sizes`` (default: vLLM's sizes from
  ``max_num_seqs`` and ``max_num_batched_tokens``).

The platform is ``engine_settings.platform`` (``cpu`` or ``cuda``); our recorder's
``identity.engine`` ``vllm-cpu`` says ``cpu``; a table that says neither gets neither model.

With SD on, the table may also hold plain decode steps (``ngram``: the rounds before any
n-gram matches, which draft nothing); they price replay's passes whose decode requests all drafted
nothing (``plain_decode_model``, ``speculation.undrafted_rounds``).
"""

from __future__ import annotations

import statistics
from typing import Any

from aisim.errors import DataIntegrityError
from aisim.fpm._engine_steps import PrimitiveCache, StepSurface, capture_sizes
from aisim.fpm._served_steps import ServedStepModel
from qualification.engine._recording import StepTable

#: The table's prefill steps timed again at a token count the engine had just scheduled.
CACHED_PREFILL = "prefill-cached"


def _points(
    frame: Any, tokens_column: str, latency_column: str, scale: float
) -> dict[str, tuple[int, float, float]]:
    """Per recorded grid point: (count, median tokens per request, median ms)."""
    points = {}
    for point_id, group in frame.groupby("point_id", sort=True):
        count = int(group["batch_size"].iloc[0])
        tokens = float(statistics.median(int(v) for v in group[tokens_column]))
        latency = scale * float(statistics.median(float(v) for v in group[latency_column]))
        points[str(point_id)] = (count, tokens / count, latency)
    return points


def engine_platform(table: StepTable) -> str | None:
    """``cpu``, ``cuda`` or None (unknown: no engine behaviour is modelled)."""
    platform = table.settings.get("platform")
    if platform in ("cpu", "cuda"):
        return str(platform)
    engine = (table.sidecar.get("identity") or {}).get("engine")
    return "cpu" if engine == "vllm-cpu" else None


def creation_cost_ms(novel: dict[str, Any], cached: dict[str, Any]) -> float | None:
    """Median over prefill points timed both ways of (new token count - cached) ms, at least 0;
    None when no point was."""
    differences = [
        novel[point][2] - cached[CACHED_PREFILL + point.removeprefix("prefill")][2]
        for point in sorted(novel)
        if CACHED_PREFILL + point.removeprefix("prefill") in cached
    ]
    return max(0.0, float(statistics.median(differences))) if differences else None


class EngineStepModel:
    """A forward-pass model over an engine step table (duck-typed like ``aisim.fpm`` models:
    ``estimate_forward_pass_time_ms(metrics)``; it prices SD rounds natively). One per replay:
    the primitive-cache model follows the passes in the order they are priced."""

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
        engine_model: bool = True,
        _shared: tuple[PrimitiveCache | None, dict[str, int]] | None = None,
    ) -> None:
        """``latency_column``: ``wall_ms`` (what a user sees; the default) or ``cpu_ms`` (the
        step's process CPU time), multiplied by ``scale`` (the drift-adjusted diagnostic).
        ``engine_model`` False prices with the table alone (no cache, no graph padding)."""
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
        cached = table.timed(CACHED_PREFILL)
        novel_points = _points(
            prefill.assign(prefill_tokens=prefill["scheduled_tokens"]),
            "prefill_tokens",
            latency_column,
            scale,
        )
        cached_points = (
            {}
            if cached.empty
            else _points(
                cached.assign(prefill_tokens=cached["scheduled_tokens"]),
                "prefill_tokens",
                latency_column,
                scale,
            )
        )
        self.decode_points = list(
            _points(decode, "total_kv_tokens", latency_column, scale).values()
        )
        self.platform = engine_platform(table) if engine_model else None
        self.creation_ms = creation_cost_ms(novel_points, cached_points)
        on_cpu = self.platform == "cpu"
        use_cached = on_cpu and self.creation_ms is not None
        self.prefill_points = list((cached_points if use_cached else novel_points).values())
        #: One engine step's fixed cost, counted once in a mixed step: the cheapest decode
        #: step (or SD round) of the table. Interpolation never goes below it.
        self.step_overhead_ms = min(latency for _, _, latency in self.decode_points)
        self.decode = StepSurface(self.decode_points, decode_phase)
        self.prefill = StepSurface(self.prefill_points, "prefill")
        cache, coverage = _shared or (PrimitiveCache() if on_cpu else None, {})
        self.coverage = coverage
        self.capture_sizes: list[int] = []
        settings = table.settings
        if self.platform == "cuda" and not settings.get("enforce_eager", False):
            given = settings.get("cudagraph_capture_sizes")
            self.capture_sizes = (
                sorted(int(size) for size in given)
                if given
                else capture_sizes(
                    int(settings["max_num_seqs"]),
                    int(settings["max_num_batched_tokens"]),
                    draft_length + 1,
                )
            )
        self.served = ServedStepModel(
            self.decode,
            self.prefill,
            draft_length=draft_length,
            step_overhead_ms=self.step_overhead_ms,
            creation_ms=self.creation_ms if use_cached else None,
            cache=cache,
            capture_sizes=self.capture_sizes,
            coverage=coverage,
        )
        #: With SD: the same table's plain decode steps (rounds that drafted nothing), or None
        #: when it has none; it shares this model's coverage and primitive cache.
        self.plain_decode_model: EngineStepModel | None = None
        if draft_length > 0 and not table.timed("decode").empty:
            self.plain_decode_model = EngineStepModel(
                table,
                0,
                latency_column=latency_column,
                scale=scale,
                engine_model=engine_model,
                _shared=(cache, coverage),
            )

    def estimate_forward_pass_time_ms(self, metrics: Any, draft_length: int | None = None) -> float:
        return self.served.estimate_forward_pass_time_ms(metrics)

    def describe(self) -> dict[str, Any]:
        plain = self.plain_decode_model
        return {
            "decode_points": len(self.decode_points),
            "plain_decode_points": 0 if plain is None else len(plain.decode_points),
            "prefill_points": len(self.prefill_points),
            "platform": self.platform,
            "primitive_cache": self.served.cache is not None,
            "creation_ms": self.creation_ms,
            "cudagraph_capture_sizes": self.capture_sizes or None,
            "coverage": dict(sorted(self.coverage.items())),
        }
