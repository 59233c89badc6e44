"""Speculative-decoding semantics (docs/design.md#speculation): kinds, acceptance, identity.

Re-exports only: ``ResolvedSpeculation`` is the frozen result of resolving a speculation block
(``aisim.resolve_speculation``, at the config edge); ``AcceptanceProfile`` holds the acceptance
forms and their exact conversions; ``KINDS`` and ``ACCEPTANCE_KEYS`` name the kinds and forms;
``load_engine_acceptance`` / ``measure_engine_acceptance`` read the acceptance a vLLM or SGLang
engine reported (metrics scrapes, logs, request outputs).
"""

from __future__ import annotations

from aisim.speculation._acceptance import MAX_ACCEPTANCE_DEPTH, AcceptanceProfile
from aisim.speculation._adaptive import AdaptiveSpeculation, AdaptiveTier
from aisim.speculation._engine_measure import (
    acceptance_from_file,
    load_engine_acceptance,
    measure_engine_acceptance,
)
from aisim.speculation._engine_metrics import FORMATS as ENGINE_METRICS_FORMATS
from aisim.speculation._engine_metrics import MeasuredAcceptance
from aisim.speculation._engine_series import prometheus_samples
from aisim.speculation._engine_vllm import VLLM_COUNTERS, VLLM_DRAFTS
from aisim.speculation._profiles import (
    PROFILES,
    profile_acceptance,
    profile_depths,
    profile_entry,
    profile_names,
)
from aisim.speculation._resolved import (
    REPLAY_MAX_DEPTH,
    REPLAY_MIN_DEPTH,
    ResolvedSpeculation,
    sha256_of_json,
)
from aisim.speculation._schemes import (
    ACCEPTANCE_KEYS,
    BACKENDS,
    DRAFT_CONFIG,
    DRAFT_HEADS,
    DRAFT_NONE,
    DRAFT_PATH,
    KINDS,
    MAX_DRAFT_TOKENS,
    ROLES,
    SCHEMES,
    SchemeGeometry,
    SchemeSpec,
    check_gates,
)
from aisim.speculation._synthetic import (
    SIMULATE_MATCH_EXPECTED,
    SIMULATE_METHODS,
    sglang_simulated_profile,
    vllm_synthetic_profile,
)
from aisim.speculation._traces import AcceptanceTrace, trace_acceptance

__all__ = [
    "ACCEPTANCE_KEYS",
    "BACKENDS",
    "DRAFT_CONFIG",
    "DRAFT_NONE",
    "DRAFT_PATH",
    "ENGINE_METRICS_FORMATS",
    "KINDS",
    "MAX_ACCEPTANCE_DEPTH",
    "MAX_DRAFT_TOKENS",
    "ROLES",
    "SCHEMES",
    "AcceptanceProfile",
    "AcceptanceTrace",
    "AdaptiveSpeculation",
    "AdaptiveTier",
    "MeasuredAcceptance",
    "ResolvedSpeculation",
    "SchemeGeometry",
    "SchemeSpec",
    "acceptance_from_file",
    "check_gates",
    "load_engine_acceptance",
    "measure_engine_acceptance",
    "sha256_of_json",
    "DRAFT_HEADS",
    "PROFILES",
    "SIMULATE_MATCH_EXPECTED",
    "SIMULATE_METHODS",
    "profile_acceptance",
    "profile_depths",
    "profile_entry",
    "profile_names",
    "sglang_simulated_profile",
    "trace_acceptance",
    "vllm_synthetic_profile",
    "REPLAY_MAX_DEPTH",
    "REPLAY_MIN_DEPTH",
    "prometheus_samples",
    "VLLM_COUNTERS",
    "VLLM_DRAFTS",
]
