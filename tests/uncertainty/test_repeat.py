"""The engine's run-to-run repeat noise (source ``repeat``): hand-derived factors, the interval
they give, switching them off, leaving a recording out, the committed evidence."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from single_request import single_request

from aisim.errors import DataIntegrityError
from aisim.uncertainty import (
    REPEAT_METRICS,
    CostErrorTable,
    RepeatSample,
    Sources,
    load_cost_errors,
    repeat_factor,
    replay_intervals,
)

ROOT = Path(__file__).resolve().parents[2]


def two_runs_table() -> CostErrorTable:
    # Two repeats of one trace measured mean E2E 90 and 110 ms: mean 100, deviations -/+ 10 %,
    # widened by sqrt(2 / 1) for the mean that includes the run: 1 -/+ 0.1 sqrt(2).
    runs = [
        RepeatSample(
            "fixed",
            f"rec/served-{index}",
            "evidence/engine/rec",
            "engine-measurement",
            2,
            (("mean_e2e_ms", repeat_factor(measured, 100.0, 2)),),
        )
        for index, measured in ((1, 90.0), (2, 110.0))
    ]
    return CostErrorTable((), {}, tuple(runs))


def test_a_repeat_factor_widens_the_deviation_from_the_mean_of_its_repeats() -> None:
    assert repeat_factor(90.0, 100.0, 2) == pytest.approx(1.0 - 0.1 * math.sqrt(2.0))
    assert repeat_factor(110.0, 100.0, 2) == pytest.approx(1.0 + 0.1 * math.sqrt(2.0))
    # three repeats 9, 10, 11: mean 10, deviations -/+ 10 % widened by sqrt(3 / 2)
    assert repeat_factor(9.0, 10.0, 3) == pytest.approx(1.0 - 0.1 * math.sqrt(1.5))
    assert repeat_factor(10.0, 10.0, 3) == 1.0
    with pytest.raises(ValueError):
        repeat_factor(10.0, 10.0, 1)


def test_a_two_run_spread_gives_its_two_values_as_the_interval() -> None:
    report = replay_intervals(
        single_request(),
        40,
        seed=3,
        sources=Sources(False, False, False, True),
        table=two_runs_table(),
    )
    e2e = report["metrics"]["mean_e2e_ms"]
    assert e2e["point"] == 40.0
    assert e2e["low"] == pytest.approx(40.0 * (1.0 - 0.1 * math.sqrt(2.0)))  # 34.34 ms
    assert e2e["high"] == pytest.approx(40.0 * (1.0 + 0.1 * math.sqrt(2.0)))  # 45.66 ms
    # a metric the runs did not carry keeps the point: TTFT, goodput
    for name in ("mean_ttft_ms", "goodput_rps"):
        item = report["metrics"][name]
        assert item["low"] == item["high"] == item["point"]
    assert report["includes"] == ["repeat"]
    detail = report["sources"]["repeat"]["detail"][0]
    assert detail["runs"] == 2 and detail["not_carried"] == ["goodput_rps"]


def test_repeat_switched_off_or_without_evidence_is_the_point() -> None:
    for sources, table in (
        (Sources(True, True, True, False), two_runs_table()),
        (Sources(), CostErrorTable(())),
        (Sources.parse("none"), two_runs_table()),
    ):
        report = replay_intervals(single_request(), 4, sources=sources, table=table)
        e2e = report["metrics"]["mean_e2e_ms"]
        assert e2e["low"] == e2e["high"] == e2e["point"] == 40.0
        assert "repeat" not in report["includes"]
    assert Sources.parse("repeat") == Sources(False, False, False, True, False, False, False)


def test_leaving_a_recording_out_drops_its_repeat_runs() -> None:
    table = two_runs_table().extended(
        (),
        (
            RepeatSample(
                "fixed", "b/served-1", "evidence/engine/b", "t", 2, (("p90_tpot_ms", 1.1),)
            ),
        ),
    )
    assert [r.group for r in table.excluding("evidence/engine/rec").repeats] == ["b/served-1"]
    assert len(table.excluding("evidence/engine/b").repeats) == 2


def test_a_malformed_repeat_sample_is_a_one_line_error(tmp_path: Path) -> None:
    document = two_runs_table().to_dict()
    document["repeat_samples"][1]["factors"] = {"goodput_rps": 1.2}
    path = tmp_path / "table.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DataIntegrityError, match=r"repeat_samples\[1\]\.factors\.goodput_rps"):
        load_cost_errors(path)
    document["repeat_samples"][1]["factors"] = {"p90_tpot_ms": -1}
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DataIntegrityError, match=r"factors\.p90_tpot_ms: expected a finite"):
        load_cost_errors(path)


def test_the_committed_repeat_noise_averages_one_per_recording() -> None:
    # every factor is 1 + widened deviation from its recording's mean: per recording and
    # metric they average exactly 1, and each recording's runs are counted in ``repeats``
    table = load_cost_errors()
    by_source: dict[str, list[RepeatSample]] = {}
    for sample in table.repeats:
        by_source.setdefault(sample.source, []).append(sample)
    engine = {p.name for p in (ROOT / "evidence/engine").iterdir() if (p / "grid").is_dir()}
    assert by_source and {source.split("/")[-1] for source in by_source} <= engine
    for runs in by_source.values():
        assert all(run.repeats == len(runs) for run in runs)
        for metric in REPEAT_METRICS:
            values = [dict(run.factors)[metric] for run in runs]
            assert sum(values) / len(values) == pytest.approx(1.0, abs=1e-12)


def test_a_latency_deviation_the_step_price_explains_is_not_repeated() -> None:
    # Two runs: step-price level 1.0 and 1.2 (mean 1.1); mean TPOT 10 and 12 ms, exactly as the
    # level moves it: 10 / (1.0 / 1.1) = 12 / (1.2 / 1.1) = 11, so both factors are 1. Mean
    # TTFT 20 and 20 ms at those levels: 22 and 18.33, mean 20.17, deviations -/+ 9.09 % widened
    # by sqrt(2). Output throughput 100 and 98 (not price-scaled): mean 99, -/+ 1.0101 % x sqrt 2.
    from qualification.uncertainty._table import run_factors

    base = {metric: 1.0 for metric in REPEAT_METRICS}
    first = {**base, "level": 1.0, "mean_tpot_ms": 10.0, "mean_ttft_ms": 20.0}
    second = {**base, "level": 1.2, "mean_tpot_ms": 12.0, "mean_ttft_ms": 20.0}
    first["output_throughput_tok_s"], second["output_throughput_tok_s"] = 100.0, 98.0
    one, two = (dict(factors) for factors in run_factors([first, second]))
    assert one["mean_tpot_ms"] == pytest.approx(1.0) and two["mean_tpot_ms"] == pytest.approx(1.0)
    ttft = 20.0 * 1.1  # the first run's TTFT at the mean level
    mean = (ttft + 20.0 * 1.1 / 1.2) / 2.0
    assert one["mean_ttft_ms"] == pytest.approx(1.0 + (ttft / mean - 1.0) * math.sqrt(2.0))
    assert one["mean_ttft_ms"] == pytest.approx(1.0 + (1.0 / 11.0) * math.sqrt(2.0))
    assert one["output_throughput_tok_s"] == pytest.approx(1.0 + math.sqrt(2.0) / 99.0)
    assert two["output_throughput_tok_s"] == pytest.approx(1.0 - math.sqrt(2.0) / 99.0)
