"""Replay every distinct workload once and read the figures the public sources measured.

InferenceX figures are over the whole benchmark (10 x conc requests, as ``benchmark_serving.py``
reports them): median TTFT, mean and median TPOT, and (input + output tokens) / duration / GPUs.
The speculators sweep measured a steady window after a warm-up: its figures are read from the
requests after the first wave (the first ``conc``), and the output throughput of the closed loop
is Little's law, conc x mean output tokens / mean E2E (no think time).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from aisim.config import run_replay
from aisim.errors import AisimError
from aisim.replay import ReplayResult, RunSummary
from qualification.public_gpu._workload import Refusal, replay_config, workload_key


def _whole_run(summary: RunSummary, gpus: int, overhead_ms: float) -> dict[str, Any]:
    """The benchmark's figures; ``overhead_ms``, the fitted per-request overhead (client and
    server work before the first step), is added to every TTFT and, as each of a slot's 10
    requests waits for it in turn, ten times to the run."""
    median_ttft = summary.ttft.median_ms
    if median_ttft is None:
        raise AisimError("replay: no request got a first token, so there is no median TTFT")
    seconds = (summary.duration_ms + 10.0 * overhead_ms) / 1000.0
    tokens = summary.total_input_tokens + summary.total_output_tokens
    return {
        "median_ttft_ms": median_ttft + overhead_ms,
        "request_overhead_ms": overhead_ms,
        "mean_tpot_ms": summary.tpot.mean_ms,
        "median_tpot_ms": summary.tpot.median_ms,
        "tput_per_gpu": tokens / seconds / gpus,
        "output_tput_per_gpu": summary.total_output_tokens / seconds / gpus,
        "mean_acceptance_length": summary.speculation.mean_acceptance_length,
        "completed": summary.completed_requests,
        "preemptions": summary.preemptions,
    }


def _steady(result: ReplayResult, conc: int, gpus: int, overhead_ms: float = 0.0) -> dict[str, Any]:
    """The steady window's figures; ``overhead_ms``, the fitted per-request overhead (client and
    server work before the first step), is added to every TTFT and end-to-end latency (a slot
    waits for it before its request reaches the engine)."""
    frame = result.requests
    steady = (
        frame[frame["request_index"] >= conc] if "request_index" in frame else frame.iloc[conc:]
    )
    ttft = [float(v) + overhead_ms for v in steady["ttft_ms"]]
    tpot = [float(v) for v in steady["tpot_ms"] if v == v]
    e2e = statistics.fmean(float(v) for v in steady["e2e_latency_ms"]) + overhead_ms
    output = statistics.fmean(float(v) for v in steady["output_tokens"])
    summary = result.run_summary
    return {
        "median_ttft_ms": statistics.median(ttft),
        "request_overhead_ms": overhead_ms,
        "mean_tpot_ms": statistics.fmean(tpot),
        "median_tpot_ms": statistics.median(tpot),
        "tput_per_gpu": None,
        "output_tput_per_gpu": conc * output / (e2e / 1000.0) / gpus,
        "mean_acceptance_length": summary.speculation.mean_acceptance_length,
        "completed": summary.completed_requests,
        "preemptions": summary.preemptions,
    }


def replay_figures(
    result: ReplayResult, point: dict[str, Any], gpus: int, overhead_ms: float
) -> dict[str, Any]:
    """The figures ``point``'s source measured, read from a replay ``result`` of it: the
    speculators sweep's steady window, else InferenceX's whole run with ``overhead_ms``."""
    if point["source"] == "speculators":
        return _steady(result, point["conc"], gpus, overhead_ms)
    return _whole_run(result.run_summary, gpus, overhead_ms)


def predict(
    points: list[dict[str, Any]],
    progress: Callable[[str], None] | None = None,
    request_overhead_ms: dict[str, float] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """``(predicted, refused)``: every point with its replay config's settings and predicted
    figures, and every point the builder refused with its reason. ``request_overhead_ms``: the
    fitted per-request overhead by engine (none for an engine without training rows)."""
    overheads = request_overhead_ms or {}
    predicted: list[dict[str, Any]] = []
    refused: list[dict[str, Any]] = []
    cache: dict[str, dict[str, Any]] = {}
    todo: list[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]] = []
    for point in points:
        try:
            config, settings = replay_config(point)
        except Refusal as exc:
            refused.append({"id": point["id"], "source": point["source"], "reason": str(exc)})
            continue
        todo.append((point, config, settings))
    distinct = len({workload_key(config) for _, config, _ in todo})
    for point, config, settings in todo:
        key = workload_key(config)
        if key not in cache:
            started = time.perf_counter()
            try:
                result = run_replay(config)
            except AisimError as exc:
                cache[key] = {"error": str(exc)}
            else:
                gpus = settings["gpus"]
                overhead = float(overheads.get(point["engine"], 0.0))
                if point["source"] == "speculators":
                    cache[key] = _steady(result, point["conc"], gpus, overhead)
                else:
                    cache[key] = _whole_run(result.run_summary, gpus, overhead)
            cache[key]["replay_cpu_s"] = round(time.perf_counter() - started, 3)
            if progress is not None:
                progress(f"[{len(cache)}/{distinct}] {point['id']}: {cache[key]['replay_cpu_s']} s")
        outcome = cache[key]
        if "error" in outcome:
            refused.append(
                {
                    "id": point["id"],
                    "source": point["source"],
                    "reason": f"replay: {outcome['error']}",
                }
            )
            continue
        predicted.append({**point, "settings": settings, "predicted": outcome})
    return predicted, refused


def stderr_progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)
