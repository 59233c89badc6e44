"""`python -m qualification.public_gpu.fit --out FILE` never replaces a file without
`--overwrite`, and refuses before any fitting (minutes) rather than after."""

import json
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


@pytest.mark.parametrize("kind", ["missing", "file"])
def test_an_evidence_path_that_is_not_a_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    """A missing evidence folder ended in a DataIntegrityError traceback (exit 1) naming
    'nope/inferencex_dsr1_h100_h200_b200.json'."""
    evidence = tmp_path / "nope"
    if kind == "file":
        evidence.write_text("x\n")
    found = "not found" if kind == "missing" else "not a folder"
    assert main([str(evidence)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        f"error: EVIDENCE {str(evidence)!r}: {found}; expected the public GPU evidence folder "
        "(default evidence/public-gpu, from a checkout's root)\n"
    )


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (
            b"{\n",
            "not valid JSON: Expecting property name enclosed in double quotes at line 2, column 1",
        ),
        (
            b"\xb3{}",
            "cannot read: 'utf-8' codec can't decode byte 0xb3 in position 0: invalid start byte",
        ),
        (
            b'{"hybrid": 1, "hybrid": 2}',
            "not valid JSON: duplicate key 'hybrid' in one object",
        ),
        (b"[1]", "expected a JSON object (the fitted terms), got list"),
    ],
)
def test_an_unreadable_fitted_terms_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, problem: str
) -> None:
    """The existing artefact whose blocks a fit keeps was read with json.loads: a broken one
    ended in a JSONDecodeError / UnicodeDecodeError traceback, and a key given twice kept the
    last value silently."""
    terms = tmp_path / "fitted_terms.json"
    terms.write_bytes(content)
    assert main([str(tmp_path), "--acceptance"]) == 2
    assert capsys.readouterr().err == f"error: {str(terms)!r}: {problem}\n"


def test_an_out_that_is_a_folder_is_refused_before_fitting(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Even with --overwrite (the atomic write failed after the fit); the evidence folder does
    # not exist, so this message shows the refusal came first.
    argv = [str(tmp_path / "no-evidence"), "--out", str(tmp_path), "--overwrite"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"error: --out {str(tmp_path)!r}: is a folder; give the path of a file to write\n"
    )


def test_a_usage_error_is_one_line_naming_the_module(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--bogus"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        "python -m qualification.public_gpu.fit: error: unrecognized arguments: --bogus (see "
        "python -m qualification.public_gpu.fit --help)\n"
    )


_IX = "inferencex_dsr1_h100_h200_b200.json"


@pytest.mark.parametrize(
    ("edit", "problem"),
    [
        ("drop-rows", "missing key 'rows' (the list of measured points)"),
        ("rows-not-list", "'rows': expected a list, got dict"),
        ("row-not-object", "rows[3]: expected an object, got int"),
        ("row-without-conc", "rows[0]: missing key 'conc'"),
    ],
)
def test_a_malformed_inferencex_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], edit: str, problem: str
) -> None:
    """An InferenceX file without its rows (or with a row that is not an object or lacks a
    field) ended in a KeyError traceback; it is refused in one line before any fitting."""
    data = json.loads((Path("evidence/public-gpu") / _IX).read_text("utf-8"))
    if edit == "drop-rows":
        del data["rows"]
    elif edit == "rows-not-list":
        data["rows"] = {}
    elif edit == "row-not-object":
        data["rows"][3] = 7
    else:
        del data["rows"][0]["conc"]
    evidence = tmp_path / "evidence"
    evidence.mkdir()
    (evidence / _IX).write_text(json.dumps(data), "utf-8")
    assert main([str(evidence)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"error: {evidence / _IX}: {problem}\n"
