"""The engine-recording schemas: a grid of engine steps, and a served trace (requests + steps).

An engine recording is a directory (``docs/evidence.md``, "Ground truth from a serving engine"):

* ``grid/`` (the step table): ``grid_steps.parquet`` (schema ``aisim.engine_grid_steps``), every
  timed engine step of a grid of decode batches, prefill lengths and SD rounds, warm-up steps kept
  and flagged; beside it ``stp_points.parquet`` (the recorder's ``aisim.stp_points`` v1, so
  ``aisim.fpm.load_table_file`` loads the decode steps as an STP table) and, with SD on,
  ``sd_rounds.measured.parquet`` (``aisim.measured_rounds`` v1, loadable as measured rounds).
* ``served-N/`` (one served run of the trace): ``requests.parquet`` (``aisim.engine_requests``),
  ``steps.parquet`` (``aisim.engine_steps``) and ``metrics.prom`` (the engine's Prometheus
  counters for that run, text exposition format).

Times inside a run are milliseconds since the run's own start (``unit`` ``ms-since-start``), so a
first arrival at 0 is valid; durations are ``ms`` (strictly positive).
"""

from __future__ import annotations

from typing import Final

from qualification.datasets import Column, TableSchema, column_bound
from qualification.datasets.sidecar_fields import GRID, HOST

#: Unit of a time stamp measured from the start of the run (may be 0).
SINCE_START: Final = "ms-since-start"

GRID_STEPS: Final = TableSchema(
    name="aisim.engine_grid_steps",
    version=1,
    file_name="grid_steps.parquet",
    columns=(
        Column("phase", "str", "", "decode | prefill | sd (one SD round per engine step)"),
        Column("point_id", "str", "", "{phase}-b{B}-c{context}[-d{d}]"),
        Column("batch_size", "int", "requests", "requests in the step"),
        Column("context_tokens", "int", "tokens", "nominal per-request context of the point"),
        Column("total_kv_tokens", "int", "tokens", "past KV tokens read, summed over requests"),
        Column("scheduled_tokens", "int", "tokens", "tokens the engine scheduled in the step"),
        Column("num_draft_tokens", "int", "tokens", "draft tokens per request verified (0: STP)"),
        Column("repetition", "int", "", "0-based index of the step within its point"),
        Column("warmup", "bool", "", "warm-up step: recorded, never used for the table"),
        Column("start_ms", "float", SINCE_START, "step start (engine.step() called)"),
        Column("wall_ms", "float", "ms", "engine.step() wall-clock duration"),
        Column(
            "cpu_ms",
            "float",
            "cpu-ms",
            "process CPU time of the step (host contention aside); null: not recorded",
            optional=True,
        ),
        Column("accepted_tokens", "int", "tokens", "draft tokens accepted in the step (SD)"),
    ),
)

SERVED_REQUESTS: Final = TableSchema(
    name="aisim.engine_requests",
    version=1,
    file_name="requests.parquet",
    columns=(
        Column("request_id", "str", "", "the trace's request id"),
        Column("prompt_tokens", "int", "tokens", "prompt length (token ids)"),
        Column("output_tokens", "int", "tokens", "requested output (max_tokens, ignore_eos)"),
        Column("arrival_ms", "float", SINCE_START, "the trace's arrival time"),
        Column("added_ms", "float", SINCE_START, "when add_request was called"),
        Column("first_token_ms", "float", SINCE_START, "end of the step that emitted token 1"),
        Column("finish_ms", "float", SINCE_START, "end of the step that emitted the last token"),
        Column(
            "token_times_ms",
            "list[float]",
            SINCE_START,
            "one entry per output token: the end of the step that emitted it",
        ),
    ),
)

SERVED_STEPS: Final = TableSchema(
    name="aisim.engine_steps",
    version=1,
    file_name="steps.parquet",
    columns=(
        Column("step_index", "int", "", "0-based index of the engine step in the run"),
        Column("start_ms", "float", SINCE_START, "engine.step() called"),
        Column("end_ms", "float", SINCE_START, "engine.step() returned"),
        Column(
            "cpu_ms",
            "float",
            "cpu-ms",
            "process CPU time of the step (host contention aside); null: not recorded",
            optional=True,
        ),
        Column("num_prefill_requests", "int", "count", "requests computing prompt tokens"),
        Column("prefill_tokens", "int", "tokens", "prompt tokens computed in the step"),
        Column("num_decode_requests", "int", "count", "requests decoding (STP or an SD round)"),
        Column("decode_kv_tokens", "int", "tokens", "past KV of the decoding requests, summed"),
        Column("draft_tokens", "int", "tokens", "draft tokens verified in the step"),
        Column("scheduled_tokens", "int", "tokens", "all tokens the engine scheduled"),
        Column("tokens_emitted", "int", "tokens", "output tokens the step returned"),
        Column("preempted", "int", "count", "requests preempted by this step's schedule"),
        Column("waiting", "int", "count", "requests left waiting after this step's schedule"),
        Column("request_ids", "str", "", "';'-joined ids of the scheduled requests"),
    ),
)

ENGINE_SCHEMAS: Final = {
    schema.name: schema for schema in (GRID_STEPS, SERVED_REQUESTS, SERVED_STEPS)
}

#: Engine settings a served run's sidecar must carry, read back from the engine; the replay
#: config is built from exactly these (``qualification.engine._replay.replay_config``).
ENGINE_SETTINGS: Final = (
    "max_num_seqs",
    "max_num_batched_tokens",
    "block_size",
    "num_kv_blocks",
    "chunked_prefill",
    "prefix_caching",
    "speculative_method",
    "num_speculative_tokens",
)

#: The Prometheus text file beside a served run's tables.
METRICS_FILE: Final = "metrics.prom"
GRID_DIR: Final = "grid"
SERVED_PREFIX: Final = "served-"

_JSON_TYPES: Final[dict[str, dict[str, object]]] = {
    "int": {"type": "integer"},
    "float": {"type": "number"},
    "bool": {"type": "boolean"},
    "str": {"type": "string"},
    "list[float]": {"type": "array", "items": {"type": "number"}},
}


#: Counts a served request has at least one of (an engine refuses an empty prompt and emits at
#: least one token: ``_recording._check_requests``), beyond ``column_bound``'s rule.
AT_LEAST_ONE: Final = {
    ("aisim.engine_requests", "prompt_tokens"),
    ("aisim.engine_requests", "output_tokens"),
}


#: Largest time (ms) and count a recording's tables may hold: replay's limits (docs/replay.md
#: "Limits": times 2^32 ms, about 49.7 days; tokens per request 2^24; counts 2^40), so a
#: recording that imports also builds its replay and its errors stay finite (a wall_ms of 1e308
#: imported and scored every error as inf %).
MAX_TIME_MS: Final = float(1 << 32)
MAX_REQUEST_TOKENS: Final = 1 << 24
MAX_COUNT: Final = 1 << 40


def column_maximum(schema: TableSchema, column: Column) -> float | int | None:
    """The largest value of ``column``'s cells (each entry of a list), None for text; every
    float column of an engine recording is a time in ms."""
    if column.kind in ("float", "list[float]"):
        return MAX_TIME_MS
    if (schema.name, column.name) in AT_LEAST_ONE:
        return MAX_REQUEST_TOKENS
    if column.kind == "int":
        return MAX_COUNT
    return None


def _row_schema(schema: TableSchema, defaults: dict[str, str]) -> dict[str, object]:
    """One table row as a JSON Schema object: a property per column (type, unit, meaning, and
    the plain layout's default where a CSV may leave the column out)."""
    properties: dict[str, object] = {}
    for column in schema.columns:
        entry: dict[str, object] = dict(_JSON_TYPES[column.kind])
        bound = column_bound(column)
        if (schema.name, column.name) in AT_LEAST_ONE:
            bound = (1, False)
        if bound is not None:
            entry["exclusiveMinimum" if bound[1] else "minimum"] = bound[0]
        maximum = column_maximum(schema, column)
        if maximum is not None and column.kind == "list[float]":
            entry["items"] = {"type": "number", "maximum": maximum}
        elif maximum is not None:
            entry["maximum"] = maximum
        if column.optional:
            entry = {"anyOf": [entry, {"type": "null"}]}
        entry["description"] = column.meaning
        if column.unit:
            entry["x-unit"] = column.unit
        if column.name in defaults:
            entry["x-plain-default"] = defaults[column.name]
        properties[column.name] = entry
    return {
        "type": "object",
        "description": f"one row of {schema.file_name} (schema {schema.name} v{schema.version})",
        "properties": properties,
        "required": [c.name for c in schema.columns if c.name not in defaults],
        "additionalProperties": False,
    }


#: What a plain CSV may leave out, in words (``qualification.engine._plain.OPTIONAL``).
PLAIN_DEFAULTS: Final = {
    "aisim.engine_grid_steps": {
        "point_id": "{phase}-b{batch_size}-c{context_tokens}[-d{num_draft_tokens}]",
        "repetition": "numbered per point in file order from 0",
        "warmup": "false",
        "start_ms": "the cumulative wall_ms of the rows before",
        "cpu_ms": "null (not recorded)",
        "num_draft_tokens": "0",
        "accepted_tokens": "0",
    },
    "aisim.engine_requests": {"added_ms": "arrival_ms"},
    "aisim.engine_steps": {
        "step_index": "the row number (0-based)",
        "cpu_ms": "null (not recorded)",
        "draft_tokens": "0",
        "scheduled_tokens": "prefill_tokens + num_decode_requests + draft_tokens",
        "tokens_emitted": "0",
        "preempted": "0",
        "waiting": "0",
        "request_ids": "empty",
    },
}


#: ``settings.json``'s ``engine_settings``, every key it may hold, as JSON Schema: those the replay
#: is built from (``ENGINE_SETTINGS``, required), those the served-step model reads (``platform``,
#: ``enforce_eager``, ``cudagraph_capture_sizes``) and those our recorders read back from the
#: engine for the record (``qualification.engine._vllm``, ``evidence/vllm-bench-driver``), which
#: are reported and never priced. Any other key is refused (a misspelt ``enforce_eagre`` would
#: otherwise leave ``enforce_eager`` at its default and change the price silently).
ENGINE_SETTINGS_SCHEMA: Final[dict[str, dict[str, object]]] = {
    # The maxima are the replay config's (docs/replay.md "Limits": counts 2^40, blocks 2^20
    # tokens), so a recording that imports also builds its replay.
    "max_num_seqs": {"type": "integer", "minimum": 1, "maximum": 1 << 40},
    "max_num_batched_tokens": {"type": "integer", "minimum": 1, "maximum": 1 << 40},
    "block_size": {"type": "integer", "minimum": 1, "maximum": 1 << 20},
    "num_kv_blocks": {"type": "integer", "minimum": 1, "maximum": 1 << 40},
    "chunked_prefill": {"type": "boolean"},
    "prefix_caching": {"type": "boolean"},
    "speculative_method": {"enum": [None, "draft_model", "ngram"]},
    "num_speculative_tokens": {"type": "integer", "minimum": 0, "maximum": 16},
    "platform": {
        "enum": ["cpu", "cuda"],
        "description": "which engine behaviours the served-step model applies "
        "(docs/replay.md, 'Served steps as the engine runs them'); absent: none",
    },
    "enforce_eager": {"type": "boolean", "description": "cuda: true when graphs are off"},
    "cudagraph_capture_sizes": {
        "type": "array",
        "items": {"type": "integer", "minimum": 1},
        "description": "cuda: the captured sizes (default: vLLM's from max_num_seqs)",
    },
    "max_model_len": {"type": "integer", "minimum": 1, "description": "reported, not priced"},
    "dtype": {"type": "string", "description": "reported, not priced"},
    "scheduling_policy": {"type": "string", "description": "reported, not priced"},
    "long_prefill_token_threshold": {
        "type": "integer",
        "minimum": 0,
        "description": "reported, not priced",
    },
    "max_num_partial_prefills": {
        "type": "integer",
        "minimum": 1,
        "description": "reported, not priced",
    },
    "async_scheduling": {"type": "boolean", "description": "reported, not priced"},
    "kv_cache_memory_bytes": {
        "type": "integer",
        "minimum": 1,
        "description": "reported, not priced",
    },
    "load_format": {"type": "string", "description": "reported, not priced"},
    "frontend": {
        "type": "string",
        "description": "the serving front end the runs went through, in words; reported",
    },
}


def engine_recording_schema() -> dict[str, object]:
    """``aisim schema engine-recording``: the plain layout's ``settings.json`` as a JSON Schema,
    with every table's row schema under ``$defs`` and the folder layout in ``x-layout``
    (docs/evidence.md, "Bring your own engine")."""
    return {
        "description": (
            "An engine recording from any driver, in the plain layout that `aisim qualify "
            "engine-import PLAIN --out DIR` converts: this object is PLAIN/settings.json; the "
            "CSV files hold rows of the $defs tables (header = column names; an optional column "
            "may be left out and takes x-plain-default; an empty cpu_ms cell is null; "
            "token_times_ms is ';'-joined)."
        ),
        "type": "object",
        "properties": {
            "identity": {
                "type": "object",
                "properties": {
                    "engine": {"type": "string", "minLength": 1},
                    "engine_version": {"type": "string", "minLength": 1},
                    "target": {"description": "the served model: its config.json or a name"},
                    "draft": {"description": "the draft model (draft_model SD) or null"},
                    "target_shape": {"type": "string"},
                    "draft_shape": {"description": "the draft's shape (our recorders) or null"},
                    "weights": {
                        "type": "string",
                        "description": "what weights were served (e.g. 'dummy (random); "
                        "float32'); reported",
                    },
                },
                "required": ["engine", "engine_version", "target"],
                "additionalProperties": False,
            },
            "engine_settings": {
                "type": "object",
                "description": "read back from the engine; a key not listed is refused",
                "properties": ENGINE_SETTINGS_SCHEMA,
                "required": list(ENGINE_SETTINGS),
                "additionalProperties": False,
            },
            "host": {
                **HOST.json_schema(),
                "description": "where it ran (CPU, load); reported. The fields named here are "
                "read and must have these types; others are kept as written",
            },
            "grid": {
                **GRID.json_schema(),
                "description": "how the step table was recorded. The fields named here are "
                "read and must have these types; others are kept as written",
            },
            "driver": {
                "type": "object",
                "description": "what made the served runs and how (client, command, where it "
                "ran); reported in every sidecar",
            },
        },
        "required": ["identity", "engine_settings"],
        "additionalProperties": False,
        "$defs": {
            "grid_steps": _row_schema(GRID_STEPS, PLAIN_DEFAULTS[GRID_STEPS.name]),
            "requests": _row_schema(SERVED_REQUESTS, PLAIN_DEFAULTS[SERVED_REQUESTS.name]),
            "steps": _row_schema(SERVED_STEPS, PLAIN_DEFAULTS[SERVED_STEPS.name]),
        },
        "x-layout": {
            "settings.json": "this object",
            "grid.csv": "#/$defs/grid_steps rows: the step table (phase decode | prefill | sd)",
            "grid-metrics.prom": "Prometheus text: the grid's engine counters (SD on)",
            "served-N/requests.csv": "#/$defs/requests rows: one per request",
            "served-N/steps.csv": "#/$defs/steps rows: one per engine step (optional: a "
            "client-side driver sees no engine steps)",
            "served-N/metrics.prom": "Prometheus text: the run's counters (needed with SD on)",
        },
    }
