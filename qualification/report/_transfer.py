"""Calibration transfer: each artefact scored on the *other* recordings it applies to.

An artefact is applied only to datasets with the same target geometry and drafter kind it was
fitted on, and never to a dataset it was fitted on, so every figure here is out of sample
across recordings (a stronger check than held-out configurations of one recording).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aisim.errors import AisimError
from qualification.report._intervals import BootstrapSettings, interval_figures


def artefact_transfers(
    artefacts: list[dict[str, Any]],
    directories: list[Path],
    settings: BootstrapSettings | None = None,
) -> list[dict[str, Any]]:
    """One entry per (valid artefact, applicable other dataset), artefacts in file order; with
    ``settings``, each carries the calibrated figures' bootstrap intervals (``statistics``)."""
    from qualification.calibrate import calibrated_factory
    from qualification.datasets import load_dataset
    from qualification.mape import evaluate, make_predictor

    datasets = []
    for directory in directories:
        try:
            datasets.append(load_dataset(directory))
        except AisimError:
            continue  # reported as refused in its own section
    transfers = []
    for artefact in artefacts:
        if artefact.get("status") != "valid":
            continue
        fitted = artefact["fitted_on"]
        hashes = {item["sha256"] for item in fitted}
        shapes = {(item.get("target_geometry_sha256"), item.get("draft_kind")) for item in fitted}
        for dataset in datasets:
            identity = dataset.identity
            shape = (
                identity.get("target", {}).get("geometry_sha256"),
                identity.get("draft", {}).get("kind"),
            )
            if dataset.sha256 in hashes or shape not in shapes:
                continue
            factory = calibrated_factory(artefact)
            predictor = make_predictor("calibrated", dataset, factory)
            calibrated, scored = evaluate(dataset, predictor)
            rule, _ = evaluate(dataset, make_predictor("rule", dataset))
            transfer = {
                "artefact": f"{artefact['name']}.v{artefact['version']}",
                "dataset": dataset.name,
                "evidence_type": dataset.evidence_type,
                "calibrated": calibrated["summary"],
                "published_rule": rule["summary"],
            }
            if settings is not None:
                transfer["statistics"] = interval_figures(scored, settings)
            transfers.append(transfer)
    return transfers
