"""Every registered kind: geometry of valid params (docs/design.md#speculation-kinds table) and rejection of invalid ones."""

from __future__ import annotations

from typing import Any

import pytest

from aisim import ConfigError, ResolvedSpeculation, resolve_speculation
from aisim.speculation import KINDS


def test_registry_lists_the_kinds() -> None:
    assert KINDS == (
        "none",
        "mtp",
        "ngram",
        "eagle3",
        "dflash",
        "dspark",
        "draft_model",
        "suffix",
        "medusa",
        "mlp_speculator",
    )


@pytest.mark.parametrize("block", [None, {}, {"kind": "none"}, {"kind": "none", "params": {}}])
def test_none_is_disabled(block: object) -> None:
    resolved = resolve_speculation(block)
    assert resolved.kind == "none"
    assert not resolved.enabled
    assert resolved.params == {}
    assert (resolved.num_draft_tokens, resolved.verify_width) == (0, 1)
    assert resolved.max_accepted_draft_tokens == 0
    assert not resolved.is_tree
    assert resolved.acceptance is None
    assert resolved.draft_identity is None


def test_disabled_blocks_share_one_identity() -> None:
    identities = {resolve_speculation(b).cost_identity for b in (None, {}, {"kind": "none"})}
    assert len(identities) == 1


def test_mtp_chain() -> None:
    resolved = resolve_speculation({"kind": "mtp", "params": {"depth": 3}})
    assert resolved.params == {"depth": 3}
    assert resolved.num_draft_tokens == 3
    assert resolved.verify_width == 4
    assert resolved.max_accepted_draft_tokens == 3
    assert not resolved.is_tree
    assert resolved.tree_shape is None
    assert resolved.replay_depth == 3


def test_mtp_num_speculative_tokens_is_a_synonym_for_depth() -> None:
    resolved = resolve_speculation({"kind": "mtp", "params": {"num_speculative_tokens": 2}})
    assert resolved.params == {"depth": 2}
    assert resolved.verify_width == 3


def test_ngram_chain_with_default_trigger_rate() -> None:
    resolved = resolve_speculation({"kind": "ngram", "params": {"num_speculative_tokens": 4}})
    assert resolved.params == {"num_speculative_tokens": 4, "trigger_rate": 1.0}
    assert (resolved.num_draft_tokens, resolved.verify_width) == (4, 5)
    assert resolved.draft_model is None


def test_eagle3_defaults_to_a_chain_of_three(eagle3_draft: dict[str, Any]) -> None:
    resolved = resolve_speculation({"kind": "eagle3", "draft_config": eagle3_draft})
    assert resolved.params == {"num_speculative_tokens": 3, "verify_token_budget": 4}
    assert (resolved.num_draft_tokens, resolved.verify_width) == (3, 4)
    assert resolved.max_accepted_draft_tokens == 3
    assert not resolved.is_tree
    assert resolved.draft_model is not None
    assert resolved.draft_model.num_layers == 1
    assert resolved.draft_model.hidden_size == 4096
    assert resolved.draft_vocab_size == 32000
    assert resolved.replay_depth == 3


def test_eagle3_tree(eagle3_draft: dict[str, Any]) -> None:
    # tree [4, 2, 1]: 7 drafted candidates, verify budget 7 + 1 = 8, at most 3 accepted (depth)
    resolved = resolve_speculation(
        {"kind": "eagle3", "params": {"tree_shape": [4, 2, 1]}, "draft_config": eagle3_draft}
    )
    assert resolved.is_tree
    assert resolved.tree_shape == (4, 2, 1)
    assert resolved.num_draft_tokens == 7
    assert resolved.verify_width == 8
    assert resolved.max_accepted_draft_tokens == 3
    assert resolved.params == {
        "num_speculative_tokens": 3,
        "verify_token_budget": 8,
        "tree_shape": [4, 2, 1],
    }


def test_eagle3_tree_with_smaller_verify_budget(eagle3_draft: dict[str, Any]) -> None:
    resolved = resolve_speculation(
        {
            "kind": "eagle3",
            "params": {"tree_shape": [4, 2, 1], "verify_token_budget": 6},
            "draft_config": eagle3_draft,
        }
    )
    assert resolved.verify_width == 6
    assert resolved.max_accepted_draft_tokens == 3


def test_eagle3_all_ones_tree_is_the_chain(eagle3_draft: dict[str, Any]) -> None:
    tree = resolve_speculation(
        {"kind": "eagle3", "params": {"tree_shape": [1, 1]}, "draft_config": eagle3_draft}
    )
    chain = resolve_speculation(
        {"kind": "eagle3", "params": {"num_speculative_tokens": 2}, "draft_config": eagle3_draft}
    )
    assert not tree.is_tree
    assert tree.params == chain.params == {"num_speculative_tokens": 2, "verify_token_budget": 3}
    assert tree.cost_identity == chain.cost_identity


def test_dflash_defaults_to_block_size_minus_one(block_draft: dict[str, Any]) -> None:
    resolved = resolve_speculation({"kind": "dflash", "draft_config": block_draft})
    assert resolved.params == {"num_draft_tokens": 15}
    assert (resolved.num_draft_tokens, resolved.verify_width) == (15, 16)
    explicit = resolve_speculation(
        {"kind": "dflash", "params": {"num_draft_tokens": 15}, "draft_config": block_draft}
    )
    assert explicit.cost_identity == resolved.cost_identity


def test_dflash_reads_block_size_under_dflash_config(block_draft: dict[str, Any]) -> None:
    del block_draft["block_size"]
    block_draft["dflash_config"] = {"block_size": 8, "target_layer_ids": [1, 9, 17, 25, 33]}
    resolved = resolve_speculation({"kind": "dflash", "draft_config": block_draft})
    assert resolved.num_draft_tokens == 7


def test_dflash_fewer_drafts_than_the_block(block_draft: dict[str, Any]) -> None:
    resolved = resolve_speculation(
        {"kind": "dflash", "params": {"num_draft_tokens": 4}, "draft_config": block_draft}
    )
    assert (resolved.num_draft_tokens, resolved.verify_width) == (4, 5)
    assert resolved.replay_depth == 4


def test_dspark_defaults_from_the_draft(block_draft: dict[str, Any]) -> None:
    block_draft["block_size"] = 4
    resolved = resolve_speculation({"kind": "dspark", "draft_config": block_draft})
    assert resolved.params == {"num_draft_tokens": 4, "num_draft_layers": 5}
    assert resolved.num_draft_layers == 5
    assert (resolved.num_draft_tokens, resolved.verify_width) == (4, 5)


def test_dspark_explicit_params(block_draft: dict[str, Any]) -> None:
    del block_draft["block_size"]
    resolved = resolve_speculation(
        {
            "kind": "dspark",
            "params": {"num_draft_tokens": 3, "num_draft_layers": 2},
            "draft_config": block_draft,
        }
    )
    assert (resolved.num_draft_tokens, resolved.verify_width, resolved.num_draft_layers) == (
        3,
        4,
        2,
    )


def test_draft_model_path_only() -> None:
    resolved = resolve_speculation(
        {
            "kind": "draft_model",
            "params": {"num_speculative_tokens": 4},
            "draft_model_path": "Qwen/Qwen3-0.6B",
        }
    )
    assert (resolved.num_draft_tokens, resolved.verify_width) == (4, 5)
    assert resolved.draft_model is None
    assert resolved.draft_tp_size is None  # same as the target
    assert resolved.draft_identity == "Qwen/Qwen3-0.6B"
    assert resolved.params == {"num_speculative_tokens": 4, "draft_tp_size": None}


def test_draft_model_tp_defaults_to_target_tp(small_draft: dict[str, Any]) -> None:
    block = {
        "kind": "draft_model",
        "params": {"num_speculative_tokens": 2},
        "draft_model_path": "Qwen/Qwen3-0.6B",
        "draft_config": small_draft,
    }
    resolved = resolve_speculation(block, tensor_parallel=2)
    assert resolved.draft_tp_size == 2
    assert resolved.draft_model is not None and resolved.draft_model.num_layers == 28
    explicit = dict(block, params={"num_speculative_tokens": 2, "draft_tp_size": 2})
    assert resolve_speculation(explicit).cost_identity == resolved.cost_identity


def test_resolved_is_read_only() -> None:
    resolved = resolve_speculation({"kind": "mtp", "params": {"depth": 2}})
    assert isinstance(resolved, ResolvedSpeculation)
    with pytest.raises(AttributeError):
        resolved.kind = "ngram"  # type: ignore[misc]
    params = resolved.params
    params["depth"] = 5
    assert resolved.params == {"depth": 2}


# -- invalid params per kind ---------------------------------------------------------------

INVALID: list[tuple[str, dict[str, Any], str, str]] = [
    # (kind, params, field in message, words in message)
    ("none", {"depth": 1}, "speculation.params", "kind none takes no params"),
    ("mtp", {}, "speculation.params.depth", "required for kind mtp"),
    ("mtp", {"depth": 0}, "speculation.params.depth", "1..64"),
    ("mtp", {"depth": 65}, "speculation.params.depth", "1..64"),
    ("mtp", {"depth": 2.5}, "speculation.params.depth", "integer"),
    ("mtp", {"depth": True}, "speculation.params.depth", "integer"),
    ("mtp", {"depth": "3"}, "speculation.params.depth", "integer"),
    ("mtp", {"depth": 3, "num_speculative_tokens": 2}, "speculation.params.depth", "disagree"),
    ("mtp", {"depth": 3, "width": 1}, "speculation.params", "width"),
    ("ngram", {}, "speculation.params.num_speculative_tokens", "required for kind ngram"),
    ("ngram", {"num_speculative_tokens": -1}, "num_speculative_tokens", "1..64"),
    ("ngram", {"num_speculative_tokens": 3, "trigger_rate": 0.5}, "trigger_rate", "only 1.0"),
    ("ngram", {"num_speculative_tokens": 3, "trigger_rate": 1.5}, "trigger_rate", "0.0..1.0"),
    ("ngram", {"num_speculative_tokens": 3, "prompt_lookup_max": 4}, "params", "prompt_lookup_max"),
    ("eagle3", {"tree_shape": []}, "speculation.params.tree_shape", "step widths"),
    ("eagle3", {"tree_shape": [2, 0]}, "speculation.params.tree_shape[1]", "1..64"),
    ("eagle3", {"tree_shape": "4,2"}, "speculation.params.tree_shape", "list"),
    ("eagle3", {"tree_shape": [2, 1], "num_speculative_tokens": 3}, "tree_shape", "disagree"),
    (
        "eagle3",
        {"num_speculative_tokens": 3, "verify_token_budget": 5},
        "verify_token_budget",
        "2..4",
    ),
    (
        "eagle3",
        {"num_speculative_tokens": 3, "verify_token_budget": 1},
        "verify_token_budget",
        "2..4",
    ),
    ("dflash", {"num_draft_tokens": 16}, "speculation.params.num_draft_tokens", "block_size - 1"),
    ("dflash", {"num_draft_tokens": 0}, "speculation.params.num_draft_tokens", "1..64"),
    ("dflash", {"block_size": 8}, "speculation.params", "block_size"),
    ("dspark", {"num_draft_layers": 0}, "speculation.params.num_draft_layers", "1..64"),
    (
        "draft_model",
        {},
        "speculation.params.num_speculative_tokens",
        "required for kind draft_model",
    ),
    ("draft_model", {"num_speculative_tokens": 2, "draft_tp_size": 0}, "draft_tp_size", "1..1024"),
]


@pytest.mark.parametrize(("kind", "params", "field", "words"), INVALID)
def test_invalid_params_are_rejected(
    kind: str,
    params: dict[str, Any],
    field: str,
    words: str,
    eagle3_draft: dict[str, Any],
    block_draft: dict[str, Any],
) -> None:
    block: dict[str, Any] = {"kind": kind, "params": params}
    if kind == "eagle3":
        block["draft_config"] = eagle3_draft
    if kind in ("dflash", "dspark"):
        block["draft_config"] = block_draft
    if kind == "draft_model":
        block["draft_model_path"] = "Qwen/Qwen3-0.6B"
    with pytest.raises(ConfigError) as caught:
        resolve_speculation(block)
    message = str(caught.value)
    assert field in message
    assert words in message


def test_dflash_without_block_size_needs_num_draft_tokens(block_draft: dict[str, Any]) -> None:
    del block_draft["block_size"]
    with pytest.raises(ConfigError, match=r"speculation\.params\.num_draft_tokens: required"):
        resolve_speculation({"kind": "dflash", "draft_config": block_draft})


def test_dflash_block_of_one_is_rejected(block_draft: dict[str, Any]) -> None:
    block_draft["block_size"] = 1
    with pytest.raises(ConfigError, match=r"speculation\.draft_config\.block_size"):
        resolve_speculation({"kind": "dflash", "draft_config": block_draft})


def test_unknown_kind_lists_the_registered_kinds() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_speculation({"kind": "lookahead"})
    message = str(caught.value)
    assert "speculation.kind" in message and "'lookahead'" in message
    for kind in KINDS:
        assert kind in message


def test_kind_is_required_when_other_fields_are_given() -> None:
    with pytest.raises(ConfigError, match=r"speculation\.kind: required"):
        resolve_speculation({"params": {"depth": 3}})


# -- draft requirements --------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["none", "mtp", "ngram"])
@pytest.mark.parametrize("field", ["draft_model_path", "draft_config"])
def test_kinds_without_a_draft_reject_draft_fields(
    kind: str, field: str, small_draft: dict[str, Any]
) -> None:
    params = {"mtp": {"depth": 2}, "ngram": {"num_speculative_tokens": 2}, "none": {}}[kind]
    value: object = small_draft if field == "draft_config" else "some/draft"
    with pytest.raises(ConfigError) as caught:
        resolve_speculation({"kind": kind, "params": params, field: value})
    assert f"speculation.{field}" in str(caught.value)
    assert f"kind {kind} takes no separate draft" in str(caught.value)


@pytest.mark.parametrize("kind", ["eagle3", "dflash", "dspark"])
def test_draft_config_kinds_say_they_need_one(kind: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_speculation({"kind": kind, "params": {}, "draft_model_path": "x/y"})
    assert "speculation.draft_config" in str(caught.value)
    assert f"kind {kind} needs the draft's config.json" in str(caught.value)


def test_draft_model_says_it_needs_a_path(small_draft: dict[str, Any]) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_speculation(
            {
                "kind": "draft_model",
                "params": {"num_speculative_tokens": 2},
                "draft_config": small_draft,
            }
        )
    assert "speculation.draft_model_path" in str(caught.value)
    assert "needs the draft checkpoint identity" in str(caught.value)


def test_incomplete_draft_config_names_the_missing_field(eagle3_draft: dict[str, Any]) -> None:
    del eagle3_draft["hidden_size"]
    with pytest.raises(ConfigError, match=r"speculation\.draft_config\.hidden_size: required"):
        resolve_speculation({"kind": "eagle3", "draft_config": eagle3_draft})
