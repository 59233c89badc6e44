"""The numpy path equals the scalar path, element by element."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from aisim.config import best_available
from aisim.errors import ConfigError, UnsupportedQuery
from aisim.fpm import (
    ForwardPassMetrics,
    ForwardPassModel,
    estimate_many,
    measured_rounds_from_points,
    regression_from_points,
    table_from_points,
)

POINTS = [
    {
        "batch_size": b,
        "total_kv_tokens": k,
        "latency_ms": 1.0 + 0.37 * b + 0.0011 * k + 0.01 * (b * k % 7),
    }
    for b in (1, 2, 4, 8, 16, 32)
    for k in (0, 512, 2048, 8192, 32768)
]


def _scalar(model: ForwardPassModel, batch: Any, kv: Any, d: int | None = None) -> list[float]:
    return [
        model.estimate_forward_pass_time_ms(ForwardPassMetrics(int(b), int(k)), draft_length=d)
        for b, k in zip(batch, kv, strict=True)
    ]


def _queries(seed: int, count: int, max_batch: int) -> tuple[Any, Any]:
    rng = np.random.default_rng(seed)
    batch = rng.integers(1, max_batch + 1, size=count)
    kv = rng.integers(0, 32769, size=count)
    batch[:3] = [4, 1, 32]  # include exact hits and envelope corners
    kv[:3] = [2048, 0, 32768]
    return batch, kv


def test_table_and_rule_equal_the_scalar_path_bit_for_bit() -> None:
    table = table_from_points(POINTS)
    batch, kv = _queries(1, 500, 32)
    assert estimate_many(table, batch, kv).tolist() == _scalar(table, batch, kv)
    small = (batch - 1) // 4 + 1  # (d + 1) * B stays inside B <= 32 for d = 3
    assert estimate_many(table, small, kv, 3).tolist() == _scalar(table, small, kv, 3)


def test_regression_and_measured_rounds_equal_the_scalar_path() -> None:
    regression = regression_from_points(POINTS)
    batch, kv = _queries(2, 300, 64)
    assert estimate_many(regression, batch, kv).tolist() == _scalar(regression, batch, kv)
    assert estimate_many(regression, batch, kv, 2).tolist() == _scalar(regression, batch, kv, 2)
    identity = {
        "kind": "ngram",
        "draft_length": 3,
        "draft_identity": None,
        "timing_scope": "round",
        "role": "decode",
    }
    measured = measured_rounds_from_points(POINTS, identity=identity)
    batch, kv = _queries(3, 200, 32)
    assert estimate_many(measured, batch, kv).tolist() == _scalar(measured, batch, kv)
    with pytest.raises(UnsupportedQuery, match="draft_length"):
        estimate_many(measured, batch, kv, 3)


def test_other_models_go_through_the_scalar_path() -> None:
    model = best_available({"model": "Qwen/Qwen3-8B", "hardware": "h200"})
    batch = np.array([1, 8, 64, 0])
    kv = np.array([1024, 8 * 8192, 64 * 1024, 0])
    expected = _scalar(model, batch, kv)
    assert estimate_many(model, batch, kv).tolist() == expected
    assert expected[-1] == 0.0


def test_outside_the_envelope_raises_or_gives_nan() -> None:
    table = table_from_points(POINTS)
    batch, kv = np.array([[1, 64]]), np.array([[0, 0]])
    with pytest.raises(UnsupportedQuery, match=r"batch_sizes\[1\]"):
        estimate_many(table, batch, kv)
    values = estimate_many(table, batch, kv, on_unsupported="nan")
    assert values.shape == (1, 2)
    assert values[0, 0] == table.estimate_forward_pass_time_ms(ForwardPassMetrics(1, 0))
    assert np.isnan(values[0, 1])


@pytest.mark.parametrize(
    ("batch", "kv", "message"),
    [
        ([1, 2], [0], "shape"),
        ([1.5], [0], "integral"),
        ([-1], [0], "non-negative|0\\.\\."),
        ([0], [5], "batch_sizes is 0"),
        (["a"], [0], "batch_sizes"),
    ],
)
def test_bad_arrays_are_config_errors(batch: object, kv: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        estimate_many(table_from_points(POINTS), batch, kv)
