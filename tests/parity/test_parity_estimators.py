"""Parity: the estimators suite matches goldens/estimators.json (see docs/qualification.md)."""

from __future__ import annotations

from syrupy.assertion import SnapshotAssertion
from syrupy_golden import GoldenExtension

from qualification.parity import compute_document, crashes


def test_parity_estimators(snapshot: SnapshotAssertion) -> None:
    document = compute_document("estimators")
    assert crashes(document) == []
    assert document == snapshot.use_extension(GoldenExtension)
