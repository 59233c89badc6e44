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
from aisim.replay._run_summary import (
    LatencyStatistics,
    RunSummary,
    SketchedPercentiles,
    SpeculationCounts,
    WorkerSummary,
)
from aisim.replay._sketch import EXACT_LIMIT, RELATIVE_ACCURACY, SKETCH_KIND, Distribution

STATISTICS = (("mean", -1.0), ("median", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0))


def request_columns(records: list[RequestRecord]) -> dict[str, list[Any]]:
    """One list per column of ``REQUEST_COLUMNS``, one entry per record, in the given order."""
    return {name: request_column(records, name) for name in REQUEST_COLUMNS}


def request_column(records: list[RequestRecord], name: str) -> list[Any]:
    """Column ``name`` of ``REQUEST_COLUMNS``: one entry per record, in the given order."""
    if name == "status":
        return ["completed" if record.completed else "not_completed" for record in records]
    return [getattr(record, name) for record in records]


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


def summarize(result: SimulationResult, description: dict[str, Any]) -> RunSummary:
    """The typed summary (docs/design.md#replay: outputs); ``None`` where a statistic has no
    samples."""
    log = result.log
    start = log.start_ms if log.start_ms != float("inf") else 0.0
    end = log.end_ms if log.completed else start
    duration_ms = end - start
    seconds = duration_ms / 1000.0
    done = log.completed
    recorder = result.recorder
    latencies: dict[str, LatencyStatistics] = {}
    sketched: list[str] = []
    exact_limit = EXACT_LIMIT
    for name, distribution in distributions(result).items():
        latencies[name] = _statistics(distribution)
        if not distribution.exact:
            sketched.append(name)
            exact_limit = distribution.exact_limit
    histogram = recorder.accepted_histogram
    sd_rounds = sum(histogram)
    accepted = sum(count * k for k, count in enumerate(histogram))
    speculation = SpeculationCounts(
        decode_rounds=log.decode_rounds,
        sd_rounds=sd_rounds,
        accepted_draft_tokens=accepted,
        mean_acceptance_length=(sd_rounds + accepted) / sd_rounds if sd_rounds else None,
        accepted_length_histogram=tuple(histogram),
    )
    workers = tuple(
        WorkerSummary(
            role=worker.plan.role,
            tensor=worker.plan.tensor,
            attention_data=worker.plan.attention_data,
            speculation=worker.plan.speculation.kind,
            draft_length=worker.plan.speculation.draft_length,
            peak_used_blocks=tuple(worker.peak_used_blocks()),
        )
        for worker in result.workers
    )
    arrival_order = None
    if result.sorted_arrivals:
        arrival_order = (
            "sorted: the traffic lists requests out of arrival order; they were replayed in "
            "(arrival, traffic order), rows stay in traffic order, and the traffic was held "
            "whole in memory instead of streamed"
        )
    sketched_percentiles = None
    if sketched:
        sketched_percentiles = SketchedPercentiles(
            sketch=SKETCH_KIND,
            relative_accuracy=RELATIVE_ACCURACY,
            exact_limit=exact_limit,
            sketched=tuple(sketched),
        )
    return RunSummary(
        total_requests=log.total,
        completed_requests=done,
        not_completed_reasons=dict(log.reasons),
        duration_ms=duration_ms,
        total_input_tokens=log.input_tokens,
        total_output_tokens=log.output_tokens,
        request_throughput_rps=done / seconds if seconds > 0 else 0.0,
        output_throughput_tok_s=log.output_tokens / seconds if seconds > 0 else 0.0,
        input_throughput_tok_s=log.input_tokens / seconds if seconds > 0 else 0.0,
        ttft=latencies["ttft"],
        time_to_second_token=latencies["time_to_second_token"],
        tpot=latencies["tpot"],
        e2e_latency=latencies["e2e_latency"],
        itl=latencies["itl"],
        speculation=speculation,
        passes=recorder.passes,
        events=result.events,
        preemptions=recorder.preemptions,
        sd_reservation_preemptions=recorder.sd_preemptions,
        cached_prompt_tokens=log.cached_prompt_tokens,
        workers=workers,
        config=description,
        arrival_order=arrival_order,
        sketched_percentiles=sketched_percentiles,
    )


def _statistics(distribution: Distribution) -> LatencyStatistics:
    if distribution.count == 0:
        return LatencyStatistics(None, None, None, None, None)
    sketch = distribution.sketch
    values: list[float]
    if sketch is not None:
        values = [distribution.total / distribution.count]
        values.extend(sketch.quantile(percentile / 100.0) for _, percentile in STATISTICS[1:])
        return LatencyStatistics(*values)
    # All percentiles in one numpy call: the same values as one call each (the same
    # interpolation per percentile), at a third of the cost; a sweep summarizes every point.
    array = np.asarray(distribution.values, dtype=np.float64)
    values = [float(np.mean(array))]
    values.extend(np.percentile(array, [p for _, p in STATISTICS[1:]]).tolist())
    return LatencyStatistics(*values)
