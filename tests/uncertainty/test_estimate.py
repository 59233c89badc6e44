"""``aisim estimate --intervals``: the price times the step kind's cost-error factors."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aisim.cli import main
from aisim.config import best_available
from aisim.fpm import ForwardPassMetrics
from aisim.uncertainty import CostErrorTable, ErrorSample
from aisim.uncertainty._estimate import estimate_interval, render_interval

ROOT = Path(__file__).resolve().parents[2]


def test_two_decode_samples_bound_the_interval() -> None:
    model = best_available({"model": "Qwen/Qwen3-8B", "hardware": "h100", "estimator": "roofline"})
    metrics = ForwardPassMetrics(4, 4096)
    table = CostErrorTable(
        (
            ErrorSample("roofline", "decode", "r", "a", 0.9, "s", "t"),
            ErrorSample("roofline", "decode", "r", "b", 1.1, "s", "t"),
        )
    )
    interval = estimate_interval(model, metrics, 10.0, None, table=table)
    assert (interval["low_ms"], interval["high_ms"]) == (9.0, 11.0)
    assert interval["p50_ms"] in (9.0, 11.0) and interval["step_kind"] == "decode"
    assert interval["included"]
    prefill = estimate_interval(model, ForwardPassMetrics(0, 0, 1, 512), 10.0, None, table=table)
    assert not prefill["included"] and prefill["low_ms"] == prefill["high_ms"] == 10.0


def test_cli_json_carries_the_interval(capsys: pytest.CaptureFixture[str]) -> None:
    flags = ["--model", "Qwen/Qwen3-8B", "--hardware", "h100", "--batch", "8", "--kv", "1024"]
    assert main(["estimate", *flags, "--json", "--intervals"]) == 0
    payload = json.loads(capsys.readouterr().out)
    interval = payload["interval"]
    latency = payload["result"]["latency_ms"]
    assert interval["point_ms"] == latency
    # A decode step (batch 8, no SD) draws the roofline's decode ratios, whose central 90 % is
    # 0.855-1.418 (docs/uncertainty.md, the worked example's cost line): the point (factor 1)
    # lies strictly inside, and the bounds well within 0.5-2 x the point.
    assert interval["step_kind"] == "decode" and interval["included"]
    assert interval["low_ms"] < latency < interval["high_ms"]
    assert 0.5 * latency < interval["low_ms"] and interval["high_ms"] < 2.0 * latency
    assert interval["sources"] == [
        "evidence/public-gpu/scored/public_gpu_rows.csv",
        "qualification/public/measurements.json",
    ]
    assert main(["estimate", *flags, "--json"]) == 0
    assert "interval" not in json.loads(capsys.readouterr().out)


def test_a_rule_priced_round_names_the_rule_evidence_it_draws() -> None:
    """`aisim estimate --estimator table --draft-length 3 --intervals` drew the STP->SD rule's
    round errors but said '0 samples from ' (the table estimator's own, empty, evidence).
    Two rule samples, 0.8 and 1.2, and no table evidence: the round's interval is [8, 12] ms
    around a 10 ms price, drawn from the rule's two samples of source 'ds'."""
    table_csv = ROOT / "docs" / "examples" / "estimators" / "stp_qwen3_8b_h100.csv"
    model = best_available(
        {"model": "Qwen/Qwen3-8B", "tables": [str(table_csv)], "estimator": "table"}
    )
    evidence = CostErrorTable(
        (
            ErrorSample("stp_rule", "sd_round", "r", "a", 0.8, "ds", "t", relative_to="decode"),
            ErrorSample("stp_rule", "sd_round", "r", "b", 1.2, "ds", "t", relative_to="decode"),
        )
    )
    interval = estimate_interval(model, ForwardPassMetrics(2, 8192), 10.0, 3, table=evidence)
    assert interval["step_kind"] == "sd_round" and interval["included"]
    assert (interval["low_ms"], interval["high_ms"]) == (8.0, 12.0)
    assert interval["sources"] == ["ds"]
    assert interval["evidence"]["samples"] == 2
    text = render_interval(interval)
    assert "of the stp_rule sd_round cost errors: 2 samples from ds)" in text
