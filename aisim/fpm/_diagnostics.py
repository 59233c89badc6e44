"""Result records of a priced forward pass: latency, the scaling rule's evidence, diagnostics.

Every answer carries ``Diagnostics``: which estimator answered, which candidates were skipped and
why, the identity (SHA-256) of the data used, and coverage (``measured`` exact table hit,
``interpolated`` inside the measured envelope, ``fitted``/``extrapolated`` regression, ``analytic``
roofline).
"""

from __future__ import annotations

from typing import Final

from aisim.fpm._pass_metrics import ForwardPassMetrics

#: Coverage labels, from strongest to weakest evidence.
COVERAGE_LABELS: Final = ("measured", "interpolated", "fitted", "extrapolated", "analytic", "idle")


class Diagnostics:
    """How an answer was produced (all fields JSON-ready through ``to_dict``)."""

    def __init__(
        self,
        estimator: str,
        coverage: str,
        data_identity: str | None = None,
        skipped: list[tuple[str, str]] | None = None,
        notes: list[str] | None = None,
        speculation: str = "none",
        details: dict[str, float] | None = None,
    ) -> None:
        self.estimator = estimator
        self.coverage = coverage
        self.data_identity = data_identity
        self.skipped: list[tuple[str, str]] = list(skipped) if skipped is not None else []
        self.notes: list[str] = list(notes) if notes is not None else []
        self.speculation = speculation
        self.details: dict[str, float] = dict(details) if details is not None else {}

    def to_dict(self) -> dict[str, object]:
        return {
            "estimator": self.estimator,
            "coverage": self.coverage,
            "data_identity": self.data_identity,
            "skipped": [{"estimator": name, "reason": reason} for name, reason in self.skipped],
            "notes": list(self.notes),
            "speculation": self.speculation,
            "details": dict(sorted(self.details.items())),
        }

    def __repr__(self) -> str:
        return f"Diagnostics(estimator={self.estimator!r}, coverage={self.coverage!r})"


def combine_coverage(labels: list[str]) -> str:
    """The weakest coverage among ranks (idle ranks ignored; all idle -> ``idle``)."""
    worst = -1
    for label in labels:
        if label == "idle":
            continue
        index = COVERAGE_LABELS.index(label) if label in COVERAGE_LABELS else 0
        worst = max(worst, index)
    return COVERAGE_LABELS[worst] if worst >= 0 else "idle"


class StpReference:
    """The unscaled STP evidence behind a scaling-rule answer.

    ``metrics`` has the shape of the query (one ``ForwardPassMetrics`` or a list, one per rank)
    and holds the *widened* coordinates; ``latency_ms`` is the max-rank STP latency there.
    """

    def __init__(
        self,
        latency_ms: float,
        metrics: ForwardPassMetrics | list[ForwardPassMetrics],
        diagnostics: Diagnostics,
    ) -> None:
        self.latency_ms = latency_ms
        self.metrics = metrics
        self.diagnostics = diagnostics

    def to_dict(self) -> dict[str, object]:
        metrics = self.metrics
        shown: object
        if isinstance(metrics, list):
            shown = [rank.to_dict() for rank in metrics]
        else:
            shown = metrics.to_dict()
        return {
            "latency_ms": self.latency_ms,
            "metrics": shown,
            "diagnostics": self.diagnostics.to_dict(),
        }


class ForwardPassResult:
    """One priced iteration.

    ``latency_ms`` is the answer. ``draft_length`` and ``scaling_factor`` are ``None`` and
    ``stp_reference`` is ``None`` unless the STP->SD scaling rule was applied; then
    ``latency_ms == scaling_factor * stp_reference.latency_ms``. ``per_rank_latency_ms`` lists the
    price of each rank before the factor (idle ranks 0.0).
    """

    def __init__(
        self,
        latency_ms: float,
        diagnostics: Diagnostics,
        per_rank_latency_ms: list[float],
        draft_length: int | None = None,
        scaling_factor: float | None = None,
        stp_reference: StpReference | None = None,
    ) -> None:
        self.latency_ms = latency_ms
        self.diagnostics = diagnostics
        self.per_rank_latency_ms = per_rank_latency_ms
        self.draft_length = draft_length
        self.scaling_factor = scaling_factor
        self.stp_reference = stp_reference

    def to_dict(self) -> dict[str, object]:
        """JSON-ready; the same keys with or without the rule (absent parts are ``None``)."""
        return {
            "latency_ms": self.latency_ms,
            "draft_length": self.draft_length,
            "scaling_factor": self.scaling_factor,
            "stp_reference": (
                self.stp_reference.to_dict() if self.stp_reference is not None else None
            ),
            "per_rank_latency_ms": list(self.per_rank_latency_ms),
            "diagnostics": self.diagnostics.to_dict(),
        }

    def __repr__(self) -> str:
        return (
            f"ForwardPassResult(latency_ms={self.latency_ms!r}, draft_length={self.draft_length}, "
            f"estimator={self.diagnostics.estimator!r})"
        )
