"""A drafter's config.json is read strictly (issue 17): geometry that cannot be zero is refused
at 0 (``head_dim: 0`` made the draft KV 0 bytes and the round cheaper), and numeric strings are
errors, not integers (``num_key_value_heads: '8'`` used to read as 8)."""

from __future__ import annotations

from typing import Any

import pytest

from aisim import ConfigError
from aisim.config import resolve_speculation


def resolve(draft: dict[str, Any]) -> object:
    block = {"kind": "dflash", "params": {"num_draft_tokens": 7}, "draft_config": draft}
    return resolve_speculation(block, model="Qwen/Qwen3-8B", backend="vllm")


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        (
            "head_dim",
            0,
            "speculation.draft_config.head_dim: expected an integer in 1..16777216, got 0",
        ),
        (
            "num_key_value_heads",
            "8",
            "speculation.draft_config.num_key_value_heads: expected an integer in 1..16777216, "
            "got '8' (str)",
        ),
        (
            "intermediate_size",
            0,
            "speculation.draft_config.intermediate_size: expected an integer in 1..16777216, got 0",
        ),
        (
            "hidden_size",
            1e300,
            "speculation.draft_config.hidden_size: expected an integer in 1..16777216, got 1e+300",
        ),
        (
            "vocab_size",
            "151936",
            "speculation.draft_config.vocab_size: expected an integer in 1..16777216, "
            "got '151936' (str)",
        ),
        (
            "tie_word_embeddings",
            "true",
            "speculation.draft_config.tie_word_embeddings: expected true or false, "
            "got 'true' (str)",
        ),
    ],
)
def test_draft_geometry_is_strict(
    block_draft: dict[str, Any], field: str, value: object, message: str
) -> None:
    block_draft[field] = value
    with pytest.raises(ConfigError) as info:
        resolve(block_draft)
    assert str(info.value) == message


def test_numeric_string_block_size_is_refused(block_draft: dict[str, Any]) -> None:
    block_draft["block_size"] = "16"
    with pytest.raises(ConfigError) as info:
        resolve(block_draft)
    assert str(info.value).startswith("speculation.draft_config.block_size: expected an integer")
    assert str(info.value).endswith("got '16' (str)")


def test_the_valid_draft_still_resolves(block_draft: dict[str, Any]) -> None:
    resolved = resolve(block_draft)
    assert resolved.draft_model.head_dim == 128  # type: ignore[attr-defined]


def test_a_draft_vocabulary_larger_than_the_vocabulary_is_refused(
    block_draft: dict[str, Any],
) -> None:
    """A draft head's vocabulary is a subset of the model's (EAGLE-3's d2t map): 1,000,000 of
    151,936 used to resolve and price a draft LM head larger than any the model has."""
    block_draft["vocab_size"] = 151936
    block_draft["draft_vocab_size"] = 1_000_000
    with pytest.raises(ConfigError) as info:
        resolve(block_draft)
    assert str(info.value) == (
        "speculation.draft_config.draft_vocab_size: expected at most the vocabulary it is drawn "
        "from (vocab_size 151936), got 1000000"
    )
