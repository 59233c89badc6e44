"""The ``measured_round`` estimator: recorded whole SD rounds, matched by exact identity.

A row already contains draft + verification, so a round is priced at the *actual* request count
and past-KV total of the logical batch (exact hit, then interpolation inside the measured
envelope as in ``_interpolate``): no widening, no draft operations charged again, no scaling
factor; ``draft_length`` is rejected (double counting). Decode-only: prefill and mixed
prefill+decode passes are ``UnsupportedQuery``. Partial-width rounds use the configured depth.

Identity (``MEASURED_IDENTITY_KEYS`` required, ``OPTIONAL_IDENTITY_KEYS`` compared when present):
``kind``, ``draft_length``, ``draft_identity`` (null for kinds without a drafter network),
``timing_scope`` (``round`` = draft + verification) and ``role`` (``aggregated`` or ``decode``).
"""

from __future__ import annotations

from typing import Any, Final

from aisim._text import describe
from aisim.errors import ConfigError, UnsupportedQuery
from aisim.fpm._grid import GridModel
from aisim.fpm._pass_metrics import ForwardPassMetrics

MEASURED_IDENTITY_KEYS: Final = ("kind", "draft_length", "draft_identity", "timing_scope", "role")
OPTIONAL_IDENTITY_KEYS: Final = ("model", "hardware", "backend", "tensor_parallel")
#: The timing scope a round price needs: the whole round, draft + verification.
ROUND_SCOPE: Final = "round"


def check_measured_identity(identity: dict[str, Any], path: str) -> None:
    """Raise ``ConfigError`` for a malformed measured-round binding."""
    for key in MEASURED_IDENTITY_KEYS:
        if key not in identity:
            raise ConfigError(
                f"{path}.{key}: required for a measured_round table (keys: "
                f"{', '.join(MEASURED_IDENTITY_KEYS)})"
            )
    kind = identity["kind"]
    if not isinstance(kind, str) or kind in ("", "none"):
        raise ConfigError(f"{path}.kind: expected a speculation kind, got {describe(kind)}")
    depth = identity["draft_length"]
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise ConfigError(f"{path}.draft_length: expected an integer >= 1, got {describe(depth)}")
    for key in ("timing_scope", "role"):
        if not isinstance(identity[key], str):
            raise ConfigError(f"{path}.{key}: expected a string, got {describe(identity[key])}")
    draft = identity["draft_identity"]
    if draft is not None and not isinstance(draft, str):
        raise ConfigError(
            f"{path}.draft_identity: expected a string or null, got {describe(draft)}"
        )


def identity_mismatch(recorded: dict[str, Any], expected: dict[str, Any]) -> str:
    """``""`` when ``recorded`` matches ``expected`` exactly, else the reason (field by field).

    Required keys always compare; optional keys compare when both sides state them.
    """
    reasons: list[str] = []
    for key in MEASURED_IDENTITY_KEYS:
        if recorded.get(key) != expected.get(key):
            reasons.append(f"{key}: recorded {recorded.get(key)!r}, query {expected.get(key)!r}")
    for key in OPTIONAL_IDENTITY_KEYS:
        if key in recorded and key in expected and recorded[key] != expected[key]:
            reasons.append(f"{key}: recorded {recorded[key]!r}, query {expected[key]!r}")
    return "; ".join(reasons)


class MeasuredRoundModel(GridModel):
    """Whole-round prices at (B logical requests, K_total past KV) for one identity."""

    def __init__(
        self,
        points: list[tuple[int, int, float]],
        identity: dict[str, Any],
        data_identity: str,
        source: str,
    ) -> None:
        check_measured_identity(identity, "identity")
        super().__init__(
            "measured_round",
            points,
            identity,
            data_identity,
            source,
            True,
            False,
            None,
            f"{identity['kind']} d={identity['draft_length']} (measured rounds)",
            "already prices whole SD rounds (draft + verification); applying the scaling "
            "rule on top would double count",
        )

    def _rank_ms(self, rank: ForwardPassMetrics, path: str) -> float:
        if rank.has_prefill:
            composition = "mixed prefill+decode" if rank.has_decode else "prefill-only"
            raise UnsupportedQuery(
                f"{path}: measured SD rounds are decode-only; a {composition} pass "
                f"({rank.num_prefill_requests} prefill request(s)) was never recorded"
            )
        return self._grid_ms(rank, path)

    def _notes(self) -> list[str]:
        return [
            f"measured SD rounds from {self.source} ({self.grid.num_points} points), priced at "
            "the actual batch: no widening, no draft recharge"
        ]

    def mismatch(self, expected: dict[str, Any]) -> str:
        """Why this table does not answer for ``expected`` (``""`` when it matches)."""
        return identity_mismatch(self.identity, expected)
