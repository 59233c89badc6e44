"""The release report: parity, probes, every dataset's MAPE and calibration, in HTML + JSON."""

from qualification.report._build import REPORT_SCHEMA, build_report, find_datasets
from qualification.report._checks import CHECKS, run_checks
from qualification.report._html import render_html
from qualification.report._write import write_report

__all__ = [
    "CHECKS",
    "REPORT_SCHEMA",
    "build_report",
    "find_datasets",
    "render_html",
    "run_checks",
    "write_report",
]
