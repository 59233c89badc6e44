"""docs/uncertainty.md's worked example is what the command prints."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aisim.cli import main

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "uncertainty.md"


def documented_table() -> list[str]:
    text = DOC.read_text(encoding="utf-8")
    example = text[text.index("### Worked example") :]
    block = example[example.index("```") + 4 :]
    block = block[: block.index("```")]
    return [line for line in block.splitlines() if line.strip()]


def test_the_worked_example_prints_the_documented_intervals(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = ROOT / "docs/examples/replay/aggregated_mtp.yaml"
    argv = ["replay", str(config), "--out", str(tmp_path), "--no-progress"]
    assert main([*argv, "--intervals", "20", "--acceptance-rounds", "2000"]) == 0
    printed = capsys.readouterr().out.splitlines()
    documented = documented_table()
    assert len(documented) == 17
    for line in documented:
        assert line in printed, line
    assert any(re.match(r"wrote .*intervals\.json$", line) for line in printed)
