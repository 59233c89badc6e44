"""The ``traffic`` block at the edge (docs/design.md#replay: traffic): validate the source and the
load, resolve file paths, and hand the trace readers (``aisim.traffic``) typed values.

Sources (``traffic.source.type``): ``synthetic``, ``trace`` and ``agentic``; loads
(``traffic.load.type``): ``trace_timestamps``, ``poisson``, ``constant``, ``concurrency``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from aisim._fields import as_list, as_str, join_path
from aisim._io import MAX_TRACE_BYTES, check_path_text, input_file_problem
from aisim.config._edge import validate
from aisim.config._replay_models import (
    AgenticSource,
    ConcurrencyLoad,
    FixedLength,
    NormalLength,
    RateLoad,
    SyntheticSource,
    TraceSource,
    TraceTimestampsLoad,
    Traffic,
    UniformLength,
)
from aisim.errors import ConfigError
from aisim.replay import (
    DIST_FIXED,
    DIST_UNIFORM,
    LOAD_CONCURRENCY,
    LOAD_TRACE,
    LOADS,
    LengthDistribution,
    RequestSpec,
    SyntheticLengths,
)
from aisim.traffic import (
    TRACES,
    LoadClock,
    SyntheticStream,
    TraceStream,
    TrafficStream,
    agentic_file_requests,
    apply_arrivals,
    check_arrivals,
    graph_requests,
    synthetic_requests,
    trace_rows,
)

SOURCES: Final = ("synthetic", "trace", "agentic")


def build_traffic(
    config: object, base_dir: Path | None, path: str = "traffic", stream: bool = True
) -> list[RequestSpec] | TrafficStream:
    """Read a ``traffic`` block (a validated ``Traffic``, or a mapping validated here) and
    return its requests (arrivals set, dependencies as indices), or, with ``stream`` (the
    default) for a trace file or synthetic traffic (any load), a ``TrafficStream`` that
    produces them lazily (the same requests: ``stream=False`` builds them whole). Agentic
    graphs are built whole."""
    block = config if isinstance(config, Traffic) else validate(Traffic, config, path)
    seed = block.seed
    source_path = join_path(path, "source")
    source = block.source
    max_requests = block.max_requests
    load_path = join_path(path, "load")
    load = TraceTimestampsLoad(type=LOAD_TRACE) if block.load is None else block.load
    if isinstance(source, SyntheticSource):
        kind = "synthetic"
        prompt = _distribution(source.prompt_tokens)
        output = _distribution(source.output_tokens)
        clock = _stream_clock(load, kind, seed) if stream else None
        if clock is not None:
            count = source.num_requests
            if max_requests is not None and max_requests < count:
                count = max_requests
            return SyntheticStream(
                count,
                lambda: SyntheticLengths(prompt, output, seed),
                source_path,
                load_path,
                clock,
            )
        requests = synthetic_requests(source.num_requests, prompt, output, seed)
    elif isinstance(source, TraceSource):
        kind = "trace"
        trace = _trace(source, base_dir, source_path)
        clock = _stream_clock(load, kind, seed) if stream else None
        if clock is not None:
            return TraceStream(*trace, source_path, max_requests, load_path, clock)
        requests = list(trace_rows(*trace, source_path, max_requests))
    else:
        kind = "agentic"
        requests = _agentic(source, base_dir, source_path, max_requests)
    if max_requests is not None and len(requests) > max_requests:
        requests = requests[:max_requests]
        for request in requests:
            if any(parent >= max_requests for parent in request.wait_for):
                raise ConfigError(
                    f"{join_path(path, 'max_requests')}: truncating to {max_requests} requests "
                    f"cuts request {request.request_id!r} off a request it waits for"
                )
    if not requests:
        raise ConfigError(f"{source_path}: the traffic has no requests")
    _load(load, requests, kind, seed, load_path)
    check_arrivals(requests, load_path)
    return requests


Load = TraceTimestampsLoad | RateLoad | ConcurrencyLoad


def _stream_clock(load: Load, source: str, seed: int) -> LoadClock | None:
    """The clock of the load of a streamed traffic; ``None`` for synthetic traffic at the
    trace's timestamps (it has none: ``_load`` gives the error)."""
    if isinstance(load, TraceTimestampsLoad):
        if source == "synthetic":
            return None  # the error comes from _load
        return LoadClock(LOAD_TRACE, load.time_scale, 0.0, 0, 0.0, seed)
    if isinstance(load, ConcurrencyLoad):
        return LoadClock(
            LOAD_CONCURRENCY,
            1.0,
            0.0,
            load.users,
            load.think_ms,
            seed,
            load.queue == "shared",
        )
    return LoadClock(load.type, 1.0, load.rate_rps, 0, 0.0, seed)


def _distribution(length: int | FixedLength | UniformLength | NormalLength) -> LengthDistribution:
    """A validated length: a number of tokens (fixed) or a fixed/uniform/normal/lognormal
    block (its ``max`` checked against its ``min`` by the model)."""
    if isinstance(length, int):
        return LengthDistribution(DIST_FIXED, length, 0.0, 0.0, length, length)
    if isinstance(length, FixedLength):
        return LengthDistribution(DIST_FIXED, length.value, 0.0, 0.0, length.value, length.value)
    if isinstance(length, UniformLength):
        return LengthDistribution(DIST_UNIFORM, 0, 0.0, 0.0, length.min, length.max)
    return LengthDistribution(length.type, 0, length.mean, length.std, length.min, length.max)


def _resolve_file(value: object, base_dir: Path | None, path: str) -> Path:
    file = check_path_text(as_str(value, path), path)
    if not file.is_absolute() and base_dir is not None:
        file = base_dir / file
    if TRACES.is_pinned(file):
        return file
    problem = input_file_problem(file, MAX_TRACE_BYTES)
    if problem == "file not found":
        raise ConfigError(f"{path}: trace file not found: {str(file)!r}")
    if problem is not None:
        raise ConfigError(f"{path}: trace {str(file)!r}: {problem}")
    return file


def _trace(source: TraceSource, base_dir: Path | None, path: str) -> tuple[Path, str, int]:
    """``(file, format, hash_block_tokens)`` of a ``trace`` source."""
    file = _resolve_file(source.path, base_dir, join_path(path, "path"))
    default_format = "csv" if file.suffix.lower() == ".csv" else "mooncake"
    fmt = default_format if source.format is None else source.format
    return file, fmt, source.hash_block_tokens


def _agentic(
    source: AgenticSource, base_dir: Path | None, path: str, limit: int | None
) -> list[RequestSpec]:
    block_tokens = source.hash_block_tokens
    if (source.path is None) == (source.requests is None):
        raise ConfigError(f"{path}: give exactly one of path (a JSONL file) or requests (a list)")
    if source.path is None:
        # Inline requests are read by the trace-row reader, as the lines of a JSONL file are.
        items = as_list(source.requests, join_path(path, "requests"))
        rows = [(item, join_path(path, f"requests[{i}]")) for i, item in enumerate(items)]
        return graph_requests(rows, block_tokens)
    file = _resolve_file(source.path, base_dir, join_path(path, "path"))
    return agentic_file_requests(file, path, block_tokens, limit)


def _load(load: Load, requests: list[RequestSpec], source: str, seed: int, path: str) -> None:
    has_graph = any(request.wait_for for request in requests)
    rate = 0.0
    users = 0
    think = 0.0
    if isinstance(load, TraceTimestampsLoad):
        if source == "synthetic":
            raise ConfigError(
                f"{join_path(path, 'type')}: synthetic traffic has no timestamps; "
                f"use one of {', '.join(LOADS[1:])}"
            )
        apply_arrivals(requests, LoadClock(LOAD_TRACE, load.time_scale, 0.0, 0, 0.0, seed))
        return
    if has_graph:
        raise ConfigError(
            f"{join_path(path, 'type')}: agentic graphs carry their own arrivals; "
            f"use {LOAD_TRACE}, got {load.type!r}"
        )
    if isinstance(load, ConcurrencyLoad):
        if load.queue == "shared":
            raise ConfigError(
                f"{join_path(path, 'queue')}: 'shared' slots need a streamed traffic "
                "(build_traffic(..., stream=True), what replay uses)"
            )
        users = load.users
        think = load.think_ms
    else:
        rate = load.rate_rps
    apply_arrivals(requests, LoadClock(load.type, 1.0, rate, users, think, seed))
