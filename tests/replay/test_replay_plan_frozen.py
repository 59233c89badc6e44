"""A built replay plan is read-only: its records refuse assignment (the core trusts them)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from aisim._io import load_config_file
from aisim.config._replay import build_plan

EXAMPLE = (
    Path(__file__).resolve().parents[2] / "docs" / "examples" / "replay" / "aggregated_mtp.yaml"
)


def test_plan_records_refuse_assignment() -> None:
    plan, _ = build_plan(load_config_file(EXAMPLE), EXAMPLE.parent)
    worker = plan.workers[0]
    for record, field in (
        (plan, "max_events"),
        (worker, "tensor"),
        (worker.scheduler, "token_budget"),
        (worker.kv, "blocks"),
        (worker.speculation, "draft_length"),
        (worker.speculation, "acceptance_thresholds"),
    ):
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(record, field, 1)
    # Thresholds are derived from the rates once, at construction (2**32 x rate, rounded).
    rates = worker.speculation.conditional_rates
    assert worker.speculation.acceptance_thresholds == [int(r * 2**32 + 0.5) for r in rates]
