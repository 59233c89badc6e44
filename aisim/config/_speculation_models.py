"""The speculation block's shape: ``SpeculationConfig`` (canonical and legacy fields), one params
model per kind (``MtpParams``, ...), the field types they use, and ``speculation_schema()``
(what ``aisim schema speculation`` prints). Reading a block is ``_speculation``; its acceptance
inputs are ``_acceptance``. The semantics are docs/design.md#speculation.
"""

from __future__ import annotations

import math
from contextvars import ContextVar
from typing import Annotated, Any, ClassVar, Final

from pydantic import (
    ConfigDict,
    ModelWrapValidatorHandler,
    PrivateAttr,
    WithJsonSchema,
    model_validator,
)
from pydantic_core import PydanticCustomError

from aisim._fields import describe
from aisim.config._catalogue import ModelFile
from aisim.config._edge import (
    RAW,
    BeforeCheck,
    Choice,
    EdgeModel,
    Integer,
    Kinds,
    Number,
    OrNone,
    RealNumber,
    check_mapping,
    edge_error,
    validate_field,
)
from aisim.speculation import (
    ENGINE_METRICS_FORMATS,
    KINDS,
    MAX_ACCEPTANCE_DEPTH,
    MAX_DRAFT_TOKENS,
    SCHEMES,
    SIMULATE_METHODS,
)

#: Nesting and size limits for a draft config mapping (bounds every walk over it).
MAX_CONFIG_DEPTH: Final = 16
MAX_CONFIG_ITEMS: Final = 10_000
MAX_SEED: Final = (1 << 63) - 1
MAX_TENSOR_PARALLEL: Final = 1024
#: ``undrafted_rounds``: decode rounds per request before an n-gram drafter first proposes.
MAX_UNDRAFTED_ROUNDS: Final = 1_000_000


class KindName(BeforeCheck):
    """``Annotated[str, KindName()]``: a registered speculation kind."""

    def check(self, value: object) -> str:
        if not isinstance(value, str) or value not in SCHEMES:
            raise edge_error(
                f"unknown speculation kind {describe(value)}; registered kinds: {', '.join(KINDS)}"
            )
        return value

    def json_extra(self) -> dict[str, Any]:
        return {"enum": list(KINDS)}


class JsonObject(BeforeCheck):
    """``Annotated[dict[str, Any], JsonObject()]``: a mapping with string keys (a shallow copy).

    With ``deep=True`` every value must be JSON-shaped (numbers finite), at most
    ``MAX_CONFIG_DEPTH`` levels and ``MAX_CONFIG_ITEMS`` values deep; the copy is deep.
    """

    def __init__(self, deep: bool = False) -> None:
        self.deep = deep

    def check(self, value: object) -> dict[str, Any]:
        if not self.deep:
            return check_mapping(value)
        counter = [0]
        return _json_mapping(value, "", 0, counter)


def _json_mapping(value: object, where: str, depth: int, counter: list[int]) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise edge_error(f"expected a mapping, got {describe(value)}", where)
    for key in value:
        if not isinstance(key, str):
            raise edge_error(f"mapping keys must be strings, got key {describe(key)}", where)
    mapping: dict[str, Any] = value
    return {
        key: _json_value(item, f"{where}.{key}", depth + 1, counter)
        for key, item in mapping.items()
    }


def _json_value(value: object, where: str, depth: int, counter: list[int]) -> Any:
    counter[0] += 1
    if depth > MAX_CONFIG_DEPTH or counter[0] > MAX_CONFIG_ITEMS:
        raise edge_error(
            f"draft config too deep or too large (limits: {MAX_CONFIG_DEPTH} levels, "
            f"{MAX_CONFIG_ITEMS} values)",
            where,
        )
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise edge_error(f"expected a finite number, got {describe(value)}", where)
        return float(value)
    if isinstance(value, (list, tuple)):
        return [
            _json_value(item, f"{where}[{index}]", depth + 1, counter)
            for index, item in enumerate(value)
        ]
    if isinstance(value, dict):
        return _json_mapping(value, where, depth, counter)
    raise edge_error(
        f"expected a JSON value (number, string, bool, null, list, mapping), got {describe(value)}",
        where,
    )


#: An acceptance number: its range depends on the kind's depth (checked once that is known).
AcceptanceNumber = Annotated[float, RealNumber()]


class RateCount(BeforeCheck):
    """1..MAX_ACCEPTANCE_DEPTH rates (checked before the rates themselves)."""

    def check(self, value: object) -> object:
        if not isinstance(value, (list, tuple)):
            raise edge_error(f"expected a list, got {describe(value)}")
        if not value or len(value) > MAX_ACCEPTANCE_DEPTH:
            raise edge_error(
                f"expected 1..{MAX_ACCEPTANCE_DEPTH} rates, got {len(value)} ({describe(value)})"
            )
        return list(value)

    def json_extra(self) -> dict[str, Any]:
        return {"minItems": 1, "maxItems": MAX_ACCEPTANCE_DEPTH}


#: Acceptance rates: 1..64 probabilities (how many the kind takes is checked once it is known).
Rates = Annotated[list[Annotated[float, Number(0.0, 1.0)]], RateCount()]
#: The flat legacy draft count (``num_speculative_tokens`` beside ``kind``).
FlatCount = Annotated[int, Integer(1, MAX_DRAFT_TOKENS)]
#: Largest batch size a dynamic-length table is expanded to (vLLM: ``max_num_seqs``).
MAX_SCHEDULE_BATCH: Final = 1 << 16


class ScheduleEntry(BeforeCheck):
    """One ``num_speculative_tokens_per_batch_size`` entry, ``[batch_lo, batch_hi, K]``
    (vLLM's ``validate_and_normalize_dynamic_sd_schedule``, 3-item form): batch sizes in
    1..2**16, K in 0..64, the range not reversed."""

    def check(self, value: object) -> tuple[int, int, int]:
        if isinstance(value, (list, tuple)) and len(value) == 5:
            raise edge_error(
                "5-item (batch, context) entries are a vLLM schedule aisim does not "
                "model (the context axis); give 3-item [batch_lo, batch_hi, K] entries"
            )
        if not isinstance(value, (list, tuple)) or len(value) != 3:
            raise edge_error(
                f"expected [batch_lo, batch_hi, num_speculative_tokens], got {describe(value)}"
            )
        bounds = ((1, MAX_SCHEDULE_BATCH), (1, MAX_SCHEDULE_BATCH), (0, MAX_DRAFT_TOKENS))
        items: list[int] = []
        for index, (item, (low, high)) in enumerate(zip(value, bounds, strict=True)):
            try:
                items.append(Integer(low, high).check(item))
            except PydanticCustomError as exc:
                message = exc.context["message"] if exc.context else str(exc)
                raise edge_error(message, f"[{index}]") from None
        if items[0] > items[1]:
            raise edge_error(f"batch-size range start {items[0]} is above its end {items[1]}")
        return items[0], items[1], items[2]

    def json_extra(self) -> dict[str, Any]:
        return {"minItems": 3, "maxItems": 3}


class NonEmpty(BeforeCheck):
    """A non-empty list (``what`` names its entries in the message)."""

    def __init__(self, what: str) -> None:
        self.what = what

    def check(self, value: object) -> object:
        if not isinstance(value, list) or not value:
            raise edge_error(f"expected a non-empty list of {self.what}, got {describe(value)}")
        return value

    def json_extra(self) -> dict[str, Any]:
        return {"minItems": 1}


#: vLLM's ``num_speculative_tokens_per_batch_size``: ``[[batch_lo, batch_hi, K], ...]``.
DraftSchedule = Annotated[
    list[Annotated[tuple[int, int, int], ScheduleEntry()]],
    NonEmpty("[batch_lo, batch_hi, num_speculative_tokens] entries"),
]


class AcceptanceTraceConfig(EdgeModel):
    """``acceptance_trace``: a file of measured accepted drafts per request and round
    (docs/speculation.md, "Acceptance from traces")."""

    edge_shape: ClassVar[str] = "{path: FILE, format: jsonl (default) | vllm-request-metrics}"

    path: str
    format: Annotated[str, Choice("jsonl", "vllm-request-metrics")] = "jsonl"


class LabelValue(BeforeCheck):
    """``Annotated[str, LabelValue()]``: a metric label value; YAML integers (``engine: 0``)
    are read as their text, since Prometheus label values are strings."""

    def check(self, value: object) -> str:
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            raise edge_error(f"expected a label value (a string), got {describe(value)}")
        return str(value)

    def json_extra(self) -> dict[str, Any]:
        return {"type": ["string", "integer"]}


class AcceptanceFromConfig(EdgeModel):
    """``acceptance_from``: acceptance read from an engine's metrics file when the block is
    resolved (docs/speculation.md, "Acceptance from engine metrics")."""

    edge_shape: ClassVar[str] = (
        "{path: FILE, format: " + " | ".join(ENGINE_METRICS_FORMATS) + "[, labels, baseline]}"
    )

    path: str
    format: Annotated[str, Choice(*ENGINE_METRICS_FORMATS)]
    labels: dict[str, Annotated[str, LabelValue()]] | None = None
    baseline: str | None = None


# Draft counts: 1..64, errors labelled with the kind (``params.depth (kind mtp): ...``).
MtpCount = Annotated[int, Integer(1, MAX_DRAFT_TOKENS, label=" (kind mtp)")]
NgramCount = Annotated[int, Integer(1, MAX_DRAFT_TOKENS, label=" (kind ngram)")]
Eagle3Count = Annotated[int, Integer(1, MAX_DRAFT_TOKENS, label=" (kind eagle3)")]
DflashCount = Annotated[int, Integer(1, MAX_DRAFT_TOKENS, label=" (kind dflash)")]
DsparkCount = Annotated[int, Integer(1, MAX_DRAFT_TOKENS, label=" (kind dspark)")]
DraftModelCount = Annotated[int, Integer(1, MAX_DRAFT_TOKENS, label=" (kind draft_model)")]


SuffixCount = Annotated[int, Integer(1, MAX_DRAFT_TOKENS, label=" (kind suffix)")]
HeadsCount = Annotated[int, Integer(1, MAX_DRAFT_TOKENS)]


class NoParams(EdgeModel):
    """kind none takes no params."""

    edge_label = " (kind none)"

    @model_validator(mode="before")
    @classmethod
    def _none_given(cls, data: Any) -> Any:
        if isinstance(data, dict) and data:
            raise edge_error(f"kind none takes no params, got {', '.join(sorted(data))}")
        return data


class MtpParams(EdgeModel):
    """mtp: a chain of ``depth`` drafts from the target's own MTP heads."""

    edge_label = " (kind mtp)"
    depth: MtpCount | None = None
    num_speculative_tokens: MtpCount | None = None


class NgramParams(EdgeModel):
    """ngram: prompt-lookup drafts, one every round."""

    edge_label = " (kind ngram)"
    num_speculative_tokens: NgramCount | None = None
    trigger_rate: Annotated[float, Number(0.0, 1.0)] = 1.0


class TreeShape(BeforeCheck):
    """``tree_shape``: 1..64 step widths (checked before the widths themselves)."""

    def check(self, value: object) -> object:
        if not isinstance(value, (list, tuple)):
            raise edge_error(f"expected a list, got {describe(value)}")
        if not value or len(value) > MAX_DRAFT_TOKENS:
            raise edge_error(
                f"kind eagle3 expects 1..{MAX_DRAFT_TOKENS} step widths, got {describe(value)}"
            )
        return list(value)


class Eagle3Params(EdgeModel):
    """eagle3: a chain (``num_speculative_tokens``) or a tree (``tree_shape``) of drafts."""

    edge_label = " (kind eagle3)"
    num_speculative_tokens: Eagle3Count | None = None
    tree_shape: (
        Annotated[list[Annotated[int, Integer(1, MAX_DRAFT_TOKENS)]], TreeShape()] | None
    ) = None
    # 2..the drafted tokens + 1 (checked once the tree is known).
    verify_token_budget: (
        Annotated[
            int, Integer(label=" (kind eagle3)"), WithJsonSchema({"type": "integer", "minimum": 2})
        ]
        | None
    ) = None
    # vLLM P-EAGLE: all drafts in one draft pass (SpeculativeConfig.parallel_drafting).
    parallel_drafting: bool | None = None
    # SGLang's spelling of the tree: --speculative-num-steps / -eagle-topk / -num-draft-tokens.
    speculative_num_steps: Eagle3Count | None = None
    speculative_eagle_topk: Annotated[int, Integer(1, MAX_DRAFT_TOKENS)] | None = None
    speculative_num_draft_tokens: Annotated[int, Integer(2, 1 << 16)] | None = None
    # SGLang FR-Spec (--speculative-token-map): the number of token ids in the map file.
    speculative_token_map_size: Annotated[int, Integer(1, 1 << 24)] | None = None


class DflashParams(EdgeModel):
    """dflash: one parallel draft forward proposes ``num_draft_tokens`` (<= block_size - 1)."""

    edge_label = " (kind dflash)"
    num_draft_tokens: DflashCount | None = None


class DsparkParams(EdgeModel):
    """dspark: a block drafter with its own draft layers."""

    edge_label = " (kind dspark)"
    num_draft_tokens: DsparkCount | None = None
    num_draft_layers: DsparkCount | None = None


class DraftModelParams(EdgeModel):
    """draft_model: a separate small model drafting ``num_speculative_tokens`` sequentially."""

    edge_label = " (kind draft_model)"
    num_speculative_tokens: DraftModelCount | None = None
    draft_tp_size: Annotated[int, Integer(1, MAX_TENSOR_PARALLEL)] | None = None
    # vLLM PARD: all K drafts in one draft pass (SpeculativeConfig.parallel_drafting).
    parallel_drafting: bool | None = None


class SuffixParams(EdgeModel):
    """suffix: vLLM's suffix decoding (Arctic Inference), a dynamic number of drafts per round
    up to ``num_speculative_tokens`` (default ``suffix_decoding_max_tree_depth``)."""

    edge_label = " (kind suffix)"
    num_speculative_tokens: SuffixCount | None = None
    suffix_decoding_max_tree_depth: SuffixCount = 24
    suffix_decoding_max_cached_requests: Annotated[int, Integer(0, 1 << 31)] = 10000
    suffix_decoding_max_spec_factor: Annotated[float, Number(0.0, None)] = 1.0
    suffix_decoding_min_token_prob: Annotated[float, Number(0.0, 1.0)] = 0.1


class MedusaParams(EdgeModel):
    """medusa: one token per Medusa head (``num_speculative_tokens`` = the heads)."""

    edge_label = " (kind medusa)"
    num_speculative_tokens: HeadsCount | None = None


class MlpSpeculatorParams(EdgeModel):
    """mlp_speculator: ``num_speculative_tokens`` sequential MLP stages (default ``n_predict``)."""

    edge_label = " (kind mlp_speculator)"
    num_speculative_tokens: HeadsCount | None = None


#: The kind whose params model reads a block's ``params`` while the block is validated.
_KIND: ContextVar[str] = ContextVar("aisim_speculation_kind", default=RAW)


def current_kind() -> str:
    return _KIND.get()


def _given_kind(data: object) -> str:
    """The kind a raw block names (``kind``, else the legacy ``nextn``), or ``RAW``."""
    if isinstance(data, SpeculationConfig) or not isinstance(data, dict):
        return RAW
    kind = data.get("kind")
    if isinstance(kind, str) and kind in PARAMS_MODELS:
        return kind
    nextn = data.get("nextn")
    if kind is None and isinstance(nextn, (int, float)) and not isinstance(nextn, bool):
        return "mtp" if nextn > 0 else "none"
    return RAW


PARAMS_MODELS: Final[dict[str, type[EdgeModel]]] = {
    "none": NoParams,
    "mtp": MtpParams,
    "ngram": NgramParams,
    "eagle3": Eagle3Params,
    "dflash": DflashParams,
    "dspark": DsparkParams,
    "draft_model": DraftModelParams,
    "suffix": SuffixParams,
    "medusa": MedusaParams,
    "mlp_speculator": MlpSpeculatorParams,
}
#: Each params model's kind (the tag ``Kinds`` selects it by).
PARAMS_KINDS: Final[dict[type, str]] = {model: kind for kind, model in PARAMS_MODELS.items()}


class DflashConfig(EdgeModel):
    """The ``dflash_config`` block of a DFlash drafter's ``config.json`` (what aisim reads)."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, allow_inf_nan=False)
    edge_ignores_unknown: ClassVar[bool] = True
    edge_null_is_absent: ClassVar[bool] = True

    block_size: Annotated[int | None, OrNone(Integer(1, MAX_DRAFT_TOKENS + 1))] = None


class DraftModelFile(ModelFile):
    """A model drafter's ``config.json`` (eagle3, dflash, dspark, draft_model): the target's
    fields, checked the same way, and the drafter's own: a block drafter's ``block_size`` (top
    level or under ``dflash_config``) and the draft vocabulary (``draft_vocab_size``)."""

    block_size: Annotated[int | None, OrNone(Integer(1, MAX_DRAFT_TOKENS + 1))] = None
    dflash_config: DflashConfig | None = None
    draft_vocab_size: Annotated[int | None, OrNone(Integer(1, 1 << 24))] = None


#: The kinds whose ``draft_config`` is a model's ``config.json`` (``DraftModelFile``).
MODEL_DRAFT_KINDS: Final = ("eagle3", "dflash", "dspark", "draft_model")
HeadSize = Annotated[int, Integer(1, 1 << 24)]


class HeadsFile(EdgeModel):
    """The heads' ``config.json`` of a heads drafter: every field it lists is required (the
    message names them all), unknown fields are ignored (vLLM's configs carry more)."""

    model_config = ConfigDict(extra="ignore", frozen=True, strict=True, allow_inf_nan=False)
    edge_ignores_unknown: ClassVar[bool] = True
    edge_kind: ClassVar[str] = ""
    #: The field that counts the heads (the drafts per round).
    count_field: ClassVar[str] = ""

    @model_validator(mode="before")
    @classmethod
    def _all_given(cls, data: Any) -> Any:
        if isinstance(data, dict):
            fields = list(cls.model_fields)
            for field in fields:
                if data.get(field) is None:
                    raise edge_error(
                        f"kind {cls.edge_kind} needs the heads' config.json with "
                        f"{', '.join(fields)}",
                        f".{field}",
                    )
        return data

    def geometry(self) -> list[list[object]]:
        """``[[field, value], ...]`` in the config's field order (the draft's identity)."""
        return [[field, getattr(self, field)] for field in type(self).model_fields]

    def count(self) -> int:
        count: int = getattr(self, self.count_field)
        return count


class MedusaFile(HeadsFile):
    """vLLM's ``MedusaConfig``: ``num_heads`` heads over ``num_hidden_layers`` layers each."""

    edge_kind: ClassVar[str] = "medusa"
    count_field: ClassVar[str] = "num_heads"
    num_heads: HeadSize
    num_hidden_layers: Annotated[int, Integer(0, 1 << 24)]
    hidden_size: HeadSize
    vocab_size: HeadSize


class MlpSpeculatorFile(HeadsFile):
    """vLLM's ``MLPSpeculatorConfig``: ``n_predict`` sequential MLP stages."""

    edge_kind: ClassVar[str] = "mlp_speculator"
    count_field: ClassVar[str] = "n_predict"
    n_predict: HeadSize
    emb_dim: HeadSize
    inner_dim: HeadSize
    vocab_size: HeadSize


#: Each kind's draft ``config.json`` model.
DRAFT_FILES: Final[dict[str, type[EdgeModel]]] = {
    **{kind: DraftModelFile for kind in MODEL_DRAFT_KINDS},
    "medusa": MedusaFile,
    "mlp_speculator": MlpSpeculatorFile,
}


class SpeculationConfig(EdgeModel):
    """One speculation block: ``kind`` + ``params``, an optional draft, one acceptance form.

    Legacy spellings (``nextn``, ``nextn_accepted``, a flat ``num_speculative_tokens``) are
    accepted and folded into the canonical form by ``resolve_speculation``.
    """

    nextn: Annotated[int, Integer(0, 64)] | None = None
    kind: Annotated[str, KindName()] | None = None
    params: (
        Annotated[
            NoParams
            | MtpParams
            | NgramParams
            | Eagle3Params
            | DflashParams
            | DsparkParams
            | DraftModelParams
            | SuffixParams
            | MedusaParams
            | MlpSpeculatorParams
            | dict[str, Any],
            Kinds(select=current_kind, tags=PARAMS_KINDS),
            WithJsonSchema({"additionalProperties": True, "type": "object"}),
        ]
        | None
    ) = None
    num_speculative_tokens: FlatCount | None = None
    draft_model_path: str | None = None
    draft_config: Annotated[dict[str, Any], JsonObject(deep=True)] | None = None
    seed: Annotated[int, Integer(0, MAX_SEED)] | None = None
    expected_accepted_tokens: AcceptanceNumber | None = None
    acceptance_rates: Rates | None = None
    unconditional_acceptance_rates: Rates | None = None
    acceptance_length: AcceptanceNumber | None = None
    acceptance_rate: AcceptanceNumber | None = None
    acceptance_from: AcceptanceFromConfig | None = None
    nextn_accepted: AcceptanceNumber | None = None
    undrafted_rounds: Annotated[int, Integer(0, MAX_UNDRAFTED_ROUNDS)] | None = None
    # suffix: the host's suffix-tree lookup time per request per round (microseconds), for
    # the roofline; measured by the user (no published figure, so no default).
    suffix_lookup_us_per_request: Annotated[float, Number(0.0, 1e6)] | None = None
    # A published acceptance profile, by catalogue name (aisim speculation profiles).
    acceptance_profile: str | None = None
    # vLLM's synthetic rejection sampler (SpeculativeConfig, same spelling).
    rejection_sample_method: Annotated[str, Choice("standard", "synthetic", "block")] | None = None
    synthetic_acceptance_rates: Rates | None = None
    synthetic_acceptance_length: AcceptanceNumber | None = None
    # SGLang's simulated acceptance (env SGLANG_SIMULATE_ACC_LEN / SGLANG_SIMULATE_ACC_METHOD).
    simulate_acc_len: AcceptanceNumber | None = None
    simulate_acc_method: Annotated[str, Choice(*SIMULATE_METHODS)] | None = None
    # vLLM dynamic speculation length: [[batch_lo, batch_hi, num_speculative_tokens], ...].
    num_speculative_tokens_per_batch_size: DraftSchedule | None = None
    # SGLang adaptive speculation (--speculative-adaptive, --speculative-adaptive-config as JSON).
    speculative_adaptive: bool | None = None
    speculative_adaptive_config: Annotated[dict[str, Any], JsonObject(deep=True)] | None = None
    # SGLang's --cuda-graph-bs: adaptive routing pads a batch size up to a captured size.
    cuda_graph_bs: list[Annotated[int, Integer(1, 1 << 16)]] | None = None
    # vLLM adaptive verification (DSpark only): an engine option aisim does not model.
    enable_adaptive_verification: bool | None = None
    # Per-request, per-round accepted drafts measured on an engine (docs/speculation.md).
    acceptance_trace: AcceptanceTraceConfig | None = None

    #: ``draft_config`` read by the drafter's model (``DRAFT_FILES``), set with the block.
    _draft: EdgeModel | None = PrivateAttr(default=None)

    @property
    def draft(self) -> DraftModelFile | None:
        """The typed ``draft_config`` of a model drafter (``None``: none given, or a kind whose
        draft is not a model)."""
        return self._draft if isinstance(self._draft, DraftModelFile) else None

    @property
    def heads(self) -> HeadsFile | None:
        """The typed ``draft_config`` of a heads drafter (medusa, mlp_speculator)."""
        return self._draft if isinstance(self._draft, HeadsFile) else None

    @model_validator(mode="after")
    def _typed_draft(self) -> SpeculationConfig:
        model = DRAFT_FILES.get(self.kind or "")
        if self.draft_config is not None and model is not None:
            self._draft = validate_field(model, self.draft_config, "draft_config")
        return self

    @model_validator(mode="wrap")
    @classmethod
    def _with_kind(
        cls, data: Any, handler: ModelWrapValidatorHandler[SpeculationConfig]
    ) -> SpeculationConfig:
        # ``params`` is read by the model of the block's kind (``kind``, or the legacy
        # ``nextn``: mtp above 0); with no usable kind it stays a mapping, and the kind's own
        # error is reported (at ``kind``, or by the resolver: ``kind: required``).
        token = _KIND.set(_given_kind(data))
        try:
            return handler(data)
        finally:
            _KIND.reset(token)


def speculation_schema() -> dict[str, Any]:
    """JSON Schema of a speculation file: the block itself, or the block under ``speculation:``.

    Each kind's ``params`` are checked by its own model (if ``kind`` is X, then ``params`` is
    ``XParams``).
    """
    block = SpeculationConfig.model_json_schema()
    definitions: dict[str, Any] = block.pop("$defs", {})
    rules: list[dict[str, Any]] = []
    for kind, model in PARAMS_MODELS.items():
        definitions[model.__name__] = model.model_json_schema()
        rules.append(
            {
                "if": {"properties": {"kind": {"const": kind}}, "required": ["kind"]},
                "then": {"properties": {"params": {"$ref": f"#/$defs/{model.__name__}"}}},
            }
        )
    block["allOf"] = rules
    definitions["SpeculationConfig"] = block
    reference = {"$ref": "#/$defs/SpeculationConfig"}
    return {
        "$defs": definitions,
        "anyOf": [
            reference,
            {
                "type": "object",
                "properties": {"speculation": reference},
                "required": ["speculation"],
                "additionalProperties": False,
            },
        ],
    }
