"""Run the parity suite and the boundary probes (pytest, in a child process) for the report.

A check whose tests are absent, or whose run fails to produce a result, is reported as
``not run`` with the reason; it is never shown as passed.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

#: name -> (test path relative to the repository root, evidence type of its results)
CHECKS = {
    "parity": ("tests/parity", "parity"),
    "probes": ("tests/probes", "synthetic"),
}
_TIMEOUT_S = 1800


def not_run(name: str, reason: str) -> dict[str, Any]:
    return {
        "name": name,
        "status": "not run",
        "reason": reason,
        "evidence_type": CHECKS[name][1],
        "command": None,
    }


def run_check(name: str, root: Path) -> dict[str, Any]:
    """Run one check under ``root``; ``status`` is ``passed``, ``failed`` or ``not run``."""
    relative, evidence_type = CHECKS[name]
    if not (root / relative).is_dir():
        return not_run(name, f"{relative} not found under {root}")
    with tempfile.TemporaryDirectory(prefix="aisim-report-") as scratch:
        junit = Path(scratch) / "junit.xml"
        command = [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            relative,
            f"--junitxml={junit}",
        ]
        # PYTHONSAFEPATH: test the installed aisim, never the source tree by accident.
        env = {**os.environ, "HYPOTHESIS_PROFILE": "ci", "MPLBACKEND": "Agg", "PYTHONSAFEPATH": "1"}
        try:
            completed = subprocess.run(
                command,
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=_TIMEOUT_S,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return not_run(name, f"pytest {relative} did not finish in {_TIMEOUT_S} s")
        if not junit.exists():
            tail = (completed.stdout + completed.stderr).strip().splitlines()[-3:]
            return not_run(name, f"pytest produced no result (exit {completed.returncode}): {tail}")
        counts = _junit_counts(junit)
    passed = completed.returncode == 0 and counts["failed"] == 0 and counts["errors"] == 0
    return {
        "name": name,
        "status": "passed" if passed else "failed",
        "exit_code": completed.returncode,
        "evidence_type": evidence_type,
        "command": f"python -m pytest -q -p no:cacheprovider {relative}",
        **counts,
    }


def _junit_counts(path: Path) -> dict[str, int]:
    root = ElementTree.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    totals = {"tests": 0, "failed": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        totals["tests"] += int(suite.get("tests", 0))
        totals["failed"] += int(suite.get("failures", 0))
        totals["errors"] += int(suite.get("errors", 0))
        totals["skipped"] += int(suite.get("skipped", 0))
    totals["passed"] = totals["tests"] - totals["failed"] - totals["errors"] - totals["skipped"]
    return totals


def run_checks(root: Path, enabled: bool) -> list[dict[str, Any]]:
    """Every check, or every check marked ``not run`` when ``enabled`` is False."""
    if not enabled:
        return [not_run(name, "skipped on request (--skip-checks)") for name in CHECKS]
    return [run_check(name, root) for name in CHECKS]
