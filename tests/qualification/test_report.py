"""The release report builds from a small dataset, labels evidence, and never fakes a check."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from aisim.cli import main
from qualification.datasets import RecordedDataset
from qualification.plan import Plan, parse_plan
from qualification.report import build_report, render_html, run_checks, write_report
from qualification.report._checks import run_check

STP = {(2, 64): 5.0, (3, 64): 6.0, (4, 64): 7.0, (1, 64): 4.0}
ROUNDS = [
    (1, 1, 64, [7.0, 7.2, 6.9]),
    (2, 1, 64, [9.1, 9.0]),
    (3, 1, 64, [11.0, 11.5]),
    (1, 2, 64, [10.0, 9.5]),
]


def plan_for(*datasets: str, drafter: str = "mtp") -> Plan:
    """A plan with one lenient rule criterion per dataset (these tests are about the report,
    not about thresholds; tests/qualification/test_plan_verdict.py judges thresholds)."""
    return parse_plan(
        {
            "format": 1,
            "name": "test",
            "version": 1,
            "bootstrap": {"resamples": 200, "confidence": 0.95, "seed": 1, "method": "BCa"},
            "datasets": {name: {"drafter": drafter, "description": name} for name in datasets},
            "criteria": [
                {
                    "id": f"rule/{name}",
                    "check": "rule",
                    "dataset": name,
                    "metric": "equal_config_mape",
                    "threshold": 1.0,
                    "use": "point",
                    "rationale": "lenient",
                }
                for name in datasets
            ],
        }
    )


SMALL = plan_for("small")


@pytest.fixture
def evidence(make_dataset: Callable[..., RecordedDataset], tmp_path: Path) -> Path:
    make_dataset("evidence/small", STP, ROUNDS)
    return tmp_path / "evidence"


def test_report_from_a_small_dataset(evidence: Path) -> None:
    report, images = build_report(evidence, SMALL, run_checks_now=False, root=evidence.parent)
    (section,) = report["datasets"]
    assert section["status"] == "scored"
    assert section["evidence_type"] == "synthetic"
    assert section["rule"]["summary"]["configurations"] == 4
    assert section["calibration"]["validation"]["method"] == "loco"
    assert [c["status"] for c in report["checks"]] == ["not run", "not run"]
    assert {c["evidence_type"] for c in report["checks"]} == {"parity", "synthetic"}
    assert report["verdict"]["overall"] == "PASS"
    assert [c["status"] for c in report["criteria"]] == ["PASS"]
    assert all(data.startswith(b"\x89PNG") for data in images.values())
    page = render_html(report, images)
    assert page.count("data:image/png;base64,") == len(images) == 3
    assert "not run" in page and "synthetic" in page
    cost = report["cost_model"]  # the default roofline vs public figures, and the rule check
    assert (
        cost["public_after"]["mape_held_out_percent"]
        < cost["public_before"]["mape_held_out_percent"]
    )
    assert len(cost["rulecheck"]) == 2 * 5 * 5  # MTP, EAGLE-3 x 5 GPUs x d 1..5
    assert "Default cost model" in page and "vllm-20780/eagle3/k3" in page
    assert "aisim qualify rulecheck" in report["commands"]


def test_report_is_deterministic_apart_from_the_timestamp(evidence: Path, tmp_path: Path) -> None:
    pages = []
    for name in ("one", "two"):
        report, images = build_report(evidence, SMALL, run_checks_now=False, root=evidence.parent)
        report["generated_utc"] = "T"
        write_report(report, images, tmp_path / name)
        pages.append(
            (
                (tmp_path / name / "report.html").read_bytes(),
                (tmp_path / name / "report.json").read_bytes(),
            )
        )
    assert pages[0] == pages[1]


def test_tampered_dataset_is_refused_in_the_report(evidence: Path) -> None:
    path = evidence / "small" / "sd_rounds.parquet"
    data = bytearray(path.read_bytes())
    data[40] ^= 0x01
    path.write_bytes(bytes(data))
    report, images = build_report(evidence, SMALL, run_checks_now=False, root=evidence.parent)
    assert report["datasets"][0]["status"] == "refused"
    assert "SHA-256" in report["datasets"][0]["reason"]
    assert report["verdict"]["datasets_refused"] == ["small"]
    assert report["verdict"]["overall"] == "FAIL"
    assert report["criteria"][0]["status"] == "FAIL"
    assert "refused" in report["criteria"][0]["reason"]
    assert images == {}


def test_checks_report_real_pytest_outcomes(tmp_path: Path) -> None:
    (tmp_path / "tests" / "parity").mkdir(parents=True)
    (tmp_path / "tests" / "parity" / "test_demo_pass.py").write_text(
        "def test_one():\n    assert 1 + 1 == 2\n\ndef test_two():\n    assert True\n"
    )
    passed = run_check("parity", tmp_path)
    assert (passed["status"], passed["passed"], passed["failed"]) == ("passed", 2, 0)
    (tmp_path / "tests" / "parity" / "test_demo_fail.py").write_text(
        "def test_three():\n    assert 1 + 1 == 3\n"
    )
    failed = run_check("parity", tmp_path)
    assert (failed["status"], failed["passed"], failed["failed"]) == ("failed", 2, 1)
    absent = run_checks(tmp_path, enabled=True, results={})[1]  # tests/probes does not exist here
    assert absent["status"] == "not run" and "not found" in absent["reason"]


def test_cli_report_and_mape(
    evidence: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "report"
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(SMALL.model_dump(exclude_none=True)))
    report = ["qualify", "report", "--plan", str(plan), "--evidence", str(evidence)]
    assert main([*report, "--out", str(out), "--skip-checks"]) == 0
    written = json.loads((out / "report.json").read_text())
    assert written["verdict"]["datasets_scored"] == ["small"]
    assert main([*report, "--out", str(out), "--skip-checks"]) == 2  # no clobbering
    assert "already exists" in capsys.readouterr().err
    mape_dir = tmp_path / "mape"
    assert (
        main(["qualify", "mape", str(evidence / "small"), "--out", str(mape_dir), "--tests"]) == 0
    )
    assert sorted(p.name for p in mape_dir.iterdir()) == [
        "mape.json",
        "mape.md",
        "predicted_vs_measured.png",
        "signed_error_by_config.png",
    ]
    assert main(["qualify", "mape", str(tmp_path / "nowhere")]) == 2
    assert "not a dataset directory" in capsys.readouterr().err


def test_check_results_are_broken_down_by_test_module(tmp_path: Path) -> None:
    probes = tmp_path / "tests" / "probes"
    probes.mkdir(parents=True)
    (probes / "test_probe_a.py").write_text("def test_a():\n    pass\n")
    (probes / "test_probe_b.py").write_text(
        "import pytest\n\ndef test_b():\n    assert False\n\n"
        "@pytest.mark.skip(reason='demo')\ndef test_c():\n    pass\n"
    )
    result = run_check("probes", tmp_path)
    assert result["status"] == "failed"
    assert result["by_module"] == {
        "test_probe_a": {"tests": 1, "passed": 1, "failed": 0, "errors": 0, "skipped": 0},
        "test_probe_b": {"tests": 2, "passed": 0, "failed": 1, "errors": 0, "skipped": 1},
    }
    report = {"checks": [result]}
    from qualification.report._html import _checks

    assert "<code>test_probe_b</code>: 0/2 passed, 1 failed" in _checks(report["checks"])


def test_a_dataset_that_cannot_be_calibrated_is_still_scored(
    make_dataset: Callable[..., RecordedDataset], tmp_path: Path
) -> None:
    make_dataset("single/one-d", STP, [(1, 1, 64, [7.0]), (1, 2, 64, [9.0])])
    report, images = build_report(
        tmp_path / "single", plan_for("one-d"), run_checks_now=False, root=tmp_path
    )
    (section,) = report["datasets"]
    assert section["status"] == "scored"
    assert section["calibration"]["status"] == "not run"
    assert "two or more draft lengths" in section["calibration"]["reason"]
    assert "two or more draft lengths" in render_html(report, images)


def test_calibration_transfer_scores_artefacts_only_on_other_matching_recordings(
    make_dataset: Callable[..., RecordedDataset], tmp_path: Path
) -> None:
    from qualification.calibrate import calibrate

    stp = {(2, 64): 5.0, (3, 64): 6.0, (4, 64): 7.0}
    exact = [(d, 1, 64, [(0.2 * d + 1.0) * stp[(d + 1, 64)]] * 2) for d in (1, 2, 3)]
    fitted = make_dataset("ev/a-mtp", stp, exact)
    make_dataset("ev/b-mtp", stp, exact[:2])
    make_dataset("ev/c-eagle3", stp, exact, draft_kind="eagle3")
    artefact = calibrate(fitted, name="a-fit")["artefact"]
    (tmp_path / "ev" / "calibration").mkdir()
    (tmp_path / "ev" / "calibration" / "a-fit.v1.json").write_text(json.dumps(artefact))
    plan = plan_for("a-mtp", "b-mtp", "c-eagle3")
    report, _ = build_report(tmp_path / "ev", plan, run_checks_now=False, root=tmp_path)
    (transfer,) = report["calibration_transfer"]  # not a-mtp (fitted on), not c-eagle3
    assert (transfer["artefact"], transfer["dataset"]) == ("a-fit.v1", "b-mtp")
    assert transfer["calibrated"]["round_weighted_mape"] == pytest.approx(0.0, abs=1e-9)
    # the published rule on the same rows: factors 1.33 and 1.41 against 1.2 and 1.4
    expected = (abs(1.33 - 1.2) / 1.2 + abs(1.41 - 1.4) / 1.4) / 2
    assert transfer["published_rule"]["round_weighted_mape"] == pytest.approx(expected)
    assert "a-fit.v1" in render_html(report, {})


def test_a_check_result_given_twice_is_refused(tmp_path: Path) -> None:
    """`--check-results parity=a.xml --check-results parity=b.xml` read b.xml silently."""
    from aisim.errors import ConfigError
    from qualification.report._inputs import parse_check_results

    for name in ("a.xml", "b.xml"):
        (tmp_path / name).write_text("<testsuites/>", encoding="utf-8")
    first, second = str(tmp_path / "a.xml"), str(tmp_path / "b.xml")
    with pytest.raises(ConfigError) as caught:
        parse_check_results([f"parity={first}", f"probes={first}", f"parity={second}"])
    assert str(caught.value) == (
        f"--check-results parity: given twice ({first!r} and {second!r}); give each "
        "check's result once"
    )
