"""The STP->SD scaling rule: published oracle, widening, rejections, rank handling."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aisim.config import best_available
from aisim.errors import ConfigError, UnsupportedQuery
from aisim.fpm import (
    ForwardPassMetrics,
    TableModel,
    measured_rounds_from_points,
    scaling_factor,
    split_kv_length,
    table_from_points,
    widen_rank,
)


def _published_table() -> TableModel:
    return table_from_points([{"batch_size": 8, "total_kv_tokens": 64, "latency_ms": 8.0}])


def test_published_oracle_b2_d3_costs_11_92_ms_with_8_ms_reference() -> None:
    table = _published_table()
    result = table.estimate_forward_pass_detailed(ForwardPassMetrics(2, 64), draft_length=3)
    assert result.latency_ms == pytest.approx(11.92, abs=1e-12)
    assert result.draft_length == 3
    assert result.scaling_factor == pytest.approx(1.49, abs=1e-12)
    assert result.stp_reference is not None
    assert result.stp_reference.latency_ms == 8.0
    widened = result.stp_reference.metrics
    assert isinstance(widened, ForwardPassMetrics)
    assert (widened.num_decode_requests, widened.sum_decode_kv_tokens) == (8, 64)
    assert result.stp_reference.diagnostics.coverage == "measured"
    fast = table.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 64), draft_length=3)
    assert fast == result.latency_ms


@pytest.mark.parametrize(
    ("draft_length", "factor"), [(1, 1.33), (2, 1.41), (3, 1.49), (4, 1.57), (5, 1.65)]
)
def test_published_factors(draft_length: int, factor: float) -> None:
    assert scaling_factor(draft_length) == pytest.approx(factor, abs=1e-12)
    # Through a table: logical B = 1 widens to B = d + 1 at the same K_total.
    table = table_from_points(
        [{"batch_size": draft_length + 1, "total_kv_tokens": 100, "latency_ms": 10.0}]
    )
    result = table.estimate_forward_pass_detailed(
        ForwardPassMetrics(1, 100), draft_length=draft_length
    )
    assert result.latency_ms == pytest.approx(10.0 * factor, abs=1e-12)
    assert result.scaling_factor == pytest.approx(factor, abs=1e-12)


def test_integral_float_draft_length_equals_integer() -> None:
    table = _published_table()
    metrics = ForwardPassMetrics(2, 64)
    assert table.estimate_forward_pass_time_ms(metrics, draft_length=3.0) == (
        table.estimate_forward_pass_time_ms(metrics, draft_length=3)
    )


def test_kv_lists_split_with_remainders_first() -> None:
    # 10 over 4 parts: 3, 3, 2, 2; 3 over 4 parts: 1, 1, 1, 0 (by hand).
    rank = ForwardPassMetrics(2, 13, past_kv_lengths=[10, 3])
    widened = widen_rank(rank, 3, "metrics")
    assert widened.num_decode_requests == 8
    assert widened.sum_decode_kv_tokens == 13
    assert widened.past_kv_lengths == [3, 3, 2, 2, 1, 1, 1, 0]
    assert split_kv_length(7, 2) == [4, 3]
    assert split_kv_length(0, 3) == [0, 0, 0]


@given(
    lengths=st.lists(st.integers(min_value=0, max_value=10**7), min_size=1, max_size=30),
    draft_length=st.integers(min_value=1, max_value=64),
)
def test_widening_preserves_kv_exactly_and_siblings_differ_by_at_most_one(
    lengths: list[int], draft_length: int
) -> None:
    rank = ForwardPassMetrics(len(lengths), sum(lengths), past_kv_lengths=lengths)
    widened = widen_rank(rank, draft_length, "metrics")
    parts = widened.past_kv_lengths
    assert parts is not None
    width = draft_length + 1
    assert widened.num_decode_requests == width * len(lengths)
    assert len(parts) == width * len(lengths)
    assert sum(parts) == sum(lengths) == widened.sum_decode_kv_tokens
    for index, length in enumerate(lengths):
        siblings = parts[index * width : (index + 1) * width]
        assert sum(siblings) == length
        assert max(siblings) - min(siblings) <= 1
        assert siblings == sorted(siblings, reverse=True)


@given(
    batch=st.integers(min_value=1, max_value=64),
    kv=st.integers(min_value=0, max_value=10**6),
    latency=st.floats(min_value=1e-3, max_value=1e4, allow_nan=False, allow_infinity=False),
)
def test_omitted_draft_length_is_the_stp_value_bit_for_bit(
    batch: int, kv: int, latency: float
) -> None:
    table = table_from_points([{"batch_size": batch, "total_kv_tokens": kv, "latency_ms": latency}])
    metrics = ForwardPassMetrics(batch, kv)
    assert table.estimate_forward_pass_time_ms(metrics) == latency
    result = table.estimate_forward_pass_detailed(metrics)
    assert result.latency_ms == latency
    assert result.draft_length is None
    assert result.scaling_factor is None
    assert result.stp_reference is None
    assert set(result.to_dict()) == {
        "latency_ms",
        "draft_length",
        "scaling_factor",
        "stp_reference",
        "per_rank_latency_ms",
        "diagnostics",
    }


@given(
    batch=st.integers(min_value=1, max_value=32),
    kv=st.integers(min_value=0, max_value=10**6),
    draft_length=st.integers(min_value=1, max_value=5),
    latency=st.floats(min_value=1e-3, max_value=1e4, allow_nan=False, allow_infinity=False),
)
def test_rule_is_factor_times_widened_stp(
    batch: int, kv: int, draft_length: int, latency: float
) -> None:
    widened = (draft_length + 1) * batch
    table = table_from_points(
        [{"batch_size": widened, "total_kv_tokens": kv, "latency_ms": latency}]
    )
    result = table.estimate_forward_pass_detailed(
        ForwardPassMetrics(batch, kv), draft_length=draft_length
    )
    assert result.stp_reference is not None
    assert result.stp_reference.latency_ms == latency
    assert result.latency_ms == pytest.approx((0.08 * draft_length + 1.25) * latency, rel=1e-12)


def test_factor_applied_once_to_the_slowest_rank_and_idle_ranks_cost_zero() -> None:
    table = table_from_points(
        [
            {"batch_size": 8, "total_kv_tokens": 64, "latency_ms": 8.0},
            {"batch_size": 4, "total_kv_tokens": 32, "latency_ms": 5.0},
        ]
    )
    ranks = [ForwardPassMetrics(2, 64), ForwardPassMetrics(1, 32), ForwardPassMetrics()]
    result = table.estimate_forward_pass_detailed(ranks, draft_length=3)
    assert result.latency_ms == pytest.approx(1.49 * 8.0, abs=1e-12)
    assert result.per_rank_latency_ms == [8.0, 5.0, 0.0]
    assert result.stp_reference is not None
    widened = result.stp_reference.metrics
    assert isinstance(widened, list)
    assert [rank.num_decode_requests for rank in widened] == [8, 4, 0]
    assert table.estimate_forward_pass_time_ms([ForwardPassMetrics()]) == 0.0


@pytest.mark.parametrize(
    "metrics",
    [
        ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=100),
        ForwardPassMetrics(2, 64, num_prefill_requests=1, sum_prefill_tokens=100),
    ],
)
def test_prefill_and_mixed_work_are_rejected(metrics: ForwardPassMetrics) -> None:
    with pytest.raises(UnsupportedQuery, match="decode rounds only"):
        _published_table().estimate_forward_pass_time_ms(metrics, draft_length=3)
    with pytest.raises(UnsupportedQuery, match="decode rounds only"):
        _published_table().estimate_forward_pass_detailed(metrics, draft_length=3)


@pytest.mark.parametrize("bad", [True, False, 0, -1, 2.5, "3", float("nan"), [3]])
def test_invalid_draft_lengths_are_config_errors(bad: object) -> None:
    with pytest.raises(ConfigError, match="draft_length"):
        _published_table().estimate_forward_pass_time_ms(
            ForwardPassMetrics(2, 64), draft_length=bad
        )


def test_integer_overflow_is_rejected() -> None:
    table = _published_table()
    with pytest.raises(ConfigError, match="draft_length"):
        table.estimate_forward_pass_time_ms(ForwardPassMetrics(2**61, 0), draft_length=3)
    with pytest.raises(ConfigError, match="draft_length"):
        table.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 64), draft_length=2**70)


def test_roofline_and_measured_round_reject_draft_length() -> None:
    roofline = best_available(
        {"model": "Qwen/Qwen3-8B", "hardware": "h100", "estimator": "roofline"}
    )
    with pytest.raises(UnsupportedQuery, match="roofline"):
        roofline.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 64), draft_length=3)
    for candidate in roofline.candidates:
        with pytest.raises(UnsupportedQuery, match="natively"):
            candidate.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 64), draft_length=3)
    measured = measured_rounds_from_points(
        [{"batch_size": 2, "total_kv_tokens": 64, "latency_ms": 9.0}],
        identity={
            "kind": "mtp",
            "draft_length": 3,
            "draft_identity": None,
            "timing_scope": "round",
            "role": "aggregated",
        },
    )
    with pytest.raises(UnsupportedQuery, match="double count"):
        measured.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 64), draft_length=3)
    assert measured.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 64)) == 9.0


def test_widening_huge_per_request_lists_is_refused_not_hung() -> None:
    table = _published_table()
    rank = ForwardPassMetrics(1, 5, past_kv_lengths=[5])
    with pytest.raises(ConfigError, match="draft_length: widening 1 per-request"):
        table.estimate_forward_pass_time_ms(rank, draft_length=10**9)
