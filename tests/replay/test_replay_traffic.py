"""Traffic sources and loads: trace files, agentic graphs, closed loops, synthetic draws."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from aisim import ConfigError
from aisim.config import run_replay

DATA = Path(__file__).parent / "data"
BENCH_TRACE = (
    Path(__file__).resolve().parents[2] / "qualification" / "bench" / "trace_n4000_q8_s7.csv"
)


def engine(backend: str = "vllm") -> dict[str, Any]:
    return {
        "backend": backend,
        "workers": {
            "aggregated": {
                "kv_cache": {"capacity": {"type": "fixed", "blocks": 4096}},
                "timing": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0},
            }
        },
    }


def agentic(requests: list[dict[str, Any]]) -> dict[str, Any]:
    return {"traffic": {"source": {"type": "agentic", "requests": requests}}, "engine": engine()}


def test_agentic_children_arrive_after_their_parents_plus_delay() -> None:
    # a: [0,10] prefill, [10,15] decode -> done at 15. b waits for a, 100 ms delay: arrives 115,
    # done 130. c waits for a and b with no delay: arrives 130, done 145.
    requests = [
        {"request_id": "a", "input_length": 10, "output_length": 2},
        {
            "request_id": "b",
            "input_length": 10,
            "output_length": 2,
            "wait_for": ["a"],
            "delay_ms": 100,
        },
        {"request_id": "c", "input_length": 10, "output_length": 2, "wait_for": ["a", "b"]},
    ]
    frame = run_replay(agentic(requests)).requests
    assert list(frame["request_id"]) == ["a", "b", "c"]
    assert list(frame["arrival_ms"]) == [0.0, 115.0, 130.0]
    assert list(frame["last_token_ms"]) == [15.0, 130.0, 145.0]


def test_agentic_graph_from_a_jsonl_file(tmp_path: Path) -> None:
    rows = [
        {"request_id": 1, "input_length": 10, "output_length": 2, "timestamp": 5},
        {"request_id": 2, "input_length": 10, "output_length": 2, "wait_for": [1], "delay_ms": 1},
    ]
    (tmp_path / "graph.jsonl").write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    config = agentic([])
    config["traffic"]["source"] = {"type": "agentic", "path": "graph.jsonl"}
    (tmp_path / "replay.json").write_text(json.dumps(config))
    frame = run_replay(
        tmp_path / "replay.json"
    ).requests  # relative paths resolve beside the config
    assert list(frame["arrival_ms"]) == [5.0, 21.0]  # 1 ends at 5 + 15 = 20, then +1 ms


def test_dependency_cycles_and_unknown_ids_are_config_errors() -> None:
    cycle = [
        {"request_id": "a", "input_length": 1, "output_length": 1, "wait_for": ["b"]},
        {"request_id": "b", "input_length": 1, "output_length": 1, "wait_for": ["a"]},
    ]
    with pytest.raises(ConfigError, match="cycle"):
        run_replay(agentic(cycle))
    unknown = [{"request_id": "a", "input_length": 1, "output_length": 1, "wait_for": ["zz"]}]
    with pytest.raises(ConfigError, match=r"requests\[0\]\.wait_for\[0\]: unknown request_id"):
        run_replay(agentic(unknown))


def test_closed_loop_concurrency_chains_each_user() -> None:
    # One user, think 3 ms: each 10-in / 2-out request takes 15 ms, the next arrives 3 ms later.
    config = {
        "traffic": {
            "source": {
                "type": "synthetic",
                "num_requests": 3,
                "prompt_tokens": 10,
                "output_tokens": 2,
            },
            "load": {"type": "concurrency", "users": 1, "think_ms": 3},
        },
        "engine": engine(),
    }
    frame = run_replay(config).requests
    assert list(frame["arrival_ms"]) == [0.0, 18.0, 36.0]
    assert list(frame["e2e_latency_ms"]) == [15.0, 15.0, 15.0]


def _three_request_loop(tmp_path: Path, queue: str) -> Any:
    """Requests 0, 1, 2 with 10, 2 and 3 output tokens (16-token prompts) under 2 closed loops."""
    trace = tmp_path / "three.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,16,10\n0,16,2\n0,16,3\n")
    config = {
        "traffic": {
            "source": {"type": "trace", "path": str(trace)},
            "load": {"type": "concurrency", "users": 2, "queue": queue},
        },
        "engine": engine(),
    }
    return run_replay(config).requests


def test_shared_slots_keep_n_requests_in_flight(tmp_path: Path) -> None:
    # Prefill 10 ms, decode 5 ms, a mixed pass 15 ms. Requests 0 and 1 fill both slots at 0:
    # one prefill pass [0, 10] gives both their first token, one decode pass [10, 15] their
    # second, so request 1 (2 tokens) completes at 15 and its slot takes request 2 at once.
    # [15, 30] is mixed (2's prefill, 0's 3rd token): 2's first token at 30; decode passes end
    # at 35 and 40 (2 done: 3 tokens, E2E 25); 0 then decodes alone: tokens 6..10 at 45..65.
    frame = _three_request_loop(tmp_path, "shared")
    assert list(frame["arrival_ms"]) == [0.0, 0.0, 15.0]
    assert list(frame["ttft_ms"]) == [10.0, 10.0, 15.0]
    assert list(frame["last_token_ms"]) == [65.0, 15.0, 40.0]


def test_per_user_loops_wait_for_their_own_request(tmp_path: Path) -> None:
    # The same requests, per user: request 2 belongs to user 0 and waits for request 0, which
    # decodes alone after 15 (tokens 3..10 at 20..55); 2 arrives at 55, its first token at 65,
    # then 70 and 75. Only one request is in flight from 15 to 75 although two users exist.
    frame = _three_request_loop(tmp_path, "per_user")
    assert list(frame["arrival_ms"]) == [0.0, 0.0, 55.0]
    assert list(frame["last_token_ms"]) == [55.0, 15.0, 75.0]


def test_shared_slots_need_a_streamed_traffic() -> None:
    from aisim.config._traffic import build_traffic

    traffic = {
        "source": {"type": "synthetic", "num_requests": 3, "prompt_tokens": 4, "output_tokens": 2},
        "load": {"type": "concurrency", "users": 2, "queue": "shared"},
    }
    with pytest.raises(ConfigError, match=r"traffic\.load\.queue: 'shared' slots need"):
        build_traffic(traffic, None, stream=False)
    traffic["load"]["queue"] = "fifo"
    with pytest.raises(ConfigError, match=r"traffic\.load\.queue"):
        build_traffic(traffic, None)


def test_constant_rate_spaces_arrivals_exactly() -> None:
    config = {
        "traffic": {
            "source": {
                "type": "synthetic",
                "num_requests": 4,
                "prompt_tokens": 10,
                "output_tokens": 1,
            },
            "load": {"type": "constant", "rate_rps": 8},
        },
        "engine": engine(),
    }
    assert list(run_replay(config).requests["arrival_ms"]) == [0.0, 125.0, 250.0, 375.0]


def test_poisson_and_distributions_are_seeded() -> None:
    def make(seed: int) -> dict[str, Any]:
        return {
            "traffic": {
                "seed": seed,
                "source": {
                    "type": "synthetic",
                    "num_requests": 50,
                    "prompt_tokens": {"type": "uniform", "min": 10, "max": 200},
                    "output_tokens": {"type": "lognormal", "mean": 40, "std": 20, "max": 300},
                },
                "load": {"type": "poisson", "rate_rps": 20},
            },
            "engine": engine(),
        }

    first, again, other = run_replay(make(1)), run_replay(make(1)), run_replay(make(2))
    assert first.columns == again.columns
    assert first.columns["arrival_ms"] != other.columns["arrival_ms"]
    prompts = first.columns["prompt_tokens"]
    assert min(prompts) >= 10 and max(prompts) <= 200
    gaps = [
        b - a
        for a, b in zip(first.columns["arrival_ms"], first.columns["arrival_ms"][1:], strict=False)
    ]
    assert min(gaps) >= 0 and 20 < sum(gaps) / len(gaps) < 100  # mean 50 ms at 20 rps


def read_csv(path: Path) -> list[tuple[float, int, int]]:
    with path.open() as handle:
        rows = list(csv.DictReader(handle))
    return [(float(r["arrival_s"]), int(r["prompt_tokens"]), int(r["output_tokens"])) for r in rows]


def test_csv_trace_fixture() -> None:
    config = {
        "traffic": {"source": {"type": "trace", "path": str(DATA / "trace_head20.csv")}},
        "engine": engine(),
    }
    result = run_replay(config)
    expected = read_csv(DATA / "trace_head20.csv")
    assert result.summary["completed_requests"] == len(expected) == 20
    assert result.columns["prompt_tokens"] == [row[1] for row in expected]
    assert result.columns["output_tokens"] == [row[2] for row in expected]
    assert result.columns["emitted_tokens"] == [row[2] for row in expected]
    assert result.columns["arrival_ms"] == pytest.approx([row[0] * 1000.0 for row in expected])


def test_bench_csv_trace_head_matches_file() -> None:
    config = {
        "traffic": {"source": {"type": "trace", "path": str(BENCH_TRACE)}, "max_requests": 50},
        "engine": engine(),
    }
    result = run_replay(config)
    expected = read_csv(BENCH_TRACE)[:50]
    assert result.columns["prompt_tokens"] == [row[1] for row in expected]
    assert result.summary["completed_requests"] == 50


def test_mooncake_trace_fixture_with_time_scale() -> None:
    rows = [json.loads(line) for line in (DATA / "mooncake_head20.jsonl").read_text().splitlines()]
    config = {
        "traffic": {
            "source": {
                "type": "trace",
                "path": str(DATA / "mooncake_head20.jsonl"),
                "format": "mooncake",
            },
            "load": {"type": "trace_timestamps", "time_scale": 0.5},
        },
        "engine": engine(),
    }
    result = run_replay(config)
    assert result.columns["arrival_ms"] == [row["timestamp"] * 0.5 for row in rows]
    assert result.columns["prompt_tokens"] == [row["input_length"] for row in rows]
    assert result.summary["completed_requests"] == 20


def test_bad_trace_rows_name_the_line(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(
        '{"timestamp": 0, "input_length": 5, "output_length": 2}\n{"timestamp": 1, "input_length": 0, "output_length": 2}\n'
    )
    config = {"traffic": {"source": {"type": "trace", "path": str(trace)}}, "engine": engine()}
    with pytest.raises(
        ConfigError, match=r"t\.jsonl:2\.input_length: expected an integer in 1\.\.16777216, got 0"
    ):
        run_replay(config)
    bad_csv = tmp_path / "t.csv"
    bad_csv.write_text("arrival_s,prompt_tokens,output_tokens\n0.1,abc,3\n")
    config["traffic"]["source"]["path"] = str(bad_csv)
    with pytest.raises(
        ConfigError, match=r"t\.csv:2\.prompt_tokens: expected an integer \(ASCII digits"
    ):
        run_replay(config)


def test_horizon_reports_unfinished_requests_with_a_reason() -> None:
    # Request 0 ends at 15; request 1 arrives at 100, after the 50 ms horizon.
    config = agentic(
        [
            {"input_length": 10, "output_length": 2},
            {"input_length": 10, "output_length": 2, "timestamp": 100},
        ]
    )
    config["simulation"] = {"horizon_ms": 50}
    result = run_replay(config)
    assert result.summary["completed_requests"] == 1
    assert result.summary["not_completed_requests"] == 1
    assert result.summary["not_completed_reasons"] == {
        "not finished by simulation.horizon_ms (50.0 ms)": 1
    }
    assert list(result.requests["status"]) == ["completed", "not_completed"]


def test_csv_trace_cache_follows_the_content_and_hands_out_fresh_requests(tmp_path: Path) -> None:
    """Parsed CSV rows are reused across replays (sweeps), keyed by the file's content: a
    rewritten file is read again, and a load applied to one replay never leaks into the next."""
    trace = tmp_path / "t.csv"
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,10,3\n1,20,4\n", encoding="utf-8")
    source = {"type": "trace", "path": str(trace)}
    paced = run_replay(
        {
            "traffic": {"source": source, "load": {"type": "constant", "rate_rps": 4}},
            "engine": engine(),
        }
    )
    assert paced.columns["arrival_ms"] == [0.0, 250.0]
    again = run_replay({"traffic": {"source": source}, "engine": engine()})
    assert again.columns["arrival_ms"] == [0.0, 1000.0]
    trace.write_text("arrival_s,prompt_tokens,output_tokens\n0,10,3\n2,30,5\n", encoding="utf-8")
    rewritten = run_replay({"traffic": {"source": source}, "engine": engine()})
    assert rewritten.columns["arrival_ms"] == [0.0, 2000.0]
    assert rewritten.columns["prompt_tokens"] == [10, 30]
