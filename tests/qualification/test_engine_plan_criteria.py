"""The plan's standard criteria for engine recordings: every committed recording is judged by
the whole set, and the printed entries mark what fails, from hand-made figures."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from qualification.engine._recording import load_recording
from qualification.engine._report_section import find_engine_recordings
from qualification.engine.plan_criteria import (
    STANDARD,
    compared_value,
    entries,
    has_engine_steps,
    main,
)

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "evidence" / "engine" / "vllm-cpu-quiet-llama-4x256"
BY_SUFFIX = {standard.suffix: standard for standard in STANDARD}


def report(**summary: Any) -> dict[str, Any]:
    """A scored report with only what the criteria read: replay's E2E median 12 %, P90 30 %,
    mean TTFT -11 %, throughput -12 %, worst step price 4 %; the engine's repeat noise 10 %
    and its repeat floor 15 % (median) / 25 % (P90)."""
    base: dict[str, Any] = {
        "e2e": {"median_abs_error_pct": 12.0, "p90_abs_error_pct": 30.0},
        "ttft": {"mean_error_pct": -11.0},
        "throughput_error_pct": -12.0,
        "step_price_median_error_max_pct": 4.0,
    }
    return {
        "summary": base | summary,
        "noise_floor": {"e2e": {"median_abs_error_pct": 10.0}},
        "repeat_floor": {"e2e": {"median_abs_error_pct": 15.0, "p90_abs_error_pct": 25.0}},
    }


def test_compared_values_are_the_reports() -> None:
    scored = report()
    expected = {
        "e2e-vs-noise": 1.2,  # 12 / 10
        "e2e-vs-repeat-floor": 0.8,  # 12 / 15
        "e2e-p90-vs-repeat-floor": 1.2,  # 30 / 25
        "throughput": 0.12,  # |-12 %|
        "e2e-median-8pct": 0.12,
        "e2e-p90-20pct": 0.30,
        "ttft-mean-10pct": 0.11,  # |-11 %|
        "step-price-5pct": 0.04,
    }
    for suffix, value in expected.items():
        assert compared_value(BY_SUFFIX[suffix], scored) == pytest.approx(value), suffix
    # One served run: no repeat noise, no floor; the ratios cannot be judged.
    single = report()
    single["noise_floor"], single["repeat_floor"] = None, None
    assert compared_value(BY_SUFFIX["e2e-vs-noise"], single) is None
    assert compared_value(BY_SUFFIX["e2e-vs-repeat-floor"], single) is None


def test_entries_mark_exactly_the_failing_criteria() -> None:
    recording = load_recording(RECORDING)
    text = entries(recording, report(), ROOT)
    parsed = yaml.safe_load(text)
    assert [entry["id"].rsplit("/", 1)[1] for entry in parsed] == [s.suffix for s in STANDARD]
    assert {entry["input"] for entry in parsed} == {"evidence/engine/vllm-cpu-quiet-llama-4x256"}
    # 1.2 > 1 (noise), 1.2 > 1 (P90 floor), 0.12 > 0.08, 0.30 > 0.20, 0.11 > 0.10; the floor's
    # median 0.8, throughput 0.12 <= 0.2 and the step price 0.04 <= 0.05 pass.
    failing = [
        line.split()[3] for line in text.splitlines() if line.strip().startswith("# FAILS now")
    ]
    assert failing == [
        "e2e_median_ape_vs_noise",
        "e2e_p90_ape_vs_repeat_floor",
        "e2e_median_ape",
        "e2e_p90_ape",
        "ttft_mean_relative_error",
    ]
    assert "# FAILS" not in entries(recording, None, ROOT)


def test_every_committed_recording_is_judged_by_the_whole_standard_set() -> None:
    plan = yaml.safe_load((ROOT / "qualification" / "plan.yaml").read_text(encoding="utf-8"))
    planned: dict[str, set[tuple[Any, ...]]] = {}
    for criterion in plan["criteria"]:
        if criterion["check"] == "engine_comparison":
            planned.setdefault(criterion["input"], set()).add(
                (criterion["id"], criterion["metric"], criterion["threshold"], criterion["use"])
            )
    recordings = find_engine_recordings(ROOT / "evidence")
    assert len(recordings) >= 39
    for directory in recordings:
        recording = load_recording(directory)
        expected = {
            (entry["id"], entry["metric"], entry["threshold"], entry["use"])
            for entry in yaml.safe_load(entries(recording, None, ROOT))
        }
        steps = has_engine_steps(recording)
        assert len(expected) == len(STANDARD) - (0 if steps else 1)
        assert planned.get(directory.relative_to(ROOT).as_posix()) == expected, directory.name


def test_a_path_that_is_no_recording_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["/nonexistent/recording"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "/nonexistent/recording" in err
