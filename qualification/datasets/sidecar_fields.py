"""The types of the sidecar fields readers use, checked once where a sidecar is read.

A sidecar is a JSON object a recorder wrote; readers take its fields as they are (a dataset's
``identity.device.count``, an engine recording's ``host.before.load_average[0]``). A field of
the wrong type (``"1"`` for a thread count, ``3.9`` for a list of load averages, ``true`` for a
count) would otherwise be scored silently or end in a traceback far from the file. Each field
named here is checked when present; a field not named here is kept as recorded and never read
(sidecars carry notes of their recorder: ``host.note``, ``driver``, ``imported``). The first
wrong field is one ``DataIntegrityError``: the file, the field path, the value and what is
allowed (``'x/sd_rounds.parquet.json': host.load_average_start[0]: expected a number, got 'x'
(str)``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, Final

from aisim.errors import DataIntegrityError


class Field(ABC):
    """What one field may hold; ``problem`` is None when ``value`` fits, else the first
    (path, what is allowed, value) that does not."""

    allowed: str = ""

    @abstractmethod
    def problem(self, value: Any, path: str) -> tuple[str, str, Any] | None: ...

    @abstractmethod
    def json_schema(self) -> dict[str, Any]:
        """The same rule as JSON Schema (what ``aisim schema engine-recording`` publishes)."""


class Whole(Field):
    """An integer (not a bool, not ``2.0``) of at least ``minimum``."""

    def __init__(self, minimum: int = 0) -> None:
        self.minimum = minimum
        self.allowed = f"an integer >= {minimum}"

    def problem(self, value: Any, path: str) -> tuple[str, str, Any] | None:
        fits = isinstance(value, int) and not isinstance(value, bool) and value >= self.minimum
        return None if fits else (path, self.allowed, value)

    def json_schema(self) -> dict[str, Any]:
        return {"type": "integer", "minimum": self.minimum}


class Real(Field):
    """A finite number (an integer included, not a bool)."""

    allowed = "a number"

    def problem(self, value: Any, path: str) -> tuple[str, str, Any] | None:
        fits = (
            isinstance(value, (int, float))
            and not isinstance(value, bool)
            and math.isfinite(float(value))
        )
        return None if fits else (path, self.allowed, value)

    def json_schema(self) -> dict[str, Any]:
        return {"type": "number"}


class Text(Field):
    allowed = "a string"

    def problem(self, value: Any, path: str) -> tuple[str, str, Any] | None:
        return None if isinstance(value, str) else (path, self.allowed, value)

    def json_schema(self) -> dict[str, Any]:
        return {"type": "string"}


class Flag(Field):
    allowed = "true or false"

    def problem(self, value: Any, path: str) -> tuple[str, str, Any] | None:
        return None if isinstance(value, bool) else (path, self.allowed, value)

    def json_schema(self) -> dict[str, Any]:
        return {"type": "boolean"}


class OrNull(Field):
    """``null`` or what ``inner`` allows."""

    def __init__(self, inner: Field) -> None:
        self.inner = inner
        self.allowed = (
            "true, false or null" if isinstance(inner, Flag) else f"{inner.allowed} or null"
        )

    def problem(self, value: Any, path: str) -> tuple[str, str, Any] | None:
        if value is None:
            return None
        found = self.inner.problem(value, path)
        if found is None or found[0] != path:
            return found  # fits, or a field inside it does not: that field is named
        return (path, self.allowed, value)

    def json_schema(self) -> dict[str, Any]:
        return {"anyOf": [self.inner.json_schema(), {"type": "null"}]}


class ListOf(Field):
    """A JSON list whose every item is what ``item`` allows."""

    def __init__(self, item: Field) -> None:
        self.item = item
        self.allowed = f"a list of {_plural(item.allowed)}"

    def problem(self, value: Any, path: str) -> tuple[str, str, Any] | None:
        if not isinstance(value, list):
            return (path, self.allowed, value)
        for index, item in enumerate(value):
            found = self.item.problem(item, f"{path}[{index}]")
            if found is not None:
                return found
        return None

    def json_schema(self) -> dict[str, Any]:
        return {"type": "array", "items": self.item.json_schema()}


class Object(Field):
    """A JSON object: each named field, when present, is what its ``Field`` allows; other
    fields are kept as written. ``values``: what every value of the object must be (a map
    of names to strings, such as ``units``)."""

    allowed = "an object"

    def __init__(self, fields: Mapping[str, Field] | None = None, values: Field | None = None):
        self.fields = dict(fields or {})
        self.values = values
        if values is not None:
            self.allowed = f"an object of {_plural(values.allowed)}"

    def problem(self, value: Any, path: str) -> tuple[str, str, Any] | None:
        if not isinstance(value, dict):
            return (path or "<root>", self.allowed, value)
        for key, item in value.items():
            rule = self.fields.get(key, self.values)
            found = None if rule is None else rule.problem(item, f"{path}.{key}" if path else key)
            if found is not None:
                return found
        return None

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object"}
        if self.fields:
            schema["properties"] = {key: rule.json_schema() for key, rule in self.fields.items()}
        if self.values is not None:
            schema["additionalProperties"] = self.values.json_schema()
        return schema


class _Any(Field):
    """Anything: a field named so that the list of what readers use is complete."""

    def problem(self, value: Any, path: str) -> tuple[str, str, Any] | None:
        return None

    def json_schema(self) -> dict[str, Any]:
        return {}


def _plural(allowed: str) -> str:
    """``an integer >= 0`` -> ``integers >= 0``, for a list's items."""
    for single, many in (
        ("an integer", "integers"),
        ("a number", "numbers"),
        ("a string", "strings"),
        ("an object", "objects"),
        ("true or false", "true or false values"),
    ):
        if allowed.startswith(single):
            return many + allowed[len(single) :]
    return allowed


def shown(value: Any) -> str:
    """A value as an error shows it: its JSON-ish repr (cut at 80 characters) and its type."""
    text = repr(value)
    if len(text) > 80:
        text = text[:77] + "..."
    return f"{text} ({_JSON_TYPE.get(type(value), type(value).__name__)})"


_JSON_TYPE: Final = {
    bool: "bool",
    int: "int",
    float: "float",
    str: "str",
    list: "list",
    dict: "object",
    type(None): "null",
}


def check_fields(where: str, document: Any, rule: Field, path: str = "") -> None:
    """``document`` (at ``path``) as ``rule`` allows, else one ``DataIntegrityError`` naming
    ``where`` (the file, quoted), the field path, what is allowed and the value."""
    found = rule.problem(document, path)
    if found is not None:
        field, allowed, value = found
        raise DataIntegrityError(f"{where}: {field}: expected {allowed}, got {shown(value)}")


_COUNTS: Final = ListOf(Whole())
_LOADS: Final = ListOf(Real())
#: The host as a recorder saw it at one moment (engine recordings: ``host.before``/``after``).
_HOST_STATE: Final = Object(
    {
        "cpu_model": Text(),
        "cpus": OrNull(Whole(1)),  # os.cpu_count() may not know
        "load_average": _LOADS,
        "nice": Whole(-20),
        "omp_num_threads": OrNull(Text()),
        "cpu_affinity": _COUNTS,
    }
)

#: Where a recording ran: a dataset's host (flat), an engine recording's ``before``/``after``.
HOST: Final = Object(
    {
        "cpus": OrNull(Whole(1)),
        "shared": Flag(),
        "load_average_start": _LOADS,
        "load_average_end": _LOADS,
        "malloc_env": Object(values=OrNull(Text())),
        "cpu": Object({"model": OrNull(Text()), "source": Text(), "flags": ListOf(Text())}),
        "note": Text(),
        "before": _HOST_STATE,
        "after": _HOST_STATE,
        "grid_load_average": Object({"before": _LOADS, "after": _LOADS}),
    }
)

#: How a step table or a dataset's grid was recorded.
GRID: Final = Object(
    {
        "batch_sizes": _COUNTS,
        "draft_lengths": _COUNTS,
        "kv_totals": _COUNTS,
        "contexts": _COUNTS,
        "prefill_batches": _COUNTS,
        "prefill_lengths": _COUNTS,
        "repetitions": Whole(1),
        "warmup": Whole(),
        "interleaved_with_served_runs": Flag(),
        "prefill_token_counts": Text(),
        "metrics": Text(),
    }
)

#: Every table's sidecar (recorded datasets and engine recordings alike): the table fields
#: (``schema``, size, hash, rows, columns) and the descriptive sections readers report or use.
#: ``identity`` and ``engine_settings`` are objects here; what is inside them is checked by the
#: loader that reads them (``DATASET_IDENTITY``; the engine recording's loader).
SIDECAR: Final = Object(
    {
        "schema": Object({"name": Text(), "version": Whole(1)}),
        "data_file": Text(),
        "sha256": Text(),
        "bytes": Whole(),
        "row_count": Whole(),
        "keys": Object(values=Object({"kind": Text(), "unit": Text(), "meaning": Text()})),
        "units": Object(values=Text()),
        "companion": Object({"file": Text(), "sha256": Text()}),
        "identity": Object(),
        # null: not stated (a plain recording's settings.json may leave host, grid, driver out)
        "engine_settings": OrNull(Object()),
        "evidence_type": Text(),
        "command": Text(),
        "anomalies": ListOf(Text()),
        "host": OrNull(HOST),
        "recording": Object(
            {"started_utc": Text(), "elapsed_wall_s": Real(), "elapsed_cpu_s": Real()}
        ),
        "grid": OrNull(GRID),
        "coverage": Object(
            {
                "configurations_requested": Whole(),
                "configurations_recorded": Whole(),
                "stp_points": Whole(),
                "missing": ListOf(_Any()),
            }
        ),
        "statistics": ListOf(Object()),
        "driver": OrNull(Object()),
        "trace": OrNull(Object()),
        "imported": OrNull(Object()),
        "part": Text(),
        "derived_from": Text(),
        "timing_metric": Text(),
        "metrics_file": OrNull(Text()),
    }
)

#: A recorded dataset's ``identity`` (``qualification.record``): what the MAPE report, the
#: calibration artefact and the release report read from it.
DATASET_IDENTITY: Final = Object(
    {
        "recorder": Text(),
        "aisim_version": Text(),
        "preset": Text(),
        "target": Object({"geometry": Object(), "geometry_sha256": Text()}),
        "draft": Object(
            {"kind": Text(), "structure": Text(), "geometry": Object(), "geometry_sha256": Text()}
        ),
        "draft_lengths": ListOf(Whole(1)),
        "device": Object({"type": Text(), "name": Text(), "count": Whole(1)}),
        "dtype": Text(),
        "kv_dtype": Text(),
        "threads": Whole(1),
        "seed": Whole(),
        "attention_backend": Text(),
        "graphs": Flag(),
        "compile": Flag(),
        "timing": Object(
            {
                "metric": Text(),
                "clock": Text(),
                "repetitions": Whole(1),
                "warmup_passes": Whole(),
            }
        ),
        "acceptance_convention": Text(),
        "libraries": Object(values=Text()),
        "git": Object({"revision": Text(), "dirty": OrNull(Flag()), "allow_dirty": Flag()}),
    }
)
