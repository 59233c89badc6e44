"""MAPE reports: score a predictor (the published rule by default) against a recorded dataset."""

from qualification.mape._engine import MAPE_SCHEMA, evaluate, score_rounds
from qualification.mape._factory import ESTIMATORS, make_predictor
from qualification.mape._metrics import cell_table, configuration_table, summarize
from qualification.mape._predictors import (
    Prediction,
    Predictor,
    RoundQuery,
    RulePredictor,
    ScaledPredictor,
    WidenedStpPredictor,
)
from qualification.mape._render import (
    CELL_HEADERS,
    cell_rows,
    markdown_table,
    percent,
    plots,
    png_bytes,
    summary_rows,
    to_markdown,
    tost_text,
)
from qualification.mape._stats import ks_two_sample, student_t_sf, tost_log_ratio
from qualification.mape._write import write_mape_outputs

__all__ = [
    "ESTIMATORS",
    "MAPE_SCHEMA",
    "Prediction",
    "Predictor",
    "RoundQuery",
    "RulePredictor",
    "ScaledPredictor",
    "WidenedStpPredictor",
    "cell_table",
    "configuration_table",
    "evaluate",
    "ks_two_sample",
    "make_predictor",
    "score_rounds",
    "student_t_sf",
    "summarize",
    "to_markdown",
    "tost_log_ratio",
    "write_mape_outputs",
    "CELL_HEADERS",
    "cell_rows",
    "markdown_table",
    "percent",
    "plots",
    "png_bytes",
    "summary_rows",
    "tost_text",
]
