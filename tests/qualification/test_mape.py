"""MAPE metrics against hand-computed values, the rule predictor, and the optional tests."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from aisim.errors import ConfigError
from qualification.datasets import RecordedDataset
from qualification.mape import (
    Prediction,
    RoundQuery,
    evaluate,
    ks_two_sample,
    make_predictor,
    student_t_sf,
    summarize,
    tost_log_ratio,
)

# Five rounds in three configurations (hand-computed below):
#   A: measured 100, 110, predicted 110 -> APE 0.10, 0.00; signed +0.10, 0.00; median 105
#   B: measured 200, 200, predicted 180 -> APE 0.10, 0.10; signed -0.10, -0.10
#   C: measured 50,       predicted 60  -> APE 0.20;       signed +0.20
FIVE_ROWS = pd.DataFrame(
    {
        "config_id": ["A", "A", "B", "B", "C"],
        "cell": ["x"] * 5,
        "device": ["cpu"] * 5,
        "model": ["m"] * 5,
        "draft_length": [1, 1, 2, 2, 3],
        "measured_ms": [100.0, 110.0, 200.0, 200.0, 50.0],
        "predicted_ms": [110.0, 110.0, 180.0, 180.0, 60.0],
        "reason": [""] * 5,
    }
)


def test_five_row_metrics_by_hand() -> None:
    summary = summarize(FIVE_ROWS)
    assert summary["round_weighted_mape"] == pytest.approx((0.1 + 0 + 0.1 + 0.1 + 0.2) / 5)
    # A scored on its median 105: |110 - 105| / 105 = 1/21
    assert summary["equal_config_mape"] == pytest.approx((1 / 21 + 0.1 + 0.2) / 3)
    # sorted APE [0, .1, .1, .1, .2]; rank 0.9 * 4 = 3.6 -> 0.1 + 0.6 * 0.1
    assert summary["p90_ape"] == pytest.approx(0.16)
    assert summary["worst_config"] == {"config_id": "C", "ape": pytest.approx(0.2)}
    assert summary["bias"] == pytest.approx((0.1 + 0 - 0.1 - 0.1 + 0.2) / 5)
    assert summary["equal_config_bias"] == pytest.approx((1 / 21 - 0.1 + 0.2) / 3)
    assert summary["coverage"] == 1.0
    assert summary["configurations"] == 3
    assert summary["unanswered_reasons"] == {}


def test_unanswered_rows_count_against_coverage_only() -> None:
    extra = pd.DataFrame(
        {
            "config_id": ["D"],
            "cell": ["x"],
            "device": ["cpu"],
            "model": ["m"],
            "draft_length": [4],
            "measured_ms": [80.0],
            "predicted_ms": [math.nan],
            "reason": ["UnsupportedQuery: outside the table"],
        }
    )
    summary = summarize(pd.concat([FIVE_ROWS, extra], ignore_index=True))
    assert summary["coverage"] == pytest.approx(5 / 6)
    assert summary["rounds_answered"] == 5
    assert summary["configurations_answered"] == 3
    assert summary["unanswered_reasons"] == {"UnsupportedQuery: outside the table": 1}
    assert summary["round_weighted_mape"] == pytest.approx(0.1)
    assert summary["equal_config_mape"] == pytest.approx((1 / 21 + 0.1 + 0.2) / 3)


class FixedPredictor:
    """Answers from a dict keyed by config id; missing ids are unanswered."""

    name = "fixed"
    description = "hand-written predictions"

    def __init__(self, answers: dict[str, float]) -> None:
        self.answers = answers

    def predict(self, query: RoundQuery) -> Prediction:
        if query.config_id not in self.answers:
            return Prediction(None, reason="no answer")
        return Prediction(self.answers[query.config_id])


def test_evaluate_maps_predictions_onto_rounds_and_cells(
    make_dataset: Callable[..., RecordedDataset],
) -> None:
    dataset = make_dataset(
        "ds",
        {(1, 256): 10.0},
        [(1, 1, 256, [100.0, 110.0]), (2, 1, 256, [200.0, 200.0]), (3, 1, 256, [50.0])],
    )
    predictor = FixedPredictor({"d1-b1-k256": 110.0, "d2-b1-k256": 180.0})
    report, scored = evaluate(dataset, predictor)
    assert scored["predicted_ms"].tolist()[:4] == [110.0, 110.0, 180.0, 180.0]
    assert report["summary"]["round_weighted_mape"] == pytest.approx(0.3 / 4)
    assert report["summary"]["unanswered_reasons"] == {"no answer": 1}
    cells = {cell["draft_length"]: cell for cell in report["cells"]}
    assert cells[1]["equal_config_mape"] == pytest.approx(1 / 21)
    assert cells[2]["round_weighted_mape"] == pytest.approx(0.1)
    assert cells[3]["coverage"] == 0.0
    assert report["dataset"]["evidence_type"] == "synthetic"


def test_rule_predictor_uses_widened_reference_and_published_factor(
    make_dataset: Callable[..., RecordedDataset],
) -> None:
    # Published oracle shape: F_STP at ((d + 1) B, K) = (8, 64) is 8 ms; B = 2, d = 3 -> 11.92 ms.
    dataset = make_dataset(
        "oracle", {(2, 64): 5.0, (4, 64): 6.0, (8, 64): 8.0}, [(3, 2, 64, [11.92, 13.0])]
    )
    report, scored = evaluate(dataset, make_predictor("rule", dataset))
    assert scored["predicted_ms"].tolist() == pytest.approx([11.92, 11.92])
    assert scored["stp_reference_ms"].tolist() == pytest.approx([8.0, 8.0])
    assert report["summary"]["round_weighted_mape"] == pytest.approx((0 + 1.08 / 13.0) / 2)
    widened, _ = evaluate(dataset, make_predictor("stp-widened", dataset))
    assert widened["summary"]["bias"] == pytest.approx(((8 - 11.92) / 11.92 + (8 - 13) / 13) / 2)


def test_rule_outside_the_table_is_unanswered_not_extrapolated(
    make_dataset: Callable[..., RecordedDataset],
) -> None:
    dataset = make_dataset("small", {(1, 64): 5.0, (2, 64): 6.0}, [(3, 1, 64, [9.0])])
    report, _ = evaluate(dataset, make_predictor("rule", dataset))
    assert report["summary"]["coverage"] == 0.0
    assert report["summary"]["round_weighted_mape"] is None
    (reason,) = report["summary"]["unanswered_reasons"]
    assert reason.startswith("UnsupportedQuery")


def test_unknown_estimator_and_missing_coefficients(
    make_dataset: Callable[..., RecordedDataset],
) -> None:
    dataset = make_dataset("ds", {(2, 64): 5.0}, [(1, 1, 64, [9.0])])
    with pytest.raises(ConfigError, match="unknown 'magic'"):
        make_predictor("magic", dataset)
    with pytest.raises(ConfigError, match="--coefficients"):
        make_predictor("calibrated", dataset)


def test_student_t_tail_against_closed_forms() -> None:
    # df = 1 is Cauchy: P(T > t) = 1/2 - atan(t)/pi; df = 2: 1/2 - t / (2 sqrt(t^2 + 2)).
    for t in (-2.0, 0.0, 0.5, 1.0, 3.0, 12.0):
        assert student_t_sf(t, 1) == pytest.approx(0.5 - math.atan(t) / math.pi, abs=1e-12)
        assert student_t_sf(t, 2) == pytest.approx(0.5 - t / (2 * math.sqrt(t * t + 2)), abs=1e-12)
    # Published t-table: the one-sided 2.5 % point for 10 degrees of freedom is 2.228.
    assert student_t_sf(2.228, 10) == pytest.approx(0.025, abs=5e-5)


def test_ks_statistic_and_exact_p_value() -> None:
    assert ks_two_sample([1, 2, 3], [4, 5, 6])["statistic"] == 1.0
    assert ks_two_sample([1, 2, 3, 4], [3, 4, 5, 6])["statistic"] == 0.5
    same = ks_two_sample([1.0, 2.0, 3.0], [1.0, 2.0, 3.0])
    assert same == {"statistic": 0.0, "p_value": 1.0}
    # Exact, by counting: of the C(6, 3) = 20 equally likely orderings of two samples of 3,
    # only the 2 fully separated ones reach D = 1, so P(D >= 1) = 2 / 20.
    assert ks_two_sample([1, 2, 3], [4, 5, 6])["p_value"] == pytest.approx(0.1, abs=1e-12)


def test_tost_equivalence_by_hand() -> None:
    # log ratios 0, 0.02, 0.04: mean 0.02, s 0.02, se 0.02/sqrt(3); df = 2 (closed form).
    measured = [100.0, 100.0, 100.0]
    predicted = [100.0 * math.exp(r) for r in (0.0, 0.02, 0.04)]
    result = tost_log_ratio(predicted, measured, margin=0.10)
    se = 0.02 / math.sqrt(3)
    t_upper = (math.log(1.1) - 0.02) / se
    expected_p = 0.5 - t_upper / (2 * math.sqrt(t_upper**2 + 2))
    assert result["p_value"] == pytest.approx(expected_p, rel=1e-9)
    assert result["equivalent"] is True
    far = tost_log_ratio([150.0, 160.0, 155.0], measured, margin=0.10)
    assert far["equivalent"] is False


def test_mape_outputs_are_byte_identical_for_the_same_inputs(
    make_dataset: Callable[..., RecordedDataset], tmp_path: Path
) -> None:
    from qualification.mape import write_mape_outputs

    dataset = make_dataset(
        "ds", {(2, 64): 5.0, (3, 64): 6.0}, [(1, 1, 64, [7.0, 6.5]), (2, 1, 64, [8.1, 8.3])]
    )
    outputs = []
    for name in ("one", "two"):
        report, scored = evaluate(dataset, make_predictor("rule", dataset), with_tests=True)
        paths = write_mape_outputs(report, scored, tmp_path / name)
        outputs.append([path.read_bytes() for path in paths])
    assert outputs[0] == outputs[1]
    assert outputs[0][2].startswith(b"\x89PNG")


def test_tost_margin_must_be_a_fraction(make_dataset: Callable[..., RecordedDataset]) -> None:
    dataset = make_dataset("ds", {(2, 64): 5.0}, [(1, 1, 64, [7.0])])
    with pytest.raises(
        ConfigError, match=r"^--tost-margin: expected a number in \(0, 1\), got -2\.0$"
    ):
        evaluate(dataset, make_predictor("rule", dataset), with_tests=True, tost_margin=-2.0)
