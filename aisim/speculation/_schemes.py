"""The registry of speculation kinds: params, defaults, draft needs, verify width and gates.

One ``SchemeSpec`` per kind (SPEC §2 table). ``normalize_params`` validates a kind's ``params``
mapping, fills defaults (some come from the draft's config) and collapses equivalent spellings
into one canonical mapping; ``check_gates`` applies the model-family and backend gates. Every
failure is a ``ConfigError`` naming the field path and the kind. Compiled by mypyc.
"""

from __future__ import annotations

from typing import Any, Final

from aisim._fields import as_float, as_int, as_list, describe, join_path, reject_unknown
from aisim.catalogue._specs import ModelSpec
from aisim.errors import ConfigError

#: Largest number of draft tokens (per step width or chain length) a params field accepts.
MAX_DRAFT_TOKENS: Final = 64

DRAFT_NONE: Final = "none"  # the kind takes no separate draft: draft fields are rejected
DRAFT_CONFIG: Final = "draft_config"  # needs the draft's config.json mapping
DRAFT_PATH: Final = "draft_model_path"  # needs a draft checkpoint identity

BACKENDS: Final = ("vllm", "sglang")
ROLES: Final = ("aggregated", "prefill", "decode")


class SchemeSpec:
    """Static facts about one speculation kind."""

    def __init__(
        self,
        kind: str,
        params: tuple[str, ...],
        draft: str,
        backends: tuple[str, ...],
        families: tuple[str, ...],
        summary: str,
    ) -> None:
        self.kind = kind
        self.params = params
        self.draft = draft
        self.backends = backends
        self.families = families  # empty: any target family
        self.summary = summary


SCHEMES: Final[dict[str, SchemeSpec]] = {
    "none": SchemeSpec("none", (), DRAFT_NONE, BACKENDS, (), "speculation disabled"),
    "mtp": SchemeSpec(
        "mtp",
        ("depth", "num_speculative_tokens"),
        DRAFT_NONE,
        BACKENDS,
        (),
        "multi-token prediction heads of the target, chain of depth drafts",
    ),
    "ngram": SchemeSpec(
        "ngram",
        ("num_speculative_tokens", "trigger_rate"),
        DRAFT_NONE,
        BACKENDS,
        (),
        "prompt-lookup n-gram drafts: no draft network, weights or KV",
    ),
    "eagle3": SchemeSpec(
        "eagle3",
        ("num_speculative_tokens", "tree_shape", "verify_token_budget"),
        DRAFT_CONFIG,
        BACKENDS,
        ("llama",),
        "EAGLE-3 draft head on target hidden states; chain or tree",
    ),
    "dflash": SchemeSpec(
        "dflash",
        ("num_draft_tokens",),
        DRAFT_CONFIG,
        ("vllm",),
        (),
        "block drafter: one parallel draft forward proposes the block",
    ),
    "dspark": SchemeSpec(
        "dspark",
        ("num_draft_tokens", "num_draft_layers"),
        DRAFT_CONFIG,
        BACKENDS,
        (),
        "block drafter with its own draft layers",
    ),
    "draft_model": SchemeSpec(
        "draft_model",
        ("num_speculative_tokens", "draft_tp_size"),
        DRAFT_PATH,
        ("vllm",),
        (),
        "separate small model, K sequential draft steps",
    ),
}

KINDS: Final = tuple(SCHEMES)


class SchemeGeometry:
    """What a kind's params resolve to (before acceptance and identity)."""

    def __init__(
        self,
        params: dict[str, Any],
        num_draft_tokens: int,
        verify_width: int,
        max_accepted_draft_tokens: int,
        tree_shape: tuple[int, ...] | None,
        num_draft_layers: int | None,
        draft_tp_size: int | None,
    ) -> None:
        self.params = params
        self.num_draft_tokens = num_draft_tokens
        self.verify_width = verify_width
        self.max_accepted_draft_tokens = max_accepted_draft_tokens
        self.tree_shape = tree_shape
        self.num_draft_layers = num_draft_layers
        self.draft_tp_size = draft_tp_size


def scheme(kind: object, path: str) -> SchemeSpec:
    """The registered scheme for ``kind`` (a string), or a ConfigError listing the kinds."""
    if not isinstance(kind, str) or kind not in SCHEMES:
        raise ConfigError(
            f"{join_path(path, 'kind')}: unknown speculation kind {describe(kind)}; "
            f"registered kinds: {', '.join(KINDS)}"
        )
    return SCHEMES[kind]


def normalize_params(
    spec: SchemeSpec,
    params: dict[str, Any],
    draft_config: dict[str, Any] | None,
    draft_model: ModelSpec | None,
    tensor_parallel: int | None,
    path: str,
) -> SchemeGeometry:
    """Validate ``params`` for ``spec.kind``, fill defaults and collapse equivalent spellings."""
    params_path = join_path(path, "params")
    reject_unknown(params, spec.params, f"{params_path} (kind {spec.kind})")
    kind = spec.kind
    if kind == "none":
        return SchemeGeometry({}, 0, 1, 0, None, None, None)
    if kind == "mtp":
        depth = _aliased(params, "depth", "num_speculative_tokens", params_path, kind)
        return _chain({"depth": depth}, depth)
    if kind == "ngram":
        count = _count(params, "num_speculative_tokens", params_path, kind, None)
        trigger = params.get("trigger_rate", 1.0)
        rate = as_float(trigger, join_path(params_path, "trigger_rate"), 0.0, 1.0)
        if rate != 1.0:
            raise ConfigError(
                f"{join_path(params_path, 'trigger_rate')}: kind ngram supports only 1.0 "
                f"(a draft every round), got {rate!r}"
            )
        return _chain({"num_speculative_tokens": count, "trigger_rate": 1.0}, count)
    if kind == "eagle3":
        return _eagle3(params, params_path)
    if kind == "dflash":
        block = _draft_block_size(draft_config, path)
        default = block - 1 if block is not None else None
        if default is not None and default < 1:
            raise ConfigError(
                f"{join_path(path, 'draft_config')}.block_size: kind dflash needs a block of "
                f">= 2 tokens (block_size - 1 drafts), got {block}"
            )
        count = _count(params, "num_draft_tokens", params_path, kind, default)
        if default is not None and count > default:
            raise ConfigError(
                f"{join_path(params_path, 'num_draft_tokens')}: kind dflash drafts at most "
                f"block_size - 1 = {default} tokens with this draft, got {count}"
            )
        return _chain({"num_draft_tokens": count}, count)
    if kind == "dspark":
        block = _draft_block_size(draft_config, path)
        count = _count(params, "num_draft_tokens", params_path, kind, block)
        layers_default = draft_model.num_layers if draft_model is not None else None
        layers = _count(params, "num_draft_layers", params_path, kind, layers_default)
        geometry = _chain({"num_draft_tokens": count, "num_draft_layers": layers}, count)
        geometry.num_draft_layers = layers
        return geometry
    # draft_model
    count = _count(params, "num_speculative_tokens", params_path, kind, None)
    raw_tp = params.get("draft_tp_size")
    draft_tp: int | None = tensor_parallel
    if raw_tp is not None:
        draft_tp = as_int(raw_tp, join_path(params_path, "draft_tp_size"), 1, 1024)
    geometry = _chain({"num_speculative_tokens": count, "draft_tp_size": draft_tp}, count)
    geometry.draft_tp_size = draft_tp
    return geometry


def check_gates(
    spec: SchemeSpec,
    model: ModelSpec | None,
    draft_model: ModelSpec | None,
    backend: str | None,
    role: str | None,
    path: str,
) -> None:
    """Reject scheme/model/backend/role combinations the kind does not support (SPEC §2).

    Each gate is checked as soon as what it needs is known: backend gates need ``backend``,
    family and hidden-size gates need ``model``, the ngram replay gate needs ``backend`` and
    ``role``.
    """
    family = model.family if model is not None else "unknown"
    where = (
        f"scheme {spec.kind}, model family {family}, backend {backend or 'unspecified'}, "
        f"role {role or 'unspecified'}"
    )
    if backend is not None and backend not in spec.backends:
        raise ConfigError(
            f"{join_path(path, 'kind')}: {where}: {spec.kind} is supported on "
            f"{' / '.join(spec.backends)} only"
        )
    if spec.kind == "ngram" and role is not None and backend is not None and backend != "vllm":
        raise ConfigError(
            f"{join_path(path, 'kind')}: {where}: ngram replay is supported on vllm only"
        )
    if model is None:
        return
    if spec.families and family not in spec.families:
        raise ConfigError(
            f"{join_path(path, 'kind')}: {where}: {spec.kind} needs a dense "
            f"{' / '.join(spec.families)}-family target, got {model.name} ({model.model_type})"
        )
    if (
        spec.kind == "eagle3"
        and draft_model is not None
        and draft_model.hidden_size != model.hidden_size
    ):
        raise ConfigError(
            f"{join_path(path, 'draft_config')}.hidden_size: {where}: the EAGLE-3 draft's "
            f"hidden size must equal the target's ({model.hidden_size} for {model.name}), "
            f"got {draft_model.hidden_size}"
        )


def _chain(params: dict[str, Any], count: int) -> SchemeGeometry:
    return SchemeGeometry(params, count, count + 1, count, None, None, None)


def _count(
    params: dict[str, Any], key: str, params_path: str, kind: str, default: int | None
) -> int:
    raw = params.get(key)
    if raw is None:
        if default is None:
            raise ConfigError(
                f"{join_path(params_path, key)}: required for kind {kind} "
                f"(an integer in 1..{MAX_DRAFT_TOKENS})"
            )
        return default
    return as_int(raw, f"{join_path(params_path, key)} (kind {kind})", 1, MAX_DRAFT_TOKENS)


def _aliased(params: dict[str, Any], key: str, alias: str, params_path: str, kind: str) -> int:
    """One integer spelled two ways (``depth`` / ``num_speculative_tokens``); both must agree."""
    primary = params.get(key)
    secondary = params.get(alias)
    if primary is None and secondary is None:
        raise ConfigError(
            f"{join_path(params_path, key)}: required for kind {kind} "
            f"(an integer in 1..{MAX_DRAFT_TOKENS}; {alias} is accepted as a synonym)"
        )
    value = 0
    if primary is not None:
        value = _count(params, key, params_path, kind, None)
    if secondary is not None:
        other = _count(params, alias, params_path, kind, None)
        if primary is not None and other != value:
            raise ConfigError(
                f"{join_path(params_path, key)} ({value}) and {join_path(params_path, alias)} "
                f"({other}) disagree for kind {kind}; give one"
            )
        value = other
    return value


def _eagle3(params: dict[str, Any], params_path: str) -> SchemeGeometry:
    tree_path = join_path(params_path, "tree_shape")
    raw_tree = params.get("tree_shape")
    raw_count = params.get("num_speculative_tokens")
    count = 3
    if raw_count is not None:
        count = _count(params, "num_speculative_tokens", params_path, "eagle3", None)
    widths: list[int] = []
    if raw_tree is None:
        widths = [1 for _ in range(count)]
    else:
        items = as_list(raw_tree, tree_path)
        if not items or len(items) > MAX_DRAFT_TOKENS:
            raise ConfigError(
                f"{tree_path}: kind eagle3 expects 1..{MAX_DRAFT_TOKENS} step widths, "
                f"got {describe(raw_tree)}"
            )
        widths = [
            as_int(item, f"{tree_path}[{index}]", 1, MAX_DRAFT_TOKENS)
            for index, item in enumerate(items)
        ]
        if raw_count is not None and count != len(widths):
            raise ConfigError(
                f"{join_path(params_path, 'num_speculative_tokens')} ({count}) and {tree_path} "
                f"(depth {len(widths)}) disagree for kind eagle3; give one"
            )
    depth = len(widths)
    drafted = sum(widths)
    full_budget = drafted + 1
    budget = full_budget
    raw_budget = params.get("verify_token_budget")
    if raw_budget is not None:
        budget = as_int(
            raw_budget,
            f"{join_path(params_path, 'verify_token_budget')} (kind eagle3)",
            2,
            full_budget,
        )
    is_tree = any(width > 1 for width in widths)
    normalized: dict[str, Any] = {"num_speculative_tokens": depth, "verify_token_budget": budget}
    tree: tuple[int, ...] | None = None
    if is_tree:
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
    field = join_path(join_path(path, "draft_config"), "block_size")
    if raw is None:
        nested = draft_config.get("dflash_config")
        if isinstance(nested, dict):
            raw = nested.get("block_size")
            field = join_path(
                join_path(join_path(path, "draft_config"), "dflash_config"), "block_size"
            )
    if raw is None:
        return None
    return as_int(raw, field, 1, MAX_DRAFT_TOKENS + 1)
