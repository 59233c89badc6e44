"""Speculative-decoding semantics (docs/design.md#speculation): kinds, acceptance, identity.

Re-exports only: ``ResolvedSpeculation`` is the frozen result of resolving a speculation block
(``aisim.resolve_speculation``, at the config edge); ``AcceptanceProfile`` holds the acceptance
forms and their exact conversions; ``KINDS`` and ``ACCEPTANCE_KEYS`` name the kinds and forms;
``load_engine_acceptance`` / ``measure_engine_acceptance`` read the acceptance a vLLM or SGLang
engine reported (metrics scrapes, logs, request outputs).
"""

from __future__ import annotations

from aisim.speculation._acceptance import AcceptanceProfile
from aisim.speculation._engine_metrics import FORMATS as ENGINE_METRICS_FORMATS
from aisim.speculation._engine_metrics import (
    MeasuredAcceptance,
    load_engine_acceptance,
    measure_engine_acceptance,
)
from aisim.speculation._resolved import ResolvedSpeculation
from aisim.speculation._schemes import ACCEPTANCE_KEYS, KINDS

__all__ = [
    "ACCEPTANCE_KEYS",
    "ENGINE_METRICS_FORMATS",
    "KINDS",
    "AcceptanceProfile",
    "MeasuredAcceptance",
    "ResolvedSpeculation",
    "load_engine_acceptance",
    "measure_engine_acceptance",
]
