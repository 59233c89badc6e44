"""The release report: parity, probes, the gate, every dataset's MAPE and calibration with
bootstrap intervals, judged against the qualification plan, in HTML + JSON."""

from qualification.report._build import REPORT_SCHEMA, build_report, find_datasets
from qualification.report._checks import CHECKS, run_checks
from qualification.report._html import render_html
from qualification.report._inputs import (
    REPORT_FILES,
    check_report_target,
    parse_check_results,
    plan_source,
    resolve_evidence,
)
from qualification.report._intervals import BootstrapSettings, interval_figures
from qualification.report._verdict import compared_value, engine_figure, judge
from qualification.report._write import write_report

__all__ = [
    "CHECKS",
    "REPORT_SCHEMA",
    "BootstrapSettings",
    "build_report",
    "check_report_target",
    "find_datasets",
    "interval_figures",
    "compared_value",
    "engine_figure",
    "judge",
    "parse_check_results",
    "plan_source",
    "render_html",
    "resolve_evidence",
    "run_checks",
    "write_report",
    "REPORT_FILES",
]
