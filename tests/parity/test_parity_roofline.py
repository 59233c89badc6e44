"""Parity: the roofline suite matches goldens/roofline.json (see docs/qualification.md)."""

from __future__ import annotations

from syrupy.assertion import SnapshotAssertion

from qualification.parity import compute_document, crashes
from qualification.parity.syrupy_ext import GoldenExtension


def test_parity_roofline(snapshot: SnapshotAssertion) -> None:
    document = compute_document("roofline")
    assert crashes(document) == []
    assert document == snapshot.use_extension(GoldenExtension)
