"""The ``regression`` estimator: latency_ms = c0 + c1 * B + c2 * K_total fitted to STP points.

Ordinary least squares on recorded decode STP points (B and K_total per rank), solved from the
3 x 3 normal equations by Gaussian elimination with partial pivoting on standardised inputs
(plain Python, compiled). The fit reports its in-sample error (MAPE %, max APE %, R^2, RMSE).
Queries inside the fitted box [min B, max B] x [min K, max K] are ``fitted``; outside they are
answered but labelled ``extrapolated``; a non-positive prediction is ``UnsupportedQuery``.
"""

from __future__ import annotations

import math
from typing import Any

from aisim.errors import ConfigError, UnsupportedQuery
from aisim.fpm._grid import GridModel
from aisim.fpm._pass_metrics import ForwardPassMetrics

#: Relative pivot below which the design is declared singular (collinear B and K_total).
SINGULAR_PIVOT = 1e-9


def solve_3x3(matrix: list[list[float]], rhs: list[float]) -> list[float] | None:
    """Solve ``matrix @ x = rhs`` (3 x 3); ``None`` when (numerically) singular."""
    a = [list(row) + [value] for row, value in zip(matrix, rhs, strict=True)]
    scale = max(abs(value) for row in matrix for value in row)
    if scale <= 0.0:
        return None
    for column in range(3):
        pivot = column
        for candidate in range(column + 1, 3):
            if abs(a[candidate][column]) > abs(a[pivot][column]):
                pivot = candidate
        if abs(a[pivot][column]) <= SINGULAR_PIVOT * scale:
            return None
        a[column], a[pivot] = a[pivot], a[column]
        for row in range(column + 1, 3):
            ratio = a[row][column] / a[column][column]
            for k in range(column, 4):
                a[row][k] -= ratio * a[column][k]
    solution = [0.0, 0.0, 0.0]
    for row in (2, 1, 0):
        total = a[row][3]
        for k in range(row + 1, 3):
            total -= a[row][k] * solution[k]
        solution[row] = total / a[row][row]
    return solution


class RegressionModel(GridModel):
    """Linear STP model in B and K_total with its fit statistics.

    Attributes: ``intercept_ms``, ``ms_per_request``, ``ms_per_kv_token``, ``fit_mape_percent``,
    ``fit_max_ape_percent``, ``fit_r_squared``, ``fit_rmse_ms``, ``num_points``.
    """

    def __init__(
        self,
        points: list[tuple[int, int, float]],
        identity: dict[str, Any],
        data_identity: str,
        source: str,
    ) -> None:
        super().__init__("regression", points, identity, data_identity, source, False, True)
        if len(points) < 3:
            raise ConfigError(
                f"points: a linear fit in B and K_total needs >= 3 points, got {len(points)}"
            )
        self.num_points = len(points)
        coefficients = _fit(points)
        self.intercept_ms = coefficients[0]
        self.ms_per_request = coefficients[1]
        self.ms_per_kv_token = coefficients[2]
        self.min_batch = min(p[0] for p in points)
        self.max_batch = max(p[0] for p in points)
        self.min_kv = min(p[1] for p in points)
        self.max_kv = max(p[1] for p in points)
        errors: list[float] = []
        squared = 0.0
        mean = sum(p[2] for p in points) / len(points)
        total = 0.0
        for batch, kv, latency in points:
            predicted = self.predict_ms(batch, kv)
            errors.append(abs(predicted - latency) / latency * 100.0)
            squared += (predicted - latency) ** 2
            total += (latency - mean) ** 2
        self.fit_mape_percent = sum(errors) / len(errors)
        self.fit_max_ape_percent = max(errors)
        self.fit_rmse_ms = math.sqrt(squared / len(points))
        self.fit_r_squared = 1.0 - squared / total if total > 0.0 else 1.0

    def predict_ms(self, batch: int, kv: int) -> float:
        """The fitted line at (``batch``, ``kv``) without support checks."""
        return (
            self.intercept_ms
            + self.ms_per_request * float(batch)
            + self.ms_per_kv_token * float(kv)
        )

    def _rank_ms(self, rank: ForwardPassMetrics, path: str) -> float:
        if rank.has_prefill:
            raise UnsupportedQuery(
                f"{path}: the regression estimator is fitted to decode STP passes only; this "
                f"rank carries {rank.num_prefill_requests} prefill request(s)"
            )
        value = self.predict_ms(rank.num_decode_requests, rank.sum_decode_kv_tokens)
        if not value > 0.0:
            raise UnsupportedQuery(
                f"{path}: the regression predicts {value!r} ms at batch_size="
                f"{rank.num_decode_requests}, total_kv_tokens={rank.sum_decode_kv_tokens}; "
                "a non-positive latency is not an answer"
            )
        return value

    def _rank_coverage(self, rank: ForwardPassMetrics) -> str:
        batch = rank.num_decode_requests
        kv = rank.sum_decode_kv_tokens
        inside = self.min_batch <= batch <= self.max_batch and self.min_kv <= kv <= self.max_kv
        return "fitted" if inside else "extrapolated"

    def _notes(self) -> list[str]:
        return [
            f"linear fit on {self.num_points} STP points from {self.source}: "
            f"{self.intercept_ms:.6g} + {self.ms_per_request:.6g} * B + "
            f"{self.ms_per_kv_token:.6g} * K_total ms; fit MAPE {self.fit_mape_percent:.3f} %, "
            f"R^2 {self.fit_r_squared:.5f}"
        ]

    def fit_report(self) -> dict[str, float]:
        """The coefficients and the in-sample fit error."""
        return {
            "intercept_ms": self.intercept_ms,
            "ms_per_request": self.ms_per_request,
            "ms_per_kv_token": self.ms_per_kv_token,
            "mape_percent": self.fit_mape_percent,
            "max_ape_percent": self.fit_max_ape_percent,
            "r_squared": self.fit_r_squared,
            "rmse_ms": self.fit_rmse_ms,
            "num_points": float(self.num_points),
        }


def _fit(points: list[tuple[int, int, float]]) -> list[float]:
    """Least-squares (c0, c1, c2) on standardised B and K, mapped back to raw units."""
    n = float(len(points))
    mean_b = sum(float(p[0]) for p in points) / n
    mean_k = sum(float(p[1]) for p in points) / n
    spread_b = max(abs(float(p[0]) - mean_b) for p in points) or 1.0
    spread_k = max(abs(float(p[1]) - mean_k) for p in points) or 1.0
    matrix = [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]]
    rhs = [0.0, 0.0, 0.0]
    for batch, kv, latency in points:
        row = [1.0, (float(batch) - mean_b) / spread_b, (float(kv) - mean_k) / spread_k]
        for i in range(3):
            rhs[i] += row[i] * latency
            for j in range(3):
                matrix[i][j] += row[i] * row[j]
    solution = solve_3x3(matrix, rhs)
    if solution is None:
        raise ConfigError(
            "points: batch_size and total_kv_tokens are collinear (or constant) in the recorded "
            "points, so a linear fit in both is not identifiable; record at least two contexts "
            "per batch size"
        )
    per_request = solution[1] / spread_b
    per_kv = solution[2] / spread_k
    return [solution[0] - per_request * mean_b - per_kv * mean_k, per_request, per_kv]
