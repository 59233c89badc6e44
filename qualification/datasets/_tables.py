"""Write and read one recorded table: parquet data plus a JSON sidecar holding its SHA-256.

Writing is atomic and refuses to clobber (``aisim.files``). Reading verifies, in this order: the
sidecar parses and names a known schema and version, the data file exists with the recorded size
and SHA-256, the parquet parses with exactly the schema's columns and types, the row count
matches, and the values are physically possible. Any failure is a ``DataIntegrityError`` naming
the file and what is wrong, so a tampered or truncated file is refused, never half-read.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from aisim.errors import DataIntegrityError
from aisim.files import (
    atomic_write_bytes,
    atomic_write_text,
    canonical_json,
    read_parquet_bytes,
    read_sidecar_object,
    read_verified_bytes,
)
from qualification.datasets._schema import SCHEMAS, SIDECAR_SUFFIX, Column, TableSchema
from qualification.datasets.sidecar_fields import SIDECAR, check_fields

_ARROW_TYPES = {
    "int": pa.int64(),
    "float": pa.float64(),
    "bool": pa.bool_(),
    "str": pa.string(),
    "list[float]": pa.list_(pa.float64()),
}


def sidecar_path(data_file: Path) -> Path:
    """``x/sd_rounds.parquet`` -> ``x/sd_rounds.parquet.json``."""
    return data_file.with_name(data_file.name + SIDECAR_SUFFIX)


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def parquet_bytes(schema: TableSchema, columns: Mapping[str, Sequence[Any]]) -> bytes:
    """Encode ``columns`` (name -> values, exactly the schema's columns) as parquet bytes.

    Built with explicit arrow types and no pandas index metadata, so identical values give
    byte-identical files for one pyarrow version.
    """
    missing = [name for name in schema.column_names if name not in columns]
    extra = sorted(set(columns) - set(schema.column_names))
    if missing or extra:
        raise DataIntegrityError(
            f"{schema.name}: columns do not match the schema (missing {missing}, extra {extra})"
        )
    arrays = [
        pa.array(list(columns[column.name]), type=_ARROW_TYPES[column.kind])
        for column in schema.columns
    ]
    table = pa.Table.from_arrays(arrays, names=list(schema.column_names))
    buffer = io.BytesIO()
    pq.write_table(table, buffer, compression="zstd", write_statistics=False)
    return buffer.getvalue()


def write_table(
    directory: Path,
    schema: TableSchema,
    columns: Mapping[str, Sequence[Any]],
    sidecar: Mapping[str, Any],
    *,
    overwrite: bool = False,
) -> dict[str, Any]:
    """Write ``directory/<schema file>`` and its sidecar; return the sidecar written.

    ``sidecar`` supplies the descriptive sections (identity, coverage, anomalies, statistics,
    command, ...); this function adds schema, keys, units, data file, size, row count and hash.
    """
    data = parquet_bytes(schema, columns)
    row_counts = {len(values) for values in columns.values()}
    if len(row_counts) != 1:
        raise DataIntegrityError(f"{schema.name}: columns have different lengths {row_counts}")
    full = dict(sidecar)
    full.update(
        {
            "schema": {"name": schema.name, "version": schema.version},
            "data_file": schema.file_name,
            "sha256": sha256_bytes(data),
            "bytes": len(data),
            "row_count": row_counts.pop(),
            "keys": schema.describe_columns(),
            "units": {c.name: c.unit for c in schema.columns if c.unit},
        }
    )
    target = directory / schema.file_name
    atomic_write_bytes(target, data, overwrite=overwrite)
    atomic_write_text(sidecar_path(target), canonical_json(full), overwrite=overwrite)
    return full


def non_finite_field(value: Any, path: str = "") -> tuple[str, float] | None:
    """The first (field path, value) of a non-finite number (NaN, Infinity) in ``value``, a
    parsed JSON document (depth first, keys in order; a path like ``engine_settings.x`` or
    ``a[2]``), or None. Python's json reads NaN and Infinity although JSON has neither."""
    if isinstance(value, float) and not math.isfinite(value):
        return path, value
    if isinstance(value, dict):
        for key, item in value.items():
            found = non_finite_field(item, f"{path}.{key}" if path else str(key))
            if found is not None:
                return found
    if isinstance(value, list):
        for index, item in enumerate(value):
            found = non_finite_field(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def read_sidecar(data_file: Path, expected: TableSchema | None = None) -> dict[str, Any]:
    """The sidecar of ``data_file`` as a mapping, with its schema and the types of the fields
    readers use checked (``sidecar_fields.SIDECAR``), not yet the data.

    Known schemas are the recorded-dataset ones plus ``expected`` (engine recordings bring
    their own, ``qualification.engine``)."""
    side = sidecar_path(data_file)
    loaded = read_sidecar_object(data_file, side, missing_reason="every recorded table needs one")
    bad = non_finite_field(loaded)
    if bad is not None:
        raise DataIntegrityError(f"{str(side)!r}: {bad[0]}: {bad[1]!r} is not a finite number")
    schema_field = loaded.get("schema")
    if not isinstance(schema_field, dict):
        raise DataIntegrityError(f"{str(side)!r}: schema: expected {{name, version}}")
    name, version = schema_field.get("name"), schema_field.get("version")
    schemas = dict(SCHEMAS) if expected is None else {**SCHEMAS, expected.name: expected}
    known = schemas.get(name) if isinstance(name, str) else None
    if known is None:
        raise DataIntegrityError(
            f"{str(side)!r}: schema.name: unknown schema {name!r}; known: {', '.join(sorted(schemas))}"
        )
    if version != known.version:
        raise DataIntegrityError(
            f"{str(side)!r}: schema.version: {known.name} version {version!r} is not supported "
            f"(this aisim reads version {known.version})"
        )
    check_fields(repr(str(side)), loaded, SIDECAR)
    return loaded


def read_table(data_file: Path, expected: TableSchema) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Load and verify one table; see the module docstring for what is checked."""
    sidecar = read_sidecar(data_file, expected)
    where = repr(str(data_file))
    if sidecar["schema"]["name"] != expected.name:
        raise DataIntegrityError(
            f"{where}: sidecar schema {sidecar['schema']['name']!r}, expected {expected.name!r}"
        )
    if sidecar.get("data_file") != data_file.name:
        raise DataIntegrityError(
            f"{where}: sidecar describes {sidecar.get('data_file')!r}, not {data_file.name!r}"
        )
    data = read_verified_bytes(data_file, sidecar, require_size=True)
    try:
        table = read_parquet_bytes(data)  # no Arrow pool thread alive at interpreter exit
    except (pa.ArrowException, OSError) as exc:
        raise DataIntegrityError(f"{where}: not a readable parquet file: {exc}") from None
    _check_columns(where, table, expected)
    if table.num_rows != sidecar.get("row_count"):
        raise DataIntegrityError(
            f"{where}: {table.num_rows} rows, sidecar says {sidecar.get('row_count')!r}"
        )
    frame = table.to_pandas(use_threads=False)
    check_values(where, frame, expected)
    return frame, sidecar


def _check_columns(where: str, table: pa.Table, expected: TableSchema) -> None:
    names = tuple(table.schema.names)
    unknown = [name for name in names if name not in expected.column_names]
    missing = [name for name in expected.column_names if name not in names]
    if unknown or missing:
        which = f"unknown column {unknown[0]!r}" if unknown else f"missing column {missing[0]!r}"
        raise DataIntegrityError(
            f"{where}: {which}; {expected.name} v{expected.version} has exactly the columns "
            f"{', '.join(expected.column_names)}"
        )
    if names != expected.column_names:
        raise DataIntegrityError(
            f"{where}: columns {list(names)} do not match {expected.name} v{expected.version} "
            f"columns {list(expected.column_names)}"
        )
    for column in expected.columns:
        arrow_type = table.schema.field(column.name).type
        if not _type_matches(column, arrow_type):
            raise DataIntegrityError(
                f"{where}: column {column.name!r} has type {arrow_type}, expected {column.kind}"
            )


def _type_matches(column: Column, arrow_type: pa.DataType) -> bool:
    if column.kind == "int":
        return bool(pa.types.is_integer(arrow_type))
    if column.kind == "float":
        return bool(pa.types.is_floating(arrow_type))
    if column.kind == "bool":
        return bool(pa.types.is_boolean(arrow_type))
    if column.kind == "str":
        return bool(pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type))
    return bool(pa.types.is_list(arrow_type) and pa.types.is_floating(arrow_type.value_type))


def column_bound(column: Column) -> tuple[float, bool] | None:
    """The physically possible values of a numeric column: (bound, exclusive) for ``value >=
    bound`` (or ``> bound`` when exclusive), None without one. Integers: counts of requests
    and draft lengths >= 1, other counts >= 0; times in ms > 0; CPU times >= 0. The one rule
    ``check_values`` applies and published schemas state (``minimum`` / ``exclusiveMinimum``)."""
    if column.kind == "int":
        return (1 if column.unit == "requests" or column.name == "draft_length" else 0, False)
    if column.kind == "float" and column.unit == "ms":
        return (0.0, True)
    if column.kind == "float" and column.unit == "cpu-ms":
        return (0.0, False)
    return None


def check_values(
    where: str,
    frame: pd.DataFrame,
    expected: TableSchema,
    name_row: Callable[[int], str] = "row {}".format,
) -> None:
    """Physically impossible values (negative sizes, non-positive or non-finite times:
    ``column_bound``); the error names the row ``name_row(index)`` (``frame``'s index): a
    parquet table's ``row N``, 0-based as pandas numbers it, by default."""
    for column in expected.columns:
        values = frame[column.name]
        if column.optional:
            values = values.dropna()
        elif column.kind in ("int", "float") and bool(values.isna().any()):
            row = int(values[values.isna()].index[0])
            raise DataIntegrityError(
                f"{where}: {name_row(row)}: {column.name}: no value (null or NaN); every row "
                f"needs a {'number' if column.kind == 'float' else 'whole number'} there"
            )
        bound = column_bound(column)
        if column.kind == "int" and bound is not None:
            minimum = int(bound[0])
            bad = values[values < minimum]
            allowed = f"an integer >= {minimum}"
        elif column.kind == "float" and bound is not None and bound[1]:
            bad = values[~values.map(lambda x: math.isfinite(x) and x > 0)]
            allowed = "a finite number > 0 (ms)"
        elif column.kind == "float":
            floor = 0.0 if bound is not None else -math.inf
            bad = values[~values.map(lambda x, low=floor: math.isfinite(x) and x >= low)]
            allowed = "a finite number >= 0" if floor == 0.0 else "a finite number"
        else:
            continue
        if len(bad):
            row = int(bad.index[0])
            raise DataIntegrityError(
                f"{where}: {name_row(row)}: {column.name}: impossible value "
                f"{_plain_value(bad.iloc[0], column.kind)}; expected {allowed}"
            )


def _plain_value(value: Any, kind: str) -> str:
    """A cell as the user wrote it (``-4`` or ``-4.0``, not numpy's ``np.float64(-4.0)``)."""
    item = value.item() if hasattr(value, "item") else value
    if kind == "int" and isinstance(item, float) and item.is_integer():
        item = int(item)
    return repr(item)
