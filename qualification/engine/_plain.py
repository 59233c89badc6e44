"""Bring your own engine: convert a recording from a plain layout (CSV + JSON) written by any
driver into an engine recording, and back (``aisim qualify engine-import PLAIN --out DIR``).

The plain layout (docs/evidence.md, "Bring your own engine"):

```
PLAIN/
  settings.json          # identity (engine, engine_version, target[, draft, target_shape,
                         #   draft_shape, weights]), engine_settings[, host, grid, driver]
  grid.csv               # the step table: one row per timed engine step
  grid-metrics.prom      # the grid's Prometheus counters (needed with SD on)
  served-N/requests.csv  # one row per request
  served-N/steps.csv     # one row per engine step (optional: a client-side driver has none)
  served-N/metrics.prom  # the run's Prometheus counters (needed with SD on)
  wake_model.json        # optional, probed apart: the grid's wake model (grid/ in a recording)
  admit_model.json       # optional, probed apart: the grid's admission model (grid/)
  frontend_model.json    # optional, probed apart: the serving front end's model (frontend/)
```

CSV columns are the engine-recording schemas' (``aisim schema engine-recording``); some may be
left out and take a documented default (``OPTIONAL``), an empty ``cpu_ms`` cell means "not
recorded", ``token_times_ms`` is ``;``-joined. A row is named by its line in the file, as an
editor or a spreadsheet numbers it (the header is line 1, the first row line 2).
Every file is parsed and checked as a recording is loaded (types, finite numbers, causal order,
complete requests, monotone steps) *before* anything is written; the first problem is one
``DataIntegrityError`` line naming the file, the row and the field. The output is written to a
temp folder, loaded back through ``load_recording`` and only then renamed into place.
"""

from __future__ import annotations

import csv
import hashlib
import math
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pandas as pd

from aisim.errors import ConfigError, DataIntegrityError
from aisim.files import (
    atomic_write_text,
    canonical_json,
    input_file_problem,
    parse_json_text,
)
from aisim.fpm import (
    ADMIT_FILE,
    FRONTEND_FILE,
    WAKE_FILE,
    load_admit_cost,
    load_frontend_cost,
    load_wake_cost,
)
from qualification.datasets import TableSchema, check_values, non_finite_field, write_table
from qualification.datasets.sidecar_fields import GRID, HOST, Object, OrNull, check_fields
from qualification.engine._prometheus import read_samples
from qualification.engine._recording import (
    ENGINE_IDENTITY,
    PARQUET_ROW,
    PHASES,
    RowName,
    _check_requests,
    _check_steps,
    _non_decreasing,
    check_maxima,
    check_setting_names,
    check_setting_values,
    load_recording,
    served_order,
)
from qualification.engine._schema import (
    ENGINE_SETTINGS,
    GRID_DIR,
    GRID_STEPS,
    METRICS_FILE,
    SERVED_PREFIX,
    SERVED_REQUESTS,
    SERVED_STEPS,
)

SETTINGS_FILE: Final = "settings.json"
#: ``settings.json``'s ``identity`` fields, as the published schema lists them.
IDENTITY_FIELDS: Final = (
    "engine",
    "engine_version",
    "target",
    "draft",
    "target_shape",
    "draft_shape",
    "weights",
)
GRID_FILE: Final = "grid.csv"
GRID_METRICS_FILE: Final = "grid-metrics.prom"
REQUESTS_FILE: Final = "requests.csv"
STEPS_FILE: Final = "steps.csv"
#: The plain layout's optional model files (each measured apart from the runs it prices): the
#: plain name -> (where a recording keeps it, its loader, whether it belongs to the grid).
MODEL_FILES: Final[dict[str, tuple[str, Callable[[Path], Any], bool]]] = {
    "wake_model.json": (f"{GRID_DIR}/{WAKE_FILE}", load_wake_cost, True),
    "admit_model.json": (f"{GRID_DIR}/{ADMIT_FILE}", load_admit_cost, True),
    "frontend_model.json": (FRONTEND_FILE, load_frontend_cost, False),
}

#: Columns a plain CSV may leave out, and the value each then takes (documented in
#: docs/evidence.md): a function of the row's parsed values and its index.
Default = Callable[[dict[str, Any], int], Any]
OPTIONAL: Final[dict[str, dict[str, Default]]] = {
    GRID_STEPS.name: {
        "point_id": lambda row, _: _point_id(row),
        "repetition": lambda row, _: -1,  # numbered per point below
        "warmup": lambda row, _: False,
        "start_ms": lambda row, _: math.nan,  # cumulative wall time below
        "cpu_ms": lambda row, _: None,
        "num_draft_tokens": lambda row, _: 0,
        "accepted_tokens": lambda row, _: 0,
    },
    SERVED_REQUESTS.name: {"added_ms": lambda row, _: row["arrival_ms"]},
    SERVED_STEPS.name: {
        "step_index": lambda row, index: index,
        "cpu_ms": lambda row, _: None,
        "draft_tokens": lambda row, _: 0,
        "scheduled_tokens": lambda row, _: (
            row["prefill_tokens"] + row["num_decode_requests"] + row["draft_tokens"]
        ),
        "tokens_emitted": lambda row, _: 0,
        "preempted": lambda row, _: 0,
        "waiting": lambda row, _: 0,
        "request_ids": lambda row, _: "",
    },
}

#: An integer cell's text: ASCII digits, an optional leading '-'.
_INTEGER_TEXT: Final = re.compile(r"-?[0-9]+")
#: What float() skips or reads that a number cell may not hold: '_' between digits, blanks
#: around it, digits of other scripts.
_NOT_IN_A_NUMBER: Final = re.compile(r"[_\s]|[^\x00-\x7f]")

#: An integer cell's bound: a recording's integer columns are int64.
_INT64: Final = 1 << 63


def _point_id(row: dict[str, Any]) -> str:
    draft = int(row.get("num_draft_tokens") or 0)
    suffix = f"-d{draft}" if row["phase"] == "sd" else ""
    return f"{row['phase']}-b{row['batch_size']}-c{row['context_tokens']}{suffix}"


def _cell(where: str, line: int, column: Any, text: str) -> Any:
    """One CSV cell parsed as ``column.kind``; DataIntegrityError naming file, line and field."""
    place = f"{where}: line {line}: {column.name}"
    if text == "":
        if column.optional:
            return None
        raise DataIntegrityError(f"{place}: missing (empty cell)")
    if column.kind == "str":
        return text
    if column.kind == "bool":
        if text.lower() in ("true", "1"):
            return True
        if text.lower() in ("false", "0"):
            return False
        raise DataIntegrityError(f"{place}: expected true or false, got {text!r}")
    if column.kind == "int":
        # ASCII digits only: int() also took '4_0', ' 40 ', '+40' and other scripts' digits.
        if _INTEGER_TEXT.fullmatch(text) is None:
            raise DataIntegrityError(f"{place}: expected an integer, got {text!r}")
        integer = int(text)
        if not -_INT64 <= integer < _INT64:  # the parquet column is int64
            raise DataIntegrityError(
                f"{place}: expected an integer of at most {_INT64 - 1} (64 bits), got {text!r}"
            )
        return integer
    parts = text.split(";") if column.kind == "list[float]" else [text]
    values = []
    for index, part in enumerate(parts):
        field = f"{place}[{index}]" if column.kind == "list[float]" else place
        try:
            if _NOT_IN_A_NUMBER.search(part):  # float() also took '1_0.5' and ' 10.5 '
                raise ValueError(part)
            value = float(part)
        except ValueError:
            raise DataIntegrityError(f"{field}: expected a number, got {part!r}") from None
        if not math.isfinite(value):
            raise DataIntegrityError(f"{field}: expected a finite number, got {part!r}")
        values.append(value)
    return values if column.kind == "list[float]" else values[0]


#: Largest file of the plain layout. The import holds a table's cells as Python objects, about
#: 28 bytes per byte of short rows (measured: a 50 MiB requests.csv of 794,122 three-token
#: requests peaked at 1.4 GB resident, 64 s): at the trace limit (1 GiB) a CSV would need some
#: 28 GB; at this one at most about 7 GB. The committed recordings are under 1 MiB each.
MAX_PLAIN_BYTES: Final = 256 * 2**20


def _check_input(path: Path, where: str) -> None:
    """``path`` is a regular file of at most ``MAX_PLAIN_BYTES`` (a FIFO named ``grid.csv``
    would block the import forever); ``'<where>: missing'`` when it does not exist."""
    problem = input_file_problem(path, MAX_PLAIN_BYTES)
    if problem == "file not found":
        raise DataIntegrityError(f"{where}: missing")
    if problem is not None:
        raise DataIntegrityError(f"{where}: {problem}")


def read_csv(path: Path, schema: TableSchema) -> tuple[dict[str, list[Any]], RowName]:
    """``path`` parsed as ``schema``'s columns (left-out optional ones filled in), and how an
    error names a row: ``line N``, the line of the file it starts on (the header is line 1)."""
    where = repr(str(path))
    _check_input(path, where)
    lines: list[list[str]] = []
    numbers: list[int] = []  # the line each row starts on (a quoted cell may hold a newline)
    try:
        with path.open(encoding="utf-8-sig", newline="") as handle:  # Excel writes a BOM
            reader = csv.reader(handle)
            header = next(reader, None)
            start = reader.line_num + 1
            for line in reader:
                numbers.append(start)
                lines.append(line)
                start = reader.line_num + 1
    except FileNotFoundError:
        raise DataIntegrityError(f"{where}: missing") from None
    except (OSError, UnicodeDecodeError, csv.Error) as exc:
        raise DataIntegrityError(f"{where}: not a readable CSV file ({exc})") from None
    if not header:
        raise DataIntegrityError(f"{where}: empty; expected a header row")
    known = {column.name: column for column in schema.columns}
    defaults = OPTIONAL.get(schema.name, {})
    for name in header:
        if name not in known:
            raise DataIntegrityError(
                f"{where}: unknown column {name!r}; {schema.name} has the columns "
                f"{', '.join(schema.column_names)}"
            )
    if len(set(header)) != len(header):
        twice = next(name for name in header if header.count(name) > 1)
        raise DataIntegrityError(f"{where}: column {twice!r} appears twice")
    for column in schema.columns:
        if column.name not in header and column.name not in defaults:
            raise DataIntegrityError(f"{where}: missing column {column.name!r}")
    rows: list[dict[str, Any]] = []
    for number, line in zip(numbers, lines, strict=True):
        if len(line) != len(header):
            raise DataIntegrityError(
                f"{where}: line {number}: {len(line)} fields, the header has {len(header)}"
            )
        rows.append(
            {
                name: _cell(where, number, known[name], text)
                for name, text in zip(header, line, strict=True)
            }
        )

    def name_row(index: int) -> str:
        return f"line {numbers[index]}"

    # The cells as given, before a left-out column is derived from them (a start_ms summed
    # from a wall_ms past the limit would be named instead of the wall_ms).
    check_maxima(where, {name: [row[name] for row in rows] for name in header}, schema, name_row)
    order = [column.name for column in schema.columns if column.name not in header]
    for index, row in enumerate(rows):
        for name in order:
            row[name] = defaults[name](row, index)
    columns = {column.name: [row[column.name] for row in rows] for column in schema.columns}
    return columns, name_row


def _frame(columns: dict[str, list[Any]]) -> pd.DataFrame:
    return pd.DataFrame({name: pd.Series(values, dtype=object) for name, values in columns.items()})


def _check_table(
    where: str, schema: TableSchema, columns: dict[str, list[Any]], name_row: RowName
) -> None:
    """The value checks a loaded table gets (``read_table``, ``check_maxima``: a derived
    column too), named by the CSV file and line."""
    check_maxima(where, columns, schema, name_row)
    frame = pd.DataFrame(
        {
            column.name: pd.Series(
                [math.nan if value is None else value for value in columns[column.name]],
                dtype="float64" if column.kind in ("int", "float") else object,
            )
            for column in schema.columns
        }
    )
    check_values(where, frame, schema, name_row)


def read_grid(path: Path) -> dict[str, list[Any]]:
    """``grid.csv``: checked, ``repetition`` numbered per point and ``start_ms`` the cumulative
    wall time where the CSV leaves them out."""
    columns, name_row = read_csv(path, GRID_STEPS)
    where = repr(str(path))
    if not columns["phase"]:
        raise DataIntegrityError(f"{where}: no rows; a step table needs its timed steps")
    for row, phase in enumerate(columns["phase"]):
        if phase not in PHASES:
            raise DataIntegrityError(
                f"{where}: {name_row(row)}: phase: {phase!r} is not one of {', '.join(PHASES)}"
            )
    seen: dict[str, int] = {}
    for row, point in enumerate(columns["point_id"]):
        if columns["repetition"][row] == -1:
            columns["repetition"][row] = seen.get(point, 0)
        seen[point] = seen.get(point, 0) + 1
    clock = 0.0
    for row, start in enumerate(columns["start_ms"]):
        if isinstance(start, float) and math.isnan(start):
            columns["start_ms"][row] = clock
        clock = float(columns["start_ms"][row]) + float(columns["wall_ms"][row])
    _check_table(where, GRID_STEPS, columns, name_row)
    starts = [float(value) for value in columns["start_ms"]]
    _non_decreasing(where, starts, lambda index: f"{name_row(index)}: start_ms")
    return columns


def read_served(directory: Path) -> tuple[dict[str, list[Any]], dict[str, list[Any]]]:
    """``served-N/requests.csv`` and ``steps.csv``, checked as a served run is loaded. A run
    without ``steps.csv`` (a client-side driver such as ``vllm bench serve`` sees requests, not
    engine steps) gets an empty step table: scored the same, the per-step diagnostics n/a."""
    requests_path, steps_path = directory / REQUESTS_FILE, directory / STEPS_FILE
    requests, request_row = read_csv(requests_path, SERVED_REQUESTS)
    steps, step_row = (
        read_csv(steps_path, SERVED_STEPS)
        if steps_path.exists() or not requests_path.exists()
        else ({column.name: [] for column in SERVED_STEPS.columns}, PARQUET_ROW)
    )
    _check_table(repr(str(requests_path)), SERVED_REQUESTS, requests, request_row)
    _check_table(repr(str(steps_path)), SERVED_STEPS, steps, step_row)
    _check_requests(repr(str(requests_path)), _frame(requests), request_row)
    _check_steps(repr(str(steps_path)), _frame(steps), step_row)
    return requests, steps


def read_settings(path: Path) -> dict[str, Any]:
    """``settings.json``: identity (engine, engine_version, target, optional draft and
    target_shape), engine_settings (every one of ``ENGINE_SETTINGS``, optionally the others
    ``ENGINE_SETTINGS_SCHEMA`` lists; any other key is refused), an optional host, grid (how
    the step table was recorded) and driver (what made the served runs, and how);
    DataIntegrityError naming the field."""
    where = repr(str(path))
    _check_input(path, where)
    try:
        text = path.read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise DataIntegrityError(f"{where}: missing") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise DataIntegrityError(f"{where}: not a readable JSON file ({exc})") from None
    try:
        # A key given twice in one object is refused (json.loads keeps the last silently).
        loaded = parse_json_text(text, where)
    except ConfigError as exc:
        raise DataIntegrityError(str(exc)) from None
    if not isinstance(loaded, dict):
        raise DataIntegrityError(f"{where}: expected a JSON object")
    bad = non_finite_field(loaded)
    if bad is not None:
        raise DataIntegrityError(
            f"{where}: {bad[0]}: {bad[1]!r} is not a finite number (NaN and Infinity are not "
            "JSON; the recording's sidecars could not carry it)"
        )
    unknown = sorted(set(loaded) - {"identity", "engine_settings", "host", "grid", "driver"})
    if unknown:
        raise DataIntegrityError(
            f"{where}: {unknown[0]}: unknown field; allowed: identity, engine_settings, host, "
            "grid, driver"
        )
    for part in ("host", "grid", "driver"):
        # As the published schema says: a host of 5 imported and qualify engine ended in an
        # AttributeError traceback.
        if part in loaded and not isinstance(loaded[part], dict):
            raise DataIntegrityError(
                f"{where}: {part}: expected an object, got {type(loaded[part]).__name__}"
            )
    # The fields of host and grid that scores read, typed as in a recording's sidecars.
    check_fields(where, loaded, Object({"host": OrNull(HOST), "grid": OrNull(GRID)}))
    identity = loaded.get("identity")
    if not isinstance(identity, dict):
        raise DataIntegrityError(f"{where}: identity: expected an object")
    unknown = [key for key in identity if key not in IDENTITY_FIELDS]
    if unknown:  # a misspelt 'weigths' left engine.md saying 'weights not stated', silently
        raise DataIntegrityError(
            f"{where}: identity.{unknown[0]}: unknown field; allowed: {', '.join(IDENTITY_FIELDS)}"
        )
    if "weights" in identity and not isinstance(identity["weights"], str):
        raise DataIntegrityError(f"{where}: identity.weights: expected a string")
    for key, value in identity.items():
        # The identity is printed in engine.md's first lines: a line break split them.
        if isinstance(value, str) and any(ord(c) < 32 or c in "\x7f\u2028\u2029" for c in value):
            raise DataIntegrityError(
                f"{where}: identity.{key}: {value!r} holds a control character; expected one "
                "line of text"
            )
    for key in ("engine", "engine_version"):
        if not isinstance(identity.get(key), str) or not identity[key]:
            raise DataIntegrityError(f"{where}: identity.{key}: expected a non-empty string")
    check_fields(where, identity, ENGINE_IDENTITY, "identity")
    if identity.get("target") is None:
        raise DataIntegrityError(
            f"{where}: identity.target: missing; name the served model (its config or a name)"
        )
    settings = loaded.get("engine_settings")
    if not isinstance(settings, dict):
        raise DataIntegrityError(f"{where}: engine_settings: expected an object")
    check_setting_names(where, loaded)
    for key in ENGINE_SETTINGS:
        if key not in settings:
            raise DataIntegrityError(
                f"{where}: engine_settings.{key}: missing; a replay needs every engine setting "
                f"({', '.join(ENGINE_SETTINGS)})"
            )
    check_setting_values(where, settings)
    method, depth = settings["speculative_method"], settings["num_speculative_tokens"]
    if (method is None) != (depth == 0):
        raise DataIntegrityError(
            f"{where}: engine_settings.num_speculative_tokens: {depth} with speculative_method "
            f"{method!r} (0 exactly when SD is off)"
        )
    return loaded


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def import_plain(source: str | Path, out: str | Path, *, overwrite: bool = False) -> Path:
    """Convert the plain recording ``source`` into an engine recording at ``out``; everything
    is checked before anything is written (module docstring). Returns ``out``."""
    src, target = Path(source), Path(out)
    if not src.is_dir():
        raise ConfigError(f"PLAIN {str(src)!r}: not a folder; expected a plain recording folder")
    if os.path.lexists(target) and not target.is_dir():
        raise ConfigError(f"{str(target)!r}: exists and is not a folder")
    source_at, target_at = src.resolve(), target.resolve()
    if target_at == source_at or target_at in source_at.parents:
        raise ConfigError(
            f"{str(target)!r}: is the plain recording {str(src)!r} or a folder above it; the "
            "import would write over its own input: give another --out"
        )
    here = Path.cwd().resolve()
    if target_at == here or target_at in here.parents:
        # '--out . --overwrite' ended in a ValueError traceback ('.' has no name to put the
        # staging folder beside), '--out ..' in an OSError after moving the parent's files.
        raise ConfigError(
            f"{str(target)!r}: is the current folder or a folder above it; the import replaces "
            "its --out folder: give another --out"
        )
    if target.exists() and not overwrite:
        raise ConfigError(f"{str(target)!r} already exists; pass --overwrite to replace it")
    settings = read_settings(src / SETTINGS_FILE)
    sd_on = settings["engine_settings"]["speculative_method"] is not None
    grid = read_grid(src / GRID_FILE) if (src / GRID_FILE).exists() else None
    runs = sorted(
        (
            child
            for child in src.iterdir()
            if child.is_dir() and child.name.startswith(SERVED_PREFIX)
        ),
        key=served_order,
    )
    for child in sorted(src.iterdir()):
        if child.is_dir() and child not in runs and (child / REQUESTS_FILE).exists():
            raise DataIntegrityError(
                f"{str(child)!r}: holds {REQUESTS_FILE} but is not named {SERVED_PREFIX}N; name "
                f"the served runs {SERVED_PREFIX}1, {SERVED_PREFIX}2, ... in the order they were "
                "served"
            )
    if grid is None and not runs:
        raise DataIntegrityError(
            f"{str(src)!r}: no {GRID_FILE} and no {SERVED_PREFIX}N/ folders: nothing to import"
        )
    served = [(run.name, *read_served(run)) for run in runs]
    metrics: dict[str, Path] = {}
    if grid is not None and (src / GRID_METRICS_FILE).exists():
        metrics[GRID_DIR] = src / GRID_METRICS_FILE
    for run in runs:
        if (run / METRICS_FILE).exists():
            metrics[run.name] = run / METRICS_FILE
    for path in metrics.values():
        _check_input(path, repr(str(path)))
    for path in metrics.values():
        read_samples(path)  # parses, every sample finite: one line naming the file and sample
    if sd_on:
        needed = ([GRID_DIR] if grid is not None else []) + [run.name for run in runs]
        for part in needed:
            if part not in metrics:
                name = GRID_METRICS_FILE if part == GRID_DIR else f"{part}/{METRICS_FILE}"
                raise DataIntegrityError(
                    f"{str(src / name)!r}: missing; with speculative decoding on, the engine's "
                    "SD counters are needed (vllm:spec_decode_num_drafts, ...)"
                )
    models: dict[str, Path] = {}
    for name, (place, load, of_grid) in MODEL_FILES.items():
        path = src / name
        if not path.exists():
            continue
        load(path)  # one line naming the file and the field when it is not such a model
        if of_grid and grid is None:
            raise DataIntegrityError(
                f"{str(path)!r}: a model of the step table; it needs {GRID_FILE} beside it"
            )
        models[place] = path
    files = sorted(
        path
        for path in [src / SETTINGS_FILE, src / GRID_FILE, *metrics.values(), *models.values()]
        + [run / name for run in runs for name in (REQUESTS_FILE, STEPS_FILE)]
        if path.exists()
    )
    common = {
        "evidence_type": "engine-measurement",
        "command": f"aisim qualify engine-import {src.name}",
        "identity": settings["identity"],
        "engine_settings": settings["engine_settings"],
        "host": settings.get("host"),
        "driver": settings.get("driver"),
        "timing_metric": "wall",
        "imported": {
            "layout": "aisim plain engine recording (docs/evidence.md)",
            "files": {path.relative_to(src).as_posix(): _sha256(path) for path in files},
        },
    }
    staging = target_at.with_name(f".{target_at.name}.import-{os.getpid()}")
    if staging.exists():
        shutil.rmtree(staging)
    try:
        if grid is not None:
            extra = {"part": "grid", "grid": settings.get("grid")}
            write_table(staging / GRID_DIR, GRID_STEPS, grid, {**common, **extra})
        for name, requests, steps in served:
            extra = {"part": "served", "metrics_file": METRICS_FILE if name in metrics else None}
            write_table(staging / name, SERVED_REQUESTS, requests, {**common, **extra})
            write_table(staging / name, SERVED_STEPS, steps, {**common, **extra})
        for part, path in metrics.items():
            shutil.copyfile(path, staging / part / METRICS_FILE)
        for place, path in models.items():
            (staging / place).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, staging / place)
        load_recording(staging)  # the whole recording loads as a recorded one would
        if target.exists():
            _replace_recording(target, staging)
        else:
            staging.rename(target)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return target


def _replace_recording(target: Path, staging: Path) -> None:
    """``--overwrite``: the recording parts of ``target`` (``grid/``, ``served-N/``) give way to
    ``staging``'s; anything else there (a score folder, the user's notes, a front-end model) is
    kept, moved into the new folder, which then takes ``target``'s place in two renames. A
    folder the import also writes (``frontend/`` with a front-end model) keeps the files the
    import does not replace (the probe beside the model)."""
    retired = target.with_name(f".{target.name}.replaced-{os.getpid()}")
    moved: list[str] = []
    try:
        for child in sorted(target.iterdir()):
            if child.name == GRID_DIR or child.name.startswith(SERVED_PREFIX):
                continue
            if child.is_dir() and (staging / child.name).is_dir():
                for entry in sorted(child.iterdir()):
                    if not os.path.lexists(staging / child.name / entry.name):
                        entry.rename(staging / child.name / entry.name)
                        moved.append(f"{child.name}/{entry.name}")
            else:
                child.rename(staging / child.name)
                moved.append(child.name)
        target.rename(retired)
        try:
            staging.rename(target)
        except BaseException:
            retired.rename(target)
            raise
    except BaseException:
        for name in moved:  # the user's files go back before the staging folder is dropped
            (staging / name).rename(target / name)
        raise
    shutil.rmtree(retired)


def _text(value: Any) -> str:
    """A cell as ``read_csv`` parses it back: floats by repr (exact), lists ';'-joined."""
    if hasattr(value, "tolist"):
        value = value.tolist()  # numpy scalars and arrays -> Python values
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, (list, tuple)):
        return ";".join(repr(float(item)) for item in value)
    return str(value)


def _write_csv(path: Path, frame: pd.DataFrame, schema: TableSchema) -> None:
    lines = [",".join(schema.column_names)]
    for record in frame.to_dict("records"):
        cells = [_text(record[name]) for name in schema.column_names]
        lines.append(",".join(_quote(cell) for cell in cells))
    atomic_write_text(path, "\n".join(lines) + "\n")


def _quote(cell: str) -> str:
    return f'"{cell}"' if any(char in cell for char in ',"\n') else cell


def pool_grid_passes(passes: list[pd.DataFrame]) -> pd.DataFrame:
    """One step table from grid passes of the same engine timed at different moments (e.g. just
    before and just after served runs, so both moments weigh in each point's median): every
    pass's repetitions are renumbered after the previous passes' of the same point, and its
    start times shifted to 1 ms after the previous passes' last step ended."""
    if not passes:
        raise ValueError("pool_grid_passes: no grid passes given")
    pooled = passes[0]
    for later in passes[1:]:
        ended = float((pooled["start_ms"] + pooled["wall_ms"]).max())
        taken = pooled.groupby("point_id")["repetition"].max() + 1
        later = later.assign(
            start_ms=later["start_ms"] + ended + 1.0,
            repetition=later["repetition"] + later["point_id"].map(taken).fillna(0).astype(int),
        )
        pooled = pd.concat([pooled, later], ignore_index=True)
    return pooled


def write_plain_grid(path: str | Path, steps: pd.DataFrame) -> Path:
    """Write ``steps`` (a grid's step table) as the plain layout's grid CSV, every column of
    its schema, floats exact; atomic."""
    target = Path(path)
    _write_csv(target, steps, GRID_STEPS)
    return target


def export_plain(recording: str | Path, out: str | Path) -> Path:
    """Write an engine recording in the plain layout (every column, floats exact, the grid's
    wake and admission models and the front-end model when it has them); importing the result
    gives a recording that scores the same. ``out`` must not exist."""
    loaded = load_recording(recording)
    target = Path(out)
    if target.exists():
        raise ConfigError(f"{str(target)!r} already exists")
    first = loaded.served[0].sidecar if loaded.served else loaded.grid.sidecar  # type: ignore[union-attr]
    settings = {
        "identity": first.get("identity"),
        "engine_settings": first.get("engine_settings"),
        "host": first.get("host"),
    }
    atomic_write_text(target / SETTINGS_FILE, canonical_json(settings))
    if loaded.grid is not None:
        _write_csv(target / GRID_FILE, loaded.grid.steps, GRID_STEPS)
        if (loaded.grid.directory / METRICS_FILE).exists():
            shutil.copyfile(loaded.grid.directory / METRICS_FILE, target / GRID_METRICS_FILE)
    for name, (place, _, _) in MODEL_FILES.items():
        if (loaded.directory / place).exists():
            shutil.copyfile(loaded.directory / place, target / name)
    for run in loaded.served:
        _write_csv(target / run.name / REQUESTS_FILE, run.requests, SERVED_REQUESTS)
        _write_csv(target / run.name / STEPS_FILE, run.steps, SERVED_STEPS)
        if (run.directory / METRICS_FILE).exists():
            shutil.copyfile(run.directory / METRICS_FILE, target / run.name / METRICS_FILE)
    return target
