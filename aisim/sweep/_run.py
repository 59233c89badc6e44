"""``aisim.sweep.run``: expand a sweep into points, skip the ones already in ``out``, evaluate
the rest on a backend, write each point atomically as it finishes, and assemble the rows in
point order (so the same sweep gives the same rows whatever order the points ran in)."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from aisim._io import (
    MAX_DOCUMENT_BYTES,
    MAX_TRACE_BYTES,
    atomic_write_text,
    canonical_json,
    input_file_problem,
    parse_json_text,
    read_input_bytes,
    writable_folder,
)
from aisim.config import SweepPlan, apply_axes, check_merge_over, load_sweep
from aisim.errors import ConfigError
from aisim.sweep._backends import Task, run_tasks, trace_path
from aisim.sweep._evaluate import INTEGER_COLUMNS, SKETCH_COLUMNS, metric_columns
from aisim.sweep._merge import sketch_text

if TYPE_CHECKING:
    import pandas as pd

#: ``progress(done, total)`` after each evaluated point.
ProgressCallback = Callable[[int, int], None]
SWEEP_FILE = "sweep.json"
POINTS_DIR = "points"


class Point:
    """One combination of axis values (``assignment``: (path, value) in axis order)."""

    def __init__(self, index: int, assignment: list[tuple[str, Any]]) -> None:
        self.index = index
        self.assignment = assignment
        key = json.dumps([[path, value] for path, value in assignment], sort_keys=True)
        self.point_id = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def expand(plan: SweepPlan) -> list[Point]:
    """Every point of the sweep: the Cartesian product of the axes, first axis slowest."""
    paths = plan.axis_paths
    return [
        Point(index, list(zip(paths, values, strict=True)))
        for index, values in enumerate(itertools.product(*(values for _, values in plan.axes)))
    ]


def run(
    sweep: object,
    *,
    backend: str = "pool",
    workers: int | None = None,
    address: str | None = None,
    out: str | Path | None = None,
    overwrite: bool = False,
    progress: ProgressCallback | None = None,
    merge_over: list[str] | None = None,
) -> pd.DataFrame:
    """Run every point of ``sweep`` (a mapping or a YAML/JSON file path, docs/sweep.md) and
    return one row per point, in point order.

    ``backend``: ``"pool"`` (local processes, ``workers`` of them, default one per CPU) or
    ``"ray"`` (``address`` of an existing cluster, else a local instance with ``workers`` CPUs).
    With ``out``, each finished point is written to ``out/points/`` atomically and points
    already there are skipped (resume); ``overwrite`` starts the folder afresh. Raises
    ``ConfigError`` for an invalid sweep; an invalid point is a row with ``status == "error"``.

    ``merge_over`` (axis paths; default the sweep file's ``merge_over``) is checked before any
    point runs and kept in ``frame.attrs["merge_over"]`` for ``aisim.sweep.merge(frame)``.

    A sweep judges itself: the base config's trace file, then the base config (as ``aisim
    replay`` checks one; errors an axis may change are left to the points) are checked before
    any point runs, and
    a sweep in which no point ran (every one an error) raises ``ConfigError`` naming the first
    error and leaves nothing it created in ``out``. Error points are not stored, so a resumed
    sweep runs them again (after the input was fixed, they may succeed).
    """
    plan = load_sweep(sweep)
    if merge_over is not None:
        plan.merge_over = check_merge_over(merge_over, plan.axis_paths, "merge_over")
    if backend == "ray":
        from aisim._extras import import_optional

        import_optional("ray", "aisim sweep --backend ray")  # before anything is written
    _check_base(plan)
    points = expand(plan)
    _check_base_config(plan, points[0])
    store = _Store(Path(out), plan, overwrite) if out is not None else None
    rows: dict[int, dict[str, Any]] = {}
    if store is not None:
        rows.update(store.load_existing(points))
    todo = [point for point in points if point.index not in rows]
    by_index = {point.index: point for point in points}
    done = 0

    def on_row(index: int, row: dict[str, Any]) -> None:
        nonlocal done
        rows[index] = row
        if store is not None and row["status"] == "ok":
            store.write(by_index[index], row)
        done += 1
        if progress is not None:
            progress(done, len(todo))

    tasks = [Task(point.index, apply_axes(plan.base, point.assignment)) for point in todo]
    if progress is not None:
        progress(0, len(todo))
    run_tasks(
        tasks, plan.base_dir, plan.slos, on_row, backend=backend, workers=workers, address=address
    )
    try:
        _judge(points, rows)
    except ConfigError:
        if store is not None:
            store.drop_created()
        raise
    frame = to_frame(plan, points, rows)
    frame.attrs["skipped_points"] = len(points) - len(todo)
    return frame


def _check_base(plan: SweepPlan) -> None:
    """The base config's trace file exists and can be read, unless an axis sets the traffic
    source (a sweep copied away from its trace would otherwise run every point into the same
    'trace file not found')."""
    if any(path == "traffic" or path.startswith("traffic.source") for path in plan.axis_paths):
        return
    trace = trace_path(plan.base, plan.base_dir)
    if trace is None:
        return
    problem = input_file_problem(trace, MAX_TRACE_BYTES)
    if problem is not None:
        raise ConfigError(f"base: traffic.source.path: trace {str(trace)!r}: {problem}")


def _check_base_config(plan: SweepPlan, first: Point) -> None:
    """The base config is validated as ``aisim replay`` validates a config (``build_plan``:
    schema, then paths relative to the sweep's base folder), with the first point's axis values
    set (an axis may set what the base lacks), so a base that no point can fix fails once, under
    ``base.``, before any point runs. An error at or inside an axis path is left to the points
    (an invalid axis value is a row); one above an axis path only fails the sweep when the base
    alone fails the same way (a conflict between fields may be an axis value's doing)."""
    message = _plan_error(apply_axes(plan.base, first.assignment), plan.base_dir)
    if message is None:
        return
    field = message.split(":", 1)[0]
    if field == "<root>":
        raise ConfigError(f"base{message[len(field) :]}")
    if not _FIELD.fullmatch(field):
        raise ConfigError(f"base: {message}")
    bare = field.split("[", 1)[0]
    if any(bare == axis or bare.startswith(axis + ".") for axis in plan.axis_paths):
        return
    above = any(axis.startswith(bare + ".") for axis in plan.axis_paths)
    if above and _plan_error(plan.base, plan.base_dir) != message:
        return
    raise ConfigError(f"base.{message}")


def _plan_error(config: dict[str, Any], base_dir: str) -> str | None:
    """The message of the ``ConfigError`` ``aisim replay`` gives for ``config``, or None."""
    from aisim.config import build_plan

    try:
        build_plan(config, Path(base_dir))
    except ConfigError as exc:
        return str(exc)
    return None


_FIELD: Final = re.compile(r"[A-Za-z_][\w.\[\]-]*")


def _judge(points: list[Point], rows: dict[int, dict[str, Any]]) -> None:
    """Refuse a sweep in which no point ran: a table of error rows is not a result."""
    if not points or any(row["status"] == "ok" for row in rows.values()):
        return
    first = min(rows) if rows else None
    detail = ""
    if first is not None:
        axes = json.dumps(dict(points[first].assignment), sort_keys=True, default=str)
        detail = f"; point {first} {axes}: {rows[first]['error']}"
    raise ConfigError(f"sweep: none of the {len(points)} points ran{detail}")


def to_frame(plan: SweepPlan, points: list[Point], rows: dict[int, dict[str, Any]]) -> pd.DataFrame:
    """The rows as a DataFrame: point, point_id, one column per axis, status, error, metrics,
    ``pareto`` (on the front of output tokens/s per GPU vs the headline latency) and each
    metric's sketch as JSON text (``SKETCH_COLUMNS``; None for an error point)."""
    import pandas as pd

    from aisim.sweep._report import pareto_flags

    metrics = metric_columns()
    scalar_axes = {path: _scalar_axis(values) for path, values in plan.axes}
    records: list[dict[str, Any]] = []
    for point in points:
        row = rows[point.index]
        record: dict[str, Any] = {"point": point.index, "point_id": point.point_id}
        for path, value in point.assignment:
            record[path] = value if scalar_axes[path] else json.dumps(value, sort_keys=True)
        record["status"] = row["status"]
        record["error"] = row["error"]
        for column in metrics:
            record[column] = row.get(column)
        records.append(record)
    frame = pd.DataFrame.from_records(records, columns=_columns(plan, metrics))
    frame["slo_met"] = frame["slo_met"].fillna(False).astype(bool)
    for column in INTEGER_COLUMNS:
        frame[column] = frame[column].astype("Int64")
    frame["pareto"] = pareto_flags(frame, plan.slos)
    for column in SKETCH_COLUMNS:
        frame[column] = [sketch_text(rows[point.index].get(column)) for point in points]
    frame.attrs["axes"] = plan.axis_paths
    frame.attrs["slos"] = plan.slos
    frame.attrs["name"] = plan.name
    if plan.merge_over is not None:
        frame.attrs["merge_over"] = plan.merge_over
    return frame


def _columns(plan: SweepPlan, metrics: list[str]) -> list[str]:
    return ["point", "point_id", *plan.axis_paths, "status", "error", *metrics]


def _scalar_axis(values: list[Any]) -> bool:
    """Whether an axis can be a plain parquet column: all numbers, all strings or all bools
    (null allowed); anything else is stored as canonical JSON text."""
    kinds = set()
    for value in values:
        if value is None:
            continue
        if isinstance(value, bool):
            kinds.add("bool")
        elif isinstance(value, int) and not -(2**63) <= value < 2**63:
            return False  # past a parquet integer column: stored as JSON text
        elif isinstance(value, (int, float)):
            kinds.add("number")
        elif isinstance(value, str):
            kinds.add("str")
        else:
            return False
    return len(kinds) <= 1


class _Store:
    """``out/sweep.json`` (the sweep's identity) and ``out/points/<point_id>.json`` (one
    finished point each, written atomically)."""

    def __init__(self, out: Path, plan: SweepPlan, overwrite: bool) -> None:
        if out.exists() and not out.is_dir():
            raise ConfigError(f"--out {str(out)!r}: exists and is not a folder")
        self.out = out
        self.points_dir = out / POINTS_DIR
        identity = canonical_json(plan.describe())
        sweep_file = out / SWEEP_FILE
        if sweep_file.exists():
            # Compared as bytes, read only when a regular file of a plausible size (one that
            # is not UTF-8 ended in a UnicodeDecodeError traceback, even with --overwrite).
            same = input_file_problem(sweep_file, MAX_DOCUMENT_BYTES) is None and read_input_bytes(
                sweep_file, MAX_DOCUMENT_BYTES, repr(str(sweep_file))
            ) == identity.encode("utf-8")
            if not same and not overwrite:
                raise ConfigError(
                    f"--out {str(out)!r} holds the points of a different sweep; pass --overwrite "
                    "to start it afresh or choose another folder"
                )
            if overwrite and self.points_dir.is_dir():
                shutil.rmtree(self.points_dir)
        elif self.points_dir.exists() and not overwrite:
            raise ConfigError(
                f"--out {str(out)!r}: has a points/ folder but no {SWEEP_FILE}; pass --overwrite"
            )
        # The first missing folder above ``out`` too: a failed sweep leaves no folder it made.
        above = [path for path in reversed(out.parents) if not os.path.lexists(path)][:1]
        self.created = [
            path for path in (*above, out, self.points_dir, sweep_file) if not os.path.lexists(path)
        ]
        writable_folder(self.points_dir)
        # A run killed mid-write leaves its temp file (never a partial point): drop it.
        for stale in self.points_dir.glob(".*.tmp"):
            stale.unlink()
        atomic_write_text(sweep_file, identity, overwrite=True)

    def drop_created(self) -> None:
        """Remove what this run created (the sweep failed as a whole: nothing to resume)."""
        for path in reversed(self.created):
            if path.is_dir():
                shutil.rmtree(path, ignore_errors=True)
            else:
                path.unlink(missing_ok=True)

    def load_existing(self, points: list[Point]) -> dict[int, dict[str, Any]]:
        rows: dict[int, dict[str, Any]] = {}
        for point in points:
            file = self.points_dir / f"{point.point_id}.json"
            if not file.is_file():
                continue
            row = _stored_row(file)
            # A point written before points kept their sketches runs again (rows are
            # deterministic, so its other values come out the same); so does an error point
            # an earlier version stored.
            if row["status"] != "ok" or any(column not in row for column in SKETCH_COLUMNS):
                continue
            rows[point.index] = row
        return rows

    def write(self, point: Point, row: dict[str, Any]) -> None:
        record = {
            "point": point.index,
            "point_id": point.point_id,
            "axes": _nan_to_none([[path, value] for path, value in point.assignment]),
            "row": {key: _nan_to_none_shallow(value) for key, value in row.items()},
        }
        atomic_write_text(self.points_dir / f"{point.point_id}.json", _json(record), overwrite=True)


def _stored_row(file: Path) -> dict[str, Any]:
    """The row of a point file this store wrote (``{"row": {"status": ..., ...}, ...}``); a
    file that is not one (edited by hand, another tool's, a disk error) is one ConfigError
    naming it and what to do, not a JSON traceback (a point is never half-written: writes are
    atomic)."""
    where = repr(str(file))
    try:
        text = read_input_bytes(file, MAX_DOCUMENT_BYTES, where).decode("utf-8")
        record = parse_json_text(text, where)
    except UnicodeDecodeError:
        problem = "not UTF-8 text"
    except ConfigError as exc:
        problem = str(exc).removeprefix(f"{where}: ")
    else:
        row = record.get("row") if isinstance(record, dict) else None
        if isinstance(row, dict) and isinstance(row.get("status"), str):
            return row
        problem = 'expected an object whose "row" is an object with a "status"'
    raise ConfigError(
        f"{where}: not a point file aisim sweep wrote ({problem}); delete it to run that point "
        "again, or pass --overwrite to start the sweep afresh"
    )


def _json(value: Any) -> str:
    """One line of JSON, keys sorted (NaN must be None already): byte-stable like
    ``canonical_json``, but without its indentation, which takes ``json`` off its C encoder (measured: 0.9 -> 0.2 user CPU-ms per point file, with ~0.2-0.5
    ms of system time for the file and its fsync; a sweep writes one per ~15 ms point)."""
    return (
        json.dumps(
            value,
            sort_keys=True,
            ensure_ascii=False,
            allow_nan=False,
            separators=(",", ":"),
        )
        + "\n"
    )


def _nan_to_none_shallow(value: Any) -> Any:
    """``_nan_to_none`` for a row's value: a scalar is checked in place (only NaN is unequal
    to itself), only a mapping or list (a sketch) is walked."""
    if isinstance(value, (dict, list)):
        return _nan_to_none(value)
    return None if value != value else value


def _nan_to_none(value: Any) -> Any:
    """``value`` with every NaN inside it None (rows hold NaN where a statistic is undefined)."""
    if isinstance(value, float) and value != value:
        return None
    if isinstance(value, dict):
        return {key: _nan_to_none(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_nan_to_none(item) for item in value]
    return value
