"""Calibrate a dataset: held-out MAPE of the fitted rule next to the published rule, and the
coefficients fitted on all rows as a named, versioned artefact."""

from __future__ import annotations

from typing import Any

import pandas as pd

from aisim.fpm import RULE_INTERCEPT, RULE_SLOPE
from qualification.calibrate._artefact import build_artefact
from qualification.calibrate._fit import cross_validate, fit_coefficients
from qualification.datasets import RecordedDataset
from qualification.mape import RulePredictor, evaluate, summarize

#: The published rule's coefficients, from the core (never restated here).
PUBLISHED = {"a": RULE_SLOPE, "b": RULE_INTERCEPT}


def default_name(dataset: RecordedDataset) -> str:
    return f"{dataset.name}-fit"


def _held_out(
    dataset: RecordedDataset, method: str
) -> tuple[dict[str, Any], pd.DataFrame, pd.Series, list[dict[str, object]]]:
    published_report, scored = evaluate(dataset, RulePredictor(dataset))
    usable = scored[scored["stp_reference_ms"].notna()].copy()
    held_out, folds = cross_validate(usable, method)
    return published_report, usable, held_out, folds


def held_out_rows(dataset: RecordedDataset, method: str = "loco") -> pd.DataFrame:
    """The scored rounds the rule answers, each predicted by a fit that never saw its
    configuration (the rows behind ``calibrate``'s held-out summary)."""
    _, usable, held_out, _ = _held_out(dataset, method)
    return usable.assign(predicted_ms=held_out)


def calibrate(
    dataset: RecordedDataset, *, method: str = "loco", name: str | None = None, version: int = 1
) -> dict[str, Any]:
    """The calibration report of ``dataset`` (JSON-ready); ``report["artefact"]`` is the
    coefficients artefact to save. Rows the rule cannot answer are neither fitted nor scored
    (their count and reasons are reported)."""
    published_report, usable, held_out, folds = _held_out(dataset, method)
    everything = fit_coefficients(usable)
    validation = {
        "method": method,
        "folds": folds,
        "rows_used": len(usable),
        "rows_unanswered_by_rule": published_report["summary"]["rounds"] - len(usable),
        "held_out": summarize(usable.assign(predicted_ms=held_out)),
        "published_rule_same_rows": summarize(usable),
    }
    artefact = build_artefact(
        default_name(dataset) if name is None else name, version, everything, dataset, validation
    )
    return {
        "dataset": {
            "name": dataset.name,
            "sha256": dataset.sha256,
            "evidence_type": dataset.evidence_type,
        },
        "published": PUBLISHED,
        "published_rule": published_report["summary"],
        "fitted_all_rows": {"a": everything.a, "b": everything.b},
        "validation": validation,
        "artefact": artefact,
    }
