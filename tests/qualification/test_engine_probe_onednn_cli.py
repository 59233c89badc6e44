"""``python -m qualification.engine.probe_onednn --help`` answers without vLLM (it said "needs
vLLM" and exited 2 before), and an argument it does not take is refused, exit 2."""

from __future__ import annotations

import pytest

from qualification.engine.probe_onednn import main


def test_help_needs_no_vllm(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m qualification.engine.probe_onednn")
    assert "example: .tox/engine/bin/python -m qualification.engine.probe_onednn" in out


def test_an_unknown_argument_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--shapes", "llama-4x256"])
    assert exit_info.value.code == 2
    assert "unrecognized arguments: --shapes llama-4x256" in capsys.readouterr().err
