"""Resolve a speculation mapping (canonical or legacy) into a ``ResolvedSpeculation``.

Reads the block once at the edge: legacy inputs (``nextn``/``nextn_accepted``, flat
``num_speculative_tokens``) are folded into the canonical form, conflicting inputs are rejected
with both names in the message, params are normalized by the scheme registry, gates are checked,
acceptance is converted, and the draft and cost identities are built. Compiled by mypyc.
"""

from __future__ import annotations

import math
from typing import Any, Final

from aisim._fields import (
    as_int,
    as_mapping,
    as_str,
    describe,
    join_path,
    reject_unknown,
)
from aisim.catalogue._specs import ModelSpec
from aisim.errors import ConfigError
from aisim.speculation._acceptance import AcceptanceProfile
from aisim.speculation._resolved import ResolvedSpeculation, sha256_of_json
from aisim.speculation._schemes import (
    BACKENDS,
    DRAFT_CONFIG,
    DRAFT_NONE,
    DRAFT_PATH,
    ROLES,
    SCHEMES,
    SchemeGeometry,
    SchemeSpec,
    check_gates,
    normalize_params,
    scheme,
)

#: The acceptance forms of SPEC §1, by config key (at most one per block).
ACCEPTANCE_KEYS: Final = (
    "expected_accepted_tokens",  # mean accepted drafts E[a] in [0, d]
    "acceptance_rates",  # d conditional rates
    "unconditional_acceptance_rates",  # d unconditional rates P(a >= i)
    "acceptance_length",  # AL = 1 + E[a] in [1, d + 1]
    "acceptance_rate",  # one i.i.d. rate alpha
)
LEGACY_KEYS: Final = ("nextn", "nextn_accepted", "num_speculative_tokens")
CANONICAL_KEYS: Final = ("kind", "params", "draft_model_path", "draft_config", "seed")
ALLOWED_KEYS: Final = CANONICAL_KEYS + ACCEPTANCE_KEYS + LEGACY_KEYS

#: Nesting and size limits for a draft config mapping (bounds every walk over it).
MAX_CONFIG_DEPTH: Final = 16
MAX_CONFIG_ITEMS: Final = 10_000
MAX_SEED: Final = (1 << 63) - 1


def resolve_speculation(
    mapping: object,
    *,
    model: object = None,
    backend: object = None,
    role: object = None,
    path: str = "speculation",
    tensor_parallel: object = None,
) -> ResolvedSpeculation:
    """Resolve one speculation block (SPEC §2) into a frozen ``ResolvedSpeculation``.

    ``mapping``: the canonical block, a legacy block, or ``None``/``{}`` (speculation disabled).
    ``model``: the target (``ModelSpec``, catalogue name, config path or mapping) or ``None``;
    ``backend``: ``vllm``/``sglang`` or ``None``; ``role``: ``aggregated``/``prefill``/``decode``
    or ``None``. Gates apply as soon as what they need is known. ``tensor_parallel`` (the
    target's TP) fills the draft_model ``draft_tp_size`` default. ``path`` prefixes every error.

    Raises ``ConfigError`` (a ``ValueError``) naming the field path for every invalid input.
    """
    target = _target(model, "model")
    backend_name = None if backend is None else as_str(backend, "backend", BACKENDS)
    role_name = None if role is None else as_str(role, "role", ROLES)
    tp: int | None = None
    if tensor_parallel is not None:
        tp = as_int(tensor_parallel, "tensor_parallel", 1, 1024)
    if mapping is None:
        return _disabled(None, path)
    block = as_mapping(mapping, path)
    reject_unknown(block, ALLOWED_KEYS, path)
    spec = _kind(block, path)
    params = _params(block, spec, path)
    if spec.kind == "none":
        keys: tuple[str, ...] = ACCEPTANCE_KEYS
        legacy = block.get("nextn_accepted")
        # Legacy files write `nextn: 0, nextn_accepted: 0` for "no MTP": accept that zero.
        if isinstance(legacy, bool) or not isinstance(legacy, (int, float)) or legacy != 0:
            keys = keys + ("nextn_accepted",)
        _reject_present(block, keys, spec, path, "acceptance")
    draft_path, draft_config = _draft_inputs(block, spec, path)
    draft_model: ModelSpec | None = None
    if draft_config is not None:
        name = draft_path if draft_path is not None else f"{spec.kind}-draft"
        draft_model = ModelSpec.from_hf_config(draft_config, name, join_path(path, "draft_config"))
    geometry = normalize_params(spec, params, draft_config, draft_model, tp, path)
    check_gates(spec, target, draft_model, backend_name, role_name, path)
    acceptance = None if spec.kind == "none" else _acceptance(block, geometry, spec, path)
    seed: int | None = None
    if block.get("seed") is not None:
        seed = as_int(block["seed"], join_path(path, "seed"), 0, MAX_SEED)
    draft_vocab = _draft_vocab(draft_config, draft_model, spec, path)
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
        seed=seed,
        num_draft_layers=geometry.num_draft_layers,
        draft_tp_size=geometry.draft_tp_size,
        draft_vocab_size=draft_vocab,
        path=path,
    )


def _disabled(seed: int | None, path: str) -> ResolvedSpeculation:
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
        seed=seed,
        num_draft_layers=None,
        draft_tp_size=None,
        draft_vocab_size=None,
        path=path,
    )


def _target(model: object, path: str) -> ModelSpec | None:
    if model is None or isinstance(model, ModelSpec):
        return model
    from aisim.catalogue import get_model

    return get_model(model, path)


def _kind(block: dict[str, Any], path: str) -> SchemeSpec:
    """The kind, from ``kind`` or the legacy ``nextn``; a missing kind is an error unless the
    block is empty (or holds only a seed), which means disabled."""
    raw_kind = block.get("kind")
    raw_nextn = block.get("nextn")
    nextn: int | None = None
    if raw_nextn is not None:
        nextn = as_int(raw_nextn, join_path(path, "nextn"), 0, 64)
    if raw_kind is None:
        if nextn is not None:
            return SCHEMES["mtp"] if nextn > 0 else SCHEMES["none"]
        if all(key == "seed" for key in block):
            return SCHEMES["none"]
        raise ConfigError(
            f"{join_path(path, 'kind')}: required (one of {', '.join(SCHEMES)}), "
            f"or give the legacy nextn"
        )
    spec = scheme(raw_kind, path)
    if nextn is not None and spec.kind != "mtp" and not (spec.kind == "none" and nextn == 0):
        raise ConfigError(
            f"{join_path(path, 'nextn')} ({nextn}, legacy MTP depth) conflicts with "
            f"{join_path(path, 'kind')} ({spec.kind}); nextn is only for kind mtp"
        )
    return spec


def _params(block: dict[str, Any], spec: SchemeSpec, path: str) -> dict[str, Any]:
    """The kind's params with legacy depth inputs folded in (conflicts rejected)."""
    raw = block.get("params")
    params: dict[str, Any] = {} if raw is None else as_mapping(raw, join_path(path, "params"))
    if spec.kind == "none" and params:
        raise ConfigError(
            f"{join_path(path, 'params')}: kind none takes no params, got "
            f"{', '.join(sorted(params))}"
        )
    flat = block.get("num_speculative_tokens")
    if flat is not None:
        if "num_speculative_tokens" not in spec.params:
            takers = [
                kind for kind, item in SCHEMES.items() if "num_speculative_tokens" in item.params
            ]
            raise ConfigError(
                f"{join_path(path, 'num_speculative_tokens')}: kind {spec.kind} takes no "
                f"num_speculative_tokens (the flat form is for {', '.join(takers)})"
            )
        flat_value = as_int(flat, join_path(path, "num_speculative_tokens"), 1, 64)
        _merge(params, "num_speculative_tokens", flat_value, "num_speculative_tokens", path)
    nextn = block.get("nextn")
    if nextn is not None and spec.kind == "mtp":
        depth = as_int(nextn, join_path(path, "nextn"), 1, 64)
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
        return  # not a number: the scheme's own validation reports it at params.<key>
    params_field = join_path(join_path(path, "params"), key)
    if existing != value:
        raise ConfigError(
            f"{join_path(path, source)} ({value}) and {params_field} ({existing!r}) "
            f"disagree; give one"
        )


def _reject_present(
    block: dict[str, Any], keys: tuple[str, ...], spec: SchemeSpec, path: str, what: str
) -> None:
    present = [key for key in keys if block.get(key) is not None]
    if present:
        raise ConfigError(
            f"{join_path(path, present[0])}: kind {spec.kind} takes no {what} "
            f"({_NO_DRAFT_REASONS.get(spec.kind, 'not used by this kind')}), "
            f"got {', '.join(present)}"
        )


# Why a kind takes no separate draft (or no acceptance), for error messages.
_NO_DRAFT_REASONS: Final = {
    "none": "speculation is disabled",
    "mtp": "its drafts come from the target's own MTP heads",
    "ngram": "its drafts are n-gram lookups, with no draft network",
}


def _draft_inputs(
    block: dict[str, Any], spec: SchemeSpec, path: str
) -> tuple[str | None, dict[str, Any] | None]:
    raw_path = block.get("draft_model_path")
    raw_config = block.get("draft_config")
    if spec.draft == DRAFT_NONE:
        _reject_present(block, ("draft_model_path", "draft_config"), spec, path, "separate draft")
        return None, None
    draft_path: str | None = None
    if raw_path is not None:
        draft_path = as_str(raw_path, join_path(path, "draft_model_path"))
        if not draft_path.strip():
            raise ConfigError(f"{join_path(path, 'draft_model_path')}: expected a non-empty string")
    draft_config: dict[str, Any] | None = None
    if raw_config is not None:
        counter = [0]
        draft_config = _json_mapping(raw_config, join_path(path, "draft_config"), 0, counter)
    if spec.draft == DRAFT_CONFIG and draft_config is None:
        raise ConfigError(
            f"{join_path(path, 'draft_config')}: kind {spec.kind} needs the draft's config.json "
            f"as a mapping (hidden_size, num_hidden_layers, num_attention_heads, vocab_size, ...)"
        )
    if spec.draft == DRAFT_PATH and draft_path is None:
        raise ConfigError(
            f"{join_path(path, 'draft_model_path')}: kind {spec.kind} needs the draft "
            f"checkpoint identity (a string such as a Hugging Face id or a path)"
        )
    return draft_path, draft_config


def _json_mapping(value: object, path: str, depth: int, counter: list[int]) -> dict[str, Any]:
    """A deep copy of a JSON-shaped mapping; other values are a ConfigError at their path."""
    mapping = as_mapping(value, path)
    result: dict[str, Any] = {}
    for key, item in mapping.items():
        result[key] = _json_value(item, join_path(path, key), depth + 1, counter)
    return result


def _json_value(value: object, path: str, depth: int, counter: list[int]) -> Any:
    counter[0] += 1
    if depth > MAX_CONFIG_DEPTH or counter[0] > MAX_CONFIG_ITEMS:
        raise ConfigError(
            f"{path}: draft config too deep or too large (limits: {MAX_CONFIG_DEPTH} levels, "
            f"{MAX_CONFIG_ITEMS} values)"
        )
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ConfigError(f"{path}: expected a finite number, got {describe(value)}")
        return float(value)
    if isinstance(value, (list, tuple)):
        return [
            _json_value(item, f"{path}[{index}]", depth + 1, counter)
            for index, item in enumerate(value)
        ]
    if isinstance(value, dict):
        return _json_mapping(value, path, depth, counter)
    raise ConfigError(
        f"{path}: expected a JSON value (number, string, bool, null, list, mapping), "
        f"got {describe(value)}"
    )


def _acceptance(
    block: dict[str, Any], geometry: SchemeGeometry, spec: SchemeSpec, path: str
) -> AcceptanceProfile | None:
    """The one acceptance form given (``nextn_accepted`` is the legacy spelling of
    ``expected_accepted_tokens``), converted at depth ``max_accepted_draft_tokens``."""
    given = [key for key in ACCEPTANCE_KEYS if block.get(key) is not None]
    legacy = block.get("nextn_accepted")
    if legacy is not None:
        if spec.kind != "mtp":
            raise ConfigError(
                f"{join_path(path, 'nextn_accepted')}: the legacy MTP acceptance is only for kind "
                f"mtp, got kind {spec.kind}; use expected_accepted_tokens"
            )
        canonical = block.get("expected_accepted_tokens")
        if canonical is None:
            given.insert(0, "nextn_accepted")
        elif canonical != legacy:
            raise ConfigError(
                f"{join_path(path, 'nextn_accepted')} ({describe(legacy)}) and "
                f"{join_path(path, 'expected_accepted_tokens')} ({describe(canonical)}) disagree; "
                f"give one"
            )
    if not given:
        return None
    if len(given) > 1:
        raise ConfigError(
            f"{join_path(path, given[0])} and {join_path(path, given[1])} are two acceptance "
            f"inputs; give exactly one of {', '.join(ACCEPTANCE_KEYS)}"
        )
    key = given[0]
    field = join_path(path, key)
    value = block[key]
    depth = geometry.max_accepted_draft_tokens
    if key in ("expected_accepted_tokens", "nextn_accepted"):
        return AcceptanceProfile.from_mean_accepted(value, depth, field)
    if key == "acceptance_length":
        return AcceptanceProfile.from_acceptance_length(value, depth, field)
    if key == "acceptance_rate":
        return AcceptanceProfile.from_iid(value, depth, field)
    if key == "acceptance_rates":
        profile = AcceptanceProfile.from_conditional(value, field)
    else:
        profile = AcceptanceProfile.from_unconditional(value, field)
    if profile.depth != depth:
        raise ConfigError(
            f"{field}: kind {spec.kind} accepts at most {depth} drafts per round, so exactly "
            f"{depth} rates are expected, got {profile.depth}"
        )
    return profile


def _draft_vocab(
    draft_config: dict[str, Any] | None, draft_model: ModelSpec | None, spec: SchemeSpec, path: str
) -> int | None:
    if draft_config is None or draft_model is None:
        return None
    raw = draft_config.get("draft_vocab_size")
    if raw is None:
        return draft_model.vocab_size
    return as_int(raw, join_path(join_path(path, "draft_config"), "draft_vocab_size"), 1, 1 << 24)
