"""`python -m qualification.public_gpu.fit --out FILE` never replaces a file without
`--overwrite`, and refuses before any fitting (minutes) rather than after."""

from pathlib import Path

import pytest

from qualification.public_gpu.fit import main


def test_an_existing_out_is_refused_without_overwrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fitted_terms.json"
    out.write_text("mine\n")
    # The evidence folder does not exist: a fit would fail, so a 2 with this message shows the
    # refusal came first.
    assert main([str(tmp_path / "no-evidence"), "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: {str(out)!r} already exists; pass --overwrite to replace it\n"
    assert out.read_text() == "mine\n"
