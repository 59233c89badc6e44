"""Which build is loaded: tox sets AISIM_EXPECT_COMPILED so a silent pure fallback fails."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import aisim


def test_compiled_flag_matches_environment() -> None:
    expected = os.environ.get("AISIM_EXPECT_COMPILED")
    if expected is None:
        pytest.skip("AISIM_EXPECT_COMPILED not set (running outside tox)")
    assert aisim.__compiled__ is (expected == "1")


def test_installed_package_is_tested_under_tox() -> None:
    if os.environ.get("AISIM_EXPECT_COMPILED") is None:
        pytest.skip("only meaningful under tox, which installs a wheel")
    assert "site-packages" in Path(aisim.__file__).parts
