"""Malformed inputs that used to escape as Python errors or be silently accepted: every one is
a ``ConfigError`` naming where the problem is (file and line, or the full field path)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aisim import ConfigError
from aisim.config import run_replay


def engine(extra: dict[str, Any] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {
        "workers": {
            "aggregated": {
                "kv_cache": {"capacity": {"type": "fixed", "blocks": 100}},
                "timing": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0},
            }
        }
    }
    block.update(extra or {})
    return block


def trace_config(path: Path) -> dict[str, Any]:
    return {"traffic": {"source": {"type": "trace", "path": str(path)}}, "engine": engine()}


def test_a_jsonl_trace_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    good = b'{"timestamp": 0, "input_length": 5, "output_length": 2}\n'
    trace.write_bytes(good + good + b'{"timestamp": 1, "input_length": 5\xff}\n')
    with pytest.raises(ConfigError, match=r"t\.jsonl:3: not UTF-8 text \(byte 0xff"):
        run_replay(trace_config(trace))


def test_a_csv_trace_that_is_not_utf8_names_the_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.csv"
    trace.write_bytes(b"arrival_s,prompt_tokens,output_tokens\n0.0,5,2\n0.1,\xe9,2\n")
    with pytest.raises(ConfigError, match=r"t\.csv:3: not UTF-8 text \(byte 0xe9"):
        run_replay(trace_config(trace))


def test_an_empty_csv_trace_says_so(tmp_path: Path) -> None:
    """It used to say '... got None (NoneType)'."""
    trace = tmp_path / "t.csv"
    trace.write_bytes(b"")
    with pytest.raises(ConfigError) as caught:
        run_replay(trace_config(trace))
    assert str(caught.value) == (
        "t.csv:1: expected the header arrival_s,prompt_tokens,output_tokens, got an empty file"
    )


def test_a_byte_order_mark_does_not_break_the_header(tmp_path: Path) -> None:
    # Spreadsheet exports start with a UTF-8 BOM; the rows are still the same requests.
    trace = tmp_path / "t.csv"
    trace.write_bytes(b"\xef\xbb\xbfarrival_s,prompt_tokens,output_tokens\r\n0.0,100,64\r\n")
    result = run_replay(trace_config(trace))
    # One request of 100 in / 64 out at X = 10, Y = 5: E2E = 10 + 63 * 5.
    assert result.summary["mean_e2e_latency_ms"] == 325.0
    jsonl = tmp_path / "t.jsonl"
    jsonl.write_bytes(b'\xef\xbb\xbf{"timestamp": 0, "input_length": 100, "output_length": 64}\n')
    assert run_replay(trace_config(jsonl)).summary["mean_e2e_latency_ms"] == 325.0


def test_csv_errors_name_the_physical_line(tmp_path: Path) -> None:
    # A blank line 3 is skipped; the bad row is line 4 of the file.
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0.0,5,2\n\n0.1,5\n")
    with pytest.raises(ConfigError, match=r"t\.csv:4: expected 3 columns, got 2"):
        run_replay(trace_config(trace))


@pytest.mark.parametrize(
    ("transfer", "message"),
    [
        (
            {"latency_ms": -1},
            r"engine\.kv_transfer\.latency_ms: expected a finite number in 0\.0\.\.4294967296\.0, got -1\.0",
        ),
        (
            {"bandwidth_bytes_per_s": 0},
            r"engine\.kv_transfer\.bandwidth_bytes_per_s: expected a finite number in 1\.0\.\.1e\+20",
        ),
        (
            {"kv_bytes_per_token": float("nan")},
            r"engine\.kv_transfer\.kv_bytes_per_token: expected a finite number",
        ),
    ],
)
def test_kv_transfer_fields_are_checked_on_an_aggregated_deployment(
    transfer: dict[str, Any], message: str
) -> None:
    config = {
        "traffic": {
            "source": {"type": "agentic", "requests": [{"input_length": 5, "output_length": 2}]}
        },
        "engine": engine({"kv_transfer": transfer}),
    }
    with pytest.raises(ConfigError, match=message):
        run_replay(config)


def test_time_scale_stretches_timestamps_but_not_delays() -> None:
    # time_scale 0.5: the root's timestamp 100 -> 50, plus its own delay 50 -> arrives at 100
    # (not (100 + 50) x 0.5 = 75). One token: done at 110. The child's delay of 20 is a
    # duration too: it arrives at 130 and finishes at 140.
    requests = [
        {
            "request_id": "root",
            "input_length": 5,
            "output_length": 1,
            "timestamp": 100,
            "delay_ms": 50,
        },
        {"input_length": 5, "output_length": 1, "wait_for": ["root"], "delay_ms": 20},
    ]
    config = {
        "traffic": {
            "source": {"type": "agentic", "requests": requests},
            "load": {"type": "trace_timestamps", "time_scale": 0.5},
        },
        "engine": engine(),
    }
    result = run_replay(config)
    assert result.columns["arrival_ms"] == [100.0, 130.0]
    assert result.columns["last_token_ms"] == [110.0, 140.0]
