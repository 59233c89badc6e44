"""The forward-pass API's edge: user values in, typed values out (interpreted, not compiled).

Recorded points and identities (``table_from_points``, ``measured_rounds_from_points``,
``regression_from_points``, the table files), and the rare arguments of ``ForwardPassMetrics``
and ``draft_length`` that are not already plain integers (numpy integers, integral floats, and
everything to refuse), are checked here with the ``aisim._fields`` readers, so the compiled
modules take typed values only: ``TableModel`` and friends get sorted ``(int, int, float)``
tuples and a checked identity; the metrics' and the draft length's plain-integer fast paths stay
in the compiled code and call in here only for anything else (the replay's per-pass pricing
never does). Errors are one ``ConfigError`` line naming the field path, the value and what is
allowed.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from aisim._fields import as_float, as_int, as_list, as_mapping, describe
from aisim.errors import ConfigError
from aisim.fpm._interpolate import points_identity
from aisim.fpm._measured import MeasuredRoundModel
from aisim.fpm._pass_metrics import MAX_COUNT
from aisim.fpm._regression import RegressionModel
from aisim.fpm._table import TableModel

#: Keys of one recorded point mapping.
POINT_KEYS = ("batch_size", "total_kv_tokens", "latency_ms")
#: Largest recorded latency, ms (about 11.6 days): far beyond any forward pass, and small enough
#: that the regression's sums of squares over MAX_COUNT-sized inputs stay finite (a 1e308 row
#: overflowed them).
MAX_LATENCY_MS = 1e9


def read_points(
    points: object, path: str, name_row: Callable[[int], str] | None = None
) -> list[tuple[int, int, float]]:
    """Validated ``(batch_size, total_kv_tokens, latency_ms)`` tuples from a list of mappings.

    Each mapping needs ``batch_size`` (>= 1), ``total_kv_tokens`` (>= 0) and ``latency_ms``
    (finite, in (0, ``MAX_LATENCY_MS``]); other keys are ignored. Duplicate coordinates and empty lists are errors.
    An error names the point ``path[i].field``, or ``name_row(i): field`` for the rows of a
    table file (``line 3: latency_ms``).
    """
    rows = as_list(points, path)
    if not rows:
        raise ConfigError(f"{path}: expected at least one recorded point, got []")
    result: list[tuple[int, int, float]] = []
    seen: set[tuple[int, int]] = set()
    for index, raw in enumerate(rows):
        where = f"{path}[{index}]" if name_row is None else name_row(index)
        dot = "." if name_row is None else ": "
        point = as_mapping(raw, where)
        for key in POINT_KEYS:
            if key not in point:
                raise ConfigError(f"{where}{dot}{key}: required field is missing")
        batch = as_int(_plain(point["batch_size"]), f"{where}{dot}batch_size", 1, MAX_COUNT)
        kv = as_int(_plain(point["total_kv_tokens"]), f"{where}{dot}total_kv_tokens", 0, MAX_COUNT)
        latency = as_float(
            _plain(point["latency_ms"]), f"{where}{dot}latency_ms", 0.0, MAX_LATENCY_MS
        )
        if latency <= 0.0:
            raise ConfigError(
                f"{where}{dot}latency_ms: expected a finite number > 0, got {latency!r}"
            )
        if (batch, kv) in seen:
            raise ConfigError(
                f"{where}: duplicate point at batch_size={batch}, total_kv_tokens={kv}; "
                "each (batch_size, total_kv_tokens) may appear once"
            )
        seen.add((batch, kv))
        result.append((batch, kv, latency))
    return sorted(result)


def _plain(value: Any) -> Any:
    """numpy scalars -> Python scalars."""
    if not isinstance(value, (bool, int, float, str)) and hasattr(value, "item"):
        return value.item()
    return value


def check_identity(identity: object, path: str) -> dict[str, Any]:
    """``None`` -> ``{}``; else a mapping of JSON scalars (str, int, float, bool, None)."""
    if identity is None:
        return {}
    mapping = as_mapping(identity, path)
    for key, value in mapping.items():
        if value is not None and not isinstance(value, (str, int, float, bool)):
            raise ConfigError(
                f"{path}.{key}: identity values must be strings, numbers, booleans or null, "
                f"got {describe(value)}"
            )
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{path}.{key}: expected a finite number, got {value!r}")
    return mapping


def integral(value: Any) -> int:
    """``value`` as an int when it is a whole finite number; else ``ValueError``/``TypeError``."""
    number = float(value)
    if not math.isfinite(number) or number != int(number):
        raise ValueError(value)
    return int(number)


def table_from_points(
    points: object, *, identity: object = None, source: str = "in-memory points"
) -> TableModel:
    """A ``table`` estimator from ``[{"batch_size", "total_kv_tokens", "latency_ms"}, ...]``.

    ``identity`` (optional mapping of scalars) is kept with the table and enters its data
    identity. Raises ``ConfigError`` naming ``points[i].<field>`` for malformed points.
    """
    checked = read_points(points, "points")
    declared = check_identity(identity, "identity")
    return TableModel(checked, declared, points_identity(checked, declared), source)


def measured_rounds_from_points(
    points: object, *, identity: object, source: str = "in-memory points"
) -> MeasuredRoundModel:
    """A ``measured_round`` estimator from point mappings and its (required) identity mapping."""
    checked = read_points(points, "points")
    declared = check_identity(identity, "identity")
    return MeasuredRoundModel(checked, declared, points_identity(checked, declared), source)


def regression_from_points(
    points: object, *, identity: object = None, source: str = "in-memory points"
) -> RegressionModel:
    """A ``regression`` estimator fitted to the same point mappings ``table_from_points`` takes."""
    checked = read_points(points, "points")
    declared = check_identity(identity, "identity")
    return RegressionModel(checked, declared, points_identity(checked, declared), source)
