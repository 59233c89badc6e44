"""``GridModel``: the one base of the estimators built from recorded (B, K_total, latency)
points (table, measured_round, regression): the points, their identity and source, and the grid
the table and measured-round estimators interpolate over (regression fits the same points and
says its own coverage). Compiled by mypyc.
"""

from __future__ import annotations

from typing import Any

from aisim.catalogue import ModelSpec
from aisim.fpm._interpolate import InterpolationGrid
from aisim.fpm._model import ForwardPassModel
from aisim.fpm._pass_metrics import ForwardPassMetrics


class GridModel(ForwardPassModel):
    """An estimator over recorded points: ``points`` (B, K_total, latency ms), ``identity`` (what
    was recorded), ``source`` (where the points came from) and ``grid`` (the points grouped for
    interpolation; never extrapolated)."""

    def __init__(
        self,
        name: str,
        points: list[tuple[int, int, float]],
        identity: dict[str, Any],
        data_identity: str,
        source: str,
        prices_speculation_natively: bool,
        supports_draft_length: bool,
        model_spec: ModelSpec | None = None,
        speculation: str = "none",
        draft_length_refusal: str = "",
    ) -> None:
        super().__init__(
            name=name,
            prices_speculation_natively=prices_speculation_natively,
            supports_draft_length=supports_draft_length,
            model_spec=model_spec,
            data_identity=data_identity,
            speculation=speculation,
            draft_length_refusal=draft_length_refusal,
        )
        self.points = points
        self.identity = identity
        self.source = source
        self.grid = InterpolationGrid(points)

    def _grid_ms(self, rank: ForwardPassMetrics, path: str) -> float:
        return self.grid.latency_ms(rank.num_decode_requests, rank.sum_decode_kv_tokens, path)

    def _rank_coverage(self, rank: ForwardPassMetrics) -> str:
        """``measured`` at a recorded point, ``interpolated`` between them."""
        if self.grid.is_exact(rank.num_decode_requests, rank.sum_decode_kv_tokens):
            return "measured"
        return "interpolated"
