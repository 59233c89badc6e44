"""``ForwardPassModel``: the interface every estimator implements, and the scaling-rule driver.

``estimate_forward_pass_time_ms(metrics, *, draft_length=None)`` prices one iteration: ``metrics``
is one ``ForwardPassMetrics`` or a list (one per attention-DP rank); the latency is the max over
ranks and an idle rank costs 0. With ``draft_length=d`` an STP estimator
(``supports_draft_length``) answers with the published STP->SD scaling rule; estimators that
price speculation natively (``prices_speculation_natively``: roofline with a scheme,
measured_round) or cannot (STP roofline) reject ``draft_length`` with ``UnsupportedQuery``.
"""

from __future__ import annotations

from abc import abstractmethod

from aisim.catalogue import ModelSpec
from aisim.errors import UnsupportedQuery
from aisim.fpm._diagnostics import (
    Diagnostics,
    ForwardPassResult,
    StpReference,
    combine_coverage,
)
from aisim.fpm._pass_metrics import ForwardPassMetrics, as_rank_list
from aisim.fpm._scaling import check_draft_length, scaling_factor, widen_ranks


class ForwardPassModel:
    """Base of every estimator.

    Attributes: ``name`` (``roofline``, ``table``, ``regression``, ``measured_round`` or
    ``auto``), ``prices_speculation_natively``, ``supports_draft_length``, ``model_spec`` (the
    target's ``ModelSpec`` or ``None`` when the data carries no geometry), ``data_identity``
    (SHA-256 of the data used, ``None`` for analytic models), ``speculation`` (a label such as
    ``eagle3 d=3 w=4``, or ``none``), ``draft_weight_bytes`` and ``draft_kv_bytes_per_token``
    (capacity planning; 0 when there is no drafter or it is unknown), ``pure_prices`` (True
    when an answer depends on the query alone, no state carried between queries, so a replay
    may remember it: the roofline, and a chain of such estimators; False by default).
    """

    def __init__(
        self,
        name: str,
        prices_speculation_natively: bool,
        supports_draft_length: bool,
        model_spec: ModelSpec | None,
        data_identity: str | None,
        speculation: str = "none",
        draft_length_refusal: str = "",
    ) -> None:
        self.name = name
        self.prices_speculation_natively = prices_speculation_natively
        self.supports_draft_length = supports_draft_length
        self.model_spec = model_spec
        self.data_identity = data_identity
        self.speculation = speculation
        self.draft_weight_bytes = 0
        self.draft_kv_bytes_per_token = 0
        self.pure_prices = False
        self._draft_length_refusal = draft_length_refusal

    # -- what subclasses provide -------------------------------------------------------------

    @abstractmethod
    def _rank_ms(self, rank: ForwardPassMetrics, path: str) -> float:
        """Latency of one non-idle rank; ``UnsupportedQuery`` (naming ``path``) if not covered."""

    def _rank_coverage(self, rank: ForwardPassMetrics) -> str:
        """Coverage label of one non-idle rank the model has priced."""
        return "analytic"

    def _rank_details(self, rank: ForwardPassMetrics) -> dict[str, float]:
        """Optional breakdown of one rank's price (the slowest rank's goes into diagnostics)."""
        return {}

    def _notes(self) -> list[str]:
        return []

    # -- public queries ----------------------------------------------------------------------

    def estimate_forward_pass_time_ms(
        self, metrics: object, *, draft_length: object = None
    ) -> float:
        """Latency (ms) of one iteration; see the module docstring for ``draft_length``."""
        ranks = as_rank_list(metrics)
        if draft_length is None:
            return _finite(_largest(self._per_rank(ranks)), self.name)
        d = self._accept_draft_length(draft_length)
        widened = widen_ranks(ranks, d)
        return _finite(scaling_factor(d) * _largest(self._per_rank(widened)), self.name)

    def estimate_forward_pass_detailed(
        self, metrics: object, *, draft_length: object = None
    ) -> ForwardPassResult:
        """The latency with its evidence (``ForwardPassResult``)."""
        ranks = as_rank_list(metrics)
        if draft_length is None:
            return self._stp_result(ranks)
        d = self._accept_draft_length(draft_length)
        widened = widen_ranks(ranks, d)
        reference = self._stp_result(widened)
        factor = scaling_factor(d)
        latency = _finite(factor * reference.latency_ms, self.name)
        shaped: ForwardPassMetrics | list[ForwardPassMetrics] = (
            widened if isinstance(metrics, (list, tuple)) else widened[0]
        )
        source = reference.diagnostics
        diagnostics = Diagnostics(
            estimator=source.estimator,
            coverage=source.coverage,
            data_identity=source.data_identity,
            skipped=source.skipped,
            notes=[
                *source.notes,
                f"STP->SD scaling rule: ({factor:.2f}) x F_STP(({d} + 1) x B, K_total)",
            ],
            speculation=f"scaling rule d={d}",
            details=source.details,
        )
        return ForwardPassResult(
            latency_ms=latency,
            diagnostics=diagnostics,
            per_rank_latency_ms=reference.per_rank_latency_ms,
            draft_length=d,
            scaling_factor=factor,
            stp_reference=StpReference(reference.latency_ms, shaped, source),
        )

    # -- helpers -----------------------------------------------------------------------------

    def _accept_draft_length(self, draft_length: object) -> int:
        d = check_draft_length(draft_length)
        if not self.supports_draft_length:
            raise UnsupportedQuery(
                f"draft_length: the {self.name} estimator {self._draft_length_refusal}; "
                f"got draft_length={d}"
            )
        return d

    def _per_rank(self, ranks: list[ForwardPassMetrics]) -> list[float]:
        prices: list[float] = []
        several = len(ranks) > 1
        for index, rank in enumerate(ranks):
            if rank.is_idle:
                prices.append(0.0)
            else:
                path = f"metrics[{index}]" if several else "metrics"
                prices.append(self._rank_ms(rank, path))
        return prices

    def _stp_result(self, ranks: list[ForwardPassMetrics]) -> ForwardPassResult:
        prices = self._per_rank(ranks)
        latency = _finite(max(prices), self.name)
        labels: list[str] = []
        slowest = 0
        for index, rank in enumerate(ranks):
            labels.append("idle" if rank.is_idle else self._rank_coverage(rank))
            if prices[index] > prices[slowest]:
                slowest = index
        details: dict[str, float] = {}
        if not ranks[slowest].is_idle:
            details = self._rank_details(ranks[slowest])
        diagnostics = Diagnostics(
            estimator=self.name,
            coverage=combine_coverage(labels),
            data_identity=self.data_identity,
            notes=self._notes(),
            speculation=self.speculation,
            details=details,
        )
        return ForwardPassResult(latency, diagnostics, prices)


def _largest(values: list[float]) -> float:
    """``max(values)`` of a non-empty list: the same comparisons (a value replaces the largest
    so far when it is greater), without the builtin's per-call boxing in the compiled core."""
    largest = values[0]
    for value in values:
        if value > largest:
            largest = value
    return largest


def _finite(value: float, name: str) -> float:
    # ``value - value`` is exactly 0.0 for a finite float and NaN for an infinite or NaN one:
    # ``math.isfinite`` without a Python call per price (mypyc has no primitive for it).
    if value - value != 0.0:
        raise UnsupportedQuery(f"{name}: the price overflowed to {value!r}; the query is too large")
    return value


def price_decode_round(model: ForwardPassModel, metrics: object, draft_length: object) -> float:
    """Price one SD decode round of ``draft_length`` drafts for the logical batch ``metrics``.

    Uses the model's native SD price when it has one (roofline with a scheme, measured_round,
    ``best_available`` with a scheme: the configured depth's timing, so partial-width rounds
    cost the same), else the STP->SD scaling rule. ``draft_length`` is validated either way.
    """
    d = check_draft_length(draft_length)
    if model.prices_speculation_natively:
        return model.estimate_forward_pass_time_ms(metrics)
    return model.estimate_forward_pass_time_ms(metrics, draft_length=d)
