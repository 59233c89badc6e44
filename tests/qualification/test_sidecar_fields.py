"""Sidecar fields of the wrong type are refused where the sidecar is read, in one line naming
the file, the field path, the value and what is allowed, and nothing is written; fields no
reader uses are kept as written (docs/evidence.md, "Integrity")."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from aisim.cli import main
from aisim.errors import DataIntegrityError
from qualification.datasets import load_dataset
from qualification.engine import load_recording
from qualification.engine._plain import import_plain
from qualification.engine._schema import engine_recording_schema

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "evidence" / "cpu-qwen3-0.6b-mtp"
EXAMPLE = ROOT / "docs" / "examples" / "engine-recording"


def _edit(sidecar: Path, path: tuple[str | int, ...], value: Any) -> None:
    """Set the field at ``path`` of the JSON file ``sidecar`` to ``value``."""
    document = json.loads(sidecar.read_text(encoding="utf-8"))
    parent = document
    for part in path[:-1]:
        parent = parent[part]
    parent[path[-1]] = value
    sidecar.write_text(json.dumps(document), encoding="utf-8")


@pytest.mark.parametrize(
    ("table", "path", "value", "message"),
    [
        (
            "stp_points",
            ("identity", "threads"),
            "1",
            "identity.threads: expected an integer >= 1, got '1' (str)",
        ),
        (
            "stp_points",
            ("host", "load_average_start"),
            3.99,
            "host.load_average_start: expected a list of numbers, got 3.99 (float)",
        ),
        (
            "stp_points",
            ("host", "load_average_start", 0),
            "high",
            "host.load_average_start[0]: expected a number, got 'high' (str)",
        ),
        (
            "sd_rounds",
            ("identity", "device", "count"),
            True,
            "identity.device.count: expected an integer >= 1, got True (bool)",
        ),
        (
            "sd_rounds",
            ("identity", "timing"),
            "cpu",
            "identity.timing: expected an object, got 'cpu' (str)",
        ),
        (
            "sd_rounds",
            ("anomalies",),
            "none",
            "anomalies: expected a list of strings, got 'none' (str)",
        ),
        (
            "sd_rounds",
            ("row_count",),
            "120",
            "row_count: expected an integer >= 0, got '120' (str)",
        ),
        (
            "sd_rounds",
            ("companion", "sha256"),
            5,
            "companion.sha256: expected a string, got 5 (int)",
        ),
    ],
)
def test_qualify_mape_names_a_dataset_sidecar_field_of_the_wrong_type(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    table: str,
    path: tuple[str | int, ...],
    value: Any,
    message: str,
) -> None:
    dataset = tmp_path / "dataset"
    shutil.copytree(DATASET, dataset)
    sidecar = dataset / f"{table}.parquet.json"
    _edit(sidecar, path, value)
    out = tmp_path / "mape"
    assert main(["qualify", "mape", str(dataset), "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"aisim: error: {str(sidecar)!r}: {message}\n"
    assert not out.exists()


def test_sidecar_fields_no_reader_uses_are_kept_as_written(tmp_path: Path) -> None:
    """The format lists what recorders write; a field it does not name (a recorder's own
    note, of any type) neither fails the load nor is dropped."""
    dataset = tmp_path / "dataset"
    shutil.copytree(DATASET, dataset)
    for table in ("stp_points", "sd_rounds"):
        _edit(dataset / f"{table}.parquet.json", ("host", "rack"), [7, "b"])
        _edit(dataset / f"{table}.parquet.json", ("operator_note",), 3)
    loaded = load_dataset(dataset)
    assert loaded.rounds_sidecar["host"]["rack"] == [7, "b"]
    assert loaded.stp_sidecar["operator_note"] == 3


@pytest.mark.parametrize(
    ("sidecar", "path", "value", "message"),
    [
        (
            "served-1/requests.parquet.json",
            ("host",),
            {"before": {"load_average": ["high", 1.0, 1.0]}},
            "host.before.load_average[0]: expected a number, got 'high' (str)",
        ),
        (
            "served-1/requests.parquet.json",
            ("engine_settings", "chunked_prefill"),
            1,
            "engine_settings.chunked_prefill: expected true or false, got 1",
        ),
        (
            "served-1/requests.parquet.json",
            ("engine_settings", "max_num_seqs"),
            "8",
            "engine_settings.max_num_seqs: expected an integer in 1..1099511627776, got '8'",
        ),
        (
            "served-1/requests.parquet.json",
            ("identity", "engine_version"),
            0.32,
            "identity.engine_version: expected a string, got 0.32 (float)",
        ),
        (
            "grid/grid_steps.parquet.json",
            ("grid",),
            {"repetitions": "5"},
            "grid.repetitions: expected an integer >= 1, got '5' (str)",
        ),
    ],
)
def test_qualify_engine_names_a_recording_sidecar_field_of_the_wrong_type(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    sidecar: str,
    path: tuple[str, ...],
    value: Any,
    message: str,
) -> None:
    recording = import_plain(EXAMPLE, tmp_path / "rec")
    load_recording(recording)  # as imported, it loads
    _edit(recording / sidecar, path, value)
    out = tmp_path / "score"
    assert main(["qualify", "engine", str(recording), "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"aisim: error: {str(recording / sidecar)!r}: {message}\n"
    assert not out.exists()


def test_a_plain_settings_host_of_the_wrong_type_is_refused_at_import(tmp_path: Path) -> None:
    """Refused where the user wrote it (settings.json), not later in the imported sidecars."""
    plain = tmp_path / "plain"
    shutil.copytree(EXAMPLE, plain)
    _edit(plain / "settings.json", ("host", "before"), {"cpus": "2"})
    with pytest.raises(DataIntegrityError) as caught:
        import_plain(plain, tmp_path / "rec")
    assert str(caught.value) == (
        f"{str(plain / 'settings.json')!r}: host.before.cpus: expected an integer >= 1 or null, "
        "got '2' (str)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plain"]


def test_the_published_engine_recording_schema_types_the_host_fields_read() -> None:
    host = engine_recording_schema()["properties"]["host"]  # type: ignore[index]
    before = host["properties"]["before"]["properties"]
    assert before["load_average"] == {"type": "array", "items": {"type": "number"}}
    assert before["cpus"] == {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]}
