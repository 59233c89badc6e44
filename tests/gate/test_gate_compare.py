"""``aisim compare`` on hand-built snapshots: exit codes, the moved-prediction listing, tolerance,
and malformed snapshot files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from aisim.cli import main


def _snapshot(predictions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "format": 1,
        "aisim_version": "0.1.0",
        "build": "pure",
        "scenarios_sha256": "0" * 64,
        "predictions": predictions,
    }


BASE = {
    "roofline/qwen3-8b/h100/b8": {"latency_ms": 12.5},
    "table/oracle/d3": {"latency_ms": 11.92, "scaling_factor": 1.49, "stp_latency_ms": 8.0},
    "replay/vllm/mtp3": {"mean_ttft_ms": 40.0, "completed_requests": 16},
}


def _write(tmp_path: Path, name: str, predictions: dict[str, dict[str, Any]]) -> str:
    path = tmp_path / name
    path.write_text(json.dumps(_snapshot(predictions)), encoding="utf-8")
    return str(path)


def _changed(**changes: dict[str, Any]) -> dict[str, dict[str, Any]]:
    result = {key: dict(value) for key, value in BASE.items()}
    for key, value in changes.items():
        result[key.replace("__", "/")] = value
    return result


def test_identical_snapshots_exit_0_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _write(tmp_path, "old.json", BASE)
    new = _write(tmp_path, "new.json", BASE)
    assert main(["compare", old, new]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["aisim compare: ok, 6 predictions in 3 scenarios, none moved beyond rtol 1e-09"]


def test_a_moved_prediction_exits_1_and_names_case_metric_old_new_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    moved = {key: dict(value) for key, value in BASE.items()}
    moved["table/oracle/d3"]["latency_ms"] = 11.98
    moved["replay/vllm/mtp3"]["mean_ttft_ms"] = 30.0
    assert (
        main(["compare", _write(tmp_path, "a.json", BASE), _write(tmp_path, "b.json", moved)]) == 1
    )
    lines = capsys.readouterr().out.splitlines()
    assert (
        lines[0]
        == "aisim compare: 2 prediction(s) moved beyond rtol 1e-09 and 0 scenario(s) removed"
    )
    assert lines[1] == "case\tmetric\told\tnew\trelative_change"
    # (30 - 40) / 40 = -0.25; (11.98 - 11.92) / 11.92 = +5.034e-03
    assert lines[2] == "replay/vllm/mtp3\tmean_ttft_ms\t40.0\t30.0\t-2.500e-01"
    assert lines[3] == "table/oracle/d3\tlatency_ms\t11.92\t11.98\t+5.034e-03"
    assert len(lines) == 4


def test_tolerance_decides_what_moved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    nudged = {key: dict(value) for key, value in BASE.items()}
    nudged["roofline/qwen3-8b/h100/b8"]["latency_ms"] = 12.5 * (1 + 1e-12)
    old, new = _write(tmp_path, "a.json", BASE), _write(tmp_path, "b.json", nudged)
    assert main(["compare", old, new]) == 0
    assert main(["compare", old, new, "--rtol", "0"]) == 1
    assert "roofline/qwen3-8b/h100/b8\tlatency_ms" in capsys.readouterr().out
    loose = {key: dict(value) for key, value in BASE.items()}
    loose["roofline/qwen3-8b/h100/b8"]["latency_ms"] = 12.6  # +0.8 %
    assert main(["compare", old, _write(tmp_path, "c.json", loose), "--rtol", "0.01"]) == 0
    assert main(["compare", old, _write(tmp_path, "c2.json", loose), "--rtol", "0.001"]) == 1


def test_removed_scenarios_fail_and_new_ones_are_only_listed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = _write(tmp_path, "a.json", BASE)
    fewer = {key: value for key, value in BASE.items() if key != "replay/vllm/mtp3"}
    assert main(["compare", old, _write(tmp_path, "b.json", fewer)]) == 1
    assert "removed scenario replay/vllm/mtp3" in capsys.readouterr().out
    more = {**BASE, "replay/sglang/ngram3": {"mean_ttft_ms": 5.0}}
    assert main(["compare", old, _write(tmp_path, "c.json", more)]) == 0
    assert "(1 new scenario(s))" in capsys.readouterr().out


def test_a_scenario_that_starts_failing_is_a_moved_prediction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    broken = {key: dict(value) for key, value in BASE.items()}
    broken["roofline/qwen3-8b/h100/b8"] = {"error": "UnsupportedQuery: no"}
    assert (
        main(["compare", _write(tmp_path, "a.json", BASE), _write(tmp_path, "b.json", broken)]) == 1
    )
    out = capsys.readouterr().out
    assert "roofline/qwen3-8b/h100/b8\tlatency_ms\t12.5\t'<absent>'\tn/a" in out


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not a readable JSON snapshot"),
        ("[]", "expected a mapping"),
        ('{"format": 2, "predictions": {}}', "expected snapshot format 1"),
        ('{"format": 1, "predictions": []}', "predictions: expected a mapping"),
        ('{"format": 1, "predictions": {"a": 3}}', "expected a mapping"),
    ],
)
def test_malformed_snapshots_are_one_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, message: str
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text(content, encoding="utf-8")
    assert main(["compare", str(bad), _write(tmp_path, "ok.json", BASE)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("aisim: error: ") and message in err and err.count("\n") == 1


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("NaN", "nan (float)"),
        ("-Infinity", "-inf (float)"),
        ("true", "True (bool)"),
        ("null", "None (NoneType)"),
        ("[1]", "[1] (list)"),
        ('{"a": 1}', "{'a': 1} (dict)"),
        ("1" + "0" * 400, "1000000000000000000000000000000000000... (int)"),
    ],
)
def test_a_prediction_no_snapshot_holds_is_one_error_not_a_moved_prediction(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, shown: str
) -> None:
    """Compared as 'moved' (exit 1, a table row with 'nan' or 'True'), either side, where aisim
    writes only finite numbers and text ('nan', 'inf', an error message) there."""
    bad = tmp_path / "bad.json"
    bad.write_text(
        '{"format": 1, "predictions": {"r/b8": {"latency_ms": ' + value + "}}}",
        encoding="utf-8",
    )
    ok = _write(tmp_path, "ok.json", {"r/b8": {"latency_ms": 12.5}})
    for argv in (["compare", ok, str(bad)], ["compare", str(bad), ok]):
        assert main(argv) == 2
        assert capsys.readouterr().err == (
            f"aisim: error: {bad}.predictions['r/b8'].latency_ms: expected a finite number or a "
            f"text ('nan', 'inf', an error), got {shown}; not a snapshot aisim wrote\n"
        )
    spelled = _write(tmp_path, "spelled.json", {"r/b8": {"latency_ms": "nan", "error": "x"}})
    assert main(["compare", ok, spelled]) == 1  # text is a prediction: it moved


def test_missing_snapshot_and_bad_rtol(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ok = _write(tmp_path, "ok.json", BASE)
    assert main(["compare", str(tmp_path / "none.json"), ok]) == 2
    assert "snapshot file not found" in capsys.readouterr().err
    assert main(["compare", ok, ok, "--rtol", "-1"]) == 2
    assert "--rtol: expected a finite number >= 0" in capsys.readouterr().err
