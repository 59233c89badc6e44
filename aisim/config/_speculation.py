"""The speculation edge: a speculation block (canonical or legacy) -> ``ResolvedSpeculation``.

The block's shape is ``_speculation_models`` (``SpeculationConfig``, one params model per kind)
and its acceptance inputs are read by ``_acceptance``. ``resolve_speculation`` reads a
block once: legacy inputs (``nextn``/``nextn_accepted``, flat ``num_speculative_tokens``) are
folded into the canonical form, conflicting inputs are rejected with both names in the message,
params are validated and normalized per kind, gates are checked (``aisim.speculation``'s scheme
registry), acceptance is converted, and the draft and cost identities are built. The semantics
are docs/design.md#speculation. Interpreted: the compiled core takes the frozen result only.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

from aisim.catalogue import ModelSpec
from aisim.config._acceptance import ACCEPTANCE_FROM, block_acceptance
from aisim.config._catalogue import get_model, model_spec
from aisim.config._edge import (
    choice,
    integer,
    validate,
)
from aisim.config._speculation_models import (
    MAX_TENSOR_PARALLEL,
    PARAMS_MODELS,
    DflashParams,
    DraftModelParams,
    DsparkParams,
    Eagle3Params,
    MtpParams,
    NgramParams,
    SpeculationConfig,
)
from aisim.errors import ConfigError
from aisim.speculation import AcceptanceProfile, ResolvedSpeculation
from aisim.speculation._resolved import sha256_of_json
from aisim.speculation._schemes import (
    ACCEPTANCE_KEYS,
    BACKENDS,
    DRAFT_CONFIG,
    DRAFT_NONE,
    DRAFT_PATH,
    MAX_DRAFT_TOKENS,
    ROLES,
    SCHEMES,
    SchemeGeometry,
    SchemeSpec,
    check_gates,
)


def resolve_speculation(
    mapping: object,
    *,
    model: object = None,
    backend: object = None,
    role: object = None,
    path: str = "speculation",
    tensor_parallel: object = None,
    base_dir: str | Path | None = None,
) -> ResolvedSpeculation:
    """Resolve one speculation block into a frozen ``ResolvedSpeculation``.

    ``mapping``: the canonical block, a legacy block, or ``None``/``{}`` (speculation disabled).
    ``model``: the target (``ModelSpec``, catalogue name, config path or mapping) or ``None``;
    ``backend``: ``vllm``/``sglang`` or ``None``; ``role``: ``aggregated``/``prefill``/``decode``
    or ``None``. Gates apply as soon as what they need is known. ``tensor_parallel`` (the
    target's TP) fills the draft_model ``draft_tp_size`` default. ``path`` prefixes every error.
    ``base_dir``: where a relative ``acceptance_from`` path is taken from (default: the working
    directory; a config file's folder when the block comes from one).

    Raises ``ConfigError`` (a ``ValueError``) naming the field path for every invalid input.
    """
    target = _target(model)
    backend_name: str | None = None
    if backend is not None:
        backend_name = choice(backend, "backend", BACKENDS)
    role_name: str | None = None
    if role is not None:
        role_name = choice(role, "role", ROLES)
    tp: int | None = None
    if tensor_parallel is not None:
        tp = integer(tensor_parallel, "tensor_parallel", 1, MAX_TENSOR_PARALLEL)
    if mapping is None:
        return _disabled(path)
    block = validate(SpeculationConfig, mapping, path)
    spec = _kind(block, path)
    params = _params(block, spec, path)
    if spec.kind == "none":
        keys: tuple[str, ...] = ACCEPTANCE_KEYS + (ACCEPTANCE_FROM,)
        legacy = block.nextn_accepted
        # Legacy files write `nextn: 0, nextn_accepted: 0` for "no MTP": accept that zero.
        if isinstance(legacy, bool) or not isinstance(legacy, (int, float)) or legacy != 0:
            keys = keys + ("nextn_accepted",)
        _reject_present(block, keys, spec, path, "acceptance")
    draft_path, draft_config = _draft_inputs(block, spec, path)
    draft_model: ModelSpec | None = None
    if draft_config is not None:
        name = draft_path if draft_path is not None else f"{spec.kind}-draft"
        draft_model = model_spec(draft_config, name, f"{path}.draft_config")
    geometry = _normalize_params(spec, params, draft_config, draft_model, tp, path)
    check_gates(spec, target, draft_model, backend_name, role_name, path)
    acceptance: AcceptanceProfile | None = None
    acceptance_source: dict[str, Any] | None = None
    if spec.kind != "none":
        acceptance, acceptance_source = block_acceptance(block, geometry, spec, path, base_dir)
    undrafted = block.undrafted_rounds
    if undrafted is not None and spec.kind != "ngram":
        raise ConfigError(
            f"{path}.undrafted_rounds: only kind ngram drafts nothing in a request's first rounds "
            f"(no n-gram of the context matches yet); got kind {spec.kind}"
        )
    draft_vocab = _draft_vocab(draft_config, draft_model, path)
    draft_geometry: list[list[object]] | None = None
    draft_identity: str | None = None
    if draft_model is not None:
        draft_geometry = [[key, value] for key, value in draft_model.geometry_items()]
        draft_geometry.append(["draft_vocab_size", draft_vocab])
        draft_identity = "geometry:" + sha256_of_json(draft_geometry)[:16]
        if draft_path is not None:
            draft_identity = draft_path + "@" + draft_identity
    elif draft_path is not None:
        draft_identity = draft_path
    payload: dict[str, Any] = {
        "kind": spec.kind,
        "params": geometry.params,
        "draft": {"path": draft_path, "geometry": draft_geometry},
    }
    return ResolvedSpeculation(
        kind=spec.kind,
        params=geometry.params,
        num_draft_tokens=geometry.num_draft_tokens,
        verify_width=geometry.verify_width,
        max_accepted_draft_tokens=geometry.max_accepted_draft_tokens,
        tree_shape=geometry.tree_shape,
        draft_model_path=draft_path,
        draft_config=draft_config,
        draft_model=draft_model,
        draft_identity=draft_identity,
        identity_payload=payload,
        acceptance=acceptance,
        seed=block.seed,
        num_draft_layers=geometry.num_draft_layers,
        draft_tp_size=geometry.draft_tp_size,
        draft_vocab_size=draft_vocab,
        path=path,
        acceptance_source=acceptance_source,
        undrafted_rounds=0 if undrafted is None else undrafted,
    )


def _disabled(path: str) -> ResolvedSpeculation:
    return ResolvedSpeculation(
        kind="none",
        params={},
        num_draft_tokens=0,
        verify_width=1,
        max_accepted_draft_tokens=0,
        tree_shape=None,
        draft_model_path=None,
        draft_config=None,
        draft_model=None,
        draft_identity=None,
        identity_payload={"kind": "none", "params": {}, "draft": {"path": None, "geometry": None}},
        acceptance=None,
        seed=None,
        num_draft_layers=None,
        draft_tp_size=None,
        draft_vocab_size=None,
        path=path,
    )


def _target(model: object) -> ModelSpec | None:
    if model is None or isinstance(model, ModelSpec):
        return model
    return get_model(model, "model")


def _kind(block: SpeculationConfig, path: str) -> SchemeSpec:
    """The kind, from ``kind`` or the legacy ``nextn``; a missing kind is an error unless the
    block is empty (or holds only a seed), which means disabled."""
    nextn = block.nextn
    if block.kind is None:
        if nextn is not None:
            return SCHEMES["mtp"] if nextn > 0 else SCHEMES["none"]
        if all(key == "seed" for key in block.model_fields_set):
            return SCHEMES["none"]
        raise ConfigError(
            f"{path}.kind: required (one of {', '.join(SCHEMES)}), or give the legacy nextn"
        )
    spec = SCHEMES[block.kind]
    if nextn is not None and spec.kind != "mtp" and not (spec.kind == "none" and nextn == 0):
        raise ConfigError(
            f"{path}.nextn ({nextn}, legacy MTP depth) conflicts with "
            f"{path}.kind ({spec.kind}); nextn is only for kind mtp"
        )
    return spec


def _params(block: SpeculationConfig, spec: SchemeSpec, path: str) -> dict[str, Any]:
    """The kind's raw params with legacy depth inputs folded in (conflicts rejected)."""
    params: dict[str, Any] = dict(block.params) if block.params is not None else {}
    if spec.kind == "none" and params:
        raise ConfigError(
            f"{path}.params: kind none takes no params, got {', '.join(sorted(params))}"
        )
    flat = block.num_speculative_tokens
    if flat is not None:
        if "num_speculative_tokens" not in spec.params:
            takers = [
                kind for kind, item in SCHEMES.items() if "num_speculative_tokens" in item.params
            ]
            raise ConfigError(
                f"{path}.num_speculative_tokens: kind {spec.kind} takes no "
                f"num_speculative_tokens (the flat form is for {', '.join(takers)})"
            )
        flat_value = integer(flat, f"{path}.num_speculative_tokens", 1, MAX_DRAFT_TOKENS)
        _merge(params, "num_speculative_tokens", flat_value, "num_speculative_tokens", path)
    if block.nextn is not None and spec.kind == "mtp":
        depth = integer(block.nextn, f"{path}.nextn", 1, MAX_DRAFT_TOKENS)
        _merge(params, "depth", depth, "nextn", path)
        if params.get("num_speculative_tokens") is not None:
            _merge(params, "num_speculative_tokens", depth, "nextn", path)
    return params


def _merge(params: dict[str, Any], key: str, value: int, source: str, path: str) -> None:
    """Put a legacy value into params; an existing, different value is a conflict."""
    existing = params.get(key)
    if existing is None:
        params[key] = value
        return
    if isinstance(existing, bool) or not isinstance(existing, (int, float)):
        return  # not a number: the kind's params model reports it at params.<key>
    if existing != value:
        raise ConfigError(
            f"{path}.{source} ({value}) and {path}.params.{key} ({existing!r}) disagree; give one"
        )


# Why a kind takes no separate draft (or no acceptance), for error messages.
_NO_DRAFT_REASONS: Final = {
    "none": "speculation is disabled",
    "mtp": "its drafts come from the target's own MTP heads",
    "ngram": "its drafts are n-gram lookups, with no draft network",
}


def _reject_present(
    block: SpeculationConfig, keys: tuple[str, ...], spec: SchemeSpec, path: str, what: str
) -> None:
    present = [key for key in keys if getattr(block, key) is not None]
    if present:
        raise ConfigError(
            f"{path}.{present[0]}: kind {spec.kind} takes no {what} "
            f"({_NO_DRAFT_REASONS.get(spec.kind, 'not used by this kind')}), "
            f"got {', '.join(present)}"
        )


def _draft_inputs(
    block: SpeculationConfig, spec: SchemeSpec, path: str
) -> tuple[str | None, dict[str, Any] | None]:
    if spec.draft == DRAFT_NONE:
        _reject_present(block, ("draft_model_path", "draft_config"), spec, path, "separate draft")
        return None, None
    draft_path = block.draft_model_path
    if draft_path is not None and not draft_path.strip():
        raise ConfigError(f"{path}.draft_model_path: expected a non-empty string")
    draft_config = block.draft_config
    if spec.draft == DRAFT_CONFIG and draft_config is None:
        raise ConfigError(
            f"{path}.draft_config: kind {spec.kind} needs the draft's config.json "
            f"as a mapping (hidden_size, num_hidden_layers, num_attention_heads, vocab_size, ...)"
        )
    if spec.draft == DRAFT_PATH and draft_path is None:
        raise ConfigError(
            f"{path}.draft_model_path: kind {spec.kind} needs the draft "
            f"checkpoint identity (a string such as a Hugging Face id or a path)"
        )
    return draft_path, draft_config


def _normalize_params(
    spec: SchemeSpec,
    raw_params: dict[str, Any],
    draft_config: dict[str, Any] | None,
    draft_model: ModelSpec | None,
    tensor_parallel: int | None,
    path: str,
) -> SchemeGeometry:
    """Validate ``params`` for ``spec.kind``, fill defaults and collapse equivalent spellings."""
    params_path = f"{path}.params"
    params = validate(PARAMS_MODELS[spec.kind], raw_params, params_path)
    kind = spec.kind
    if isinstance(params, MtpParams):
        depth = params.depth
        alias = params.num_speculative_tokens
        if depth is None and alias is None:
            raise ConfigError(
                f"{params_path}.depth: required for kind mtp (an integer in 1..{MAX_DRAFT_TOKENS}; "
                f"num_speculative_tokens is accepted as a synonym)"
            )
        if depth is not None and alias is not None and depth != alias:
            raise ConfigError(
                f"{params_path}.depth ({depth}) and {params_path}.num_speculative_tokens "
                f"({alias}) disagree for kind mtp; give one"
            )
        count = depth if depth is not None else alias
        assert count is not None
        return _chain({"depth": count}, count)
    if isinstance(params, NgramParams):
        count = _required(
            params.num_speculative_tokens, params_path, "num_speculative_tokens", kind
        )
        if params.trigger_rate != 1.0:
            raise ConfigError(
                f"{params_path}.trigger_rate: kind ngram supports only 1.0 "
                f"(a draft every round), got {params.trigger_rate!r}"
            )
        return _chain({"num_speculative_tokens": count, "trigger_rate": 1.0}, count)
    if isinstance(params, Eagle3Params):
        return _eagle3(params, params_path)
    if isinstance(params, DflashParams):
        block = _draft_block_size(draft_config, path)
        default = block - 1 if block is not None else None
        if default is not None and default < 1:
            raise ConfigError(
                f"{path}.draft_config.block_size: kind dflash needs a block of "
                f">= 2 tokens (block_size - 1 drafts), got {block}"
            )
        count = _required(params.num_draft_tokens, params_path, "num_draft_tokens", kind, default)
        if default is not None and count > default:
            raise ConfigError(
                f"{params_path}.num_draft_tokens: kind dflash drafts at most "
                f"block_size - 1 = {default} tokens with this draft, got {count}"
            )
        return _chain({"num_draft_tokens": count}, count)
    if isinstance(params, DsparkParams):
        block = _draft_block_size(draft_config, path)
        count = _required(params.num_draft_tokens, params_path, "num_draft_tokens", kind, block)
        layers_default = draft_model.num_layers if draft_model is not None else None
        layers = _required(
            params.num_draft_layers, params_path, "num_draft_layers", kind, layers_default
        )
        geometry = _chain({"num_draft_tokens": count, "num_draft_layers": layers}, count)
        geometry.num_draft_layers = layers
        return geometry
    if isinstance(params, DraftModelParams):
        count = _required(
            params.num_speculative_tokens, params_path, "num_speculative_tokens", kind
        )
        draft_tp = params.draft_tp_size if params.draft_tp_size is not None else tensor_parallel
        geometry = _chain({"num_speculative_tokens": count, "draft_tp_size": draft_tp}, count)
        geometry.draft_tp_size = draft_tp
        return geometry
    return SchemeGeometry({}, 0, 1, 0, None, None, None)


def _chain(params: dict[str, Any], count: int) -> SchemeGeometry:
    return SchemeGeometry(params, count, count + 1, count, None, None, None)


def _required(
    value: int | None, params_path: str, key: str, kind: str, default: int | None = None
) -> int:
    if value is not None:
        return value
    if default is None:
        raise ConfigError(
            f"{params_path}.{key}: required for kind {kind} (an integer in 1..{MAX_DRAFT_TOKENS})"
        )
    return default


def _eagle3(params: Eagle3Params, params_path: str) -> SchemeGeometry:
    count = params.num_speculative_tokens if params.num_speculative_tokens is not None else 3
    if params.tree_shape is None:
        widths = [1 for _ in range(count)]
    else:
        widths = list(params.tree_shape)
        if params.num_speculative_tokens is not None and count != len(widths):
            raise ConfigError(
                f"{params_path}.num_speculative_tokens ({count}) and {params_path}.tree_shape "
                f"(depth {len(widths)}) disagree for kind eagle3; give one"
            )
    depth = len(widths)
    drafted = sum(widths)
    budget = drafted + 1
    if params.verify_token_budget is not None:
        budget = integer(
            params.verify_token_budget,
            f"{params_path}.verify_token_budget",
            2,
            drafted + 1,
            label=" (kind eagle3)",
        )
    normalized: dict[str, Any] = {"num_speculative_tokens": depth, "verify_token_budget": budget}
    tree: tuple[int, ...] | None = None
    if any(width > 1 for width in widths):
        tree = tuple(widths)
        normalized["tree_shape"] = list(widths)
    # A path through the tree accepts at most one token per step and at most budget - 1 overall.
    accepted = min(depth, budget - 1)
    return SchemeGeometry(normalized, drafted, budget, accepted, tree, None, None)


def _draft_block_size(draft_config: dict[str, Any] | None, path: str) -> int | None:
    """``block_size`` of a block drafter's config (top level or under ``dflash_config``)."""
    if draft_config is None:
        return None
    raw = draft_config.get("block_size")
    field = f"{path}.draft_config.block_size"
    if raw is None:
        nested = draft_config.get("dflash_config")
        if isinstance(nested, dict):
            raw = nested.get("block_size")
            field = f"{path}.draft_config.dflash_config.block_size"
    if raw is None:
        return None
    return integer(raw, field, 1, MAX_DRAFT_TOKENS + 1)


#: Acceptance read from an engine's metrics file; one more acceptance input (at most one).


def _draft_vocab(
    draft_config: dict[str, Any] | None, draft_model: ModelSpec | None, path: str
) -> int | None:
    if draft_config is None or draft_model is None:
        return None
    raw = draft_config.get("draft_vocab_size")
    if raw is None:
        return draft_model.vocab_size
    return integer(raw, f"{path}.draft_config.draft_vocab_size", 1, 1 << 24)
