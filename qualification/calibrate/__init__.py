"""Calibration: fit (a, b) of ``(a d + b) F_STP((d + 1) B, K)`` with held-out validation."""

from qualification.calibrate._artefact import (
    ARTEFACT_SCHEMA,
    artefact_file_name,
    build_artefact,
    calibrated_factory,
    check_artefact_name,
    check_artefact_version,
    load_artefact,
)
from qualification.calibrate._calibrate import calibrate, held_out_rows
from qualification.calibrate._fit import (
    Coefficients,
    Fold,
    cross_validate,
    fit_coefficients,
    make_folds,
)
from qualification.calibrate._render import (
    CALIBRATION_HEADERS,
    calibration_markdown,
    calibration_rows,
)

__all__ = [
    "ARTEFACT_SCHEMA",
    "Coefficients",
    "Fold",
    "artefact_file_name",
    "build_artefact",
    "calibrate",
    "calibration_markdown",
    "calibrated_factory",
    "check_artefact_name",
    "check_artefact_version",
    "cross_validate",
    "fit_coefficients",
    "load_artefact",
    "make_folds",
    "held_out_rows",
    "CALIBRATION_HEADERS",
    "calibration_rows",
]
