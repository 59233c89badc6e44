"""The ``traffic`` block at the edge (docs/design.md#replay: traffic): validate the source and the
load, resolve file paths, and hand the trace readers (``aisim.traffic``) typed values.

Sources (``traffic.source.type``): ``synthetic``, ``trace`` and ``agentic``; loads
(``traffic.load.type``): ``trace_timestamps``, ``poisson``, ``constant``, ``concurrency``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from aisim._fields import as_list, as_str, join_path
from aisim._io import MAX_TRACE_BYTES, check_path_text, input_file_problem
from aisim.config._edge import check_mapping_at, choice, integer, validate
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
    DISTRIBUTIONS,
    LOAD_CONCURRENCY,
    LOAD_TRACE,
    LOADS,
    LengthDistribution,
    RequestSpec,
    SyntheticLengths,
)
from aisim.traffic import (
    MAX_TOKENS,
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
    """Validate ``traffic`` and return its requests (arrivals set, dependencies as indices), or,
    with ``stream`` (the default) for a trace file or synthetic traffic (any load), a
    ``TrafficStream`` that produces them lazily (the same requests: ``stream=False`` builds
    them whole). Agentic graphs are built whole."""
    block = validate(Traffic, config, path)
    seed = block.seed
    source_path = join_path(path, "source")
    source = check_mapping_at(block.source, source_path)
    kind = choice(source.get("type"), join_path(source_path, "type"), SOURCES)
    max_requests = block.max_requests
    load_path = join_path(path, "load")
    if kind == "synthetic":
        synthetic = _synthetic_source(source, source_path)
        clock = _stream_clock(block.load, kind, seed, load_path) if stream else None
        if clock is not None:
            count = synthetic.num_requests
            if max_requests is not None and max_requests < count:
                count = max_requests
            prompt, output = synthetic.prompt, synthetic.output
            return SyntheticStream(
                count,
                lambda: SyntheticLengths(prompt, output, seed),
                source_path,
                load_path,
                clock,
            )
        requests = synthetic_requests(
            synthetic.num_requests, synthetic.prompt, synthetic.output, seed
        )
    elif kind == "trace":
        trace = _trace(source, base_dir, source_path)
        clock = _stream_clock(block.load, kind, seed, load_path) if stream else None
        if clock is not None:
            return TraceStream(*trace, source_path, max_requests, load_path, clock)
        requests = list(trace_rows(*trace, source_path, max_requests))
    else:
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
    _load(block.load, requests, kind, seed, load_path)
    check_arrivals(requests, load_path)
    return requests


def _stream_clock(value: object, source: str, seed: int, path: str) -> LoadClock | None:
    """The clock of the load of a streamed traffic, validated as ``_load`` validates it; else
    ``None`` (synthetic traffic has no timestamps: ``_load`` gives the error)."""
    block = check_mapping_at(value if value is not None else {"type": LOAD_TRACE}, path)
    kind = choice(block.get("type"), join_path(path, "type"), LOADS)
    if kind == LOAD_TRACE:
        if source == "synthetic":
            return None  # the error comes from _load
        scale = validate(TraceTimestampsLoad, block, path).time_scale
        return LoadClock(LOAD_TRACE, scale, 0.0, 0, 0.0, seed)
    if kind == LOAD_CONCURRENCY:
        concurrency = validate(ConcurrencyLoad, block, path)
        return LoadClock(
            kind,
            1.0,
            0.0,
            concurrency.users,
            concurrency.think_ms,
            seed,
            concurrency.queue == "shared",
        )
    rate = validate(RateLoad, block, path).rate_rps
    return LoadClock(kind, 1.0, rate, 0, 0.0, seed)


class _SyntheticSource:
    def __init__(
        self, num_requests: int, prompt: LengthDistribution, output: LengthDistribution
    ) -> None:
        self.num_requests = num_requests
        self.prompt = prompt
        self.output = output


def _synthetic_source(source: dict[str, Any], path: str) -> _SyntheticSource:
    block = validate(SyntheticSource, source, path)
    prompt = _distribution(block.prompt_tokens, join_path(path, "prompt_tokens"))
    output = _distribution(block.output_tokens, join_path(path, "output_tokens"))
    return _SyntheticSource(block.num_requests, prompt, output)


def _distribution(value: object, path: str) -> LengthDistribution:
    """An integer (fixed) or ``{type: fixed|uniform|normal|lognormal, ...}``."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        fixed = integer(value, path, 1, MAX_TOKENS)
        return LengthDistribution(DIST_FIXED, fixed, 0.0, 0.0, fixed, fixed)
    block = check_mapping_at(value, path)
    kind = choice(block.get("type"), join_path(path, "type"), DISTRIBUTIONS)
    if kind == DIST_FIXED:
        fixed = validate(FixedLength, block, path).value
        return LengthDistribution(DIST_FIXED, fixed, 0.0, 0.0, fixed, fixed)
    if kind == DIST_UNIFORM:
        uniform = validate(UniformLength, block, path)
        high = integer(uniform.max, join_path(path, "max"), uniform.min, MAX_TOKENS)
        return LengthDistribution(DIST_UNIFORM, 0, 0.0, 0.0, uniform.min, high)
    normal = validate(NormalLength, block, path)
    high = integer(normal.max, join_path(path, "max"), normal.min, MAX_TOKENS)
    return LengthDistribution(kind, 0, normal.mean, normal.std, normal.min, high)


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


def _trace(source: dict[str, Any], base_dir: Path | None, path: str) -> tuple[Path, str, int]:
    """``(file, format, hash_block_tokens)`` of a ``trace`` source."""
    block = validate(TraceSource, source, path)
    file = _resolve_file(block.path, base_dir, join_path(path, "path"))
    default_format = "csv" if file.suffix.lower() == ".csv" else "mooncake"
    fmt = default_format if block.format is None else block.format
    return file, fmt, block.hash_block_tokens


def _agentic(
    source: dict[str, Any], base_dir: Path | None, path: str, limit: int | None
) -> list[RequestSpec]:
    block = validate(AgenticSource, source, path)
    block_tokens = block.hash_block_tokens
    if (block.path is None) == (block.requests is None):
        raise ConfigError(f"{path}: give exactly one of path (a JSONL file) or requests (a list)")
    if block.path is None:
        # Inline requests are read by the trace-row reader, as the lines of a JSONL file are.
        items = as_list(block.requests, join_path(path, "requests"))
        rows = [(item, join_path(path, f"requests[{i}]")) for i, item in enumerate(items)]
        return graph_requests(rows, block_tokens)
    file = _resolve_file(block.path, base_dir, join_path(path, "path"))
    return agentic_file_requests(file, path, block_tokens, limit)


def _load(value: object, requests: list[RequestSpec], source: str, seed: int, path: str) -> None:
    block = check_mapping_at(value if value is not None else {"type": LOAD_TRACE}, path)
    kind = choice(block.get("type"), join_path(path, "type"), LOADS)
    has_graph = any(request.wait_for for request in requests)
    rate = 0.0
    users = 0
    think = 0.0
    if kind == LOAD_TRACE:
        scale = validate(TraceTimestampsLoad, block, path).time_scale
        if source == "synthetic":
            raise ConfigError(
                f"{join_path(path, 'type')}: synthetic traffic has no timestamps; "
                f"use one of {', '.join(LOADS[1:])}"
            )
        apply_arrivals(requests, LoadClock(LOAD_TRACE, scale, 0.0, 0, 0.0, seed))
        return
    if has_graph:
        raise ConfigError(
            f"{join_path(path, 'type')}: agentic graphs carry their own arrivals; "
            f"use {LOAD_TRACE}, got {kind!r}"
        )
    if kind == LOAD_CONCURRENCY:
        concurrency = validate(ConcurrencyLoad, block, path)
        if concurrency.queue == "shared":
            raise ConfigError(
                f"{join_path(path, 'queue')}: 'shared' slots need a streamed traffic "
                "(build_traffic(..., stream=True), what replay uses)"
            )
        users = concurrency.users
        think = concurrency.think_ms
    else:
        rate = validate(RateLoad, block, path).rate_rps
    apply_arrivals(requests, LoadClock(kind, 1.0, rate, users, think, seed))
