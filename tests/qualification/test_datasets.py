"""Recorded tables and their sidecars: round trip, and refusal of tampered or truncated data."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from aisim.errors import ConfigError, DataIntegrityError
from qualification.datasets import SD_ROUNDS, STP_POINTS, RecordedDataset, load_dataset

STP = {(1, 256): 10.0, (2, 256): 12.5}
ROUNDS = [(1, 1, 256, [14.0, 15.0, 16.0])]


@pytest.fixture
def dataset(make_dataset: Callable[..., RecordedDataset]) -> RecordedDataset:
    return make_dataset("ds", STP, ROUNDS)


def test_round_trip_values_and_sidecar(dataset: RecordedDataset) -> None:
    loaded = load_dataset(dataset.directory)
    assert loaded.sd_rounds["duration_ms"].tolist() == [14.0, 15.0, 16.0]
    assert loaded.sd_rounds["config_id"].tolist() == ["d1-b1-k256"] * 3
    assert loaded.stp_points["latency_ms_median"].tolist() == [10.0, 12.5]
    assert [list(reps) for reps in loaded.stp_points["latency_ms_reps"]] == [
        [10.0, 10.0],
        [12.5, 12.5],
    ]
    side = json.loads((dataset.directory / "sd_rounds.parquet.json").read_text())
    data = (dataset.directory / "sd_rounds.parquet").read_bytes()
    assert side["sha256"] == hashlib.sha256(data).hexdigest()
    assert side["bytes"] == len(data)
    assert side["row_count"] == 3
    assert side["schema"] == {"name": "aisim.sd_rounds", "version": 1}
    assert side["units"]["duration_ms"] == "ms"
    assert sorted(side["keys"]) == sorted(SD_ROUNDS.column_names)
    assert (
        side["companion"]["sha256"]
        == hashlib.sha256((dataset.directory / "stp_points.parquet").read_bytes()).hexdigest()
    )
    assert side["identity"]["timing"]["metric"] == "cpu"


def test_loader_accepts_either_parquet_path(dataset: RecordedDataset) -> None:
    by_file = load_dataset(dataset.directory / "stp_points.parquet")
    assert by_file.directory == dataset.directory


def test_writing_is_byte_deterministic(
    make_dataset: Callable[..., RecordedDataset], dataset: RecordedDataset
) -> None:
    again = make_dataset("ds-again", STP, ROUNDS)
    for name in (STP_POINTS.file_name, SD_ROUNDS.file_name):
        assert (again.directory / name).read_bytes() == (dataset.directory / name).read_bytes()


def test_existing_dataset_is_not_clobbered(make_dataset: Callable[..., RecordedDataset]) -> None:
    make_dataset("same", STP, ROUNDS)
    with pytest.raises(ConfigError, match="already exists"):
        make_dataset("same", STP, ROUNDS)


def test_tampered_data_is_rejected(dataset: RecordedDataset) -> None:
    path = dataset.directory / "sd_rounds.parquet"
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF  # same size, one byte changed
    path.write_bytes(bytes(data))
    with pytest.raises(DataIntegrityError, match="SHA-256 .* does not match"):
        load_dataset(dataset.directory)


def test_truncated_data_is_rejected(dataset: RecordedDataset) -> None:
    path = dataset.directory / "stp_points.parquet"
    path.write_bytes(path.read_bytes()[:-100])
    with pytest.raises(DataIntegrityError, match="truncated"):
        load_dataset(dataset.directory)


def test_edited_sidecar_hash_is_rejected(dataset: RecordedDataset) -> None:
    side = dataset.directory / "sd_rounds.parquet.json"
    content = json.loads(side.read_text())
    content["sha256"] = "0" * 64
    side.write_text(json.dumps(content))
    with pytest.raises(DataIntegrityError, match="does not match"):
        load_dataset(dataset.directory)


def test_missing_sidecar_is_rejected(dataset: RecordedDataset) -> None:
    (dataset.directory / "stp_points.parquet.json").unlink()
    with pytest.raises(DataIntegrityError, match="sidecar 'stp_points.parquet.json' is missing"):
        load_dataset(dataset.directory)


def test_unknown_schema_version_is_rejected(dataset: RecordedDataset) -> None:
    side = dataset.directory / "sd_rounds.parquet.json"
    content = json.loads(side.read_text())
    content["schema"]["version"] = 99
    side.write_text(json.dumps(content))
    with pytest.raises(DataIntegrityError, match="version 99 is not supported"):
        load_dataset(dataset.directory)


def test_tables_from_different_recordings_are_rejected(
    make_dataset: Callable[..., RecordedDataset], dataset: RecordedDataset
) -> None:
    other = make_dataset("other", {(1, 256): 11.0, (2, 256): 12.5}, ROUNDS)
    for name in ("stp_points.parquet", "stp_points.parquet.json"):
        shutil.copy(other.directory / name, dataset.directory / name)
    with pytest.raises(DataIntegrityError, match="companion hash mismatch"):
        load_dataset(dataset.directory)


def test_not_a_dataset_directory(tmp_path: Path) -> None:
    with pytest.raises(DataIntegrityError, match="not a dataset directory"):
        load_dataset(tmp_path / "absent")


def test_impossible_values_are_rejected(make_dataset: Callable[..., RecordedDataset]) -> None:
    with pytest.raises(DataIntegrityError, match="duration_ms.*impossible value"):
        make_dataset("bad", STP, [(1, 1, 256, [14.0, -1.0])])


def test_a_nan_duration_is_named_as_no_value(make_dataset: Callable[..., RecordedDataset]) -> None:
    """A NaN (or null) duration said 'column 'duration_ms' is missing' while the column was
    there: the row's value is what is missing."""
    with pytest.raises(DataIntegrityError) as info:
        make_dataset("nan", STP, [(1, 1, 256, [14.0, math.nan])])
    assert str(info.value).endswith(
        "sd_rounds.parquet': row 1: duration_ms: no value (null or NaN); every row needs a "
        "number there"
    )


def test_duplicate_keys_are_rejected(make_dataset: Callable[..., RecordedDataset]) -> None:
    with pytest.raises(DataIntegrityError, match="repeats round 0 of configuration 'd1-b1-k256'"):
        make_dataset("twice", STP, [(1, 1, 256, [14.0]), (1, 1, 256, [15.0])])
