"""Speculation suite: resolution of every kind (valid params, defaults, normalization), the
gates, legacy spellings and their canonical equivalents, acceptance inputs, replay depth, and
every error case (the golden is the error class and message). The rows are data:
``speculation_cases.json``, one case per line; ``{"$draft": "NAME"}`` stands for the draft
config ``qualification.cases._drafts.NAME``.

Inputs are ``{"op": "resolve", "mapping": ...}`` (or ``"yaml"``: YAML text, for inputs JSON cannot
hold such as non-string keys and NaN), optional ``model``/``backend``/``role``/
``tensor_parallel``; or ``{"op": "equivalent", "a": ..., "b": ...}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aisim.config import resolve_speculation
from aisim.errors import AisimError
from aisim.files import parse_yaml_text
from qualification.cases import _drafts
from qualification.cases._suite import Suite, make_cases

CASES_FILE = Path(__file__).resolve().parent / "speculation_cases.json"


def all_rows() -> list[tuple[str, dict[str, Any]]]:
    """``(case id, inputs)`` in file order, draft references replaced by fresh copies."""
    rows = json.loads(CASES_FILE.read_text(encoding="utf-8"))
    return [(row["case"], _with_drafts(row["inputs"])) for row in rows]


def _with_drafts(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"$draft"}:
            return dict(getattr(_drafts, value["$draft"]))
        return {key: _with_drafts(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_with_drafts(item) for item in value]
    return value


def _resolve_inputs(inputs: Mapping[str, Any], key: str = "mapping") -> Any:
    if "yaml" in inputs:
        return parse_yaml_text(inputs["yaml"], "yaml")
    return inputs[key]


def _context(inputs: Mapping[str, Any]) -> dict[str, Any]:
    keys = ("model", "backend", "role", "tensor_parallel")
    return {key: inputs[key] for key in keys if key in inputs}


def evaluate(inputs: Mapping[str, Any]) -> dict[str, Any]:
    context = _context(inputs)
    if inputs["op"] == "equivalent":
        a = resolve_speculation(inputs["a"], **context)
        b = resolve_speculation(inputs["b"], **context)
        return {
            "a_cost_identity": a.cost_identity,
            "b_cost_identity": b.cost_identity,
            "same_cost_identity": a.cost_identity == b.cost_identity,
            "same_acceptance": a.to_dict()["acceptance"] == b.to_dict()["acceptance"],
            "equal": a == b,
        }
    resolved = resolve_speculation(_resolve_inputs(inputs), **context)
    replay: dict[str, Any]
    try:
        replay = {"replay_depth": resolved.replay_depth}
    except AisimError as exc:
        replay = {"replay_error": {"type": type(exc).__name__, "message": str(exc)}}
    return {"resolved": resolved.to_dict(), **replay}


SUITE = Suite(
    name="speculation",
    description="resolution of every kind, gates, legacy equivalences, acceptance inputs, errors",
    cases=make_cases(all_rows()),
    evaluate=evaluate,
)
