"""The replay config as pydantic models (docs/replay.md, docs/design.md#replay).

The whole config is one ``ReplayFile`` tree, validated once (``validate(ReplayFile, config)``):
each block is an ``EdgeModel``, a block whose ``type`` selects its model is a ``Kinds`` union
(capacities, timings, traffic sources, loads, lengths), a worker's ``scheduler`` is read by the
model of ``engine.backend``, and a bound that depends on another field (a length's ``max`` at
least its ``min``) is checked by the model's ``after`` validator at that field's path. The
readers (``_replay``, ``_replay_capacity``, ``_traffic``) take the frozen models and resolve
what needs more than the block (the catalogue, files, the speculation's geometry).
``aisim schema replay`` prints the tree.

One value is not typed here: inline agentic ``requests`` (a ``Section``), read by the
trace-row reader that reads the lines of a JSONL file too (``aisim.traffic``).
"""

from __future__ import annotations

import types
import typing
from typing import Annotated, Any, ClassVar, Final, Literal

from pydantic import ConfigDict, Field, ModelWrapValidatorHandler, model_validator

from aisim.config._catalogue import HardwareFile, ModelFile
from aisim.config._edge import (
    Choice,
    EdgeModel,
    Integer,
    Kinds,
    NameOr,
    Number,
    OrNone,
    Section,
    check_field,
    current_backend,
    engine_backend,
)
from aisim.config._estimator import EstimatorConfig
from aisim.config._replay_limits import (
    DEFAULT_ACTIVATION_RESERVE_GIB,
    DEFAULT_MEMORY_FRACTION,
    MAX_BANDWIDTH_BYTES_PER_S,
    MAX_BLOCK_TOKENS,
    MAX_COUNT,
    MAX_KV_BYTES_PER_TOKEN,
    MAX_PARALLEL,
    MAX_RATE_RPS,
    MAX_REQUESTS,
    MAX_SEED,
    MAX_TIME_MS,
    MAX_TIME_SCALE,
    MAX_TOKENS,
    MAX_TRANSFER_MS,
    MIN_RATE_RPS,
)
from aisim.config._speculation_models import AcceptanceNumber, SpeculationConfig

Count = Annotated[int, Integer(1, MAX_COUNT)]
Ratio = Annotated[float, Number(0.0, 1.0)]
Milliseconds = Annotated[float, Number(0.0, MAX_TIME_MS)]
Tokens = Annotated[int, Integer(1, MAX_TOKENS)]
BlockTokens = Annotated[int | None, OrNone(Integer(1, MAX_BLOCK_TOKENS))]


# -- engine: workers -----------------------------------------------------------------------


class Parallelism(EdgeModel):
    """A worker's GPUs: ``attention_data`` ranks in lockstep, each a ``tensor``-parallel group."""

    tensor: Annotated[int, Integer(1, MAX_PARALLEL)] = 1
    attention_data: Annotated[int, Integer(1, MAX_PARALLEL)] = 1


class VllmScheduler(EdgeModel):
    """vLLM's scheduler limits (``--max-num-batched-tokens``, ``--max-num-seqs``)."""

    edge_unknown_note: ClassVar[str] = " for backend vllm"
    edge_kind: ClassVar[str] = "vllm"

    max_batched_tokens: Count = 8192
    max_sequences: Count = 256
    chunked_prefill: bool = True
    # TensorRT-LLM attention_dp_config (enable_balance, timeout_iters, batching_wait_iters):
    # with attention DP, new context requests wait until every rank has one (docs/replay.md).
    attention_dp_enable_balance: bool = False
    attention_dp_time_out_iters: Count = 50
    attention_dp_batching_wait_iters: Annotated[int, Integer(0, 1 << 20)] = 10


class SglangScheduler(EdgeModel):
    """SGLang's scheduler limits and its new-token-ratio admission estimate."""

    edge_unknown_note: ClassVar[str] = " for backend sglang"
    edge_kind: ClassVar[str] = "sglang"

    chunked_prefill_size: Count = 8192
    max_running_requests: Count = 256
    chunked_prefill: bool = True
    init_new_token_ratio: Ratio = 0.7
    min_new_token_ratio: Annotated[
        float, Number(0.0, 1.0), Field(description="at most init_new_token_ratio")
    ] = 0.1
    new_token_ratio_decay: Ratio = 0.001
    # --scheduler-recv-interval: new requests are taken in only every N decode passes.
    scheduler_recv_interval: Count = 1
    # Host work per request of a pass on the critical path (SGLang without the overlap
    # scheduler, e.g. EAGLE / MTP without SGLANG_ENABLE_SPEC_V2); 0: hidden behind the GPU.
    host_us_per_request: Annotated[float, Number(0.0, 1.0e6)] = 0.0
    # With the overlap scheduler (event_loop_overlap) that host work runs beside the GPU's
    # pass: a pass lasts the longer of the two instead of their sum.
    host_overlapped: bool = False

    @model_validator(mode="after")
    def _floor_below_start(self) -> SglangScheduler:
        # The floor is bounded by the start of the decay: the field checks 0..1, this its maximum.
        check_field(
            Number(0.0, self.init_new_token_ratio), self.min_new_token_ratio, "min_new_token_ratio"
        )
        return self


class FixedCapacity(EdgeModel):
    """A KV pool of ``blocks`` blocks per rank."""

    type: Literal["fixed"]
    blocks: Count


class DefaultCapacity(EdgeModel):
    """The KV pool the GPU's memory leaves after the weights and a reserve (no drafter)."""

    type: Literal["default"]
    memory_fraction: Ratio = DEFAULT_MEMORY_FRACTION
    activation_reserve_gib: Annotated[float, Number(0.0)] = DEFAULT_ACTIVATION_RESERVE_GIB


class KvCache(EdgeModel):
    """A worker's KV cache: block size (default 16 on vLLM, 1 on SGLang), prefix caching and
    its unit (a multiple of the block size), and the capacity."""

    block_size: BlockTokens = None
    prefix_caching: bool = True
    prefix_unit_tokens: BlockTokens = None
    capacity: Annotated[FixedCapacity | DefaultCapacity, Kinds()] | None = None


class FixedTiming(EdgeModel):
    """Every prefill pass and every decode pass takes a fixed time."""

    type: Literal["fixed"]
    prefill_ms: Milliseconds
    decode_ms: Milliseconds


class EstimatorTiming(EstimatorConfig):
    """Passes priced by an estimator (``best_available``; model, hardware and backend default
    to the engine's)."""

    type: Literal["estimator"] = "estimator"


class Worker(EdgeModel):
    """One pool of identical workers (``aggregated``, ``prefill`` or ``decode``)."""

    parallelism: Parallelism = Parallelism()
    scheduler: (
        Annotated[
            VllmScheduler | SglangScheduler,
            Kinds(select=current_backend),
            Field(description="the fields of the engine's backend"),
        ]
        | None
    ) = None
    kv_cache: KvCache | None = None
    timing: Annotated[FixedTiming | EstimatorTiming, Kinds(default="estimator")] | None = None
    speculation: SpeculationConfig | None = None


class Workers(EdgeModel):
    """``aggregated`` alone, or ``prefill`` and ``decode`` (disaggregated)."""

    aggregated: Worker | None = None
    prefill: Worker | None = None
    decode: Worker | None = None


class KvTransfer(EdgeModel):
    """The P/D KV hand-off: bandwidth (default the GPU's NVLink), fixed latency, KV bytes per
    token (default the model's, per GPU of the prefill group)."""

    bandwidth_bytes_per_s: Annotated[
        float | None, OrNone(Number(1.0, MAX_BANDWIDTH_BYTES_PER_S))
    ] = None
    latency_ms: Annotated[float, Number(0.0, MAX_TRANSFER_MS)] = 0.0
    kv_bytes_per_token: Annotated[
        float | None, OrNone(Number(0.0, float(MAX_KV_BYTES_PER_TOKEN)))
    ] = None


class Engine(EdgeModel):
    """The served deployment."""

    # ``workers`` left out is reported with the roles allowed (``engine.workers: expected
    # either aggregated, or prefill and decode; got nothing``), so it has a default here; the
    # schema still says it is required.
    model_config = ConfigDict(**EdgeModel.model_config, json_schema_extra={"required": ["workers"]})

    model: Annotated[str | ModelFile, NameOr("a model name or config.json path")] | None = None
    hardware: Annotated[str | HardwareFile, NameOr("a GPU name or file path")] | None = None
    backend: Annotated[str, Choice("vllm", "sglang")] = "vllm"
    speculation: SpeculationConfig | None = None
    nextn: Annotated[
        int | None,
        OrNone(Integer(0, 64)),
        Field(description="legacy: speculation {kind: mtp, depth}"),
    ] = None
    nextn_accepted: Annotated[
        AcceptanceNumber | None, Field(description="legacy: the MTP acceptance")
    ] = None
    workers: Workers = Field(default_factory=Workers)
    kv_transfer: KvTransfer | None = None

    @model_validator(mode="wrap")
    @classmethod
    def _with_backend(cls, data: Any, handler: ModelWrapValidatorHandler[Engine]) -> Engine:
        # A worker's scheduler block is read by the model of the engine's backend (an invalid
        # backend is reported at engine.backend; the workers are read as vLLM's meanwhile).
        backend = data.get("backend") if isinstance(data, dict) else None
        with engine_backend(backend if backend in ("vllm", "sglang") else "vllm"):
            return handler(data)


class Simulation(EdgeModel):
    """Where the run stops (default: when every request completes) and per-token outputs."""

    horizon_ms: Annotated[float | None, OrNone(Number(0.0, MAX_TIME_MS))] = None
    per_token: bool = False


# -- traffic --------------------------------------------------------------------------------


class FixedLength(EdgeModel):
    type: Literal["fixed"]
    value: Tokens


class UniformLength(EdgeModel):
    type: Literal["uniform"]
    min: Tokens
    max: Annotated[Tokens, Field(description="at least min")]

    @model_validator(mode="after")
    def _max_at_least_min(self) -> UniformLength:
        check_field(Integer(self.min, MAX_TOKENS), self.max, "max")
        return self


class NormalLength(EdgeModel):
    """``normal`` or ``lognormal`` (the mean and std of the length itself), clipped to
    ``min``..``max``."""

    type: Literal["normal", "lognormal"]
    mean: Annotated[float, Number(1.0, float(MAX_TOKENS))]
    std: Annotated[float, Number(0.0, float(MAX_TOKENS))]
    min: Tokens = 1
    max: Annotated[Tokens, Field(description="at least min")] = MAX_TOKENS

    @model_validator(mode="after")
    def _max_at_least_min(self) -> NormalLength:
        check_field(Integer(self.min, MAX_TOKENS), self.max, "max")
        return self


#: A length: a number of tokens, or a block of one of the length types.
Length = Annotated[
    int | FixedLength | UniformLength | NormalLength, Kinds(scalar=Integer(1, MAX_TOKENS))
]
_BLOCK_HASH_TOKENS = Annotated[int, Integer(1, MAX_TOKENS)]


class SyntheticSource(EdgeModel):
    """``num_requests`` requests with drawn prompt and output lengths."""

    type: Literal["synthetic"]
    num_requests: Annotated[int, Integer(1, MAX_REQUESTS)]
    prompt_tokens: Length
    output_tokens: Length


class TraceSource(EdgeModel):
    """A trace file: Mooncake JSONL (``timestamp`` ms, ``input_length``, ``output_length``,
    optional ``hash_ids``) or CSV (``arrival_s,prompt_tokens,output_tokens``); the format
    defaults from the file name. A relative path is taken from the config file's folder."""

    # ``path`` is checked with the file itself (``expected a string``, ``file not found``).
    model_config = ConfigDict(
        **EdgeModel.model_config, json_schema_extra={"required": ["type", "path"]}
    )

    type: Literal["trace"]
    path: Annotated[str | None, Field(description="the trace file")] = None
    format: Annotated[str | None, OrNone(Choice("mooncake", "csv"))] = None
    hash_block_tokens: _BLOCK_HASH_TOKENS = 16


class AgenticRequest(EdgeModel):
    """One request of an agentic graph (also one JSONL line of its file)."""

    request_id: str | int | None = None
    timestamp: Milliseconds = 0.0
    input_length: Tokens
    output_length: Tokens
    hash_ids: list[Annotated[int, Integer(0, (1 << 62) - 1)]] | None = None
    wait_for: list[str | int] | None = None
    delay_ms: Milliseconds = 0.0


class AgenticSource(EdgeModel):
    """Request graphs (``wait_for``, ``delay_ms``): exactly one of a JSONL ``path`` or inline
    ``requests``."""

    type: Literal["agentic"]
    path: str | None = None
    # Inline requests are read by the trace-row reader (``aisim.traffic``), which reads the
    # lines of a JSONL file too: one reader, one set of messages for both.
    requests: Annotated[list[Any] | None, Section(list[AgenticRequest])] = None
    hash_block_tokens: _BLOCK_HASH_TOKENS = 16


class TraceTimestampsLoad(EdgeModel):
    """Arrivals at the trace's timestamps, stretched by ``time_scale``."""

    type: Literal["trace_timestamps"]
    time_scale: Annotated[float, Number(0.0, MAX_TIME_SCALE)] = 1.0


class RateLoad(EdgeModel):
    """Poisson or evenly spaced arrivals at ``rate_rps``."""

    type: Literal["poisson", "constant"]
    rate_rps: Annotated[float, Number(MIN_RATE_RPS, MAX_RATE_RPS)]


class ConcurrencyLoad(EdgeModel):
    """``users`` closed loops. ``queue: per_user`` (the default): each user sends its next
    request ``think_ms`` after its own last one completes. ``queue: shared``: ``users`` slots
    over one queue in traffic order, so exactly ``users`` requests are in flight while any wait
    (a benchmark client's ``--max-concurrency`` semaphore); a freed slot takes the next request
    ``think_ms`` after the completion."""

    type: Literal["concurrency"]
    users: Annotated[int, Integer(1, MAX_REQUESTS)]
    think_ms: Milliseconds = 0.0
    queue: Annotated[str, Choice("per_user", "shared")] = "per_user"


class Traffic(EdgeModel):
    """Where the requests come from and when they arrive."""

    source: Annotated[SyntheticSource | TraceSource | AgenticSource, Kinds()]
    load: (
        Annotated[
            TraceTimestampsLoad | RateLoad | ConcurrencyLoad,
            Kinds(),
            Field(description="default {type: trace_timestamps}"),
        ]
        | None
    ) = None
    seed: Annotated[int, Integer(0, MAX_SEED)] = 0
    max_requests: Annotated[int | None, OrNone(Integer(1, MAX_REQUESTS))] = None


class ReplayFile(EdgeModel):
    """A replay config: ``aisim replay CONFIG`` / ``aisim.run_replay(config)``."""

    traffic: Traffic
    engine: Engine
    simulation: Simulation | None = None


def replay_schema() -> dict[str, Any]:
    """JSON Schema of a replay config (``aisim schema replay``); speculation blocks carry the
    per-kind ``params`` rules of ``aisim schema speculation``."""
    from aisim.config._speculation_models import speculation_schema

    schema = ReplayFile.model_json_schema()
    definitions: dict[str, Any] = schema.setdefault("$defs", {})
    speculation = speculation_schema()
    definitions.update(speculation["$defs"])
    return schema


#: ``config_paths``: below this key, any sub-path (a block whose shape depends on a kind or
#: that holds free-form values); ``{}``: a value, no sub-path.
ANY_PATH: Final[dict[str, Any]] = {"*": None}


def config_paths(model: type[EdgeModel] = ReplayFile) -> dict[str, Any]:
    """The config paths below ``model``, as nested dicts of field names (what a sweep axis may
    name), read from the models: a field whose type is a model, or a union of models (a
    ``Kinds`` block, a model or ``null``) gives the union of their fields (a name or a number
    allowed in its place is the key's own value); a field that may also be another non-scalar
    type (a mapping, a list) gives ``ANY_PATH``; a scalar field is a value."""
    paths: dict[str, Any] = {}
    for name, field in model.model_fields.items():
        key = field.alias or name
        sections = [item for item in field.metadata if isinstance(item, Section)]
        shown = sections[0].schema_type if sections else field.annotation
        members = _members(shown)
        models = [member for member in members if _is_model(member)]
        if not all(_is_model(member) or _is_value(member) for member in members):
            paths[key] = ANY_PATH
            continue
        merged: dict[str, Any] = {}
        for member in models:
            merged.update(config_paths(member))
        paths[key] = merged
    return paths


def _is_value(kind: Any) -> bool:
    """A scalar type (a number, string, bool, literal or null): nothing below it."""
    return kind in (int, float, str, bool, type(None)) or typing.get_origin(kind) is Literal


def _members(kind: Any) -> tuple[Any, ...]:
    """The members of a (possibly annotated, nested) union type, annotations stripped."""
    if typing.get_origin(kind) is Annotated:
        return _members(typing.get_args(kind)[0])
    if typing.get_origin(kind) in _UNIONS:
        return tuple(member for part in typing.get_args(kind) for member in _members(part))
    return (kind,)


def _is_model(kind: Any) -> typing.TypeGuard[type[EdgeModel]]:
    return isinstance(kind, type) and issubclass(kind, EdgeModel)


_UNIONS: Final = (typing.Union, types.UnionType)
