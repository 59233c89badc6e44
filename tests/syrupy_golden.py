"""syrupy integration: the golden of suite ``S`` is ``goldens/S.json`` and its test is
``tests/parity/test_parity_S.py::test_parity_S``.

The extension serializes a golden document as canonical JSON (the same bytes the update command
writes), compares exactly or within ``AISIM_PARITY_RTOL``, and reports a failure as the list of
moved cases and values (case, field, old, new, relative change) instead of a text diff.
``pytest tests/parity --snapshot-update`` writes the same files as
``python -m qualification.parity update``; the latter also prints the reviewed diff.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from syrupy.data import Snapshot, SnapshotCollection
from syrupy.extensions.json import JSONSnapshotExtension

from qualification._diff import diff_cases
from qualification.parity._commands import parity_rtol
from qualification.parity._golden import render

if TYPE_CHECKING:
    from syrupy.location import PyTestLocation
    from syrupy.types import SerializableData, SerializedData, SnapshotIndex

TEST_PREFIX = "test_parity_"


def suite_of(test_location: PyTestLocation) -> str:
    """``test_parity_speculation`` -> ``speculation``."""
    name = test_location.methodname or test_location.testname
    if not name.startswith(TEST_PREFIX):
        raise ValueError(f"golden tests are named {TEST_PREFIX}<suite>, got {name!r}")
    return name[len(TEST_PREFIX) :]


class GoldenExtension(JSONSnapshotExtension):
    """One canonical-JSON golden file per suite under the repository's ``goldens/``."""

    @classmethod
    def dirname(cls, *, test_location: PyTestLocation) -> str:
        # tests/parity/test_parity_S.py -> <repo>/goldens
        return str(Path(test_location.filepath).resolve().parents[2] / "goldens")

    @classmethod
    def discovery_dirname(cls, *, test_location: PyTestLocation) -> str:
        return cls.dirname(test_location=test_location)

    @classmethod
    def get_snapshot_name(cls, *, test_location: PyTestLocation, index: SnapshotIndex = 0) -> str:
        return f"{TEST_PREFIX}{suite_of(test_location)}"

    @classmethod
    def get_file_basename(cls, *, test_location: PyTestLocation, index: SnapshotIndex) -> str:
        return suite_of(test_location)

    @classmethod
    def matches_test_location(
        cls, *, test_location: PyTestLocation, snapshot_location: str
    ) -> bool:
        location = Path(snapshot_location)
        return location.parent == Path(
            cls.dirname(test_location=test_location)
        ) and location.stem == suite_of(test_location)

    def owns_snapshot_collection(self, *, filepath: str, test_location: PyTestLocation) -> bool:
        return Path(filepath).suffix == ".json"

    def read_snapshot_collection(self, *, snapshot_location: str) -> SnapshotCollection:
        collection = SnapshotCollection(location=snapshot_location)
        collection.add(Snapshot(name=f"{TEST_PREFIX}{Path(snapshot_location).stem}"))
        return collection

    def serialize(self, data: SerializableData, **_: Any) -> SerializedData:
        if not isinstance(data, dict) or "cases" not in data:
            raise TypeError("a golden assertion compares a golden document (compute_document)")
        return render(data)

    def matches(
        self, *, serialized_data: SerializableData, snapshot_data: SerializableData
    ) -> bool:
        rtol = parity_rtol()
        if rtol == 0.0:
            return bool(serialized_data == snapshot_data)
        new, old = json.loads(str(serialized_data)), json.loads(str(snapshot_data))
        return diff_cases(old["cases"], new["cases"], rtol).is_empty

    def diff_lines(
        self, serialized_data: SerializedData, snapshot_data: SerializedData
    ) -> Iterator[str]:
        try:
            new, old = json.loads(str(serialized_data)), json.loads(str(snapshot_data))
            diff = diff_cases(old["cases"], new["cases"], parity_rtol())
        except (ValueError, KeyError, TypeError):  # not a golden document: fall back to text
            yield from super().diff_lines(serialized_data, snapshot_data)
            return
        yield f"golden {new.get('suite')!r} moved: {diff.summary()}"
        yield from diff.lines(limit=100)
        if diff.is_empty:  # only formatting differs (a hand-edited golden)
            yield "goldens differ in formatting only: run python -m qualification.parity update"
