"""ForwardPassMetrics: validation at construction, every failure naming its field."""

from __future__ import annotations

import numpy as np
import pytest

from aisim.errors import ConfigError
from aisim.fpm import ForwardPassMetrics, table_from_points


def test_defaults_are_an_idle_rank() -> None:
    metrics = ForwardPassMetrics()
    assert metrics.is_idle and not metrics.has_decode and not metrics.has_prefill
    assert metrics.to_dict() == {
        "num_decode_requests": 0,
        "sum_decode_kv_tokens": 0,
        "num_prefill_requests": 0,
        "sum_prefill_tokens": 0,
    }


def test_numpy_integers_and_integral_floats_are_converted() -> None:
    metrics = ForwardPassMetrics(np.int64(4), 100.0, past_kv_lengths=np.array([25, 25, 25, 25]))
    assert metrics.num_decode_requests == 4 and type(metrics.num_decode_requests) is int
    assert metrics.sum_decode_kv_tokens == 100
    assert metrics.past_kv_lengths == [25, 25, 25, 25]
    mixed = ForwardPassMetrics(2, 50, past_kv_lengths=(np.int32(20), 30.0))
    assert mixed.past_kv_lengths == [20, 30]
    assert [type(length) for length in mixed.past_kv_lengths] == [int, int]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"num_decode_requests": -1}, "metrics.num_decode_requests"),
        ({"num_decode_requests": True}, "metrics.num_decode_requests"),
        ({"num_decode_requests": 2.5}, "metrics.num_decode_requests"),
        ({"num_decode_requests": "2"}, "metrics.num_decode_requests"),
        ({"num_decode_requests": 1, "sum_decode_kv_tokens": -5}, "metrics.sum_decode_kv_tokens"),
        ({"sum_decode_kv_tokens": 5}, "metrics.sum_decode_kv_tokens"),
        ({"sum_prefill_tokens": 5}, "metrics.sum_prefill_tokens"),
        ({"num_prefill_requests": 3, "sum_prefill_tokens": 2}, "metrics.sum_prefill_tokens"),
        (
            {"num_decode_requests": 2, "sum_decode_kv_tokens": 10, "past_kv_lengths": [10]},
            "metrics.past_kv_lengths",
        ),
        (
            {"num_decode_requests": 2, "sum_decode_kv_tokens": 10, "past_kv_lengths": [4, 5]},
            "metrics.past_kv_lengths",
        ),
        (
            {"num_decode_requests": 1, "sum_decode_kv_tokens": 1, "past_kv_lengths": [-1]},
            r"metrics.past_kv_lengths\[0\]",
        ),
        (
            {"num_decode_requests": 1, "sum_decode_kv_tokens": 1, "past_kv_lengths": "1"},
            "metrics.past_kv_lengths",
        ),
        (
            {"num_prefill_requests": 2, "sum_prefill_tokens": 10, "extend_lengths": [10, 0]},
            "metrics.extend_lengths",
        ),
        (
            {"num_prefill_requests": 2, "sum_prefill_tokens": 10, "extend_lengths": [3, 3]},
            "metrics.extend_lengths",
        ),
        (
            {"num_prefill_requests": 1, "sum_prefill_tokens": 10, "prefill_past_kv_lengths": []},
            "metrics.prefill_past_kv_lengths",
        ),
        ({"num_decode_requests": 2**63}, "metrics.num_decode_requests"),
        (
            {"num_decode_requests": 2, "sum_decode_kv_tokens": 2, "past_kv_lengths": [1, True]},
            r"metrics.past_kv_lengths\[1\]: expected an integer in 0\.\.\d+, got True \(bool\)",
        ),
        (
            {"num_decode_requests": 1, "sum_decode_kv_tokens": 1, "past_kv_lengths": (2**63,)},
            r"metrics.past_kv_lengths\[0\]: expected an integer in 0\.\.\d+, got 9223372036854775808",
        ),
    ],
)
def test_invalid_metrics_name_the_field(kwargs: dict[str, object], field: str) -> None:
    with pytest.raises(ConfigError, match=field):
        ForwardPassMetrics(**kwargs)


@pytest.mark.parametrize("bad", [[], [ForwardPassMetrics(1, 1), {"num_decode_requests": 1}], 3])
def test_rank_lists_are_checked(bad: object) -> None:
    table = table_from_points([{"batch_size": 1, "total_kv_tokens": 1, "latency_ms": 1.0}])
    with pytest.raises(ConfigError, match="metrics"):
        table.estimate_forward_pass_time_ms(bad)


def test_mixed_pass_flags() -> None:
    metrics = ForwardPassMetrics(2, 10, num_prefill_requests=1, sum_prefill_tokens=7)
    assert metrics.is_mixed and metrics.has_decode and metrics.has_prefill and not metrics.is_idle
    assert metrics == ForwardPassMetrics(2, 10, 1, 7)
    assert metrics != ForwardPassMetrics(2, 10, 1, 8)
