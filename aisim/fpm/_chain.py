"""``SelectedModel``: the estimator ``best_available`` returns, asking its candidates in order.

Candidates are tried in order (measured_round, table(s), regression, roofline, as configured);
the first that covers the query answers, and the diagnostics list every candidate skipped with
its reason. With a speculation scheme configured the model prices whole SD rounds natively for
the logical batch: measured rounds directly, STP tables/regression through the scaling rule at
the scheme's draft count (decode passes), the roofline scheme-natively; ``draft_length`` is then
rejected. Without a scheme it is an STP model and ``draft_length`` selects the scaling rule.
"""

from __future__ import annotations

from aisim.catalogue import ModelSpec
from aisim.errors import UnsupportedQuery
from aisim.fpm._diagnostics import Diagnostics, ForwardPassResult
from aisim.fpm._model import ForwardPassModel
from aisim.fpm._pass_metrics import ForwardPassMetrics, as_rank_list
from aisim.fpm._roofline import RooflineModel
from aisim.fpm._sd_cost import SpeculationCost


class SelectedModel(ForwardPassModel):
    """Ordered candidates plus the reasons others were not available (``skipped``)."""

    def __init__(
        self,
        name: str,
        candidates: list[ForwardPassModel],
        skipped: list[tuple[str, str]],
        model_spec: ModelSpec | None,
        scheme: SpeculationCost | None,
    ) -> None:
        native = scheme is not None
        supports = (not native) and any(c.supports_draft_length for c in candidates)
        super().__init__(
            name=name,
            prices_speculation_natively=native,
            supports_draft_length=supports,
            model_spec=model_spec,
            data_identity=None,
            speculation=scheme.describe() if scheme is not None else "none",
            draft_length_refusal=(
                "prices the configured scheme's SD rounds natively; omit draft_length"
                if native
                else "has no STP table or regression to apply the scaling rule to"
            ),
        )
        self.candidates = candidates
        self.skipped = skipped
        self.scheme = scheme
        # The chain asks its candidates in order, statelessly: as pure as they all are.
        self.pure_prices = all(candidate.pure_prices for candidate in candidates)
        if scheme is not None:
            self.draft_weight_bytes = scheme.draft_weight_bytes
            self.draft_kv_bytes_per_token = scheme.draft_kv_bytes_per_token

    def at_draft_count(self, drafts: int) -> SelectedModel | None:
        """This selection pricing a suffix round that drafted ``drafts`` tokens per request
        (replay's per-pass draft length, docs/speculation.md "Engine methods and modes"):
        every candidate a roofline, each narrowed with ``RooflineModel.at_draft_count``.
        ``None`` when the scheme is not suffix or a candidate is not a roofline (measured
        rounds and tables answer for the configured length only)."""
        scheme = self.scheme
        narrowed_scheme = scheme.at_draft_count(drafts) if scheme is not None else None
        if narrowed_scheme is None or not self.candidates:
            return None
        candidates: list[ForwardPassModel] = []
        for candidate in self.candidates:
            if not isinstance(candidate, RooflineModel):
                return None
            narrowed = candidate.at_draft_count(drafts)
            if narrowed is None:
                return None
            candidates.append(narrowed)
        return SelectedModel(
            self.name, candidates, list(self.skipped), self.model_spec, narrowed_scheme
        )

    def _rule_depth(self, candidate: ForwardPassModel, ranks: list[ForwardPassMetrics]) -> int:
        """The draft length to ask ``candidate`` with (0: ask without one)."""
        scheme = self.scheme
        if scheme is None or candidate.prices_speculation_natively:
            return 0
        if candidate.supports_draft_length and any(rank.has_decode for rank in ranks):
            return scheme.num_draft_tokens
        return 0

    def _rank_ms(self, rank: ForwardPassMetrics, path: str) -> float:
        return self.estimate_forward_pass_time_ms(rank)

    def estimate_forward_pass_time_ms(
        self, metrics: object, *, draft_length: object = None
    ) -> float:
        ranks = as_rank_list(metrics)
        d = 0 if draft_length is None else self._accept_draft_length(draft_length)
        reasons: list[str] = []
        for candidate in self.candidates:
            depth = d if d > 0 else self._rule_depth(candidate, ranks)
            try:
                if depth > 0:
                    return candidate.estimate_forward_pass_time_ms(metrics, draft_length=depth)
                return candidate.estimate_forward_pass_time_ms(metrics)
            except UnsupportedQuery as exc:
                reasons.append(f"{candidate.name}: {exc}")
        raise UnsupportedQuery(self._nothing_covers(reasons))

    def estimate_forward_pass_detailed(
        self, metrics: object, *, draft_length: object = None
    ) -> ForwardPassResult:
        ranks = as_rank_list(metrics)
        d = 0 if draft_length is None else self._accept_draft_length(draft_length)
        skipped = list(self.skipped)
        reasons: list[str] = []
        for candidate in self.candidates:
            depth = d if d > 0 else self._rule_depth(candidate, ranks)
            try:
                if depth > 0:
                    result = candidate.estimate_forward_pass_detailed(metrics, draft_length=depth)
                else:
                    result = candidate.estimate_forward_pass_detailed(metrics)
            except UnsupportedQuery as exc:
                skipped.append((candidate.name, str(exc)))
                reasons.append(f"{candidate.name}: {exc}")
                continue
            source = result.diagnostics
            notes = list(source.notes)
            if depth > 0 and d == 0 and self.scheme is not None:
                notes.append(
                    f"scheme {self.scheme.describe()} priced by the STP->SD scaling rule at "
                    f"d={depth} on the {candidate.name} estimator"
                )
            result.diagnostics = Diagnostics(
                estimator=source.estimator,
                coverage=source.coverage,
                data_identity=source.data_identity,
                skipped=skipped + source.skipped,
                notes=notes,
                speculation=source.speculation if d > 0 else self.speculation,
                details=source.details,
            )
            return result
        raise UnsupportedQuery(self._nothing_covers(reasons))

    def _nothing_covers(self, reasons: list[str]) -> str:
        parts = [f"{name}: {reason}" for name, reason in self.skipped] + reasons
        return f"no estimator covers this query ({self.name}): " + " | ".join(parts)

    def describe(self) -> dict[str, object]:
        """The selection: candidates in order and the reasons others were skipped."""
        return {
            "estimator": self.name,
            "candidates": [candidate.name for candidate in self.candidates],
            "skipped": [{"estimator": n, "reason": r} for n, r in self.skipped],
            "speculation": self.speculation,
            "prices_speculation_natively": self.prices_speculation_natively,
            "supports_draft_length": self.supports_draft_length,
        }
