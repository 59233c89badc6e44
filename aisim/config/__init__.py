"""The config edge: validate user input once (pydantic) and build the core's frozen objects.

``EdgeModel`` and the field types (``Integer``, ``Number``, ``Choice``) keep aisim's one-line
error contract; ``validate`` / ``check`` turn any failure into one ``ConfigError``.
``json_schema(kind)`` is what ``aisim schema KIND`` prints. Nothing here is compiled, and the
core (``aisim.speculation``, ``aisim.fpm``, ``aisim.replay``) never imports this package.
"""

from __future__ import annotations

from aisim.config._acceptance import acceptance_profile
from aisim.config._catalogue import HardwareFile, ModelFile, get_gpu, get_model
from aisim.config._edge import Choice, EdgeModel, Integer, Number, check, edge_error, validate
from aisim.config._estimator import EstimatorConfig, best_available
from aisim.config._replay import build_plan
from aisim.config._run_replay import run_replay, with_forward_pass_model
from aisim.config._schemas import SCHEMA_KINDS, json_schema, register_schema
from aisim.config._speculation import resolve_speculation
from aisim.config._speculation_models import SpeculationConfig
from aisim.config._sweep import SweepPlan, apply_axes, check_merge_over, load_sweep

__all__ = [
    "SCHEMA_KINDS",
    "Choice",
    "EdgeModel",
    "EstimatorConfig",
    "HardwareFile",
    "ModelFile",
    "Integer",
    "Number",
    "SpeculationConfig",
    "SweepPlan",
    "acceptance_profile",
    "apply_axes",
    "best_available",
    "check",
    "check_merge_over",
    "get_gpu",
    "get_model",
    "json_schema",
    "load_sweep",
    "register_schema",
    "resolve_speculation",
    "run_replay",
    "validate",
    "build_plan",
    "with_forward_pass_model",
    "edge_error",
]
