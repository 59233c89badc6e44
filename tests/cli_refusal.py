"""The one helper the CLI refusal tests share: run ``aisim`` and take its one error line."""

from __future__ import annotations

import pytest

from aisim.cli import main


def refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """Run ``aisim argv``; it must exit 2 with one error line, no traceback and no stdout.
    Returns the line."""
    code: int | str | None
    try:
        code = main(argv)
    except SystemExit as stop:  # argparse's own errors
        code = stop.code
    captured = capsys.readouterr()
    assert (code, captured.out) == (2, ""), captured.err
    lines = captured.err.splitlines()
    assert len(lines) == 1 and "Traceback" not in captured.err, captured.err
    return lines[0]
