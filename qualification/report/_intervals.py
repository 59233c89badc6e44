"""Bootstrap confidence intervals over configurations for the MAPE metrics (scipy.stats).

The unit of resampling is the *configuration* (d, B, K): its rounds are not independent (they
share a shape, a warm cache and a host state), so a resample draws configurations with
replacement and keeps all rounds of each one. Every interval is seeded (same data + seed ->
same interval) and reported with its number of resamples and method.

Point estimates are the definitions in ``qualification.mape`` (``summarize``); the intervals are
computed from per-configuration arrays that reproduce them exactly on the full sample.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from qualification.mape import configuration_table, summarize

#: metric -> key of ``summarize``'s output holding its point estimate
POINT_KEYS = {
    "round_weighted_mape": "round_weighted_mape",
    "equal_config_mape": "equal_config_mape",
    "p90_ape": "p90_ape",
    "bias": "bias",
    "equal_config_bias": "equal_config_bias",
    "coverage": "coverage",
}


@dataclass(frozen=True)
class BootstrapSettings:
    resamples: int
    confidence: float
    seed: int
    method: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "resamples": self.resamples,
            "confidence": self.confidence,
            "seed": self.seed,
            "method": self.method,
            "unit": "configuration",
        }


class _Configurations:
    """Per-configuration arrays of the answered rounds of a scored frame."""

    def __init__(self, scored: pd.DataFrame) -> None:
        answered = scored[scored["predicted_ms"].notna()]
        table = configuration_table(answered)
        order = table["config_id"].tolist()
        groups = {str(k): g for k, g in answered.groupby("config_id", sort=True)}
        self.ids = order
        self.round_ape: list[np.ndarray] = []
        self.round_signed: list[np.ndarray] = []
        for config in order:
            group = groups[config]
            measured = group["measured_ms"].to_numpy(float)
            signed = (group["predicted_ms"].to_numpy(float) - measured) / measured
            self.round_signed.append(signed)
            self.round_ape.append(np.abs(signed))
        self.rounds = np.array([len(a) for a in self.round_ape], dtype=float)
        self.ape_sum = np.array([a.sum() for a in self.round_ape])
        self.signed_sum = np.array([s.sum() for s in self.round_signed])
        self.config_ape = table["ape"].to_numpy(float)
        self.config_signed = table["signed_error"].to_numpy(float)
        first = answered.drop_duplicates("config_id").set_index("config_id").loc[order]
        self.d = first["draft_length"].to_numpy(float)
        self.batch = first["batch_size"].to_numpy(float)
        self.kv = first["total_kv_tokens"].to_numpy(float)

    def __len__(self) -> int:
        return len(self.ids)


def _slope(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Least-squares slope of y on x along the last axis (NaN where x does not vary)."""
    dx = x - x.mean(axis=-1, keepdims=True)
    dy = y - y.mean(axis=-1, keepdims=True)
    spread = (dx * dx).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(spread > 0, (dx * dy).sum(axis=-1) / spread, np.nan)


def _statistics(c: _Configurations) -> dict[str, Any]:
    """metric -> (vectorized statistic over index arrays, point estimate or None)."""

    def take(values: np.ndarray, index: np.ndarray) -> np.ndarray:
        return values[index.astype(np.intp)]

    def p90(index: np.ndarray) -> np.ndarray:
        index = np.atleast_2d(index.astype(np.intp))
        out = np.array(
            [
                np.percentile(np.concatenate([c.round_ape[i] for i in row]), 90, method="linear")
                for row in index
            ]
        )
        return out if out.size > 1 else out.reshape(())

    return {
        "round_weighted_mape": lambda i: take(c.ape_sum, i).sum(-1) / take(c.rounds, i).sum(-1),
        "bias": lambda i: take(c.signed_sum, i).sum(-1) / take(c.rounds, i).sum(-1),
        "equal_config_mape": lambda i: take(c.config_ape, i).mean(-1),
        "equal_config_bias": lambda i: take(c.config_signed, i).mean(-1),
        "p90_ape": p90,
        "signed_error_slope_d": lambda i: _slope(take(c.d, i), take(c.config_signed, i)),
    }


def bootstrap_interval(
    statistic: Any, size: int, settings: BootstrapSettings, seed_offset: int = 0
) -> dict[str, Any]:
    """A ``settings.confidence`` interval of ``statistic`` over ``size`` configurations.

    BCa can be undefined (all resamples equal, or a non-finite jackknife); then the percentile
    interval is reported and ``method`` says so."""
    if size < 2:
        return {"low": None, "high": None, "reason": f"{size} configuration(s): no interval"}
    data = (np.arange(size, dtype=float),)
    for method in dict.fromkeys((settings.method, "percentile")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # degenerate-data warnings: checked below
            result = stats.bootstrap(
                data,
                lambda index, axis: statistic(index),  # noqa: ARG005 (axis is always -1)
                n_resamples=settings.resamples,
                confidence_level=settings.confidence,
                method=method,
                vectorized=True,
                axis=-1,
                rng=np.random.default_rng(settings.seed + seed_offset),
            )
        low, high = float(result.confidence_interval.low), float(result.confidence_interval.high)
        if math.isfinite(low) and math.isfinite(high):
            return {"low": low, "high": high, "method": method, "resamples": settings.resamples}
    return {"low": None, "high": None, "reason": "bootstrap interval undefined"}


def interval_figures(scored: pd.DataFrame, settings: BootstrapSettings) -> dict[str, Any]:
    """Every metric's point estimate and bootstrap interval, and the signed error by d, B and K.

    ``scored`` is a frame of scored rounds (``qualification.mape.evaluate``'s second value)."""
    summary = summarize(scored)
    configs = _Configurations(scored)
    statistics = _statistics(configs)
    metrics: dict[str, Any] = {}
    for offset, (name, statistic) in enumerate(statistics.items()):
        if name == "signed_error_slope_d":
            point = float(_slope(configs.d, configs.config_signed)) if len(configs) else None
            point = None if point is None or math.isnan(point) else point
        else:
            point = summary[POINT_KEYS[name]]
        interval = (
            bootstrap_interval(statistic, len(configs), settings, offset)
            if point is not None
            else {"low": None, "high": None, "reason": "no answered configuration"}
        )
        metrics[name] = {"estimate": point, **interval}
    worst = summary["worst_config"]
    metrics["worst_config_ape"] = {
        "estimate": None if worst is None else worst["ape"],
        "config_id": None if worst is None else worst["config_id"],
    }
    metrics["coverage"] = {"estimate": summary["coverage"]}
    return {
        "configurations": len(configs),
        "rounds": int(configs.rounds.sum()),
        "metrics": metrics,
        "signed_error_by": {
            axis: _by_axis(configs, values, settings)
            for axis, values in (("d", configs.d), ("B", configs.batch), ("K", configs.kv))
        },
    }


def _by_axis(
    configs: _Configurations, values: np.ndarray, settings: BootstrapSettings
) -> list[dict[str, Any]]:
    """Mean configuration signed error at each value of one axis, with its interval over the
    configurations at that value."""
    rows = []
    for value in sorted(set(values.tolist())):
        members = np.flatnonzero(values == value)
        signed = configs.config_signed[members]

        def mean(index: np.ndarray, signed: np.ndarray = signed) -> np.ndarray:
            return np.asarray(signed[index.astype(np.intp)].mean(-1))

        rows.append(
            {
                "value": int(value),
                "configurations": len(members),
                "estimate": float(signed.mean()),
                **bootstrap_interval(mean, len(members), settings, int(value)),
            }
        )
    return rows
