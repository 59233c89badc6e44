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


def _junit_counts(path: Path) -> dict[str, Any]:
    """Totals and a per-test-module breakdown (so e.g. the replay parity suite shows by name)."""
    root = ElementTree.parse(path).getroot()
    totals: dict[str, Any] = {"tests": 0, "failed": 0, "errors": 0, "skipped": 0, "passed": 0}
    modules: dict[str, dict[str, int]] = {}
    for case in root.iter("testcase"):
        parts = case.get("classname", "").split(".")
        module = next((part for part in parts if part.startswith("test_")), parts[-1] or "?")
        outcome = "passed"
        for child, name in (("failure", "failed"), ("error", "errors"), ("skipped", "skipped")):
            if case.find(child) is not None:
                outcome = name
        counts = modules.setdefault(
            module, {"tests": 0, "passed": 0, "failed": 0, "errors": 0, "skipped": 0}
        )
        for bucket in (totals, counts):
            bucket["tests"] += 1
            bucket[outcome] += 1
    totals["by_module"] = dict(sorted(modules.items()))
    return totals


def read_check(name: str, junit: Path) -> dict[str, Any]:
    """A check's result from a pytest JUnit XML file written by an earlier run (CI runs the
    parity and probe suites in their own environments and hands their files to the report)."""
    if not junit.is_file():
        return not_run(name, f"results file {junit} not found")
    try:
        counts = _junit_counts(junit)
        suite = ElementTree.parse(junit).getroot()
    except (OSError, ElementTree.ParseError) as exc:
        return not_run(name, f"results file {junit} is not JUnit XML: {exc}")
    if counts["tests"] == 0:
        return not_run(name, f"results file {junit} holds no test")
    first = suite if suite.tag == "testsuite" else suite.find("testsuite")
    return {
        "name": name,
        "status": "passed" if counts["failed"] + counts["errors"] == 0 else "failed",
        "evidence_type": CHECKS[name][1],
        "command": f"python -m pytest {CHECKS[name][0]} --junitxml={junit.name}",
        "results_file": junit.as_posix(),
        "results_timestamp": None if first is None else first.get("timestamp"),
        **counts,
    }


def run_checks(root: Path, enabled: bool, results: dict[str, Path]) -> list[dict[str, Any]]:
    """Every check: read from ``results[name]`` (a JUnit XML file) when given, else run; all
    marked ``not run`` when ``enabled`` is False."""
    if not enabled:
        return [not_run(name, "skipped on request (--skip-checks)") for name in CHECKS]
    return [
        read_check(name, results[name]) if name in results else run_check(name, root)
        for name in CHECKS
    ]
