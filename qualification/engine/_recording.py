"""Load an engine recording and refuse a bad one before anything is scored.

Every table goes through ``qualification.datasets.read_table`` (sidecar schema, size, SHA-256,
exact columns and types, missing values by row). On top of that a served run must be causally
ordered and complete: each request arrives, is added, emits its first token and finishes in that
order, emits exactly its requested output with non-decreasing token times, and steps follow one
another. Any violation is one ``DataIntegrityError`` line naming the file, the row and the field.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pandas as pd

from aisim.errors import DataIntegrityError
from aisim.fpm import (
    ADMIT_FILE,
    FRONTEND_FILE,
    WAKE_FILE,
    FrontEndCost,
    WakeCost,
    load_admit_cost,
    load_frontend_cost,
    load_wake_cost,
)
from qualification.datasets import TableSchema, read_table
from qualification.datasets.sidecar_fields import Object, OrNull, Text, check_fields
from qualification.engine._prometheus import read_samples
from qualification.engine._schema import (
    ENGINE_SETTINGS,
    ENGINE_SETTINGS_SCHEMA,
    GRID_DIR,
    GRID_STEPS,
    MAX_COUNT,
    MAX_REQUEST_TOKENS,
    MAX_TIME_MS,
    METRICS_FILE,
    SERVED_PREFIX,
    SERVED_REQUESTS,
    SERVED_STEPS,
    column_maximum,
)

PHASES = ("decode", "prefill", "prefill-cached", "sd")
#: How an error names a table's row: a parquet table's ``row N``, 0-based as pandas and
#: pyarrow number it. A plain CSV's rows are named by their line in the file instead
#: (``_plain.read_csv``).
RowName = Callable[[int], str]
PARQUET_ROW: RowName = "row {}".format


@dataclass(frozen=True)
class StepTable:
    """A recording's grid of timed engine steps (``grid/grid_steps.parquet``)."""

    directory: Path
    steps: pd.DataFrame
    sidecar: dict[str, Any]
    #: The first step after an idle spell, probed apart (``wake_model.json`` beside the grid;
    #: ``aisim.fpm.load_wake_cost``), or None.
    wake: WakeCost | None = None
    #: What admitting a request costs the engine's thread between steps, probed apart
    #: (``admit_model.json`` beside the grid; ``aisim.fpm.load_admit_cost``), or None.
    admit: WakeCost | None = None

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.sidecar.get("engine_settings") or {})

    def timed(self, phase: str) -> pd.DataFrame:
        """The non-warm-up steps of one phase."""
        frame = self.steps
        return frame[(frame["phase"] == phase) & ~frame["warmup"]]


@dataclass(frozen=True)
class ServedRun:
    """One served run of the trace: requests, steps and the engine's counters for the run."""

    directory: Path
    requests: pd.DataFrame
    steps: pd.DataFrame
    sidecar: dict[str, Any]
    metrics: dict[str, float]

    @property
    def name(self) -> str:
        return self.directory.name

    @property
    def settings(self) -> dict[str, Any]:
        return dict(self.sidecar.get("engine_settings") or {})


@dataclass(frozen=True)
class EngineRecording:
    directory: Path
    grid: StepTable | None
    served: tuple[ServedRun, ...]
    #: The serving front end's cost measured through the server (``frontend/frontend_model.json``;
    #: ``qualification.engine.frontend``), or None: the served runs are priced as in process.
    frontend: FrontEndCost | None = None

    @property
    def name(self) -> str:
        return self.directory.name


def load_step_table(path: str | Path) -> StepTable:
    """``path``: a recording, its ``grid/`` folder, or ``grid_steps.parquet``."""
    given = Path(path)
    expected = "expected an engine recording, its grid/ folder or its grid_steps.parquet"
    if not given.exists():
        raise DataIntegrityError(f"{str(given)!r}: not found; {expected}")
    if not given.is_dir():
        if given.suffix != ".parquet":
            # It was read as a folder: "'FILE/grid/grid_steps.parquet': sidecar ... is missing".
            raise DataIntegrityError(f"{str(given)!r}: not a folder or a .parquet file; {expected}")
        data = given
    else:
        check_not_plain(given)
        if (given / GRID_STEPS.file_name).exists() or given.name == GRID_DIR:
            data = given / GRID_STEPS.file_name
        elif (given / GRID_DIR).is_dir():
            data = given / GRID_DIR / GRID_STEPS.file_name
        else:
            raise DataIntegrityError(
                f"{str(given)!r}: no {GRID_DIR}/ folder and no {GRID_STEPS.file_name}; {expected}"
            )
    frame, sidecar = read_table(data, GRID_STEPS)
    where = repr(str(data))
    check_maxima(where, frame.to_dict("list"), GRID_STEPS)
    check_sidecar_parts(repr(f"{data}.json"), sidecar)
    check_setting_names(repr(f"{data}.json"), sidecar)
    for row, phase in enumerate(frame["phase"].tolist()):
        if phase not in PHASES:
            raise DataIntegrityError(
                f"{where}: {PARQUET_ROW(row)}: phase: {phase!r} is not one of {', '.join(PHASES)}"
            )
    _non_decreasing(where, frame["start_ms"].tolist(), "row {}: start_ms".format)
    return StepTable(
        data.parent,
        frame,
        sidecar,
        load_wake_cost(data.parent / WAKE_FILE),
        load_admit_cost(data.parent / ADMIT_FILE),
    )


def check_sidecar_parts(where: str, document: dict[str, Any]) -> None:
    """The engine parts of a recording's sidecar that the score reads: ``identity``'s engine,
    version, weights and shapes (``ENGINE_IDENTITY``) and the values of ``engine_settings``
    (``check_setting_values``). The table fields and the descriptive sections (``host``,
    ``grid``, ``driver``, ...) were checked when the table was read
    (``qualification.datasets.read_table``); a hand-edited ``"host": 5`` or
    ``"chunked_prefill": 1`` is one DataIntegrityError naming the field, never a traceback or a
    replay built from it."""
    identity = document.get("identity")
    if identity is not None:
        check_fields(where, identity, ENGINE_IDENTITY, "identity")
    settings = document.get("engine_settings")
    if isinstance(settings, dict):
        check_setting_values(where, settings)


#: An engine recording's ``identity`` (``settings.json`` of the plain layout, or our
#: recorders'): the target and draft are a ``config.json`` with its hash, or a name.
ENGINE_IDENTITY: Final = Object(
    {
        "engine": Text(),
        "engine_version": Text(),
        "weights": Text(),
        "target_shape": OrNull(Text()),
        "draft_shape": OrNull(Text()),
    }
)

#: Settings a recording must state to be replayed, with the largest value each may take.
_POSITIVE: Final[dict[str, int]] = {
    key: int(ENGINE_SETTINGS_SCHEMA[key]["maximum"])  # type: ignore[call-overload]
    for key in ("max_num_seqs", "max_num_batched_tokens", "block_size", "num_kv_blocks")
}
_FLAGS: Final = ("chunked_prefill", "prefix_caching")
_METHODS: Final = (None, "draft_model", "ngram")
#: The settings recorded for the record only (reported, never priced), checked by their schema.
_REPORTED: Final = {
    key: rule
    for key, rule in ENGINE_SETTINGS_SCHEMA.items()
    if key not in (*ENGINE_SETTINGS, "platform", "enforce_eager", "cudagraph_capture_sizes")
}


def _expected(value: Any, rule: dict[str, object]) -> str | None:
    """None when ``value`` is of ``rule``'s JSON type (``string``, ``boolean``, ``integer`` at
    least ``minimum``), else what was expected, in words."""
    kind, minimum = rule["type"], rule.get("minimum")
    if kind == "string":
        return None if isinstance(value, str) else "a string"
    if kind == "boolean":
        return None if isinstance(value, bool) else "true or false"
    integer = isinstance(value, int) and not isinstance(value, bool)
    if integer and (minimum is None or value >= minimum):
        return None
    return "an integer" if minimum is None else f"an integer >= {minimum}"


def check_setting_values(where: str, settings: dict[str, Any]) -> None:
    """Each engine setting present is of the kind ``ENGINE_SETTINGS_SCHEMA`` gives it (which
    ones must be present is the caller's: a plain ``settings.json`` needs every one of
    ``ENGINE_SETTINGS``; a recorded sidecar's missing one is named when a replay needs it);
    DataIntegrityError naming the setting, the value and what is allowed."""
    for key, most in _POSITIVE.items():
        value = settings.get(key, 1)
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
            raise DataIntegrityError(
                f"{where}: engine_settings.{key}: expected an integer in 1..{most}, got {value!r}"
            )
    for key in _FLAGS:
        if not isinstance(settings.get(key, False), bool):
            raise DataIntegrityError(
                f"{where}: engine_settings.{key}: expected true or false, got {settings[key]!r}"
            )
    method, depth = settings.get("speculative_method"), settings.get("num_speculative_tokens", 0)
    if method not in _METHODS:
        raise DataIntegrityError(
            f"{where}: engine_settings.speculative_method: expected null, 'draft_model' or "
            f"'ngram', got {method!r}"
        )
    if isinstance(depth, bool) or not isinstance(depth, int) or not 0 <= depth <= 16:
        raise DataIntegrityError(
            f"{where}: engine_settings.num_speculative_tokens: expected an integer in 0..16, "
            f"got {depth!r}"
        )
    if settings.get("platform", "cpu") not in ("cpu", "cuda"):
        raise DataIntegrityError(
            f"{where}: engine_settings.platform: expected 'cpu' or 'cuda', got "
            f"{settings['platform']!r}"
        )
    if not isinstance(settings.get("enforce_eager", False), bool):
        raise DataIntegrityError(
            f"{where}: engine_settings.enforce_eager: expected true or false, got "
            f"{settings['enforce_eager']!r}"
        )
    sizes = settings.get("cudagraph_capture_sizes", [1])
    if (
        not isinstance(sizes, list)
        or not sizes
        or any(isinstance(size, bool) or not isinstance(size, int) or size < 1 for size in sizes)
    ):
        raise DataIntegrityError(
            f"{where}: engine_settings.cudagraph_capture_sizes: expected a non-empty list of "
            f"positive integers, got {sizes!r}"
        )
    for key, rule in _REPORTED.items():
        kind = _expected(settings[key], rule) if key in settings else None
        if kind is not None:
            raise DataIntegrityError(
                f"{where}: engine_settings.{key}: expected {kind}, got {settings[key]!r}"
            )


def check_setting_names(where: str, document: dict[str, Any]) -> None:
    """Every key of ``document``'s ``engine_settings`` is one ``ENGINE_SETTINGS_SCHEMA`` lists
    (a misspelt ``enforce_eagre`` would leave ``enforce_eager`` at its default and move the
    price silently); DataIntegrityError naming it and the allowed ones."""
    settings = document.get("engine_settings")
    unknown = (
        sorted(set(settings) - set(ENGINE_SETTINGS_SCHEMA)) if isinstance(settings, dict) else []
    )
    if unknown:
        raise DataIntegrityError(
            f"{where}: engine_settings.{unknown[0]}: unknown setting; allowed: "
            f"{', '.join(ENGINE_SETTINGS_SCHEMA)}"
        )


def load_served_run(path: str | Path) -> ServedRun:
    """``path``: a served-run folder (``requests.parquet``, ``steps.parquet``, ``metrics.prom``)."""
    directory = Path(path)
    if directory.suffix == ".parquet":
        directory = directory.parent
    requests, request_side = read_table(directory / SERVED_REQUESTS.file_name, SERVED_REQUESTS)
    steps, step_side = read_table(directory / SERVED_STEPS.file_name, SERVED_STEPS)
    check_sidecar_parts(repr(f"{directory / SERVED_REQUESTS.file_name}.json"), request_side)
    check_sidecar_parts(repr(f"{directory / SERVED_STEPS.file_name}.json"), step_side)
    check_setting_names(repr(f"{directory / SERVED_REQUESTS.file_name}.json"), request_side)
    for key in ("identity", "engine_settings", "command"):
        if request_side.get(key) != step_side.get(key):
            raise DataIntegrityError(
                f"{str(directory)!r}: {SERVED_REQUESTS.file_name} and {SERVED_STEPS.file_name} "
                f"disagree on {key}: not one served run"
            )
    check_maxima(
        repr(str(directory / SERVED_REQUESTS.file_name)), requests.to_dict("list"), SERVED_REQUESTS
    )
    check_maxima(repr(str(directory / SERVED_STEPS.file_name)), steps.to_dict("list"), SERVED_STEPS)
    _check_requests(repr(str(directory / SERVED_REQUESTS.file_name)), requests)
    _check_steps(repr(str(directory / SERVED_STEPS.file_name)), steps)
    # metrics.prom is optional with SD off (another driver may not scrape one); with SD on
    # the scorer refuses a run without it, naming the file (``observed_acceptance``).
    metrics_path = directory / METRICS_FILE
    metrics = read_samples(metrics_path) if metrics_path.exists() else {}
    return ServedRun(directory, requests, steps, request_side, metrics)


def load_recording(path: str | Path) -> EngineRecording:
    """A recording directory: ``grid/`` (optional) and every ``served-N/`` folder."""
    directory = Path(path)
    if not directory.is_dir():
        found = "not found" if not directory.exists() else "not a directory"
        raise DataIntegrityError(
            f"{str(directory)!r}: {found}; expected an engine recording directory ({GRID_DIR}/ "
            f"and {SERVED_PREFIX}N/ folders)"
        )
    check_not_plain(directory)
    grid = load_step_table(directory) if (directory / GRID_DIR).is_dir() else None
    served = tuple(
        load_served_run(child)
        for child in sorted(directory.iterdir(), key=served_order)
        if child.is_dir() and child.name.startswith(SERVED_PREFIX)
    )
    if not served and grid is None:
        raise DataIntegrityError(
            f"{str(directory)!r}: no {GRID_DIR}/ and no {SERVED_PREFIX}N/ folders: not an "
            "engine recording"
        )
    return EngineRecording(directory, grid, served, load_frontend_cost(directory / FRONTEND_FILE))


def served_order(folder: Path) -> tuple[int, int, str]:
    """The order served runs were served in: ``served-2`` before ``served-10`` (by number; a
    name with no number after the prefix after every numbered one, by name). The engine's
    caches carry from one run's replay to the next, so the order is part of the score."""
    suffix = folder.name[len(SERVED_PREFIX) :]
    if folder.name.startswith(SERVED_PREFIX) and suffix.isdigit():
        return (0, int(suffix), folder.name)
    return (1, 0, folder.name)


def check_not_plain(directory: Path) -> None:
    """A folder in the plain layout (``settings.json``, ``grid.csv``, ``served-N/requests.csv``:
    docs/evidence.md, "Bring your own engine") that was not imported is named as such, with the
    command that converts it, instead of as a recording whose parquet sidecars are missing."""
    runs = [c for c in directory.iterdir() if c.is_dir() and c.name.startswith(SERVED_PREFIX)]
    plain = (directory / "grid.csv").is_file() or any((c / "requests.csv").is_file() for c in runs)
    recorded = (directory / GRID_DIR).is_dir() or any(
        (c / SERVED_REQUESTS.file_name).is_file() for c in runs
    )
    if plain and not recorded:
        raise DataIntegrityError(
            f"{str(directory)!r}: a plain engine recording (CSV + settings.json), not an imported "
            f"one; convert it first: aisim qualify engine-import {directory} --out RECORDING"
        )


def check_maxima(
    where: str,
    columns: dict[Any, list[Any]],
    schema: TableSchema,
    name_row: RowName = PARQUET_ROW,
) -> None:
    """Every numeric cell of ``columns`` at most ``column_maximum``'s bound (replay's limits);
    DataIntegrityError naming file, row (``name_row``), column (and list entry), the value and
    the bound."""
    limits = {
        MAX_TIME_MS: "ms (2^32 ms, about 49.7 days: replay's time limit)",
        MAX_REQUEST_TOKENS: "tokens (2^24: replay's limit per request)",
        MAX_COUNT: "(2^40: replay's count limit)",
    }
    for column in schema.columns:
        maximum = column_maximum(schema, column)
        if maximum is None or column.name not in columns:
            continue
        shown = f"{maximum:.0f}" if isinstance(maximum, float) else str(maximum)
        for row, cell in enumerate(columns[column.name]):
            entries = list(cell) if column.kind == "list[float]" and cell is not None else [cell]
            for index, value in enumerate(entries):
                if value is None or not value > maximum:  # None, NaN: other checks name them
                    continue
                field = f"{column.name}[{index}]" if column.kind == "list[float]" else column.name
                plain = value.item() if hasattr(value, "item") else value
                raise DataIntegrityError(
                    f"{where}: {name_row(row)}: {field}: {plain!r}; expected at most {shown} "
                    f"{limits[maximum]}"
                )


def _check_requests(where: str, frame: pd.DataFrame, name_row: RowName = PARQUET_ROW) -> None:
    seen: set[str] = set()
    records = frame.to_dict("records")
    if not records:
        raise DataIntegrityError(f"{where}: no requests; a served run has at least one")
    for row, record in enumerate(records):
        at = f"{where}: {name_row(row)}"
        rid = str(record["request_id"])
        if rid in seen:
            raise DataIntegrityError(f"{at}: request_id: {rid!r} appears twice")
        seen.add(rid)
        for name in ("prompt_tokens", "output_tokens"):
            # An engine refuses an empty prompt and emits at least one token per request (the
            # published schema says so: ``_schema.AT_LEAST_ONE``).
            if not int(record[name]) >= 1:
                raise DataIntegrityError(
                    f"{at}: {name}: {int(record[name])}; expected an integer >= 1"
                )
        order = ("arrival_ms", "added_ms", "first_token_ms", "finish_ms")
        if not record["arrival_ms"] >= 0:
            raise DataIntegrityError(
                f"{at}: arrival_ms: {record['arrival_ms']!r} is before the run start"
            )
        for earlier, later in zip(order, order[1:], strict=False):
            if not float(record[later]) >= float(record[earlier]):
                raise DataIntegrityError(
                    f"{at}: {later}: {record[later]!r} is before {earlier} "
                    f"{record[earlier]!r} (timestamps must be in causal order)"
                )
        times = [float(value) for value in record["token_times_ms"]]
        wanted = int(record["output_tokens"])
        if len(times) < wanted:
            raise DataIntegrityError(
                f"{at}: token_times_ms: request {rid!r} never finished (emitted "
                f"{len(times)} of its {wanted} output tokens)"
            )
        if len(times) > wanted:
            raise DataIntegrityError(
                f"{at}: token_times_ms: {len(times)} times for the {wanted} output "
                f"tokens of request {rid!r} (output_tokens); expected one time per output token"
            )
        for index, value in enumerate(times):
            if not math.isfinite(value):
                raise DataIntegrityError(
                    f"{at}: token_times_ms[{index}]: {value!r}; expected a finite time (ms)"
                )
        _non_decreasing(where, times, f"{name_row(row)}: token_times_ms[{{}}]".format)
        for index, field in ((0, "first_token_ms"), (len(times) - 1, "finish_ms")):
            if times[index] != float(record[field]):
                raise DataIntegrityError(
                    f"{at}: token_times_ms[{index}]: {times[index]!r} differs from "
                    f"{field} {float(record[field])!r}; expected the same time"
                )


def _check_steps(where: str, frame: pd.DataFrame, name_row: RowName = PARQUET_ROW) -> None:
    previous_end = -math.inf
    for row, record in enumerate(frame.to_dict("records")):
        at = f"{where}: {name_row(row)}"
        if int(record["step_index"]) != row:
            raise DataIntegrityError(f"{at}: step_index: {record['step_index']!r}, expected {row}")
        start, end = float(record["start_ms"]), float(record["end_ms"])
        if not start >= previous_end:
            raise DataIntegrityError(
                f"{at}: start_ms: {start!r} is before the previous step's end "
                f"{previous_end!r} (steps must not overlap)"
            )
        if not end >= start:
            raise DataIntegrityError(f"{at}: end_ms: {end!r} is before start_ms {start!r}")
        previous_end = end


def _non_decreasing(where: str, values: list[float], name_entry: RowName) -> None:
    """``values`` never go backwards; the error names the entry ``name_entry(index)`` (a
    column's row and field, or a list cell's entry)."""
    for index in range(1, len(values)):
        if values[index] < values[index - 1]:
            raise DataIntegrityError(
                f"{where}: {name_entry(index)}: {values[index]!r} is before {values[index - 1]!r} "
                "(timestamps must not go backwards)"
            )
