"""Prediction intervals against the evidence: the cost-error table aisim samples from
(``build_table``) and the coverage of the intervals on held-out recordings (``coverage``)."""

from qualification.uncertainty._coverage import report_section
from qualification.uncertainty._table import build_table

__all__ = [
    "build_table",
    "report_section",
]
