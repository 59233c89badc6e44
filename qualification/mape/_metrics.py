"""MAPE metrics over scored rounds: the definitions every report uses.

Input is a frame with one row per recorded round: ``config_id``, ``cell`` (its label) and the
cell's ``device``, ``model`` and ``draft_length``, ``measured_ms``, ``predicted_ms`` (NaN when the predictor did not answer) and ``reason`` (why not). Definitions
(APE = |predicted - measured| / measured; signed error = (predicted - measured) / measured):

* round-weighted MAPE: mean APE over answered rounds (a configuration with more rounds weighs
  more);
* equal-configuration MAPE: mean over answered configurations of the configuration's APE, where a
  configuration is scored on the median of its measured rounds (each configuration counts once);
* P90: 90th percentile (linear interpolation) of the per-round APE;
* worst configuration: the largest configuration APE, with its id;
* bias: mean signed error over answered rounds (positive: the predictor over-estimates);
* coverage: answered rounds / rounds, with a count per reason for the unanswered.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pandas as pd

CONFIG_COLUMNS = (
    "config_id",
    "cell",
    "rounds",
    "measured_median_ms",
    "predicted_ms",
    "ape",
    "signed_error",
)


def configuration_table(scored: pd.DataFrame) -> pd.DataFrame:
    """One row per configuration: measured median, prediction, APE and signed error.

    A configuration's prediction must be the same for all its rounds (it depends only on the
    configuration's coordinates); a configuration is answered when that prediction exists.
    """
    rows = []
    for config, group in scored.groupby("config_id", sort=True):
        predictions = group["predicted_ms"].dropna().unique()
        measured = float(np.median(group["measured_ms"].to_numpy()))
        predicted = float(predictions[0]) if len(predictions) else math.nan
        rows.append(
            {
                "config_id": str(config),
                "cell": str(group["cell"].iloc[0]),
                "rounds": len(group),
                "measured_median_ms": measured,
                "predicted_ms": predicted,
                "ape": abs(predicted - measured) / measured,
                "signed_error": (predicted - measured) / measured,
            }
        )
    return pd.DataFrame(rows, columns=list(CONFIG_COLUMNS))


def summarize(scored: pd.DataFrame) -> dict[str, Any]:
    """The headline metrics (see module docstring); NaN-free: absent values are ``None``."""
    total = len(scored)
    answered = scored[scored["predicted_ms"].notna()]
    reasons = Counter(str(r) for r in scored.loc[scored["predicted_ms"].isna(), "reason"])
    configs = configuration_table(scored)
    answered_configs = configs[configs["predicted_ms"].notna()]
    result: dict[str, Any] = {
        "rounds": total,
        "rounds_answered": len(answered),
        "configurations": len(configs),
        "configurations_answered": len(answered_configs),
        "coverage": len(answered) / total if total else 0.0,
        "unanswered_reasons": dict(sorted(reasons.items())),
        "round_weighted_mape": None,
        "equal_config_mape": None,
        "p90_ape": None,
        "worst_config": None,
        "bias": None,
        "equal_config_bias": None,
    }
    if len(answered):
        measured = answered["measured_ms"].to_numpy(dtype=float)
        signed = (answered["predicted_ms"].to_numpy(dtype=float) - measured) / measured
        ape = np.abs(signed)
        result["round_weighted_mape"] = float(ape.mean())
        result["p90_ape"] = float(np.percentile(ape, 90, method="linear"))
        result["bias"] = float(signed.mean())
    if len(answered_configs):
        worst = answered_configs.sort_values(["ape", "config_id"], ascending=[False, True]).iloc[0]
        result["equal_config_mape"] = float(answered_configs["ape"].mean())
        result["equal_config_bias"] = float(answered_configs["signed_error"].mean())
        result["worst_config"] = {"config_id": str(worst["config_id"]), "ape": float(worst["ape"])}
    return result


def cell_table(scored: pd.DataFrame) -> list[dict[str, Any]]:
    """The summary of each cell (device x model/drafter x d), ordered by device, model, d."""
    cells = []
    for (device, model, d), group in scored.groupby(["device", "model", "draft_length"], sort=True):
        cells.append(
            {
                "cell": str(group["cell"].iloc[0]),
                "device": str(device),
                "model": str(model),
                "draft_length": int(str(d)),
                **summarize(group),
            }
        )
    return cells
