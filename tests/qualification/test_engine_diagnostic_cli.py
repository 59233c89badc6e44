"""The four recording diagnostics share one command line: the same refusal of a missing
recording and of one without ``grid/`` (one line naming the path, exit 2), the same ``--help``."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from qualification.engine import step_causes, step_diff, ttft_diff, undrafted

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "evidence" / "engine" / "vllm-cpu-quiet-llama-4x256-ngram"

MAINS: dict[str, Callable[[list[str] | None], int]] = {
    "step_causes": step_causes.main,
    "step_diff": step_diff.main,
    "ttft_diff": ttft_diff.main,
    "undrafted": undrafted.main,
}
#: The diagnostics that price served steps with the recording's grid (undrafted reads the
#: served runs only).
PRICING = ("step_causes", "step_diff", "ttft_diff")


def _served_only(tmp_path: Path) -> Path:
    """The committed recording's first served run, without its grid/ folder."""
    recording = tmp_path / "no-grid"
    shutil.copytree(RECORDING / "served-1", recording / "served-1")
    return recording


@pytest.mark.parametrize("name", sorted(MAINS))
def test_a_missing_recording_is_one_line_and_exit_2(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope"
    assert MAINS[name]([str(missing)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"error: {str(missing)!r}: not found; expected an engine recording directory (grid/ and "
        "served-N/ folders)\n"
    )


@pytest.mark.parametrize("name", sorted(MAINS))
def test_a_file_is_not_a_recording(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    given = tmp_path / "requests.csv"
    given.write_text("request_id\n")
    assert MAINS[name]([str(given)]) == 2
    assert capsys.readouterr().err == (
        f"error: {str(given)!r}: not a directory; expected an engine recording directory (grid/ "
        "and served-N/ folders)\n"
    )


@pytest.mark.parametrize("name", PRICING)
def test_a_recording_without_a_grid_is_refused_by_the_pricing_diagnostics(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    recording = _served_only(tmp_path)
    assert MAINS[name]([str(recording)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"error: {str(recording)!r}: no grid/ step table; this diagnostic prices the served "
        "steps with the recording's own grid (aisim record engine --part grid --out DIR with the "
        "served runs' flags)\n"
    )


def test_undrafted_reads_a_recording_without_a_grid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The same row as test_engine_undrafted's on the full recording: it needs the served run only.
    assert undrafted.main([str(_served_only(tmp_path))]) == 0
    assert "| served-1 | 24 | 2: 9, 3: 7, 4: 7, 5: 1 | 3.00 | 3.00 | 0 |" in capsys.readouterr().out


def test_a_bad_recording_after_a_good_one_stops_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert ttft_diff.main([str(RECORDING), str(tmp_path / "nope")]) == 2
    captured = capsys.readouterr()
    assert "| served-1 |" in captured.out
    assert captured.err.count("\n") == 1 and "'" + str(tmp_path / "nope") + "'" in captured.err


@pytest.mark.parametrize("name", sorted(MAINS))
def test_help_names_the_module_and_shows_an_example(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        MAINS[name](["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: python -m qualification.engine.{name} ")
    lines = out.splitlines()
    assert f"  python -m qualification.engine.{name} {RECORDING.relative_to(ROOT)}" in lines
    assert f"  python -m qualification.engine.{name} evidence/engine/vllm-cpu-*" in lines
    assert "an engine recording: a folder with grid/ and served-N/" in " ".join(out.split())


@pytest.mark.parametrize("name", sorted(MAINS))
def test_a_usage_error_is_one_line_and_exit_2(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        MAINS[name]([])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        f"python -m qualification.engine.{name}: error: the following arguments are required: "
        f"DIR (see python -m qualification.engine.{name} --help)\n"
    )
