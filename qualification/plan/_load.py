"""Load a plan file: YAML/JSON -> ``Plan``, every problem one ``ConfigError`` line."""

from __future__ import annotations

from pathlib import Path

from aisim.config import validate
from aisim.errors import ConfigError
from aisim.files import load_config_file
from qualification.plan._model import Plan

#: The release plan shipped with the harness.
DEFAULT_PLAN = Path(__file__).resolve().parents[1] / "plan.yaml"


def parse_plan(document: object, where: str = "plan") -> Plan:
    """Validate an already-parsed document; errors read ``where: field.path: message``."""
    try:
        return validate(Plan, document)
    except ConfigError as exc:
        # plan-level checks (cross references) carry their own field path
        raise ConfigError(f"{where}: {str(exc).removeprefix('<root>: ')}") from None


def load_plan(path: str | Path = DEFAULT_PLAN) -> Plan:
    """Read and validate a plan file; a missing or malformed file is one ConfigError line."""
    return parse_plan(load_config_file(path), repr(str(path)))
