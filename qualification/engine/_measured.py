"""What a served run measured, read from its recording: each request's latencies (TTFT, TPOT,
E2E in ms, the definitions of ``_score``), the output throughput, and how fast the engine ran
against its step table (``step_cost_drift``) and against its own CPU time (``host_slowdown``).

Both the score (``_score``) and the step-level diff (``step_diff``) read these; neither imports
the other's module for them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, TypedDict

import numpy as np

from qualification.engine._recording import ServedRun


class Latencies(TypedDict):
    """One run's requests in trace order: ttft, tpot, e2e, arrival and finish in ms (tpot NaN
    for a single-token output) and output tokens."""

    ttft: list[float]
    tpot: list[float]
    e2e: list[float]
    arrival: list[float]
    finish: list[float]
    output_tokens: list[int]


class MeasuredLatencies(Latencies):
    """A served run's latencies and each request's id, the order the replay's are read in."""

    request_id: list[str]


def measured_latencies(run: ServedRun) -> MeasuredLatencies:
    """Per request (trace order): ttft, tpot, e2e in ms, and output tokens."""
    frame = run.requests
    arrival = frame["arrival_ms"].astype(float)
    first = frame["first_token_ms"].astype(float)
    finish = frame["finish_ms"].astype(float)
    outputs = frame["output_tokens"].astype(int)
    tpot = [
        (f - t) / (n - 1) if n > 1 else math.nan
        for f, t, n in zip(finish.tolist(), first.tolist(), outputs.tolist(), strict=True)
    ]
    return {
        "request_id": [str(rid) for rid in frame["request_id"]],
        "ttft": (first - arrival).tolist(),
        "tpot": tpot,
        "e2e": (finish - arrival).tolist(),
        "output_tokens": outputs.tolist(),
        "arrival": arrival.tolist(),
        "finish": finish.tolist(),
    }


def throughput_tok_s(
    outputs: Sequence[int], arrivals: Sequence[float], finishes: Sequence[float]
) -> float:
    duration_ms = max(finishes) - min(arrivals)
    return float(sum(outputs)) / (duration_ms / 1000.0) if duration_ms > 0 else math.nan


def host_slowdown(steps: Any) -> float | None:
    """Median over steps of wall time / process CPU time: how much the shared host stretched
    the engine's steps (1.0 on an idle host); None when the recording has no per-step CPU
    time (``cpu_ms`` is optional: another driver may not record it)."""
    ratios = [
        float(wall) / float(cpu)
        for wall, cpu in zip(
            (steps["end_ms"] - steps["start_ms"]).tolist()
            if "end_ms" in steps
            else steps["wall_ms"].tolist(),
            steps["cpu_ms"].tolist(),
            strict=True,
        )
        if math.isfinite(float(cpu)) and float(cpu) > 0
    ]
    return float(np.median(ratios)) if ratios else None


def step_cost_drift(steps: Any, model: Any) -> float:
    """Median over a served run's decode-only steps of measured wall time / the step table's
    price for the same batch and context: how much faster or slower the engine ran during
    the run than while its step table was recorded (1.0: the same). On a shared host the same
    step's CPU time moves by 10-30 % between minutes (docs/replay.md, "Against a real
    engine"), which no model of the engine can predict; this figure shows it per run."""
    from collections import Counter

    decode = steps[(steps["num_prefill_requests"] == 0) & (steps["num_decode_requests"] > 0)]
    scratch: Counter[str] = Counter()
    ratios = [
        (float(end) - float(start)) / model.decode.price(int(count), int(kv), scratch)
        for start, end, count, kv in zip(
            decode["start_ms"].tolist(),
            decode["end_ms"].tolist(),
            decode["num_decode_requests"].tolist(),
            decode["decode_kv_tokens"].tolist(),
            strict=True,
        )
    ]
    return float(np.median(ratios)) if ratios else math.nan
