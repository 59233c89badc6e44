"""How uncertain the fitted MTP acceptance of an InferenceX point is: the spread its own fit
shows (InferenceX records no acceptance; ``_fit.fit_mtp_acceptance`` fits one rate per engine
and ISL/OSL on the H200 history pairs).

Each training pair, on its own, implies a rate: the one whose predicted MTP / no-MTP TPOT
ratio equals the pair's measured one (``implied_rate``). Left out of the fit, the pair's
implied rate differs from the rate the other pairs fit (``_fit._fit_rate``, the same median
fit) by a **leave-one-out residual**, taken on the logit scale (a rate stays in (0, 1)). A
replica of a point draws one residual of its engine and workload uniformly and moves the
point's per-position rate by it, ``logit(a') = logit(a) + r`` (``FittedRateSpread``), as the
``overhead`` source adds one fitted point's leave-one-out error: the interval holds the
rate's error as far as the training pairs measured it, and no further. A workload fitted on
no pair of its own (SGLang 1024/8192, transferred from TensorRT-LLM's rates) borrows the
residuals of the engine's reference workload (``ACCEPTANCE_REFERENCE_WORKLOAD``); the
transfer's own error is not measured by any pair and is not drawn.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from qualification.public_gpu._fit import (
    ACCEPTANCE_REFERENCE_WORKLOAD,
    ACCEPTANCE_WORKLOADS,
    _fit_rate,
    acceptance_pairs,
)


def _logit(rate: float) -> float:
    return math.log(rate / (1.0 - rate))


def _expit(value: float) -> float:
    return 1.0 / (1.0 + math.exp(-value))


def implied_rate(depth: int, scale: float, measured: float) -> float:
    """The per-position rate at which one pair's predicted ratio ``scale / AL(a)`` equals its
    measured one (AL(a) = 1 + a + .. + a^depth; the fit's bisection, so within [0.01, 0.99])."""
    return _fit_rate([("", depth, scale, measured)])


def leave_one_out(pairs: list[tuple[str, int, float, float]]) -> list[dict[str, Any]]:
    """Per pair: its implied rate, the rate the other pairs fit, and the residual
    logit(implied) - logit(without). Fewer than two pairs: no residual (empty)."""
    if len(pairs) < 2:
        return []
    rows = []
    for index, (pair_id, depth, scale, measured) in enumerate(pairs):
        implied = implied_rate(depth, scale, measured)
        without = _fit_rate(pairs[:index] + pairs[index + 1 :])
        rows.append(
            {
                "pair": pair_id,
                "implied_rate": implied,
                "rate_without": without,
                "residual": _logit(implied) - _logit(without),
            }
        )
    return rows


@dataclass(frozen=True)
class FittedRateSpread:
    """A fitted rate's leave-one-out residuals on the logit scale (an ``AcceptanceSpread``):
    a replica draws one uniformly and moves every per-position rate by it."""

    residuals: tuple[float, ...]
    pairs: tuple[str, ...]
    origin: str

    def sample(self, rng: Any, point_rates: list[float]) -> list[float]:
        residual = self.residuals[int(rng.integers(len(self.residuals)))]
        return [
            _expit(_logit(rate) + residual) if 0.0 < rate < 1.0 else rate for rate in point_rates
        ]

    def to_dict(self) -> dict[str, Any]:
        return {
            "spread": "leave-one-out residuals (logit) of the fitted rate",
            "origin": self.origin,
            "residuals": list(self.residuals),
            "pairs": list(self.pairs),
        }


def acceptance_spreads(evidence: Path) -> dict[tuple[str, str], FittedRateSpread]:
    """Per (engine, ISL/OSL) of the MTP acceptance fit, the spread of its fitted rate from the
    committed scored run under ``evidence`` (``evidence/public-gpu``); a workload without pairs
    of its own borrows its engine's reference workload's."""
    spreads: dict[tuple[str, str], FittedRateSpread] = {}
    for (engine, workload), pairs in sorted(acceptance_pairs(evidence).items()):
        rows = leave_one_out(pairs)
        if rows:
            spreads[(engine, workload)] = FittedRateSpread(
                tuple(row["residual"] for row in rows),
                tuple(row["pair"] for row in rows),
                f"fitted MTP acceptance ({engine}, {workload}): leave-one-out residuals of its "
                f"{len(rows)} H200 history pairs",
            )
    for engine in sorted({engine for engine, _ in spreads}):
        reference = spreads.get((engine, ACCEPTANCE_REFERENCE_WORKLOAD))
        for workload in ACCEPTANCE_WORKLOADS:
            if (engine, workload) in spreads or reference is None:
                continue
            spreads[(engine, workload)] = FittedRateSpread(
                reference.residuals,
                reference.pairs,
                f"fitted MTP acceptance ({engine}, {workload}, transferred): the residuals of "
                f"{engine} {ACCEPTANCE_REFERENCE_WORKLOAD}'s {len(reference.residuals)} H200 "
                "history pairs",
            )
    return spreads
