"""The regression estimator: least squares in B and K_total with its reported fit error."""

from __future__ import annotations

import pytest

from aisim.errors import ConfigError, UnsupportedQuery
from aisim.fpm import ForwardPassMetrics, regression_from_points


def _points(rows: list[tuple[int, int, float]]) -> list[dict[str, object]]:
    return [{"batch_size": b, "total_kv_tokens": k, "latency_ms": v} for b, k, v in rows]


def test_hand_solved_two_by_two_design() -> None:
    # Full factorial B in {1, 2} x K in {0, 10}; by hand: c1 = mean B effect = 1.0 ms/request,
    # c2 = mean K effect = 0, c0 = mean - 1.5 c1 = 0.5. Predictions 1.5, 2.5, 1.5, 2.5;
    # APE 50 %, 16.667 %, 25 %, 25 % -> MAPE 29.1667 %; SS_res 1, SS_tot 2 -> R^2 0.5.
    model = regression_from_points(_points([(1, 0, 1.0), (2, 0, 3.0), (1, 10, 2.0), (2, 10, 2.0)]))
    assert model.intercept_ms == pytest.approx(0.5, abs=1e-12)
    assert model.ms_per_request == pytest.approx(1.0, abs=1e-12)
    assert model.ms_per_kv_token == pytest.approx(0.0, abs=1e-12)
    assert model.fit_mape_percent == pytest.approx((50 + 50 / 3 + 25 + 25) / 4, abs=1e-9)
    assert model.fit_r_squared == pytest.approx(0.5, abs=1e-12)
    assert model.fit_rmse_ms == pytest.approx(0.5, abs=1e-12)
    assert model.fit_max_ape_percent == pytest.approx(50.0, abs=1e-9)
    assert model.fit_report()["num_points"] == 4.0


def test_recovers_an_exact_plane() -> None:
    rows = [(b, k, 2.0 + 0.5 * b + 0.001 * k) for b in (1, 2, 4, 8) for k in (0, 1000, 5000)]
    model = regression_from_points(_points(rows))
    assert model.intercept_ms == pytest.approx(2.0, rel=1e-9)
    assert model.ms_per_request == pytest.approx(0.5, rel=1e-9)
    assert model.ms_per_kv_token == pytest.approx(0.001, rel=1e-9)
    assert model.fit_mape_percent == pytest.approx(0.0, abs=1e-9)
    assert model.fit_r_squared == pytest.approx(1.0, abs=1e-12)
    inside = model.estimate_forward_pass_detailed(ForwardPassMetrics(3, 2000))
    assert inside.latency_ms == pytest.approx(2.0 + 1.5 + 2.0, rel=1e-9)
    assert inside.diagnostics.coverage == "fitted"
    assert "fit MAPE" in inside.diagnostics.notes[0]
    outside = model.estimate_forward_pass_detailed(ForwardPassMetrics(16, 2000))
    assert outside.diagnostics.coverage == "extrapolated"
    # The scaling rule applies: d = 1 widens B = 2 to 4: 1.33 * (2 + 2 + 2).
    assert model.estimate_forward_pass_time_ms(
        ForwardPassMetrics(2, 2000), draft_length=1
    ) == pytest.approx(1.33 * 6.0, rel=1e-9)


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([(1, 256, 1.0), (2, 512, 2.0)], ">= 3 points"),
        ([(1, 256, 1.0), (2, 512, 2.0), (4, 1024, 3.0)], "collinear"),
        ([(1, 0, 1.0), (1, 10, 2.0), (1, 20, 3.0)], "collinear"),
    ],
)
def test_unidentifiable_fits_are_config_errors(
    rows: list[tuple[int, int, float]], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        regression_from_points(_points(rows))


def test_prefill_and_non_positive_predictions_are_unsupported() -> None:
    model = regression_from_points(_points([(1, 0, 5.0), (2, 0, 3.0), (1, 10, 5.0), (2, 10, 3.0)]))
    with pytest.raises(UnsupportedQuery, match="non-positive"):
        model.estimate_forward_pass_time_ms(ForwardPassMetrics(8, 0))  # 7 - 2 * 8 < 0
    with pytest.raises(UnsupportedQuery, match="prefill"):
        model.estimate_forward_pass_time_ms(
            ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=10)
        )
