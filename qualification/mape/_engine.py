"""Score a predictor against a recorded dataset: per-round rows, configurations, cells, headline."""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from aisim.errors import ConfigError
from qualification.datasets import RecordedDataset
from qualification.mape._metrics import cell_table, configuration_table, summarize
from qualification.mape._predictors import Prediction, Predictor, RoundQuery
from qualification.mape._stats import ks_two_sample, tost_log_ratio

MAPE_SCHEMA = {"name": "aisim.mape_report", "version": 1}


def cell_labels(dataset: RecordedDataset) -> tuple[str, str]:
    """(device, model/drafter) of a dataset, from its identity."""
    identity = dataset.identity
    device = identity.get("device", {})
    device_label = f"{device.get('type', '?')} ({device.get('name', 'unknown')})"
    draft = identity.get("draft", {})
    model_label = f"{identity.get('preset', 'unknown')}/{draft.get('kind', 'unknown')}"
    return device_label, model_label


def queries(dataset: RecordedDataset) -> dict[str, RoundQuery]:
    """One query per configuration id, from the SD-round table."""
    frame = dataset.sd_rounds.drop_duplicates("config_id")
    return {
        str(config): RoundQuery(str(config), int(d), int(b), int(k))
        for config, d, b, k in zip(
            frame["config_id"].tolist(),
            frame["draft_length"].tolist(),
            frame["batch_size"].tolist(),
            frame["total_kv_tokens"].tolist(),
            strict=True,
        )
    }


def score_rounds(dataset: RecordedDataset, predictions: dict[str, Prediction]) -> pd.DataFrame:
    """Every recorded round beside its configuration's prediction (NaN + reason if none)."""
    device, model = cell_labels(dataset)
    rounds = dataset.sd_rounds
    predicted, reasons, references = [], [], []
    for config in rounds["config_id"]:
        answer = predictions[str(config)]
        predicted.append(math.nan if answer.latency_ms is None else answer.latency_ms)
        reasons.append(answer.reason)
        references.append(math.nan if answer.stp_reference_ms is None else answer.stp_reference_ms)
    return pd.DataFrame(
        {
            "config_id": rounds["config_id"].astype(str),
            "round_index": rounds["round_index"].astype(int),
            "device": device,
            "model": model,
            "draft_length": rounds["draft_length"].astype(int),
            "batch_size": rounds["batch_size"].astype(int),
            "total_kv_tokens": rounds["total_kv_tokens"].astype(int),
            "cell": [f"{device}, {model}, d={d}" for d in rounds["draft_length"]],
            "measured_ms": rounds["duration_ms"].astype(float),
            "predicted_ms": predicted,
            "stp_reference_ms": references,
            "outlier": rounds["outlier"].astype(bool),
            "reason": reasons,
        }
    )


def predict_all(dataset: RecordedDataset, predictor: Predictor) -> dict[str, Prediction]:
    return {config: predictor.predict(query) for config, query in sorted(queries(dataset).items())}


def evaluate(
    dataset: RecordedDataset,
    predictor: Predictor,
    *,
    with_tests: bool = False,
    tost_margin: float = 0.10,
) -> tuple[dict[str, Any], pd.DataFrame]:
    """The MAPE report of ``predictor`` on ``dataset`` (JSON-ready) and the scored rounds.

    ``with_tests`` adds a two-sample KS test (predicted vs measured round durations) and a TOST
    equivalence test on configuration log ratios within +-``tost_margin``.
    """
    if not 0.0 < tost_margin < 1.0:
        raise ConfigError(f"--tost-margin: expected a number in (0, 1), got {tost_margin!r}")
    scored = score_rounds(dataset, predict_all(dataset, predictor))
    configs = configuration_table(scored)
    report: dict[str, Any] = {
        "schema": MAPE_SCHEMA,
        "dataset": {
            "name": dataset.name,
            "sha256": dataset.sha256,
            "evidence_type": dataset.evidence_type,
            "timing_metric": dataset.identity.get("timing", {}).get("metric", "unknown"),
            "outlier_rounds": int(scored["outlier"].sum()),
        },
        "estimator": {"name": predictor.name, "description": predictor.description},
        "summary": summarize(scored),
        "cells": cell_table(scored),
        "configurations": _records(configs),
        "rows": _records(
            scored[["config_id", "round_index", "measured_ms", "predicted_ms", "outlier", "reason"]]
        ),
    }
    if with_tests:
        answered = scored[scored["predicted_ms"].notna()]
        answered_configs = configs[configs["predicted_ms"].notna()]
        report["tests"] = {
            "ks_predicted_vs_measured_rounds": ks_two_sample(
                answered["predicted_ms"].tolist(), answered["measured_ms"].tolist()
            )
            if len(answered)
            else None,
            "tost_config_log_ratio": tost_log_ratio(
                answered_configs["predicted_ms"].tolist(),
                answered_configs["measured_median_ms"].tolist(),
                tost_margin,
            ),
        }
    return report, scored


def _records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows as plain JSON values (NaN -> None, numpy scalars -> Python)."""
    records = []
    for row in frame.to_dict(orient="records"):
        clean: dict[str, Any] = {}
        for key, value in row.items():
            if isinstance(value, float) and math.isnan(value):
                clean[str(key)] = None
            elif hasattr(value, "item"):
                clean[str(key)] = value.item()
            else:
                clean[str(key)] = value
        records.append(clean)
    return records
