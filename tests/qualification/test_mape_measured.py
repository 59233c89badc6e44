"""``aisim qualify mape --estimator measured_round --rounds FILE``: another recording's rounds.

Expected figures are hand-derived (synthetic datasets) or computed independently with pandas
from the committed evidence parquet files, never by the code under test.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from aisim.cli import main
from aisim.errors import ConfigError
from qualification.datasets import RecordedDataset, load_dataset
from qualification.mape import evaluate, make_predictor

ROOT = Path(__file__).resolve().parents[2]
EVIDENCE = ROOT / "evidence"


def test_rounds_of_another_recording_price_by_their_median(
    make_dataset: Callable[..., RecordedDataset],
) -> None:
    source = make_dataset(
        "source", {(1, 256): 10.0}, [(1, 1, 256, [100.0, 130.0, 110.0]), (2, 4, 256, [50.0])]
    )
    scored = make_dataset(
        "scored", {(1, 256): 10.0}, [(1, 1, 256, [100.0, 121.0]), (2, 4, 256, [40.0, 60.0])]
    )
    predictor = make_predictor(
        "measured_round", scored, rounds=source.directory / "sd_rounds.parquet"
    )
    report, rows = evaluate(scored, predictor)
    # Medians of the source: d1-b1-k256 -> 110, d2-b4-k256 -> 50.
    assert rows["predicted_ms"].tolist() == [110.0, 110.0, 50.0, 50.0]
    # Round APEs: 10/100, 11/121, 10/40, 10/60.
    expected = (0.1 + 11 / 121 + 0.25 + 1 / 6) / 4
    assert report["summary"]["round_weighted_mape"] == pytest.approx(expected, rel=1e-12)
    assert report["estimator"]["name"] == "measured_round"
    assert "independent recording" in report["estimator"]["description"]


def test_a_configuration_outside_the_source_envelope_is_unanswered(
    make_dataset: Callable[..., RecordedDataset],
) -> None:
    source = make_dataset("source", {(1, 256): 10.0}, [(1, 1, 256, [100.0])])
    scored = make_dataset("scored", {(1, 256): 10.0}, [(1, 1, 256, [90.0]), (1, 8, 256, [9.0])])
    predictor = make_predictor(
        "measured_round", scored, rounds=source.directory / "sd_rounds.parquet"
    )
    report, _ = evaluate(scored, predictor)
    assert report["summary"]["coverage"] == 0.5
    (reason,) = report["summary"]["unanswered_reasons"]
    assert reason.startswith("UnsupportedQuery: outside the recorded envelope at d=1")


def test_circular_missing_and_mismatched_rounds_are_refused(
    make_dataset: Callable[..., RecordedDataset],
) -> None:
    scored = make_dataset("scored", {(1, 256): 10.0}, [(1, 1, 256, [100.0])])
    with pytest.raises(ConfigError, match="needs --rounds FILE"):
        make_predictor("measured_round", scored)
    with pytest.raises(ConfigError, match="circular"):
        make_predictor("measured_round", scored, rounds=scored.directory / "sd_rounds.parquet")
    other = make_dataset("other", {(1, 256): 10.0}, [(1, 1, 256, [99.0])], draft_kind="ngram")
    with pytest.raises(ConfigError, match="kind: recorded 'ngram', query 'mtp'"):
        make_predictor("measured_round", scored, rounds=other.directory / "sd_rounds.parquet")
    with pytest.raises(ConfigError, match="only used with --estimator measured_round"):
        make_predictor("rule", scored, rounds=other.directory / "sd_rounds.parquet")


def test_committed_mtp_recordings_score_each_other_as_pandas_says() -> None:
    run2 = load_dataset(EVIDENCE / "cpu-qwen3-0.6b-mtp-run2")
    source = EVIDENCE / "cpu-qwen3-0.6b-mtp" / "sd_rounds.parquet"
    report, _ = evaluate(run2, make_predictor("measured_round", run2, rounds=source))
    keys = ["draft_length", "batch_size", "total_kv_tokens"]
    medians = pd.read_parquet(source).groupby(keys)["duration_ms"].median().rename("predicted")
    measured = pd.read_parquet(EVIDENCE / "cpu-qwen3-0.6b-mtp-run2" / "sd_rounds.parquet")
    joined = measured.join(medians, on=keys)
    ape = (joined["predicted"] - joined["duration_ms"]).abs() / joined["duration_ms"]
    assert report["summary"]["coverage"] == 1.0
    assert report["summary"]["round_weighted_mape"] == pytest.approx(ape.mean(), rel=1e-12)


def test_cli_scores_and_refuses(capsys: pytest.CaptureFixture[str]) -> None:
    source = str(EVIDENCE / "cpu-qwen3-0.6b-mtp" / "sd_rounds.parquet")
    run2 = str(EVIDENCE / "cpu-qwen3-0.6b-mtp-run2")
    assert main(["qualify", "mape", run2, "--estimator", "measured_round", "--rounds", source]) == 0
    out = capsys.readouterr().out
    assert "# MAPE: `measured_round` on `cpu-qwen3-0.6b-mtp-run2`" in out
    assert "120/120 rounds, 24/24 configurations" in out
    own = str(EVIDENCE / "cpu-qwen3-0.6b-mtp")
    assert main(["qualify", "mape", own, "--estimator", "measured_round", "--rounds", source]) == 2
    assert "circular" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        ("mkdir", "is a folder, not a file"),
        ("mkfifo", "is not a regular file (a FIFO, socket or device)"),
    ],
)
def test_rounds_that_are_no_file_name_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], make: str, problem: str
) -> None:
    """Said 'tables: ...': the field of a config, not the flag given. A FIFO is not opened."""
    import os

    rounds = tmp_path / "rounds.parquet"
    getattr(os, make)(rounds)
    run2 = str(EVIDENCE / "cpu-qwen3-0.6b-mtp-run2")
    argv = ["qualify", "mape", run2, "--estimator", "measured_round", "--rounds", str(rounds)]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"aisim: error: --rounds: {str(rounds)!r}: {problem}; expected a table file: "
        "NAME.parquet or NAME.csv beside its sidecar NAME.parquet.json or NAME.csv.json\n"
    )


@pytest.mark.parametrize(
    ("scored", "source", "shown"),
    [
        ("cpu-qwen3-0.6b-mtp-run2", "cpu-qwen3-0.6b-mtp", "6.65 % round-weighted / 6.72 %"),
        ("cpu-qwen3-0.6b-mtp", "cpu-qwen3-0.6b-mtp-run2", "6.38 % / 6.21 %"),
    ],
)
def test_figures_in_the_evidence_guide_match(scored: str, source: str, shown: str) -> None:
    text = (ROOT / "docs" / "evidence.md").read_text()
    assert shown in text
    dataset = load_dataset(EVIDENCE / scored)
    rounds = EVIDENCE / source / "sd_rounds.parquet"
    summary = evaluate(dataset, make_predictor("measured_round", dataset, rounds=rounds))[0][
        "summary"
    ]
    figures = f"{100 * summary['round_weighted_mape']:.2f} %"
    figures_equal = f"{100 * summary['equal_config_mape']:.2f} %"
    assert shown.startswith(figures)
    assert shown.endswith(figures_equal)
