"""The case-matrix record types: a suite is a named, ordered tuple of cases and one evaluator.

A case is plain JSON-able input data with a stable id; the suite's evaluator turns the inputs into
a JSON-able result by calling aisim's public API. ``run_case`` records the outcome: the result, or
the ``AisimError`` class and message the input is expected to produce (error cases are goldens
too), or a ``crash`` (any other exception: an aisim bug that parity reports and the updater refuses
to freeze).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aisim.errors import AisimError

JSONValue = Any
Evaluator = Callable[[Mapping[str, Any]], JSONValue]


@dataclass(frozen=True)
class Case:
    """One input of a suite; ``id`` is unique within the suite and never reused for other input."""

    id: str
    inputs: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Suite:
    """A named case matrix: ``evaluate(case.inputs)`` must be deterministic and use public API."""

    name: str
    description: str
    cases: tuple[Case, ...]
    evaluate: Evaluator

    def __post_init__(self) -> None:
        seen: set[str] = set()
        for case in self.cases:
            if case.id in seen:
                raise ValueError(f"suite {self.name!r}: duplicate case id {case.id!r}")
            seen.add(case.id)


def make_cases(rows: Iterable[tuple[str, Mapping[str, Any]]]) -> tuple[Case, ...]:
    """``make_cases([(id, inputs), ...])`` -> a tuple of cases, in the given order."""
    return tuple(Case(case_id, dict(inputs)) for case_id, inputs in rows)


def to_jsonable(value: Any) -> JSONValue:
    """Plain JSON data: tuples become lists, mapping keys must be strings, non-finite floats are
    spelled ``"nan"``/``"inf"``/``"-inf"`` (canonical JSON forbids them), numpy scalars become
    Python numbers."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if math.isfinite(value):
            return float(value)
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, Mapping):
        result: dict[str, JSONValue] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"result mapping keys must be strings, got {key!r}")
            result[key] = to_jsonable(item)
        return result
    if isinstance(value, (list, tuple)):
        return [to_jsonable(item) for item in value]
    item_method = getattr(value, "item", None)  # numpy scalar
    if callable(item_method):
        return to_jsonable(item_method())
    raise TypeError(f"cannot freeze a {type(value).__name__} in a golden: {value!r}")


def run_case(suite: Suite, case: Case) -> dict[str, JSONValue]:
    """The frozen outcome of one case: ``{"inputs", "result"}``, ``{"inputs", "error"}`` or
    ``{"inputs", "crash"}``."""
    outcome: dict[str, JSONValue] = {"inputs": to_jsonable(case.inputs)}
    try:
        outcome["result"] = to_jsonable(suite.evaluate(case.inputs))
    except AisimError as exc:
        outcome["error"] = {"type": type(exc).__name__, "message": str(exc)}
    except Exception as exc:  # noqa: BLE001 - any other exception is an aisim bug to report
        outcome["crash"] = f"{type(exc).__name__}: {exc}"
    return outcome
