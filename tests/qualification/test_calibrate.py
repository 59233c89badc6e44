"""Calibration: recovers known coefficients, never scores a row with a fit that saw it."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from aisim.errors import ConfigError, DataIntegrityError, UnsupportedQuery
from qualification.calibrate import (
    calibrate,
    calibrated_factory,
    cross_validate,
    fit_coefficients,
    load_artefact,
    make_folds,
)
from qualification.datasets import RecordedDataset
from qualification.mape import evaluate, make_predictor


def stp_latency(b: int, k: int) -> float:
    """An arbitrary, irregular STP surface (ms)."""
    return 20.0 + 3.0 * b + 0.01 * k + (2.0 if b % 3 == 0 else 0.0)


def synthetic_rows(a: float, b: float, noise: float, seed: int) -> pd.DataFrame:
    rng = random.Random(seed)
    rows = []
    for d in (1, 2, 3, 4):
        for batch in (1, 4, 8):
            for k in (256, 1024):
                reference = stp_latency((d + 1) * batch, k)
                for _ in range(5):
                    measured = (a * d + b) * reference * (1 + rng.gauss(0.0, noise))
                    rows.append(
                        {
                            "config_id": f"d{d}-b{batch}-k{k}",
                            "draft_length": d,
                            "batch_size": batch,
                            "total_kv_tokens": k,
                            "stp_reference_ms": reference,
                            "measured_ms": measured,
                        }
                    )
    return pd.DataFrame(rows)


def test_exact_data_gives_exact_coefficients() -> None:
    fitted = fit_coefficients(synthetic_rows(0.13, 1.07, 0.0, seed=1))
    assert fitted.a == pytest.approx(0.13, abs=1e-12)
    assert fitted.b == pytest.approx(1.07, abs=1e-12)


@pytest.mark.parametrize(("a", "b"), [(0.127, 1.113), (0.038, 1.088), (0.08, 1.25)])
def test_recovers_known_coefficients_from_noisy_data(a: float, b: float) -> None:
    fitted = fit_coefficients(synthetic_rows(a, b, noise=0.03, seed=7))
    # 120 rounds with 3 % noise: the coefficients are recovered to well under 0.02.
    assert fitted.a == pytest.approx(a, abs=0.01)
    assert fitted.b == pytest.approx(b, abs=0.02)


def test_one_draft_length_cannot_be_fitted() -> None:
    rows = synthetic_rows(0.1, 1.0, 0.0, seed=1)
    with pytest.raises(UnsupportedQuery, match="two or more draft lengths"):
        fit_coefficients(rows[rows["draft_length"] == 2])


@pytest.mark.parametrize("method", ["loco", "kfold:5", "kfold:2"])
def test_folds_partition_configurations(method: str) -> None:
    rows = synthetic_rows(0.1, 1.0, 0.0, seed=1)
    folds = make_folds(rows, method)
    configs = set(rows["config_id"])
    tested = [c for fold in folds for c in fold.test]
    assert sorted(tested) == sorted(configs)  # every configuration held out exactly once
    for fold in folds:
        assert set(fold.train).isdisjoint(fold.test)
        assert set(fold.train) | set(fold.test) == configs


def test_bad_validation_method() -> None:
    rows = synthetic_rows(0.1, 1.0, 0.0, seed=1)
    with pytest.raises(ConfigError, match="loco or kfold:K"):
        make_folds(rows, "random")
    with pytest.raises(ConfigError, match="2 <= K <= 24"):
        make_folds(rows, "kfold:25")


@pytest.mark.parametrize("method", ["loco", "kfold:4"])
def test_held_out_rows_never_leak_into_their_fit(method: str) -> None:
    """Every clean configuration follows (0.1 d + 1.0) F exactly; one poisoned configuration
    measures 0.2 F. A fit that excludes the poisoned rows recovers (0.1, 1.0) exactly, so the
    poisoned configuration's held-out prediction must be exactly 1.2 F. Had any of its rows
    leaked into its own fold's fit, the coefficients would move (as the fit on all rows shows)."""
    rows = synthetic_rows(0.1, 1.0, 0.0, seed=1)
    poisoned = rows["config_id"] == "d2-b4-k256"
    rows.loc[poisoned, "measured_ms"] = 0.2 * rows.loc[poisoned, "stp_reference_ms"]
    predicted, folds = cross_validate(rows, method)
    reference = stp_latency(12, 256)
    assert predicted[poisoned].tolist() == pytest.approx([1.2 * reference] * 5, rel=1e-9)
    (own,) = [fold for fold in folds if "d2-b4-k256" in fold["test"]]
    assert own["a"] == pytest.approx(0.1, abs=1e-9)
    assert own["b"] == pytest.approx(1.0, abs=1e-9)
    # Sensitivity: a fit that does see the poisoned rows lands far from (0.1, 1.0), both for
    # the other folds and for all rows at once, so a leak could not pass unnoticed.
    leaked = fit_coefficients(rows)
    assert abs(leaked.factor(2) - 1.2) > 0.05
    others = [fold for fold in folds if "d2-b4-k256" not in fold["test"]]
    assert all(abs(fold["a"] * 2 + fold["b"] - 1.2) > 0.01 for fold in others)


def test_calibrate_dataset_and_use_the_artefact_elsewhere(
    make_dataset: Callable[..., RecordedDataset], tmp_path: Path
) -> None:
    stp = {
        ((d + 1) * b, k): stp_latency((d + 1) * b, k)
        for d in (1, 2, 3)
        for b in (1, 2)
        for k in (64, 128)
    }
    rounds = [
        (d, b, k, [(0.2 * d + 1.0) * stp[((d + 1) * b, k)]] * 2)
        for d in (1, 2, 3)
        for b in (1, 2)
        for k in (64, 128)
    ]
    fitted_on = make_dataset("fit", stp, rounds)
    result = calibrate(fitted_on, method="loco", name="demo", version=3)
    assert result["fitted_all_rows"]["a"] == pytest.approx(0.2, abs=1e-9)
    assert result["fitted_all_rows"]["b"] == pytest.approx(1.0, abs=1e-9)
    assert result["validation"]["held_out"]["round_weighted_mape"] == pytest.approx(0.0, abs=1e-9)
    artefact = result["artefact"]
    assert (artefact["name"], artefact["version"]) == ("demo", 3)
    assert artefact["fitted_on"][0]["sha256"] == fitted_on.sha256

    path = tmp_path / "demo.v3.json"
    path.write_text(json.dumps(artefact))
    factory = calibrated_factory(load_artefact(path))
    with pytest.raises(ConfigError, match="was fitted on dataset 'fit'"):
        make_predictor("calibrated", fitted_on, factory)
    # A different recording of the same shape: the calibrated rule is exact there.
    other = make_dataset("other", stp, [(1, 1, 64, [1.2 * stp[(2, 64)]])])
    report, _ = evaluate(other, make_predictor("calibrated", other, factory))
    assert report["summary"]["round_weighted_mape"] == pytest.approx(0.0, abs=1e-9)
    assert report["estimator"]["name"] == "calibrated:demo.v3"


def test_malformed_artefacts_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text(
        json.dumps(
            {
                "schema": {"name": "aisim.calibration", "version": 1},
                "name": "x",
                "version": 1,
                "coefficients": {"a": "big"},
            }
        )
    )
    with pytest.raises(DataIntegrityError, match="coefficients.a"):
        load_artefact(path)
    path.write_text("[1, 2")
    with pytest.raises(DataIntegrityError, match="unreadable calibration"):
        load_artefact(path)
    with pytest.raises(ConfigError, match="not found"):
        load_artefact(tmp_path / "absent.json")
