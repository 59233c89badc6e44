"""The step-price drift (source ``drift``): a run's per-step scatter correlated in time, its
fit on a served run's steps (hand-derived), its switch, its provenance in the committed table."""

from __future__ import annotations

import json
import math
from pathlib import Path
from statistics import NormalDist

import pytest
from single_request import single_request

from aisim.errors import DataIntegrityError
from aisim.uncertainty import (
    CostErrorTable,
    ErrorSample,
    Sources,
    load_cost_errors,
    plan_draws,
)
from qualification.uncertainty._table import fit_correlation, normal_scores, step_correlation

QUANTILES = (0.8, 1.0, 1.2)


def drifting_table(correlation: tuple[float, float] | None = (0.6, 400.0)) -> CostErrorTable:
    return CostErrorTable(
        (
            ErrorSample(
                "fixed",
                "sd_round",
                "r",
                "rec/served-1",
                1.1,
                "evidence/engine/rec",
                "t",
                step_quantiles=QUANTILES,
                step_correlation=correlation,
            ),
        )
    )


def test_fit_recovers_share_and_time_from_an_exponential_decay() -> None:
    # rho(dt) = 0.8 exp(-dt / 100) at dt = 50, 100, 200 ms: ln rho is a line of slope -1/100
    # through ln 0.8.
    points = [(dt, 0.8 * math.exp(-dt / 100.0)) for dt in (50.0, 100.0, 200.0)]
    assert fit_correlation(points) == (0.8, 100.0)
    # A share above 1 is capped; one point, or a rising correlation, is no fit.
    assert fit_correlation([(10.0, 0.9), (20.0, 0.9 * math.exp(-0.5))]) == (1.0, 20.0)
    assert fit_correlation([(10.0, 0.5)]) is None
    assert fit_correlation([(10.0, 0.3), (20.0, 0.4)]) is None


def test_normal_scores_rank_within_each_kind() -> None:
    inverse = NormalDist().inv_cdf
    scores = normal_scores(["a", "a", "b", "a"], [3.0, 1.0, 5.0, 2.0])
    # kind a: 1.0, 2.0, 3.0 are ranks 0, 1, 2 of 3 -> inv_cdf(1/6), 0, inv_cdf(5/6); b alone: 0.
    assert list(scores) == pytest.approx([inverse(5 / 6), inverse(1 / 6), 0.0, 0.0])


def test_alternating_step_prices_have_no_drift() -> None:
    # Slow, fast, slow, ...: lag-1 correlation -1, at or below the floor: nothing to fit.
    rows = [
        {"kind": "decode", "price_ms": 10.0, "ratio": 1.2 if i % 2 else 0.8, "measured_ms": 10.0}
        for i in range(200)
    ]
    assert step_correlation(rows) is None


def test_a_run_slow_then_fast_is_fully_correlated() -> None:
    # 100 steps at ratio 1.2 then 100 at 0.8 (ties broken by order, so the scores rise within
    # each half): every lag up to 64 correlates > 0.05, and the fit's share is near 1.
    rows = [
        {"kind": "decode", "price_ms": 10.0, "ratio": 1.2 if i < 100 else 0.8, "measured_ms": 10.0}
        for i in range(200)
    ]
    found = step_correlation(rows)
    assert found is not None
    share, time_ms = found
    assert share > 0.9 and time_ms > 100.0


def test_the_drift_switch_keeps_every_other_draw() -> None:
    config = single_request()
    on, setup_on = plan_draws(
        config, Path("."), 6, seed=2, sources=Sources(), table=drifting_table()
    )
    off, setup_off = plan_draws(
        config,
        Path("."),
        6,
        seed=2,
        sources=Sources(True, True, True, True, False),
        table=drifting_table(),
    )
    for a, b in zip(on, off, strict=True):
        assert a.workers[0].factors.step_correlation == (0.6, 400.0)
        assert b.workers[0].factors.step_correlation is None
        # the same factors and the same per-step stream otherwise
        assert a.workers[0].factors.sd_round == b.workers[0].factors.sd_round == 1.1
        assert a.workers[0].factors.noise_seed == b.workers[0].factors.noise_seed
        assert a.traffic_seed == b.traffic_seed
    assert setup_on.sources["drift"]["included"]
    assert setup_on.sources["drift"]["detail"][0]["runs"] == 1
    assert not setup_off.sources["drift"]["included"]
    # Without the cost source there is nothing for the drift to shape.
    _, no_cost = plan_draws(
        config,
        Path("."),
        2,
        seed=2,
        sources=Sources(True, False, True, True, True),
        table=drifting_table(),
    )
    assert not no_cost.sources["drift"]["included"]
    # Without correlation evidence: not included, and the draws carry none.
    plain, setup = plan_draws(
        config, Path("."), 2, seed=2, sources=Sources(), table=drifting_table(None)
    )
    assert not setup.sources["drift"]["included"]
    assert all(d.workers[0].factors.step_correlation is None for d in plain)
    assert Sources.parse("drift") == Sources(False, False, False, False, True, False, False)
    assert Sources.parse("none") == Sources(False, False, False, False, False, False, False)


def test_a_malformed_step_correlation_is_a_one_line_error(tmp_path: Path) -> None:
    document = drifting_table().to_dict()
    assert document["samples"][0]["step_correlation"] == [0.6, 400.0]
    document["samples"][0]["step_correlation"] = [1.5, 400.0]
    path = tmp_path / "table.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DataIntegrityError, match=r"samples\[0\]\.step_correlation: expected"):
        load_cost_errors(path)


def test_the_committed_drift_comes_from_our_recorders_served_runs() -> None:
    table = load_cost_errors()
    described = table.describe_correlation("engine-step-table")
    # One correlation per served run of the recordings with engine steps (the vllm-bench
    # recordings have none), each with a share in (0, 1] and a positive time.
    assert described["runs"] >= 48
    assert all(source.startswith("evidence/engine/vllm-cpu-") for source in described["sources"])
    for sample in table.samples:
        if sample.step_correlation is not None:
            assert sample.step_quantiles is not None
            share, time_ms = sample.step_correlation
            assert 0.0 < share <= 1.0 and time_ms > 0.0
    # Leaving a recording out drops its runs' correlations too.
    left = table.excluding("evidence/engine/vllm-cpu-quiet-llama-4x256")
    assert left.describe_correlation("engine-step-table")["runs"] == described["runs"] - 3
