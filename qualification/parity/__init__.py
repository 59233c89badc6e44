"""Frozen-golden parity: goldens in ``goldens/``, compared exactly (or within
``AISIM_PARITY_RTOL``), updated only by ``python -m qualification.parity update``."""

from __future__ import annotations

from qualification.parity._commands import (
    CROSS_PLATFORM_RTOL,
    RTOL_ENV,
    check,
    parity_rtol,
    stray_goldens,
    update,
)
from qualification.parity._golden import (
    compute_document,
    crashes,
    golden_path,
    goldens_dir,
    read_document,
    render,
)

__all__ = [
    "CROSS_PLATFORM_RTOL",
    "RTOL_ENV",
    "check",
    "compute_document",
    "crashes",
    "golden_path",
    "goldens_dir",
    "parity_rtol",
    "read_document",
    "render",
    "stray_goldens",
    "update",
]
