"""The table estimator: exact hit, interpolation inside the envelope, never extrapolation; files."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from aisim.errors import ConfigError, DataIntegrityError, UnsupportedQuery
from aisim.fpm import ForwardPassMetrics, load_table_file, table_from_points, write_table_file

GRID = [
    {"batch_size": 1, "total_kv_tokens": 0, "latency_ms": 1.0},
    {"batch_size": 1, "total_kv_tokens": 100, "latency_ms": 3.0},
    {"batch_size": 4, "total_kv_tokens": 0, "latency_ms": 4.0},
    {"batch_size": 4, "total_kv_tokens": 100, "latency_ms": 10.0},
]


def test_exact_hit_is_measured() -> None:
    table = table_from_points(GRID)
    result = table.estimate_forward_pass_detailed(ForwardPassMetrics(4, 100))
    assert result.latency_ms == 10.0
    assert result.diagnostics.coverage == "measured"
    assert result.diagnostics.estimator == "table"
    assert result.diagnostics.data_identity == table.data_identity
    assert len(table.data_identity or "") == 64


def test_bilinear_interpolation_by_hand() -> None:
    # Row B=1 at K=50: 2.0; row B=4 at K=50: 7.0; at B=2: 2 + 5 * (2 - 1) / (4 - 1) = 11/3.
    table = table_from_points(GRID)
    result = table.estimate_forward_pass_detailed(ForwardPassMetrics(2, 50))
    assert result.latency_ms == pytest.approx(11.0 / 3.0, abs=1e-12)
    assert result.diagnostics.coverage == "interpolated"
    # On a grid line: B=4, K=25 -> 4 + 6 * 0.25 = 5.5.
    assert table.estimate_forward_pass_time_ms(ForwardPassMetrics(4, 25)) == pytest.approx(5.5)


def test_scattered_rows_interpolate_row_wise_then_across() -> None:
    # Recorder-style points: fixed context per sequence, so K_total = B * context.
    table = table_from_points(
        [
            {"batch_size": 1, "total_kv_tokens": 256, "latency_ms": 2.0},
            {"batch_size": 1, "total_kv_tokens": 1024, "latency_ms": 4.0},
            {"batch_size": 4, "total_kv_tokens": 1024, "latency_ms": 6.0},
            {"batch_size": 4, "total_kv_tokens": 4096, "latency_ms": 12.0},
        ]
    )
    # B=2, K=1024: row 1 -> 4.0 (exact), row 4 -> 6.0 (exact); 4 + 2 * (1/3) = 14/3.
    assert table.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 1024)) == pytest.approx(
        14.0 / 3.0, abs=1e-12
    )
    # B=2, K=2048 lies outside row B=1's recorded K range: unsupported, not extrapolated.
    with pytest.raises(UnsupportedQuery, match="outside the measured envelope"):
        table.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 2048))


@pytest.mark.parametrize(
    ("metrics", "text"),
    [
        (ForwardPassMetrics(8, 50), "batch_size=8"),
        (ForwardPassMetrics(2, 200), "total_kv_tokens=200"),
        (ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=10), "decode STP"),
    ],
)
def test_outside_the_envelope_is_unsupported(metrics: ForwardPassMetrics, text: str) -> None:
    with pytest.raises(UnsupportedQuery, match=text):
        table_from_points(GRID).estimate_forward_pass_time_ms(metrics)


def test_rule_checks_the_envelope_at_widened_coordinates() -> None:
    table = table_from_points(GRID)
    # B=1, d=3 widens to B=4 (inside); B=2, d=3 widens to B=8 (outside).
    assert table.estimate_forward_pass_time_ms(
        ForwardPassMetrics(1, 100), draft_length=3
    ) == pytest.approx(1.49 * 10.0)
    with pytest.raises(UnsupportedQuery, match="batch_size=8"):
        table.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 100), draft_length=3)


@pytest.mark.parametrize(
    ("points", "field"),
    [
        ([], "points"),
        ({"batch_size": 1}, "points"),
        ([{"batch_size": 1, "total_kv_tokens": 0}], r"points\[0\].latency_ms"),
        ([{"batch_size": 0, "total_kv_tokens": 0, "latency_ms": 1.0}], r"points\[0\].batch_size"),
        ([{"batch_size": 1, "total_kv_tokens": 0, "latency_ms": 0.0}], r"points\[0\].latency_ms"),
        ([{"batch_size": 1, "total_kv_tokens": 0, "latency_ms": "1"}], r"points\[0\].latency_ms"),
        (
            [{"batch_size": 1, "total_kv_tokens": 0, "latency_ms": float("inf")}],
            r"points\[0\].latency_ms",
        ),
        ([GRID[0], dict(GRID[0])], r"points\[1\]: duplicate"),
    ],
)
def test_malformed_points_are_config_errors(points: object, field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        table_from_points(points)


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_file_round_trip_keeps_answers_and_hash(tmp_path: Path, suffix: str) -> None:
    target = tmp_path / f"stp{suffix}"
    identity = {"model": "Qwen/Qwen3-8B", "hardware": "h100_sxm", "backend": "vllm"}
    write_table_file(target, GRID, identity=identity)
    sidecar = json.loads((tmp_path / f"stp{suffix}.json").read_text())
    assert sidecar["schema"] == {"name": "aisim.stp_table", "version": 1}
    assert sidecar["units"] == {
        "batch_size": "requests",
        "total_kv_tokens": "tokens",
        "latency_ms": "ms",
    }
    assert sidecar["row_count"] == 4
    digest = hashlib.sha256(target.read_bytes()).hexdigest()
    assert sidecar["sha256"] == digest
    loaded = load_table_file(str(target))
    assert loaded.name == "table"
    assert loaded.data_identity == digest
    assert loaded.identity == identity
    assert loaded.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 50)) == pytest.approx(11 / 3)
    # The sidecar path works as well.
    assert load_table_file(str(target) + ".json").data_identity == digest
    with pytest.raises(ConfigError, match="already exists"):
        write_table_file(target, GRID)


def test_tampered_truncated_and_unlabelled_files_are_refused(tmp_path: Path) -> None:
    target = tmp_path / "stp.csv"
    write_table_file(target, GRID)
    original = target.read_bytes()
    target.write_bytes(original.replace(b"10.0", b"11.0"))
    with pytest.raises(DataIntegrityError, match="SHA-256"):
        load_table_file(target)
    target.write_bytes(original[:-5])
    with pytest.raises(DataIntegrityError, match="truncated"):
        load_table_file(target)
    target.write_bytes(original)
    side = tmp_path / "stp.csv.json"
    sidecar = json.loads(side.read_text())
    for key, value, message in [
        ("schema", {"name": "aisim.stp_table", "version": 2}, "schema.version"),
        ("schema", {"name": "other", "version": 1}, "schema.name"),
        (
            "units",
            {"batch_size": "requests", "total_kv_tokens": "tokens", "latency_ms": "s"},
            "units",
        ),
        ("row_count", 3, "row_count"),
        ("data_file", "x.csv", "data_file"),
    ]:
        side.write_text(json.dumps({**sidecar, key: value}))
        with pytest.raises(DataIntegrityError, match=message):
            load_table_file(target)
    side.unlink()
    with pytest.raises(DataIntegrityError, match="sidecar"):
        load_table_file(target)


def _resealed_csv(path: Path, text: str, rows: int) -> None:
    """``path`` rewritten as ``text`` with its sidecar's size, digest and row count to match
    (a user's hand-edited table that passes the integrity checks)."""
    data = text.encode()
    path.write_bytes(data)
    side = path.with_name(path.name + ".json")
    sidecar = json.loads(side.read_text())
    sidecar.update(bytes=len(data), sha256=hashlib.sha256(data).hexdigest(), row_count=rows)
    side.write_text(json.dumps(sidecar))


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ("1.5,0,2.0", "line 3: batch_size: expected an integer, got '1.5'"),
        ("2,many,2.0", "line 3: total_kv_tokens: expected an integer, got 'many'"),
        ("2,0,fast", "line 3: latency_ms: expected a number, got 'fast'"),
        ("2,0", "line 3: 2 fields, the header has 3"),
        ("2,0,2.0,9", "line 3: 4 fields, the header has 3"),
        # int() and float() took these: '4_0' as 40, ' 0' as 0, 'nan' (refused later, by
        # value); a 23-digit count was read through a float and shown as 99999999999999991611392.
        ("4_0,0,2.0", "line 3: batch_size: expected an integer, got '4_0'"),
        ("2, 0,2.0", "line 3: total_kv_tokens: expected an integer, got ' 0'"),
        ("2,0,nan", "line 3: latency_ms: expected a number, got 'nan'"),
        ("9" * 23 + ",0,1.0", f"line 3: batch_size: expected an integer, got '{'9' * 23}'"),
        # A value out of range is named by its line too (it was 'points[1].latency_ms').
        ("2,0,-1.0", "line 3: latency_ms: expected a finite number in 0.0..1000000000.0, got -1.0"),
        # A blank line is skipped, and counted: the row after it is line 4.
        (
            "\n2,0,-1.0",
            "line 4: latency_ms: expected a finite number in 0.0..1000000000.0, got -1.0",
        ),
    ],
)
def test_a_bad_csv_cell_is_named_by_row_column_and_value(
    tmp_path: Path, row: str, message: str
) -> None:
    """Each used to be one message for every case, naming neither the column nor the value
    ('row 1: batch_size/total_kv_tokens must be integers and latency_ms a number'), a short
    or long row included."""
    target = tmp_path / "stp.csv"
    write_table_file(target, GRID)
    _resealed_csv(target, f"batch_size,total_kv_tokens,latency_ms\n1,0,1.0\n{row}\n", 2)
    with pytest.raises(DataIntegrityError) as caught:
        load_table_file(target)
    assert str(caught.value) == f"{str(target)!r}: {message}"


@pytest.mark.parametrize(
    "text",
    [
        # '1.0' and '1e2' are whole numbers (as pandas writes an integer column with a gap):
        # read as 1 and 100, as an integral float is anywhere in aisim's input.
        "batch_size,total_kv_tokens,latency_ms\n1.0,0,1.0\n1,1e2,3.0\n4,0,4.0\n4,100,10.0\n",
        # Excel writes 'CSV UTF-8' with a byte-order mark: the header's first name read as
        # '\ufeffbatch_size' and the table was refused for a missing batch_size column.
        "\ufeffbatch_size,total_kv_tokens,latency_ms\n1,0,1.0\n1,100,3.0\n4,0,4.0\n4,100,10.0\n",
    ],
    ids=["whole-decimal-counts", "byte-order-mark"],
)
def test_a_csv_table_loads_whole_decimal_counts_and_a_byte_order_mark(
    tmp_path: Path, text: str
) -> None:
    target = tmp_path / "stp.csv"
    write_table_file(target, GRID)
    _resealed_csv(target, text, 4)
    # The same table as GRID, so the same answer as the bilinear test's by hand: at B=2, K=50
    # (every point used) 2 + 5 * (2 - 1) / (4 - 1) = 11/3.
    loaded = load_table_file(target)
    assert loaded.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 50)) == pytest.approx(11 / 3)
