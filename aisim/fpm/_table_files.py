"""Recorded table files: parquet or CSV data plus a JSON sidecar, verified before use.

Not compiled (file I/O, pyarrow). The interpolation math lives in the compiled modules; this
module only reads, verifies and hands plain point lists over.

File format (documented in docs/estimators.md):

* data ``NAME.parquet`` or ``NAME.csv`` with columns ``batch_size`` (int, requests per rank),
  ``total_kv_tokens`` (int, past KV tokens summed over the requests) and ``latency_ms`` (float);
  other columns are ignored;
* sidecar ``NAME.parquet.json`` (the data file name + ``.json``) with ``schema`` ``{name,
  version}`` (``aisim.stp_table`` v1 for STP tables, ``aisim.measured_rounds`` v1 for measured SD
  rounds), ``data_file``, ``sha256`` (hex digest of the data file's bytes), ``row_count``,
  ``units`` (``batch_size: requests``, ``total_kv_tokens: tokens``, ``latency_ms: ms``) and
  ``identity`` (model, hardware, backend, tensor_parallel, ...; measured rounds also ``kind``,
  ``draft_length``, ``draft_identity``, ``timing_scope``, ``role``).

Recorder datasets (``qualification.datasets``) load too: ``aisim.stp_points`` v1 as an STP table
(its ``latency_ms_median`` column) and ``aisim.sd_rounds`` v1 as one ``measured_round`` table per
recorded draft length (``_recorded_rounds``). Any failure is a ``DataIntegrityError`` naming the
file: missing sidecar, unknown schema or version, wrong units, hash or row-count mismatch.
"""

from __future__ import annotations

import csv
import hashlib
import io
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from aisim._io import (
    MAX_TRACE_BYTES,
    atomic_write_bytes,
    atomic_write_text,
    canonical_json,
    check_path_text,
    float_text_problem,
    input_file_problem,
    int_text_problem,
    read_sidecar_object,
    read_verified_bytes,
)
from aisim.errors import ConfigError, DataIntegrityError
from aisim.fpm._inputs import check_identity, integral, read_points
from aisim.fpm._measured import MeasuredRoundModel, check_measured_identity
from aisim.fpm._recorded_rounds import recorded_round_models
from aisim.fpm._table import TableModel

Estimator = TableModel | MeasuredRoundModel
#: How an error names a table file's row: a CSV file's by its line (the header is line 1, as
#: an editor or a spreadsheet numbers it), a parquet file's ``row N``, 0-based as pandas does.
RowName = Callable[[int], str]

STP_TABLE_SCHEMA = "aisim.stp_table"
MEASURED_ROUNDS_SCHEMA = "aisim.measured_rounds"
RECORDER_STP_SCHEMA = "aisim.stp_points"
RECORDER_ROUNDS_SCHEMA = "aisim.sd_rounds"
SCHEMA_VERSION = 1
#: Latency column per schema.
LATENCY_COLUMNS = {
    STP_TABLE_SCHEMA: "latency_ms",
    MEASURED_ROUNDS_SCHEMA: "latency_ms",
    RECORDER_STP_SCHEMA: "latency_ms_median",
    RECORDER_ROUNDS_SCHEMA: "duration_ms",
}
UNITS = {"batch_size": "requests", "total_kv_tokens": "tokens", "latency_ms": "ms"}
#: The units each schema's sidecar must declare for the columns read here.
SCHEMA_UNITS = {
    STP_TABLE_SCHEMA: UNITS,
    MEASURED_ROUNDS_SCHEMA: UNITS,
    RECORDER_STP_SCHEMA: {
        "batch_size": "requests",
        "total_kv_tokens": "tokens",
        "latency_ms_median": "ms",
    },
    RECORDER_ROUNDS_SCHEMA: {
        "batch_size": "requests",
        "total_kv_tokens": "tokens",
        "duration_ms": "ms",
        "draft_length": "tokens",
    },
}


def sidecar_path(data_file: Path) -> Path:
    """``x/stp.parquet`` -> ``x/stp.parquet.json`` (a sidecar path maps to itself)."""
    if data_file.name.endswith(".parquet.json") or data_file.name.endswith(".csv.json"):
        return data_file
    return data_file.with_name(data_file.name + ".json")


def _data_path(path: Path) -> Path:
    if path.name.endswith(".parquet.json") or path.name.endswith(".csv.json"):
        return path.with_name(path.name[: -len(".json")])
    return path


def load_table_file(path: object) -> Estimator:
    """Load a verified table file (data or sidecar path) as the estimator its schema names.

    A recorder SD-round table holding several draft lengths is one estimator per length: that
    is a ``ConfigError`` here (use ``load_table_models`` or ``best_available``'s ``tables``).
    """
    models = load_table_models(path)
    if len(models) != 1:
        lengths = ", ".join(str(model.identity.get("draft_length")) for model in models)
        raise ConfigError(
            f"tables: {str(path)!r} holds measured rounds for draft lengths {lengths}, one "
            "estimator each; use load_table_models (or best_available, which picks the one "
            "matching the configured scheme)"
        )
    return models[0]


def load_table_models(path: object, *, field: str = "tables") -> list[Estimator]:
    """Every estimator a verified table file holds: one, except a recorder ``aisim.sd_rounds``
    table, which gives one ``measured_round`` estimator per recorded draft length. ``field``:
    the config field that names the file, for errors (``engine.workers.decode.timing.tables[0]``)."""
    data_file = _data_path(check_path_text(path, field))
    problem = input_file_problem(data_file, MAX_TRACE_BYTES)
    if problem is not None:
        raise ConfigError(
            f"{field}: {str(data_file)!r}: {problem}; expected a table file: NAME.parquet or "
            "NAME.csv beside its sidecar NAME.parquet.json or NAME.csv.json"
        )
    sidecar = _read_sidecar(data_file)
    schema = sidecar["schema"]["name"]
    if schema == RECORDER_ROUNDS_SCHEMA:
        columns = ("draft_length", "batch_size", "total_kv_tokens", "duration_ms")
        table, name_row = verified_columns(data_file, sidecar, columns)
        return list(recorded_round_models(table, sidecar, str(data_file), name_row))
    rows, name_row = _read_rows(data_file, sidecar, LATENCY_COLUMNS[schema])
    identity = sidecar.get("identity") or {}
    if not isinstance(identity, dict):
        raise DataIntegrityError(f"{str(data_file)!r}: sidecar identity must be a JSON object")
    identity = {key: value for key, value in identity.items() if _scalar(value)}
    points = [
        {"batch_size": b, "total_kv_tokens": k, "latency_ms": latency} for b, k, latency in rows
    ]
    source = str(data_file)
    try:
        if schema == MEASURED_ROUNDS_SCHEMA:
            return [
                MeasuredRoundModel(
                    read_points(points, "points", name_row),
                    check_identity(identity, "identity"),
                    sidecar["sha256"],
                    source,
                )
            ]
        return [
            TableModel(
                read_points(points, "points", name_row),
                check_identity(identity, "identity"),
                sidecar["sha256"],
                source,
            )
        ]
    except ConfigError as exc:
        raise DataIntegrityError(f"{source!r}: {exc}") from None


def _scalar(value: object) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _read_sidecar(data_file: Path) -> dict[str, Any]:
    side = sidecar_path(data_file)
    where = repr(str(side))
    loaded = read_sidecar_object(data_file, side, missing_reason="a table file needs one")
    schema = loaded.get("schema")
    name = schema.get("name") if isinstance(schema, dict) else None
    version = schema.get("version") if isinstance(schema, dict) else None
    if name not in LATENCY_COLUMNS:
        raise DataIntegrityError(
            f"{where}: schema.name: expected one of {', '.join(sorted(LATENCY_COLUMNS))}, "
            f"got {name!r}"
        )
    if version != SCHEMA_VERSION or isinstance(version, bool):
        raise DataIntegrityError(
            f"{where}: schema.version: {name} version {version!r} is not supported "
            f"(this aisim reads version {SCHEMA_VERSION})"
        )
    if loaded.get("data_file") != data_file.name:
        raise DataIntegrityError(
            f"{where}: data_file: sidecar describes {loaded.get('data_file')!r}, "
            f"not {data_file.name!r}"
        )
    sha = loaded.get("sha256")
    if not isinstance(sha, str) or len(sha) != 64:
        raise DataIntegrityError(f"{where}: sha256: expected a 64-hex-digit digest, got {sha!r}")
    units = loaded.get("units")
    if not isinstance(units, dict):
        raise DataIntegrityError(f"{where}: units: expected a mapping of column -> unit")
    for column, unit in SCHEMA_UNITS[name].items():
        if units.get(column) != unit:
            raise DataIntegrityError(
                f"{where}: units.{column}: expected {unit!r}, got {units.get(column)!r}"
            )
    return loaded


def _read_rows(
    data_file: Path, sidecar: Mapping[str, Any], latency_column: str
) -> tuple[list[tuple[int, int, float]], RowName]:
    where = repr(str(data_file))
    columns = ("batch_size", "total_kv_tokens", latency_column)
    table, name_row = verified_columns(data_file, sidecar, columns)
    rows: list[tuple[int, int, float]] = []
    for index in range(len(table["batch_size"])):
        values: list[int | float] = []
        for name in columns:
            value = _cell(table[name][index], name)
            if value is None:
                expected = "a number" if name == latency_column else "an integer"
                raise DataIntegrityError(
                    f"{where}: {name_row(index)}: {name}: expected {expected}, got "
                    f"{table[name][index]!r}"
                )
            values.append(value)
        rows.append((int(values[0]), int(values[1]), float(values[2])))
    return rows, name_row


def _cell(value: Any, column: str) -> int | float | None:
    """A cell as an integer for the two count columns, else a number (its range is checked
    with the points), or None when it is not one. A CSV cell (text) is read in aisim's strict
    number syntax (``int()`` and ``float()`` took '4_0' and ' 40 ' as 40, 'nan'); a count may
    be written as a whole decimal ('8.0', as pandas writes an integer column with a gap)."""
    counted = column in ("batch_size", "total_kv_tokens")
    if not isinstance(value, str):  # parquet: typed already
        try:
            return integral(value) if counted else float(value)
        except (TypeError, ValueError):
            return None
    if counted and int_text_problem(value) is None:
        return int(value)
    if float_text_problem(value) is not None:
        return None
    number = float(value)
    if not counted:
        return number
    return int(number) if number.is_integer() and any(c in value for c in ".eE") else None


def verified_columns(
    data_file: Path, sidecar: Mapping[str, Any], columns: Sequence[str]
) -> tuple[dict[str, list[Any]], RowName]:
    """``columns`` of ``data_file`` after the size, SHA-256 and row-count checks against its
    (already read) sidecar, and how an error names a row (``RowName``); ``DataIntegrityError``
    naming the file on any mismatch."""
    where = repr(str(data_file))
    data = read_verified_bytes(data_file, sidecar)
    lines: list[int] = []

    def name_row(index: int) -> str:
        return f"line {lines[index]}" if lines else f"row {index}"

    if data_file.suffix == ".csv":
        table, lines = _csv_columns(data, where, columns)
    elif data_file.suffix == ".parquet":
        table = _parquet_columns(data, where, columns)
    else:
        raise DataIntegrityError(f"{where}: expected a .parquet or .csv data file")
    count = len(table[columns[0]])
    if count != sidecar.get("row_count"):
        raise DataIntegrityError(
            f"{where}: {count} rows, sidecar row_count says {sidecar.get('row_count')!r}"
        )
    return table, name_row


def _csv_columns(
    data: bytes, where: str, columns: Sequence[str]
) -> tuple[dict[str, list[str]], list[int]]:
    """``columns`` of the CSV ``data`` and the line each row starts on (the header is line 1;
    a blank line is skipped, a quoted cell may hold a line break)."""
    rows: list[list[str]] = []
    lines: list[int] = []
    try:
        reader = csv.reader(io.StringIO(data.decode("utf-8-sig"), newline=""))  # Excel: BOM
        header = next(reader, [])
        start = reader.line_num + 1
        for row in reader:
            if row:
                rows.append(row)
                lines.append(start)
            start = reader.line_num + 1
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DataIntegrityError(f"{where}: not a readable CSV file: {exc}") from None
    missing = [name for name in columns if name not in header]
    if missing:
        raise DataIntegrityError(f"{where}: missing column(s) {', '.join(missing)}")
    for row, line in zip(rows, lines, strict=True):
        if len(row) != len(header):
            raise DataIntegrityError(
                f"{where}: line {line}: {len(row)} fields, the header has {len(header)}"
            )
    return {name: [row[header.index(name)] for row in rows] for name in columns}, lines


def _parquet_columns(data: bytes, where: str, columns: Sequence[str]) -> dict[str, list[Any]]:
    import pyarrow as pa

    from aisim._io import read_parquet_bytes

    try:
        table = read_parquet_bytes(data)  # no Arrow pool thread alive at interpreter exit
    except (pa.ArrowException, OSError) as exc:
        raise DataIntegrityError(f"{where}: not a readable parquet file: {exc}") from None
    missing = [name for name in columns if name not in table.schema.names]
    if missing:
        raise DataIntegrityError(f"{where}: missing column(s) {', '.join(missing)}")
    return {name: table.column(name).to_pylist() for name in columns}


def write_table_file(
    path: object,
    points: Sequence[Mapping[str, Any]],
    *,
    identity: Mapping[str, Any] | None = None,
    schema: str = STP_TABLE_SCHEMA,
    overwrite: bool = False,
) -> Path:
    """Write ``points`` as a table file (``.parquet`` or ``.csv``) plus its sidecar.

    The points are validated first (the same rules as ``table_from_points``); the sidecar gets
    the schema, units, identity, row count and the data file's SHA-256. Returns the data path.
    Refuses to overwrite unless ``overwrite``. Raises ``ConfigError`` for bad input.
    """
    if schema not in (STP_TABLE_SCHEMA, MEASURED_ROUNDS_SCHEMA):
        raise ConfigError(
            f"schema: expected {STP_TABLE_SCHEMA} or {MEASURED_ROUNDS_SCHEMA}, got {schema!r}"
        )
    if not isinstance(path, (str, Path)):
        raise ConfigError(f"path: expected a file path, got {path!r}")
    target = Path(path)
    rows = read_points(list(points), "points")
    declared = check_identity(identity, "identity")
    if schema == MEASURED_ROUNDS_SCHEMA:
        check_measured_identity(declared, "identity")
    if target.suffix == ".csv":
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(["batch_size", "total_kv_tokens", "latency_ms"])
        for batch, kv, latency in rows:
            writer.writerow([batch, kv, repr(latency)])
        data = text.getvalue().encode("utf-8")
    elif target.suffix == ".parquet":
        import pyarrow as pa
        import pyarrow.parquet as pq

        table = pa.table(
            {
                "batch_size": pa.array([r[0] for r in rows], pa.int64()),
                "total_kv_tokens": pa.array([r[1] for r in rows], pa.int64()),
                "latency_ms": pa.array([r[2] for r in rows], pa.float64()),
            }
        )
        buffer = io.BytesIO()
        pq.write_table(table, buffer, write_statistics=False)
        data = buffer.getvalue()
    else:
        raise ConfigError(f"path: expected a .parquet or .csv file name, got {str(target)!r}")
    sidecar = {
        "schema": {"name": schema, "version": SCHEMA_VERSION},
        "data_file": target.name,
        "sha256": hashlib.sha256(data).hexdigest(),
        "bytes": len(data),
        "row_count": len(rows),
        "units": dict(UNITS),
        "identity": declared,
    }
    atomic_write_bytes(target, data, overwrite=overwrite)
    atomic_write_text(sidecar_path(target), canonical_json(sidecar), overwrite=overwrite)
    return target
