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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aisim._io import (
    atomic_write_bytes,
    atomic_write_text,
    canonical_json,
    check_path_text,
    read_sidecar_object,
    read_verified_bytes,
)
from aisim.errors import ConfigError, DataIntegrityError
from aisim.fpm._inputs import check_identity, integral, read_points
from aisim.fpm._measured import MeasuredRoundModel, check_measured_identity
from aisim.fpm._recorded_rounds import recorded_round_models
from aisim.fpm._table import TableModel

Estimator = TableModel | MeasuredRoundModel

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
    if not data_file.is_file():
        raise ConfigError(f"{field}: {str(data_file)!r}: file not found (or not a file)")
    sidecar = _read_sidecar(data_file)
    schema = sidecar["schema"]["name"]
    if schema == RECORDER_ROUNDS_SCHEMA:
        columns = ("draft_length", "batch_size", "total_kv_tokens", "duration_ms")
        table = verified_columns(data_file, sidecar, columns)
        return list(recorded_round_models(table, sidecar, str(data_file)))
    rows = _read_rows(data_file, sidecar, LATENCY_COLUMNS[schema])
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
                    read_points(points, "points"),
                    check_identity(identity, "identity"),
                    sidecar["sha256"],
                    source,
                )
            ]
        return [
            TableModel(
                read_points(points, "points"),
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
) -> list[tuple[int, int, float]]:
    where = repr(str(data_file))
    columns = ("batch_size", "total_kv_tokens", latency_column)
    table = verified_columns(data_file, sidecar, columns)
    rows: list[tuple[int, int, float]] = []
    for index in range(len(table["batch_size"])):
        batch = _cell(table, index, "batch_size", where)
        kv = _cell(table, index, "total_kv_tokens", where)
        latency = _cell(table, index, latency_column, where)
        rows.append((int(batch), int(kv), float(latency)))
    return rows


def _cell(table: Mapping[str, list[Any]], index: int, column: str, where: str) -> int | float:
    """Row ``index`` of ``column``: an integer for the two count columns, else a number (its
    range is checked with the points); DataIntegrityError naming file, row, column and value."""
    value = table[column][index]
    counted = column in ("batch_size", "total_kv_tokens")
    try:
        return integral(value) if counted else float(value)
    except (TypeError, ValueError):
        expected = "an integer" if counted else "a number"
        raise DataIntegrityError(
            f"{where}: row {index}: {column}: expected {expected}, got {value!r}"
        ) from None


def verified_columns(
    data_file: Path, sidecar: Mapping[str, Any], columns: Sequence[str]
) -> dict[str, list[Any]]:
    """``columns`` of ``data_file`` after the size, SHA-256 and row-count checks against its
    (already read) sidecar; ``DataIntegrityError`` naming the file on any mismatch."""
    where = repr(str(data_file))
    data = read_verified_bytes(data_file, sidecar)
    if data_file.suffix == ".csv":
        table = _csv_columns(data, where, columns)
    elif data_file.suffix == ".parquet":
        table = _parquet_columns(data, where, columns)
    else:
        raise DataIntegrityError(f"{where}: expected a .parquet or .csv data file")
    count = len(table[columns[0]])
    if count != sidecar.get("row_count"):
        raise DataIntegrityError(
            f"{where}: {count} rows, sidecar row_count says {sidecar.get('row_count')!r}"
        )
    return table


def _csv_columns(data: bytes, where: str, columns: Sequence[str]) -> dict[str, list[Any]]:
    try:
        reader = csv.DictReader(io.StringIO(data.decode("utf-8")))
        records = list(reader)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise DataIntegrityError(f"{where}: not a readable CSV file: {exc}") from None
    missing = [name for name in columns if name not in (reader.fieldnames or [])]
    if missing:
        raise DataIntegrityError(f"{where}: missing column(s) {', '.join(missing)}")
    width = len(reader.fieldnames or [])
    for index, record in enumerate(records):
        # DictReader files a short row's missing cells as None and a long row's extra cells
        # under the key None: either way the cells are not where the header says.
        if None in record or None in record.values():
            count = width + len(record.get(None) or []) - list(record.values()).count(None)
            raise DataIntegrityError(
                f"{where}: row {index}: {count} fields, the header has {width}"
            )
    return {name: [record[name] for record in records] for name in columns}


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
