"""The fitted MTP acceptance's spread (InferenceX points): each H200 training pair's implied
rate, the leave-one-out residuals, the rates a replica draws, the acceptance source switched
off, and the committed fit's pairs."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from single_request import single_request

from aisim.uncertainty import CostErrorTable, Sources, plan_draws
from qualification.public_gpu import FittedRateSpread, acceptance_spreads, load_points
from qualification.public_gpu._acceptance_spread import implied_rate, leave_one_out

ROOT = Path(__file__).resolve().parents[2]
ONLY_ACCEPTANCE = Sources(True, False, False, False, False, False, False)


def logit(rate: float) -> float:
    return math.log(rate / (1.0 - rate))


#: Three depth-1 pairs (AL(a) = 1 + a) of scale 1.8 whose measured ratios 1.2, 1.5 and 1.0
#: imply AL 1.5, 1.2 and 1.8: rates 0.5, 0.2 and 0.8.
THREE = [("p0", 1, 1.8, 1.2), ("p1", 1, 1.8, 1.5), ("p2", 1, 1.8, 1.0)]


def test_three_pairs_imply_three_rates_and_their_leave_one_out_residuals() -> None:
    assert [implied_rate(d, s, m) for _, d, s, m in THREE] == pytest.approx([0.5, 0.2, 0.8])
    # Two pairs left: their median log error is the mean of the two, zero where AL is the
    # geometric mean of their implied ALs.
    without = [math.sqrt(1.2 * 1.8) - 1.0, math.sqrt(1.5 * 1.8) - 1.0, math.sqrt(1.5 * 1.2) - 1.0]
    rows = leave_one_out(THREE)
    assert [row["pair"] for row in rows] == ["p0", "p1", "p2"]
    assert [row["rate_without"] for row in rows] == pytest.approx(without)
    expected = [logit(a) - logit(w) for a, w in zip((0.5, 0.2, 0.8), without, strict=True)]
    assert [row["residual"] for row in rows] == pytest.approx(expected)
    # One pair has no residual: nothing to leave it out of.
    assert leave_one_out(THREE[:1]) == []


def test_a_replica_moves_the_point_rate_by_one_residual_on_the_logit_scale() -> None:
    rows = leave_one_out(THREE)
    spread = FittedRateSpread(tuple(r["residual"] for r in rows), ("p0", "p1", "p2"), "test")
    # At a point rate of 0.5 (logit 0) the drawn rate is expit(residual): for p0, 0.5 moved by
    # -logit(sqrt(2.16) - 1), i.e. 1 - (sqrt(2.16) - 1) = 2 - sqrt(2.16).
    expected = sorted(1.0 / (1.0 + math.exp(-r["residual"])) for r in rows)
    assert expected[1] == pytest.approx(2.0 - math.sqrt(2.16))
    rng = np.random.default_rng(5)
    drawn = [spread.sample(rng, [0.5, 0.5]) for _ in range(200)]
    # every position moves together, and the draws are the three rates, each drawn
    assert all(a == b for a, b in drawn)
    assert sorted({round(a, 12) for a, _ in drawn}) == pytest.approx(expected)
    assert spread.to_dict()["pairs"] == ["p0", "p1", "p2"]


def test_plan_draws_sample_the_spread_as_the_acceptance_source() -> None:
    spread = FittedRateSpread((math.log(3.0), -math.log(3.0)), ("a", "b"), "two pairs")
    config = single_request(rate=0.5)
    draws, setup = plan_draws(
        config,
        Path("."),
        20,
        seed=1,
        sources=ONLY_ACCEPTANCE,
        table=CostErrorTable(()),
        acceptance_spread=spread,
    )
    # logit 0.5 = 0 moved by +-log 3: odds 3 or 1/3, rates 0.75 or 0.25 (depth 1).
    rates = sorted({round((draw.workers[0].conditional_rates or (0.0,))[0], 12) for draw in draws})
    assert rates == pytest.approx([0.25, 0.75])
    assert setup.sources["acceptance"]["included"]
    assert setup.sources["acceptance"]["detail"][0]["origin"] == "two pairs"
    # switched off: the point rate, the same draws of every other source
    off, setup_off = plan_draws(
        config,
        Path("."),
        20,
        seed=1,
        sources=Sources(False, True, True, True, True, True, True),
        table=CostErrorTable(()),
        acceptance_spread=spread,
    )
    plain, _ = plan_draws(
        config,
        Path("."),
        20,
        seed=1,
        sources=Sources(False, True, True, True, True, True, True),
        table=CostErrorTable(()),
    )
    assert all(draw.workers[0].conditional_rates is None for draw in off)
    assert off == plain and not setup_off.sources["acceptance"]["included"]


def test_the_committed_fit_spreads_come_from_its_h200_history_pairs_only() -> None:
    points = {p["id"]: p for p in load_points(ROOT / "evidence" / "public-gpu")}
    spreads = acceptance_spreads(ROOT / "evidence" / "public-gpu")
    workloads = ["1024/1024", "1024/8192", "8192/1024"]
    assert sorted(spreads) == [(e, w) for e in ("sglang", "trt") for w in workloads]
    for (engine, workload), spread in spreads.items():
        assert len(spread.residuals) == len(spread.pairs) >= 2
        for pair in spread.pairs:
            mtp, none = (points[i] for i in pair.split(" / "))
            for point in (mtp, none):
                assert point["source"] == "inferencex-history" and not point["also_in_latest"]
                assert point["hardware"] == "h200" and point["engine"] == engine
            assert mtp["sd"] == "mtp" and none["sd"] == "none"
            if workload != "1024/8192" or engine != "sglang":
                assert f"{mtp['isl']}/{mtp['osl']}" == workload
    # SGLang has no H200 1024/8192 pair: it borrows its 1024/1024 residuals.
    assert spreads[("sglang", "1024/8192")].residuals == spreads[("sglang", "1024/1024")].residuals
    assert "transferred" in spreads[("sglang", "1024/8192")].origin
