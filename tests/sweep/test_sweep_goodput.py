"""Goodput and SLO checks against a hand-computed 5-request replay.

Fixed timing (prefill pass 10 ms, decode pass 5 ms), one running request at a time
(max_sequences 1), so every time stamp follows by hand (arrival, prompt, output tokens):

    A  0 ms  100  5   prefill 0-10, decodes to 30:      TTFT 10, E2E 30, TPOT 5
    B  0 ms  100  3   waits for A; 30-40, to 50:        TTFT 40, E2E 50, TPOT 5
    C  1000  100  1   1000-1010:                        TTFT 10, E2E 10, TPOT undefined
    D  2000  100  11  2000-2010, to 2060:               TTFT 10, E2E 60, TPOT 5
    E  2000  100  2   waits for D; 2060-2070, to 2075:  TTFT 70, E2E 75, TPOT 5

Duration 2075 ms (first arrival to last token).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aisim.sweep import run

TRACE = "arrival_s,prompt_tokens,output_tokens\n0,100,5\n0,100,3\n1,100,1\n2,100,11\n2,100,2\n"
DURATION_S = 2.075


def _sweep(tmp_path: Path, slos: dict[str, Any]) -> dict[str, Any]:
    (tmp_path / "five.csv").write_text(TRACE, encoding="utf-8")
    return {
        "base": {
            "traffic": {"source": {"type": "trace", "path": "five.csv"}},
            "engine": {
                "backend": "vllm",
                "workers": {
                    "aggregated": {
                        "scheduler": {"max_batched_tokens": 1024},
                        "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": 64}},
                        "timing": {"type": "fixed", "prefill_ms": 10, "decode_ms": 5},
                    }
                },
            },
        },
        "axes": {"engine.workers.aggregated.scheduler.max_sequences": [1]},
        "slos": slos,
    }


def _row(tmp_path: Path, slos: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.chdir(tmp_path)
    frame = run(_sweep(tmp_path, slos), workers=1)
    assert len(frame) == 1 and frame.loc[0, "status"] == "ok", frame.loc[0, "error"]
    return dict(frame.iloc[0])


def test_latencies_match_the_hand_derivation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    row = _row(tmp_path, {}, monkeypatch)
    assert row["duration_s"] == pytest.approx(DURATION_S)
    assert row["mean_ttft_ms"] == pytest.approx((10 + 40 + 10 + 10 + 70) / 5)
    assert row["mean_e2e_ms"] == pytest.approx((30 + 50 + 10 + 60 + 75) / 5)
    assert row["p50_tpot_ms"] == pytest.approx(5.0)
    # No SLOs: every completed request is good.
    assert row["goodput_rps"] == pytest.approx(5 / DURATION_S)
    assert row["slo_met"]


def test_goodput_counts_requests_within_every_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Per request: TTFT <= 50 and E2E <= 70 hold for A, B, C, D; E (TTFT 70, E2E 75) fails.
    row = _row(tmp_path, {"ttft_ms": {"p90": 50}, "e2e_ms": {"p99": 70}}, monkeypatch)
    assert row["goodput_rps"] == pytest.approx(4 / DURATION_S)
    assert row["goodput_tok_s_per_gpu"] == pytest.approx((5 + 3 + 1 + 11) / DURATION_S)
    assert row["slo_attainment"] == pytest.approx(4 / 5)
    # TTFT p90 of [10, 10, 10, 40, 70] = 40 + 0.6 * 30 = 58 > 50: the SLO is missed.
    assert row["p90_ttft_ms"] == pytest.approx(58.0)
    assert not row["slo_met"]


def test_slo_met_on_statistics_within_limits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # TTFT p50 = 10 <= 10; mean E2E = 45 <= 50. Per request, the strictest limits (TTFT <= 10,
    # E2E <= 50) keep A, C (B: TTFT 40; D: E2E 60; E: both over).
    row = _row(tmp_path, {"ttft_ms": {"p50": 10}, "e2e_ms": {"mean": 50}}, monkeypatch)
    assert row["slo_met"]
    assert row["goodput_rps"] == pytest.approx(2 / DURATION_S)


def test_tpot_limit_spares_single_token_requests(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every TPOT is 5 ms > 4 ms; C has one output token and no TPOT, so only C is good.
    row = _row(tmp_path, {"tpot_ms": {"p90": 4}}, monkeypatch)
    assert row["goodput_rps"] == pytest.approx(1 / DURATION_S)
    assert not row["slo_met"]


def test_a_row_reports_the_decoding_workers_sd_wherever_it_is_listed() -> None:
    # P/D: the prefill worker runs no SD rounds; the row's SD is the decode worker's (mtp, 2
    # drafts, as the config says), also when the decode worker is listed first.
    import dataclasses

    from aisim.config import run_replay
    from aisim.files import load_config_file
    from aisim.sweep import point_metrics

    example = Path(__file__).resolve().parents[2] / "docs/examples/replay/disaggregated_sglang.yaml"
    config = load_config_file(example)
    config["traffic"]["source"]["num_requests"] = 8
    result = run_replay(config)
    summary = result.run_summary
    row = point_metrics(summary, result.columns, {})
    assert [worker.role for worker in summary.workers] == ["prefill", "decode"]
    assert [worker["role"] for worker in result.summary["config"]["workers"]] == [
        "prefill",
        "decode",
    ]
    assert (row["sd_kind"], row["sd_draft_length"]) == ("mtp", 2)
    # GPUs: the prefill worker's 1 + the decode worker's 2 attention-DP ranks of 1 GPU each.
    assert row["gpus"] == 3
    swapped = dataclasses.replace(summary, workers=summary.workers[::-1])
    assert [worker.role for worker in swapped.workers] == ["decode", "prefill"]
    assert point_metrics(swapped, result.columns, {}) == row
