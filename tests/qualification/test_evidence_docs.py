"""docs/evidence.md documents every column of both dataset schemas, and the README links it."""

from __future__ import annotations

from pathlib import Path

import pytest

from qualification.datasets import SD_ROUNDS, STP_POINTS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("schema", [STP_POINTS, SD_ROUNDS], ids=lambda s: s.name)
def test_every_column_is_documented(schema: object) -> None:
    text = (ROOT / "docs" / "evidence.md").read_text(encoding="utf-8")
    assert f"{schema.name} v{schema.version}" in text  # type: ignore[attr-defined]
    missing = [c for c in schema.column_names if f"`{c}`" not in text]  # type: ignore[attr-defined]
    assert missing == []


def test_readme_lists_the_evidence_guide() -> None:
    assert "docs/evidence.md" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_documented_commands_run_on_the_committed_evidence(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from aisim.cli import main

    monkeypatch.chdir(ROOT)
    assert main(["qualify", "mape", "evidence/cpu-qwen3-0.6b-mtp"]) == 0
    assert "# MAPE: `rule` on `cpu-qwen3-0.6b-mtp`" in capsys.readouterr().out
    out = tmp_path / "mtp.v1.json"
    assert (
        main(
            [
                "qualify",
                "calibrate",
                "evidence/cpu-qwen3-0.6b-mtp",
                "--validation",
                "kfold:4",
                "--name",
                "cpu-qwen3-0.6b-mtp",
                "--out",
                str(out),
            ]
        )
        == 0
    )
    assert "calibrated, held out (kfold:4)" in capsys.readouterr().out
    # Selecting a calibration: refused on its own data, accepted on another recording of the
    # same drafter (another drafter is outside its scope: tests/cli/test_cli_bad_inputs.py).
    assert (
        main(
            [
                "qualify",
                "mape",
                "evidence/cpu-qwen3-0.6b-mtp",
                "--estimator",
                "calibrated",
                "--coefficients",
                str(out),
            ]
        )
        == 2
    )
    assert "was fitted on dataset 'cpu-qwen3-0.6b-mtp'" in capsys.readouterr().err
    assert (
        main(
            [
                "qualify",
                "mape",
                "evidence/cpu-qwen3-0.6b-draft_model-run2",
                "--estimator",
                "calibrated",
                "--coefficients",
                "evidence/calibration/cpu-qwen3-0.6b-draft_model.v1.json",
            ]
        )
        == 0
    )
    assert "calibrated:cpu-qwen3-0.6b-draft_model.v1" in capsys.readouterr().out


def test_coefficients_without_the_calibrated_estimator_is_an_error(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from aisim.cli import main

    monkeypatch.chdir(ROOT)
    artefact = "evidence/calibration/cpu-qwen3-0.6b-mtp.v1.json"
    assert (
        main(["qualify", "mape", "evidence/cpu-qwen3-0.6b-eagle3", "--coefficients", artefact]) == 2
    )
    assert "only used with --estimator calibrated" in capsys.readouterr().err
