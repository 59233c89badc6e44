"""Magnitude limits and strict trace syntax at the replay edge (issue 17). Each case used to
overflow to infinity (and crash writing summary.json), round a latency away, or read text as a
number Python's int()/float() happened to accept."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest

from aisim import ConfigError
from aisim.cli import main
from aisim.config import run_replay

FIXED = {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0}


def engine() -> dict[str, Any]:
    return {
        "workers": {
            "aggregated": {
                "kv_cache": {"capacity": {"type": "fixed", "blocks": 100}},
                "timing": FIXED,
            }
        }
    }


def trace(tmp_path: Path, name: str, text: str) -> dict[str, Any]:
    path = tmp_path / name
    path.write_text(text)
    return {"traffic": {"source": {"type": "trace", "path": str(path)}}, "engine": engine()}


def inline(rows: list[dict[str, Any]], load: dict[str, Any] | None = None) -> dict[str, Any]:
    traffic: dict[str, Any] = {"source": {"type": "agentic", "requests": rows}}
    if load is not None:
        traffic["load"] = load
    return {"traffic": traffic, "engine": engine()}


def synthetic(load: dict[str, Any]) -> dict[str, Any]:
    source = {"type": "synthetic", "num_requests": 3, "prompt_tokens": 5, "output_tokens": 2}
    return {"traffic": {"source": source, "load": load}, "engine": engine()}


def error(config: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        run_replay(config)
    return str(info.value)


def test_a_huge_csv_arrival_is_refused_not_summarised_as_infinity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "t.csv").write_text("arrival_s,prompt_tokens,output_tokens\n1e306,5,2\n")
    config = tmp_path / "r.json"
    source = {"type": "trace", "path": "t.csv"}
    config.write_text(json.dumps({"traffic": {"source": source}, "engine": engine()}))
    out = tmp_path / "out"
    assert main(["replay", str(config), "--out", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "aisim: error: t.csv:2.arrival_s: expected a finite number in 0.0..4294967.296, "
        "got 1e+306\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("load", "message"),
    [
        (
            {"type": "poisson", "rate_rps": 1e-307},
            "traffic.load.rate_rps: expected a finite number in 1e-06..1000000000.0, got 1e-307",
        ),
        (
            {"type": "constant", "rate_rps": 1e10},
            "traffic.load.rate_rps: expected a finite number in 1e-06..1000000000.0, "
            "got 10000000000.0",
        ),
        (
            {"type": "concurrency", "users": 1, "think_ms": 1e308},
            "traffic.load.think_ms: expected a finite number in 0.0..4294967296.0, got 1e+308",
        ),
    ],
)
def test_rates_and_think_times_are_bounded(load: dict[str, Any], message: str) -> None:
    assert error(synthetic(load)) == message


def test_the_slowest_rate_is_allowed() -> None:
    # 1e-6 rps: arrivals at 0, 1e9 and 2e9 ms, all within 2**32 ms.
    summary = run_replay(synthetic({"type": "constant", "rate_rps": 1e-6})).summary
    assert summary["completed_requests"] == 3


def test_poisson_arrivals_past_the_time_limit_are_refused() -> None:
    config = synthetic({"type": "constant", "rate_rps": 1e-6})
    config["traffic"]["source"]["num_requests"] = 6
    # Constant gaps of 1000 / 1e-6 = 1e9 ms: request 5 (the sixth) arrives at 5e9 ms > 2**32.
    assert error(config) == (
        "traffic.load: request '5' would arrive at 5e+09 ms or later, after the limit of "
        "4294967296 ms (2**32 ms, about 49.7 days); shorten the trace, its time_scale or its "
        "delays, or raise the rate"
    )


def test_time_scale_cannot_push_arrivals_past_the_limit() -> None:
    rows = [{"input_length": 5, "output_length": 2, "timestamp": 4_000_000}]
    config = inline(rows, {"type": "trace_timestamps", "time_scale": 2000})
    assert error(config).startswith(
        "traffic.load: request '0' would arrive at 8e+09 ms or later, after the limit"
    )


def test_agentic_delays_along_a_chain_are_summed_against_the_limit() -> None:
    rows = [
        {"request_id": "a", "input_length": 5, "output_length": 2, "delay_ms": 3e9},
        {
            "request_id": "b",
            "input_length": 5,
            "output_length": 2,
            "wait_for": ["a"],
            "delay_ms": 2e9,
        },
    ]
    # a arrives at 3e9 ms; b at least 2e9 ms after a finishes: 5e9 ms > 2**32 ms.
    assert error(inline(rows)).startswith(
        "traffic.load: request 'b' would arrive at 5e+09 ms or later, after the limit"
    )


def test_ttft_keeps_its_value_at_the_latest_allowed_arrival(tmp_path: Path) -> None:
    # At 2**32 ms float64 resolves 2**-20 ms, so prefill 10 ms + nothing queued = TTFT 10 ms
    # exactly; at 1e18 ms (accepted before) the spacing is 128 ms and TTFT came out 0.
    config = trace(
        tmp_path, "t.jsonl", '{"timestamp": 4294967296, "input_length": 5, "output_length": 2}\n'
    )
    summary = run_replay(config).summary
    assert summary["mean_ttft_ms"] == 10.0
    assert summary["mean_e2e_latency_ms"] == 15.0
    config = trace(
        tmp_path, "u.jsonl", '{"timestamp": 1e18, "input_length": 5, "output_length": 2}\n'
    )
    assert error(config) == (
        "u.jsonl:1.timestamp: expected a finite number in 0.0..4294967296.0, got 1e+18"
    )


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("delay_ms", 1e300, "expected a finite number in 0.0..4294967296.0, got 1e+300"),
        ("timestamp", -1, "expected a finite number in 0.0..4294967296.0, got -1.0"),
    ],
)
def test_row_times_are_bounded(field: str, value: float, message: str) -> None:
    rows = [{"input_length": 5, "output_length": 2, field: value}]
    assert error(inline(rows)) == f"traffic.source.requests[0].{field}: {message}"


@pytest.mark.parametrize(
    ("section", "field", "message"),
    [
        (
            "timing",
            "decode_ms",
            "engine.workers.aggregated.timing.decode_ms: expected a finite number in "
            "0.0..4294967296.0, got 1e+300",
        ),
        (
            "simulation",
            "horizon_ms",
            "simulation.horizon_ms: expected a finite number in 0.0..4294967296.0, got 1e+300",
        ),
        (
            "kv_transfer",
            "latency_ms",
            "engine.kv_transfer.latency_ms: expected a finite number in 0.0..4294967296.0, "
            "got 1e+300",
        ),
        (
            "kv_transfer",
            "kv_bytes_per_token",
            "engine.kv_transfer.kv_bytes_per_token: expected a finite number in "
            "0.0..1099511627776.0, got 1e+300",
        ),
    ],
)
def test_engine_times_are_bounded(section: str, field: str, message: str) -> None:
    config = inline([{"input_length": 5, "output_length": 2}])
    if section == "timing":
        config["engine"]["workers"]["aggregated"]["timing"] = {**FIXED, field: 1e300}
    elif section == "simulation":
        config["simulation"] = {field: 1e300}
    else:
        config["engine"]["kv_transfer"] = {field: 1e300}
    assert error(config) == message


def test_more_hash_ids_than_prompt_blocks_are_refused(tmp_path: Path) -> None:
    # 32 tokens in blocks of 16 are 2 blocks; a third hash names a block the prompt lacks.
    row = {"timestamp": 0, "input_length": 32, "output_length": 2, "hash_ids": [1, 2, 3]}
    config = trace(tmp_path, "t.jsonl", json.dumps(row) + "\n")
    assert error(config) == (
        "t.jsonl:1.hash_ids: 3 block hashes but input_length 32 fills only 2 blocks of "
        "hash_block_tokens 16"
    )
    # 33 tokens are 3 blocks (the last partial): 3 hashes are fine.
    row["input_length"] = 33
    (tmp_path / "t.jsonl").write_text(json.dumps(row) + "\n")
    assert run_replay(config).summary["completed_requests"] == 1


@pytest.mark.parametrize(
    ("row", "message"),
    [
        (
            "0,1_000,2",
            "t.csv:2.prompt_tokens: expected an integer (ASCII digits, optional "
            "leading '-', at most 19 digits), got '1_000'",
        ),
        (
            "0,+5,2",
            "t.csv:2.prompt_tokens: expected an integer (ASCII digits, optional "
            "leading '-', at most 19 digits), got '+5'",
        ),
        (
            "0, 3,2",
            "t.csv:2.prompt_tokens: expected an integer (ASCII digits, optional "
            "leading '-', at most 19 digits), got ' 3'",
        ),
        (
            "0,5,٣",
            "t.csv:2.output_tokens: expected an integer (ASCII digits, optional "
            "leading '-', at most 19 digits), got '٣'",
        ),
        ("nan,5,2", "t.csv:2.arrival_s: expected a decimal number like 12, -0.5 or 1e3, got 'nan'"),
        ("1_0,5,2", "t.csv:2.arrival_s: expected a decimal number like 12, -0.5 or 1e3, got '1_0'"),
        ("-1,5,2", "t.csv:2.arrival_s: expected a finite number in 0.0..4294967.296, got -1.0"),
        ("0,-5,2", "t.csv:2.prompt_tokens: expected an integer in 1..16777216, got -5"),
    ],
)
def test_csv_numbers_are_strict(tmp_path: Path, row: str, message: str) -> None:
    config = trace(tmp_path, "t.csv", f"arrival_s,prompt_tokens,output_tokens\n{row}\n")
    assert error(config) == message


def test_plain_csv_numbers_still_read(tmp_path: Path) -> None:
    config = trace(tmp_path, "t.csv", "arrival_s,prompt_tokens,output_tokens\n0.5,005,2\n1e1,5,2\n")
    assert run_replay(config).summary["completed_requests"] == 2


def test_an_integer_too_big_for_a_float_is_reported_not_a_traceback() -> None:
    # Found by the fuzz campaign: 10**400 (a valid JSON/YAML integer) as a hash id made the
    # error message itself raise OverflowError (it formatted the number through float).
    rows = [{"input_length": 32, "output_length": 2, "hash_ids": [10**400]}]
    assert error(inline(rows)) == (
        "traffic.source.requests[0].hash_ids[0]: expected an integer in 0..4611686018427387903, "
        "got 1e+400"
    )


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        ("t.csv", "arrival_s,prompt_tokens,output_tokens\n0,5,2\nnan,5,2\n", "t.csv:3.arrival_s"),
        ("t.csv", "arrival_s,prompt_tokens,output_tokens\n0,5\n", "t.csv:2: expected 3 columns"),
        (
            "t.jsonl",
            '{"input_length": 5, "output_length": 2}\n{"input_length": 5, "output_length": 0}\n',
            "t.jsonl:2.output_length",
        ),
    ],
)
def test_a_bad_row_closes_the_trace_file_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str, message: str
) -> None:
    # CI once saw "ResourceWarning: unclosed file t.csv" raised inside a later test: the reader
    # generator abandoned by the error was left to the cyclic garbage collector, which may run
    # the file object's own finalizer first. The file must be closed when the error leaves.
    from aisim.traffic._trace_cache import TRACES

    opened: list[Any] = []
    open_text = TRACES.open_text

    def recording_open_text(file: Path, newline: str | None) -> Any:
        opened.append(open_text(file, newline))
        return opened[-1]

    monkeypatch.setattr(TRACES, "open_text", recording_open_text)
    gc.disable()
    try:
        assert message in error(trace(tmp_path, name, text))
        assert opened and all(handle.closed for handle in opened)
    finally:
        gc.enable()
