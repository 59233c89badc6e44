"""``python -m qualification.uncertainty``: bad input is one line and exit 2 before any replay
(a replica count, seed, source, worker count or concurrency out of range ended in tracebacks,
ran, or was accepted silently), and ``coverage-public-gpu --out`` keeps an existing file unless
``--overwrite``."""

from __future__ import annotations

from pathlib import Path

import pytest

from qualification.uncertainty.__main__ import main

PROG = "python -m qualification.uncertainty"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        # coverage --replicas 0 / --seed -1: ConfigError tracebacks, exit 1.
        (
            ["coverage", "--replicas", "0"],
            "--replicas: expected an integer in 2..10000 (replicas), got 0",
        ),
        (
            ["coverage", "--seed", "-1"],
            "--seed: expected an integer in 0..4611686018427387903, got -1",
        ),
        # coverage-public-gpu --replicas 0 started the replays; --seed -3 a numpy traceback.
        (
            ["coverage-public-gpu", "--replicas", "0"],
            "--replicas: expected an integer in 2..10000 (replicas), got 0",
        ),
        (
            ["coverage-public-gpu", "--seed", "-3"],
            "--seed: expected an integer in 0..4611686018427387903, got -3",
        ),
        # --workers 0 started the replays; a huge count would start that many interpreters.
        (
            ["coverage-public-gpu", "--workers", "0"],
            "--workers: expected an integer in 1..1024, got 0",
        ),
        (
            ["coverage-public-gpu", "--workers", "5000"],
            "--workers: expected an integer in 1..1024, got 5000",
        ),
        # --max-conc -1 judged no point and printed an empty run, exit 0.
        (
            ["coverage-public-gpu", "--max-conc", "-1"],
            "--max-conc: expected an integer >= 1, got -1",
        ),
        (["coverage-public-gpu", "--overwrite"], "--overwrite: only with --out FILE"),
    ],
)
def test_a_bad_value_is_one_line_and_exit_2(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: {message}\n"


def test_an_unknown_source_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    # '--source bogus' judged no point and printed an empty run, exit 0.
    with pytest.raises(SystemExit) as exit_info:
        main(["coverage-public-gpu", "--source", "bogus"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        f"{PROG} coverage-public-gpu: error: argument --source: invalid choice: 'bogus' (choose "
        f"from 'all', 'inferencex-latest', 'speculators') (see {PROG} coverage-public-gpu "
        "--help)\n"
    )


def test_a_replica_count_that_is_not_an_integer_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["coverage", "--replicas", "1_0"])  # int() read 10
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        f"{PROG} coverage: error: argument --replicas: expected an integer (ASCII digits, "
        f"optional leading '-', at most 19 digits), got '1_0' (see {PROG} coverage --help)\n"
    )


def test_an_existing_out_is_kept_without_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # It was replaced silently, after the replays (minutes to hours).
    out = tmp_path / "run.json"
    out.write_text("mine\n")
    assert main(["coverage-public-gpu", "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"error: {str(out)!r} already exists; pass --overwrite to replace it\n"
    )
    assert out.read_text() == "mine\n"


def test_an_out_in_a_file_is_refused_before_the_replays(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x\n")
    out = blocker / "run.json"
    assert main(["coverage-public-gpu", "--out", str(out), "--overwrite"]) == 2
    assert capsys.readouterr().err == (
        f"error: --out {str(out)!r}: {str(blocker)!r} is a file, not a folder\n"
    )
