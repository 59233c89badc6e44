"""``aisim snapshot``: writes every prediction with provenance, refuses to clobber, records aisim
errors as predictions; two snapshots of the same code compare equal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aisim.cli import main

SCENARIOS = """\
format: 1
scenarios:
  - id: oracle
    kind: estimate
    config:
      model: Qwen/Qwen3-8B
      hardware: h100_sxm
      estimator: table
      points:
        - {batch_size: 8, total_kv_tokens: 64, latency_ms: 8.0}
        - {batch_size: 1, total_kv_tokens: 0, latency_ms: 6.0}
        - {batch_size: 16, total_kv_tokens: 128, latency_ms: 9.0}
        - {batch_size: 1, total_kv_tokens: 128, latency_ms: 6.0}
        - {batch_size: 16, total_kv_tokens: 0, latency_ms: 9.0}
    metrics: {num_decode_requests: 2, sum_decode_kv_tokens: 64}
    draft_length: 3
  - id: rejected
    kind: estimate
    config: {model: Qwen/Qwen3-8B, hardware: h100_sxm, estimator: roofline}
    metrics: {num_decode_requests: 2, sum_decode_kv_tokens: 64}
    draft_length: 3
  - id: bad-metric-field
    kind: estimate
    config: {model: Qwen/Qwen3-8B, hardware: h100_sxm}
    metrics: {num_decode_requests: 2, kv: 64}
  - id: one-request
    kind: replay
    config:
      traffic: {source: {type: agentic, requests: [{input_length: 100, output_length: 64}]}}
      engine:
        workers:
          aggregated:
            kv_cache: {block_size: 16, capacity: {type: fixed, blocks: 1000}}
            timing: {type: fixed, prefill_ms: 10.0, decode_ms: 5.0}
    outputs: [mean_ttft_ms, mean_e2e_latency_ms, completed_requests]
"""


@pytest.fixture
def scenarios(tmp_path: Path) -> str:
    path = tmp_path / "scenarios.yaml"
    path.write_text(SCENARIOS, encoding="utf-8")
    return str(path)


def test_snapshot_writes_predictions_with_provenance(
    tmp_path: Path, scenarios: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "snap.json"
    assert main(["snapshot", "--scenarios", scenarios, "--out", str(out)]) == 0
    assert "8 predictions from 4 scenarios" in capsys.readouterr().out
    snapshot = json.loads(out.read_text(encoding="utf-8"))
    assert snapshot["format"] == 1 and snapshot["build"] in ("pure", "compiled")
    assert len(snapshot["scenarios_sha256"]) == 64
    predictions = snapshot["predictions"]
    # published oracle: STP(8, 64) = 8 ms -> B = 2, d = 3 costs 1.49 * 8 = 11.92 ms
    assert predictions["oracle"] == {
        "latency_ms": 11.92,
        "scaling_factor": 1.49,
        "stp_latency_ms": 8.0,
    }
    assert predictions["rejected"]["error"].startswith("UnsupportedQuery: draft_length")
    assert predictions["bad-metric-field"]["error"].startswith(
        "ConfigError: metrics[0]: unknown field(s) kv"
    )
    # docs/design.md#replay fixed-timing reference: one request 100 in / 64 out at X = 10, Y = 5: TTFT 10, E2E 325
    assert predictions["one-request"] == {
        "completed_requests": 1,
        "mean_ttft_ms": 10.0,
        "mean_e2e_latency_ms": 325.0,
    }


def test_snapshot_refuses_to_clobber_without_overwrite(
    tmp_path: Path, scenarios: str, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "snap.json"
    out.write_text("keep", encoding="utf-8")
    assert main(["snapshot", "--scenarios", scenarios, "--out", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err
    assert out.read_text(encoding="utf-8") == "keep"
    assert main(["snapshot", "--scenarios", scenarios, "--out", str(out), "--overwrite"]) == 0


def test_bad_scenario_file_is_one_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("format: 1\nscenarios: [{id: x, kind: estimate, config: {}}]\n", "utf-8")
    assert main(["snapshot", "--scenarios", str(bad), "--out", str(tmp_path / "s.json")]) == 2
    assert "metrics: required for an estimate scenario" in capsys.readouterr().err
    assert not (tmp_path / "s.json").exists()


def test_two_snapshots_of_the_same_code_compare_equal(
    tmp_path: Path, scenarios: str, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "a.json", tmp_path / "b.json"
    assert main(["snapshot", "--scenarios", scenarios, "--out", str(first)]) == 0
    assert main(["snapshot", "--scenarios", scenarios, "--out", str(second)]) == 0
    assert first.read_bytes() == second.read_bytes()
    capsys.readouterr()
    assert main(["compare", str(first), str(second), "--rtol", "0"]) == 0
    assert capsys.readouterr().out.startswith("aisim compare: ok, 8 predictions in 4 scenarios")
