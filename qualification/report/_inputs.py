"""Where the report's inputs are: the plan, the evidence directory, earlier check results.

Everything here runs before any scoring, so a wrong path is one clear error in well under a
second, never a report of zero datasets.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from aisim.errors import ConfigError
from aisim.files import check_writable
from qualification._provenance import REPO_ROOT
from qualification.plan import DEFAULT_PLAN, Plan, load_plan
from qualification.report._checks import CHECKS

REPORT_FILES = ("report.html", "report.json")


def check_report_target(out_dir: Path, overwrite: bool) -> None:
    """Refuse an existing report (without ``overwrite``) or an output path that is a file."""
    if out_dir.exists() and not out_dir.is_dir():
        raise ConfigError(f"--out {str(out_dir)!r}: exists and is not a folder")
    for name in REPORT_FILES:
        check_writable(out_dir / name, overwrite)


def plan_source(path: Path | None) -> tuple[Plan, dict[str, Any]]:
    """The plan (default: the shipped release plan) and where it came from."""
    file = DEFAULT_PLAN if path is None else path
    plan = load_plan(file)
    shown = "qualification/plan.yaml" if path is None else file.as_posix()
    return plan, {"path": shown, "sha256": hashlib.sha256(file.read_bytes()).hexdigest()}


def resolve_evidence(given: Path | None) -> tuple[Path, Path]:
    """The evidence directory and the root the checks run under (its parent: the repository
    holding ``tests/`` and the results files a plan names).

    A given directory must exist. Without one: ``./evidence``, else the ``evidence/`` of the
    checkout this harness was imported from, so the report works from any directory."""
    if given is not None:
        if not given.is_dir():
            raise ConfigError(f"--evidence {str(given)!r}: not a directory")
        evidence = given
    else:
        candidates = [Path("evidence"), REPO_ROOT / "evidence"]
        found = [c for c in candidates if c.is_dir()]
        if not found:
            raise ConfigError(
                "--evidence: not given, and no evidence/ directory here or in the aisim checkout; "
                "pass --evidence DIR"
            )
        evidence = found[0]
    return evidence, evidence.resolve().parent


def parse_check_results(items: list[str]) -> dict[str, Path]:
    """``["parity=FILE", ...]`` -> ``{"parity": Path(FILE)}``; each file must exist."""
    results: dict[str, Path] = {}
    for item in items:
        name, sep, file = item.partition("=")
        if not sep or name not in CHECKS or not file:
            raise ConfigError(
                f"--check-results: expected NAME=FILE with NAME one of "
                f"{', '.join(CHECKS)}, got {item!r}"
            )
        if name in results:  # the later one used to replace the earlier silently
            raise ConfigError(
                f"--check-results {name}: given twice ({str(results[name])!r} and "
                f"{file!r}); give each check's result once"
            )
        if not Path(file).is_file():
            raise ConfigError(f"--check-results {name}: {file!r} not found")
        results[name] = Path(file)
    return results
