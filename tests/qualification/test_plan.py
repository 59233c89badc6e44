"""The qualification plan: the shipped plan loads, and every malformed plan is one line."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from aisim.cli import main
from aisim.errors import ConfigError
from qualification.plan import DEFAULT_PLAN, load_plan, parse_plan

VALID: dict[str, Any] = {
    "format": 1,
    "name": "p",
    "version": 1,
    "bootstrap": {"resamples": 200, "confidence": 0.95, "seed": 0, "method": "BCa"},
    "datasets": {"d1": {"drafter": "mtp", "description": "x"}},
    "criteria": [
        {
            "id": "rule/d1",
            "check": "rule",
            "dataset": "d1",
            "metric": "equal_config_mape",
            "threshold": 0.1,
            "use": "upper_bound",
            "rationale": "r",
        }
    ],
}


def mutated(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    document = copy.deepcopy(VALID)
    target: Any = document
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return document


def test_the_shipped_plan_loads_and_names_its_datasets() -> None:
    plan = load_plan(DEFAULT_PLAN)
    assert plan.name == "aisim-release"
    assert {c.check for c in plan.criteria} >= {"parity", "probes", "prediction_gate", "rule"}
    for criterion in plan.criteria:
        if criterion.dataset is not None:
            assert criterion.dataset in plan.datasets


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (
            ("criteria", 0, "check"),
            "speed",
            "plan: criteria[0].check: unknown check 'speed'; allowed: parity, probes, "
            "prediction_gate, rule, calibrated_heldout, calibration_transfer, "
            "engine_comparison, cost_model",
        ),
        (
            ("criteria", 0, "metric"),
            "mape",
            "plan: criteria[0].metric: unknown metric 'mape' for check rule; allowed: "
            "round_weighted_mape, equal_config_mape, p90_ape, worst_config_ape, bias, "
            "equal_config_bias, signed_error_slope_d, coverage, tost_p_value",
        ),
        (
            ("criteria", 0, "dataset"),
            "d2",
            "plan: criteria[0].dataset: unknown dataset 'd2'; declared under datasets: d1",
        ),
        (
            ("criteria", 0, "metric"),
            "coverage",
            "plan: criteria[0].use: metric coverage of check rule has no confidence interval; "
            "use: point",
        ),
        (
            ("criteria", 0, "extra"),
            1,
            "plan: criteria[0]: unknown field(s) extra; allowed: artefact, check, dataset, id, "
            "input, known_gap, metric, rationale, required, threshold, use",
        ),
        (
            ("criteria", 0, "use"),
            "mean",
            "plan: criteria[0].use: expected one of point, upper_bound, got 'mean'",
        ),
        (
            ("criteria", 0, "threshold"),
            True,
            "plan: criteria[0].threshold: expected a finite number, got True (bool)",
        ),
        (
            ("criteria", 0, "threshold"),
            float("nan"),
            "plan: criteria[0].threshold: expected a finite number, got nan (float)",
        ),
        (("criteria", 0, "dataset"), KeyError, "plan: criteria[0]: dataset: required for check"),
        (("criteria", 0, "rationale"), KeyError, "plan: criteria[0].rationale: required field"),
        (
            ("bootstrap", "resamples"),
            10,
            "plan: bootstrap.resamples: expected an integer in 100..100000, got 10",
        ),
        (
            ("datasets", "d1", "drafter"),
            "medusa",
            "plan: datasets.d1.drafter: expected one of mtp, eagle3, draft_model, got 'medusa'",
        ),
        (
            ("criteria", 0, "known_gap"),
            {"issue": 0, "reason": "r"},
            "plan: criteria[0].known_gap.issue: expected an integer in 1..2147483647, got 0",
        ),
        (
            ("criteria", 0, "known_gap"),
            {"issue": "9", "reason": "r"},
            "plan: criteria[0].known_gap.issue: expected an integer in 1..2147483647, got '9' "
            "(str)",
        ),
        (
            ("criteria", 0, "known_gap"),
            {"issue": 9, "reason": " "},
            "plan: criteria[0].known_gap.reason: expected a non-empty text naming the gap, got ' '",
        ),
        (
            ("criteria", 0, "known_gap"),
            {"issue": 9},
            "plan: criteria[0].known_gap.reason: required field",
        ),
        (
            ("criteria", 0, "known_gap"),
            {"issue": 9, "reason": "r", "until": "v2"},
            "plan: criteria[0].known_gap: unknown field(s) until; allowed: issue, reason",
        ),
        (
            ("criteria", 0, "known_gap"),
            True,
            "plan: criteria[0].known_gap: expected a mapping, got True (bool)",
        ),
        (("format",), 2, "plan: format: expected an integer in 1..1, got 2"),
        (("criteria",), [], "plan: criteria: List should have at least 1 item"),
    ],
)
def test_a_malformed_plan_is_one_line_naming_the_field(
    path: tuple[Any, ...], value: Any, message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_plan(mutated(path, value))
    text = str(caught.value)
    assert text.startswith(message), text
    assert "\n" not in text


def test_a_known_gap_marker_is_read_with_its_issue_and_reason() -> None:
    plan = parse_plan(mutated(("criteria", 0, "known_gap"), {"issue": 9.0, "reason": "why"}))
    gap = plan.criteria[0].known_gap
    assert gap is not None and (gap.issue, gap.reason) == (9, "why")
    assert parse_plan(VALID).criteria[0].known_gap is None


def test_duplicate_ids_and_misplaced_inputs() -> None:
    document = mutated(("criteria",), [VALID["criteria"][0], VALID["criteria"][0]])
    with pytest.raises(ConfigError, match=r"^plan: criteria\[1\]\.id: duplicate id 'rule/d1'$"):
        parse_plan(document)
    parity = {
        "id": "parity",
        "check": "parity",
        "metric": "failed_tests",
        "threshold": 0,
        "use": "point",
        "dataset": "d1",
        "rationale": "r",
    }
    with pytest.raises(ConfigError, match=r"^plan: criteria\[0\]: dataset: not used by check"):
        parse_plan(mutated(("criteria",), [parity]))


def test_a_malformed_plan_file_is_one_line_from_the_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    plan = tmp_path / "plan.yaml"
    plan.write_text("format: 1\nname: p\ncriteria: [\n")
    assert main(["qualify", "report", "--plan", str(plan), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"aisim: error: {str(plan)!r}: not valid YAML")
    assert err.count("\n") == 1
    plan.write_text(DEFAULT_PLAN.read_text().replace("metric: p90_ape", "metric: p95_ape", 1))
    assert main(["qualify", "report", "--plan", str(plan), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "metric: unknown metric 'p95_ape' for check rule" in err
    assert err.count("\n") == 1
    assert not (tmp_path / "o").exists()
