"""``ResolvedSpeculation``: the frozen result of resolving one speculation config.

Plain read-only object (properties over private attributes) so mypyc compiles it to a native
class. ``to_dict`` shows every accepted field; ``cost_identity`` is computed once, on first use.
Compiled by mypyc.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, Final

from aisim.catalogue import ModelSpec
from aisim.errors import ConfigError
from aisim.speculation._acceptance import AcceptanceProfile
from aisim.speculation._adaptive import AdaptiveSpeculation
from aisim.speculation._schemes import MAX_DRAFT_TOKENS

# One encoder, built once: ``json.dumps`` with non-default options builds a new one per call.
_COMPACT_JSON: Final = json.JSONEncoder(sort_keys=True, separators=(",", ":"), allow_nan=False)

#: Replay simulates chains of this many draft tokens (docs/design.md#replay): every chain a
#: block can name (``MAX_DRAFT_TOKENS``). Nothing in replay is sized by the depth beyond
#: per-depth lists (acceptance thresholds, the accepted-length histogram).
REPLAY_MIN_DEPTH: Final = 1
REPLAY_MAX_DEPTH: Final = MAX_DRAFT_TOKENS


class ResolvedSpeculation:
    """One resolved speculation configuration (read-only).

    ``num_draft_tokens`` is what the drafter proposes per request per round, ``verify_width``
    the target query tokens per request in the verification pass (``d + 1`` for chains, the
    verify token budget for EAGLE-3 trees), ``max_accepted_draft_tokens`` the most drafts one
    round can accept (``verify_width - 1`` for chains, the tree depth for trees).
    """

    def __init__(
        self,
        kind: str,
        params: dict[str, Any],
        num_draft_tokens: int,
        verify_width: int,
        max_accepted_draft_tokens: int,
        tree_shape: tuple[int, ...] | None,
        draft_model_path: str | None,
        draft_config: dict[str, Any] | None,
        draft_model: ModelSpec | None,
        draft_identity: str | None,
        identity_payload: dict[str, Any],
        acceptance: AcceptanceProfile | None,
        seed: int | None,
        num_draft_layers: int | None,
        draft_tp_size: int | None,
        draft_vocab_size: int | None,
        path: str,
        acceptance_source: dict[str, Any] | None = None,
        undrafted_rounds: int = 0,
        draft_length_schedule: list[list[int]] | None = None,
        adaptive: AdaptiveSpeculation | None = None,
        acceptance_trace: object = None,
        suffix_lookup_us: float | None = None,
    ) -> None:
        self._kind = kind
        self._params = params
        self._num_draft_tokens = num_draft_tokens
        self._verify_width = verify_width
        self._max_accepted = max_accepted_draft_tokens
        self._tree_shape = tree_shape
        self._draft_model_path = draft_model_path
        self._draft_config = draft_config
        self._draft_model = draft_model
        self._draft_identity = draft_identity
        self._identity_payload = identity_payload
        self._cost_identity = ""
        self._acceptance = acceptance
        self._seed = seed
        self._num_draft_layers = num_draft_layers
        self._draft_tp_size = draft_tp_size
        self._draft_vocab_size = draft_vocab_size
        self._path = path
        self._acceptance_source = acceptance_source
        self._undrafted_rounds = undrafted_rounds
        self._draft_length_schedule = draft_length_schedule
        self._adaptive = adaptive
        self._acceptance_trace = acceptance_trace
        self._suffix_lookup_us = suffix_lookup_us

    @property
    def kind(self) -> str:
        """Registered kind: none, mtp, ngram, eagle3, dflash, dspark, draft_model, suffix,
        medusa or mlp_speculator."""
        return self._kind

    @property
    def enabled(self) -> bool:
        """False only for kind ``none``."""
        return self._kind != "none"

    @property
    def params(self) -> dict[str, Any]:
        """Normalized params (defaults filled, synonyms collapsed); a fresh copy on each call."""
        return _copy_json(self._params)

    @property
    def num_draft_tokens(self) -> int:
        return self._num_draft_tokens

    @property
    def verify_width(self) -> int:
        return self._verify_width

    @property
    def max_accepted_draft_tokens(self) -> int:
        return self._max_accepted

    @property
    def is_tree(self) -> bool:
        """True when some draft step proposes more than one candidate (EAGLE-3 trees)."""
        return self._tree_shape is not None

    @property
    def tree_shape(self) -> tuple[int, ...] | None:
        """Candidates per draft step for trees; ``None`` for chains."""
        return self._tree_shape

    @property
    def draft_model_path(self) -> str | None:
        return self._draft_model_path

    @property
    def draft_config(self) -> dict[str, Any] | None:
        """The draft's config mapping as given (a fresh copy), or ``None``."""
        if self._draft_config is None:
            return None
        return _copy_json(self._draft_config)

    @property
    def draft_model(self) -> ModelSpec | None:
        """Draft geometry parsed from ``draft_config`` (``None`` when no config was given)."""
        return self._draft_model

    @property
    def draft_vocab_size(self) -> int | None:
        """Draft LM-head vocabulary (EAGLE-3 ``draft_vocab_size``, else the draft's vocab)."""
        return self._draft_vocab_size

    @property
    def draft_identity(self) -> str | None:
        """Which draft: its checkpoint path and/or a digest of its geometry; ``None`` if none."""
        return self._draft_identity

    @property
    def acceptance(self) -> AcceptanceProfile | None:
        return self._acceptance

    @property
    def acceptance_source(self) -> dict[str, Any] | None:
        """Where ``acceptance_from`` read the acceptance (format, files with SHA-256, series
        labels, counts; a fresh copy), or ``None`` when the block gave it inline."""
        if self._acceptance_source is None:
            return None
        return _copy_json(self._acceptance_source)

    @property
    def seed(self) -> int | None:
        return self._seed

    @property
    def undrafted_rounds(self) -> int:
        """``ngram``: the first decode rounds of every request that propose no drafts (no
        n-gram of the context matches yet); 0 for every other kind. Like acceptance, a
        property of the workload: it never enters the identity."""
        return self._undrafted_rounds

    @property
    def suffix_lookup_us_per_request(self) -> float | None:
        """suffix: the host's suffix-tree lookup time per request per round (microseconds) the
        user measured, or ``None``. A cost of the host, not of the scheme: it never enters the
        identity."""
        return self._suffix_lookup_us

    @property
    def draft_length_schedule(self) -> list[list[int]] | None:
        """vLLM's ``num_speculative_tokens_per_batch_size``, normalized (``[[batch_lo,
        batch_hi, K], ...]`` sorted, each K capped at ``num_draft_tokens``; a fresh copy), or
        ``None`` for a fixed draft length."""
        if self._draft_length_schedule is None:
            return None
        return [list(entry) for entry in self._draft_length_schedule]

    @property
    def adaptive_policy(self) -> AdaptiveSpeculation | None:
        """SGLang's adaptive speculation policy (``initial_steps`` and the batch-size tiers with
        every EMA setting filled), or ``None``."""
        return self._adaptive

    @property
    def adaptive(self) -> dict[str, Any] | None:
        """``adaptive_policy`` in its JSON form (a fresh dict), or ``None``."""
        if self._adaptive is None:
            return None
        return self._adaptive.to_dict()

    @property
    def acceptance_trace(self) -> object:
        """The measured per-request acceptance trace replay consumes (an
        ``aisim.speculation.AcceptanceTrace``), or ``None``."""
        return self._acceptance_trace

    @property
    def num_draft_layers(self) -> int | None:
        """dspark: draft layers run per round; ``None`` for other kinds."""
        return self._num_draft_layers

    @property
    def draft_tp_size(self) -> int | None:
        """draft_model: tensor parallelism of the draft (``None``: same as the target)."""
        return self._draft_tp_size

    @property
    def path(self) -> str:
        """The config field path this block was read from (used in error messages)."""
        return self._path

    @property
    def cost_identity(self) -> str:
        """SHA-256 hex of canonical JSON {kind, normalized params, draft identity}.

        Equivalent inputs share it; acceptance and seed never enter it.
        """
        if not self._cost_identity:
            self._cost_identity = sha256_of_json(self._identity_payload)
        return self._cost_identity

    @property
    def replay_depth(self) -> int:
        """Draft tokens per round for replay: chains only (of 1..64 drafts), else
        ``ConfigError``."""
        where = f"{self._path}: kind {self._kind}"
        if self._kind == "none":
            raise ConfigError(f"{where}: speculation is disabled; there is no replay depth")
        if self._tree_shape is not None:
            shape = ", ".join(str(width) for width in self._tree_shape)
            raise ConfigError(f"{where}: replay supports chains only, got tree_shape [{shape}]")
        depth = self._num_draft_tokens
        if self._verify_width != depth + 1:
            raise ConfigError(
                f"{where}: replay needs verify width = draft tokens + 1 = {depth + 1}, "
                f"got {self._verify_width}"
            )
        if depth < REPLAY_MIN_DEPTH or depth > REPLAY_MAX_DEPTH:
            raise ConfigError(
                f"{where}: replay supports {REPLAY_MIN_DEPTH}..{REPLAY_MAX_DEPTH} draft tokens "
                f"per round, got {depth}"
            )
        return depth

    def to_dict(self) -> dict[str, Any]:
        """Every resolved field, JSON-ready, in a stable key order (``acceptance_source`` only
        when acceptance came from an engine metrics file, ``undrafted_rounds`` only when not
        0)."""
        draft: dict[str, Any] | None = None
        if self._draft_model is not None:
            draft = {"name": self._draft_model.name, "family": self._draft_model.family}
            for key, value in self._draft_model.geometry_items():
                draft[key] = value
        acceptance: dict[str, object] | None = None
        if self._acceptance is not None:
            acceptance = self._acceptance.to_dict()
        result: dict[str, Any] = {
            "kind": self._kind,
            "enabled": self.enabled,
            "params": self.params,
            "num_draft_tokens": self._num_draft_tokens,
            "verify_width": self._verify_width,
            "max_accepted_draft_tokens": self._max_accepted,
            "is_tree": self.is_tree,
            "tree_shape": list(self._tree_shape) if self._tree_shape is not None else None,
            "num_draft_layers": self._num_draft_layers,
            "draft_tp_size": self._draft_tp_size,
            "draft_model_path": self._draft_model_path,
            "draft_config": self.draft_config,
            "draft_model": draft,
            "draft_vocab_size": self._draft_vocab_size,
            "draft_identity": self._draft_identity,
            "cost_identity": self.cost_identity,
            "acceptance": acceptance,
            "seed": self._seed,
        }
        if self._acceptance_source is not None:
            result["acceptance_source"] = self.acceptance_source
        if self._undrafted_rounds:
            result["undrafted_rounds"] = self._undrafted_rounds
        if self._suffix_lookup_us is not None:
            result["suffix_lookup_us_per_request"] = self._suffix_lookup_us
        if self._draft_length_schedule is not None:
            result["draft_length_schedule"] = self.draft_length_schedule
        if self._adaptive is not None:
            result["adaptive"] = self.adaptive
        return result

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ResolvedSpeculation):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def __hash__(self) -> int:
        return hash(self.cost_identity)

    def __repr__(self) -> str:
        return (
            f"ResolvedSpeculation(kind={self._kind!r}, params={self._params!r}, "
            f"verify_width={self._verify_width}, cost_identity={self.cost_identity[:12]}...)"
        )


def _copy_json(value: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a JSON-shaped mapping (dicts, lists, scalars)."""
    result: dict[str, Any] = {}
    for key, item in value.items():
        result[key] = _copy_item(item)
    return result


def _copy_item(value: Any) -> Any:
    if isinstance(value, dict):
        return _copy_json(value)
    if isinstance(value, list):
        return [_copy_item(item) for item in value]
    return value


def sha256_of_json(value: object) -> str:
    """SHA-256 hex of compact canonical JSON (sorted keys, no spaces, ASCII, no NaN)."""
    return hashlib.sha256(_COMPACT_JSON.encode(value).encode("utf-8")).hexdigest()
