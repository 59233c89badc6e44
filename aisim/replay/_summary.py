"""Summary statistics and per-request columns of a finished simulation (not compiled: numpy).

Definitions (milliseconds): TTFT = first token - arrival; time to second token = second token -
first token; TPOT = (last token - first token) / (output tokens - 1), for outputs of 2+ tokens;
E2E latency = last token - arrival; ITL = gap between consecutive emission events of a request
(an SD round that emits several tokens is one emission). Latency statistics cover completed
requests; ITL covers every emission. Percentiles are exact (numpy's default linear
interpolation) while a statistic has at most ``EXACT_LIMIT`` samples, and beyond that come from
a relative-error sketch (``aisim/replay/_sketch.py``); the summary then says so
(``latency_percentiles``). Means are always exact sums over the samples.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from aisim.replay._engine import SimulationResult
from aisim.replay._outcome import REQUEST_COLUMNS, RequestRecord
from aisim.replay._sketch import EXACT_LIMIT, RELATIVE_ACCURACY, SKETCH_KIND, Distribution

STATISTICS = (("mean", -1.0), ("median", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0))


def request_columns(records: list[RequestRecord]) -> dict[str, list[Any]]:
    """One list per column of ``REQUEST_COLUMNS``, one entry per record, in the given order."""
    columns: dict[str, list[Any]] = {
        name: [getattr(record, name) for record in records]
        for name in REQUEST_COLUMNS
        if name != "status"
    }
    columns["status"] = ["completed" if record.completed else "not_completed" for record in records]
    return {name: columns[name] for name in REQUEST_COLUMNS}


def distributions(result: SimulationResult) -> dict[str, Distribution]:
    """The run-wide latency samples by statistic name (``ttft``, ``itl``, ...)."""
    log = result.log
    return {
        "ttft": log.ttft,
        "time_to_second_token": log.time_to_second_token,
        "tpot": log.tpot,
        "e2e_latency": log.e2e_latency,
        "itl": result.recorder.itl,
    }


def summarize(result: SimulationResult, description: dict[str, Any]) -> dict[str, Any]:
    """The JSON-ready summary (docs/design.md#replay: outputs); ``None`` where a statistic has no samples."""
    log = result.log
    start = log.start_ms if log.start_ms != float("inf") else 0.0
    end = log.end_ms if log.completed else start
    duration_ms = end - start
    seconds = duration_ms / 1000.0
    done = log.completed
    recorder = result.recorder
    summary: dict[str, Any] = {
        "total_requests": log.total,
        "completed_requests": done,
        "not_completed_requests": log.total - done,
        "not_completed_reasons": dict(log.reasons),
        "duration_ms": duration_ms,
        "total_input_tokens": log.input_tokens,
        "total_output_tokens": log.output_tokens,
        "request_throughput_rps": done / seconds if seconds > 0 else 0.0,
        "output_throughput_tok_s": log.output_tokens / seconds if seconds > 0 else 0.0,
        "input_throughput_tok_s": log.input_tokens / seconds if seconds > 0 else 0.0,
    }
    sketched: list[str] = []
    exact_limit = EXACT_LIMIT
    for name, distribution in distributions(result).items():
        _statistics(summary, name, distribution)
        if not distribution.exact:
            sketched.append(name)
            exact_limit = distribution.exact_limit
    histogram = recorder.accepted_histogram
    sd_rounds = sum(histogram)
    accepted = sum(count * k for k, count in enumerate(histogram))
    summary.update(
        {
            "decode_rounds": log.decode_rounds,
            "sd_rounds": sd_rounds,
            "accepted_draft_tokens": accepted,
            "mean_acceptance_length": (sd_rounds + accepted) / sd_rounds if sd_rounds else None,
            "accepted_length_histogram": {str(k): count for k, count in enumerate(histogram)},
            "passes": recorder.passes,
            "events": result.events,
            "preemptions": recorder.preemptions,
            "sd_reservation_preemptions": recorder.sd_preemptions,
            "cached_prompt_tokens": log.cached_prompt_tokens,
            "kv_peak_used_blocks": [worker.peak_used_blocks() for worker in result.workers],
            "config": description,
        }
    )
    if result.sorted_arrivals:
        # Only present when the traffic was out of order, so other summaries are unchanged.
        summary["arrival_order"] = (
            "sorted: the traffic lists requests out of arrival order; they were replayed in "
            "(arrival, traffic order), rows stay in traffic order, and the traffic was held "
            "whole in memory instead of streamed"
        )
    if sketched:
        # Only present when a sketch was used, so summaries of smaller runs are unchanged.
        summary["latency_percentiles"] = {
            "method": "sketch",
            "sketch": SKETCH_KIND,
            "relative_accuracy": RELATIVE_ACCURACY,
            "exact_limit": exact_limit,
            "sketched": sketched,
        }
    return summary


def _statistics(summary: dict[str, Any], name: str, distribution: Distribution) -> None:
    keys = [f"{label}_{name}_ms" for label, _ in STATISTICS]
    if distribution.count == 0:
        summary.update(dict.fromkeys(keys))
        return
    sketch = distribution.sketch
    if sketch is not None:
        for key, (_, percentile) in zip(keys, STATISTICS, strict=True):
            if percentile < 0:
                summary[key] = distribution.total / distribution.count
            else:
                summary[key] = sketch.quantile(percentile / 100.0)
        return
    # All percentiles in one numpy call: the same values as one call each (the same
    # interpolation per percentile), at a third of the cost; a sweep summarizes every point.
    array = np.asarray(distribution.values, dtype=np.float64)
    percentiles = iter(np.percentile(array, [p for _, p in STATISTICS if p >= 0]).tolist())
    for key, (_, percentile) in zip(keys, STATISTICS, strict=True):
        summary[key] = float(np.mean(array)) if percentile < 0 else next(percentiles)
