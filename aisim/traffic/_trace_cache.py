"""Parsed trace files by content, per process (CSV, Mooncake JSONL and agentic JSONL alike).

A sweep replays one trace for hundreds of points, and parsing it (every line validated) cost
more than a short replay. So the checked requests of a trace file are kept, keyed by what
determines them: the SHA-256 of the file's bytes and the reading options (format,
``hash_block_tokens``). A rewritten file has another digest and is read again. Each call hands
out fresh ``RequestSpec`` objects (fresh lists too): the load, a closed loop's ``wait_for`` and
the engine change a replay's requests, and none of that may reach the next replay.

Only traces of at most ``MAX_ROWS`` requests are kept (a large trace is streamed and never
held twice), at most ``MAX_FILES`` of them (the oldest goes first). Interpreted (the config
edge): the compiled core never sees the cache.

A sweep *pins* its traces (``pinned``): the driver reads each trace file once, ships the bytes
to each worker once (a pool worker's start, Ray's object store), and inside ``pinned`` a read of
that path uses those bytes, not the file system. So no point reads or hashes the file, every
point of a sweep replays the same content even if the file changes meanwhile, and a Ray node
needs no copy of the trace.
"""

from __future__ import annotations

import hashlib
import io
import itertools
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Final, TextIO

from aisim.errors import ConfigError
from aisim.replay import RequestSpec

MAX_FILES: Final = 4
MAX_ROWS: Final = 100_000
#: Largest trace kept when it is streamed (``TraceCache.stream``): a replay of a streamed trace
#: holds O(in-flight) requests, and keeping 100,000 Mooncake rows (a hash id per prompt block)
#: would hold hundreds of MB; sweeps replay small traces.
STREAM_ROWS: Final = 20_000

#: A request without its index: (request_id, prompt, output, arrival_ms, wait_for, delay_ms,
#: hash_ids, hash_block_tokens), immutable.
Snapshot = tuple[str, int, int, float, tuple[int, ...], float, tuple[int, ...], int]
CacheKey = tuple[object, ...]
#: A trace file's content as shipped to sweep workers: (SHA-256 hex digest, bytes).
Contents = tuple[str, bytes]


def read_contents(file: Path, path: str = "traffic.source") -> Contents:
    """A trace file's (digest, bytes), read once (``path``: the config path for errors)."""
    from aisim._io import MAX_TRACE_BYTES, read_input_bytes

    data = read_input_bytes(file, MAX_TRACE_BYTES, f"{path}.path: trace {str(file)!r}")
    return hashlib.sha256(data).hexdigest(), data


def _pin_key(file: Path | str) -> str:
    return os.path.abspath(os.fspath(file))


class TraceCache:
    """The checked requests of recently read trace files; ``hits``/``misses`` count lookups
    (what the tests observe)."""

    def __init__(self, max_files: int = MAX_FILES, max_rows: int = MAX_ROWS) -> None:
        self.max_files = max_files
        self.max_rows = max_rows
        self.hits = 0
        self.misses = 0
        self._entries: dict[CacheKey, list[Snapshot]] = {}
        self._pinned: dict[str, Contents] = {}

    @contextmanager
    def pinned(self, contents: Mapping[str, Contents]) -> Iterator[None]:
        """Within the block, reading a file named in ``contents`` (path -> (digest, bytes))
        uses those bytes; the previous pins come back afterwards."""
        previous = self._pinned
        self._pinned = {**previous, **{_pin_key(file): item for file, item in contents.items()}}
        try:
            yield
        finally:
            self._pinned = previous

    def is_pinned(self, file: Path) -> bool:
        return _pin_key(file) in self._pinned

    def read_bytes(self, file: Path) -> bytes:
        """The file's bytes: the pinned content, else read from disk (``OSError`` as
        ``Path.read_bytes``)."""
        pinned = self._pinned.get(_pin_key(file))
        return pinned[1] if pinned is not None else file.read_bytes()

    def open_text(self, file: Path, newline: str | None) -> TextIO:
        """The file as UTF-8 text (a leading byte-order mark dropped), pinned or on disk."""
        pinned = self._pinned.get(_pin_key(file))
        if pinned is None:
            return file.open("r", encoding="utf-8-sig", newline=newline)
        return io.TextIOWrapper(io.BytesIO(pinned[1]), encoding="utf-8-sig", newline=newline)

    def digest(self, file: Path, path: str) -> str:
        """SHA-256 hex digest of the file's content: the pinned digest, else hashed from disk."""
        pinned = self._pinned.get(_pin_key(file))
        return pinned[0] if pinned is not None else file_sha256(file, path)

    def _key(self, file: Path, path: str, options: CacheKey) -> CacheKey:
        return (self.digest(file, path), *options)

    def requests(
        self,
        file: Path,
        path: str,
        options: CacheKey,
        read: Callable[[], list[RequestSpec]],
        limit: int | None = None,
    ) -> list[RequestSpec]:
        """The requests of ``file`` read with ``options``: from the cache when its content was
        read before with the same options, else ``read()`` (which validates and may raise
        ``ConfigError``; nothing is kept then). ``path`` is the config path for errors. From
        the cache only the first ``limit`` requests are built (``traffic.max_requests``: the
        whole file was checked when it was read)."""
        key = self._key(file, path, options)
        kept = self._entries.get(key)
        if kept is not None:
            self.hits += 1
            return [_request(index, snapshot) for index, snapshot in enumerate(kept[:limit])]
        self.misses += 1
        requests = read()
        if len(requests) <= self.max_rows:
            if len(self._entries) >= self.max_files:
                self._entries.pop(next(iter(self._entries)))
            self._entries[key] = [_snapshot(request) for request in requests]
        return requests

    def stream(
        self,
        file: Path,
        path: str,
        options: CacheKey,
        read: Callable[[], Iterable[RequestSpec]],
        max_rows: int = STREAM_ROWS,
        limit: int | None = None,
        digest: str | None = None,
    ) -> Iterator[RequestSpec]:
        """``requests`` for a trace read lazily: the requests one at a time, from the cache or
        from ``read()`` as it yields them. A trace read whole is kept when it has at most
        ``max_rows`` requests (and ``max_rows <= self.max_rows``); a larger one is never held.
        From the cache at most ``limit`` requests come (as ``requests``). ``digest``: the
        file's ``digest``, when the caller has just taken it (the file is not hashed again)."""
        key = (digest, *options) if digest is not None else self._key(file, path, options)
        kept = self._entries.get(key)
        if kept is not None:
            self.hits += 1
            return (_request(index, snapshot) for index, snapshot in enumerate(kept[:limit]))
        self.misses += 1
        if limit is not None and self.is_pinned(file):
            return self._read_pinned(key, read(), min(max_rows, self.max_rows), limit)
        return self._read_through(key, read(), min(max_rows, self.max_rows))

    def _read_pinned(
        self, key: CacheKey, requests: Iterable[RequestSpec], max_rows: int, limit: int
    ) -> Iterator[RequestSpec]:
        """A pinned trace (a sweep's) read with ``max_requests``: read on to its end now and kept
        when small, so the sweep's later points hit the cache; a reader stopped at
        ``max_requests`` keeps nothing, which made every point of a sweep parse the trace again
        (2 of the bench sweep's ~13 CPU-ms per point). A trace over ``max_rows`` streams on, as
        does one whose later lines fail: past ``limit`` a streamed read would never reach them,
        so they are not an error here either (and nothing is kept)."""
        rows = iter(requests)
        held = list(itertools.islice(rows, limit))
        try:
            held.extend(itertools.islice(rows, max_rows + 1 - len(held)))
        except ConfigError:
            return iter(held[:limit])
        if len(held) > max_rows:
            return itertools.chain(held, rows)
        if len(self._entries) >= self.max_files:
            self._entries.pop(next(iter(self._entries)))
        self._entries[key] = [_snapshot(request) for request in held]
        return iter(held[:limit])

    def _read_through(
        self, key: CacheKey, requests: Iterable[RequestSpec], max_rows: int
    ) -> Iterator[RequestSpec]:
        snapshots: list[Snapshot] | None = []
        for request in requests:
            if snapshots is not None:
                snapshots.append(_snapshot(request))
                if len(snapshots) > max_rows:
                    snapshots = None
            yield request
        if snapshots is not None:
            if len(self._entries) >= self.max_files:
                self._entries.pop(next(iter(self._entries)))
            self._entries[key] = snapshots

    def clear(self) -> None:
        """Forget every parsed trace and reset the counters (pins are left as they are)."""
        self._entries.clear()
        self.hits = self.misses = 0


def _request(index: int, snapshot: Snapshot) -> RequestSpec:
    """A fresh request (fresh lists) from a kept snapshot."""
    rid, prompt, output, arrival, wait, delay, ids, block = snapshot
    return RequestSpec(index, rid, prompt, output, arrival, list(wait), delay, list(ids), block)


def _snapshot(request: RequestSpec) -> Snapshot:
    return (
        request.request_id,
        request.prompt_tokens,
        request.output_tokens,
        request.arrival_ms,
        tuple(request.wait_for),
        request.delay_ms,
        tuple(request.hash_ids),
        request.hash_block_tokens,
    )


def file_sha256(file: Path, path: str) -> str:
    """SHA-256 of the file's bytes, read in chunks (``path``: the config path for errors)."""
    digest = hashlib.sha256()
    try:
        with file.open("rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    except OSError as exc:
        raise ConfigError(f"{path}.path: cannot read {str(file)!r}: {exc}") from None
    return digest.hexdigest()


#: The process's cache, used by the traffic edge.
TRACES: Final = TraceCache()
