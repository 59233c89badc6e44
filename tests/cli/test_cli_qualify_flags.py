"""``aisim qualify``'s refusals name the flag or positional argument the user typed, as every
other command does: they used to name config-style fields no user ever wrote
(``qualify.tost_margin``, ``qualify.check_results.parity``, ``calibrate.validation``). Each case
asserts the exact line, written out by hand, exit status 2, empty stdout and that nothing was
written."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from cli_refusal import refused

EVIDENCE = Path(__file__).resolve().parents[2] / "evidence"
MTP = str(EVIDENCE / "cpu-qwen3-0.6b-mtp")
MTP_ARTEFACT = str(EVIDENCE / "calibration" / "cpu-qwen3-0.6b-mtp.v1.json")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty working folder with one plain file, ``afile``, and one folder, ``adir``."""
    monkeypatch.chdir(tmp_path)
    Path("afile").write_text("x")
    Path("adir").mkdir()
    return tmp_path


CASES = [
    # qualify mape
    (
        ["qualify", "mape", MTP, "--tost-margin", "-1"],
        "--tost-margin: expected a number in (0, 1), got -1.0",
    ),
    (
        ["qualify", "mape", MTP, "--tost-margin", "1"],
        "--tost-margin: expected a number in (0, 1), got 1.0",
    ),
    (
        ["qualify", "mape", MTP, "--rounds", "r.parquet"],
        "--rounds: only used with --estimator measured_round, not rule",
    ),
    (
        ["qualify", "mape", MTP, "--estimator", "measured_round"],
        "--rounds: --estimator measured_round needs --rounds FILE, the SD rounds of an "
        "independent recording (scoring a dataset's own rounds is circular)",
    ),
    (
        ["qualify", "mape", MTP, "--estimator", "calibrated"],
        "--estimator calibrated: needs --coefficients FILE",
    ),
    (
        ["qualify", "mape", MTP, "--coefficients", "c.json"],
        "--coefficients: only used with --estimator calibrated, got --estimator rule",
    ),
    (
        [
            "qualify",
            "mape",
            str(EVIDENCE / "cpu-qwen3-0.6b-eagle3"),
            "--estimator",
            "calibrated",
            "--coefficients",
            MTP_ARTEFACT,
        ],
        "--coefficients: cpu-qwen3-0.6b-mtp v1 was fitted on drafter 'mtp'; dataset "
        "'cpu-qwen3-0.6b-eagle3' has drafter 'eagle3', outside its scope",
    ),
    # qualify calibrate
    (
        ["qualify", "calibrate", MTP, "--validation", "bogus"],
        "--validation: expected loco or kfold:K, got 'bogus'",
    ),
    (
        ["qualify", "calibrate", MTP, "--validation", "kfold:x"],
        "--validation: expected loco or kfold:K, got 'kfold:x'",
    ),
    # qualify engine-import
    (
        ["qualify", "engine-import", "nowhere", "--out", "o"],
        "PLAIN 'nowhere': not a folder; expected a plain recording folder",
    ),
    (
        ["qualify", "engine-import", "afile", "--out", "o"],
        "PLAIN 'afile': not a folder; expected a plain recording folder",
    ),
    # qualify report
    (
        ["qualify", "report", "--out", "o", "--evidence", "afile"],
        "--evidence 'afile': not a directory",
    ),
    (
        ["qualify", "report", "--out", "o", "--evidence", "adir", "--check-results", "foo"],
        "--check-results: expected NAME=FILE with NAME one of parity, probes, got 'foo'",
    ),
    (
        [
            "qualify",
            "report",
            "--out",
            "o",
            "--evidence",
            "adir",
            "--check-results",
            "parity=nofile.xml",
        ],
        "--check-results parity: 'nofile.xml' not found",
    ),
    # qualify public-gpu
    (
        ["qualify", "public-gpu", "--evidence", "nowhere"],
        "--evidence 'nowhere': not a directory; expected the public measurements folder "
        "(evidence/public-gpu of an aisim checkout)",
    ),
    (
        ["qualify", "public-gpu", "--evidence", "afile", "--out", "o"],
        "--evidence 'afile': not a directory; expected the public measurements folder "
        "(evidence/public-gpu of an aisim checkout)",
    ),
]


@pytest.mark.parametrize(("argv", "message"), CASES, ids=[" ".join(c[0][1:3]) for c in CASES])
def test_a_refusal_names_the_argument_typed(
    here: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    assert refused(argv, capsys) == f"aisim: error: {message}"
    assert sorted(path.name for path in here.iterdir()) == ["adir", "afile"]


def test_the_scored_datasets_own_rounds_name_rounds(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rounds = str(EVIDENCE / "cpu-qwen3-0.6b-mtp" / "sd_rounds.parquet")
    argv = ["qualify", "mape", MTP, "--estimator", "measured_round", "--rounds", rounds]
    line = refused(argv, capsys)
    assert line.startswith(f"aisim: error: --rounds {rounds!r}: is the scored dataset's own ")
    assert line.endswith("circular: give the rounds of an independent recording")


def test_an_engine_recording_without_a_grid_names_dataset(
    here: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    served = EVIDENCE / "engine" / "vllm-bench-llama-4x256-b32-high" / "served-1"
    shutil.copytree(served, here / "rec" / "served-1")
    assert refused(["qualify", "engine", "rec"], capsys) == (
        "aisim: error: DATASET 'rec': has no grid/ step table; give --step-table with a "
        "separate recording of the same engine"
    )


def test_a_report_folder_that_is_a_file_names_out(here: Path) -> None:
    """``check_report_target`` (behind ``check_output_dir`` on the command line) in the same
    words as ``check_output_dir``."""
    from aisim.errors import ConfigError
    from qualification.report import check_report_target

    with pytest.raises(ConfigError) as caught:
        check_report_target(Path("afile"), overwrite=False)
    assert str(caught.value) == "--out 'afile': exists and is not a folder"
