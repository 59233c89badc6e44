"""Summary statistics and per-request columns of a finished simulation (not compiled: numpy).

Definitions (milliseconds): TTFT = first token - arrival; time to second token = second token -
first token; TPOT = (last token - first token) / (output tokens - 1), for outputs of 2+ tokens;
E2E latency = last token - arrival; ITL = gap between consecutive emission events of a request
(an SD round that emits several tokens is one emission). Percentiles interpolate linearly
(numpy's default). Latency statistics cover completed requests; ITL covers every emission.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from aisim.replay._engine import SimulationResult
from aisim.replay._request import PHASE_DONE

STATISTICS = (("mean", -1.0), ("median", 50.0), ("p90", 90.0), ("p95", 95.0), ("p99", 99.0))


def request_columns(result: SimulationResult) -> dict[str, list[Any]]:
    """One list per column, one entry per request in traffic order (NaN where undefined)."""
    nan = math.nan
    columns: dict[str, list[Any]] = {
        name: []
        for name in (
            "request_id",
            "status",
            "reason",
            "arrival_ms",
            "first_token_ms",
            "second_token_ms",
            "last_token_ms",
            "ttft_ms",
            "time_to_second_token_ms",
            "tpot_ms",
            "e2e_latency_ms",
            "prompt_tokens",
            "output_tokens",
            "emitted_tokens",
            "cached_prompt_tokens",
            "decode_rounds",
            "sd_rounds",
            "accepted_drafts",
            "preemptions",
        )
    }
    for request in result.requests:
        done = request.phase == PHASE_DONE
        arrived = request.arrival_ms >= 0.0
        first = request.first_token_ms if request.first_token_ms >= 0.0 else nan
        second = request.second_token_ms if request.second_token_ms >= 0.0 else nan
        last = request.last_token_ms if request.last_token_ms >= 0.0 else nan
        columns["request_id"].append(request.spec.request_id)
        columns["status"].append("completed" if done else "not_completed")
        columns["reason"].append(request.reason)
        columns["arrival_ms"].append(request.arrival_ms if arrived else nan)
        columns["first_token_ms"].append(first)
        columns["second_token_ms"].append(second)
        columns["last_token_ms"].append(last)
        columns["ttft_ms"].append(first - request.arrival_ms if arrived else nan)
        columns["time_to_second_token_ms"].append(second - first)
        tpot = nan
        if done and request.output_tokens > 1:
            tpot = (last - first) / (request.output_tokens - 1)
        columns["tpot_ms"].append(tpot)
        columns["e2e_latency_ms"].append(last - request.arrival_ms if done else nan)
        columns["prompt_tokens"].append(request.prompt_tokens)
        columns["output_tokens"].append(request.output_tokens)
        columns["emitted_tokens"].append(request.emitted)
        columns["cached_prompt_tokens"].append(request.cached_tokens)
        columns["decode_rounds"].append(request.rounds)
        columns["sd_rounds"].append(request.sd_rounds)
        columns["accepted_drafts"].append(request.accepted_drafts)
        columns["preemptions"].append(request.preemptions)
    return columns


def summarize(
    result: SimulationResult, columns: dict[str, list[Any]], description: dict[str, Any]
) -> dict[str, Any]:
    """The JSON-ready summary (docs/design.md#replay: outputs); ``None`` where a statistic has no samples."""
    statuses = columns["status"]
    done = [i for i, status in enumerate(statuses) if status == "completed"]
    reasons: dict[str, int] = {}
    for status, reason in zip(statuses, columns["reason"], strict=True):
        if status != "completed":
            reasons[reason] = reasons.get(reason, 0) + 1
    arrivals = [value for value in columns["arrival_ms"] if not math.isnan(value)]
    start = min(arrivals) if arrivals else 0.0
    end = max((columns["last_token_ms"][i] for i in done), default=start)
    duration_ms = end - start
    output_tokens = sum(columns["output_tokens"][i] for i in done)
    input_tokens = sum(columns["prompt_tokens"][i] for i in done)
    seconds = duration_ms / 1000.0
    recorder = result.recorder
    summary: dict[str, Any] = {
        "total_requests": len(statuses),
        "completed_requests": len(done),
        "not_completed_requests": len(statuses) - len(done),
        "not_completed_reasons": reasons,
        "duration_ms": duration_ms,
        "total_input_tokens": input_tokens,
        "total_output_tokens": output_tokens,
        "request_throughput_rps": len(done) / seconds if seconds > 0 else 0.0,
        "output_throughput_tok_s": output_tokens / seconds if seconds > 0 else 0.0,
        "input_throughput_tok_s": input_tokens / seconds if seconds > 0 else 0.0,
    }
    for name, column in (
        ("ttft", "ttft_ms"),
        ("time_to_second_token", "time_to_second_token_ms"),
        ("tpot", "tpot_ms"),
        ("e2e_latency", "e2e_latency_ms"),
    ):
        values = [columns[column][i] for i in done]
        _statistics(summary, name, [value for value in values if not math.isnan(value)])
    _statistics(summary, "itl", recorder.itl_ms)
    histogram = recorder.accepted_histogram
    sd_rounds = sum(histogram)
    accepted = sum(count * k for k, count in enumerate(histogram))
    summary.update(
        {
            "decode_rounds": sum(columns["decode_rounds"]),
            "sd_rounds": sd_rounds,
            "accepted_draft_tokens": accepted,
            "mean_acceptance_length": (sd_rounds + accepted) / sd_rounds if sd_rounds else None,
            "accepted_length_histogram": {str(k): count for k, count in enumerate(histogram)},
            "passes": recorder.passes,
            "events": result.events,
            "preemptions": recorder.preemptions,
            "sd_reservation_preemptions": recorder.sd_preemptions,
            "cached_prompt_tokens": sum(columns["cached_prompt_tokens"]),
            "kv_peak_used_blocks": [worker.peak_used_blocks() for worker in result.workers],
            "config": description,
        }
    )
    return summary


def _statistics(summary: dict[str, Any], name: str, values: list[float]) -> None:
    array = np.asarray(values, dtype=np.float64)
    for label, percentile in STATISTICS:
        key = f"{label}_{name}_ms"
        if array.size == 0:
            summary[key] = None
        elif percentile < 0:
            summary[key] = float(np.mean(array))
        else:
            summary[key] = float(np.percentile(array, percentile))
