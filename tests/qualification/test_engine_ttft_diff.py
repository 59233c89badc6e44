"""The request-level TTFT diff classes requests by what the engine did when they arrived and
with their prompt, splits the mean TTFT error by class, and replays with the step prices
scaled: hand-derived classes and shares on a small run, the scaled pricer on a fake model, and
the unscaled replay against the scorer's on a committed recording (no vLLM needed)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from qualification.engine import load_recording
from qualification.engine._score import score_recording
from qualification.engine.ttft_diff import (
    _ScaledPricer,
    class_table,
    diff_recording,
    main,
    replay_first_passes,
    request_classes,
)

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "evidence" / "engine" / "vllm-cpu-quiet-llama-4x256"


def _run() -> tuple[pd.DataFrame, pd.DataFrame]:
    # a arrives at an idle engine (no step covers 0.0), prefills alone in [0.5, 10);
    # b arrives at 5.0 during a's step and joins a's decode in [10, 12) (mixed; first token
    # at 12); c arrives at 11.0 during that step, its prompt starts beside a and b in
    # [12.1, 14) and ends in [14, 16) (first token at 16: chunked); d arrives at 20.0, after
    # every step, and prefills alone in [20.5, 25).
    steps = pd.DataFrame(
        {
            "start_ms": [0.5, 10.0, 12.1, 14.0, 20.5],
            "end_ms": [10.0, 12.0, 14.0, 16.0, 25.0],
            "num_decode_requests": [0, 1, 2, 2, 0],
            "request_ids": ["a", "a;b", "a;b;c", "a;b;c", "d"],
        }
    )
    requests = pd.DataFrame(
        {
            "request_id": ["a", "b", "c", "d"],
            "arrival_ms": [0.0, 5.0, 11.0, 20.0],
            "first_token_ms": [10.0, 12.0, 16.0, 25.0],
        }
    )
    return requests, steps


def test_request_classes_hand_derived() -> None:
    requests, steps = _run()
    classes = request_classes(requests, steps)
    assert {rid: (row["arrived"], row["first_step"]) for rid, row in classes.items()} == {
        "a": ("idle", "prefill"),
        "b": ("busy", "mixed"),
        "c": ("busy", "mixed-chunked"),
        "d": ("idle", "prefill"),
    }
    assert [classes[rid]["wait_ms"] for rid in "abcd"] == pytest.approx([0.5, 5.0, 1.1, 0.5])
    assert [classes[rid]["first_step_ms"] for rid in "abcd"] == pytest.approx([9.5, 2.0, 1.9, 4.5])


def test_a_run_without_steps_is_unknown() -> None:
    requests, steps = _run()
    classes = request_classes(requests, steps.iloc[0:0])
    assert {row["arrived"] for row in classes.values()} == {"unknown"}
    assert {row["first_step"] for row in classes.values()} == {"unknown"}
    assert all(row["wait_ms"] is None for row in classes.values())


def test_class_shares_add_up_to_the_pooled_error() -> None:
    requests, steps = _run()
    classes = request_classes(requests, steps)
    # measured TTFT a 10, b 7, c 5, d 5 (27 in all); replay 9, 5, 6, 5 (25): pooled -2 / 27.
    measured = {"a": 10.0, "b": 7.0, "c": 5.0, "d": 5.0}
    predicted = {"a": 9.0, "b": 5.0, "c": 6.0, "d": 5.0}
    rows = [
        {**classes[rid], "measured_ms": measured[rid], "predicted_ms": predicted[rid]}
        for rid in "abcd"
    ]
    table = {(row["arrived"], row["first_step"]): row for row in class_table(rows)}
    assert list(table) == [("busy", "mixed"), ("busy", "mixed-chunked"), ("idle", "prefill")]
    assert table[("busy", "mixed")]["error_pct"] == pytest.approx(-200.0 / 7.0)
    assert table[("busy", "mixed")]["share_pts"] == pytest.approx(-200.0 / 27.0)
    assert table[("busy", "mixed-chunked")]["share_pts"] == pytest.approx(100.0 / 27.0)
    idle = table[("idle", "prefill")]
    assert idle["requests"] == 2
    assert (idle["measured_ms"], idle["predicted_ms"]) == pytest.approx((7.5, 7.0))
    assert idle["error_pct"] == pytest.approx(-100.0 / 15.0)
    assert (idle["engine_wait_ms"], idle["engine_first_step_ms"]) == pytest.approx((0.5, 7.0))
    assert sum(row["share_pts"] for row in table.values()) == pytest.approx(-200.0 / 27.0)


def test_replay_first_passes_hand_derived() -> None:
    # Replay's passes ended (emitted tokens) at 10, 20, 30, 45 and 60 ms. w arrived at 15, while
    # the pass ending at 20 ran, and got its first token at 30: its pass ran 20-30 (wait 5,
    # pass 10). x got its first token at 20 and arrived at 12, after the pass before ended (at
    # 10): replay starts a pass when a request reaches an idle engine, so 12-20 (0, 8). z
    # arrived at 50, after the pass ending at 45, first token at 60: (0, 10).
    found = replay_first_passes(
        {"w": 15.0, "x": 12.0, "z": 50.0},
        {"w": 30.0, "x": 20.0, "z": 60.0},
        [10.0, 20.0, 20.0, 30.0, 45.0, 60.0],
    )
    assert found["w"] == pytest.approx((5.0, 10.0))
    assert found["x"] == pytest.approx((0.0, 8.0))
    assert found["z"] == pytest.approx((0.0, 10.0))


class _Flat:
    """A fake step model: every pass costs 10 ms."""

    name = "flat"
    prices_speculation_natively = True
    supports_draft_length = False
    plain_decode_model: Any = None

    def estimate_forward_pass_time_ms(self, metrics: Any, draft_length: int | None = None) -> float:
        return 10.0


def test_scaled_pricer_scales_by_what_the_pass_carries() -> None:
    inner = _Flat()
    inner.plain_decode_model = _Flat()
    pricer = _ScaledPricer(inner, 1.5, 2.0)
    decode = SimpleNamespace(num_prefill_requests=0, num_decode_requests=4)
    mixed = SimpleNamespace(num_prefill_requests=1, num_decode_requests=4)
    assert pricer.estimate_forward_pass_time_ms(decode) == pytest.approx(15.0)
    assert pricer.estimate_forward_pass_time_ms(mixed) == pytest.approx(20.0)
    assert pricer.estimate_forward_pass_time_ms([decode, mixed]) == pytest.approx(20.0)
    assert pricer.plain_decode_model is not None
    assert pricer.plain_decode_model.estimate_forward_pass_time_ms(decode) == pytest.approx(15.0)


def test_unscaled_replay_is_the_scored_one() -> None:
    recording = load_recording(RECORDING)
    report, _ = score_recording(recording, recording.grid)
    diff = diff_recording(recording)
    assert [run["ttft_mean_error_pct"]["replayed"] for run in diff["runs"]] == pytest.approx(
        [run["ttft"]["mean_error_pct"] for run in report["runs"]]
    )
    # Every request of every served run is in exactly one class.
    assert sum(row["requests"] for row in diff["classes"]) == sum(
        len(run.requests) for run in recording.served
    )
    pooled = sum(row["share_pts"] for row in diff["classes"])
    measured = sum(row["measured_ms"] * row["requests"] for row in diff["classes"])
    predicted = sum(row["predicted_ms"] * row["requests"] for row in diff["classes"])
    assert pooled == pytest.approx((predicted - measured) / measured * 100.0)
    # Replay's wait and first pass cover its TTFT for the classes that have them (one pass).
    for row in diff["classes"]:
        if row["first_step"] in ("prefill", "mixed"):
            assert row["replay_wait_ms"] + row["replay_first_pass_ms"] == pytest.approx(
                row["predicted_ms"]
            )


def test_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(RECORDING)]) == 0
    out = capsys.readouterr().out
    assert "| busy | mixed |" in out
    assert "| served-1 |" in out
    assert main([str(tmp_path / "nope")]) == 2
    assert "not found; expected an engine recording directory" in capsys.readouterr().err
