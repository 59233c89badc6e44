"""Streaming parquet outputs of a replay: rows arrive in chunks while the simulation runs and
go to a temp file beside the target, one row group per chunk; ``commit`` renames it into place,
``discard`` deletes it (not compiled: file I/O and pyarrow)."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from aisim.replay._outcome import FLOAT, INTEGER, REQUEST_COLUMN_KINDS, TEXT, RequestRecord
from aisim.replay._summary import request_columns


def _requests_schema() -> Any:
    import pyarrow as pa

    arrow = {TEXT: pa.string(), INTEGER: pa.int64(), FLOAT: pa.float64()}
    return pa.schema([(name, arrow[kind]) for name, kind in REQUEST_COLUMN_KINDS])


def _tokens_schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [("request_id", pa.string()), ("time_ms", pa.float64()), ("tokens", pa.int64())]
    )


class ParquetStream:
    """One parquet file written in row groups to ``.NAME.*.tmp`` beside ``target`` (opened at
    the first rows, or by ``commit`` for a file with none)."""

    def __init__(self, target: Path, schema: Any) -> None:
        self.target = target
        self.schema = schema
        self.rows = 0
        self._tmp: Path | None = None
        self._writer: Any = None

    def write(self, columns: dict[str, list[Any]]) -> None:
        import pyarrow as pa

        if self._writer is None:
            self._open()
        batch = pa.RecordBatch.from_pydict(columns, schema=self.schema)
        self._writer.write_batch(batch)
        self.rows += batch.num_rows

    def commit(self, overwrite: bool) -> Path:
        """Close and rename into place (``overwrite``: replace an existing file)."""
        if self._writer is None:
            self._open()
        self._writer.close()
        self._writer = None
        assert self._tmp is not None
        if self.target.exists() and not overwrite:
            self.discard()
            from aisim.errors import ConfigError

            raise ConfigError(
                f"{str(self.target)!r} already exists; pass --overwrite to replace it"
            )
        os.replace(self._tmp, self.target)
        self._tmp = None
        return self.target

    def discard(self) -> None:
        """Delete the temp file (after a failed run): no partial output is left."""
        if self._writer is not None:
            with contextlib.suppress(Exception):  # the file is deleted either way
                self._writer.close()
            self._writer = None
        if self._tmp is not None:
            self._tmp.unlink(missing_ok=True)
            self._tmp = None

    def _open(self) -> None:
        import pyarrow.parquet as pq

        from aisim._io import create_temp_beside, writable_folder

        writable_folder(self.target.parent)
        # Mode 0666 less the umask, as the other outputs (mkstemp would make it 0600).
        fd, tmp = create_temp_beside(self.target)
        os.close(fd)
        self._tmp = Path(tmp)
        self._writer = pq.ParquetWriter(str(self._tmp), self.schema)


class RequestsParquet(ParquetStream):
    """``requests.parquet``: one row per request, in traffic order (``sink`` takes records)."""

    def __init__(self, target: Path) -> None:
        super().__init__(target, _requests_schema())

    def sink(self, records: list[RequestRecord]) -> None:
        self.write(request_columns(records))


class TokensParquet(ParquetStream):
    """``tokens.parquet``: one row per emission event (``request_id``, ``time_ms``, ``tokens``),
    in simulation order."""

    def __init__(self, target: Path) -> None:
        super().__init__(target, _tokens_schema())

    def sink(self, request_ids: list[str], times_ms: list[float], tokens: list[int]) -> None:
        self.write({"request_id": request_ids, "time_ms": times_ms, "tokens": tokens})
