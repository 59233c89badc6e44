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
from traces import write_trace

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
    assert summarize(streamed, description).to_dict() == summarize(reference, description).to_dict()
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


def test_a_pinned_trace_replays_the_scanned_requests_first_then_reads_again(
    tmp_path: Path,
) -> None:
    """A sweep's pinned trace: the plan's first simulation takes the requests the edge's scan
    read (the same objects; no second reading), a second simulation reads the trace again, and
    both replay exactly what the unpinned trace replays."""
    from aisim.traffic import TRACES, read_contents

    rows = [
        {"timestamp": 9 * i, "input_length": 30 + i, "output_length": 5 + i % 3} for i in range(20)
    ]
    trace = write_trace(tmp_path, rows, "jsonl")
    reference = request_columns(Simulation(build_plan(trace_document(trace))[0]).run().log.records)
    with TRACES.pinned({str(trace): read_contents(trace)}):
        plan, _ = build_plan(trace_document(trace))
        assert plan.stream is not None
        first = list(plan.stream.requests())
        again = list(plan.stream.requests())
        plan, _ = build_plan(trace_document(trace))
        runs = [request_columns(Simulation(plan).run().log.records) for _ in range(2)]
    assert [r.index for r in first] == [r.index for r in again] == list(range(20))
    assert all(a is not b for a, b in zip(first, again, strict=True))  # read again: fresh
    for columns in runs:
        for name in REQUEST_COLUMNS:
            assert same(columns[name], reference[name]), name


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


def test_a_trace_whose_content_changes_before_the_replay_reads_it_is_an_error(
    tmp_path: Path,
) -> None:
    # Same rows, order and count; other hash ids (the plan's hash-id counts describe the first).
    rows = [
        {"timestamp": 9 * i, "input_length": 30, "output_length": 5, "hash_ids": [i]}
        for i in range(5)
    ]
    trace = write_trace(tmp_path, rows, "jsonl")
    plan, _ = build_plan(trace_document(trace))
    write_trace(tmp_path, [dict(row, hash_ids=[0]) for row in rows], "jsonl")
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
    lines between, and how many rows the plain reader leaves to the full checks (an integral
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


def checked_in_full(index: int, line: str) -> RequestSpec | ConfigError:
    """What the full checks make of one Mooncake line (block size 16): its request or its
    error."""
    from aisim._io import parse_json_text
    from aisim.traffic._readers import _row_request

    try:
        return _row_request(index, parse_json_text(line, "t:1"), "t:1", 16, False)
    except ConfigError as error:
        return error


@given(mooncake_rows(), st.sampled_from([1.0, 0.5]))
def test_a_trace_reading_equals_the_full_checks_of_every_line(
    trace: tuple[list[str], int], time_scale: float
) -> None:
    from unittest import mock

    from aisim.config._traffic import build_traffic
    from aisim.traffic import TraceStream, _readers
    from aisim.traffic._trace_cache import TRACES

    lines, odd = trace
    expected = []
    for line in (line for line in lines if line.strip()):
        request = checked_in_full(len(expected), line)
        assert isinstance(request, RequestSpec)
        request.arrival_ms *= time_scale
        expected.append(fields(request))
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
        full = mock.patch.object(_readers, "_row_request", wraps=_readers._row_request)
        with full as checked:
            read = [fields(request) for request in stream.requests()]
        TRACES.clear()
    assert read == expected
    # Only the rows the plain reader does not take as is went through the full checks.
    assert checked.call_count == odd


#: Keys and values of Mooncake lines as text: plain ones, and awkward ones the full checks
#: refuse or take differently from the plain form.
ROW_KEY_TEXTS = ["timestamp", "input_length", "output_length", "hash_ids"]
ODD_KEY_TEXTS = ["input\\u005flength", "delay_ms", "request_id", "x", "Timestamp", 'a\\"b']
PLAIN_VALUE_TEXTS: dict[str, st.SearchStrategy[str]] = {
    "timestamp": st.one_of(st.integers(0, 10**6).map(str), st.floats(0.0, 5e9).map(repr)),
    "input_length": st.integers(1, 300).map(str),
    "output_length": st.integers(1, 300).map(str),
    "hash_ids": st.lists(st.integers(0, 2**62 - 1), max_size=19).map(json.dumps),
}
ODD_LENGTHS = [
    "0",
    "-1",
    "16777216",
    "16777217",
    "30.0",
    "3e1",
    "true",
    "null",
    '"30"',
    "-0",
    "1" + "0" * 30,
]
LENGTH_TEXTS = st.one_of(st.integers(-2, 300).map(str), st.sampled_from(ODD_LENGTHS))
ODD_TIMESTAMPS = [
    "4294967296",
    "4294967297",
    "4294967296.0",
    "4294967296.000001",
    "-0.0",
    "-0",
    "1e400",
    "-1e400",
    "NaN",
    "Infinity",
    "1E2",
    "0.1e1",
    "2.2250738585072011e-308",
    "5e-324",
    "0.30000000000000004441",
    "123456789012345678901234567890",
    "1" + "0" * 400,
    "null",
    "false",
    '"5"',
    "[]",
    "-1",
    "-0.5",
    "-1e-300",
    "4294967296.0000005",
    "4294967295.9999995",
]
ODD_HASH_IDS = ["-1", "4611686018427387903", "4611686018427387904", "1.0", "true", "[1]"]
ODD_HASH_LISTS = ["null", "{}", "1", '"[1]"', "[]", "[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]"]
ODD_VALUE_TEXTS: dict[str, st.SearchStrategy[str]] = {
    "timestamp": st.one_of(
        st.integers(-1, 2**33).map(str),
        st.floats(-1.0, 5e9).map(repr),
        st.sampled_from(ODD_TIMESTAMPS),
    ),
    "input_length": LENGTH_TEXTS,
    "output_length": LENGTH_TEXTS,
    "hash_ids": st.one_of(
        st.lists(
            st.one_of(
                st.integers(0, 2**62 + 1).map(str),
                st.sampled_from(ODD_HASH_IDS),
            ),
            max_size=20,
        ).map(lambda ids: "[" + ", ".join(ids) + "]"),
        st.sampled_from(ODD_HASH_LISTS),
    ),
}


@st.composite
def mooncake_line_texts(draw: st.DrawFn) -> str:
    """One Mooncake line as raw text: mostly plain values, with near misses (repeated,
    unknown or escaped keys, integral floats, bools, strings, huge or out-of-range numbers,
    NaN, non-finite floats, too many hash ids, odd whitespace, trailing text, a byte-order
    mark, a non-object)."""
    keys = [key for key in ROW_KEY_TEXTS if draw(st.integers(0, 7)) > 0]
    keys = list(draw(st.permutations(keys)))
    if draw(st.integers(0, 5)) == 0 and keys:
        keys.insert(draw(st.integers(0, len(keys))), draw(st.sampled_from(keys)))  # repeated
    if draw(st.integers(0, 7)) == 0:
        keys.insert(draw(st.integers(0, len(keys))), draw(st.sampled_from(ODD_KEY_TEXTS)))
    pairs = []
    for key in keys:
        if key not in PLAIN_VALUE_TEXTS:
            value = draw(LENGTH_TEXTS)
        elif draw(st.integers(0, 4)) == 0:
            value = draw(ODD_VALUE_TEXTS[key])
        else:
            value = draw(PLAIN_VALUE_TEXTS[key])
        space = draw(st.sampled_from(["", " ", "\t"]))
        pairs.append(f'"{key}":{space}{value}')
    text = "{" + draw(st.sampled_from([", ", ",", " ,\t"])).join(pairs) + "}"
    shape = draw(st.integers(0, 15))
    if shape == 0:
        text = "[" + text + "]"
    elif shape == 1:
        text = text + " x"
    elif shape == 2:
        text = "\ufeff" + text
    elif shape == 3:
        text = " \t" + text + "\r"
    return text + "\n"


@given(st.lists(mooncake_line_texts(), min_size=1, max_size=30))
def test_the_plain_row_reader_takes_only_what_the_full_checks_take_the_same_way(
    lines: list[str],
) -> None:
    from aisim.traffic._readers import _plain_row

    for line in lines:
        full = checked_in_full(3, line)
        plain = _plain_row(3, line, 16)
        if plain is not None:
            assert isinstance(full, RequestSpec), (line, full)
            assert fields(plain) == fields(full), line


def odd_lines() -> Iterator[str]:
    """A plain row (200 prompt tokens: 13 blocks of 16) with one value or key made odd."""
    plain = {"timestamp": "12", "input_length": "200", "output_length": "7", "hash_ids": "[5]"}
    odd = {
        "timestamp": ODD_TIMESTAMPS,
        "input_length": ODD_LENGTHS,
        "output_length": ODD_LENGTHS,
        "hash_ids": ODD_HASH_LISTS + [f"[3, {item}]" for item in ODD_HASH_IDS],
    }

    def line(values: dict[str, str]) -> str:
        return "{" + ", ".join(f'"{key}": {value}' for key, value in values.items()) + "}\n"

    for key, texts in odd.items():
        for text in texts:
            yield line({**plain, key: text})
    for key in ODD_KEY_TEXTS:
        yield line({**plain, key: "1"})
    for key in plain:
        yield line({**plain, key: plain[key]}).replace("}", f', "{key}": {plain[key]}}}')


@pytest.mark.parametrize("line", list(odd_lines()))
def test_the_plain_row_reader_on_each_odd_value_agrees_with_the_full_checks(line: str) -> None:
    from aisim.traffic._readers import _plain_row

    full = checked_in_full(3, line)
    plain = _plain_row(3, line, 16)
    if plain is None:
        # Refused: the full checks refuse it too, or take it in a form the plain reader leaves
        # to them (an integral float for an integer, an escaped key).
        other_forms = ("30.0", "3e1", ", 1.0]", "\\u005f")
        assert isinstance(full, ConfigError) or any(form in line for form in other_forms), line
    else:
        assert isinstance(full, RequestSpec), full
        assert fields(plain) == fields(full)


@given(
    st.integers(1, 300),
    st.integers(1, 300),
    st.one_of(st.integers(0, 2**32), st.floats(0.0, 2.0**32)),
    st.one_of(st.none(), st.lists(st.integers(0, 2**62 - 1), max_size=19)),
    st.sampled_from([", ", ","]),
)
def test_the_plain_row_reader_takes_every_plainly_valid_row(
    prompt: int,
    output: int,
    timestamp: float,
    hash_ids: list[int] | None,
    separator: str,
) -> None:
    from aisim.traffic._readers import _plain_row

    row: dict[str, Any] = {"timestamp": timestamp, "input_length": prompt, "output_length": output}
    if hash_ids is not None:
        row["hash_ids"] = hash_ids[: -(-prompt // 16)]
    line = json.dumps(row, separators=(separator, ": "))
    plain = _plain_row(3, line, 16)
    assert plain is not None, line
    full = checked_in_full(3, line)
    assert isinstance(full, RequestSpec)
    assert fields(plain) == fields(full)
    assert (
        plain.arrival_ms == float(timestamp)
        and plain.hash_ids == (hash_ids or [])[: -(-prompt // 16)]
    )


@pytest.mark.parametrize(
    ("line", "error"),
    [
        ('{"input_length": 30, "output_length": 5, "input_length": 31}', "duplicate key"),
        ('{"input_length": 30, "output_length": 5, "delay_ms": 1}', "unknown field"),
        ('{"input_length": true, "output_length": 5}', "expected an integer"),
        ('{"input_length": 30, "output_length": 5, "timestamp": 1e400}', "finite number"),
        ('{"input_length": 16, "output_length": 5, "hash_ids": [1, 2]}', "block hashes"),
    ],
)
def test_a_line_the_plain_reader_refuses_gets_the_full_error(line: str, error: str) -> None:
    from aisim.traffic._readers import _plain_row

    assert _plain_row(0, line, 16) is None
    full = checked_in_full(0, line)
    assert isinstance(full, ConfigError) and error in str(full)


def test_a_trace_rewritten_between_readings_is_checked_in_full(tmp_path: Path) -> None:
    from aisim.config._traffic import build_traffic
    from aisim.traffic import TraceStream
    from aisim.traffic._trace_cache import TRACES

    rows = [{"timestamp": 9 * i, "input_length": 30, "output_length": 5} for i in range(5)]
    trace = write_trace(tmp_path, rows, "jsonl")
    stream = build_traffic({"source": {"type": "trace", "path": str(trace)}}, None)
    assert isinstance(stream, TraceStream)
    TRACES.clear()
    assert len(list(stream.requests())) == 5
    write_trace(tmp_path, rows[:4], "jsonl", replace={4: '{"timestamp": 40, "input_length": "30"}'})
    TRACES.clear()
    with pytest.raises(ConfigError) as error:
        list(stream.requests())
    assert str(error.value).startswith("trace.jsonl:4.input_length: expected an integer")
    TRACES.clear()


def arrivals_as_before(count: int, load: str, rate_rps: float, seed: int) -> list[float]:
    """The open-loop arrivals as ``apply_load`` drew them over a whole list before traffic
    was streamed (its loop, copied): the oracle of the one-request-at-a-time clock."""
    from aisim.replay._rng import RandomStream

    gap_ms = 1000.0 / rate_rps if rate_rps > 0.0 else 0.0
    rng = RandomStream(seed, 3)
    now = 0.0
    arrivals = []
    for position in range(count):
        arrivals.append(now)
        if load == "poisson":
            now += rng.exponential(gap_ms)
        else:
            now = (position + 1) * gap_ms
    return arrivals


LENGTHS = st.one_of(
    st.integers(1, 500),
    st.fixed_dictionaries({"type": st.just("uniform"), "min": st.just(1), "max": st.just(400)}),
    st.fixed_dictionaries(
        {
            "type": st.sampled_from(["normal", "lognormal"]),
            "mean": st.floats(10.0, 300.0),
            "std": st.floats(0.0, 100.0),
            "min": st.just(1),
            "max": st.just(600),
        }
    ),
)
OPEN_LOADS = st.fixed_dictionaries(
    {"type": st.sampled_from(["poisson", "constant"]), "rate_rps": st.floats(0.01, 500.0)}
)
#: Open-loop loads and closed loops (``concurrency``: request i waits for request i - users).
LOADS = st.one_of(
    OPEN_LOADS,
    st.fixed_dictionaries(
        {
            "type": st.just("concurrency"),
            "users": st.integers(1, 5),
            "think_ms": st.sampled_from([0.0, 3.5, 40.0]),
        }
    ),
)


@given(
    st.integers(1, 40),
    st.sampled_from(["poisson", "constant"]),
    st.floats(0.01, 500.0),
    st.integers(0, 2**40),
)
def test_the_arrival_clock_draws_what_the_whole_list_drew(
    count: int, load: str, rate_rps: float, seed: int
) -> None:
    from aisim.replay._synthetic import apply_load

    requests = [RequestSpec(i, str(i), 1, 1, 0.0, [], 0.0, [], 0) for i in range(count)]
    apply_load(requests, load, rate_rps, 0, 0.0, seed)
    assert [request.arrival_ms for request in requests] == arrivals_as_before(
        count, load, rate_rps, seed
    )


def synthetic_traffic(
    count: int, prompt: Any, output: Any, load: dict[str, Any], seed: int
) -> dict[str, Any]:
    """A replay config's ``traffic`` block: ``count`` synthetic requests under ``load``."""
    return {
        "source": {
            "type": "synthetic",
            "num_requests": count,
            "prompt_tokens": prompt,
            "output_tokens": output,
        },
        "load": load,
        "seed": seed,
    }


@given(
    LENGTHS,
    LENGTHS,
    st.integers(1, 40),
    LOADS,
    st.integers(0, 2**40),
    st.one_of(st.none(), st.integers(1, 50)),
)
def test_synthetic_traffic_streams_the_requests_built_whole(
    prompt: Any, output: Any, count: int, load: dict[str, Any], seed: int, limit: int | None
) -> None:
    from aisim.config._traffic import build_traffic
    from aisim.traffic import SyntheticStream

    traffic = synthetic_traffic(count, prompt, output, load, seed)
    if limit is not None:
        traffic["max_requests"] = limit
    whole = build_traffic(traffic, None, stream=False)
    assert isinstance(whole, list)
    stream = build_traffic(traffic, None)
    assert isinstance(stream, SyntheticStream)
    expected = [fields(request) for request in whole]
    assert [fields(request) for request in stream.requests()] == expected
    assert [fields(request) for request in stream.requests()] == expected  # every pass
    assert stream.closed_loop_users == load.get("users", 0)
    if load["type"] != "concurrency":
        arrivals = arrivals_as_before(len(whole), load["type"], load["rate_rps"], seed)
        assert [request.arrival_ms for request in whole] == arrivals


@given(
    small_requests(max_requests=14),
    st.sampled_from(["csv", "jsonl"]),
    LOADS,
    st.integers(0, 2**40),
    st.one_of(st.none(), st.integers(1, 20)),
)
def test_a_trace_under_a_load_streams_the_requests_built_whole(
    rows: list[dict[str, Any]],
    fmt: str,
    load: dict[str, Any],
    seed: int,
    limit: int | None,
) -> None:
    from aisim.config._traffic import build_traffic
    from aisim.traffic import TraceStream
    from aisim.traffic._trace_cache import TRACES

    with tempfile.TemporaryDirectory() as folder:
        trace = write_trace(Path(folder), rows, fmt)
        traffic: dict[str, Any] = {
            "source": {"type": "trace", "path": str(trace)},
            "load": load,
            "seed": seed,
        }
        if limit is not None:
            traffic["max_requests"] = limit
        TRACES.clear()
        whole = build_traffic(traffic, None, stream=False)
        assert isinstance(whole, list)
        stream = build_traffic(traffic, None)
        assert isinstance(stream, TraceStream)
        expected = [fields(request) for request in whole]
        assert [fields(request) for request in stream.requests()] == expected
        TRACES.clear()
        assert [fields(request) for request in stream.requests()] == expected
        TRACES.clear()


@given(
    LENGTHS,
    LENGTHS,
    st.integers(1, 14),
    LOADS,
    st.integers(0, 2**40),
    st.sampled_from(["vllm", "sglang"]),
    st.sampled_from([None, [0.8, 0.5]]),
    st.sampled_from([None, 30.0, 150.0]),
)
def test_a_streamed_synthetic_replay_equals_the_held_one(
    prompt: Any,
    output: Any,
    count: int,
    load: dict[str, Any],
    seed: int,
    backend: str,
    rates: list[float] | None,
    horizon_ms: float | None,
) -> None:
    document = {
        "traffic": synthetic_traffic(count, prompt, output, load, seed),
        "engine": engine(backend, rates),
    }
    if horizon_ms is not None:
        # Cuts closed loops: requests waiting for one that did not finish, or released late.
        document["simulation"] = {"horizon_ms": horizon_ms}
    # Requests that fit the test engine's 60 blocks of 16 tokens.
    document["engine"]["workers"]["aggregated"]["kv_cache"]["capacity"]["blocks"] = 200
    plan, description = build_plan(document)
    assert plan.stream is not None and plan.requests == []  # streamed, not held
    assert plan.stream.count == count
    streamed = Simulation(plan, per_token=True, token_sink=lambda *rows: None).run()
    reference = Simulation(held(plan)).run()
    left = request_columns(streamed.log.records)
    right = request_columns(reference.log.records)
    for name in REQUEST_COLUMNS:
        assert same(left[name], right[name]), name
    assert summarize(streamed, description).to_dict() == summarize(reference, description).to_dict()
