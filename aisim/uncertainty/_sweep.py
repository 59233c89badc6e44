"""``aisim sweep --intervals N``: every finished point of a sweep also carries the p50 and the
central 90 % interval of each headline metric over N Monte Carlo replicas (``run_replicas``, on
the sweep's backend). The columns are added to the frame (``points.parquet``), not to the point
files, so a resumed sweep draws its replicas again (with the same seed: the same values)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aisim.uncertainty._intervals import METRICS, reduce, run_replicas
from aisim.uncertainty._sources import Sources

STATISTICS = ("p50", "low", "high")


def interval_columns() -> list[str]:
    return [f"{name}_{stat}" for name in METRICS for stat in STATISTICS]


def add_sweep_intervals(
    frame: Any,
    sweep: object,
    replicas: int,
    *,
    seed: int = 0,
    sources: Sources | None = None,
    backend: str = "pool",
    workers: int | None = None,
    address: str | None = None,
) -> Any:
    """``frame`` (``aisim.sweep.run``'s) with ``<metric>_p50``, ``_low`` and ``_high`` per
    interval metric (None for an error point) and ``frame.attrs["intervals"]``."""
    from aisim.config import apply_axes, load_sweep
    from aisim.sweep import expand

    plan = load_sweep(sweep)
    points = {point.index: point for point in expand(plan)}
    ok = [
        int(index)
        for index, status in zip(frame["point"], frame["status"], strict=True)
        if status == "ok"
    ]
    configs = [apply_axes(plan.base, points[index].assignment) for index in ok]
    runs = (
        run_replicas(
            configs,
            Path(plan.base_dir),
            replicas,
            seed=seed,
            sources=sources,
            slos=plan.slos,
            backend=backend,
            workers=workers,
            address=address,
        )
        if configs
        else []
    )
    values: dict[str, list[Any]] = {column: [None] * len(frame) for column in interval_columns()}
    position = {int(index): row for row, index in enumerate(frame["point"])}
    included: set[str] = set()
    for index, replicated in zip(ok, runs, strict=True):
        reduced = reduce(replicated.point, replicated.rows)
        for name in METRICS:
            for stat in STATISTICS:
                values[f"{name}_{stat}"][position[index]] = reduced[name][stat]
        included.update(n for n, s in replicated.setup.sources.items() if s["included"])
    result = frame.copy()
    for column, column_values in values.items():
        result[column] = column_values
    result.attrs = dict(frame.attrs)
    result.attrs["intervals"] = {
        "replicas": replicas,
        "seed": seed,
        "confidence": 0.9,
        "includes": sorted(included),
    }
    return result
