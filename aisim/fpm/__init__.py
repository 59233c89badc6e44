"""Forward-pass cost (docs/design.md#forward-pass-cost): metrics, estimators, selection and the STP->SD scaling rule.

Re-exports only. For callers (replay, qualification):

* ``select_estimator(...) -> SelectedModel`` (a ``ForwardPassModel``) picks measured_round >
  table > regression > roofline with diagnostics, from validated inputs (the config edge's
  ``aisim.config.best_available`` builds them from a mapping or file).
* every estimator has ``estimate_forward_pass_time_ms(metrics, *, draft_length=None) -> float``
  and ``estimate_forward_pass_detailed(...) -> ForwardPassResult``; ``metrics`` is one
  ``ForwardPassMetrics`` or a list (one per attention-DP rank: latency = max over ranks, an idle
  rank costs 0); booleans ``prices_speculation_natively`` and ``supports_draft_length``;
  ``model_spec`` (target geometry or None); ``draft_weight_bytes`` and
  ``draft_kv_bytes_per_token`` for capacity planning.
* ``price_decode_round(model, metrics, d)``: the native SD price when the model has one, the
  scaling rule otherwise.
* ``table_from_points(points, *, identity=None)``, ``regression_from_points``,
  ``measured_rounds_from_points``; ``load_table_file`` / ``load_table_models`` / ``write_table_file`` for table
  files (a recorder ``sd_rounds.parquet`` loads as one measured-round table per d).
* ``estimate_many(model, batch_sizes, kv_totals, draft_length=None)``: the numpy path.
"""

from __future__ import annotations

from aisim.fpm._chain import SelectedModel
from aisim.fpm._diagnostics import Diagnostics, ForwardPassResult, StpReference
from aisim.fpm._engine_step_files import (
    ADMIT_FILE,
    ADMIT_SCHEMA,
    FRONTEND_FILE,
    FRONTEND_SCHEMA,
    FRONTEND_TERMS,
    WAKE_FILE,
    WAKE_SCHEMA,
    load_admit_cost,
    load_frontend_cost,
    load_step_table_model,
    load_wake_cost,
    served_step_model,
)
from aisim.fpm._inputs import (
    measured_rounds_from_points,
    regression_from_points,
    table_from_points,
)
from aisim.fpm._measured import MeasuredRoundModel
from aisim.fpm._model import ForwardPassModel, price_decode_round
from aisim.fpm._pass_metrics import ForwardPassMetrics, decode_metrics
from aisim.fpm._regression import RegressionModel
from aisim.fpm._roofline import RooflineModel
from aisim.fpm._scaling import (
    RULE_INTERCEPT,
    RULE_SLOPE,
    check_draft_length,
    scaling_factor,
    split_kv_length,
    widen_rank,
)
from aisim.fpm._sd_cost import SpeculationCost
from aisim.fpm._select import ESTIMATORS, select_estimator, swap_default_terms
from aisim.fpm._served_steps import FrontEndCost, WakeCost
from aisim.fpm._table import TableModel
from aisim.fpm._table_files import load_table_file, load_table_models, write_table_file
from aisim.fpm._vector import estimate_many

__all__ = [
    "ADMIT_FILE",
    "ADMIT_SCHEMA",
    "ESTIMATORS",
    "FRONTEND_FILE",
    "FRONTEND_SCHEMA",
    "FRONTEND_TERMS",
    "FrontEndCost",
    "RULE_INTERCEPT",
    "RULE_SLOPE",
    "Diagnostics",
    "ForwardPassMetrics",
    "ForwardPassModel",
    "ForwardPassResult",
    "MeasuredRoundModel",
    "RegressionModel",
    "RooflineModel",
    "SelectedModel",
    "SpeculationCost",
    "StpReference",
    "TableModel",
    "WAKE_FILE",
    "WAKE_SCHEMA",
    "WakeCost",
    "check_draft_length",
    "decode_metrics",
    "estimate_many",
    "load_table_file",
    "load_table_models",
    "measured_rounds_from_points",
    "price_decode_round",
    "regression_from_points",
    "scaling_factor",
    "select_estimator",
    "split_kv_length",
    "table_from_points",
    "widen_rank",
    "write_table_file",
    "load_frontend_cost",
    "load_wake_cost",
    "load_admit_cost",
    "load_step_table_model",
    "served_step_model",
    "swap_default_terms",
]
