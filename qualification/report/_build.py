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
from qualification.plan import Plan
from qualification.report._checks import run_checks
from qualification.report._intervals import BootstrapSettings, interval_figures
from qualification.report._transfer import artefact_transfers
from qualification.report._verdict import judge

REPORT_SCHEMA = {"name": "aisim.release_report", "version": 3}
_PACKAGES = (
    "numpy",
    "pandas",
    "pyarrow",
    "matplotlib",
    "torch",
    "hypothesis",
    "pytest",
    "scipy",
    "pydantic",
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


def dataset_section(
    directory: Path, settings: BootstrapSettings
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """MAPE of the published rule (with KS/TOST), the unscaled widened STP for context, and a
    held-out calibration, each with bootstrap intervals over configurations; a dataset that
    fails verification is reported as refused."""
    from qualification.calibrate import calibrate, held_out_rows
    from qualification.datasets import load_dataset
    from qualification.mape import evaluate, make_predictor, plots
    from qualification.report._plots import trend_plot

    try:
        dataset = load_dataset(directory)
        rule, scored = evaluate(dataset, make_predictor("rule", dataset), with_tests=True)
        widened, _ = evaluate(dataset, make_predictor("stp-widened", dataset))
    except AisimError as exc:
        return {"name": directory.name, "status": "refused", "reason": str(exc)}, {}
    statistics = {"rule": interval_figures(scored, settings)}
    try:
        result = calibrate(dataset, method="loco")
        calibration: dict[str, Any] = {
            "status": "fitted",
            **{k: result[k] for k in ("fitted_all_rows", "validation", "dataset", "published")},
        }
        statistics["calibrated_heldout"] = interval_figures(
            held_out_rows(dataset, "loco"), settings
        )
    except AisimError as exc:  # e.g. a single draft length: (a, b) cannot be told apart
        calibration = {"status": "not run", "reason": str(exc)}
    images = {
        f"{dataset.name}/{name}": data
        for name, data in plots(scored, f"published rule on {dataset.name}").items()
    }
    images[f"{dataset.name}/signed_error_by_d_b_k.png"] = trend_plot(
        statistics, f"signed error by d, B and K on {dataset.name} (95 % bootstrap intervals)"
    )
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
        "statistics": statistics,
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


def prediction_gate(enabled: bool) -> dict[str, Any]:
    """Evaluate the gate's default scenarios: a scenario that raises an error fails."""
    if not enabled:
        return {"status": "not run", "reason": "skipped on request (--skip-checks)"}
    from qualification.gate import DEFAULT_SCENARIOS, take_snapshot

    snapshot = take_snapshot(DEFAULT_SCENARIOS)
    failed = sorted(k for k, v in snapshot["predictions"].items() if "error" in v)
    return {
        "status": "run",
        "scenarios_file": DEFAULT_SCENARIOS.name,
        "scenarios_sha256": snapshot["scenarios_sha256"],
        "scenarios": len(snapshot["predictions"]),
        "predictions": sum(len(v) for v in snapshot["predictions"].values()),
        "failed_scenarios": failed,
        "command": "aisim snapshot --out snapshot.json",
    }


def cost_model_section() -> dict[str, Any]:
    """The default roofline against public measurements (before: roofline_ideal), the
    published-rule cross-check on every built-in GPU and Llama-3.1-70B TP 4 / 8 prefill against
    a silicon-based reference simulator's figures (``qualification.public``), with the figures a
    plan's ``cost_model`` criteria judge."""
    from qualification.public import prefill_reference, rulecheck, score

    try:
        before, after, rows = score("roofline_ideal"), score("roofline"), rulecheck()
        prefill = prefill_reference("roofline")
    except AisimError as exc:
        return {"status": "not run", "reason": str(exc)}
    bf16, fp8 = prefill["groups"]["bf16"], prefill["groups"]["fp8"]
    return {
        "status": "run",
        "public_before": before,
        "public_after": after,
        "rulecheck": rows,
        "prefill_reference": prefill,
        "figures": {
            "public_mape": after["mape_percent"] / 100,
            "public_held_out_mape": after["mape_held_out_percent"] / 100,
            "public_decode_mape": after["mape_decode_percent"] / 100,
            "public_sd_ratio_mape": after["mape_sd_percent"] / 100,
            "rounds_below_widened_stp": sum(int(row["below_widened_count"]) for row in rows),
            "prefill_70b_tp_median_error": bf16["median_abs_error_percent"] / 100,
            "prefill_70b_tp_max_error": bf16["max_abs_error_percent"] / 100,
            "prefill_70b_tp_fp8_max_error": fp8["max_abs_error_percent"] / 100,
        },
    }


def build_report(
    evidence: Path,
    plan: Plan,
    *,
    run_checks_now: bool = True,
    root: Path | None = None,
    command: str | None = None,
    check_results: dict[str, Path] | None = None,
    plan_source: dict[str, Any] | None = None,
) -> tuple[dict[str, Any], dict[str, bytes]]:
    """The report (JSON-ready) judged against ``plan``, and its images (name -> PNG bytes).

    ``root`` is the repository whose tests the checks run (default: the working directory);
    ``check_results`` maps a check name to a pytest JUnit XML file to read instead of running
    it; ``command`` is the command that asked for the report (listed first among the commands
    run); ``plan_source`` says where the plan came from (path, SHA-256)."""
    root = root or Path.cwd()
    settings = BootstrapSettings(
        plan.bootstrap.resamples,
        plan.bootstrap.confidence,
        plan.bootstrap.seed,
        plan.bootstrap.method,
    )
    sections, images = [], {}
    directories = find_datasets(evidence)
    for directory in directories:
        section, section_images = dataset_section(directory, settings)
        sections.append(section)
        images.update(section_images)
    from qualification.engine import engine_sections

    engines, engine_images = engine_sections(evidence)
    images.update(engine_images)
    checks = run_checks(root, run_checks_now, check_results or {})
    gate = prediction_gate(run_checks_now)
    cost_model = cost_model_section()
    from qualification.uncertainty import report_section

    interval_coverage = report_section(evidence)
    from qualification.public_gpu import public_gpu_section

    public_gpu, public_gpu_images = public_gpu_section(evidence)
    images.update(public_gpu_images)
    artefacts = calibration_artefacts(evidence)
    transfers = artefact_transfers(artefacts, directories, settings)
    commands = [
        *([command] if command else []),
        *(c["command"] for c in checks if c["command"]),
        *([gate["command"]] if gate["status"] == "run" else []),
        "aisim qualify public",
        "aisim qualify rulecheck",
        *([interval_coverage["command"]] if interval_coverage["status"] == "run" else []),
        *([public_gpu["command"]] if public_gpu["status"] == "run" else []),
        *(
            f"aisim qualify mape {s['path']} --estimator rule --tests; "
            f"aisim qualify calibrate {s['path']} --validation loco"
            for s in sections
            if s["status"] == "scored"
        ),
        *(s["command"] for s in engines if s["status"] == "scored"),
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
        "engine_comparisons": engines,
        "calibration_artefacts": artefacts,
        "calibration_transfer": transfers,
        "cost_model": cost_model,
        "interval_coverage": interval_coverage,
        "public_gpu": public_gpu,
        "prediction_gate": gate,
        "plan": {
            "name": plan.name,
            "version": plan.version,
            **(plan_source or {}),
            "bootstrap": settings.as_dict(),
        },
    }
    report["criteria"], report["verdict"] = judge(plan, report, root)
    return report, images
