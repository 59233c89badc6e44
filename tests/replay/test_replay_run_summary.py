"""The typed run summary (``RunSummary``): its JSON form is ``summary.json`` (key for key, in the
historical order), and its typed fields carry the hand-derived figures of the fixed-timing
reference (docs/design.md#replay: one request of 100 in / 64 out at X = 10, Y = 5 has TTFT 10
and E2E 325; with 3 drafts all accepted, E2E 90)."""

from __future__ import annotations

from typing import Any

import pytest

from aisim.config import run_replay
from aisim.replay import (
    LatencyStatistics,
    RunSummary,
    SketchedPercentiles,
    SpeculationCounts,
    WorkerSummary,
)


def _config(backend: str, speculation: dict[str, Any] | None = None) -> dict[str, Any]:
    worker = {
        "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": 1000}},
        "timing": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0},
    }
    engine: dict[str, Any] = {"backend": backend, "workers": {"aggregated": worker}}
    if speculation is not None:
        engine["speculation"] = speculation
    requests = [{"input_length": 100, "output_length": 64}]
    return {"traffic": {"source": {"type": "agentic", "requests": requests}}, "engine": engine}


EMPTY = LatencyStatistics(None, None, None, None, None)


def _latency(value: float) -> LatencyStatistics:
    return LatencyStatistics(value, value + 1, value + 2, value + 3, value + 4)


def test_to_dict_is_the_summary_json_form() -> None:
    summary = RunSummary(
        total_requests=3,
        completed_requests=2,
        not_completed_reasons={"horizon": 1},
        duration_ms=1500.0,
        total_input_tokens=300,
        total_output_tokens=40,
        request_throughput_rps=2 / 1.5,
        output_throughput_tok_s=40 / 1.5,
        input_throughput_tok_s=300 / 1.5,
        ttft=_latency(10.0),
        time_to_second_token=EMPTY,
        tpot=_latency(20.0),
        e2e_latency=_latency(30.0),
        itl=_latency(40.0),
        speculation=SpeculationCounts(7, 5, 6, 11 / 5, (1, 2, 2)),
        passes=9,
        events=20,
        preemptions=1,
        sd_reservation_preemptions=0,
        cached_prompt_tokens=16,
        workers=(
            WorkerSummary("prefill", 2, 1, "none", 0, (12,)),
            WorkerSummary("decode", 1, 2, "mtp", 2, (3, 4)),
        ),
        config={"workers": [{"role": "prefill"}, {"role": "decode"}]},
        sketched_percentiles=SketchedPercentiles("ddsketch-logarithmic", 0.01, 10, ("itl",)),
    )
    expected = {
        "total_requests": 3,
        "completed_requests": 2,
        "not_completed_requests": 1,
        "not_completed_reasons": {"horizon": 1},
        "duration_ms": 1500.0,
        "total_input_tokens": 300,
        "total_output_tokens": 40,
        "request_throughput_rps": 2 / 1.5,
        "output_throughput_tok_s": 40 / 1.5,
        "input_throughput_tok_s": 300 / 1.5,
    }
    for name, base in (("ttft", 10.0), ("time_to_second_token", None), ("tpot", 20.0)):
        for offset, statistic in enumerate(("mean", "median", "p90", "p95", "p99")):
            expected[f"{statistic}_{name}_ms"] = None if base is None else base + offset
    for name, base in (("e2e_latency", 30.0), ("itl", 40.0)):
        for offset, statistic in enumerate(("mean", "median", "p90", "p95", "p99")):
            expected[f"{statistic}_{name}_ms"] = base + offset
    expected.update(
        {
            "decode_rounds": 7,
            "sd_rounds": 5,
            "accepted_draft_tokens": 6,
            "mean_acceptance_length": 2.2,
            "accepted_length_histogram": {"0": 1, "1": 2, "2": 2},
            "passes": 9,
            "events": 20,
            "preemptions": 1,
            "sd_reservation_preemptions": 0,
            "cached_prompt_tokens": 16,
            "kv_peak_used_blocks": [[12], [3, 4]],
            "config": {"workers": [{"role": "prefill"}, {"role": "decode"}]},
            "latency_percentiles": {
                "method": "sketch",
                "sketch": "ddsketch-logarithmic",
                "relative_accuracy": 0.01,
                "exact_limit": 10,
                "sketched": ["itl"],
            },
        }
    )
    produced = summary.to_dict()
    assert produced == expected
    assert list(produced) == list(expected)
    # The GPUs of both workers (2 x 1 + 1 x 2) and the decoding worker wherever it is listed.
    assert summary.gpus == 4
    assert summary.decoding_worker.role == "decode"
    # Each call hands out a new dict: changing one changes nothing in the summary.
    produced["config"]["workers"].clear()
    assert summary.to_dict()["config"]["workers"] == [{"role": "prefill"}, {"role": "decode"}]
    with pytest.raises(ValueError, match="latency: expected one of ttft, "):
        summary.latency("ttfb")


@pytest.mark.parametrize("backend", ["vllm", "sglang"])
def test_the_typed_fields_hold_the_fixed_timing_reference(backend: str) -> None:
    # Prefill pass 0..10 emits the first token; 63 decode rounds of 5 ms follow: 10 + 315.
    result = run_replay(_config(backend))
    summary = result.run_summary
    assert summary.to_dict() == result.summary
    assert (summary.total_requests, summary.completed_requests) == (1, 1)
    assert summary.ttft.mean_ms == pytest.approx(10.0)
    assert summary.e2e_latency.p99_ms == pytest.approx(325.0)
    assert summary.tpot.median_ms == pytest.approx(5.0)
    assert summary.speculation.sd_rounds == 0
    assert summary.speculation.mean_acceptance_length is None
    assert [(worker.role, worker.gpus) for worker in summary.workers] == [("aggregated", 1)]
    # 3 drafts all accepted: 63 tokens after the first in 16 rounds of 4 (the last clamped on
    # SGLang, all 4 verified on vLLM); every round an SD round.
    mtp = {"kind": "mtp", "params": {"depth": 3}, "acceptance_rates": [1.0, 1.0, 1.0]}
    drafted = run_replay(_config(backend, mtp))
    speculation = drafted.run_summary.speculation
    assert drafted.run_summary.e2e_latency.mean_ms == pytest.approx(90.0)
    assert speculation.sd_rounds == 16
    assert drafted.run_summary.workers[0].speculation == "mtp"
    assert drafted.run_summary.workers[0].draft_length == 3
