"""Streaming replay outputs: rows handed to sinks in chunks equal the in-memory rows, per-token
events reproduce every latency the replay reports, and the state a run holds is O(in-flight)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import small_requests
from traces import write_trace

from aisim.cli import main
from aisim.config import run_replay
from aisim.config._replay import build_plan
from aisim.replay._engine import Simulation
from aisim.replay._outcome import REQUEST_COLUMNS, RequestRecord
from aisim.replay._summary import request_columns


def config(
    requests: list[dict[str, Any]],
    *,
    backend: str = "vllm",
    rates: list[float] | None = None,
    blocks: int = 200,
    horizon_ms: float | None = None,
    disaggregated: bool = False,
) -> dict[str, Any]:
    worker: dict[str, Any] = {
        "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": blocks}},
        "timing": {"type": "fixed", "prefill_ms": 7.0, "decode_ms": 3.0},
    }
    workers = {"prefill": worker, "decode": worker} if disaggregated else {"aggregated": worker}
    engine: dict[str, Any] = {"backend": backend, "workers": workers}
    if disaggregated:
        engine["kv_transfer"] = {"bandwidth_bytes_per_s": 1e9, "kv_bytes_per_token": 1000}
    if rates:
        engine["speculation"] = {
            "kind": "mtp",
            "params": {"depth": len(rates)},
            "acceptance_rates": rates,
        }
    document: dict[str, Any] = {
        "traffic": {"source": {"type": "agentic", "requests": requests}},
        "engine": engine,
    }
    if horizon_ms is not None:
        document["simulation"] = {"horizon_ms": horizon_ms}
    return document


def same(left: list[Any], right: list[Any]) -> bool:
    """Equal lists, NaN equal to NaN."""
    return len(left) == len(right) and all(
        a == b
        or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
        for a, b in zip(left, right, strict=True)
    )


replays = st.fixed_dictionaries(
    {
        "requests": small_requests(max_requests=12),
        "backend": st.sampled_from(["vllm", "sglang"]),
        "rates": st.sampled_from([None, [0.8], [0.9, 0.6, 0.3]]),
        # 40 blocks of 16 tokens: big prompts queue and running requests get preempted.
        "blocks": st.sampled_from([40, 200]),
        "horizon_ms": st.sampled_from([None, 150.0]),
        "disaggregated": st.booleans(),
    }
)


@given(replays, st.integers(1, 5))
def test_streamed_rows_equal_in_memory_rows(case: dict[str, Any], chunk_rows: int) -> None:
    document = config(**case)
    in_memory = run_replay(document)
    chunks: list[list[RequestRecord]] = []
    plan, _ = build_plan(document)
    result = Simulation(plan, request_sink=chunks.append, chunk_rows=chunk_rows).run()
    assert result.log.records == []
    assert all(len(chunk) == chunk_rows for chunk in chunks[:-1])
    streamed = request_columns([record for chunk in chunks for record in chunk])
    assert list(streamed) == list(REQUEST_COLUMNS)
    for name in REQUEST_COLUMNS:
        assert same(streamed[name], in_memory.columns[name]), name
    # Traffic order, every request exactly once.
    assert streamed["request_id"] == [str(i) for i in range(len(case["requests"]))]


@given(replays)
def test_per_token_events_reproduce_the_latencies(case: dict[str, Any]) -> None:
    """The emission events rebuild each request's first/second/last token times and token
    counts, and, in simulation order, exactly the ITL samples the summary's statistics use."""
    result = run_replay(config(**case), per_token=True)
    tokens = result.tokens
    assert tokens is not None
    previous: dict[str, float] = {}
    first: dict[str, float] = {}
    emitted: dict[str, int] = {}
    second: dict[str, float] = {}
    gaps: list[float] = []
    longest: dict[str, float] = {}
    for request_id, time_ms, count in zip(
        tokens["request_id"], tokens["time_ms"], tokens["tokens"], strict=True
    ):
        if request_id in previous:
            gaps.append(time_ms - previous[request_id])
            longest[request_id] = max(longest.get(request_id, 0.0), gaps[-1])
        else:
            first[request_id] = time_ms
        before = emitted.get(request_id, 0)
        if before < 2 <= before + count:
            second[request_id] = time_ms
        emitted[request_id] = before + count
        previous[request_id] = time_ms
    assert gaps == result.distributions["itl"].values
    columns = result.columns
    for row, request_id in enumerate(columns["request_id"]):
        if request_id not in first:
            assert math.isnan(columns["first_token_ms"][row])
            continue
        assert columns["first_token_ms"][row] == first[request_id]
        assert columns["last_token_ms"][row] == previous[request_id]
        if request_id in second:
            assert columns["second_token_ms"][row] == second[request_id]
        if request_id in longest:
            assert columns["max_itl_ms"][row] == longest[request_id]
    for row, request_id in enumerate(columns["request_id"]):
        # A P/D prefill pool's first token counts as emitted before the client sees it.
        if columns["status"][row] == "completed":
            assert emitted[request_id] == columns["emitted_tokens"][row]


def test_state_held_is_bounded_by_in_flight_requests() -> None:
    """2000 requests 1 s apart, each done within 0.5 s: at most one request is ever live."""
    requests = [
        {"timestamp": 1000 * i, "input_length": 64, "output_length": 100} for i in range(2000)
    ]
    plan, _ = build_plan(config(requests))
    live: list[int] = []
    held: list[int] = []

    def watch(events: int, completed: int, now_ms: float) -> None:
        live.append(len(simulation.requests))
        held.append(simulation.log.held)

    simulation = Simulation(plan, watch, 1, request_sink=lambda records: None)
    simulation.run()
    assert len(live) > 2000
    assert max(live) == 1
    assert max(held) == 0


def test_cli_per_token_writes_the_events(tmp_path: Path) -> None:
    document = config(
        [{"timestamp": 5 * i, "input_length": 40, "output_length": 9} for i in range(30)],
        rates=[0.7, 0.4],
    )
    import yaml

    path = tmp_path / "replay.yaml"
    path.write_text(yaml.safe_dump(document))
    out = tmp_path / "out"
    assert main(["replay", str(path), "--out", str(out), "--per-token", "--no-progress"]) == 0
    expected = run_replay(document, per_token=True)
    assert expected.tokens is not None
    written = pq.read_table(out / "tokens.parquet").to_pydict()
    assert written == expected.tokens
    rows = pq.read_table(out / "requests.parquet").to_pydict()
    for name in REQUEST_COLUMNS:
        assert same(rows[name], expected.columns[name]), name
    assert sorted(p.name for p in out.iterdir()) == [
        "requests.parquet",
        "summary.json",
        "tokens.parquet",
    ]


def test_cli_without_per_token_writes_no_events(tmp_path: Path) -> None:
    import yaml

    path = tmp_path / "replay.yaml"
    path.write_text(yaml.safe_dump(config([{"input_length": 40, "output_length": 9}])))
    out = tmp_path / "out"
    assert main(["replay", str(path), "--out", str(out), "--no-progress"]) == 0
    assert sorted(p.name for p in out.iterdir()) == ["requests.parquet", "summary.json"]


@pytest.mark.parametrize("value", [1, "yes"])
def test_per_token_must_be_a_boolean(value: object) -> None:
    from aisim.errors import ConfigError

    document = config([{"input_length": 40, "output_length": 9}])
    document["simulation"] = {"per_token": value}
    with pytest.raises(ConfigError, match=r"^simulation\.per_token: expected true or false"):
        run_replay(document)


def trace_config(tmp_path: Path, trace: Path) -> Path:
    import yaml

    document = config([{"input_length": 1, "output_length": 1}])
    document["traffic"] = {"source": {"type": "trace", "path": trace.name}}
    path = tmp_path / "replay.yaml"
    path.write_text(yaml.safe_dump(document))
    return path


@pytest.mark.parametrize(
    ("name", "bad_line", "message"),
    [
        ("trace.csv", "12.5,100", "trace.csv:40000: expected 3 columns, got 2"),
        (
            "trace.jsonl",
            '{"timestamp": 12.5, "input_length": 10',
            "trace.jsonl:40000: not valid JSON",
        ),
        ("trace.csv", "12.5,100,x", "trace.csv:40000.output_tokens: expected an integer"),
    ],
)
def test_bad_line_deep_in_a_trace_is_one_line_and_leaves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str, bad_line: str, message: str
) -> None:
    """Line 40,000 of a 50,000-line trace is truncated or malformed."""
    csv = name.endswith(".csv")
    rows = [
        {"timestamp": i * 10, "input_length": 10 + i % 7, "output_length": 1 + i % 3 if csv else 2}
        for i in range(49_999 if csv else 50_000)  # 50,000 lines with the CSV header
    ]
    trace = write_trace(tmp_path, rows, "csv" if csv else "jsonl", replace={40_000: bad_line})
    assert trace.name == name
    out = tmp_path / "out"
    assert main(["replay", str(trace_config(tmp_path, trace)), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert error.count("\n") == 1 and message in error, error
    assert not out.exists()


def test_a_run_that_fails_midway_leaves_no_partial_output(tmp_path: Path) -> None:
    """Row groups already streamed into the staging folder are deleted when the run fails
    later."""
    from aisim.cli._replay import write_replay

    rows = [
        {"timestamp": i * 100, "input_length": 20 + i % 5, "output_length": 3 + i % 4}
        for i in range(40_000)
    ]
    trace = write_trace(tmp_path, rows, "csv")
    out = tmp_path / "out"
    seen: list[int] = []

    def interrupt(events: int, completed: int, now_ms: float) -> None:
        if completed > 20_000:  # more than one chunk of 16,384 rows is on disk by now
            # In the staging folder inside out (hidden), renamed into place at the end.
            seen.extend(p.stat().st_size for p in out.rglob("*") if p.is_file())
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_replay(str(trace_config(tmp_path, trace)), out, False, True, interrupt, 1000)
    assert seen and max(seen) > 0  # the temp files held data
    assert not out.exists()


@given(st.permutations(list(range(12))), st.sampled_from(["vllm", "sglang"]))
def test_an_out_of_order_trace_replays_in_arrival_order(order: list[int], backend: str) -> None:
    """Arrivals enter the heap one at a time in (arrival, traffic order): a shuffled trace gives
    every request the same latencies as the arrival-ordered one (distinct arrivals, no SD, so
    neither tie-breaking nor SD sampling depends on a request's position in the file)."""
    lengths = [(30 + 17 * i % 90, 2 + 5 * i % 11) for i in range(12)]
    rows = [
        {"request_id": f"r{i}", "timestamp": 9 * i, "input_length": p, "output_length": o}
        for i, (p, o) in enumerate(lengths)
    ]
    ordered = run_replay(config(rows, backend=backend, blocks=40)).columns
    shuffled = run_replay(config([rows[i] for i in order], backend=backend, blocks=40)).columns
    assert shuffled["request_id"] == [f"r{i}" for i in order]  # rows stay in traffic order
    position = {request_id: row for row, request_id in enumerate(shuffled["request_id"])}
    for name in REQUEST_COLUMNS:
        assert same([shuffled[name][position[f"r{i}"]] for i in range(12)], ordered[name]), name


def test_a_request_column_alone_equals_that_column_of_them_all() -> None:
    """``ReplayResult.column(name)`` builds one column from the request records: the same
    values as ``columns[name]``, a copy each time; a name that is no column is a KeyError."""
    requests = [
        {"timestamp": 0, "input_length": 40, "output_length": 6},
        {"timestamp": 5, "input_length": 20, "output_length": 1},
        {"timestamp": 9, "input_length": 70, "output_length": 12},
    ]
    result = run_replay(config(requests, rates=[0.7]))
    columns = result.columns
    for name in REQUEST_COLUMNS:
        assert same(result.column(name), columns[name]), name
    assert columns["status"] == ["completed"] * 3
    result.column("status").append("changed")
    assert result.column("status") == ["completed"] * 3
    with pytest.raises(KeyError, match="'ttft'"):
        result.column("ttft")
