"""Pooling grid passes timed at different moments into one step table (the vllm-bench driver's
POOL_GRIDS): repetitions renumbered per point after the earlier passes', start times shifted past
their end; the pooled table written as the plain layout's grid CSV reads back row for row."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from qualification.engine import pool_grid_passes, write_plain_grid
from qualification.engine._plain import read_grid
from qualification.engine._recording import load_recording

RECORDING = Path(__file__).resolve().parents[2] / "evidence/engine/vllm-bench-llama-4x256-b32-high"


def _pass(rows: list[tuple[str, int, float, float]]) -> pd.DataFrame:
    return pd.DataFrame(rows, columns=["point_id", "repetition", "start_ms", "wall_ms"])


def test_two_passes_pooled_by_hand() -> None:
    before = _pass([("a", 0, 0.0, 5.0), ("a", 1, 6.0, 5.0), ("b", 0, 12.0, 8.0)])
    after = _pass([("a", 0, 0.0, 4.0), ("b", 0, 5.0, 7.0), ("c", 0, 13.0, 2.0)])
    pooled = pool_grid_passes([before, after])
    # the first pass ended at 12 + 8 = 20 ms: the second starts at 21 ms; point a had
    # repetitions 0-1 (the next is 2), b had 0 (next 1), c none (keeps 0)
    assert pooled["repetition"].tolist() == [0, 1, 0, 2, 1, 0]
    assert pooled["start_ms"].tolist() == [0.0, 6.0, 12.0, 21.0, 26.0, 34.0]
    assert pooled["wall_ms"].tolist() == [5.0, 5.0, 8.0, 4.0, 7.0, 2.0]


def test_no_pass_is_refused() -> None:
    with pytest.raises(ValueError, match="no grid passes"):
        pool_grid_passes([])


def test_a_committed_grid_pooled_with_itself_round_trips(tmp_path: Path) -> None:
    steps = load_recording(RECORDING).grid.steps  # type: ignore[union-attr]
    pooled = pool_grid_passes([steps, steps])
    written = write_plain_grid(tmp_path / "grid.csv", pooled)
    back = read_grid(written)
    assert len(back["point_id"]) == 2 * len(steps)
    reps = steps.groupby("point_id")["repetition"].max() + 1
    second = pooled.iloc[len(steps) :]
    assert (
        second["repetition"].to_numpy()
        == (steps["repetition"] + steps["point_id"].map(reps)).to_numpy()
    ).all()
    assert back["repetition"] == pooled["repetition"].tolist()
    assert back["wall_ms"] == pooled["wall_ms"].tolist()
