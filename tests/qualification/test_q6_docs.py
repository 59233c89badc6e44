"""docs/evidence.md documents every column of both dataset schemas, and the README links it."""

from __future__ import annotations

from pathlib import Path

import pytest

from qualification.datasets import SD_ROUNDS, STP_POINTS

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("schema", [STP_POINTS, SD_ROUNDS], ids=lambda s: s.name)
def test_every_column_is_documented(schema: object) -> None:
    text = (ROOT / "docs" / "evidence.md").read_text(encoding="utf-8")
    assert f"{schema.name} v{schema.version}" in text  # type: ignore[attr-defined]
    missing = [c for c in schema.column_names if f"`{c}`" not in text]  # type: ignore[attr-defined]
    assert missing == []


def test_readme_lists_the_evidence_guide() -> None:
    assert "docs/evidence.md" in (ROOT / "README.md").read_text(encoding="utf-8")
