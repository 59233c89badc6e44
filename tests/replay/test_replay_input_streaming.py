"""Input streaming: a trace file replayed at its own timestamps is read while the simulation
runs (one request ahead of the clock), gives exactly the rows of the same requests held whole,
and an out-of-order trace is held whole, replayed in arrival order and noted in the summary."""

from __future__ import annotations

import dataclasses
import json
import math
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import small_requests

from aisim.config import run_replay
from aisim.config._replay import build_plan
from aisim.errors import ConfigError
from aisim.replay._engine import Simulation
from aisim.replay._outcome import REQUEST_COLUMNS, RequestRecord
from aisim.replay._plan import RequestSpec, RequestStream
from aisim.replay._summary import request_columns, summarize


def engine(backend: str = "vllm", rates: list[float] | None = None) -> dict[str, Any]:
    worker: dict[str, Any] = {
        "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": 60}},
        "timing": {"type": "fixed", "prefill_ms": 7.0, "decode_ms": 3.0},
    }
    block: dict[str, Any] = {"backend": backend, "workers": {"aggregated": worker}}
    if rates:
        block["speculation"] = {
            "kind": "mtp",
            "params": {"depth": len(rates)},
            "acceptance_rates": rates,
        }
    return block


def write_trace(folder: Path, rows: list[dict[str, Any]], fmt: str) -> Path:
    """``rows`` (Mooncake fields, timestamps in ms) as a CSV or Mooncake JSONL trace file."""
    if fmt == "csv":
        path = folder / "trace.csv"
        lines = ["arrival_s,prompt_tokens,output_tokens"]
        lines += [
            f"{row['timestamp'] / 1000},{row['input_length']},{row['output_length']}"
            for row in rows
        ]
    else:
        path = folder / "trace.jsonl"
        lines = [json.dumps(row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def trace_document(trace: Path, **options: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "traffic": {"source": {"type": "trace", "path": str(trace)}},
        "engine": engine(options.pop("backend", "vllm"), options.pop("rates", None)),
    }
    if options.get("horizon_ms") is not None:
        document["simulation"] = {"horizon_ms": options["horizon_ms"]}
    return document


def same(left: list[Any], right: list[Any]) -> bool:
    """Equal lists, NaN equal to NaN."""
    return len(left) == len(right) and all(
        a == b
        or (isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b))
        for a, b in zip(left, right, strict=True)
    )


def held(plan: Any) -> Any:
    """The same plan with its streamed requests read into a list (the engine's held path)."""
    assert plan.stream is not None
    return dataclasses.replace(plan, requests=list(plan.stream.requests()), stream=None)


@given(
    small_requests(max_requests=14),
    st.sampled_from(["csv", "jsonl"]),
    st.sampled_from(["vllm", "sglang"]),
    st.sampled_from([None, [0.8, 0.5]]),
    st.sampled_from([None, 120.0]),
)
def test_streamed_trace_equals_the_held_requests(
    rows: list[dict[str, Any]],
    fmt: str,
    backend: str,
    rates: list[float] | None,
    horizon_ms: float | None,
) -> None:
    rows = sorted(rows, key=lambda row: row["timestamp"])
    with tempfile.TemporaryDirectory() as folder:
        trace = write_trace(Path(folder), rows, fmt)
        document = trace_document(trace, backend=backend, rates=rates, horizon_ms=horizon_ms)
        plan, description = build_plan(document)
        assert plan.stream is not None and plan.requests == []  # streamed, not held
        assert plan.stream.count == len(rows)
        streamed = Simulation(plan, per_token=True, token_sink=lambda *rows: None).run()
        reference = Simulation(held(plan)).run()
    left = request_columns(streamed.log.records)
    right = request_columns(reference.log.records)
    for name in REQUEST_COLUMNS:
        assert same(left[name], right[name]), name
    assert left["request_id"] == [str(i) for i in range(len(rows))]
    assert summarize(streamed, description) == summarize(reference, description)
    if fmt == "jsonl":
        # The file's rows equal the same rows given inline (the agentic reader, held whole).
        inline = dict(document, traffic={"source": {"type": "agentic", "requests": rows}})
        columns = run_replay(inline).columns
        for name in REQUEST_COLUMNS:
            assert same(left[name], columns[name]), name


def counting(stream: RequestStream, read: list[int]) -> RequestStream:
    """``stream`` that counts the requests the simulation reads from it."""

    def opener() -> Iterator[RequestSpec]:
        for request in stream.requests():
            read[0] += 1
            yield request

    return RequestStream(opener, stream.count)


def test_a_streamed_trace_is_read_one_request_ahead_of_the_clock(tmp_path: Path) -> None:
    """3000 requests 0.25 s apart, each done within 0.5 s: at any time the simulation has read
    at most the finished requests, the live ones (at most two) and the next arrival."""
    rows = [{"timestamp": 250 * i, "input_length": 64, "output_length": 100} for i in range(3000)]
    plan, _ = build_plan(trace_document(write_trace(tmp_path, rows, "csv")))
    assert plan.stream is not None
    read = [0]
    plan = dataclasses.replace(plan, stream=counting(plan.stream, read))
    checks: list[tuple[int, int, int]] = []

    def watch(events: int, completed: int, now_ms: float) -> None:
        live = len(simulation.requests)
        checks.append((read[0], completed, live))
        assert read[0] <= completed + live + 1
        assert live <= 2

    chunks: list[list[RequestRecord]] = []
    simulation = Simulation(plan, watch, 1, request_sink=chunks.append, chunk_rows=100)
    simulation.run()
    assert len(checks) > 3000 and read[0] == 3000
    assert sum(len(chunk) for chunk in chunks) == 3000
    assert all(status for chunk in chunks for status in (r.completed for r in chunk))


def test_a_plan_of_a_streamed_trace_replays_again(tmp_path: Path) -> None:
    rows = [{"timestamp": 9 * i, "input_length": 30, "output_length": 5} for i in range(20)]
    plan, _ = build_plan(trace_document(write_trace(tmp_path, rows, "jsonl")))
    first = request_columns(Simulation(plan).run().log.records)
    second = request_columns(Simulation(plan).run().log.records)
    for name in REQUEST_COLUMNS:
        assert same(first[name], second[name]), name


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
def test_an_out_of_order_trace_is_sorted_and_the_summary_says_so(tmp_path: Path, fmt: str) -> None:
    rows = [
        {"timestamp": 40 * i, "input_length": 30 + 11 * i % 50, "output_length": 3 + i % 6}
        for i in range(10)
    ]
    order = [3, 0, 7, 1, 9, 2, 8, 4, 6, 5]
    ordered_dir, shuffled_dir = tmp_path / "ordered", tmp_path / "shuffled"
    ordered_dir.mkdir()
    shuffled_dir.mkdir()
    ordered = run_replay(trace_document(write_trace(ordered_dir, rows, fmt)))
    document = trace_document(write_trace(shuffled_dir, [rows[i] for i in order], fmt))
    plan, _ = build_plan(document)
    assert plan.stream is None and len(plan.requests) == 10  # held whole to be sorted
    shuffled = run_replay(document)
    assert "arrival_order" not in ordered.summary
    assert shuffled.summary["arrival_order"].startswith("sorted: the traffic lists requests out")
    # Rows stay in file order; request i of the shuffled file is request order[i].
    columns, reference = shuffled.columns, ordered.columns
    for name in REQUEST_COLUMNS:
        if name != "request_id":
            assert same(columns[name], [reference[name][i] for i in order]), name
    figures = {key: value for key, value in shuffled.summary.items() if key != "arrival_order"}
    assert figures == ordered.summary


def test_max_requests_stops_reading_a_streamed_trace(tmp_path: Path) -> None:
    rows = [{"timestamp": 9 * i, "input_length": 30, "output_length": 5} for i in range(50)]
    document = trace_document(write_trace(tmp_path, rows, "csv"))
    document["traffic"]["max_requests"] = 7
    plan, _ = build_plan(document)
    assert plan.stream is not None and plan.stream.count == 7
    assert run_replay(document).summary["total_requests"] == 7


def test_a_trace_that_changes_while_it_is_replayed_is_an_error(tmp_path: Path) -> None:
    rows = [{"timestamp": 9 * i, "input_length": 30, "output_length": 5} for i in range(50)]
    trace = write_trace(tmp_path, rows, "jsonl")
    plan, _ = build_plan(trace_document(trace))
    write_trace(tmp_path, rows + rows, "jsonl")  # twice as long, and out of order
    with pytest.raises(ConfigError, match=r"'trace.jsonl' changed while it was replayed"):
        Simulation(plan).run()


FIELDS = (
    "index",
    "request_id",
    "prompt_tokens",
    "output_tokens",
    "arrival_ms",
    "wait_for",
    "delay_ms",
    "hash_ids",
    "hash_block_tokens",
)


def fields(request: RequestSpec) -> tuple[Any, ...]:
    """A request's fields with their types (a float arrival must stay a float)."""
    return tuple((type(getattr(request, name)), getattr(request, name)) for name in FIELDS)


@st.composite
def mooncake_rows(draw: st.DrawFn) -> tuple[list[str], int]:
    """Lines of a valid Mooncake trace with hash ids (block size 16), keys in any order, blank
    lines between, and how many rows the lean reader leaves to the full checks (an integral
    float ``input_length`` such as 30.0 is valid but not taken as is)."""
    lines: list[str] = []
    odd = 0
    clock = 0.0
    for _ in range(draw(st.integers(1, 25))):
        clock += draw(st.floats(0.0, 500.0))
        prompt = draw(st.integers(1, 200))
        row: dict[str, Any] = {
            "timestamp": draw(st.sampled_from([clock, int(clock)])),
            "input_length": prompt,
            "output_length": draw(st.integers(1, 40)),
        }
        if draw(st.booleans()):
            blocks = -(-prompt // 16)
            row["hash_ids"] = draw(st.lists(st.integers(0, 2**62 - 1), max_size=blocks))
        if draw(st.integers(0, 5)) == 0:
            row["input_length"] = float(prompt)  # valid, but not taken as is
            odd += 1
        if draw(st.integers(0, 5)) == 0:
            lines.append("   ")  # blank lines are skipped, not numbered as requests
        lines.append(json.dumps(dict(draw(st.permutations(sorted(row.items()))))))
    return lines, odd


@given(mooncake_rows(), st.sampled_from([1.0, 0.5]))
def test_the_trusted_second_pass_equals_the_checked_first_pass(
    trace: tuple[list[str], int], time_scale: float
) -> None:
    from unittest import mock

    from aisim.config import _replay_traffic
    from aisim.config._replay_traffic import TraceStream, build_traffic
    from aisim.config._trace_cache import TRACES

    lines, odd = trace
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "trace.jsonl"
        path.write_text("\n".join(lines) + "\n")
        traffic = {
            "source": {"type": "trace", "path": str(path), "hash_block_tokens": 16},
            "load": {"type": "trace_timestamps", "time_scale": time_scale},
        }
        stream = build_traffic(traffic, None)
        assert isinstance(stream, TraceStream)
        TRACES.clear()  # read the file, not a kept copy
        first = [fields(request) for request in stream.requests()]
        TRACES.clear()
        full = mock.patch.object(
            _replay_traffic, "_row_request", wraps=_replay_traffic._row_request
        )
        with full as checked:
            second = [fields(request) for request in stream.requests(trusted=True)]
        TRACES.clear()
    assert second == first
    assert len(first) == len(lines) - lines.count("   ")
    # Only the rows the lean reader does not take as is were checked again.
    assert checked.call_count == odd


def test_a_trace_rewritten_before_the_trusted_pass_is_checked_in_full(tmp_path: Path) -> None:
    from aisim.config._replay_traffic import TraceStream, build_traffic
    from aisim.config._trace_cache import TRACES

    rows = [{"timestamp": 9 * i, "input_length": 30, "output_length": 5} for i in range(5)]
    trace = write_trace(tmp_path, rows, "jsonl")
    stream = build_traffic({"source": {"type": "trace", "path": str(trace)}}, None)
    assert isinstance(stream, TraceStream)
    TRACES.clear()
    assert len(list(stream.requests())) == 5
    bad = [json.dumps(row) for row in rows[:3]] + ['{"timestamp": 40, "input_length": "30"}']
    trace.write_text("\n".join(bad) + "\n")
    TRACES.clear()
    with pytest.raises(ConfigError) as error:
        list(stream.requests(trusted=True))
    assert str(error.value).startswith("trace.jsonl:4.input_length: expected an integer")
    TRACES.clear()
