"""Fit (a, b) of ``T = (a d + b) F_STP((d + 1) B, K)`` and validate it on held-out configurations.

The fit minimises the squared *relative* error over rounds, sum(((a d + b) F / T - 1)^2), which
is linear in (a, b): with x1 = d F / T and x2 = F / T the normal equations are a 2 x 2 system.
Validation splits by configuration (all rounds of a configuration fall on one side), either
leave-one-configuration-out or k folds dealt round-robin over configurations sorted by (d, B, K);
each fold is fitted on its training configurations only and scored on the others.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from aisim.errors import ConfigError, UnsupportedQuery

FIT_COLUMNS = (
    "config_id",
    "draft_length",
    "batch_size",
    "total_kv_tokens",
    "stp_reference_ms",
    "measured_ms",
)


@dataclass(frozen=True)
class Coefficients:
    """The factor is ``a * d + b``; the published rule is a = 0.08, b = 1.25."""

    a: float
    b: float

    def factor(self, draft_length: int) -> float:
        return self.a * draft_length + self.b


@dataclass(frozen=True)
class Fold:
    """Configurations a fold is fitted on (``train``) and scored on (``test``), disjoint."""

    index: int
    train: tuple[str, ...]
    test: tuple[str, ...]


def fit_coefficients(rows: pd.DataFrame) -> Coefficients:
    """Least relative squares over ``rows`` (columns ``draft_length``, ``stp_reference_ms``,
    ``measured_ms``). Raises UnsupportedQuery unless the rows hold two distinct draft lengths
    (with one, a and b cannot be told apart)."""
    if rows["draft_length"].nunique() < 2:
        raise UnsupportedQuery(
            f"calibrate: need rounds at two or more draft lengths to fit (a, b), got "
            f"{sorted(int(d) for d in rows['draft_length'].unique())}"
        )
    ratio = rows["stp_reference_ms"].to_numpy(float) / rows["measured_ms"].to_numpy(float)
    x1 = rows["draft_length"].to_numpy(float) * ratio
    x2 = ratio
    gram = np.array([[x1 @ x1, x1 @ x2], [x1 @ x2, x2 @ x2]])
    rhs = np.array([x1.sum(), x2.sum()])
    a, b = np.linalg.solve(gram, rhs)
    return Coefficients(float(a), float(b))


def make_folds(rows: pd.DataFrame, method: str) -> list[Fold]:
    """``method`` is ``loco`` (leave one configuration out) or ``kfold:K`` (K >= 2)."""
    configs = (
        rows.drop_duplicates("config_id")
        .sort_values(["draft_length", "batch_size", "total_kv_tokens", "config_id"])["config_id"]
        .astype(str)
        .tolist()
    )
    if method == "loco":
        groups = [[config] for config in configs]
    elif method.startswith("kfold:") and method[6:].isdigit():
        k = int(method[6:])
        if not 2 <= k <= len(configs):
            raise ConfigError(
                f"--validation: kfold:K needs 2 <= K <= {len(configs)} configurations, got {k}"
            )
        groups = [configs[start::k] for start in range(k)]
    else:
        raise ConfigError(f"--validation: expected loco or kfold:K, got {method!r}")
    return [
        Fold(index, tuple(c for c in configs if c not in set(test)), tuple(test))
        for index, test in enumerate(groups)
    ]


def cross_validate(rows: pd.DataFrame, method: str) -> tuple[pd.Series, list[dict[str, object]]]:
    """Held-out predictions for every row (index-aligned with ``rows``) and one record per fold
    (its configurations and fitted coefficients). A row is only ever predicted by a fit that
    did not see its configuration."""
    predicted = pd.Series(np.nan, index=rows.index, dtype=float)
    records: list[dict[str, object]] = []
    for fold in make_folds(rows, method):
        train = rows[rows["config_id"].isin(fold.train)]
        test_mask = rows["config_id"].isin(fold.test)
        if set(fold.train) & set(fold.test):
            raise AssertionError("fold leaks configurations")  # make_folds guarantees disjoint
        coefficients = fit_coefficients(train)
        test = rows[test_mask]
        factors = test["draft_length"].to_numpy(float) * coefficients.a + coefficients.b
        predicted.loc[test.index] = factors * test["stp_reference_ms"].to_numpy(float)
        records.append(
            {
                "fold": fold.index,
                "test": list(fold.test),
                "train_configurations": len(fold.train),
                "a": coefficients.a,
                "b": coefficients.b,
            }
        )
    return predicted, records
