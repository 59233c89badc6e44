"""The committed evidence verifies, and the figures documented for it are what it produces."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from qualification.calibrate import load_artefact
from qualification.datasets import load_dataset
from qualification.mape import evaluate, make_predictor

ROOT = Path(__file__).resolve().parents[2]
EVIDENCE = ROOT / "evidence"
NAMES = ["cpu-qwen3-0.6b-mtp", "cpu-qwen3-0.6b-eagle3", "cpu-qwen3-0.6b-draft_model"]
ALL_NAMES = [
    *NAMES,
    "cpu-qwen3-0.6b-mtp-run2",
    "cpu-qwen3-0.6b-eagle3-run2",
    "cpu-qwen3-0.6b-draft_model-run2",
]


def documented_rule_figures(name: str) -> list[float]:
    """round-weighted, equal-config, P90 (percent) from the rule table of evidence/README.md."""
    text = (EVIDENCE / "README.md").read_text(encoding="utf-8")
    section = text.split("## The published rule on these recordings")[1].split("## ")[0]
    (row,) = [line for line in section.splitlines() if line.startswith(f"| `{name}` |")]
    return [float(value) for value in re.findall(r"([\d.]+) %", row)[:3]]


@pytest.mark.parametrize("name", ALL_NAMES)
def test_committed_dataset_verifies_and_matches_its_documentation(name: str) -> None:
    dataset = load_dataset(EVIDENCE / name)
    assert len(dataset.sd_rounds) == 120
    assert dataset.sd_rounds["config_id"].nunique() == 24
    assert dataset.identity["timing"]["metric"] == "cpu"
    assert dataset.evidence_type == "local-measurement"
    report, _ = evaluate(dataset, make_predictor("rule", dataset))
    summary = report["summary"]
    measured = [
        round(100 * summary[key], 2)
        for key in ("round_weighted_mape", "equal_config_mape", "p90_ape")
    ]
    assert measured == documented_rule_figures(name)


@pytest.mark.parametrize("name", NAMES)
def test_calibration_artefact_names_the_dataset_it_was_fitted_on(name: str) -> None:
    artefact = load_artefact(EVIDENCE / "calibration" / f"{name}.v1.json")
    assert artefact["name"] == name
    assert artefact["fitted_on"][0]["sha256"] == load_dataset(EVIDENCE / name).sha256
