"""Where the step model's misses come from: hand-derived figures on small inputs, an invariant
of the grid's resampling, and the CLI on a committed recording (no vLLM needed)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from qualification.engine import StepTable
from qualification.engine.step_causes import (
    bootstrap_spread_pct,
    line_misfit_by_count,
    main,
    pass_counts,
    passes_beside,
    pooled_decode,
    prefill_excess,
    prompt_step_lines,
    prompt_steps,
    relative_to_run,
    served_misfit_by_count,
    steps_since_prompt,
)

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "evidence" / "engine" / "vllm-cpu-quiet-llama-4x256-ngram"


def _row(kind: str, measured: float, price: float, **shape: int) -> dict[str, Any]:
    values = {
        "decode_requests": 1 if kind.startswith("decode") or kind == "mixed" else 0,
        "decode_kv_tokens": 100,
        "prefill_requests": 1 if kind in ("prefill", "mixed") else 0,
        "prefill_tokens": 0,
        "draft_tokens": 0,
    }
    values.update(shape)
    return {"kind": kind, "measured_ms": measured, "price_ms": price, **values}


@pytest.mark.parametrize(
    ("run_index", "repetitions", "passes"),
    [
        # Runs 1 and 2 (0-based 0, 1) follow passes 0 and 1; the third, after the last of
        # three passes; with five passes it sits between passes 2 and 3.
        (0, 3, {0, 1}),
        (1, 3, {1, 2}),
        (2, 3, {2}),
        (2, 5, {2, 3}),
        (0, 1, {0}),
    ],
)
def test_passes_beside_a_run(run_index: int, repetitions: int, passes: set[int]) -> None:
    assert passes_beside(run_index, repetitions) == passes


def test_steps_since_the_last_prompt_step() -> None:
    rows = [
        _row("decode", 1, 1),
        _row("prefill", 1, 1),
        _row("decode", 1, 1),
        _row("decode", 1, 1),
        _row("mixed", 1, 1),
        _row("decode", 1, 1),
    ]
    assert steps_since_prompt(rows) == [None, None, 1, 2, None, 1]


def test_relative_to_run_takes_the_run_s_decode_median_out() -> None:
    # Decode steps at measured / price 1.2, 0.9, 1.1: the run's speed 1.1. A prefill step of
    # 22 ms priced 20 (1.1) is 1.0 relative to it; a step without a price has none.
    rows = [
        _row("decode", 12, 10),
        _row("decode", 9, 10),
        _row("decode-drafted", 11, 10),
        _row("prefill", 22, 20),
        _row("prefill", 5, 0),
    ]
    assert relative_to_run(rows) == [
        pytest.approx(12 / 11),
        pytest.approx(9 / 11),
        pytest.approx(1.0),
        pytest.approx(1.0),
        None,
    ]


def test_served_misfit_by_count_by_hand() -> None:
    rows = [
        _row("decode", 10, 11, decode_requests=1),  # +10 %
        _row("decode", 10, 9, decode_requests=1),  # -10 %
        _row("decode", 10, 12, decode_requests=1),  # +20 %: the median of three is +10 %
        _row("decode", 20, 15, decode_requests=2),  # -25 %
        _row("decode-drafted", 20, 30, decode_requests=2),  # another kind: left out
    ]
    assert served_misfit_by_count(rows, 0) == {1: pytest.approx(10.0), 2: pytest.approx(-25.0)}
    # With SD on the main kind is the drafted round.
    assert served_misfit_by_count(rows, 3) == {2: pytest.approx(50.0)}


def test_line_misfit_by_count_by_hand() -> None:
    # A line pricing every step 10 ms, against the grid's steps at B = 1 of 8, 10 and 12.5 ms
    # (+25, 0, -20 %: median 0) and at B = 2 of 20 ms (-50 %).
    frame = pd.DataFrame(
        {
            "batch_size": [1, 1, 1, 2],
            "total_kv_tokens": [100, 200, 300, 400],
            "wall_ms": [8.0, 10.0, 12.5, 20.0],
        }
    )
    table = SimpleNamespace(timed=lambda phase: frame)
    model = SimpleNamespace(decode=SimpleNamespace(price=lambda count, kv, coverage: 10.0))
    assert line_misfit_by_count(model, table, 0) == {1: 0.0, 2: -50.0}


def test_prefill_excess_at_the_run_s_speed() -> None:
    # One decode step at measured / price 1.2 sets the run's speed; a prefill-only step of
    # 36 ms priced 25 ms is 36 / 1.2 - 25 = +5 ms over its price at the table's speed.
    rows = [_row("decode", 12, 10), _row("prefill", 36, 25), _row("mixed", 50, 40)]
    assert prefill_excess(rows) == [pytest.approx(5.0)]
    assert prefill_excess(rows[1:]) == []


def test_prompt_steps_at_the_local_speed_by_hand() -> None:
    # Two decode steps at measured / price 1.2 set the local speed of every step near them.
    # A prefill-only step after 300 ms idle, measured 36 ms, priced 30 with a 5 ms wake cost:
    # error (30 x 1.2 - 36) / 36 = 0 %, and 36 / 1.2 - (30 - 5) = +5 ms beyond its price
    # without the wake. One right after another step (1 ms idle) at a new token count,
    # measured 24, priced 25 with the same wake: +25 %, 24 / 1.2 - 20 = 0 ms. A mixed step at
    # a new count, measured 48, priced 50: +25 %, 48 / 1.2 - 50 = -10 ms.
    def prompt(kind: str, measured: float, price: float, **extra: Any) -> dict[str, Any]:
        return {**_row(kind, measured, price), **extra}

    rows = [
        _row("decode", 12, 10),
        prompt("prefill", 36, 30, idle_before_ms=300.0, created=False, wake_ms=5.0),
        prompt("prefill", 24, 25, idle_before_ms=1.0, created=True, wake_ms=5.0),
        prompt("mixed", 48, 50, idle_before_ms=0.1, created=True, wake_ms=0.0),
        _row("decode", 24, 20),
    ]
    found = prompt_steps(rows)
    assert [(item["kind"], item["woken"], item["created"]) for item in found] == [
        ("prefill", True, False),
        ("prefill", False, True),
        ("mixed", False, True),
    ]
    assert [item["error_pct"] for item in found] == pytest.approx([0.0, 25.0, 25.0])
    assert [item["unwoken_excess_ms"] for item in found] == pytest.approx([5.0, 0.0, -10.0])
    assert prompt_step_lines(found) == [
        "- prefill steps at the local speed, median price error (steps): at a token count new "
        "to the cache +25.0 % (1), at a count run before +0.0 % (1)",
        "- mixed steps at the local speed, median price error (steps): at a token count new "
        "to the cache +25.0 % (1), at a count run before - (0)",
        "- prefill-only steps, measured / the local speed - (price - the wake cost charged), "
        "median (steps): after more than 5 ms idle +5.00 ms (1), after less +0.00 ms (1); the "
        "wake cost charged 5.00 ms",
    ]
    # Without decode steps near it a step has no local speed: left out.
    assert prompt_steps(rows[1:4]) == []


def test_pooled_decode_bins_by_hand() -> None:
    # One run: a prompt step, then SD rounds (d = 3) at B = 1 (measured / price 1.0, 1.2,
    # 0.8) and one at B = 2 (1.1) that emitted 4 tokens: 2 of its 6 drafts accepted.
    rows = [
        _row("prefill", 30, 30),
        _row("decode-drafted", 10, 10, decode_kv_tokens=50, draft_tokens=3),
        _row("decode-drafted", 12, 10, decode_kv_tokens=150, draft_tokens=3),
        _row("decode-drafted", 8, 10, decode_kv_tokens=150, draft_tokens=3),
        _row("decode-drafted", 11, 10, decode_requests=2, decode_kv_tokens=300, draft_tokens=6),
    ]
    steps = pd.DataFrame({"tokens_emitted": [1, 4, 1, 4, 4]})
    found = pooled_decode([(rows, steps)])
    # Run median of measured / price over the four decode steps: (1.0 + 1.1) / 2 = 1.05.
    speed = 1.05
    assert found["batch size"] == {
        "0-1": (3, pytest.approx(1.0 / speed)),
        "1-2": (1, pytest.approx(1.1 / speed)),
    }
    assert found["past KV per request"] == {
        "128-256": (3, pytest.approx(1.1 / speed)),  # 150, 150, 300 / 2
        "32-64": (1, pytest.approx(1.0 / speed)),
    }
    assert found["steps since a prompt step (B = 1)"] == {
        "0-1": (1, pytest.approx(1.0 / speed)),
        "1-2": (1, pytest.approx(1.2 / speed)),
        "2-3": (1, pytest.approx(0.8 / speed)),
    }
    # Accepted: 4 - 1 = 3 of 3 (all), 1 - 1 = 0 (none), 4 - 1 = 3 (all), 4 - 2 = 2 of 6.
    assert found["drafts accepted (SD rounds)"] == {
        "all": (2, pytest.approx(0.9 / speed)),
        "none": (1, pytest.approx(1.2 / speed)),
        "some": (1, pytest.approx(1.1 / speed)),
    }


def _identical_table(tmp_path: Path) -> StepTable:
    # Two timed repetitions of every point with the same time: any resample refits the same.
    rows = []
    for phase, count, tokens, ms in [
        ("decode", 1, 100, 10.0),
        ("decode", 1, 300, 20.0),
        ("decode", 2, 400, 25.0),
        ("prefill", 1, 100, 30.0),
        ("prefill", 1, 300, 70.0),
    ]:
        for rep in (0, 1):
            rows.append(
                {
                    "phase": phase,
                    "point_id": f"{phase}-b{count}-c{tokens}",
                    "batch_size": count,
                    "context_tokens": tokens // count,
                    "total_kv_tokens": tokens if phase == "decode" else 0,
                    "scheduled_tokens": count if phase == "decode" else tokens,
                    "num_draft_tokens": 0,
                    "repetition": rep,
                    "warmup": False,
                    "start_ms": 0.0,
                    "wall_ms": ms,
                    "cpu_ms": ms,
                    "accepted_tokens": 0,
                }
            )
    return StepTable(tmp_path, pd.DataFrame(rows), {})


def test_bootstrap_spread_is_zero_when_every_point_repeats_its_time(tmp_path: Path) -> None:
    table = _identical_table(tmp_path)
    rows = [_row("decode", 15, 15, decode_kv_tokens=200), _row("decode", 24, 24)]
    assert bootstrap_spread_pct(table, 0, rows, rounds=5) == pytest.approx(0.0, abs=1e-9)
    # No served decode step: no shape to price.
    assert math.isnan(bootstrap_spread_pct(table, 0, [_row("prefill", 1, 1)], rounds=5))


def test_pass_counts_need_an_interleaved_grid(tmp_path: Path) -> None:
    assert pass_counts([], _identical_table(tmp_path)) is None


def test_cli_on_a_committed_recording(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(RECORDING), "--rounds", "2"]) == 0
    out = capsys.readouterr().out
    assert "### vllm-cpu-quiet-llama-4x256-ngram" in out
    assert "on the grid's own timed steps B = 1:" in out
    assert "beside" in out and "away" in out
    assert "### Pooled over 1 recording(s)" in out
    assert "Prompt steps at the local speed:" in out


@pytest.mark.parametrize("rounds", ["0", "10001", "100000000000"])
def test_cli_refuses_a_bad_round_count(rounds: str, capsys: pytest.CaptureFixture[str]) -> None:
    # 10^11 resamples used to run on for ever: the count is bounded before any recording loads.
    assert main([str(RECORDING), "--rounds", rounds]) == 2
    assert capsys.readouterr().err == (
        f"error: --rounds: expected an integer in 1..10000, got {rounds}\n"
    )


def test_cli_refuses_a_round_count_that_is_not_an_integer(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # int() took '1_0' as 10; the strict integer syntax of aisim's own flags is used instead.
    with pytest.raises(SystemExit) as exit_info:
        main([str(RECORDING), "--rounds", "1_0"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err == (
        "python -m qualification.engine.step_causes: error: argument --rounds: expected an "
        "integer (ASCII digits, optional leading '-', at most 19 digits), got '1_0' (see python "
        "-m qualification.engine.step_causes --help)\n"
    )
