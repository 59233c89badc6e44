"""Calibrate a dataset: held-out MAPE of the fitted rule next to the published rule, and the
coefficients fitted on all rows as a named, versioned artefact."""

from __future__ import annotations

from typing import Any

from qualification.calibrate._artefact import build_artefact
from qualification.calibrate._fit import cross_validate, fit_coefficients
from qualification.datasets import RecordedDataset
from qualification.mape import RulePredictor, evaluate, summarize
from qualification.mape._engine import predict_all, score_rounds

PUBLISHED = {"a": 0.08, "b": 1.25}


def default_name(dataset: RecordedDataset) -> str:
    return f"{dataset.name}-fit"


def calibrate(
    dataset: RecordedDataset, *, method: str = "loco", name: str | None = None, version: int = 1
) -> dict[str, Any]:
    """The calibration report of ``dataset`` (JSON-ready); ``report["artefact"]`` is the
    coefficients artefact to save. Rows the rule cannot answer are neither fitted nor scored
    (their count and reasons are reported)."""
    rule = RulePredictor(dataset)
    published_report, _ = evaluate(dataset, rule)
    scored = score_rounds(dataset, predict_all(dataset, rule))
    usable = scored[scored["stp_reference_ms"].notna()].copy()
    held_out, folds = cross_validate(usable, method)
    held_out_scored = usable.assign(predicted_ms=held_out)
    published_scored = usable
    everything = fit_coefficients(usable)
    validation = {
        "method": method,
        "folds": folds,
        "rows_used": len(usable),
        "rows_unanswered_by_rule": len(scored) - len(usable),
        "held_out": summarize(held_out_scored),
        "published_rule_same_rows": summarize(published_scored),
    }
    artefact = build_artefact(
        name or default_name(dataset), version, everything, dataset, validation
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
