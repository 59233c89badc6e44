"""Pooled latency percentiles over groups of sweep points: each point keeps its TTFT, TPOT, ITL
and E2E distributions as mergeable sketches, and ``merge`` adds up the sketches of the points
that differ only in the axes merged over (seeds, replicas, loads).

A sketch is ``aisim.replay.QuantileSketch`` (relative accuracy ``RELATIVE_ACCURACY``): sketches
merge by adding bucket counts, so a pooled percentile is within that relative error of the exact
percentile of all the points' samples together, and the merged sketch is the same whatever order
the points are merged in. The pooled mean is the points' exact sample sums, added with
``math.fsum`` (correctly rounded, so independent of order too), over the pooled count.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Final

from aisim.config import check_merge_over
from aisim.errors import ConfigError
from aisim.replay import RELATIVE_ACCURACY, SKETCH_KIND, QuantileSketch
from aisim.sweep._evaluate import METRICS, SKETCH_COLUMNS, STATISTICS, within_slos

if TYPE_CHECKING:
    import pandas as pd

#: Percentile of each row statistic (``mean`` is the exact pooled mean).
_PERCENTILES: Final = {"p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99}


def sketch_text(sketch: Mapping[str, Any] | None) -> str | None:
    """The canonical, compact JSON text of a point's sketch (None stays None): equal sketches
    give byte-identical text."""
    if sketch is None:
        return None
    return json.dumps(sketch, sort_keys=True, separators=(",", ":"), allow_nan=False)


def merge(frame: pd.DataFrame, over: Sequence[str] | None = None) -> pd.DataFrame:
    """Pooled latency statistics of ``frame``'s points (from ``aisim.sweep.run`` or
    ``points.parquet``), one row per group of points that differ only in the axes ``over``
    (default: the sweep file's ``merge_over``), in order of each group's first point.

    Columns: the other axes; ``points`` (in the group), ``merged_points`` (those that ran;
    error points are left out), ``total_requests`` and ``completed_requests`` (summed);
    ``{mean,p50,p90,p95,p99}_{ttft,tpot,itl,e2e}_ms`` of the pooled samples and
    ``{ttft,...}_samples``; ``slo_met`` (every point ran and completed every request, and every
    SLO statistic of the pooled samples is within its limit); ``{ttft,...}_sketch``, the merged
    sketches as JSON text (the points' form). Raises ``ConfigError`` for an axis not in the
    sweep.
    """
    import pandas as pd

    from aisim.sweep._report import _plain, _records

    if "axes" not in frame.attrs:
        raise ConfigError(
            "frame.attrs: no 'axes'; merge takes the frame of aisim.sweep.run or "
            "pd.read_parquet('DIR/points.parquet')"
        )
    axes: list[str] = list(frame.attrs["axes"])
    slos: dict[str, dict[str, float]] = dict(frame.attrs.get("slos", {}))
    field = "over"
    if over is None:
        over, field = frame.attrs.get("merge_over"), "merge_over"
        if over is None:
            raise ConfigError(
                "over: no axis to merge over; pass over=[...] or give merge_over in the sweep "
                f"file (the sweep's axes: {', '.join(axes)})"
            )
    merged_over = check_merge_over(over, axes, field)
    missing = [column for column in SKETCH_COLUMNS if column not in frame.columns]
    if missing:
        raise ConfigError(
            f"frame: no {', '.join(missing)} column; points written before sweeps kept sketches "
            "are run again by resuming the sweep (aisim sweep ... --out DIR)"
        )
    kept = [path for path in axes if path not in merged_over]
    groups: dict[str, list[dict[str, Any]]] = {}
    for row in _records(frame):
        key = json.dumps([_plain(row[path]) for path in kept], sort_keys=True)
        groups.setdefault(key, []).append(row)
    records = [_pooled(rows, kept, slos) for rows in groups.values()]
    columns = [*kept, *_pooled_columns()]
    merged = pd.DataFrame.from_records(records, columns=columns)
    for column in ("points", "merged_points", "total_requests", "completed_requests"):
        merged[column] = merged[column].astype("int64")
    for name, _, _ in METRICS:
        merged[f"{name}_samples"] = merged[f"{name}_samples"].astype("int64")
    merged["slo_met"] = merged["slo_met"].astype(bool)
    merged.attrs["axes"] = kept
    merged.attrs["merged_over"] = merged_over
    merged.attrs["slos"] = slos
    merged.attrs["sketch"] = SKETCH_KIND
    merged.attrs["relative_accuracy"] = RELATIVE_ACCURACY
    return merged


def merge_sketches(texts: Sequence[str]) -> tuple[QuantileSketch, float]:
    """The merged sketch of points' sketch texts and the exact sum of their samples."""
    merged = QuantileSketch(RELATIVE_ACCURACY)
    sums: list[float] = []
    for text in texts:
        data = json.loads(text)
        merged.merge(QuantileSketch.from_dict(data))
        sums.append(float(data["sum_ms"]))
    return merged, math.fsum(sums)


def _pooled(
    rows: list[dict[str, Any]], kept: list[str], slos: dict[str, dict[str, float]]
) -> dict[str, Any]:
    ran = [row for row in rows if row["status"] == "ok"]
    record: dict[str, Any] = {path: rows[0][path] for path in kept}
    record["points"] = len(rows)
    record["merged_points"] = len(ran)
    record["total_requests"] = sum(int(row["total_requests"]) for row in ran)
    record["completed_requests"] = sum(int(row["completed_requests"]) for row in ran)
    met = bool(ran) and len(ran) == len(rows)
    met = met and record["completed_requests"] == record["total_requests"]
    for (name, _, _), column in zip(METRICS, SKETCH_COLUMNS, strict=True):
        sketch, total_ms = merge_sketches([str(row[column]) for row in ran])
        record[f"{name}_samples"] = sketch.count
        for stat, _ in STATISTICS:
            value = math.nan
            if sketch.count and stat == "mean":
                value = total_ms / sketch.count
            elif sketch.count:
                value = sketch.quantile(_PERCENTILES[stat])
            record[f"{stat}_{name}_ms"] = value
        record[column] = sketch_text({**sketch.to_dict(), "sum_ms": total_ms})
    record["slo_met"] = met and within_slos(record, slos)
    return record


def _pooled_columns() -> list[str]:
    columns = ["points", "merged_points", "total_requests", "completed_requests"]
    for name, _, _ in METRICS:
        columns.extend(f"{stat}_{name}_ms" for stat, _ in STATISTICS)
        columns.append(f"{name}_samples")
    columns.append("slo_met")
    columns.extend(SKETCH_COLUMNS)
    return columns


def summarize_merged(merged: pd.DataFrame) -> dict[str, Any]:
    """JSON-ready digest of ``merge``'s frame (``summary.json``'s ``merged``): what was merged
    over, the sketch's accuracy, and per group its axis values, point counts, ``slo_met`` and
    the pooled SLO statistics (the headline latency's when there are no SLOs)."""
    from aisim.sweep._report import _clean, _records, headline_latency

    slos: dict[str, dict[str, float]] = dict(merged.attrs["slos"])
    columns = [
        f"{stat}_{metric.removesuffix('_ms')}_ms"
        for metric, in_slo in slos.items()
        for stat in in_slo
    ] or [headline_latency(slos)]
    groups = [
        {
            "axes": {path: row[path] for path in merged.attrs["axes"]},
            "points": row["points"],
            "merged_points": row["merged_points"],
            "slo_met": row["slo_met"],
            **{column: row[column] for column in columns},
        }
        for row in _records(merged)
    ]
    digest: dict[str, Any] = _clean(
        {
            "over": list(merged.attrs["merged_over"]),
            "sketch": merged.attrs["sketch"],
            "relative_accuracy": merged.attrs["relative_accuracy"],
            "groups": groups,
        }
    )
    return digest


def render_merged(digest: dict[str, Any]) -> str:
    """One line per group of ``summarize_merged``'s digest."""
    over = ", ".join(digest["over"])
    lines = []
    for group in digest["groups"]:
        statistics = ", ".join(
            f"{key} {'n/a' if value is None else f'{value:.3f}'}"
            for key, value in group.items()
            if key.endswith("_ms")
        )
        lines.append(
            f"merged over {over} at {json.dumps(group['axes'], sort_keys=True)}: "
            f"{group['merged_points']}/{group['points']} points, {statistics}, "
            f"SLOs {'met' if group['slo_met'] else 'missed'}"
        )
    return "".join(line + "\n" for line in lines)
