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
from aisim.config._acceptance import ACCEPTANCE_INPUTS, block_acceptance
from aisim.config._catalogue import get_model
from aisim.config._edge import (
    EdgeModel,
    check_input,
    choice,
    integer,
    validate,
)
from aisim.config._speculation_models import (
    MAX_TENSOR_PARALLEL,
    PARAMS_MODELS,
    DflashParams,
    DraftModelFile,
    DraftModelParams,
    DsparkParams,
    Eagle3Params,
    MedusaParams,
    MlpSpeculatorParams,
    MtpParams,
    NgramParams,
    SpeculationConfig,
    SuffixParams,
)
from aisim.config._speculation_modes import (
    adaptive_policy,
    draft_schedule,
    reject_unmodelled,
)
from aisim.errors import ConfigError
from aisim.speculation import (
    BACKENDS,
    DRAFT_CONFIG,
    DRAFT_HEADS,
    DRAFT_NONE,
    DRAFT_PATH,
    MAX_DRAFT_TOKENS,
    ROLES,
    SCHEMES,
    AcceptanceProfile,
    ResolvedSpeculation,
    SchemeGeometry,
    SchemeSpec,
    check_gates,
    sha256_of_json,
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
    # A block the replay edge validated with its config is taken as it is.
    typed = isinstance(mapping, SpeculationConfig)
    block: SpeculationConfig = (
        mapping
        if isinstance(mapping, SpeculationConfig)
        else validate(SpeculationConfig, mapping, path)
    )
    spec = _kind(block, path)
    reject_unmodelled(block, spec, path)
    params = _params(block, spec, path)
    if spec.kind == "none":
        keys: tuple[str, ...] = ACCEPTANCE_INPUTS
        legacy = block.nextn_accepted
        # Legacy files write `nextn: 0, nextn_accepted: 0` for "no MTP": accept that zero.
        if isinstance(legacy, bool) or not isinstance(legacy, (int, float)) or legacy != 0:
            keys = keys + ("nextn_accepted",)
        _reject_present(block, keys, spec, path, "acceptance")
    draft_path, draft_config = _draft_inputs(block, spec, path)
    draft_model: ModelSpec | None = None
    heads: tuple[int, list[list[object]]] | None = None
    if draft_config is not None and spec.draft == DRAFT_HEADS:
        # A heads drafter's kind: the block's model read its config.json (HeadsFile).
        assert block.heads is not None
        heads = block.heads.count(), block.heads.geometry()
    elif draft_config is not None:
        # A model drafter's kind: the block's model read its config.json (DraftModelFile).
        assert block.draft is not None
        name = draft_path if draft_path is not None else f"{spec.kind}-draft"
        draft_model = block.draft.to_spec(name, f"{path}.draft_config")
    geometry = _normalize_params(spec, params, block.draft, draft_model, tp, path, heads)
    check_gates(spec, target, draft_model, backend_name, role_name, path)
    _engine_gates(geometry.params, spec, backend_name, path)
    schedule: list[list[int]] | None = None
    if block.num_speculative_tokens_per_batch_size is not None:
        if geometry.tree_shape is not None:
            raise ConfigError(
                f"{path}.num_speculative_tokens_per_batch_size: vLLM shortens chains only"
            )
        schedule = draft_schedule(
            block.num_speculative_tokens_per_batch_size,
            geometry.num_draft_tokens,
            spec,
            backend_name,
            path,
        )
    adaptive = adaptive_policy(
        block,
        spec,
        geometry.max_accepted_draft_tokens,
        geometry.tree_shape is None,
        backend_name,
        path,
    )
    acceptance: AcceptanceProfile | None = None
    acceptance_source: dict[str, Any] | None = None
    if spec.kind != "none":
        acceptance, acceptance_source = block_acceptance(block, geometry, spec, path, base_dir)
    trace: object = None
    if acceptance_source is not None and "_trace" in acceptance_source:
        trace = acceptance_source.pop("_trace")
    _acceptance_gates(block, backend_name, path)
    undrafted = block.undrafted_rounds
    if undrafted is not None and spec.kind != "ngram":
        raise ConfigError(
            f"{path}.undrafted_rounds: only kind ngram drafts nothing in a request's first rounds "
            f"(no n-gram of the context matches yet); got kind {spec.kind}"
        )
    lookup = block.suffix_lookup_us_per_request
    if lookup is not None and spec.kind != "suffix":
        raise ConfigError(
            f"{path}.suffix_lookup_us_per_request: only kind suffix looks drafts up in a "
            f"host-side suffix tree; got kind {spec.kind}"
        )
    draft_vocab = _draft_vocab(block.draft, draft_model, f"{path}.draft_config")
    token_map = geometry.params.get("speculative_token_map_size")
    if token_map is not None and draft_vocab is not None:
        if token_map > draft_vocab:
            raise ConfigError(
                f"{path}.params.speculative_token_map_size: the FR-Spec token map keeps at most "
                f"the draft's vocabulary ({draft_vocab} tokens), got {token_map}"
            )
        draft_vocab = token_map
    draft_geometry: list[list[object]] | None = None
    draft_identity: str | None = None
    if heads is not None:
        draft_geometry = heads[1]
        draft_identity = "geometry:" + sha256_of_json(draft_geometry)[:16]
        if draft_path is not None:
            draft_identity = draft_path + "@" + draft_identity
    elif draft_model is not None:
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
    if not typed:
        check_input(mapping, path)
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
        suffix_lookup_us=lookup,
        draft_length_schedule=schedule,
        adaptive=adaptive,
        acceptance_trace=trace,
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


def _params(block: SpeculationConfig, spec: SchemeSpec, path: str) -> EdgeModel:
    """The kind's params (typed by the block's model, which read them with the kind's model)
    with legacy depth inputs folded in (conflicts rejected)."""
    given = block.params
    params: EdgeModel
    if given is None:
        params = PARAMS_MODELS[spec.kind]()
    elif isinstance(given, dict):
        # Read as a mapping: the block named no kind (the engine's legacy nextn gives it).
        params = validate(PARAMS_MODELS[spec.kind], given, f"{path}.params")
    else:
        params = given
    updates: dict[str, int] = {}
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
        _merge(params, updates, "num_speculative_tokens", flat, "num_speculative_tokens", path)
    if block.nextn is not None and spec.kind == "mtp":
        depth = integer(block.nextn, f"{path}.nextn", 1, MAX_DRAFT_TOKENS)
        _merge(params, updates, "depth", depth, "nextn", path)
        if _current(params, updates, "num_speculative_tokens") is not None:
            _merge(params, updates, "num_speculative_tokens", depth, "nextn", path)
    return params.model_copy(update=updates) if updates else params


def _current(params: EdgeModel, updates: dict[str, int], key: str) -> object:
    return updates[key] if key in updates else getattr(params, key, None)


def _merge(
    params: EdgeModel, updates: dict[str, int], key: str, value: int, source: str, path: str
) -> None:
    """Put a legacy value into params; an existing, different value is a conflict."""
    existing = _current(params, updates, key)
    if existing is None:
        updates[key] = value
    elif existing != value:
        raise ConfigError(
            f"{path}.{source} ({value}) and {path}.params.{key} ({existing!r}) disagree; give one"
        )


# Why a kind takes no separate draft (or no acceptance), for error messages.
_NO_DRAFT_REASONS: Final = {
    "none": "speculation is disabled",
    "mtp": "its drafts come from the target's own MTP heads",
    "ngram": "its drafts are n-gram lookups, with no draft network",
    "suffix": "its drafts are suffix-tree lookups on the host, with no draft network",
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
    if spec.draft == DRAFT_HEADS and draft_config is None:
        fields = "num_heads, num_hidden_layers, hidden_size, vocab_size"
        if spec.kind == "mlp_speculator":
            fields = "n_predict, emb_dim, inner_dim, vocab_size"
        raise ConfigError(
            f"{path}.draft_config: kind {spec.kind} needs the heads' config.json as a mapping "
            f"({fields})"
        )
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
    params: EdgeModel,
    draft: DraftModelFile | None,
    draft_model: ModelSpec | None,
    tensor_parallel: int | None,
    path: str,
    heads: tuple[int, list[list[object]]] | None = None,
) -> SchemeGeometry:
    """The kind's validated ``params``: defaults filled, equivalent spellings collapsed."""
    params_path = f"{path}.params"
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
        block = _draft_block_size(draft)
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
        block = _draft_block_size(draft)
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
        normalized: dict[str, Any] = {"num_speculative_tokens": count, "draft_tp_size": draft_tp}
        if params.parallel_drafting:
            normalized["parallel_drafting"] = True
        geometry = _chain(normalized, count)
        geometry.draft_tp_size = draft_tp
        return geometry
    if isinstance(params, SuffixParams):
        depth = params.suffix_decoding_max_tree_depth
        # vLLM (_validate_suffix_decoding): num_speculative_tokens defaults to the tree depth and
        # is the most one round drafts.
        count = (
            params.num_speculative_tokens if params.num_speculative_tokens is not None else depth
        )
        return _chain(
            {
                "num_speculative_tokens": count,
                "suffix_decoding_max_tree_depth": depth,
                "suffix_decoding_max_cached_requests": params.suffix_decoding_max_cached_requests,
                "suffix_decoding_max_spec_factor": params.suffix_decoding_max_spec_factor,
                "suffix_decoding_min_token_prob": params.suffix_decoding_min_token_prob,
            },
            count,
        )
    if isinstance(params, (MedusaParams, MlpSpeculatorParams)):
        assert heads is not None
        predicted = heads[0]
        count = (
            params.num_speculative_tokens
            if params.num_speculative_tokens is not None
            else predicted
        )
        if isinstance(params, MedusaParams) and count != predicted:
            raise ConfigError(
                f"{params_path}.num_speculative_tokens: vLLM's MedusaProposer drafts one token "
                f"per head ({predicted} heads), got {count}"
            )
        if count > predicted and count % predicted != 0:
            raise ConfigError(
                f"{params_path}.num_speculative_tokens: vLLM needs a multiple of the draft's "
                f"n_predict ({predicted}) above it, got {count}"
            )
        return _chain({"num_speculative_tokens": count}, count)
    return SchemeGeometry({}, 0, 1, 0, None, None, None)


def _acceptance_gates(block: SpeculationConfig, backend: str | None, path: str) -> None:
    """Synthetic acceptance is spelled per engine: vLLM's sampler, SGLang's simulated length."""
    if block.rejection_sample_method == "synthetic" and backend not in (None, "vllm"):
        raise ConfigError(
            f"{path}.rejection_sample_method: the synthetic rejection sampler is vLLM's; "
            f"SGLang's equivalent is simulate_acc_len (SGLANG_SIMULATE_ACC_LEN), got backend "
            f"{backend}"
        )
    if block.simulate_acc_len is not None and backend not in (None, "sglang"):
        raise ConfigError(
            f"{path}.simulate_acc_len: SGLANG_SIMULATE_ACC_LEN is SGLang's; vLLM's equivalent "
            f"is rejection_sample_method: synthetic, got backend {backend}"
        )


def _engine_gates(params: dict[str, Any], spec: SchemeSpec, backend: str | None, path: str) -> None:
    """Options only one engine has: vLLM's parallel drafting, SGLang's FR-Spec token map."""
    if params.get("parallel_drafting") and backend is not None and backend != "vllm":
        raise ConfigError(
            f"{path}.params.parallel_drafting: parallel drafting is vLLM's "
            f"(SpeculativeConfig.parallel_drafting), got backend {backend}"
        )
    if params.get("speculative_token_map_size") is not None and backend not in (None, "sglang"):
        raise ConfigError(
            f"{path}.params.speculative_token_map_size: FR-Spec token maps are SGLang's "
            f"(--speculative-token-map), got backend {backend}"
        )


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
    if (
        params.speculative_num_steps is not None
        or params.speculative_eagle_topk is not None
        or params.speculative_num_draft_tokens is not None
    ):
        geometry = _eagle3_sglang(params, params_path)
    else:
        geometry = _eagle3_vllm(params, params_path)
    if params.parallel_drafting:
        if geometry.tree_shape is not None:
            raise ConfigError(
                f"{params_path}.parallel_drafting: vLLM drafts chains in parallel only"
            )
        geometry.params["parallel_drafting"] = True
    if params.speculative_token_map_size is not None:
        geometry.params["speculative_token_map_size"] = params.speculative_token_map_size
    return geometry


def _eagle3_sglang(params: Eagle3Params, params_path: str) -> SchemeGeometry:
    """SGLang's spelling: ``speculative_num_steps`` draft forwards of ``speculative_eagle_topk``
    tokens each, the best ``speculative_num_draft_tokens - 1`` candidates verified (SGLang's
    ``EagleWorker``: step 1 proposes topk, each later step topk x topk, pruned to topk)."""
    if params.num_speculative_tokens is not None or params.tree_shape is not None:
        raise ConfigError(
            f"{params_path}: give the tree either in SGLang's spelling (speculative_num_steps, "
            "speculative_eagle_topk, speculative_num_draft_tokens) or in aisim's "
            "(num_speculative_tokens, tree_shape), not both"
        )
    if params.verify_token_budget is not None:
        raise ConfigError(
            f"{params_path}.verify_token_budget: with SGLang's spelling the verify budget is "
            "speculative_num_draft_tokens"
        )
    steps = params.speculative_num_steps
    if steps is None:
        raise ConfigError(f"{params_path}.speculative_num_steps: required in SGLang's spelling")
    topk = params.speculative_eagle_topk if params.speculative_eagle_topk is not None else 1
    budget = params.speculative_num_draft_tokens
    if topk == 1:
        if budget is not None and budget != steps + 1:
            raise ConfigError(
                f"{params_path}.speculative_num_draft_tokens: with topk 1 SGLang verifies the "
                f"chain, speculative_num_steps + 1 = {steps + 1} tokens, got {budget}"
            )
        return _chain({"num_speculative_tokens": steps, "verify_token_budget": steps + 1}, steps)
    candidates = topk + (steps - 1) * topk * topk
    if budget is None:
        raise ConfigError(
            f"{params_path}.speculative_num_draft_tokens: required with topk {topk} "
            f"(2..{candidates + 1})"
        )
    budget = integer(
        budget,
        f"{params_path}.speculative_num_draft_tokens",
        2,
        candidates + 1,
        label=" (kind eagle3)",
    )
    widths = [topk for _ in range(steps)]
    normalized: dict[str, Any] = {
        "num_speculative_tokens": steps,
        "verify_token_budget": budget,
        "tree_shape": list(widths),
    }
    return SchemeGeometry(
        normalized, topk * steps, budget, min(steps, budget - 1), tuple(widths), None, None
    )


def _eagle3_vllm(params: Eagle3Params, params_path: str) -> SchemeGeometry:
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


def _draft_block_size(draft: DraftModelFile | None) -> int | None:
    """``block_size`` of a block drafter's config (top level or under ``dflash_config``)."""
    if draft is None:
        return None
    if draft.block_size is not None:
        return draft.block_size
    return None if draft.dflash_config is None else draft.dflash_config.block_size


def _draft_vocab(
    draft: DraftModelFile | None, draft_model: ModelSpec | None, path: str
) -> int | None:
    """The draft head's vocabulary: ``draft_vocab_size`` (a subset of the vocabulary, EAGLE-3's
    d2t map), else the draft config's ``vocab_size``."""
    if draft is None or draft_model is None:
        return None
    if draft.draft_vocab_size is None:
        return draft_model.vocab_size
    if draft.draft_vocab_size > draft_model.vocab_size:
        raise ConfigError(
            f"{path}.draft_vocab_size: expected at most the vocabulary it is drawn from "
            f"(vocab_size {draft_model.vocab_size}), got {draft.draft_vocab_size}"
        )
    return draft.draft_vocab_size
