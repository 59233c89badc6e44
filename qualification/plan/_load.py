"""Load a plan file: YAML/JSON -> ``Plan``, every problem one ``ConfigError`` line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ValidationError

from aisim._io import load_config_file
from aisim.errors import ConfigError
from qualification.plan._model import Plan

#: The release plan shipped with the harness.
DEFAULT_PLAN = Path(__file__).resolve().parents[1] / "plan.yaml"


def error_path(location: tuple[int | str, ...]) -> str:
    """``("criteria", 3, "metric")`` -> ``criteria[3].metric``."""
    path = ""
    for part in location:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    return path


def one_line(exc: ValidationError, where: str) -> str:
    """The first error as ``where: path: message`` (pydantic's own prefixes removed)."""
    first = exc.errors(include_url=False)[0]
    message = str(first["msg"]).removeprefix("Value error, ")
    path = error_path(tuple(first["loc"]))
    if first["type"] == "extra_forbidden":
        message = "unknown field"
    elif first["type"] not in ("value_error", "assertion_error", "missing") and "input" in first:
        message += f", got {_short(first['input'])}"
    text = f"{path}: {message}" if path else message
    return " ".join(f"{where}: {text}".split())


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def parse_plan(document: object, where: str = "plan") -> Plan:
    """Validate an already-parsed document."""
    try:
        return Plan.model_validate(document)
    except ValidationError as exc:
        raise ConfigError(one_line(exc, where)) from None


def load_plan(path: str | Path = DEFAULT_PLAN) -> Plan:
    """Read and validate a plan file; a missing or malformed file is one ConfigError line."""
    return parse_plan(load_config_file(path), str(path))
