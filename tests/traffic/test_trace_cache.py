"""The per-process trace cache (aisim/traffic/_trace_cache.py): CSV, Mooncake JSONL and agentic
JSONL files are parsed once per content and reading options, and no replay's changes to its
requests (load, closed-loop dependencies) reach the next one."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aisim import ConfigError
from aisim.config import run_replay
from aisim.replay._plan import RequestSpec
from aisim.traffic._trace_cache import TRACES, TraceCache

ENGINE: dict[str, Any] = {
    "backend": "vllm",
    "workers": {
        "aggregated": {
            "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": 4096}},
            "timing": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0},
        }
    },
}
MOONCAKE = [
    {"timestamp": 0, "input_length": 40, "output_length": 3, "hash_ids": [1, 2, 3]},
    {"timestamp": 500, "input_length": 40, "output_length": 4, "hash_ids": [1, 2]},
    {"timestamp": 900, "input_length": 20, "output_length": 2},
]
AGENTIC = [
    {"request_id": "a", "timestamp": 0, "input_length": 30, "output_length": 3},
    {"request_id": "b", "input_length": 30, "output_length": 2, "wait_for": ["a"], "delay_ms": 7},
    {"request_id": "c", "timestamp": 100, "input_length": 10, "output_length": 2},
]


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    TRACES.clear()
    yield
    TRACES.clear()


def _jsonl(file: Path, rows: list[dict[str, Any]]) -> Path:
    file.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return file


def _files(tmp_path: Path) -> dict[str, dict[str, Any]]:
    csv = tmp_path / "t.csv"
    csv.write_text("arrival_s,prompt_tokens,output_tokens\n0,10,3\n1,20,4\n", encoding="utf-8")
    return {
        "csv": {"type": "trace", "path": str(csv)},
        "mooncake": {"type": "trace", "path": str(_jsonl(tmp_path / "m.jsonl", MOONCAKE))},
        "agentic": {"type": "agentic", "path": str(_jsonl(tmp_path / "g.jsonl", AGENTIC))},
    }


def _replay(source: dict[str, Any], load: dict[str, Any] | None = None) -> dict[str, list[Any]]:
    traffic: dict[str, Any] = {"source": source}
    if load is not None:
        traffic["load"] = load
    return run_replay({"traffic": traffic, "engine": ENGINE}).columns


def _lookups(kind: str, load: dict[str, Any] | None = None) -> int:
    """Cache lookups of one replay: a trace file is streamed, read once before the first event
    and again while it runs (docs/replay.md "Streaming and memory"); an agentic graph is read
    once."""
    streamed = kind != "agentic"
    return 2 if streamed else 1


@pytest.mark.parametrize("kind", ["csv", "mooncake", "agentic"])
def test_a_trace_is_parsed_once_and_replays_the_same(kind: str, tmp_path: Path) -> None:
    source = _files(tmp_path)[kind]
    reads = _lookups(kind)
    first = _replay(source)
    assert (TRACES.misses, TRACES.hits) == (1, reads - 1)
    second = _replay(source)
    assert (TRACES.misses, TRACES.hits) == (1, 2 * reads - 1)
    assert second == first


@pytest.mark.parametrize(
    ("kind", "load"),
    [
        ("csv", {"type": "constant", "rate_rps": 4}),
        ("csv", {"type": "concurrency", "users": 1}),
        ("mooncake", {"type": "trace_timestamps", "time_scale": 3}),
        ("mooncake", {"type": "concurrency", "users": 1, "think_ms": 5}),
        ("agentic", {"type": "trace_timestamps", "time_scale": 10}),
    ],
)
def test_a_replay_never_leaks_into_the_next(
    kind: str, load: dict[str, Any], tmp_path: Path
) -> None:
    """A paced or closed-loop replay changes its requests' arrivals and dependencies; the
    replay after it, from the cache, equals one from a freshly parsed file."""
    source = _files(tmp_path)[kind]
    fresh = _replay(source)
    changed = _replay(source, load)
    assert changed["arrival_ms"] != fresh["arrival_ms"] or changed["ttft_ms"] != fresh["ttft_ms"]
    assert _replay(source) == fresh
    assert TRACES.misses == 1
    assert TRACES.hits == 2 * _lookups(kind) - 1 + _lookups(kind, load)


def test_a_rewritten_file_is_read_again(tmp_path: Path) -> None:
    source = _files(tmp_path)["mooncake"]
    _replay(source)
    _jsonl(Path(source["path"]), [{**MOONCAKE[0], "output_length": 9}])
    columns = _replay(source)
    assert columns["output_tokens"] == [9]
    assert TRACES.misses == 2 and TRACES.hits == 2  # each replay: a parse, then the cache


def test_reading_options_are_part_of_the_key(tmp_path: Path) -> None:
    """Three block hashes fit 40 prompt tokens in blocks of 16, not in blocks of 32: a cached
    read with 16 must not let the 32-token read skip that check."""
    source = _files(tmp_path)["mooncake"]
    _replay(source)
    with pytest.raises(ConfigError, match=r"m\.jsonl:1\.hash_ids: 3 block hashes"):
        _replay({**source, "hash_block_tokens": 32})
    assert TRACES.misses == 2 and TRACES.hits == 1  # the hit: the first replay's second read


def test_a_file_that_fails_is_not_kept(tmp_path: Path) -> None:
    bad = _jsonl(tmp_path / "bad.jsonl", [{"timestamp": 0, "input_length": 0, "output_length": 1}])
    for _ in range(2):
        with pytest.raises(ConfigError, match=r"bad\.jsonl:1\.input_length"):
            _replay({"type": "trace", "path": str(bad)})
    assert TRACES.misses == 2 and TRACES.hits == 0


def _spec(index: int) -> RequestSpec:
    return RequestSpec(index, str(index), 10, 2, float(index), [], 0.0, [index], 16)


def test_large_traces_are_not_kept_and_the_oldest_file_goes_first(tmp_path: Path) -> None:
    cache = TraceCache(max_files=2, max_rows=2)
    files = []
    for name in ("a", "b", "c", "big"):
        files.append(tmp_path / name)
        files[-1].write_text(name, encoding="utf-8")
    a, b, c, big = files
    cache.requests(big, "p", (), lambda: [_spec(0), _spec(1), _spec(2)])
    cache.requests(big, "p", (), lambda: [_spec(0), _spec(1), _spec(2)])
    assert (cache.misses, cache.hits) == (2, 0)
    for file in (a, b, c):
        cache.requests(file, "p", (), lambda: [_spec(0)])
    cache.requests(c, "p", (), lambda: [_spec(0)])
    cache.requests(b, "p", (), lambda: [_spec(0)])
    assert cache.hits == 2
    cache.requests(a, "p", (), lambda: [_spec(0)])
    assert cache.misses == 6


def test_handed_out_requests_are_fresh_objects(tmp_path: Path) -> None:
    cache = TraceCache()
    file = tmp_path / "f"
    file.write_text("x", encoding="utf-8")
    first = cache.requests(file, "p", (), lambda: [_spec(0)])
    first[0].hash_ids.append(99)
    first[0].wait_for.append(5)
    first[0].arrival_ms = 123.0
    (again,) = cache.requests(file, "p", (), lambda: [_spec(0)])
    assert (again.hash_ids, again.wait_for, again.arrival_ms) == ([0], [], 0.0)


def test_a_streamed_trace_is_kept_only_when_small_and_read_to_the_end(tmp_path: Path) -> None:
    cache = TraceCache()
    small, big = tmp_path / "small", tmp_path / "big"
    small.write_text("small", encoding="utf-8")
    big.write_text("big", encoding="utf-8")
    three = [_spec(0), _spec(1), _spec(2)]
    assert [r.index for r in cache.stream(big, "p", (), lambda: iter(three), max_rows=2)] == [
        0,
        1,
        2,
    ]
    list(cache.stream(big, "p", (), lambda: iter(three), max_rows=2))
    assert (cache.misses, cache.hits) == (2, 0)  # 3 rows > 2: never kept
    partial = cache.stream(small, "p", (), lambda: iter(three[:2]), max_rows=2)
    next(partial)
    partial.close()  # a reader stopped early (max_requests) keeps nothing
    read = list(cache.stream(small, "p", (), lambda: iter(three[:2]), max_rows=2))
    assert cache.misses == 4
    again = list(cache.stream(small, "p", (), lambda: iter([]), max_rows=2))
    assert cache.hits == 1
    assert [(r.index, r.hash_ids) for r in again] == [(r.index, r.hash_ids) for r in read]
    assert again[0] is not read[0] and again[0].hash_ids is not read[0].hash_ids


def test_a_pinned_file_is_read_from_its_bytes_only_inside_the_block(tmp_path: Path) -> None:
    from aisim.traffic._trace_cache import read_contents

    real = _jsonl(tmp_path / "real.jsonl", MOONCAKE)
    absent = tmp_path / "elsewhere" / "m.jsonl"
    source = {"type": "trace", "path": str(absent)}
    with TRACES.pinned({str(absent): read_contents(real)}):
        pinned = _replay(source)
    assert pinned == _replay({"type": "trace", "path": str(real)})
    assert TRACES.misses == 1  # the same content: parsed once, whichever path it came under
    with pytest.raises(ConfigError, match="trace file not found"):
        _replay(source)


@pytest.mark.parametrize("load", [None, {"type": "constant", "rate_rps": 4}])
def test_max_requests_from_the_cache_equals_a_fresh_read(
    tmp_path: Path, load: dict[str, Any] | None
) -> None:
    source = _files(tmp_path)["mooncake"]
    traffic: dict[str, Any] = {"source": source, "max_requests": 2}
    if load is not None:
        traffic["load"] = load
    _replay(source)
    limited = run_replay({"traffic": traffic, "engine": ENGINE})
    assert TRACES.misses == 1
    TRACES.clear()
    fresh = run_replay({"traffic": traffic, "engine": ENGINE})
    assert limited.columns == fresh.columns
    assert limited.columns["prompt_tokens"] == [40, 40]


@pytest.mark.parametrize("load", [None, {"type": "poisson", "rate_rps": 4}])
def test_a_pinned_trace_with_max_requests_is_parsed_once_for_every_replay(
    tmp_path: Path, load: dict[str, Any] | None
) -> None:
    """A sweep pins its trace and replays its first ``max_requests`` requests at every point:
    the first replay reads the trace to its end and keeps it, the later ones hit the cache, and
    all equal a fresh streamed read that stops at ``max_requests``."""
    from aisim.traffic._trace_cache import read_contents

    source = _files(tmp_path)["mooncake"]
    traffic: dict[str, Any] = {"source": source, "max_requests": 2}
    if load is not None:
        traffic["load"] = load
    config = {"traffic": traffic, "engine": ENGINE}
    with TRACES.pinned({source["path"]: read_contents(Path(source["path"]))}):
        replays = [run_replay(config).columns for _ in range(3)]
    assert TRACES.misses == 1
    TRACES.clear()
    fresh = run_replay(config).columns
    assert TRACES.misses >= 1 and TRACES.hits == 0  # unpinned, stopped early: nothing kept
    assert replays == [fresh] * 3
    assert fresh["prompt_tokens"] == [40, 40]


def test_a_pinned_trace_failing_past_max_requests_replays_and_is_not_kept(
    tmp_path: Path,
) -> None:
    """A streamed read stops at ``max_requests`` and never sees a later bad line; reading a
    pinned trace on to its end must not turn that line into an error (nor keep the trace)."""
    from aisim.traffic._trace_cache import read_contents

    file = tmp_path / "bad.jsonl"
    file.write_text(
        "".join(json.dumps(row) + "\n" for row in MOONCAKE) + "{not json\n", encoding="utf-8"
    )
    config = {
        "traffic": {"source": {"type": "trace", "path": str(file)}, "max_requests": 2},
        "engine": ENGINE,
    }
    with TRACES.pinned({str(file): read_contents(file)}):
        pinned = run_replay(config).columns
        assert TRACES.hits == 0
    TRACES.clear()
    assert pinned == run_replay(config).columns
