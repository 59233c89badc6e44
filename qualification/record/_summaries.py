"""Summaries written into a recording's tables and sidecars: per-point statistics, outlier
flags, per-configuration statistics and anomalies."""

from __future__ import annotations

import os
import statistics
from collections.abc import Callable
from typing import Any

#: glibc settings that keep large temporaries on the heap (first touch of a page costs ~6.5 us).
MALLOC_ENV = {
    "MALLOC_MMAP_THRESHOLD_": "33554432",
    "MALLOC_TRIM_THRESHOLD_": "17179869184",
    "MALLOC_TOP_PAD_": "268435456",
}
HIGH_CV = 0.10


def config_id(d: int, b: int, k: int) -> str:
    return f"d{d}-b{b}-k{k}"


def point_id(b: int, k: int) -> str:
    return f"b{b}-k{k}"


def latency_summary(values: list[float]) -> dict[str, float]:
    mean = statistics.fmean(values)
    return {
        "median": statistics.median(values),
        "min": min(values),
        "max": max(values),
        "cv": statistics.pstdev(values) / mean if mean > 0 else 0.0,
    }


def outlier_flags(values: list[float]) -> list[bool]:
    """A round is an outlier when it sits more than max(5 robust sigmas, 10 %) from the median
    of its configuration. Flagged, never dropped."""
    median = statistics.median(values)
    mad = statistics.median(abs(v - median) for v in values) * 1.4826
    limit = max(5 * mad, 0.10 * median)
    return [abs(v - median) > limit for v in values]


ROUND_KEYS = (
    "config_id",
    "round_index",
    "draft_length",
    "batch_size",
    "total_kv_tokens",
    "kv_tokens_min",
    "kv_tokens_max",
    "tokens_verified",
    "duration_ms",
    "draft_ms",
    "verify_ms",
    "wall_duration_ms",
    "accepted_tokens_mean",
    "tokens_emitted",
    "outlier",
)


def stp_table(
    points: dict[tuple[int, int], dict[str, Any]], split_kv: Callable[[int, int], list[int]]
) -> tuple[dict[str, list[Any]], list[dict[str, Any]]]:
    columns: dict[str, list[Any]] = {}
    stats: list[dict[str, Any]] = []
    for (b, k), point in sorted(points.items(), key=lambda item: (item[0][1], item[0][0])):
        sample = point["sample"]
        past = split_kv(k, b)
        summary = latency_summary(sample.primary_ms)
        row = {
            "point_id": point_id(b, k),
            "batch_size": b,
            "total_kv_tokens": k,
            "kv_tokens_min": min(past),
            "kv_tokens_max": max(past),
            "is_baseline": point["baseline"],
            "reference_for": ";".join(point["reference_for"]),
            "repetitions": len(sample.primary_ms),
            "latency_ms_median": summary["median"],
            "latency_ms_min": summary["min"],
            "latency_ms_max": summary["max"],
            "latency_cv": summary["cv"],
            "latency_ms_reps": list(sample.primary_ms),
            "wall_ms_median": statistics.median(sample.wall_ms),
            "wall_ms_reps": list(sample.wall_ms),
        }
        for name, value in row.items():
            columns.setdefault(name, []).append(value)
        stats.append({"point_id": row["point_id"], "repetitions": row["repetitions"], **summary})
    return columns, stats


def round_statistics(rounds: dict[str, list[Any]]) -> list[dict[str, Any]]:
    by_config: dict[str, list[int]] = {}
    for index, cid in enumerate(rounds["config_id"]):
        by_config.setdefault(cid, []).append(index)
    stats = []
    for cid, rows in by_config.items():
        summary = latency_summary([rounds["duration_ms"][i] for i in rows])
        stats.append(
            {
                "config_id": cid,
                "rounds": len(rows),
                **summary,
                "draft_median": statistics.median(rounds["draft_ms"][i] for i in rows),
                "verify_median": statistics.median(rounds["verify_ms"][i] for i in rows),
                "outliers": sum(bool(rounds["outlier"][i]) for i in rows),
            }
        )
    return stats


def anomalies(
    stp_stats: list[dict[str, Any]],
    round_stats: list[dict[str, Any]],
    rounds: dict[str, list[Any]],
    load_start: tuple[float, float, float],
) -> dict[str, list[str]]:
    host: list[str] = []
    cpus = os.cpu_count() or 1
    load_end = os.getloadavg()
    if max(load_start[0], load_end[0]) > cpus:
        host.append(
            f"host load average {load_start[0]:.2f} (start) / {load_end[0]:.2f} (end) exceeds "
            f"{cpus} CPUs: wall times are unreliable; the cpu metric is less affected"
        )
    missing = [key for key in MALLOC_ENV if key not in os.environ]
    if missing:
        host.append(f"{', '.join(missing)} not set: first-touch page faults may inflate timings")
    stp = [
        f"STP point {s['point_id']}: CV {100 * s['cv']:.1f} % above {100 * HIGH_CV:.0f} %"
        for s in stp_stats
        if s["cv"] > HIGH_CV
    ]
    round_notes = [
        f"configuration {s['config_id']}: CV {100 * s['cv']:.1f} % above {100 * HIGH_CV:.0f} %"
        for s in round_stats
        if s["cv"] > HIGH_CV
    ]
    round_notes += [
        f"round {rounds['config_id'][i]}#{rounds['round_index'][i]} flagged as an outlier "
        f"({rounds['duration_ms'][i]:.3f} ms)"
        for i, flag in enumerate(rounds["outlier"])
        if flag
    ]
    return {"stp": host + stp, "rounds": host + round_notes}
