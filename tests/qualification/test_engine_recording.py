"""Engine recordings: bad recordings are refused with one line naming file, row and field; the
sidecar hash is checked (hand-built runs, no vLLM needed)."""

from __future__ import annotations

import io
import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from aisim.errors import DataIntegrityError
from qualification.datasets._tables import write_table
from qualification.engine import SERVED_REQUESTS, SERVED_STEPS, load_served_run
from qualification.engine._schema import METRICS_FILE

SIDECAR = {"identity": {"engine": "test"}, "engine_settings": {}, "command": "hand-built"}


def requests_columns() -> dict[str, list[Any]]:
    return {
        "request_id": ["r0", "r1"],
        "prompt_tokens": [10, 20],
        "output_tokens": [2, 3],
        "arrival_ms": [0.0, 5.0],
        "added_ms": [0.0, 6.0],
        "first_token_ms": [10.0, 20.0],
        "finish_ms": [20.0, 40.0],
        "token_times_ms": [[10.0, 20.0], [20.0, 30.0, 40.0]],
    }


def steps_columns() -> dict[str, list[Any]]:
    return {
        "step_index": [0, 1],
        "start_ms": [0.0, 10.0],
        "end_ms": [10.0, 20.0],
        "cpu_ms": [9.0, 9.5],
        "num_prefill_requests": [1, 1],
        "prefill_tokens": [10, 20],
        "num_decode_requests": [0, 1],
        "decode_kv_tokens": [0, 10],
        "draft_tokens": [0, 0],
        "scheduled_tokens": [10, 21],
        "tokens_emitted": [1, 2],
        "preempted": [0, 0],
        "waiting": [0, 0],
        "request_ids": ["r0", "r0;r1"],
    }


def write_run(
    directory: Path,
    requests: dict[str, list[Any]] | None = None,
    steps: dict[str, list[Any]] | None = None,
) -> Path:
    write_table(directory, SERVED_REQUESTS, requests or requests_columns(), SIDECAR)
    write_table(directory, SERVED_STEPS, steps or steps_columns(), SIDECAR)
    (directory / METRICS_FILE).write_text("vllm:num_requests_running 0.0\n", encoding="utf-8")
    return directory


def test_a_good_run_loads(tmp_path: Path) -> None:
    run = load_served_run(write_run(tmp_path))
    assert run.requests["request_id"].tolist() == ["r0", "r1"]
    assert len(run.steps) == 2
    assert run.metrics == {"vllm:num_requests_running": 0.0}


def _with(column: str, row: int, value: Any) -> dict[str, list[Any]]:
    columns = requests_columns()
    columns[column][row] = value
    return columns


@pytest.mark.parametrize(
    ("columns", "expected"),
    [
        (
            _with("first_token_ms", 1, math.nan),
            r"requests\.parquet': row 1: first_token_ms: no value \(null or NaN\); every row "
            r"needs a number there$",
        ),
        (
            _with("first_token_ms", 1, 4.0),
            r"requests\.parquet': row 1: first_token_ms: 4\.0 is before added_ms",
        ),
        (
            _with("arrival_ms", 0, -1.0),
            r"requests\.parquet': row 0: arrival_ms: -1\.0 is before the run start",
        ),
        (
            _with("token_times_ms", 1, [20.0, 40.0]),
            r"requests\.parquet': row 1: token_times_ms: request 'r1' never finished \(emitted 2 of its 3",
        ),
        (
            _with("token_times_ms", 1, [20.0, 15.0, 40.0]),
            r"requests\.parquet': row 1: token_times_ms\[1\]: 15\.0 is before 20\.0",
        ),
        (
            _with("request_id", 1, "r0"),
            r"requests\.parquet': row 1: request_id: 'r0' appears twice",
        ),
        (
            _with("token_times_ms", 1, [20.0, 30.0, 35.0, 40.0]),
            r"requests\.parquet': row 1: token_times_ms: 4 times for the 3 output tokens of "
            r"request 'r1' \(output_tokens\); expected one time per output token$",
        ),
        (
            _with("token_times_ms", 1, [20.0, math.nan, 40.0]),
            r"requests\.parquet': row 1: token_times_ms\[1\]: nan; expected a finite time \(ms\)$",
        ),
        (
            _with("token_times_ms", 1, [21.0, 30.0, 40.0]),
            r"requests\.parquet': row 1: token_times_ms\[0\]: 21\.0 differs from first_token_ms "
            r"20\.0; expected the same time$",
        ),
        (
            _with("token_times_ms", 0, [10.0, 19.0]),
            r"requests\.parquet': row 0: token_times_ms\[1\]: 19\.0 differs from finish_ms 20\.0",
        ),
    ],
    ids=[
        "missing-timestamp",
        "non-causal",
        "negative-arrival",
        "unfinished",
        "token-times-backwards",
        "duplicate",
        "more-times-than-tokens",
        "nan-token-time",
        "first-token-time",
        "last-token-time",
    ],
)
def test_bad_requests_are_refused_naming_file_row_field(
    tmp_path: Path, columns: dict[str, list[Any]], expected: str
) -> None:
    write_run(tmp_path, requests=columns)
    with pytest.raises(DataIntegrityError, match=expected) as caught:
        load_served_run(tmp_path)
    assert "\n" not in str(caught.value)


def test_overlapping_steps_are_refused(tmp_path: Path) -> None:
    steps = steps_columns()
    steps["start_ms"][1] = 9.0
    write_run(tmp_path, steps=steps)
    with pytest.raises(
        DataIntegrityError, match=r"steps\.parquet': row 1: start_ms: 9\.0 is before the previous"
    ):
        load_served_run(tmp_path)


def test_an_unknown_column_is_refused_by_name(tmp_path: Path) -> None:
    write_run(tmp_path)
    data = tmp_path / SERVED_REQUESTS.file_name
    table = pq.read_table(data).append_column("gpu_id", pa.array([0, 1]))
    buffer = io.BytesIO()
    pq.write_table(table, buffer)
    _replace_data(data, buffer.getvalue())
    with pytest.raises(DataIntegrityError, match=r"requests\.parquet': unknown column 'gpu_id'"):
        load_served_run(tmp_path)


def test_a_sidecar_hash_mismatch_is_refused(tmp_path: Path) -> None:
    write_run(tmp_path)
    data = tmp_path / SERVED_STEPS.file_name
    raw = bytearray(data.read_bytes())
    raw[len(raw) // 2] ^= 0xFF
    data.write_bytes(bytes(raw))
    with pytest.raises(DataIntegrityError, match=r"steps\.parquet': SHA-256 .* does not match"):
        load_served_run(tmp_path)


def test_runs_whose_tables_disagree_are_refused(tmp_path: Path) -> None:
    write_table(tmp_path, SERVED_REQUESTS, requests_columns(), SIDECAR)
    write_table(tmp_path, SERVED_STEPS, steps_columns(), {**SIDECAR, "command": "other"})
    (tmp_path / METRICS_FILE).write_text("", encoding="utf-8")
    with pytest.raises(DataIntegrityError, match="disagree on command"):
        load_served_run(tmp_path)


def _replace_data(data: Path, content: bytes) -> None:
    """Rewrite a data file and re-seal its sidecar (size and hash), so only the content is bad."""
    import hashlib
    import json

    side = data.with_name(data.name + ".json")
    sidecar = json.loads(side.read_text(encoding="utf-8"))
    sidecar["sha256"] = hashlib.sha256(content).hexdigest()
    sidecar["bytes"] = len(content)
    data.write_bytes(content)
    side.write_text(json.dumps(sidecar), encoding="utf-8")


def test_a_metrics_file_that_is_not_prometheus_text_is_refused(tmp_path: Path) -> None:
    directory = write_run(tmp_path)
    (directory / METRICS_FILE).write_text("vllm:num_requests_running zero\n", encoding="utf-8")
    with pytest.raises(DataIntegrityError) as caught:
        load_served_run(directory)
    message = str(caught.value)
    assert str(directory / METRICS_FILE) in message and "not Prometheus text" in message
    assert "\n" not in message
