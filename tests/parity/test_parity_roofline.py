"""Parity: the roofline suite matches goldens/roofline.json (see docs/qualification.md)."""

from __future__ import annotations

from syrupy.assertion import SnapshotAssertion
from syrupy_golden import GoldenExtension

from qualification.parity import compute_document, crashes


def test_parity_roofline(snapshot: SnapshotAssertion) -> None:
    document = compute_document("roofline")
    assert crashes(document) == []
    assert document == snapshot.use_extension(GoldenExtension)
