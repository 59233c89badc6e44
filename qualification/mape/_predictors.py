"""Predictors: what a MAPE report scores. Each maps a round's coordinates to a price or a reason.

Every predictor here is backed by ``aisim.fpm``: the dataset's STP points become a ``table``
estimator (``aisim.fpm.table_from_points``), and the published STP->SD scaling rule is the
estimator's own ``draft_length`` query. A calibrated predictor reuses that answer's unscaled STP
reference and applies fitted coefficients instead of the published ones.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from aisim.errors import AisimError
from qualification.datasets import RecordedDataset


@dataclass(frozen=True)
class RoundQuery:
    """The coordinates of one SD-round configuration (what a predictor may look at)."""

    config_id: str
    draft_length: int
    batch_size: int
    total_kv_tokens: int


@dataclass(frozen=True)
class Prediction:
    """``latency_ms`` of one round, or ``None`` with ``reason``; ``stp_reference_ms`` is the
    unscaled F_STP((d + 1) B, K) behind a rule answer (``None`` for other predictors)."""

    latency_ms: float | None
    reason: str = ""
    stp_reference_ms: float | None = None


class Predictor(Protocol):
    """Anything with a ``name``, a one-line ``description`` and ``predict(query)``."""

    name: str
    description: str

    def predict(self, query: RoundQuery) -> Prediction: ...


def stp_points(dataset: RecordedDataset) -> list[dict[str, Any]]:
    """The dataset's STP medians in the form ``aisim.fpm.table_from_points`` takes."""
    frame = dataset.stp_points
    return [
        {
            "batch_size": int(b),
            "total_kv_tokens": int(k),
            "latency_ms": float(latency),
        }
        for b, k, latency in zip(
            frame["batch_size"], frame["total_kv_tokens"], frame["latency_ms_median"], strict=True
        )
    ]


class RulePredictor:
    """The published rule ``(0.08 d + 1.25) F_STP((d + 1) B, K)`` over the dataset's STP table."""

    name = "rule"
    description = "published STP->SD scaling rule over the dataset's STP table (aisim.fpm)"

    def __init__(self, dataset: RecordedDataset) -> None:
        from aisim.fpm import table_from_points

        identity = {
            "dataset": dataset.name,
            "target_geometry_sha256": str(
                dataset.identity.get("target", {}).get("geometry_sha256")
            ),
        }
        self.table = table_from_points(
            stp_points(dataset), identity=identity, source=f"{dataset.name}/stp_points.parquet"
        )

    def predict(self, query: RoundQuery) -> Prediction:
        from aisim.fpm import ForwardPassMetrics

        metrics = ForwardPassMetrics(
            num_decode_requests=query.batch_size, sum_decode_kv_tokens=query.total_kv_tokens
        )
        try:
            result = self.table.estimate_forward_pass_detailed(
                metrics, draft_length=query.draft_length
            )
        except AisimError as exc:
            return Prediction(None, reason=f"{type(exc).__name__}: {exc}")
        reference = result.stp_reference
        return Prediction(
            float(result.latency_ms),
            stp_reference_ms=float(reference.latency_ms) if reference is not None else None,
        )


class ScaledPredictor:
    """``(a d + b) F_STP((d + 1) B, K)`` with given coefficients, F_STP from the rule's
    reference (so widening and table coverage are exactly the published rule's)."""

    def __init__(self, base: RulePredictor, a: float, b: float, name: str, description: str):
        self.base, self.a, self.b = base, a, b
        self.name, self.description = name, description

    def predict(self, query: RoundQuery) -> Prediction:
        answer = self.base.predict(query)
        if answer.stp_reference_ms is None:
            return answer
        factor = self.a * query.draft_length + self.b
        return Prediction(
            factor * answer.stp_reference_ms, stp_reference_ms=answer.stp_reference_ms
        )


class WidenedStpPredictor(ScaledPredictor):
    """F_STP((d + 1) B, K) alone (factor 1): what the rule's factor adds, for comparison."""

    def __init__(self, base: RulePredictor) -> None:
        super().__init__(base, 0.0, 1.0, "stp-widened", "unscaled F_STP((d+1)B, K) (factor 1)")
