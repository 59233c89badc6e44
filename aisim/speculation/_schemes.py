"""The registry of speculation kinds: params, draft needs, backends and gates.

One ``SchemeSpec`` per kind (docs/design.md#speculation-kinds). The config edge
(``aisim.config``) validates a block's params against it and builds a ``SchemeGeometry``;
``check_gates`` applies the model-family and backend gates to typed inputs. Compiled by mypyc.
"""

from __future__ import annotations

from typing import Any, Final

from aisim._text import join_path
from aisim.catalogue import ModelSpec
from aisim.errors import ConfigError

#: Largest number of draft tokens (per step width or chain length) a params field accepts.
MAX_DRAFT_TOKENS: Final = 64

DRAFT_NONE: Final = "none"  # the kind takes no separate draft: draft fields are rejected
DRAFT_CONFIG: Final = "draft_config"  # needs the draft's config.json mapping
DRAFT_PATH: Final = "draft_model_path"  # needs a draft checkpoint identity
DRAFT_HEADS: Final = "draft_heads"  # needs the heads' config.json (Medusa, MLP speculator)

BACKENDS: Final = ("vllm", "sglang")

#: The acceptance forms (docs/design.md#acceptance), by config key (at most one per block).
ACCEPTANCE_KEYS: Final = (
    "expected_accepted_tokens",  # mean accepted drafts E[a] in [0, d]
    "acceptance_rates",  # d conditional rates
    "unconditional_acceptance_rates",  # d unconditional rates P(a >= i)
    "acceptance_length",  # AL = 1 + E[a] in [1, d + 1]
    "acceptance_rate",  # one i.i.d. rate alpha
)
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
        "separate small model, K sequential draft steps (one pass with parallel_drafting)",
    ),
    "suffix": SchemeSpec(
        "suffix",
        (
            "num_speculative_tokens",
            "suffix_decoding_max_tree_depth",
            "suffix_decoding_max_cached_requests",
            "suffix_decoding_max_spec_factor",
            "suffix_decoding_min_token_prob",
        ),
        DRAFT_NONE,
        ("vllm",),
        (),
        "suffix-tree lookup on the host (Arctic Inference): a dynamic number of drafts per round",
    ),
    "medusa": SchemeSpec(
        "medusa",
        ("num_speculative_tokens",),
        DRAFT_HEADS,
        ("vllm",),
        (),
        "Medusa heads on the target's hidden state: one draft pass, one token per head",
    ),
    "mlp_speculator": SchemeSpec(
        "mlp_speculator",
        ("num_speculative_tokens",),
        DRAFT_HEADS,
        ("vllm",),
        (),
        "MLP speculator stages on the target's hidden state, one per draft token",
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


def check_gates(
    spec: SchemeSpec,
    model: ModelSpec | None,
    draft_model: ModelSpec | None,
    backend: str | None,
    role: str | None,
    path: str,
) -> None:
    """Reject scheme/model/backend/role combinations the kind does not support (docs/design.md#speculation-kinds).

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
