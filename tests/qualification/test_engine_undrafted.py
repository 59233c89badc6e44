"""Per-request n-gram rounds that drafted nothing, read from a served run's token times and
steps, and the engine's repeat floor: hand-derived numbers on small frames, and the counts on a
committed recording checked against vLLM's own counters (no vLLM needed)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pandas as pd
import pytest

from aisim.errors import DataIntegrityError
from qualification.engine import load_recording
from qualification.engine._replay import observed_acceptance
from qualification.engine._score import _undrafted_per_request
from qualification.engine.undrafted import main, repeat_floor, undrafted_rounds

ROOT = Path(__file__).resolve().parents[2]
RECORDING = ROOT / "evidence" / "engine" / "vllm-cpu-quiet-llama-4x256-ngram"

STEPS = pd.DataFrame({"end_ms": [10.0, 20.0, 30.0, 40.0, 50.0]})


def test_undrafted_rounds_by_hand() -> None:
    # a: prefill token at 10, one token at 20 and at 30, four at 40 (3 drafts accepted) -> 2.
    # b: prefill at 20, one token per step after it, never more -> None (never drafted).
    # c: prefill at 10, two tokens at 20 -> its first decode round drafted: 0.
    requests = pd.DataFrame(
        {
            "request_id": ["a", "b", "c"],
            "token_times_ms": [
                [10.0, 20.0, 30.0, 40.0, 40.0, 40.0, 40.0],
                [20.0, 30.0, 40.0, 50.0],
                [10.0, 20.0, 20.0],
            ],
        }
    )
    assert undrafted_rounds(STEPS, requests) == {"a": 2, "b": None, "c": 0}


def test_token_time_off_every_step_is_refused() -> None:
    requests = pd.DataFrame({"request_id": ["a"], "token_times_ms": [[10.0, 35.0]]})
    with pytest.raises(DataIntegrityError) as info:
        undrafted_rounds(STEPS, requests, "served-1")
    message = str(info.value)
    assert "\n" not in message
    assert "served-1: request 'a': token_times_ms[1] = 35.0 is no step's end_ms" in message


def test_repeat_floor_by_hand() -> None:
    # Run 1 against the mean of runs 0 and 2 ([95, 210]): |95-110|/110 = 13.64 %,
    # |210-180|/180 = 16.67 %: median 15.15 %, P90 13.64 + 0.9 x 3.03 = 16.36 %.
    floor = repeat_floor([[100.0, 200.0], [110.0, 180.0], [90.0, 220.0]])
    assert floor[0] == {"median_abs_error_pct": 0.0, "p90_abs_error_pct": 0.0}
    assert floor[1]["median_abs_error_pct"] == pytest.approx((15 / 110 + 30 / 180) / 2 * 100)
    assert floor[1]["p90_abs_error_pct"] == pytest.approx(
        (15 / 110 + 0.9 * (30 / 180 - 15 / 110)) * 100
    )
    # Run 2 against [105, 190]: 15/90 and 30/220, the same two errors.
    assert floor[2]["median_abs_error_pct"] == pytest.approx(floor[1]["median_abs_error_pct"])
    with pytest.raises(DataIntegrityError, match="two served runs or more"):
        repeat_floor([[100.0]])


def test_committed_counts_agree_with_vllm_counters() -> None:
    # The per-request counts come from token times; vLLM's counters (decode rounds - drafted
    # rounds, per finished request) are an independent record of their mean.
    recording = load_recording(RECORDING)
    for run in recording.served:
        counts = undrafted_rounds(run.steps, run.requests)
        assert None not in counts.values()
        values = [count for count in counts.values() if count is not None]
        assert sum(values) / len(values) == pytest.approx(
            _undrafted_per_request(observed_acceptance(run))
        )
        # Every request's first 2-5 rounds drafted nothing, not the same number for all.
        assert min(values) == 2 and max(values) == 5 and len(Counter(values)) == 4


def test_cli_prints_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([str(RECORDING)]) == 0
    out = capsys.readouterr().out
    assert "| served-1 | 24 | 2: 9, 3: 7, 4: 7, 5: 1 | 3.00 | 3.00 | 0 |" in out
    assert "Repeat floor" in out


def test_a_client_side_recording_reports_n_a_instead_of_failing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A recording without engine steps (vllm bench serve's) was refused: "request 'req-0':
    token_times_ms[0] = 32.03 is no step's end_ms", though the repeat floor needs only the
    requests."""
    import shutil

    from qualification.engine._plain import import_plain

    example = ROOT / "docs" / "examples" / "engine-recording"
    plain = tmp_path / "plain"
    shutil.copytree(example, plain)
    (plain / "served-1" / "steps.csv").unlink()
    recording = import_plain(plain, tmp_path / "rec")
    assert main([str(recording)]) == 0
    out = capsys.readouterr().out
    assert (
        "| served-1 | 3 | n/a (no engine steps) | n/a | n/a | n/a | n/a | n/a |" in out.splitlines()
    )
    run = load_recording(recording).served[0]
    with pytest.raises(DataIntegrityError) as caught:
        undrafted_rounds(run.steps, run.requests, "run")
    assert str(caught.value) == (
        "run: no engine steps (steps.csv left out: a client-side recording); the undrafted "
        "rounds are read from the engine's steps"
    )
