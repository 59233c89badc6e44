"""Pooled percentiles over groups of sweep points (``aisim.sweep.merge``): within the sketch's
stated relative error of numpy's exact percentiles over the points' samples put together, the
same whatever order the points come in, kept across a resume, and a one-line error for an axis
that is not in the sweep."""

from __future__ import annotations

import copy
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from strategies import latencies

from aisim.config import run_replay
from aisim.config._sweep import apply_axes, load_sweep
from aisim.errors import ConfigError
from aisim.replay._sketch import RELATIVE_ACCURACY, Distribution
from aisim.sweep import merge, run
from aisim.sweep._evaluate import point_sketches
from aisim.sweep._merge import sketch_text
from aisim.sweep._run import POINTS_DIR, expand

#: Row metric -> the replay's distribution of it.
METRICS = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e": "e2e_latency"}
PERCENTILES = {"p50": 50.0, "p90": 90.0, "p95": 95.0, "p99": 99.0}


def _close(estimate: float, exact: float, largest: float) -> bool:
    """Within the sketch's stated relative error (plus float noise at bucket edges)."""
    return abs(estimate - exact) <= RELATIVE_ACCURACY * exact + 1e-12 * largest


def _assert_pooled(row: dict[str, Any], samples: dict[str, list[float]]) -> None:
    """``row``'s pooled statistics against numpy over the concatenated samples."""
    for name, values in samples.items():
        assert row[f"{name}_samples"] == len(values)
        if not values:
            assert all(math.isnan(row[f"{stat}_{name}_ms"]) for stat in ("mean", *PERCENTILES))
            continue
        exact = np.asarray(values, dtype=np.float64)
        assert math.isclose(row[f"mean_{name}_ms"], float(np.mean(exact)), rel_tol=1e-9)
        for stat, percentile in PERCENTILES.items():
            expected = float(np.percentile(exact, percentile))
            assert _close(row[f"{stat}_{name}_ms"], expected, float(exact.max())), (name, stat)


# --- merging sketches of hand-made points: the numpy oracle -----------------------------------

points_strategy = st.lists(
    st.tuples(
        st.integers(0, 2),  # load (the axis kept)
        st.booleans(),  # the point ran (else an error row)
        st.sampled_from([3, 200_000]),  # exact values kept before the point's own sketch
        st.tuples(latencies, latencies, latencies, latencies),
    ),
    min_size=1,
    max_size=6,
)


def _frame(points: list[tuple[int, bool, int, tuple[list[float], ...]]]) -> pd.DataFrame:
    """A frame shaped like ``run``'s: axes ``load`` and ``replica``, each point's sketches from
    its samples (error points have none)."""
    records = []
    for index, (load, ran, exact_limit, samples) in enumerate(points):
        record: dict[str, Any] = {"point": index, "load": load, "replica": index}
        record["status"] = "ok" if ran else "error"
        distributions = {}
        for summary_name, values in zip(METRICS.values(), samples, strict=True):
            distribution = Distribution(exact_limit)
            for value in values:
                distribution.add(value)
            distributions[summary_name] = distribution
        sketches = point_sketches(distributions)
        record["total_requests"] = len(samples[0]) if ran else None
        record["completed_requests"] = len(samples[0]) if ran else None
        for column, sketch in sketches.items():
            record[column] = sketch_text(sketch) if ran else None
        records.append(record)
    frame = pd.DataFrame.from_records(records)
    frame.attrs["axes"] = ["load", "replica"]
    frame.attrs["slos"] = {"tpot_ms": {"p90": 1000.0}}
    return frame


@given(points_strategy)
def test_pooled_percentiles_are_within_the_stated_error_of_numpy(
    points: list[tuple[int, bool, int, tuple[list[float], ...]]],
) -> None:
    merged = merge(_frame(points), over=["replica"])
    loads = list(dict.fromkeys(load for load, _, _, _ in points))
    assert list(merged["load"]) == loads  # groups in order of their first point
    for row in merged.to_dict("records"):
        mine = [point for point in points if point[0] == row["load"]]
        ran = [point for point in mine if point[1]]
        assert (row["points"], row["merged_points"]) == (len(mine), len(ran))
        samples = {
            name: [value for point in ran for value in point[3][position]]
            for position, name in enumerate(METRICS)
        }
        _assert_pooled(row, samples)
        # slo_met: every point ran, and the pooled p90 TPOT <= 1000 (decided where the exact
        # value is clear of the limit by more than the sketch's error).
        if len(ran) < len(mine):
            assert not row["slo_met"]
        elif ran:
            exact_p90 = float(np.percentile(np.asarray(samples["tpot"]), 90.0))
            if abs(exact_p90 - 1000.0) > 2 * RELATIVE_ACCURACY * 1000.0:
                assert row["slo_met"] == (exact_p90 <= 1000.0)


@given(points_strategy, st.randoms(use_true_random=False))
def test_merging_is_independent_of_point_order(
    points: list[tuple[int, bool, int, tuple[list[float], ...]]], shuffle: Any
) -> None:
    frame = _frame(points)
    order = list(range(len(frame)))
    shuffle.shuffle(order)
    shuffled = frame.iloc[order].reset_index(drop=True)
    shuffled.attrs = copy.deepcopy(frame.attrs)
    forward = merge(frame, over=["replica"]).sort_values("load").reset_index(drop=True)
    backward = merge(shuffled, over=["replica"]).sort_values("load").reset_index(drop=True)
    sketches = [column for column in forward.columns if column.endswith("_sketch")]
    # byte-identical serialisation, and so identical statistics
    assert [forward[column].tolist() for column in sketches] == [
        backward[column].tolist() for column in sketches
    ]
    pd.testing.assert_frame_equal(forward, backward)


def test_the_pooled_mean_does_not_depend_on_the_order_of_the_sums() -> None:
    """1e16 + 1 + 1 is 1e16 added left to right but 1e16 + 2 the other way round: the pooled
    sum is correctly rounded (1e16 + 2) in every order."""
    values = ([1e16], [1.0], [1.0])
    means = set()
    for order in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
        points = [(0, True, 3, (values[i],) * 4) for i in order]
        merged = merge(_frame(points), over=["replica"])
        means.add(merged.loc[0, "mean_ttft_ms"])
    assert means == {(1e16 + 2.0) / 3.0}


# --- a real sweep: pooled over replica seeds, against numpy over every point's samples ----------

SWEEP: dict[str, Any] = {
    "base": {
        "traffic": {
            "source": {
                "type": "synthetic",
                "num_requests": 40,
                "prompt_tokens": {"type": "uniform", "min": 20, "max": 300},
                "output_tokens": {"type": "uniform", "min": 1, "max": 20},
            },
            "load": {"type": "poisson", "rate_rps": 8},
        },
        "engine": {
            "workers": {
                "aggregated": {
                    "kv_cache": {"capacity": {"type": "fixed", "blocks": 512}},
                    "timing": {"type": "fixed", "prefill_ms": 12, "decode_ms": 6},
                }
            }
        },
    },
    "axes": {
        "engine.speculation": [
            None,
            {"kind": "ngram", "params": {"num_speculative_tokens": 2}, "acceptance_rates": [0.6]},
            {
                "kind": "ngram",
                "params": {"num_speculative_tokens": 2},
                "acceptance_rates": [0.6, 0.3],
            },
        ],
        "traffic.seed": [1, 2, 3],
    },
    "merge_over": ["traffic.seed"],
    "slos": {"tpot_ms": {"p90": 7.0}},
}


@pytest.fixture(scope="module")
def swept() -> pd.DataFrame:
    return run(SWEEP, workers=1)


def test_a_sweep_pools_each_configuration_over_its_seeds(swept: pd.DataFrame) -> None:
    plan = load_sweep(SWEEP)
    merged = merge(swept)  # merge_over from the sweep
    assert merged.attrs["merged_over"] == ["traffic.seed"]
    assert list(merged.columns[:3]) == ["engine.speculation", "points", "merged_points"]
    # the middle configuration has one rate for two drafts: every point is an error
    assert list(merged["merged_points"]) == [3, 0, 3]
    assert list(merged["points"]) == [3, 3, 3]
    groups: dict[str, dict[str, list[float]]] = {}
    for point in expand(plan):
        config = apply_axes(plan.base, point.assignment)
        key = json.dumps(point.assignment[0][1], sort_keys=True)
        group = groups.setdefault(key, {name: [] for name in METRICS})
        try:
            result = run_replay(config, base_dir=Path(plan.base_dir))
        except ConfigError:
            continue
        for name, summary_name in METRICS.items():
            distribution = result.distributions[summary_name]
            assert distribution.exact
            group[name].extend(distribution.values)
    for row in merged.to_dict("records"):
        _assert_pooled(row, groups[row["engine.speculation"]])
    # 1-token outputs have no TPOT, so the pooled TPOT count is below the requests
    assert merged.loc[0, "tpot_samples"] < merged.loc[0, "completed_requests"] == 120


def test_every_ok_point_carries_its_sketches_as_json(swept: pd.DataFrame) -> None:
    for row in swept.to_dict("records"):
        for name in METRICS:
            text = row[f"{name}_sketch"]
            if row["status"] != "ok":
                assert text is None or (isinstance(text, float) and math.isnan(text))
                continue
            sketch = json.loads(text)
            assert sketch["kind"] == "ddsketch-logarithmic"
            assert sketch["relative_accuracy"] == RELATIVE_ACCURACY
            assert json.dumps(sketch, sort_keys=True, separators=(",", ":")) == text


def test_merging_over_every_axis_gives_one_group(swept: pd.DataFrame) -> None:
    merged = merge(swept, over=["traffic.seed", "engine.speculation"])
    assert len(merged) == 1 and merged.attrs["axes"] == []
    assert merged.loc[0, "points"] == 9 and merged.loc[0, "merged_points"] == 6


# --- resume --------------------------------------------------------------------------------------


def test_resume_keeps_the_merged_output(tmp_path: Path, swept: pd.DataFrame) -> None:
    """A sweep resumed from its points (two finished points removed, one rewritten as written
    before points kept sketches: it runs again) gives the uninterrupted run's merged frame."""
    out = tmp_path / "out"
    first = run(SWEEP, workers=1, out=out)
    files = sorted((out / POINTS_DIR).glob("*.json"))
    for file in files[:2]:
        file.unlink()
    record = json.loads(files[2].read_text(encoding="utf-8"))
    for name in METRICS:
        record["row"].pop(f"{name}_sketch", None)
    files[2].write_text(json.dumps(record), encoding="utf-8")
    resumed = run(SWEEP, workers=2, out=out)
    error_rewritten = record["row"]["status"] != "ok"
    assert resumed.attrs["skipped_points"] == len(files) - 2 - (0 if error_rewritten else 1)
    pd.testing.assert_frame_equal(resumed, first)
    pd.testing.assert_frame_equal(merge(resumed), merge(swept))


# --- errors --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("merge_over", "message"),
    [
        (
            ["traffic.sed"],
            "merge_over[0]: 'traffic.sed' is not an axis of this sweep; the sweep's axes: "
            "engine.speculation, traffic.seed",
        ),
        ("traffic.seed", "merge_over: expected a list of axis paths, got 'traffic.seed' (str)"),
        ([], "merge_over: empty; name at least one axis to merge over"),
        (["traffic.seed", "traffic.seed"], "merge_over[1]: 'traffic.seed' is named twice"),
        ([3], "merge_over[0]: expected an axis path (a string), got 3 (int)"),
    ],
)
def test_a_bad_merge_over_is_one_line_naming_the_field(merge_over: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_sweep({**SWEEP, "merge_over": merge_over})
    assert str(caught.value).startswith(message) and "\n" not in str(caught.value)


def test_api_merge_names_its_argument(swept: pd.DataFrame) -> None:
    with pytest.raises(ConfigError, match=r"^over\[0\]: 'seed' is not an axis of this sweep"):
        merge(swept, over=["seed"])
    without = swept.copy()
    without.attrs = {key: value for key, value in swept.attrs.items() if key != "merge_over"}
    with pytest.raises(ConfigError, match="^over: no axis to merge over; pass over="):
        merge(without)
    with pytest.raises(ConfigError, match=r"^frame.attrs: no 'axes'; merge takes the frame of"):
        merge(pd.DataFrame(swept.to_dict("list")), over=["traffic.seed"])


def test_run_checks_merge_over_before_any_point_runs(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^merge_over\[0\]: 'rate' is not an axis"):
        run(SWEEP, workers=1, out=tmp_path / "out", merge_over=["rate"])
    assert not (tmp_path / "out").exists()


def test_cli_merge_over_error_is_one_line_before_any_point(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump(SWEEP), encoding="utf-8")
    out = tmp_path / "out"
    command = [sys.executable, "-m", "aisim", "sweep", str(sweep), "--out", str(out)]
    completed = subprocess.run(
        [*command, "--merge-over", "traffic.sede"], capture_output=True, text=True, check=False
    )
    assert completed.returncode == 2
    assert completed.stderr == (
        "aisim: error: --merge-over[0]: 'traffic.sede' is not an axis of this sweep; the "
        "sweep's axes: engine.speculation, traffic.seed\n"
    )
    assert not out.exists()
