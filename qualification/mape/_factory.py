"""``make_predictor``: a predictor by name, the one place that knows every predictor module
(``_predictors`` and ``_measured``), so neither imports the other back."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from aisim.errors import ConfigError
from qualification.datasets import RecordedDataset
from qualification.mape._measured import MeasuredRoundPredictor
from qualification.mape._predictors import (
    Predictor,
    RulePredictor,
    WidenedStpPredictor,
)

ESTIMATORS = ("rule", "stp-widened", "calibrated", "measured_round")


def make_predictor(
    name: str,
    dataset: RecordedDataset,
    calibration: Callable[[RecordedDataset, RulePredictor], Predictor] | None = None,
    rounds: str | Path | None = None,
) -> Predictor:
    """The predictor ``name`` for ``dataset``; ``calibrated`` needs ``calibration`` (a factory
    that refuses a dataset the coefficients were fitted on); ``measured_round`` needs ``rounds``,
    the SD rounds of an independent recording (``_measured``)."""
    if name not in ESTIMATORS:
        raise ConfigError(f"--estimator: unknown {name!r}; allowed: {', '.join(ESTIMATORS)}")
    if name == "measured_round":
        return MeasuredRoundPredictor(dataset, rounds)
    if rounds is not None:
        raise ConfigError(f"--rounds: only used with --estimator measured_round, not {name}")
    base = RulePredictor(dataset)
    if name == "rule":
        return base
    if name == "stp-widened":
        return WidenedStpPredictor(base)
    if calibration is None:
        raise ConfigError("--estimator calibrated: needs --coefficients FILE")
    return calibration(dataset, base)
