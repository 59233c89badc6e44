"""The ``table`` estimator: a recorded STP decode table, exact hit then interpolation.

Coordinates are per rank: B decode requests and their total past KV K_total. Interpolation and
its envelope are described in ``_interpolate``; outside the envelope the table answers
``UnsupportedQuery``. With ``draft_length=d`` the STP->SD scaling rule applies at the widened
coordinates ((d + 1) B, K_total), under the same envelope.
"""

from __future__ import annotations

from typing import Any

from aisim.catalogue import ModelSpec
from aisim.errors import UnsupportedQuery
from aisim.fpm._grid import GridModel
from aisim.fpm._pass_metrics import ForwardPassMetrics


class TableModel(GridModel):
    """STP table over validated points; build with ``table_from_points`` or the file loader.

    ``identity`` is the table's declared identity (model, hardware, backend, ... as recorded);
    ``data_identity`` is the SHA-256 of the data file when loaded from disk, else of the
    canonical points and identity. ``source`` says where the points came from.
    """

    def __init__(
        self,
        points: list[tuple[int, int, float]],
        identity: dict[str, Any],
        data_identity: str,
        source: str,
        model_spec: ModelSpec | None = None,
    ) -> None:
        super().__init__("table", points, identity, data_identity, source, False, True, model_spec)

    def _rank_ms(self, rank: ForwardPassMetrics, path: str) -> float:
        if rank.has_prefill:
            raise UnsupportedQuery(
                f"{path}: the table estimator holds decode STP passes only; this rank carries "
                f"{rank.num_prefill_requests} prefill request(s)"
            )
        return self._grid_ms(rank, path)

    def _notes(self) -> list[str]:
        return [f"STP table from {self.source} ({self.grid.num_points} points)"]

    def with_model_spec(self, model_spec: ModelSpec | None) -> TableModel:
        """The same table bound to a target geometry (``model.model_spec``)."""
        return TableModel(
            self.points, self.identity, self.data_identity or "", self.source, model_spec
        )
