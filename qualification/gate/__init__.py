"""The prediction-regression gate: ``aisim snapshot`` and ``aisim compare`` (see
``docs/qualification.md``); the default scenario set is ``scenarios.yaml`` beside this file."""

from __future__ import annotations

from pathlib import Path

from qualification.gate._compare import DEFAULT_RTOL, GateReport, compare_snapshots
from qualification.gate._scenarios import Scenario, evaluate, load_scenarios, parse_scenarios
from qualification.gate._snapshot import load_snapshot, take_snapshot, write_snapshot

#: The default scenario file shipped with the package.
DEFAULT_SCENARIOS = Path(__file__).with_name("scenarios.yaml")

__all__ = [
    "DEFAULT_RTOL",
    "DEFAULT_SCENARIOS",
    "GateReport",
    "Scenario",
    "compare_snapshots",
    "evaluate",
    "load_scenarios",
    "load_snapshot",
    "parse_scenarios",
    "take_snapshot",
    "write_snapshot",
]
