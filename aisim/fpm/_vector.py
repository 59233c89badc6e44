"""Many decode queries at once with numpy: ``estimate_many(model, batch_sizes, kv_totals, d)``.

Not compiled (numpy). Tables and measured rounds interpolate with the same arithmetic, in the
same order, as the scalar path in ``_interpolate``; the regression evaluates the same line; so
results equal the scalar path bit for bit. Other estimators (roofline, ``best_available``'s
chained model) are answered query by query through the scalar path.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from aisim.errors import ConfigError, UnsupportedQuery
from aisim.fpm._interpolate import InterpolationGrid
from aisim.fpm._measured import MeasuredRoundModel
from aisim.fpm._model import ForwardPassModel
from aisim.fpm._pass_metrics import MAX_COUNT, ForwardPassMetrics
from aisim.fpm._regression import RegressionModel
from aisim.fpm._scaling import check_draft_length, scaling_factor
from aisim.fpm._table import TableModel

FloatArray = npt.NDArray[np.float64]


def _counts(values: object, name: str) -> npt.NDArray[np.int64]:
    array = np.asarray(values)
    if array.dtype == np.bool_ or array.dtype.kind not in "iuf":
        raise ConfigError(f"{name}: expected an array of non-negative integers, got {array.dtype}")
    if array.dtype.kind == "f" and (
        not np.all(np.isfinite(array)) or not np.all(array == np.floor(array))
    ):
        raise ConfigError(f"{name}: expected integral values, got non-integral numbers")
    if array.size and (array.min() < 0 or array.max() > MAX_COUNT):
        raise ConfigError(f"{name}: expected integers in 0..{MAX_COUNT}")
    return array.astype(np.int64)


def _row_values(grid: InterpolationGrid, row: int, kv: FloatArray) -> FloatArray:
    kvs = np.asarray(grid.row_kv[row], dtype=np.float64)
    lat = np.asarray(grid.row_latency_ms[row], dtype=np.float64)
    n = kvs.size
    pos = np.searchsorted(kvs, kv, side="left")
    clipped = np.minimum(pos, n - 1)
    exact = (pos < n) & (kvs[clipped] == kv)
    inside = (pos > 0) & (pos < n)
    low = np.maximum(pos - 1, 0)
    high = clipped
    k0, k1, y0, y1 = kvs[low], kvs[high], lat[low], lat[high]
    with np.errstate(divide="ignore", invalid="ignore"):
        interpolated = y0 + (y1 - y0) * (kv - k0) / (k1 - k0)
    values = np.where(exact, lat[clipped], np.where(inside, interpolated, np.nan))
    return np.asarray(values, dtype=np.float64)


def _grid_many(grid: InterpolationGrid, batch: FloatArray, kv: FloatArray) -> FloatArray:
    sizes = np.asarray(grid.batch_sizes, dtype=np.float64)
    n = sizes.size
    rows = np.vstack([_row_values(grid, row, kv) for row in range(n)])
    pos = np.searchsorted(sizes, batch, side="left")
    clipped = np.minimum(pos, n - 1)
    exact = (pos < n) & (sizes[clipped] == batch)
    inside = (pos > 0) & (pos < n)
    low = np.where(exact, clipped, np.maximum(pos - 1, 0))
    high = clipped
    columns = np.arange(batch.size)
    v0 = rows[low, columns]
    v1 = rows[high, columns]
    b0, b1 = sizes[low], sizes[high]
    with np.errstate(divide="ignore", invalid="ignore"):
        across = v0 + (v1 - v0) * (batch - b0) / (b1 - b0)
    values = np.where(exact, v0, np.where(inside, across, np.nan))
    return np.asarray(values, dtype=np.float64)


def estimate_many(
    model: ForwardPassModel,
    batch_sizes: Any,
    kv_totals: Any,
    draft_length: object = None,
    *,
    on_unsupported: str = "raise",
) -> FloatArray:
    """Decode-only latencies (ms) for paired arrays of B and K_total (one rank each).

    Equal to ``model.estimate_forward_pass_time_ms(ForwardPassMetrics(B, K), draft_length=d)``
    element by element. ``B == 0`` (with ``K == 0``) is an idle rank: 0.0. Queries the model does
    not cover raise ``UnsupportedQuery`` (``on_unsupported="raise"``) or become NaN (``"nan"``).
    """
    if on_unsupported not in ("raise", "nan"):
        raise ConfigError(f"on_unsupported: expected raise or nan, got {on_unsupported!r}")
    batch = _counts(batch_sizes, "batch_sizes")
    kv = _counts(kv_totals, "kv_totals")
    if batch.shape != kv.shape:
        raise ConfigError(
            f"kv_totals: shape {kv.shape} does not match batch_sizes shape {batch.shape}"
        )
    if np.any((batch == 0) & (kv != 0)):
        raise ConfigError("kv_totals: past KV tokens given where batch_sizes is 0")
    shape = batch.shape
    batch = batch.ravel()
    kv = kv.ravel()
    vectorized = isinstance(model, (TableModel, MeasuredRoundModel, RegressionModel))
    if not vectorized:
        return _scalar_many(model, batch, kv, draft_length, on_unsupported).reshape(shape)
    factor = 1.0
    if draft_length is not None:
        d = check_draft_length(draft_length)
        if not model.supports_draft_length:
            raise UnsupportedQuery(
                f"draft_length: the {model.name} estimator does not take draft_length "
                f"(prices_speculation_natively={model.prices_speculation_natively}); got {d}"
            )
        if batch.size and int(batch.max()) > MAX_COUNT // (d + 1):
            raise ConfigError(f"draft_length: widened batch ({d} + 1) * B exceeds {MAX_COUNT}")
        batch = batch * (d + 1)
        factor = scaling_factor(d)
    if isinstance(model, (TableModel, MeasuredRoundModel)):
        stp = _grid_many(model.grid, batch.astype(np.float64), kv.astype(np.float64))
    else:
        assert isinstance(model, RegressionModel)
        stp = (
            model.intercept_ms
            + model.ms_per_request * batch.astype(np.float64)
            + model.ms_per_kv_token * kv.astype(np.float64)
        )
        stp = np.where(stp > 0.0, stp, np.nan)
    stp = np.where(batch == 0, 0.0, stp)
    if on_unsupported == "raise" and np.any(np.isnan(stp)):
        index = int(np.flatnonzero(np.isnan(stp))[0])
        raise UnsupportedQuery(
            f"batch_sizes[{index}]: the {model.name} estimator does not cover B="
            f"{int(batch[index])}, K_total={int(kv[index])}"
            + (" (widened)" if draft_length is not None else "")
        )
    result = stp if draft_length is None else factor * stp
    return np.asarray(result, dtype=np.float64).reshape(shape)


def _scalar_many(
    model: ForwardPassModel,
    batch: npt.NDArray[np.int64],
    kv: npt.NDArray[np.int64],
    draft_length: object,
    on_unsupported: str,
) -> FloatArray:
    """Query by query through the scalar path (errors other than coverage always raise)."""
    values = np.empty(batch.size, dtype=np.float64)
    for index, (b, k) in enumerate(zip(batch.tolist(), kv.tolist(), strict=True)):
        metrics = ForwardPassMetrics(b, k)
        try:
            values[index] = model.estimate_forward_pass_time_ms(metrics, draft_length=draft_length)
        except UnsupportedQuery:
            if on_unsupported == "raise":
                raise
            values[index] = np.nan
    return values
