"""An engine step table (``grid/grid_steps.parquet`` of an engine recording) as a served-step
model: the edge between a recorded file and ``ServedStepModel`` (not compiled: file I/O).

``served_step_model(rows, ...)`` builds the model from the table's rows (one mapping per timed
engine step: ``phase``, ``point_id``, ``batch_size``, ``total_kv_tokens``,
``scheduled_tokens``, ``num_draft_tokens``, ``warmup`` and the latency column); the engine
recording scorer (``qualification/engine/_step_model.py``) and ``aisim replay --step-table``
(``load_step_table_model``) both price with it. The points are per ``point_id`` medians of the
non-warm-up steps: decode (or SD rounds at the model's d) over (B, past KV per request),
prefill over (requests, prompt tokens per request) from phase ``prefill`` (a token count new to
the engine) and ``prefill-cached`` (the same count again); on vLLM's CPU platform every timed
step (not the medians) is fitted by a line per kind (``LinearStepCost``). The engine behaviours modelled and
their sources: ``aisim/fpm/_engine_steps.py``; the pricing rules: ``_served_steps.py``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aisim._io import (
    MAX_DOCUMENT_BYTES,
    input_file_problem,
    parse_json_text,
    read_input_bytes,
    read_parquet_bytes,
    read_sidecar_object,
    read_verified_bytes,
)
from aisim.errors import ConfigError, DataIntegrityError
from aisim.fpm._engine_steps import (
    LinearStepCost,
    PrimitiveCache,
    StepPrice,
    StepSurface,
    capture_sizes,
    onednn_primitive_cache,
)
from aisim.fpm._served_steps import FrontEndCost, ServedStepModel, WakeCost

ENGINE_GRID_SCHEMA = "aisim.engine_grid_steps"
#: Phase of the table's prefill steps timed again at the token count just scheduled.
CACHED_PREFILL = "prefill-cached"
_NEEDED = ("phase", "point_id", "batch_size", "total_kv_tokens", "scheduled_tokens", "warmup")


def _points(
    rows: Sequence[Mapping[str, Any]], tokens_column: str, latency_column: str, scale: float
) -> dict[str, tuple[int, float, float]]:
    """Per point id: (count, median tokens per request, median ms)."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for row in rows:
        grouped.setdefault(str(row["point_id"]), []).append(row)
    points = {}
    for point_id in sorted(grouped):
        group = grouped[point_id]
        count = int(group[0]["batch_size"])
        tokens = float(statistics.median(int(row[tokens_column]) for row in group))
        latency = scale * float(statistics.median(float(row[latency_column]) for row in group))
        points[point_id] = (count, tokens / count, latency)
    return points


def creation_cost_ms(
    novel: Mapping[str, tuple[int, float, float]], cached: Mapping[str, tuple[int, float, float]]
) -> float | None:
    """Median over prefill points timed both ways of (new token count - cached) ms, at least 0;
    None when no point was."""
    differences = [
        novel[point][2] - cached[CACHED_PREFILL + point.removeprefix("prefill")][2]
        for point in sorted(novel)
        if CACHED_PREFILL + point.removeprefix("prefill") in cached
    ]
    return max(0.0, float(statistics.median(differences))) if differences else None


def first_decode_creation_ms(
    rows: Sequence[Mapping[str, Any]], latency_column: str = "wall_ms", scale: float = 1.0
) -> float | None:
    """The primitive-creation cost from the table's decode steps, for a table without cached
    prefill steps: each decode point's warm-up step (a batch's first decode step after its
    prefill) minus the next timed step of the same point, median over the warm-up steps whose
    step token count (``scheduled_tokens``) no earlier row of the table ran (the engine created
    the count's primitives in that step), less the same median over the warm-up steps whose
    count an earlier row ran (what a batch's first decode step costs over the next one without
    creation), at least 0; None when either group is empty. ``rows``: warm-up steps included,
    taken in the order of their ``start_ms`` when every row has a finite one, else in the order
    given (the order the table timed them); decode steps and SD rounds (phases ``decode``,
    ``sd``) both count, one engine process's caches serving both."""
    starts = [row.get("start_ms") for row in rows]
    if all(isinstance(start, (int, float)) and math.isfinite(start) for start in starts):
        rows = sorted(rows, key=lambda row: float(row["start_ms"]))
    seen: set[int] = set()
    new: list[float] = []
    again: list[float] = []
    for index, row in enumerate(rows):
        tokens = int(row["scheduled_tokens"])
        if row["warmup"] and row["phase"] in ("decode", "sd"):
            timed = next(
                (
                    later
                    for later in rows[index + 1 :]
                    if later["point_id"] == row["point_id"] and not later["warmup"]
                ),
                None,
            )
            if timed is not None:
                excess = scale * (float(row[latency_column]) - float(timed[latency_column]))
                (again if tokens in seen else new).append(excess)
        seen.add(tokens)
    if not new or not again:
        return None
    return max(0.0, float(statistics.median(new)) - float(statistics.median(again)))


def _samples(
    rows: Sequence[Mapping[str, Any]],
    tokens_column: str,
    latency_column: str,
    scale: float,
    less_ms: float = 0.0,
) -> list[tuple[int, float, float]]:
    """Every timed step as (count, total tokens, ms x scale - ``less_ms``), in table order."""
    return [
        (
            int(row["batch_size"]),
            float(int(row[tokens_column])),
            scale * float(row[latency_column]) - less_ms,
        )
        for row in rows
    ]


def engine_platform(settings: Mapping[str, Any], identity: Mapping[str, Any]) -> str | None:
    """``cpu``, ``cuda`` or None (unknown: no engine behaviour is modelled):
    ``engine_settings.platform``, else ``cpu`` for our recorder's ``identity.engine``
    ``vllm-cpu``. None for an SGLang recording (``identity.engine`` ``sglang...``) whatever its
    platform: the behaviours modelled are vLLM's (its oneDNN handler's cache, its CUDA-graph
    dispatcher and capture sizes), and SGLang's are not modelled."""
    if str(identity.get("engine") or "").lower().startswith("sglang"):
        return None
    platform = settings.get("platform")
    if platform in ("cpu", "cuda"):
        return str(platform)
    return "cpu" if identity.get("engine") == "vllm-cpu" else None


def served_step_model(
    rows: Sequence[Mapping[str, Any]],
    settings: Mapping[str, Any],
    identity: Mapping[str, Any],
    draft_length: int,
    *,
    where: str,
    latency_column: str = "wall_ms",
    scale: float = 1.0,
    engine_model: bool = True,
    frontend: FrontEndCost | None = None,
    cache: PrimitiveCache | None = None,
    wake: WakeCost | None = None,
    admit: WakeCost | None = None,
    _shared: tuple[PrimitiveCache | None, dict[str, int]] | None = None,
) -> ServedStepModel:
    """The served-step model of an engine step table (module docstring). ``engine_model``
    False prices with the table alone (no primitive cache, no graph padding); ``scale``
    multiplies every price (a diagnostic); ``frontend`` adds a serving front end's cost per
    step (``load_frontend_cost``; not scaled); ``cache``: the primitive caches as an earlier
    model of the same engine process left them (vLLM CPU; None: empty, a fresh process);
    ``wake``: the first step after an idle spell, probed apart (``load_wake_cost``; vLLM CPU
    only, over a table with cached prefill steps), carried to the table's speed by the
    table's own prefill price of the probe's reference steps (``WakeCost.scaled``);
    ``admit``: what admitting a request costs the engine's thread between steps, probed apart
    (``load_admit_cost``), carried to the table's speed the same way and under the same
    condition; replay's passes pay it per prefill request (``estimate_forward_pass_time_ms``),
    a recorded step's price does not (the step's time excludes it).
    DataIntegrityError naming ``where`` when the table has no timed steps of a kind the model
    needs."""
    timed = [row for row in rows if not row["warmup"]]
    decode_phase = "sd" if draft_length > 0 else "decode"
    decode = [row for row in timed if row["phase"] == decode_phase]
    if draft_length > 0:
        decode = [row for row in decode if int(row["num_draft_tokens"]) == draft_length]
    novel = [row for row in timed if row["phase"] == "prefill"]
    cached = [row for row in timed if row["phase"] == CACHED_PREFILL]
    if not decode:
        raise DataIntegrityError(
            f"{where}: the step table has no timed {decode_phase} steps"
            + (f" at d={draft_length}" if draft_length else "")
        )
    if not novel:
        raise DataIntegrityError(f"{where}: the step table has no timed prefill steps")
    decode_points = list(_points(decode, "total_kv_tokens", latency_column, scale).values())
    novel_points = _points(novel, "scheduled_tokens", latency_column, scale)
    cached_points = _points(cached, "scheduled_tokens", latency_column, scale)
    platform = engine_platform(settings, identity) if engine_model else None
    creation = creation_cost_ms(novel_points, cached_points)
    on_cpu = platform == "cpu"
    # Measured where the table timed its prefill points cached too; else, on CPU, from the
    # first decode step at each new token count (first_decode_creation_ms).
    creation_source = "prefill new - cached" if creation is not None else None
    if on_cpu and creation is None:
        creation = first_decode_creation_ms(rows, latency_column, scale)
        creation_source = "first decode step at a new count" if creation is not None else None
    use_cached = on_cpu and creation is not None
    if use_cached and not cached_points:
        # The table's prefill points priced as cached: timed at new counts, less creation.
        assert creation is not None
        cached_points = {
            point: (count, tokens, latency - creation)
            for point, (count, tokens, latency) in novel_points.items()
        }
    prefill_points = list((cached_points if use_cached else novel_points).values())
    sizes: list[int] = []
    if platform == "cuda" and not settings.get("enforce_eager", False):
        given = settings.get("cudagraph_capture_sizes")
        sizes = (
            sorted(int(size) for size in given)
            if given
            else capture_sizes(
                int(settings["max_num_seqs"]),
                int(settings["max_num_batched_tokens"]),
                draft_length + 1,
            )
        )
    fresh = (onednn_primitive_cache() if cache is None else cache) if on_cpu else None
    cache, coverage = _shared or (fresh, {})
    decode_price: StepPrice
    prefill_price: StepPrice
    if on_cpu:
        # vLLM on CPU: prices linear in what a step computes, fitted to every timed step of
        # the table (LinearStepCost); the cached prefill fit takes the steps timed at a new
        # token count less the creation cost as well.
        decode_price = LinearStepCost(
            _samples(decode, "total_kv_tokens", latency_column, scale), decode_phase, "decode"
        )
        prefill_samples = _samples(
            novel, "scheduled_tokens", latency_column, scale, creation or 0.0
        )
        if use_cached:
            prefill_samples += _samples(cached, "scheduled_tokens", latency_column, scale)
        prefill_price = LinearStepCost(prefill_samples, "prefill", "prefill")
    else:
        decode_price = StepSurface(decode_points, decode_phase)
        prefill_price = StepSurface(prefill_points, "prefill")
    model = ServedStepModel(
        decode_price,
        prefill_price,
        draft_length=draft_length,
        # One engine step's fixed cost, counted once in a mixed step: the decode fit's
        # intercept on CPU, else the cheapest decode step (or SD round) of the table.
        step_overhead_ms=decode_price.intercept_ms,
        creation_ms=creation if use_cached else None,
        creation_source=creation_source if use_cached else None,
        cache=cache,
        capture_sizes=sizes,
        coverage=coverage,
    )
    model.decode_points = decode_points
    model.prefill_points = prefill_points
    model.platform = platform
    model.frontend = frontend
    if use_cached and wake is not None:
        # Only where the creation cost is known (cached prefill steps, or the first decode
        # steps at new counts): without it the prefill price (timed at new token counts)
        # carries the creation cost on every prompt, and the probe's reference steps (cached
        # counts) have no price of their own to give the speed ratio.
        model.wake = wake
        model.wake_ms, model.wake_scale = wake.scaled(prefill_price, {})
    if use_cached and admit is not None:
        model.admit = admit
        model.admit_ms, model.admit_scale = admit.scaled(prefill_price, {})
    if draft_length > 0 and any(row["phase"] == "decode" for row in timed):
        model.plain_decode_model = served_step_model(
            rows,
            settings,
            identity,
            0,
            where=where,
            latency_column=latency_column,
            scale=scale,
            engine_model=engine_model,
            frontend=frontend,
            _shared=(cache, coverage),
        )
    return model


def load_step_table_model(
    path: str | Path, draft_length: int, *, engine_model: bool = True
) -> ServedStepModel:
    """The served-step model of an engine recording's step table: ``path`` is the recording,
    its ``grid/`` folder or ``grid_steps.parquet`` (sidecar ``grid_steps.parquet.json``: schema
    ``aisim.engine_grid_steps`` v1, SHA-256 and size checked). DataIntegrityError naming the
    file when it is missing, modified, or lacks a needed column."""
    given = Path(path)
    if not given.exists():
        raise DataIntegrityError(
            f"{str(given)!r}: not found; expected an engine recording, its grid/ folder or its "
            "grid_steps.parquet"
        )
    if (
        given.is_dir()
        and (given / "grid.csv").is_file()
        and not (given / "grid").is_dir()
        and not (given / "grid_steps.parquet").exists()
    ):
        raise DataIntegrityError(
            f"{str(given)!r}: a plain engine recording (grid.csv), not an imported one; convert "
            f"it first: aisim qualify engine-import {given} --out RECORDING"
        )
    frontend = load_frontend_cost(given / FRONTEND_FILE) if given.is_dir() else None
    if given.suffix == ".parquet":
        data = given
    elif (given / "grid_steps.parquet").exists():
        data = given / "grid_steps.parquet"
    else:
        data = given / "grid" / "grid_steps.parquet"
        if not data.exists():
            raise DataIntegrityError(
                f"{str(given)!r}: neither grid/grid_steps.parquet nor grid_steps.parquet here: "
                "not an engine recording or step table"
            )
    sidecar = read_sidecar_object(
        data, data.with_name(data.name + ".json"), missing_reason="an engine step table needs one"
    )
    where = repr(str(data))
    schema = sidecar.get("schema")
    if not isinstance(schema, dict) or schema.get("name") != ENGINE_GRID_SCHEMA:
        raise DataIntegrityError(
            f"{where}: sidecar schema {schema!r} is not {ENGINE_GRID_SCHEMA!r}: not an engine "
            "step table"
        )
    if schema.get("version") != 1:
        raise DataIntegrityError(
            f"{where}: schema.version: {schema.get('version')!r} is not supported (reads 1)"
        )
    table = read_parquet_bytes(read_verified_bytes(data, sidecar, require_size=True))
    missing = [
        name for name in (*_NEEDED, "wall_ms", "num_draft_tokens") if name not in table.column_names
    ]
    if missing:
        raise DataIntegrityError(f"{where}: missing column {missing[0]!r}")
    rows = table.to_pylist()
    settings = sidecar.get("engine_settings") or {}
    identity = sidecar.get("identity") or {}
    return served_step_model(
        rows,
        settings,
        identity,
        draft_length,
        where=where,
        engine_model=engine_model,
        frontend=frontend if engine_model else None,
        wake=load_wake_cost(data.parent / WAKE_FILE) if engine_model else None,
        admit=load_admit_cost(data.parent / ADMIT_FILE) if engine_model else None,
    )


#: A step table's wake model (``wake_model.json`` beside ``grid_steps.parquet``): the first
#: engine step after an idle spell, probed apart from the runs
#: (``python -m qualification.engine.probe_served_steps --idle MS --out ...``).
WAKE_FILE = "wake_model.json"
WAKE_SCHEMA = "aisim.engine_wake"
#: A step table's admission model (``admit_model.json`` beside ``grid_steps.parquet``): what
#: adding a request costs the engine's thread between steps, probed apart
#: (``python -m qualification.engine.probe_served_steps --admit --out ...``).
ADMIT_FILE = "admit_model.json"
ADMIT_SCHEMA = "aisim.engine_admit"


def load_wake_cost(path: str | Path) -> WakeCost | None:
    """The wake model of ``path`` (a step table's ``WAKE_FILE``: schema ``aisim.engine_wake``
    v1, ``terms.wake_ms`` a finite number >= 0 and ``terms.reference_prefill`` a non-empty
    list of [requests >= 1, prompt tokens >= 1, ms > 0]), or None when the file does not
    exist. DataIntegrityError naming the file and the field when it is unreadable or a term
    is missing or out of range."""
    return _load_probed_cost(path, WAKE_SCHEMA, "wake_ms", "wake model")


def load_admit_cost(path: str | Path) -> WakeCost | None:
    """The admission model of ``path`` (a step table's ``ADMIT_FILE``: schema
    ``aisim.engine_admit`` v1, ``terms.admit_ms`` and ``terms.reference_prefill`` as the wake
    model's), or None when the file does not exist; errors as ``load_wake_cost``'s."""
    return _load_probed_cost(path, ADMIT_SCHEMA, "admit_ms", "admission model")


def _read_versioned_json(file: Path, schema_name: str, what: str) -> dict[str, Any] | None:
    """The JSON object of ``file`` whose ``schema`` is ``schema_name`` version 1, or None when
    the file does not exist. DataIntegrityError naming the file (and ``what`` it should hold)
    when it is unreadable (a folder, a FIFO, which would block the read forever, a file over
    ``MAX_DOCUMENT_BYTES``, not UTF-8, not JSON, a key given twice), not an object, or of
    another schema or version."""
    where = repr(str(file))
    problem = input_file_problem(file, MAX_DOCUMENT_BYTES)
    if problem == "file not found":
        return None
    if problem is not None:
        raise DataIntegrityError(f"{where}: {problem}")
    try:
        data = parse_json_text(read_input_bytes(file, MAX_DOCUMENT_BYTES, where).decode(), where)
    except UnicodeDecodeError as exc:
        raise DataIntegrityError(f"{where}: unreadable {what} (not UTF-8: {exc.reason})") from None
    except ConfigError as exc:
        problem = str(exc).removeprefix(f"{where}: ")
        raise DataIntegrityError(f"{where}: unreadable {what} ({problem})") from None
    if not isinstance(data, dict):
        raise DataIntegrityError(f"{where}: a JSON object expected, got {type(data).__name__}")
    schema = data.get("schema")
    if not isinstance(schema, dict) or schema.get("name") != schema_name:
        raise DataIntegrityError(f"{where}: schema: {schema!r} is not {schema_name!r}")
    if schema.get("version") != 1:
        raise DataIntegrityError(
            f"{where}: schema.version: {schema.get('version')!r} is not supported (reads 1)"
        )
    return data


def _load_probed_cost(path: str | Path, schema_name: str, term: str, what: str) -> WakeCost | None:
    import math

    file = Path(path)
    where = repr(str(file))
    data = _read_versioned_json(file, schema_name, what)
    if data is None:
        return None
    terms = data.get("terms")
    if not isinstance(terms, dict):
        raise DataIntegrityError(f"{where}: terms: missing ({term}, reference_prefill)")
    unknown = sorted(set(terms) - {term, "reference_prefill"})
    if unknown:
        raise DataIntegrityError(
            f"{where}: terms.{unknown[0]}: unknown; allowed: {term}, reference_prefill"
        )

    def number(value: object) -> float | None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        return float(value) if math.isfinite(value) else None

    probe_ms = number(terms.get(term))
    if probe_ms is None or probe_ms < 0:
        raise DataIntegrityError(
            f"{where}: terms.{term}: {terms.get(term)!r} is not a finite number of ms >= 0"
        )
    rows = terms.get("reference_prefill")
    if not isinstance(rows, list) or not rows:
        raise DataIntegrityError(
            f"{where}: terms.reference_prefill: {rows!r} is not a non-empty list of "
            "[requests, prompt tokens, ms]"
        )
    reference: list[tuple[int, int, float]] = []
    for index, row in enumerate(rows):
        values = [number(value) for value in row] if isinstance(row, list) else []
        if (
            len(values) != 3
            or any(value is None for value in values)
            or not isinstance(row[0], int)
            or not isinstance(row[1], int)
            or row[0] < 1
            or row[1] < 1
            or not float(row[2]) > 0
        ):
            raise DataIntegrityError(
                f"{where}: terms.reference_prefill[{index}]: {row!r} is not [requests >= 1, "
                "prompt tokens >= 1, ms > 0]"
            )
        reference.append((int(row[0]), int(row[1]), float(row[2])))
    source = data.get("source")
    return WakeCost(probe_ms, reference, str(source) if isinstance(source, str) else str(file))


#: A recording's front-end model (``frontend/frontend_model.json``, relative to the recording):
#: what a serving front end costs on the engine's core, measured through the server.
FRONTEND_FILE = "frontend/frontend_model.json"
FRONTEND_SCHEMA = "aisim.engine_frontend"
#: The front end's terms, in this order (ms; ``FrontEndCost``'s fields): per engine step, per
#: request streaming output from a step, per request before the engine sees it. The one list
#: (the model file's ``terms`` and ``aisim.uncertainty``'s ``frontend`` samples read it).
FRONTEND_TERMS = ("step_ms", "token_ms", "request_ms")


def load_frontend_cost(path: str | Path) -> FrontEndCost | None:
    """The front-end terms of ``path`` (a recording's ``FRONTEND_FILE``: schema
    ``aisim.engine_frontend`` v1, ``terms.step_ms``, ``terms.token_ms``, ``terms.request_ms``,
    each a finite number >= 0 ms), or None when the file does not exist (an in-process
    recording). DataIntegrityError naming the file and the field when it is unreadable or
    a term is missing or out of range."""
    import math

    file = Path(path)
    where = repr(str(file))
    data = _read_versioned_json(file, FRONTEND_SCHEMA, "front-end model")
    if data is None:
        return None
    terms = data.get("terms")
    if not isinstance(terms, dict):
        raise DataIntegrityError(f"{where}: terms: missing (an object of {FRONTEND_TERMS})")
    unknown = sorted(set(terms) - set(FRONTEND_TERMS))
    if unknown:
        raise DataIntegrityError(
            f"{where}: terms.{unknown[0]}: unknown; allowed: {', '.join(FRONTEND_TERMS)}"
        )
    values = []
    for name in FRONTEND_TERMS:
        value = terms.get(name)
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not math.isfinite(value)
            or value < 0
        ):
            raise DataIntegrityError(
                f"{where}: terms.{name}: {value!r} is not a finite number of ms >= 0"
            )
        values.append(float(value))
    source = data.get("source")
    return FrontEndCost(
        values[0], values[1], values[2], str(source) if isinstance(source, str) else str(file)
    )
