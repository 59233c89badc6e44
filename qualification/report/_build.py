"""Assemble the release report: checks, every dataset's MAPE and calibration, versions, commands.

Everything in the report is a pure function of the repository state except ``generated_utc``.
"""

from __future__ import annotations

import datetime
import importlib.metadata
import platform
from pathlib import Path
from typing import Any

from aisim.errors import AisimError
from qualification._provenance import git_state
from qualification.report._checks import run_checks
from qualification.report._transfer import artefact_transfers

REPORT_SCHEMA = {"name": "aisim.release_report", "version": 1}
_PACKAGES = (
    "numpy",
    "pandas",
    "pyarrow",
    "matplotlib",
    "torch",
    "hypothesis",
    "pytest",
)


def find_datasets(evidence: Path) -> list[Path]:
    """Dataset directories under ``evidence`` (those holding an SD-round table), by name."""
    if not evidence.is_dir():
        return []
    return sorted(path.parent for path in evidence.glob("*/sd_rounds.parquet"))


def versions() -> dict[str, Any]:
    import aisim

    found: dict[str, Any] = {
        "aisim": aisim.__version__,
        "aisim_build": "compiled" if aisim.__compiled__ else "pure",
        "python": platform.python_version(),
    }
    for package in _PACKAGES:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    return found


def dataset_section(directory: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    """MAPE of the published rule (with KS/TOST), the unscaled widened STP for context, and a
    held-out calibration; a dataset that fails verification is reported as refused."""
    from qualification.calibrate import calibrate
    from qualification.datasets import load_dataset
    from qualification.mape import evaluate, make_predictor
    from qualification.mape._render import plots

    try:
        dataset = load_dataset(directory)
        rule, scored = evaluate(dataset, make_predictor("rule", dataset), with_tests=True)
        widened, _ = evaluate(dataset, make_predictor("stp-widened", dataset))
    except AisimError as exc:
        return {"name": directory.name, "status": "refused", "reason": str(exc)}, {}
    try:
        result = calibrate(dataset, method="loco")
        calibration: dict[str, Any] = {
            "status": "fitted",
            **{k: result[k] for k in ("fitted_all_rows", "validation", "dataset", "published")},
        }
    except AisimError as exc:  # e.g. a single draft length: (a, b) cannot be told apart
        calibration = {"status": "not run", "reason": str(exc)}
    images = {
        f"{dataset.name}/{name}": data
        for name, data in plots(scored, f"published rule on {dataset.name}").items()
    }
    identity = dataset.identity
    section = {
        "name": dataset.name,
        "status": "scored",
        "path": directory.as_posix(),
        "sha256": dataset.sha256,
        "evidence_type": dataset.evidence_type,
        "recording_command": dataset.rounds_sidecar.get("command", ""),
        "identity": {
            "preset": identity.get("preset"),
            "draft_kind": identity.get("draft", {}).get("kind"),
            "device": identity.get("device", {}),
            "timing": identity.get("timing", {}),
            "threads": identity.get("threads"),
            "dtype": identity.get("dtype"),
            "libraries": identity.get("libraries", {}),
            "git": identity.get("git", {}),
            "target_geometry_sha256": identity.get("target", {}).get("geometry_sha256"),
        },
        "anomalies": dataset.rounds_sidecar.get("anomalies", []),
        "rule": {k: rule[k] for k in ("estimator", "summary", "cells", "configurations", "tests")},
        "stp_widened": {"estimator": widened["estimator"], "summary": widened["summary"]},
        "calibration": calibration,
        "images": sorted(images),
    }
    return section, images


def calibration_artefacts(evidence: Path) -> list[dict[str, Any]]:
    from qualification.calibrate import load_artefact

    found = []
    for path in sorted((evidence / "calibration").glob("*.json")):
        try:
            artefact = load_artefact(path)
        except AisimError as exc:
            found.append({"path": path.as_posix(), "status": "refused", "reason": str(exc)})
            continue
        found.append({"path": path.as_posix(), "status": "valid", **artefact})
    return found


def build_report(
    evidence: Path,
    *,
    run_checks_now: bool = True,
    root: Path | None = None,
    command: str | None = None,
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The report (JSON-ready) and its images (name -> PNG bytes); ``command`` is the command
    that asked for it (listed first among the commands run)."""
    root = root or Path.cwd()
    sections, images = [], {}
    directories = find_datasets(evidence)
    for directory in directories:
        section, section_images = dataset_section(directory)
        sections.append(section)
        images.update(section_images)
    checks = run_checks(root, run_checks_now)
    artefacts = calibration_artefacts(evidence)
    transfers = artefact_transfers(artefacts, directories)
    commands = [
        *([command] if command else []),
        *(c["command"] for c in checks if c["command"]),
        *(
            f"aisim qualify mape {s['path']} --estimator rule --tests; "
            f"aisim qualify calibrate {s['path']} --validation loco"
            for s in sections
            if s["status"] == "scored"
        ),
        *(
            f"aisim qualify mape {s['path']} --estimator calibrated --coefficients "
            f"{evidence.as_posix()}/calibration/{t['artefact']}.json"
            for t in transfers
            for s in sections
            if s["name"] == t["dataset"]
        ),
    ]
    report = {
        "schema": REPORT_SCHEMA,
        "generated_utc": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "versions": versions(),
        "git": git_state(root),
        "evidence_directory": evidence.as_posix(),
        "commands": commands,
        "checks": checks,
        "datasets": sections,
        "calibration_artefacts": artefacts,
        "calibration_transfer": transfers,
        "verdict": {
            "checks_failed": [c["name"] for c in checks if c["status"] == "failed"],
            "checks_not_run": [c["name"] for c in checks if c["status"] == "not run"],
            "datasets_refused": [s["name"] for s in sections if s["status"] == "refused"],
            "datasets_scored": [s["name"] for s in sections if s["status"] == "scored"],
        },
    }
    return report, images
