"""qualification.bench labels a figure "compiled" only when that run imported the compiled build."""

from __future__ import annotations

import pytest

from qualification.bench._builds import check_build


def test_a_compiled_run_that_imported_pure_is_refused_with_how_to_fix() -> None:
    with pytest.raises(SystemExit) as caught:
        check_build(False, pure=False)
    message = str(caught.value)
    assert "cannot be labelled compiled" in message and "tox -e bench" in message


def test_a_pure_run_that_imported_compiled_is_refused() -> None:
    with pytest.raises(SystemExit, match="imported a compiled aisim"):
        check_build(True, pure=True)


def test_matching_builds_pass() -> None:
    check_build(True, pure=False)
    check_build(False, pure=True)
