"""One sweep point: replay its config and reduce the result to one row of plain values.

Runs inside a pool process or a Ray task: it takes JSON-ready inputs (the point's config, the
folder relative paths resolve against, the SLOs) and returns a JSON-ready row, so rows are the
same whichever backend ran them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

import numpy as np

from aisim.errors import AisimError
from aisim.replay import Distribution, RunSummary

#: Latency metrics of a row: (row name, summary name, per-request column or None for ITL).
METRICS: Final = (
    ("ttft", "ttft", "ttft_ms"),
    ("tpot", "tpot", "tpot_ms"),
    ("itl", "itl", None),
    ("e2e", "e2e_latency", "e2e_latency_ms"),
)
#: Row column of each metric's sketch (``ttft_sketch``, ...): the point's samples in mergeable
#: form (``aisim/sweep/_merge.py``); a mapping in a row, JSON text in a frame.
SKETCH_COLUMNS: Final = tuple(f"{name}_sketch" for name, _, _ in METRICS)
#: Row statistic -> summary statistic.
STATISTICS: Final = (
    ("mean", "mean"),
    ("p50", "median"),
    ("p90", "p90"),
    ("p95", "p95"),
    ("p99", "p99"),
)
#: Integer metric columns (nullable in a frame: an error row has none).
INTEGER_COLUMNS: Final = (
    "gpus",
    "sd_draft_length",
    "total_requests",
    "completed_requests",
    "sd_rounds",
    "accepted_draft_tokens",
    "decode_rounds",
    "preemptions",
)
SLO_COLUMNS: Final = {"ttft_ms": "ttft_ms", "tpot_ms": "tpot_ms", "e2e_ms": "e2e_latency_ms"}
#: The request columns ``point_metrics`` reads (``row_columns``).
ROW_COLUMNS: Final = ("status", "output_tokens", *SLO_COLUMNS.values())


def metric_columns() -> list[str]:
    """Every metric column of a row, in order (an error row has NaN/None in each)."""
    columns = [
        "gpus",
        "sd_kind",
        "sd_draft_length",
        "total_requests",
        "completed_requests",
        "duration_s",
        "request_throughput_rps",
        "output_throughput_tok_s",
        "output_tok_s_per_gpu",
        "goodput_rps",
        "goodput_tok_s_per_gpu",
        "slo_attainment",
        "slo_met",
    ]
    for name, _, _ in METRICS:
        columns.extend(f"{stat}_{name}_ms" for stat, _ in STATISTICS)
    columns.extend(
        [
            "mean_acceptance_length",
            "sd_rounds",
            "accepted_draft_tokens",
            "decode_rounds",
            "preemptions",
        ]
    )
    return columns


def evaluate_point(
    config: dict[str, Any], base_dir: str, slos: dict[str, dict[str, float]], draw: Any = None
) -> dict[str, Any]:
    """Replay ``config``; returns ``{"status": "ok", ...metrics}`` or ``{"status": "error",
    "error": message}`` for a config the replay edge rejects (or a run that fails). ``draw``:
    replay it as that Monte Carlo replica (its ``run(config, base_dir)``, ``aisim.uncertainty``);
    a replica's row carries no sketches (``SKETCH_COLUMNS``: nothing merges replicas' samples,
    their figures are reduced over the replicas)."""
    from aisim.config import run_replay

    try:
        if draw is None:
            result = run_replay(config, base_dir=Path(base_dir))
        else:
            result = draw.run(config, Path(base_dir))
    except AisimError as exc:
        return {"status": "error", "error": f"{type(exc).__name__}: {exc}"}
    row = {
        "status": "ok",
        "error": "",
        **point_metrics(result.run_summary, row_columns(result), slos),
    }
    if draw is None:
        row.update(point_sketches(result.distributions))
    return row


def row_columns(result: Any) -> dict[str, list[Any]]:
    """The request columns of a ``ReplayResult`` that ``point_metrics`` reads (``ROW_COLUMNS``),
    built without the others."""
    return {name: result.column(name) for name in ROW_COLUMNS}


def point_metrics(
    summary: RunSummary, columns: dict[str, list[Any]], slos: dict[str, dict[str, float]]
) -> dict[str, Any]:
    """The row of a finished replay: throughput per GPU, goodput under ``slos``, latency
    statistics, SD statistics.

    Goodput counts the completed requests whose own TTFT, TPOT and E2E are each within the
    strictest limit given for that metric (ITL is per emission, so it only enters ``slo_met``),
    per second of the replay's duration; ``slo_met`` is whether every SLO statistic is within
    its limit. The SD columns are the decoding worker's (``RunSummary.decoding_worker``).
    """
    gpus = summary.gpus
    speculating = summary.decoding_worker
    seconds = summary.duration_ms / 1000.0
    row: dict[str, Any] = {
        "gpus": gpus,
        "sd_kind": speculating.speculation,
        "sd_draft_length": speculating.draft_length,
        "total_requests": summary.total_requests,
        "completed_requests": summary.completed_requests,
        "duration_s": seconds,
        "request_throughput_rps": summary.request_throughput_rps,
        "output_throughput_tok_s": summary.output_throughput_tok_s,
        "output_tok_s_per_gpu": summary.output_throughput_tok_s / gpus,
    }
    good, good_tokens, completed = _good_requests(columns, slos)
    row["goodput_rps"] = good / seconds if seconds > 0 else 0.0
    row["goodput_tok_s_per_gpu"] = good_tokens / seconds / gpus if seconds > 0 else 0.0
    row["slo_attainment"] = good / completed if completed else 0.0
    met = summary.completed_requests == summary.total_requests
    for name, summary_name, _ in METRICS:
        latency = summary.latency(summary_name)
        for stat, summary_stat in STATISTICS:
            value = latency.statistic(summary_stat)
            row[f"{stat}_{name}_ms"] = math.nan if value is None else float(value)
    row["slo_met"] = met and within_slos(row, slos)
    speculation = summary.speculation
    acceptance = speculation.mean_acceptance_length
    row["mean_acceptance_length"] = math.nan if acceptance is None else float(acceptance)
    row["sd_rounds"] = speculation.sd_rounds
    row["accepted_draft_tokens"] = speculation.accepted_draft_tokens
    row["decode_rounds"] = speculation.decode_rounds
    row["preemptions"] = summary.preemptions
    return row


def point_sketches(distributions: Mapping[str, Distribution]) -> dict[str, dict[str, Any]]:
    """A finished replay's sketch of each metric, JSON-ready: ``QuantileSketch.to_dict()`` plus
    ``sum_ms``, the exact sum of the samples (for the pooled mean)."""
    sketches: dict[str, dict[str, Any]] = {}
    for (_, summary_name, _), column in zip(METRICS, SKETCH_COLUMNS, strict=True):
        distribution = distributions[summary_name]
        sketches[column] = {**distribution.to_sketch().to_dict(), "sum_ms": distribution.total}
    return sketches


def within_slos(statistics: Mapping[str, float], slos: dict[str, dict[str, float]]) -> bool:
    """Whether every SLO statistic (``p90_tpot_ms`` for ``slos["tpot_ms"]["p90"]``) in
    ``statistics`` is defined and within its limit."""
    for metric, limits in slos.items():
        name = metric.removesuffix("_ms")
        for stat, limit in limits.items():
            value = statistics[f"{stat}_{name}_ms"]
            if math.isnan(value) or value > limit:
                return False
    return True


def _good_requests(
    columns: dict[str, list[Any]], slos: dict[str, dict[str, float]]
) -> tuple[int, int, int]:
    """(good requests, their output tokens, completed requests)."""
    completed = np.asarray([status == "completed" for status in columns["status"]], dtype=bool)
    good = completed.copy()
    for metric, column in SLO_COLUMNS.items():
        limits = slos.get(metric)
        if not limits:
            continue
        limit = min(limits.values())
        values = np.asarray(columns[column], dtype=np.float64)
        # A request without the metric (TPOT of a 1-token output) is not held to it.
        good &= np.isnan(values) | (values <= limit)
    tokens = np.asarray(columns["output_tokens"], dtype=np.int64)
    return int(good.sum()), int(tokens[good].sum()), int(completed.sum())
