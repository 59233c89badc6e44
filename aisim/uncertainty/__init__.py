"""Prediction intervals (docs/design.md#uncertainty): what a replay's headline figures would be
across the uncertainty of its inputs, by Monte Carlo over replicas.

``replay_intervals(config, N)`` samples seven switchable ``Sources`` (acceptance rates from
engine counters, step-price factors from the cost-error evidence, simulation seeds, the
engines' run-to-run repeat noise on the replayed figures, the step price's drift in time, a
serving front end's terms, a caller's per-request overhead before the first token), replays
each replica on the sweep's backends and reports the point prediction, the p50 and a central
90 % interval per metric, and what each interval includes. ``load_cost_errors()`` is the
committed cost-error table with its provenance. Not compiled: sampling uses numpy, outside the
simulation, and reaches the core as plain values.
"""

from __future__ import annotations

from aisim.uncertainty._acceptance import AcceptanceCounts
from aisim.uncertainty._advise import DEFAULT_SLOS, Question, advise, parse_acceptance, variants
from aisim.uncertainty._cost_errors import (
    MIN_REGIME_OVERHEADS,
    REPEAT_METRICS,
    CostErrorTable,
    CostFactors,
    ErrorSample,
    FrontEndSample,
    OverheadSample,
    RepeatSample,
    load_cost_errors,
    overhead_regime,
    repeat_factor,
)
from aisim.uncertainty._draw import Draw, WorkerDraw
from aisim.uncertainty._estimate import estimate_interval, render_interval
from aisim.uncertainty._intervals import (
    METRICS,
    check_replicas,
    check_seed,
    plan_draws,
    quantile,
    reduce,
    replay_intervals,
)
from aisim.uncertainty._sources import Sources
from aisim.uncertainty._sweep import add_sweep_intervals

__all__ = [
    "METRICS",
    "MIN_REGIME_OVERHEADS",
    "REPEAT_METRICS",
    "RepeatSample",
    "repeat_factor",
    "AcceptanceCounts",
    "CostErrorTable",
    "CostFactors",
    "Draw",
    "ErrorSample",
    "FrontEndSample",
    "OverheadSample",
    "Sources",
    "WorkerDraw",
    "check_replicas",
    "load_cost_errors",
    "overhead_regime",
    "replay_intervals",
    "DEFAULT_SLOS",
    "Question",
    "add_sweep_intervals",
    "advise",
    "check_seed",
    "estimate_interval",
    "parse_acceptance",
    "render_interval",
    "variants",
    "plan_draws",
    "quantile",
    "reduce",
]
