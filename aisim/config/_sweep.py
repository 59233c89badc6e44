"""The sweep file edge (docs/sweep.md): a pydantic v2 model of ``base`` + ``axes`` + ``slos``,
checked once, turned into the plain ``SweepPlan`` the runner expands into points.

Every error is one ``ConfigError`` line naming the field path, the value and what is allowed.
Axis values themselves are checked per point by the replay config edge, so one invalid point is
reported with its axis values without stopping the others.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Final

from pydantic import Field, WithJsonSchema

from aisim._fields import describe
from aisim.config._edge import EdgeModel, Number, check_input, check_mapping_at, validate
from aisim.config._replay_models import config_paths
from aisim.errors import ConfigError

MAX_POINTS: Final = 100_000

# Which config paths an axis may name: read from the replay config's models (a mapping lists
# the known fields below a key; ``{"*": None}`` accepts every sub-path).
CONFIG_PATHS: Final[dict[str, Any]] = config_paths()
#: Axis paths that set the same speculation block (the legacy spelling and the block itself).
_SPECULATION_ROOTS: Final = ("engine.speculation", "engine.nextn", "engine.nextn_accepted")


#: A limit must be > 0 (checked in ``load_sweep``); the schema says so too.
Limit = Annotated[float, Number(0.0), Field(json_schema_extra={"exclusiveMinimum": 0})]


class AxisRange(EdgeModel):
    """``{start, stop, step}``: start, start + step, ... up to and including stop when it lands
    on the grid. All integers give integers."""

    start: Annotated[float, Number()]
    stop: Annotated[float, Number()]
    step: Annotated[float, Number(0.0), Field(json_schema_extra={"exclusiveMinimum": 0})]


class SloLimits(EdgeModel):
    """Upper limits (ms, > 0) on statistics of one latency metric."""

    mean: Limit | None = None
    p50: Limit | None = None
    p90: Limit | None = None
    p95: Limit | None = None
    p99: Limit | None = None


class Slos(EdgeModel):
    """Limits per metric; the first one given in this order (TPOT first: what SD moves) is the
    headline latency of the plots and the Pareto front."""

    tpot_ms: SloLimits | None = None
    ttft_ms: SloLimits | None = None
    itl_ms: SloLimits | None = None
    e2e_ms: SloLimits | None = None


#: A dotted config path (``engine.workers.aggregated.scheduler.max_sequences``).
AXIS_PATH_PATTERN: Final = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"


def _axes_schema() -> dict[str, Any]:
    """JSON Schema of ``axes``: dotted config path -> a non-empty list of distinct values or
    a range (``AxisRange``, inlined: the axes are validated in ``load_sweep``, not by pydantic,
    so the model holds no reference to it)."""
    axis_range = AxisRange.model_json_schema()
    return {
        "type": "object",
        "minProperties": 1,
        "propertyNames": {"pattern": AXIS_PATH_PATTERN},
        "additionalProperties": {
            "anyOf": [
                {
                    "type": "array",
                    "minItems": 1,
                    "uniqueItems": True,
                    "description": "the values of the axis (null sets the field to null)",
                },
                axis_range,
            ]
        },
        "description": "config path -> a list of values or a range {start, stop, step}; the "
        "axes are crossed, first axis slowest",
    }


class SweepFile(EdgeModel):
    """The sweep file: a base replay config (a file path, relative to the sweep file, or the
    config inline), the axes (config path -> a list of values or a range ``{start, stop,
    step}``; crossed, first axis slowest), the SLOs."""

    # Shapes checked in ``load_sweep`` (a pydantic union would name its members in the path);
    # the JSON Schema still describes them, for editors and docs examples.
    base: Annotated[
        Any,
        WithJsonSchema(
            {
                "anyOf": [{"type": "string"}, {"type": "object"}],
                "description": "a replay config file (relative to this file) or the config inline",
            }
        ),
    ]
    axes: Annotated[dict[str, Any], WithJsonSchema(_axes_schema())]
    slos: Slos = Slos()
    name: str | None = None
    # Checked in ``load_sweep`` against the axes (one message names the index and the axes).
    merge_over: Annotated[
        Any,
        WithJsonSchema(
            {
                "type": "array",
                "items": {"type": "string", "pattern": AXIS_PATH_PATTERN},
                "minItems": 1,
                "uniqueItems": True,
                "description": "axes to pool latency percentiles over: points that differ "
                "only in these axes have their sketches merged (docs/sweep.md)",
            }
        ),
    ] = None


class SweepPlan:
    """A checked sweep: the base config mapping, the folder its relative paths resolve
    against, the axes in file order with their values, the SLO limits."""

    def __init__(
        self,
        name: str,
        base: dict[str, Any],
        base_dir: str,
        axes: list[tuple[str, list[Any]]],
        slos: dict[str, dict[str, float]],
        merge_over: list[str] | None = None,
    ) -> None:
        self.name = name
        self.base = base
        self.base_dir = base_dir
        self.axes = axes
        self.slos = slos
        # How results are pooled, not what runs: left out of ``describe``, so a resumed sweep
        # may merge over other axes.
        self.merge_over = merge_over

    @property
    def axis_paths(self) -> list[str]:
        return [path for path, _ in self.axes]

    def num_points(self) -> int:
        count = 1
        for _, values in self.axes:
            count *= len(values)
        return count

    def describe(self) -> dict[str, Any]:
        """JSON-ready identity of the sweep (what a resumed run must match)."""
        return {
            "name": self.name,
            "base": self.base,
            "base_dir": self.base_dir,
            "axes": [[path, values] for path, values in self.axes],
            "slos": self.slos,
        }


def load_sweep(sweep: object) -> SweepPlan:
    """Validate a sweep (a mapping, or a YAML/JSON file path) into a ``SweepPlan``."""
    from aisim._io import load_config_file

    here, default_name = Path.cwd(), "sweep"
    if isinstance(sweep, (str, os.PathLike)):
        here, default_name = Path(sweep).resolve().parent, Path(sweep).stem
        sweep = load_config_file(sweep)
    model = validate(SweepFile, sweep)
    if not isinstance(model.base, (str, dict)):
        raise ConfigError(
            "base: expected a replay config file path or an inline config mapping, got "
            f"{describe(model.base)}"
        )
    if not model.axes:
        raise ConfigError("axes: no axis given; a sweep needs at least one")
    for metric, limits in (model.slos.model_dump() if model.slos else {}).items():
        for stat, limit in (limits or {}).items():
            if limit is not None and limit <= 0:
                raise ConfigError(f"slos.{metric}.{stat}: expected a limit > 0 ms, got {limit!r}")
    if isinstance(model.base, str):
        base_file = (here / model.base).resolve()
        if not base_file.exists():
            raise ConfigError(f"base: file not found: {model.base!r} (relative to {str(here)!r})")
        if base_file.is_dir():
            raise ConfigError(f"base: {model.base!r} is a folder, not a replay config file")
        base = load_config_file(base_file)
        if not isinstance(base, dict):
            raise ConfigError(f"base: {model.base!r} must hold a replay config mapping")
        base_dir = base_file.parent
    else:
        base, base_dir = dict(model.base), here
    axes = [(path, _axis_values(path, axis)) for path, axis in model.axes.items()]
    _check_paths([path for path, _ in axes], base)
    plan = SweepPlan(
        model.name or default_name,
        base,
        str(base_dir),
        axes,
        {
            metric: {stat: float(limit) for stat, limit in limits.items() if limit is not None}
            for metric, limits in model.slos.model_dump().items()
            if limits is not None and any(limit is not None for limit in limits.values())
        },
    )
    if model.merge_over is not None:
        plan.merge_over = check_merge_over(model.merge_over, plan.axis_paths, "merge_over")
    if plan.num_points() > MAX_POINTS:
        raise ConfigError(f"axes: {plan.num_points()} points; at most {MAX_POINTS} are allowed")
    # Before any point is expanded: a non-string key or a NaN in the base or an axis would
    # otherwise reach the JSON encoder of the point's identity.
    check_input(sweep)
    check_input(base, "base")
    return plan


def check_merge_over(over: object, axes: Sequence[str], field: str) -> list[str]:
    """``over`` as a list of axis paths of ``axes``, or one ``ConfigError`` naming ``field``
    (``merge_over`` in the sweep file, ``--merge-over``, ``over``), the value and the axes."""
    allowed = f"the sweep's axes: {', '.join(axes)}"
    if isinstance(over, str) or not isinstance(over, (list, tuple)):
        raise ConfigError(
            f"{field}: expected a list of axis paths, got {describe(over)}; {allowed}"
        )
    if not over:
        raise ConfigError(f"{field}: empty; name at least one axis to merge over ({allowed})")
    seen: list[str] = []
    for index, path in enumerate(over):
        where = f"{field}[{index}]"
        if not isinstance(path, str):
            raise ConfigError(f"{where}: expected an axis path (a string), got {describe(path)}")
        if path not in axes:
            raise ConfigError(f"{where}: {path!r} is not an axis of this sweep; {allowed}")
        if path in seen:
            raise ConfigError(f"{where}: {path!r} is named twice")
        seen.append(path)
    return seen


def _axis_values(path: str, axis: object) -> list[Any]:
    where = f"axes.{path}"
    if isinstance(axis, dict):
        return _range_values(where, validate(AxisRange, axis, where))
    if not isinstance(axis, list):
        raise ConfigError(
            f"{where}: expected a list of values or a range {{start, stop, step}}, got "
            f"{describe(axis)}"
        )
    if not axis:
        raise ConfigError(f"{where}: empty axis; give at least one value")
    seen: set[str] = set()
    for value in axis:
        try:
            key = json.dumps(value, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError):
            raise ConfigError(
                f"{where}: {describe(value)} is not a JSON value (numbers, strings, booleans, "
                "null, lists and mappings are allowed)"
            ) from None
        if key in seen:
            raise ConfigError(f"{where}: value {key} is given twice")
        seen.add(key)
    return list(axis)


def _range_values(where: str, axis: AxisRange) -> list[Any]:
    if axis.step <= 0:
        raise ConfigError(f"{where}.step: expected a number > 0, got {axis.step!r}")
    if axis.stop < axis.start:
        raise ConfigError(
            f"{where}: empty range (stop {axis.stop!r} < start {axis.start!r}); "
            "stop must be at least start"
        )
    integral = all(float(v).is_integer() for v in (axis.start, axis.stop, axis.step))
    # Decimal steps so 0.1-steps give 0.3, not 0.30000000000000004.
    start, stop, step = (Decimal(repr(float(v))) for v in (axis.start, axis.stop, axis.step))
    count = int((stop - start) / step) + 1
    if count > MAX_POINTS:
        shown = f"{count}" if count < 10**12 else f"about {float(count):.3g}"  # one short line
        raise ConfigError(f"{where}: {shown} values; at most {MAX_POINTS} are allowed")
    values: list[Any] = []
    for index in range(count):
        value = start + step * index
        values.append(int(value) if integral else float(value))
    return values


def _check_paths(paths: list[str], base: dict[str, Any]) -> None:
    for path in paths:
        _check_known(path)
        parts = path.split(".")
        if parts[:2] == ["engine", "workers"] and len(parts) > 2:
            engine = base.get("engine")
            if engine is not None:
                check_mapping_at(engine, "base.engine")  # before its workers are looked for
            workers = engine.get("workers") if isinstance(engine, dict) else None
            roles = sorted(workers) if isinstance(workers, dict) else []
            if parts[2] not in roles and "engine.workers" not in paths:
                raise ConfigError(
                    f"axes.{path}: the base config has no {parts[2]} worker (it has "
                    f"{', '.join(roles) or 'none'})"
                )
    ordered = sorted(paths)
    for index, first in enumerate(ordered):
        for second in ordered[index + 1 :]:
            if second.startswith(first + "."):
                raise ConfigError(
                    f"axes: {first} and {second} conflict ({second} lies inside {first}); "
                    "sweep the block or its field, not both"
                )
    spec = sorted(
        path
        for path in paths
        if any(path.split(".")[:2] == r.split(".") for r in _SPECULATION_ROOTS)
    )
    roots = {".".join(path.split(".")[:2]) for path in spec}
    if "engine.speculation" in roots and len(roots) > 1:
        raise ConfigError(
            f"axes: {' and '.join(spec)} conflict (engine.nextn is the legacy spelling of "
            "engine.speculation); sweep one of them"
        )


def _check_known(path: str) -> None:
    node: dict[str, Any] | None = CONFIG_PATHS
    walked: list[str] = []
    parts = path.split(".")
    if any(not part for part in parts):
        raise ConfigError(f"axes.{path}: not a config path (empty segment)")
    for part in parts:
        if node is None or "*" in node:
            return
        if part not in node:
            where = ".".join(walked) or "the config root"
            allowed = ", ".join(sorted(node)) or "nothing (a value, not a block)"
            raise ConfigError(
                f"axes.{path}: unknown config path ({part!r} is not a field of {where}; "
                f"allowed: {allowed})"
            )
        walked.append(part)
        node = node[part]


def apply_axes(base: dict[str, Any], assignment: list[tuple[str, Any]]) -> dict[str, Any]:
    """A deep copy of ``base`` with each ``path`` set to its value (missing blocks created)."""
    config: dict[str, Any] = json.loads(json.dumps(base))
    for path, value in assignment:
        node = config
        parts = path.split(".")
        for part in parts[:-1]:
            child = node.get(part)
            if not isinstance(child, dict):
                child = {}
                node[part] = child
            node = child
        node[parts[-1]] = json.loads(json.dumps(value))
    return config
