"""The step-level diff classifies engine steps and prices them as replay does: hand-derived
prices on a small table, and the CLI on a committed recording (no vLLM needed)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

from qualification.engine import EngineStepModel, StepTable, load_recording
from qualification.engine.step_diff import (
    diff_run,
    error_by_output_length,
    main,
    priced_steps,
    step_kind,
    warmed_model,
)

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "evidence" / "engine" / "vllm-cpu-quiet-llama-4x256-ngram"
#: A grid with cached prefill steps (a known primitive-creation cost).
PINNED = ROOT / "evidence" / "engine" / "vllm-cpu-pinned-llama-4x256-b32-high"


@pytest.mark.parametrize(
    ("prefill", "decode", "drafts", "depth", "kind"),
    [
        (1, 0, 0, 0, "prefill"),
        (1, 2, 0, 0, "mixed"),
        (1, 2, 6, 3, "mixed"),
        (0, 2, 0, 0, "decode"),
        (0, 2, 6, 3, "decode-drafted"),
        (0, 2, 2, 3, "decode-partial"),
        (0, 2, 0, 3, "decode-undrafted"),
    ],
)
def test_step_kind(prefill: int, decode: int, drafts: int, depth: int, kind: str) -> None:
    assert step_kind(prefill, decode, drafts, depth) == kind


def _table(tmp_path: Path) -> StepTable:
    # Medians: decode B=1 at 100 / 300 tokens 10 / 20 ms; prefill 1 request at 100 / 300
    # tokens 30 / 70 ms (one timed row each, so the median is the row).
    rows = []
    for phase, per, ms in [("decode", 100, 10.0), ("decode", 300, 20.0)] + [
        ("prefill", 100, 30.0),
        ("prefill", 300, 70.0),
    ]:
        rows.append(
            {
                "phase": phase,
                "point_id": f"{phase}-b1-c{per}",
                "batch_size": 1,
                "context_tokens": per,
                "total_kv_tokens": per if phase == "decode" else 0,
                "scheduled_tokens": 1 if phase == "decode" else per,
                "num_draft_tokens": 0,
                "repetition": 0,
                "warmup": False,
                "start_ms": 0.0,
                "wall_ms": ms,
                "cpu_ms": ms,
                "accepted_tokens": 0,
            }
        )
    return StepTable(tmp_path, pd.DataFrame(rows), {})


def test_priced_steps_hand_derived(tmp_path: Path) -> None:
    model = EngineStepModel(_table(tmp_path), 0)
    steps = pd.DataFrame(
        {
            # prefill 200 tokens (price 50) measured 60 ms; mixed: decode at 200 (15) +
            # prefill 100 (30) - one step's overhead (the cheapest decode step, 10) = 35,
            # measured 36 ms after 4 ms idle; decode at 300 (20) in 22 ms.
            "start_ms": [0.0, 64.0, 100.0],
            "end_ms": [60.0, 100.0, 122.0],
            "num_prefill_requests": [1, 1, 0],
            "prefill_tokens": [200, 100, 0],
            "num_decode_requests": [0, 1, 1],
            "decode_kv_tokens": [0, 200, 300],
            "draft_tokens": [0, 0, 0],
        }
    )
    rows = priced_steps(steps, model, 2.0, 0)
    assert [row["kind"] for row in rows] == ["prefill", "mixed", "decode"]
    assert [row["measured_ms"] for row in rows] == pytest.approx([60.0, 36.0, 22.0])
    assert [row["prefill_price_ms"] for row in rows] == pytest.approx([50.0, 30.0, 0.0])
    assert [row["decode_price_ms"] for row in rows] == pytest.approx([0.0, 15.0, 20.0])
    assert [row["price_ms"] for row in rows] == pytest.approx([50.0, 35.0, 20.0])
    # ratio = measured / (price x drift 2.0)
    assert [row["ratio"] for row in rows] == pytest.approx([0.6, 36.0 / 70.0, 0.55])
    assert rows[1]["idle_before_ms"] == pytest.approx(4.0)
    assert rows[2]["idle_before_ms"] == pytest.approx(0.0)
    # A table that names no platform gets no primitive-cache or wake model: nothing charged.
    assert [row["created"] for row in rows] == [False, False, False]
    assert [row["wake_ms"] for row in rows] == [0.0, 0.0, 0.0]


class _ChargingModel:
    """A served-step model stub: every step costs 10 ms; a prompt step with no decode request
    is charged a 2.5 ms wake cost, and a token count it has not seen pays creation (each
    counted in ``coverage`` as ``ServedStepModel`` counts them)."""

    def __init__(self) -> None:
        self.served = self
        self.plain_decode_model = None
        self.coverage: dict[str, int] = {}
        self.wake_ms = 2.5
        self.seen: set[int] = set()
        self.decode = self.prefill = self

    def price(self, count: int, tokens: float, coverage: dict[str, int]) -> float:
        return 10.0

    def price_step(self, decode: int, kv: int, prefill: int, tokens: int, *rest: Any) -> float:
        count = decode + tokens
        if count not in self.seen:
            self.seen.add(count)
            self.coverage["primitives:created"] = self.coverage.get("primitives:created", 0) + 1
        if prefill and not decode:
            self.coverage["wake"] = self.coverage.get("wake", 0) + 1
        return 10.0


def test_priced_steps_say_what_each_step_was_charged() -> None:
    steps = pd.DataFrame(
        {
            # A prompt of 100 tokens at an idle engine (a new count: created, woken), the same
            # count again (woken, not created), a decode step at a new count (created only).
            "start_ms": [0.0, 50.0, 70.0],
            "end_ms": [10.0, 60.0, 80.0],
            "num_prefill_requests": [1, 1, 0],
            "prefill_tokens": [100, 100, 0],
            "num_decode_requests": [0, 0, 1],
            "decode_kv_tokens": [0, 0, 100],
            "draft_tokens": [0, 0, 0],
        }
    )
    rows = priced_steps(steps, _ChargingModel(), 1.0, 0)
    assert [row["created"] for row in rows] == [True, False, True]
    assert [row["wake_ms"] for row in rows] == [2.5, 2.5, 0.0]


def test_undrafted_steps_are_priced_by_the_plain_decode_steps(tmp_path: Path) -> None:
    # An SD table (d = 3): SD rounds of 1 request at 100 / 300 tokens cost 12 / 22 ms, plain
    # decode steps (the rows of _table) 10 / 20 ms, prefill as in _table.
    plain = _table(tmp_path).steps
    rounds = plain[plain["phase"] == "decode"].assign(
        phase="sd",
        point_id=["sd-b1-c100-d3", "sd-b1-c300-d3"],
        num_draft_tokens=3,
        wall_ms=[12.0, 22.0],
    )
    table = StepTable(tmp_path, pd.concat([plain, rounds], ignore_index=True), {})
    model = EngineStepModel(table, 3)
    steps = pd.DataFrame(
        {
            # A drafted round at 200 tokens (SD price 17) and an undrafted one (plain 15), both
            # measured 17 ms.
            "start_ms": [0.0, 17.0],
            "end_ms": [17.0, 34.0],
            "num_prefill_requests": [0, 0],
            "prefill_tokens": [0, 0],
            "num_decode_requests": [1, 1],
            "decode_kv_tokens": [200, 200],
            "draft_tokens": [3, 0],
        }
    )
    rows = priced_steps(steps, model, 1.0, 3)
    assert [row["kind"] for row in rows] == ["decode-drafted", "decode-undrafted"]
    assert [row["price_ms"] for row in rows] == pytest.approx([17.0, 15.0])
    assert [row["ratio"] for row in rows] == pytest.approx([1.0, 17.0 / 15.0])


def test_diff_run_counts_every_engine_step_and_replay_pass() -> None:
    recording = load_recording(RECORDING)
    run = recording.served[0]
    diff, _ = diff_run(run, recording.grid)
    kinds = diff["kinds"]
    assert sum(row["engine_steps"] for row in kinds.values()) == len(run.steps)
    # ngram: the engine drafted in some steps and not in others; so does replay, whose
    # requests draft nothing in their first undrafted_rounds rounds (the grid's counters).
    undrafted = kinds["decode-undrafted"]
    assert undrafted["engine_steps"] == int(
        ((run.steps["num_prefill_requests"] == 0) & (run.steps["draft_tokens"] == 0)).sum()
    )
    assert 0 < undrafted["replay_passes"] <= 2 * undrafted["engine_steps"]
    assert sum(row["replay_passes"] for row in kinds.values()) > 0
    assert sum(part["requests"] for part in diff["by_output_length"]) == len(run.requests)
    # Decode steps set the drift (their median ratio is 1), so their median excess is about 0.
    decode = kinds["decode-drafted"]
    assert abs(decode["excess_ms_median"]) < 0.1 * decode["engine_ms"] / decode["engine_steps"]


def test_cli_prints_a_table_per_recording(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(RECORDING)]) == 0
    out = capsys.readouterr().out
    assert "### vllm-cpu-quiet-llama-4x256-ngram" in out
    assert "| served-1 (" in out and "| decode-undrafted |" in out


def test_cli_refuses_a_missing_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main([str(tmp_path / "nope")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1


def test_error_by_output_length_hand_derived() -> None:
    # Outputs 30, 10, 20 tokens, every measured E2E 100 ms; replay 100, 110, 90 ms: by output
    # length (10, 20, 30) the thirds are +10 %, -10 %, 0 %.
    run = SimpleNamespace(
        requests=pd.DataFrame(
            {
                "request_id": ["a", "b", "c"],
                "arrival_ms": [0.0, 0.0, 0.0],
                "first_token_ms": [10.0, 10.0, 10.0],
                "finish_ms": [100.0, 100.0, 100.0],
                "output_tokens": [30, 10, 20],
            }
        )
    )
    result = SimpleNamespace(
        requests=pd.DataFrame(
            {"request_id": ["c", "b", "a"], "e2e_latency_ms": [90.0, 110.0, 100.0]}
        )
    )
    parts = error_by_output_length(run, result)
    assert [part["output_tokens"] for part in parts] == [(10, 10), (20, 20), (30, 30)]
    assert [part["mean_signed_e2e_error_pct"] for part in parts] == pytest.approx(
        [10.0, -10.0, 0.0]
    )


def test_the_runs_served_before_warm_the_primitive_caches() -> None:
    # The trace's first prompt opens every served run, alone in its step. Fresh, its token
    # count is new: priced with the grid's creation cost. After served-1's recorded steps
    # (about 90 other token counts: evicted from vLLM's LRU of 32, held by oneDNN's cache of
    # 256) it is re-created, free: the price differs by exactly the creation cost.
    recording = load_recording(PINNED)
    first, second = recording.served[0], recording.served[1]
    opening = second.steps.iloc[:1]
    assert int(opening["num_decode_requests"].iloc[0]) == 0
    assert int(opening["prefill_tokens"].iloc[0]) == int(first.steps["prefill_tokens"].iloc[0])
    fresh = warmed_model(recording.grid, 0)
    warm = warmed_model(recording.grid, 0, [first])
    assert fresh.creation_ms is not None and fresh.creation_ms > 1.0
    cold_price = priced_steps(opening, fresh, 1.0, 0)[0]["price_ms"]
    warm_price = priced_steps(opening, warm, 1.0, 0)[0]["price_ms"]
    assert cold_price - warm_price == pytest.approx(fresh.creation_ms)
    assert warm.served.coverage["primitives:recreated"] >= 1


def test_a_partially_drafted_step_is_priced_by_its_drafts() -> None:
    # The committed ngram recording's grid: a step of 2 requests carrying 2 of 6 drafts is the
    # plain decode price plus a third of the SD round's excess over it (both lines, by hand
    # from their coefficients: a + b B + c KV).
    recording = load_recording(RECORDING)
    model = EngineStepModel(recording.grid, 3)
    plain = model.plain_decode_model
    assert plain is not None
    a, b, c = model.decode.coefficients
    pa, pb, pc = plain.decode.coefficients
    sd_ms = a + 2 * b + 400 * c
    plain_ms = pa + 2 * pb + 400 * pc
    steps = pd.DataFrame(
        {
            "start_ms": [0.0],
            "end_ms": [10.0],
            "num_prefill_requests": [0],
            "prefill_tokens": [0],
            "num_decode_requests": [2],
            "decode_kv_tokens": [400],
            "draft_tokens": [2],
        }
    )
    row = priced_steps(steps, model, 1.0, 3)[0]
    assert row["kind"] == "decode-partial"
    # This grid has no cached prefill steps: its creation cost comes from its first decode
    # steps, and the step's count 2 + 2 = 4 is new to a fresh engine, so it pays it.
    assert model.served.creation_source == "first decode step at a new count"
    assert model.creation_ms is not None and model.creation_ms > 0.0
    assert row["price_ms"] == pytest.approx(plain_ms + (sd_ms - plain_ms) / 3.0 + model.creation_ms)
    # The same step again: its count is cached now, no creation.
    again = priced_steps(steps, model, 1.0, 3)[0]
    assert again["price_ms"] == pytest.approx(plain_ms + (sd_ms - plain_ms) / 3.0)


def test_each_step_s_prompt_chunks_are_reconstructed_by_hand() -> None:
    from qualification.engine.step_diff import prefill_chunks

    # a: 700 prompt tokens, b: 100. Step 0: a's first 512; step 1: a's last 188 (after its
    # 512) and b's 100 (fresh); step 2: both decode; step 3 names an unknown request; step 4
    # says 50 prompt tokens where none are left.
    steps = pd.DataFrame(
        {
            "request_ids": ["a", "a;b", "a;b", "zz", "a"],
            "prefill_tokens": [512, 288, 0, 10, 50],
            "num_prefill_requests": [1, 2, 0, 1, 1],
        }
    )
    assert prefill_chunks(steps, {"a": 700, "b": 100}) == [
        [(512, 0)],
        [(188, 512), (100, 0)],
        [],
        None,
        None,
    ]


def test_the_local_speed_and_the_price_error_at_it_by_hand() -> None:
    from qualification.engine.step_diff import local_price_errors, local_speed

    def row(kind: str, measured: float, price: float) -> dict[str, Any]:
        return {"kind": kind, "measured_ms": measured, "price_ms": price}

    # Decode steps at measured / price 1.0, 1.2, 0.9 around a prefill step of 22 ms priced 20.
    rows = [row("decode", 10, 10), row("prefill", 22, 20), row("decode", 12, 10)]
    rows.append(row("decode-drafted", 9, 10))
    # One step either side, the step itself left out: row 0 sees only the prefill step (no
    # speed); row 1 the decodes at 1.0 and 1.2 (1.1); row 2 the decode at 0.9; row 3 at 1.2.
    assert local_speed(rows, window=1) == [None, pytest.approx(1.1), 0.9, 1.2]
    # Window 15 (the default): every decode step but the row's own.
    assert local_speed(rows) == [
        pytest.approx(1.05),
        pytest.approx(1.0),
        pytest.approx(0.95),
        pytest.approx(1.1),
    ]
    # Prefill: 20 x 1.0 = 20 against 22 (-9.09 %); decode: 10 x 1.05 = 10.5 against 10
    # (+5 %), 10 x 0.95 = 9.5 against 12 (-20.83 %); decode-drafted 10 x 1.1 = 11 against 9.
    assert local_price_errors(rows) == {
        "decode": pytest.approx((5.0 - 20.833333) / 2),
        "prefill": pytest.approx(-9.090909),
        "decode-drafted": pytest.approx(22.222222),
    }


def test_every_engine_command_module_runs_without_a_runpy_warning() -> None:
    # `python -m qualification.engine.NAME` warns ("found in sys.modules after import of
    # package ... unpredictable behaviour") when importing the package already imported NAME:
    # no module the docs run that way may be in the package's import closure.
    import subprocess
    import sys

    engine = ROOT / "qualification" / "engine"
    commands = sorted(
        path.stem
        for path in engine.glob("*.py")
        if not path.stem.startswith("_") and 'if __name__ == "__main__":' in path.read_text()
    )
    assert "step_diff" in commands
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, qualification.engine; print(*sorted(sys.modules))"],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    ).stdout.split()
    assert [name for name in commands if f"qualification.engine.{name}" in loaded] == []


def test_the_run_speed_and_the_price_error_at_it_by_hand() -> None:
    from qualification.engine.step_diff import run_speed, run_speed_price_errors

    def row(kind: str, measured: float, price: float) -> dict[str, Any]:
        return {"kind": kind, "measured_ms": measured, "price_ms": price}

    # Decode steps at measured / price 1.2, 0.9, 1.1 (median 1.1) and a prefill step of 22 ms
    # priced 20: at the run's speed 20 x 1.1 = 22 (0 %); the decode steps 11 against 12
    # (-8.33 %), 9 (+22.2 %) and 11 (0 %): median 0 %.
    rows = [
        row("decode", 12, 10),
        row("prefill", 22, 20),
        row("decode", 9, 10),
        row("decode-drafted", 11, 10),
    ]
    assert run_speed(rows) == pytest.approx(1.1)
    assert run_speed_price_errors(rows) == {
        "decode": pytest.approx((-100.0 / 12 + 200.0 / 9) / 2),
        "prefill": pytest.approx(0.0),
        "decode-drafted": pytest.approx(0.0),
    }
    # No decode step: no speed, no errors.
    assert run_speed(rows[1:2]) is None
    assert run_speed_price_errors(rows[1:2]) == {}


def test_step_shapes_by_hand() -> None:
    from qualification.engine.step_diff import step_shapes

    def row(kind: str, decode: int, kv: int, prefill: int, tokens: int) -> dict[str, Any]:
        return {
            "kind": kind,
            "decode_requests": decode,
            "decode_kv_tokens": kv,
            "prefill_requests": prefill,
            "prefill_tokens": tokens,
        }

    rows = [
        row("decode", 1, 100, 0, 0),
        row("decode", 3, 900, 0, 0),  # 300 per request
        row("mixed", 2, 100, 1, 40),  # 50 per request
        row("mixed", 4, 800, 2, 100),  # 200 per request
        row("prefill", 0, 0, 1, 150),
    ]
    assert step_shapes(rows) == {
        "decode": {
            "decode_requests": 2.0,
            "context_tokens": 200.0,
            "prefill_requests": 0.0,
            "prefill_tokens": None,
        },
        "mixed": {
            "decode_requests": 3.0,
            "context_tokens": 125.0,
            "prefill_requests": 1.5,
            "prefill_tokens": 70.0,
        },
        "prefill": {
            "decode_requests": 0.0,
            "context_tokens": None,
            "prefill_requests": 1.0,
            "prefill_tokens": 150.0,
        },
    }


@pytest.mark.parametrize(
    ("medians", "most"),
    [
        # +4 and -4 are both within at factor 1.
        ([4.0, -4.0], 2),
        # f (1 + e) in [0.95, 1.05]: +10 needs f in [0.8636, 0.9545], 0 in [0.95, 1.05], -10 in
        # [1.0556, 1.1667]: +10 and 0 share [0.95, 0.9545], -10 shares nothing with either.
        ([10.0, 0.0, -10.0], 2),
        # +20 needs [0.7917, 0.875], -20 [1.1875, 1.3125]: one at a time.
        ([20.0, -20.0], 1),
        # Three runs 8 % apart around -12 %: f = 1.1364 puts -12 % at 0, -8 % at +4.5 %,
        # -16 % at -4.5 %.
        ([-12.0, -8.0, -16.0], 3),
        ([], 0),
    ],
)
def test_common_factor_ceiling_by_hand(medians: list[float], most: int) -> None:
    from qualification.engine.step_diff import common_factor_ceiling

    assert common_factor_ceiling(medians) == most


def test_within_counts_by_hand() -> None:
    from qualification.engine.step_diff import within_counts

    def run(grid: dict[str, float], speed: dict[str, float], local: dict[str, float]) -> Any:
        return {
            "price_error": {kind: {"median_pct": value} for kind, value in grid.items()},
            "price_error_run_speed": speed,
            "price_error_local": local,
        }

    runs = [
        run({"decode": -12.0, "prefill": 3.0}, {"decode": 0.5, "prefill": 9.0}, {"decode": 1.0}),
        run({"decode": 2.0, "prefill": 6.0}, {"decode": -0.5, "prefill": 4.0}, {"prefill": 2.0}),
    ]
    # From the grid: prefill +3 and decode +2 (2 of 4); at the run's speed: both decodes and
    # the second prefill (3); at the local speed: one decode, one prefill (the missing kinds
    # count as misses: 2). Ceiling: decode -12 needs f in [1.0795, 1.1932], +2 in [0.9314,
    # 1.0294]: 1; prefill +3 needs [0.9223, 1.0194], +6 [0.8962, 0.9906]: they share [0.9223,
    # 0.9906], 2. In all 3.
    assert within_counts(runs) == {
        "total": 4,
        "grid": 2,
        "run_speed": 3,
        "local": 2,
        "ceiling": 3,
    }
