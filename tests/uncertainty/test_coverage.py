"""Coverage of the intervals: held-out evidence and the plan's interval_coverage check."""

from __future__ import annotations

from pathlib import Path

import pytest

from aisim.uncertainty import CostErrorTable, ErrorSample, load_cost_errors
from qualification.plan import Criterion
from qualification.report._verdict import judge_criterion

ROOT = Path(__file__).resolve().parents[2]


def criterion(metric: str, threshold: float) -> Criterion:
    return Criterion(
        id=f"intervals/{metric}",
        check="interval_coverage",
        metric=metric,
        threshold=threshold,
        use="point",
        rationale="test",
    )


@pytest.mark.parametrize(
    ("metric", "threshold", "figures", "status"),
    [
        ("engine_min_coverage", 0.80, {"engine_min_coverage": 0.85}, "PASS"),
        ("engine_min_coverage", 0.80, {"engine_min_coverage": 0.70}, "FAIL"),
        ("engine_max_coverage", 0.97, {"engine_max_coverage": 1.0}, "FAIL"),
        ("engine_max_coverage", 0.97, {"engine_max_coverage": 0.9}, "PASS"),
        ("public_min_coverage", 0.80, {}, "NOT RUN"),
    ],
)
def test_the_plan_judges_coverage_between_its_bounds(metric, threshold, figures, status) -> None:
    report = {"interval_coverage": {"status": "run", "figures": figures}}
    assert judge_criterion(criterion(metric, threshold), report, ROOT)["status"] == status


def test_a_coverage_section_that_failed_fails_its_criteria() -> None:
    report = {"interval_coverage": {"status": "not run", "reason": "ValueError: boom"}}
    judged = judge_criterion(criterion("engine_min_coverage", 0.8), report, ROOT)
    assert judged["status"] == "FAIL" and "boom" in judged["reason"]


def test_leaving_a_recording_out_removes_its_samples_only() -> None:
    table = CostErrorTable(
        (
            ErrorSample("e", "decode", "r", "a/served-1", 1.1, "evidence/engine/a", "t"),
            ErrorSample(
                "e", "decode", "r", "a-ngram/served-1", 0.9, "evidence/engine/a-ngram", "t"
            ),
            ErrorSample("e", "decode", "r", "p", 0.8, "public.json#row-1", "t"),
        ),
        {"evidence/engine/a": {}, "evidence/engine/a-ngram": {}, "public.json": {}},
    )
    assert [s.ratio for s in table.excluding("evidence/engine/a").samples] == [0.9, 0.8]
    assert [s.ratio for s in table.excluding("evidence/engine").samples] == [0.8]
    assert [s.ratio for s in table.excluding("public.json").samples] == [1.1, 0.9]
    assert set(table.excluding("evidence/engine/a").sources) == {
        "evidence/engine/a-ngram",
        "public.json",
    }


def test_engine_coverage_is_judged_on_held_out_samples() -> None:
    from qualification.uncertainty._coverage import ENGINE_METRICS, engine_coverage

    evidence = ROOT / "evidence"
    full = load_cost_errors()
    result = engine_coverage(evidence, replicas=2, seed=0, table=full)
    assert len(result["runs"]) == 3 * len(
        [d for d in (evidence / "engine").iterdir() if (d / "grid").is_dir()]
    )
    for run in result["runs"]:
        assert f"evidence/engine/{run['recording']}" not in run["cost_samples_from"]
        assert "cost" in run["includes"]
        assert set(run["metrics"]) == set(ENGINE_METRICS)
    for share in result["coverage"].values():
        assert share["judged"] == len(result["runs"])


def test_public_gpu_points_are_judged_against_their_intervals() -> None:
    from qualification.uncertainty._coverage import SERVING_METRICS, public_gpu_coverage

    result = public_gpu_coverage(
        ROOT / "evidence", replicas=2, select=lambda point: point["id"] == "spec/mtp/HumanEval/c1"
    )
    assert result["points"] == 1 and result["refused"] == 0
    (point,) = result["judged"]
    assert set(point["metrics"]) == set(SERVING_METRICS)
    for item in point["metrics"].values():
        assert item["low"] <= item["high"]
        assert item["inside"] == (item["low"] <= item["measured"] <= item["high"])


def test_the_committed_cost_error_table_is_built_from_the_committed_evidence() -> None:
    from aisim._io import canonical_json
    from qualification.uncertainty._table import ABOUT, build_table

    committed = (ROOT / "aisim/uncertainty/cost_errors.v1.json").read_text(encoding="utf-8")
    assert canonical_json(build_table(ROOT).to_dict(ABOUT)) == committed, (
        "the evidence or its pricing changed: run python -m qualification.uncertainty build "
        "and review the diff"
    )
