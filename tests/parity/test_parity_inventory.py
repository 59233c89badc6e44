"""Every registered suite has exactly one golden and one parity test; no golden is unused."""

from __future__ import annotations

from pathlib import Path

from qualification.cases import SUITE_NAMES, get_suite
from qualification.parity import read_document

ROOT = Path(__file__).resolve().parents[2]
GOLDENS = ROOT / "goldens"


def test_every_golden_belongs_to_a_registered_suite() -> None:
    on_disk = sorted(path.stem for path in GOLDENS.glob("*.json"))
    assert on_disk == sorted(SUITE_NAMES)
    assert sorted(p.name for p in GOLDENS.iterdir() if p.suffix != ".json") == []


def test_every_suite_has_its_parity_test() -> None:
    for name in SUITE_NAMES:
        test_file = ROOT / "tests" / "parity" / f"test_parity_{name}.py"
        assert test_file.is_file(), f"suite {name!r} has no {test_file.name}"
        assert f"def test_parity_{name}(" in test_file.read_text(encoding="utf-8")


def test_golden_case_ids_are_exactly_the_case_matrix() -> None:
    for name in SUITE_NAMES:
        document = read_document(GOLDENS / f"{name}.json")
        assert document is not None
        assert document["suite"] == name
        assert sorted(document["cases"]) == sorted(case.id for case in get_suite(name).cases)


def test_parity_runs_against_the_expected_build() -> None:
    """Parity is held by both builds: under tox (and .ci/check-compiled) the environment says
    which one is loaded, and a silent fallback to the other must fail here."""
    import os

    import aisim

    expected = os.environ.get("AISIM_EXPECT_COMPILED")
    if expected is not None:
        assert aisim.__compiled__ is (expected == "1")
