"""Replay traffic: read trace files and inline request rows, check every field of every row, and
produce the core's ``RequestSpec`` requests, whole or as a stream (docs/design.md#replay: traffic).
The ``traffic`` block itself is validated by the config edge (``aisim/config/_traffic.py``),
which hands the readers here typed values (a file, a format, a ``LoadClock``).

Sources (``traffic.source.type``): ``synthetic`` (drawn lengths), ``trace`` (Mooncake JSONL with
``timestamp`` ms, ``input_length``, ``output_length``, optional ``hash_ids``; or CSV with
``arrival_s,prompt_tokens,output_tokens``) and ``agentic`` (request graphs: Mooncake fields plus
``request_id``, ``wait_for``, ``delay_ms``; from a JSONL ``path`` or inline ``requests``).
Loads (``traffic.load.type``): ``trace_timestamps``, ``poisson``, ``constant``, ``concurrency``.
"""

from __future__ import annotations

import csv
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Iterator
from contextlib import closing
from pathlib import Path
from typing import Annotated, Final

import msgspec

from aisim._fields import (
    as_float,
    as_int,
    as_list,
    as_mapping,
    describe,
    join_path,
    reject_unknown,
)
from aisim._io import parse_float_text, parse_int_text, parse_json_text
from aisim.errors import ConfigError
from aisim.replay import (
    LOAD_CONCURRENCY,
    LOAD_CONSTANT,
    LOAD_POISSON,
    LOAD_TRACE,
    ArrivalClock,
    LengthDistribution,
    RequestSpec,
    SyntheticLengths,
    apply_load,
    synthetic_lengths,
)
from aisim.traffic._limits import MAX_REQUESTS, MAX_TIME_MS, MAX_TOKENS
from aisim.traffic._trace_cache import TRACES

TRACE_FORMATS: Final = ("mooncake", "csv")
ROW_KEYS: Final = (
    "timestamp",
    "input_length",
    "output_length",
    "hash_ids",
    "request_id",
    "wait_for",
    "delay_ms",
)
CSV_COLUMNS: Final = ("arrival_s", "prompt_tokens", "output_tokens")


class TrafficStream(ABC):
    """Traffic produced lazily, one checked request at a time, in traffic order with arrivals
    that never decrease and no dependencies but a ``concurrency`` load's closed loops:
    ``requests()`` starts a fresh pass (the first ``max_requests`` requests, arrivals bounded
    by ``MAX_TIME_MS``). ``build_plan`` passes
    over it once to check every request against the workers and to learn its size, then the
    simulation passes over it again, so the traffic is never held whole."""

    def __init__(
        self, source_path: str, max_requests: int | None, load_path: str, clock: LoadClock
    ) -> None:
        self.source_path = source_path
        self.max_requests = max_requests
        self.load_path = load_path
        self.clock = clock
        #: The SHA-256 of the content the last pass started on ("" without a file).
        self.digest = ""

    def requests(self, expect_digest: str = "") -> Iterator[RequestSpec]:
        """A fresh pass; ``expect_digest``: the content an earlier pass saw, and a file whose
        content changed since is an error (the replay's second pass)."""
        limit = self.max_requests if self.max_requests is not None else MAX_REQUESTS
        clock = self.clock.start()
        for spec in self._specs(expect_digest):
            if spec.index >= limit:
                break
            earliest_ms = clock.place(spec)
            if not earliest_ms <= MAX_TIME_MS:
                raise ConfigError(late_arrival(self.load_path, spec, earliest_ms))
            yield spec

    @property
    def content_fixed(self) -> bool:
        """Whether every pass reads the same content (a trace pinned by a sweep,
        ``TRACES.pinned``): a later pass cannot find it changed."""
        return False

    @property
    def closed_loop_users(self) -> int:
        """Users of a per-user ``concurrency`` load (``RequestStream.closed_loop_users``), else
        0."""
        return 0 if self.clock.shared_slots else self.clock.users

    @property
    def closed_loop_slots(self) -> int:
        """Slots of a ``concurrency`` load with ``queue: shared`` (``RequestStream``), else 0."""
        return self.clock.users if self.clock.shared_slots else 0

    def changed_error(self, why: str) -> str:
        return f"{self.source_path}: the traffic changed while it was replayed ({why})"

    @abstractmethod
    def _specs(self, expect_digest: str) -> Iterator[RequestSpec]:
        """The requests in traffic order, their arrivals not set yet."""


class LoadClock:
    """The arrivals of a streamed traffic, set in traffic order exactly as over a list built
    whole: its trace timestamps times ``time_scale`` (``trace_timestamps``), an open-loop
    load's (``poisson``, ``constant``: the core's ``ArrivalClock``, as ``apply_load`` draws
    them), or ``users`` closed loops (``concurrency``: request i >= users waits for request
    i - users, then ``think_ms``)."""

    def __init__(
        self,
        load: str,
        time_scale: float,
        rate_rps: float,
        users: int,
        think_ms: float,
        seed: int,
        shared_slots: bool = False,
    ) -> None:
        self.load = load
        self.time_scale = time_scale
        self.rate_rps = rate_rps
        self.users = users
        self.think_ms = think_ms
        self.seed = seed
        #: ``queue: shared``: the simulation releases the requests into ``users`` slots (none
        #: waits for a particular request; every arrival is set when a slot frees).
        self.shared_slots = shared_slots
        self._clock: ArrivalClock | None = None
        # Closed loops: each user's earliest next arrival (the sum of the think times before
        # it, added as check_arrivals adds them).
        self._earliest_ms: list[float] = []
        self._position = 0

    def start(self) -> LoadClock:
        """A fresh clock for one pass."""
        clock = LoadClock(
            self.load,
            self.time_scale,
            self.rate_rps,
            self.users,
            self.think_ms,
            self.seed,
            self.shared_slots,
        )
        if self.load in (LOAD_POISSON, LOAD_CONSTANT):
            clock._clock = ArrivalClock(self.load, self.rate_rps, self.seed)
        return clock

    def place(self, spec: RequestSpec) -> float:
        """Set ``spec``'s arrival (and a closed loop's dependency); its earliest arrival."""
        if self._clock is not None:
            spec.arrival_ms = self._clock.next_arrival()
            return spec.arrival_ms
        if self.load != LOAD_CONCURRENCY:
            spec.arrival_ms = spec.arrival_ms * self.time_scale
            return spec.arrival_ms
        position = self._position
        self._position += 1
        spec.arrival_ms = 0.0
        if self.shared_slots:
            return 0.0  # the simulation sets it when a slot frees
        if position < self.users:
            self._earliest_ms.append(0.0)
            return 0.0
        spec.wait_for = [position - self.users]
        spec.delay_ms = self.think_ms
        user = position % self.users
        self._earliest_ms[user] = self._earliest_ms[user] + self.think_ms
        return self._earliest_ms[user]


class TraceStream(TrafficStream):
    """A trace file (CSV or Mooncake JSONL) read lazily: every pass reads and checks it afresh,
    so neither its text nor its requests are ever held whole (small traces come from the trace
    cache). Every pass checks every line in full (a plainly valid Mooncake line is checked in C
    by ``_plain_row``), so a file that changed meanwhile gives the same errors as a first
    reading of it."""

    def __init__(
        self,
        file: Path,
        fmt: str,
        block_tokens: int,
        source_path: str,
        max_requests: int | None,
        load_path: str,
        clock: LoadClock,
    ) -> None:
        super().__init__(source_path, max_requests, load_path, clock)
        self.file = file
        self.fmt = fmt
        self.block_tokens = block_tokens

    def changed_error(self, why: str) -> str:
        return f"{self.source_path}.path: {self.file.name!r} changed while it was replayed ({why})"

    @property
    def content_fixed(self) -> bool:
        return TRACES.is_pinned(self.file)

    def _specs(self, expect_digest: str) -> Iterator[RequestSpec]:
        digest = TRACES.digest(self.file, self.source_path)
        if expect_digest and digest != expect_digest:
            raise ConfigError(self.changed_error("its content differs from the first reading"))
        self.digest = digest
        return trace_rows(
            self.file,
            self.fmt,
            self.block_tokens,
            self.source_path,
            limit=self.max_requests,
            digest=digest,
        )


class SyntheticStream(TrafficStream):
    """Synthetic traffic, drawn as it is replayed: each pass draws the
    lengths (and arrivals) afresh from the seed, the same numbers in the same order as the
    traffic built whole."""

    def __init__(
        self,
        count: int,
        lengths: Callable[[], SyntheticLengths],
        source_path: str,
        load_path: str,
        clock: LoadClock,
    ) -> None:
        super().__init__(source_path, count, load_path, clock)
        self.count = count
        self.lengths = lengths

    def _specs(self, expect_digest: str) -> Iterator[RequestSpec]:
        lengths = self.lengths()
        for index in range(self.count):
            prompt_tokens, output_tokens = lengths.next_pair()
            yield RequestSpec(index, str(index), prompt_tokens, output_tokens, 0.0, [], 0.0, [], 0)


def synthetic_requests(
    count: int, prompt: LengthDistribution, output: LengthDistribution, seed: int
) -> list[RequestSpec]:
    """``count`` synthetic requests, their lengths drawn from ``seed`` (arrivals not set)."""
    pairs = synthetic_lengths(count, prompt, output, seed)
    return [
        RequestSpec(index, str(index), prompt_tokens, output_tokens, 0.0, [], 0.0, [], 0)
        for index, (prompt_tokens, output_tokens) in enumerate(pairs)
    ]


def trace_rows(
    file: Path,
    fmt: str,
    block_tokens: int,
    path: str,
    limit: int | None = None,
    digest: str | None = None,
) -> Iterator[RequestSpec]:
    """The trace's requests in file order, each checked as its line is read (or from the trace
    cache, for a small trace read before: then only the first ``limit``). ``digest``: the
    file's, when the caller has just taken it."""
    if fmt == "csv":

        def read_csv() -> Iterator[RequestSpec]:
            return _read_csv(file, path)

        return TRACES.stream(file, path, ("csv",), read_csv, limit=limit, digest=digest)

    def read_mooncake() -> Iterator[RequestSpec]:
        index = 0
        with closing(_text_lines(file, path, None)) as lines:
            for number, line in enumerate(lines, start=1):
                if not line.strip():
                    continue
                spec = _plain_row(index, line, block_tokens)
                if spec is None:
                    where = f"{file.name}:{number}"
                    row = parse_json_text(line, where)
                    spec = _row_request(index, row, where, block_tokens, False)
                yield spec
                index += 1

    return TRACES.stream(
        file, path, ("mooncake", block_tokens), read_mooncake, limit=limit, digest=digest
    )


class _MooncakeRow(msgspec.Struct, forbid_unknown_fields=True):
    """A Mooncake row as ``_plain_row`` takes it: exact JSON types, ranges checked in C."""

    input_length: Annotated[int, msgspec.Meta(ge=1, le=MAX_TOKENS)]
    output_length: Annotated[int, msgspec.Meta(ge=1, le=MAX_TOKENS)]
    timestamp: int | float | msgspec.UnsetType = msgspec.UNSET
    hash_ids: list[Annotated[int, msgspec.Meta(ge=0, lt=1 << 62)]] | None | msgspec.UnsetType = (
        msgspec.UNSET
    )


_PLAIN_ROW: Final = msgspec.json.Decoder(_MooncakeRow)


def _plain_row(index: int, line: str, block_tokens: int) -> RequestSpec | None:
    """The request ``_row_request`` builds from a Mooncake line, for a line that is plainly
    valid (exact JSON types, in range, no duplicate key), decoded and checked in C by msgspec;
    else ``None``, and the caller runs the full checks, which give the line's error (or accept
    what this does not take as is, such as ``2.0`` for an integer). Every value taken here is
    a number or a list of numbers, so the line's only strings are its keys: as many quote
    characters as twice the keys decoded means no key was repeated (msgspec keeps the last)."""
    try:
        row = _PLAIN_ROW.decode(line)
    except msgspec.MsgspecError:
        return None
    stamp = row.timestamp
    hash_ids = row.hash_ids
    keys = 2 + (stamp is not msgspec.UNSET) + (hash_ids is not msgspec.UNSET)
    if line.count('"') != 2 * keys:
        return None
    if type(stamp) is int:
        if not 0 <= stamp <= MAX_TIME_MS:  # before float(), which overflows on 10**400
            return None
        timestamp = float(stamp)
    elif type(stamp) is float:
        if not 0.0 <= stamp <= MAX_TIME_MS:
            return None
        timestamp = stamp
    else:
        timestamp = 0.0
    if hash_ids is None or hash_ids is msgspec.UNSET:
        hash_ids = []
    prompt = row.input_length
    if len(hash_ids) > -(-prompt // block_tokens):
        return None
    return RequestSpec(
        index, str(index), prompt, row.output_length, timestamp, [], 0.0, hash_ids, block_tokens
    )


def agentic_file_requests(
    file: Path, path: str, block_tokens: int, limit: int | None
) -> list[RequestSpec]:
    """An agentic JSONL file's request graph (from the trace cache when read before)."""
    return TRACES.requests(
        file,
        path,
        ("agentic", block_tokens),
        lambda: graph_requests(list(_read_jsonl(file, path)), block_tokens),
        limit,
    )


def graph_requests(rows: list[tuple[object, str]], block_tokens: int) -> list[RequestSpec]:
    """Agentic requests from ``(row, where)`` pairs, dependencies linked and checked."""
    requests = [
        _row_request(i, row, where, block_tokens, True) for i, (row, where) in enumerate(rows)
    ]
    _link_graph(requests, [where for _, where in rows], rows)
    return requests


def _read_text(file: Path, path: str) -> str:
    """The whole file as UTF-8 text (a leading byte-order mark is dropped); unreadable files
    and bytes that are not UTF-8 are ``ConfigError`` (the latter naming the line)."""
    try:
        data = TRACES.read_bytes(file)
    except OSError as exc:
        raise ConfigError(f"{path}.path: cannot read {str(file)!r}: {exc}") from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{file.name}:{line}: not UTF-8 text (byte 0x{data[exc.start]:02x} at offset "
            f"{exc.start})"
        ) from None


def _text_lines(file: Path, path: str, newline: str | None) -> Generator[str, None, None]:
    """The file's lines as UTF-8 text, read incrementally (a trace is never held whole; a
    leading byte-order mark is dropped). Errors as ``_read_text``: bytes that are not UTF-8
    are located by reading the file again, on that error path only."""
    try:
        handle = TRACES.open_text(file, newline)
    except OSError as exc:
        raise ConfigError(f"{path}.path: cannot read {str(file)!r}: {exc}") from None
    with handle:
        try:
            yield from handle
        except UnicodeDecodeError:
            _read_text(file, path)
            raise
        except OSError as exc:
            raise ConfigError(f"{path}.path: cannot read {str(file)!r}: {exc}") from None


def _read_jsonl(file: Path, path: str) -> Iterator[tuple[object, str]]:
    """``(row, "FILE:LINE")`` per non-blank line, parsed as the file is read."""
    with closing(_text_lines(file, path, None)) as lines:
        for number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            where = f"{file.name}:{number}"
            yield parse_json_text(line, where), where


def _read_csv(file: Path, path: str) -> Iterator[RequestSpec]:
    for index, (arrival_ms, prompt, output) in enumerate(_parse_csv(file, path)):
        yield RequestSpec(index, str(index), prompt, output, arrival_ms, [], 0.0, [], 0)


def _parse_csv(file: Path, path: str) -> Iterator[tuple[float, int, int]]:
    """``(arrival_ms, prompt, output)`` per data row, checked as the file is read. The file is
    closed as soon as a row's error leaves this reader (not when a garbage collection reaches
    the abandoned generator, which the cyclic GC may do after the file object's own finalizer
    has warned that it was left open)."""
    with closing(_text_lines(file, path, "")) as lines:
        reader = csv.reader(lines)
        try:
            header = next(reader, None)
            if header is None or tuple(column.strip() for column in header) != CSV_COLUMNS:
                got = "an empty file" if header is None else describe(header)
                raise ConfigError(
                    f"{file.name}:1: expected the header {','.join(CSV_COLUMNS)}, got {got}"
                )
            for row in reader:
                if not row:
                    continue
                where = f"{file.name}:{reader.line_num}"
                if len(row) != 3:
                    raise ConfigError(f"{where}: expected 3 columns, got {len(row)}")
                arrival_path = join_path(where, "arrival_s")
                arrival_s = parse_float_text(row[0], arrival_path)
                arrival_ms = as_float(arrival_s, arrival_path, 0.0, MAX_TIME_MS / 1000.0) * 1000.0
                prompt_path = join_path(where, "prompt_tokens")
                prompt = as_int(parse_int_text(row[1], prompt_path), prompt_path, 1, MAX_TOKENS)
                output_path = join_path(where, "output_tokens")
                output = as_int(parse_int_text(row[2], output_path), output_path, 1, MAX_TOKENS)
                yield arrival_ms, prompt, output
        except csv.Error as exc:
            raise ConfigError(f"{file.name}:{reader.line_num}: not valid CSV: {exc}") from None


def _row_request(
    index: int, row: object, where: str, block_tokens: int, graph: bool
) -> RequestSpec:
    record = as_mapping(row, where)
    reject_unknown(record, ROW_KEYS if graph else ROW_KEYS[:4], where)
    prompt = as_int(record.get("input_length"), join_path(where, "input_length"), 1, MAX_TOKENS)
    output = as_int(record.get("output_length"), join_path(where, "output_length"), 1, MAX_TOKENS)
    timestamp = as_float(
        record.get("timestamp", 0), join_path(where, "timestamp"), 0.0, MAX_TIME_MS
    )
    delay = as_float(record.get("delay_ms", 0), join_path(where, "delay_ms"), 0.0, MAX_TIME_MS)
    hash_ids = _hash_ids(record.get("hash_ids"), join_path(where, "hash_ids"))
    blocks = -(-prompt // block_tokens)
    if len(hash_ids) > blocks:
        raise ConfigError(
            f"{join_path(where, 'hash_ids')}: {len(hash_ids)} block hashes but input_length "
            f"{prompt} fills only {blocks} blocks of hash_block_tokens {block_tokens}"
        )
    request_id = str(index)
    if record.get("request_id") is not None:
        raw_id = record["request_id"]
        if isinstance(raw_id, bool) or not isinstance(raw_id, (str, int)):
            raise ConfigError(
                f"{join_path(where, 'request_id')}: expected a string or integer, "
                f"got {describe(raw_id)}"
            )
        request_id = str(raw_id)
    return RequestSpec(
        index, request_id, prompt, output, timestamp, [], delay, hash_ids, block_tokens
    )


def _hash_ids(value: object, path: str) -> list[int]:
    if value is None:
        return []
    items = as_list(value, path)
    # The common case checked in C (a Mooncake row carries one id per prompt block).
    if not items or (set(map(type, items)) == {int} and min(items) >= 0 and max(items) < 1 << 62):
        return items
    for position, item in enumerate(items):
        as_int(item, f"{path}[{position}]", 0, (1 << 62) - 1)
    return [int(item) for item in items]


def _link_graph(
    requests: list[RequestSpec], wheres: list[str], rows: list[tuple[object, str]]
) -> None:
    """Turn ``wait_for`` ids into indices; unknown ids and cycles are errors. Roots arrive at
    ``timestamp x time_scale + delay_ms`` (set by ``_load``); the others ``delay_ms`` after
    their last dependency completes."""
    by_id: dict[str, int] = {}
    for request, where in zip(requests, wheres, strict=True):
        if request.request_id in by_id:
            raise ConfigError(
                f"{join_path(where, 'request_id')}: duplicate id {request.request_id!r}"
            )
        by_id[request.request_id] = request.index
    for request, (row, where) in zip(requests, rows, strict=True):
        raw = as_mapping(row, where).get("wait_for")
        if raw is None:
            continue
        parents: list[int] = []
        for position, item in enumerate(as_list(raw, join_path(where, "wait_for"))):
            key = str(item) if isinstance(item, (str, int)) and not isinstance(item, bool) else None
            if key is None or key not in by_id:
                raise ConfigError(
                    f"{join_path(where, 'wait_for')}[{position}]: unknown request_id {describe(item)}"
                )
            if by_id[key] not in parents:
                parents.append(by_id[key])
        request.wait_for = parents
    _check_acyclic(requests, wheres)


def _check_acyclic(requests: list[RequestSpec], wheres: list[str]) -> None:
    remaining = [len(request.wait_for) for request in requests]
    children: list[list[int]] = [[] for _ in requests]
    for request in requests:
        for parent in request.wait_for:
            children[parent].append(request.index)
    ready = [request.index for request in requests if remaining[request.index] == 0]
    seen = 0
    while ready:
        node = ready.pop()
        seen += 1
        for child in children[node]:
            remaining[child] -= 1
            if remaining[child] == 0:
                ready.append(child)
    if seen != len(requests):
        stuck = next(i for i, count in enumerate(remaining) if count > 0)
        raise ConfigError(
            f"{join_path(wheres[stuck], 'wait_for')}: request {requests[stuck].request_id!r} is "
            "part of a dependency cycle"
        )


def apply_arrivals(requests: list[RequestSpec], clock: LoadClock) -> None:
    """Set every request's arrival as ``clock``'s load places it, on a list built whole: trace
    timestamps times ``time_scale`` (plus a root's ``delay_ms``), else the core's
    ``apply_load`` (poisson, constant, concurrency)."""
    if clock.load == LOAD_TRACE:
        for request in requests:
            # time_scale stretches timestamps only; delay_ms stays a duration (as for children).
            delay = request.delay_ms if not request.wait_for else 0.0
            request.arrival_ms = request.arrival_ms * clock.time_scale + delay
        return
    apply_load(requests, clock.load, clock.rate_rps, clock.users, clock.think_ms, clock.seed)


def late_arrival(path: str, request: RequestSpec, arrival_ms: float | None = None) -> str:
    at = request.arrival_ms if arrival_ms is None else arrival_ms
    return (
        f"{path}: request {request.request_id!r} would arrive at "
        f"{at:.6g} ms or later, after the limit of {MAX_TIME_MS:.0f} ms "
        "(2**32 ms, about 49.7 days); shorten the trace, its time_scale or its delays, "
        "or raise the rate"
    )


def check_arrivals(requests: list[RequestSpec], path: str) -> None:
    """Every arrival the load produced (scaled timestamps, Poisson or constant gaps), and every
    agentic child's earliest arrival (the sum of ``delay_ms`` along its longest chain, before
    any service time), is within ``MAX_TIME_MS``: later ones would leave float64 too coarse to
    time the request."""
    # A child's own timestamp is not its arrival: it arrives delay_ms after its parents finish.
    earliest = [0.0 if request.wait_for else request.arrival_ms for request in requests]
    children: list[list[int]] = [[] for _ in requests]
    waiting = [len(request.wait_for) for request in requests]
    for request in requests:
        for parent in request.wait_for:
            children[parent].append(request.index)
    ready = [request.index for request in requests if not request.wait_for]
    while ready:
        node = ready.pop()
        if not earliest[node] <= MAX_TIME_MS:
            raise ConfigError(late_arrival(path, requests[node], earliest[node]))
        for child in children[node]:
            earliest[child] = max(earliest[child], earliest[node] + requests[child].delay_ms)
            waiting[child] -= 1
            if waiting[child] == 0:
                ready.append(child)
