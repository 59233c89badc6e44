"""cost_identity: normalized (equivalent inputs share it), acceptance/seed-free, draft-aware;
replay depth rules; every accepted field visible in ``to_dict``."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest

from aisim import ConfigError, resolve_speculation


def _identity(block: dict[str, Any]) -> str:
    return resolve_speculation(block).cost_identity


def test_identity_is_sha256_of_canonical_json_by_hand() -> None:
    # The documented payload for mtp depth 3, hashed here independently of the resolver.
    payload = {"draft": {"geometry": None, "path": None}, "kind": "mtp", "params": {"depth": 3}}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"))
    expected = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert _identity({"kind": "mtp", "params": {"depth": 3}}) == expected
    assert len(expected) == 64


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ({"kind": "mtp", "params": {"depth": 3}}, {"kind": "mtp", "params": {"depth": 3.0}}),
        (
            {"kind": "mtp", "params": {"depth": 3}},
            {"kind": "mtp", "params": {"num_speculative_tokens": 3}},
        ),
        (
            {"kind": "ngram", "params": {"num_speculative_tokens": 2}},
            {"kind": "ngram", "params": {"num_speculative_tokens": 2, "trigger_rate": 1}},
        ),
        (
            {"kind": "mtp", "params": {"depth": 2}, "expected_accepted_tokens": 0.5, "seed": 1},
            {"kind": "mtp", "params": {"depth": 2}, "acceptance_rates": [0.9, 0.1], "seed": 99},
        ),
        (
            {"kind": "mtp", "params": {"depth": 2}},
            {"kind": "mtp", "params": {"depth": 2}, "seed": 7},
        ),
    ],
)
def test_equivalent_inputs_share_one_identity(left: dict[str, Any], right: dict[str, Any]) -> None:
    assert _identity(left) == _identity(right)


def test_eagle3_default_filled_equals_explicit(eagle3_draft: dict[str, Any]) -> None:
    default = _identity({"kind": "eagle3", "draft_config": eagle3_draft})
    explicit = _identity(
        {
            "kind": "eagle3",
            "params": {"num_speculative_tokens": 3, "verify_token_budget": 4},
            "draft_config": eagle3_draft,
        }
    )
    as_tree = _identity(
        {"kind": "eagle3", "params": {"tree_shape": [1, 1, 1]}, "draft_config": eagle3_draft}
    )
    assert default == explicit == as_tree


def test_draft_config_fields_that_do_not_change_geometry_do_not_change_identity(
    eagle3_draft: dict[str, Any],
) -> None:
    base = _identity({"kind": "eagle3", "draft_config": eagle3_draft})
    noisy = dict(eagle3_draft, transformers_version="4.51.0", rms_norm_eps=1e-6)
    assert _identity({"kind": "eagle3", "draft_config": noisy}) == base


@pytest.mark.parametrize(
    ("left", "right"),
    [
        ({"kind": "mtp", "params": {"depth": 2}}, {"kind": "mtp", "params": {"depth": 3}}),
        (
            {"kind": "mtp", "params": {"depth": 2}},
            {"kind": "ngram", "params": {"num_speculative_tokens": 2}},
        ),
        (
            {
                "kind": "draft_model",
                "params": {"num_speculative_tokens": 2},
                "draft_model_path": "a",
            },
            {
                "kind": "draft_model",
                "params": {"num_speculative_tokens": 2},
                "draft_model_path": "b",
            },
        ),
        (
            {
                "kind": "draft_model",
                "params": {"num_speculative_tokens": 2, "draft_tp_size": 1},
                "draft_model_path": "a",
            },
            {
                "kind": "draft_model",
                "params": {"num_speculative_tokens": 2, "draft_tp_size": 2},
                "draft_model_path": "a",
            },
        ),
    ],
)
def test_different_configs_have_different_identities(
    left: dict[str, Any], right: dict[str, Any]
) -> None:
    assert _identity(left) != _identity(right)


def test_draft_geometry_changes_identity(eagle3_draft: dict[str, Any]) -> None:
    base = resolve_speculation({"kind": "eagle3", "draft_config": eagle3_draft})
    two_layers = resolve_speculation(
        {"kind": "eagle3", "draft_config": dict(eagle3_draft, num_hidden_layers=2)}
    )
    other_vocab = resolve_speculation(
        {"kind": "eagle3", "draft_config": dict(eagle3_draft, draft_vocab_size=16000)}
    )
    identities = {base.cost_identity, two_layers.cost_identity, other_vocab.cost_identity}
    assert len(identities) == 3
    assert base.draft_identity is not None and base.draft_identity.startswith("geometry:")


def test_draft_identity_combines_path_and_geometry(eagle3_draft: dict[str, Any]) -> None:
    resolved = resolve_speculation(
        {"kind": "eagle3", "draft_model_path": "org/head", "draft_config": eagle3_draft}
    )
    assert resolved.draft_identity is not None
    assert resolved.draft_identity.startswith("org/head@geometry:")


def test_identity_is_stable_across_calls() -> None:
    block = {"kind": "ngram", "params": {"num_speculative_tokens": 3}}
    assert len({_identity(block) for _ in range(5)}) == 1


# -- replay depth --------------------------------------------------------------------------


@pytest.mark.parametrize("depth", [1, 2, 3, 4, 5, 6, 7, 64])
def test_replay_accepts_every_chain(depth: int) -> None:
    # Every chain a block can name (1..64 drafts) replays: the former 1..5 bound was a scope
    # limit, not something replay sized by the depth.
    assert resolve_speculation({"kind": "mtp", "params": {"depth": depth}}).replay_depth == depth


def test_replay_rejects_trees(eagle3_draft: dict[str, Any]) -> None:
    resolved = resolve_speculation(
        {"kind": "eagle3", "params": {"tree_shape": [2, 1]}, "draft_config": eagle3_draft}
    )
    with pytest.raises(ConfigError, match=r"chains only, got tree_shape \[2, 1\]"):
        _ = resolved.replay_depth


def test_replay_rejects_verify_width_other_than_depth_plus_one(
    eagle3_draft: dict[str, Any],
) -> None:
    resolved = resolve_speculation(
        {
            "kind": "eagle3",
            "params": {"num_speculative_tokens": 3, "verify_token_budget": 3},
            "draft_config": eagle3_draft,
        }
    )
    assert resolved.max_accepted_draft_tokens == 2
    with pytest.raises(ConfigError, match="verify width = draft tokens \\+ 1 = 4, got 3"):
        _ = resolved.replay_depth


def test_replay_rejects_disabled() -> None:
    with pytest.raises(ConfigError, match="disabled"):
        _ = resolve_speculation(None).replay_depth


# -- every accepted field is visible ---------------------------------------------------------


def test_to_dict_shows_every_accepted_field(small_draft: dict[str, Any]) -> None:
    block = {
        "kind": "draft_model",
        "params": {"num_speculative_tokens": 2, "draft_tp_size": 1},
        "draft_model_path": "Qwen/Qwen3-0.6B",
        "draft_config": small_draft,
        "acceptance_rates": [0.5, 0.5],
        "seed": 5,
    }
    shown = resolve_speculation(block).to_dict()
    assert shown["kind"] == "draft_model"
    assert shown["params"] == {"num_speculative_tokens": 2, "draft_tp_size": 1}
    assert shown["draft_model_path"] == "Qwen/Qwen3-0.6B"
    assert shown["draft_config"] == small_draft
    assert shown["draft_model"]["num_layers"] == 28
    assert shown["acceptance"]["provenance"] == "conditional"
    assert shown["acceptance"]["conditional_rates"] == [0.5, 0.5]
    assert shown["seed"] == 5
    assert json.loads(json.dumps(shown, allow_nan=False)) == shown
