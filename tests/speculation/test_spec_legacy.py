"""Legacy inputs equal their canonical forms; conflicting inputs name both fields."""

from __future__ import annotations

from typing import Any

import pytest

from aisim import ConfigError, resolve_speculation


def _same(legacy: dict[str, Any], canonical: dict[str, Any]) -> None:
    old = resolve_speculation(legacy)
    new = resolve_speculation(canonical)
    assert old.cost_identity == new.cost_identity
    assert old.acceptance == new.acceptance
    assert old.to_dict() == new.to_dict()


def test_nextn_equals_canonical_mtp() -> None:
    _same(
        {"nextn": 3, "nextn_accepted": 1.5, "seed": 42},
        {"kind": "mtp", "params": {"depth": 3}, "expected_accepted_tokens": 1.5, "seed": 42},
    )


def test_nextn_without_acceptance() -> None:
    _same({"nextn": 2}, {"kind": "mtp", "params": {"depth": 2}})


def test_nextn_with_kind_mtp_and_agreeing_depth() -> None:
    _same(
        {"kind": "mtp", "nextn": 3, "params": {"depth": 3.0}, "nextn_accepted": 2},
        {"kind": "mtp", "params": {"depth": 3}, "expected_accepted_tokens": 2},
    )


def test_nextn_fills_a_missing_depth() -> None:
    _same({"kind": "mtp", "nextn": 4}, {"kind": "mtp", "params": {"depth": 4}})


def test_nextn_accepted_equal_to_expected_accepted_tokens_is_fine() -> None:
    _same(
        {"nextn": 3, "nextn_accepted": 1.5, "expected_accepted_tokens": 1.5},
        {"kind": "mtp", "params": {"depth": 3}, "expected_accepted_tokens": 1.5},
    )


@pytest.mark.parametrize("block", [{"nextn": 0}, {"nextn": 0, "nextn_accepted": 0}])
def test_nextn_zero_means_disabled(block: dict[str, Any]) -> None:
    assert resolve_speculation(block).cost_identity == resolve_speculation(None).cost_identity
    assert resolve_speculation({"kind": "none", **block}).kind == "none"


def test_flat_ngram_equals_canonical_ngram() -> None:
    _same(
        {"kind": "ngram", "num_speculative_tokens": 4, "acceptance_rates": [0.6, 0.5, 0.4, 0.3]},
        {
            "kind": "ngram",
            "params": {"num_speculative_tokens": 4, "trigger_rate": 1.0},
            "acceptance_rates": [0.6, 0.5, 0.4, 0.3],
        },
    )


def test_flat_ngram_agreeing_with_params() -> None:
    _same(
        {"kind": "ngram", "num_speculative_tokens": 2, "params": {"num_speculative_tokens": 2}},
        {"kind": "ngram", "params": {"num_speculative_tokens": 2}},
    )


# -- conflicts: the message names both inputs -----------------------------------------------

CONFLICTS: list[tuple[dict[str, Any], tuple[str, ...]]] = [
    (
        {"kind": "mtp", "nextn": 2, "params": {"depth": 3}},
        ("speculation.nextn (2)", "speculation.params.depth (3", "disagree"),
    ),
    (
        {"kind": "mtp", "nextn": 2, "params": {"num_speculative_tokens": 3}},
        ("speculation.nextn (2)", "speculation.params.num_speculative_tokens (3", "disagree"),
    ),
    (
        {"kind": "eagle3", "nextn": 3},
        ("speculation.nextn (3", "speculation.kind (eagle3)", "only for kind mtp"),
    ),
    (
        {"kind": "none", "nextn": 2},
        ("speculation.nextn (2", "speculation.kind (none)"),
    ),
    (
        {"nextn": 3, "nextn_accepted": 1.5, "expected_accepted_tokens": 2.0},
        (
            "speculation.nextn_accepted (1.5",
            "speculation.expected_accepted_tokens (2.0",
            "disagree",
        ),
    ),
    (
        {"nextn": 3, "nextn_accepted": 1.5, "acceptance_length": 2.5},
        ("speculation.nextn_accepted", "speculation.acceptance_length", "two acceptance inputs"),
    ),
    (
        {
            "kind": "mtp",
            "params": {"depth": 2},
            "acceptance_rates": [0.5, 0.5],
            "acceptance_rate": 0.5,
        },
        ("speculation.acceptance_rates", "speculation.acceptance_rate ", "two acceptance inputs"),
    ),
    (
        {
            "kind": "mtp",
            "params": {"depth": 2},
            "expected_accepted_tokens": 1.0,
            "unconditional_acceptance_rates": [0.5, 0.5],
        },
        ("speculation.expected_accepted_tokens", "speculation.unconditional_acceptance_rates"),
    ),
    (
        {"kind": "ngram", "num_speculative_tokens": 2, "params": {"num_speculative_tokens": 3}},
        (
            "speculation.num_speculative_tokens (2)",
            "speculation.params.num_speculative_tokens (3",
            "disagree",
        ),
    ),
    (
        {"kind": "ngram", "params": {"num_speculative_tokens": 2}, "nextn_accepted": 1.0},
        ("speculation.nextn_accepted", "only for kind mtp", "kind ngram"),
    ),
]


@pytest.mark.parametrize(("block", "fragments"), CONFLICTS)
def test_conflicts_name_both_inputs(block: dict[str, Any], fragments: tuple[str, ...]) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_speculation(block)
    message = str(caught.value)
    for fragment in fragments:
        assert fragment in message


def test_flat_num_speculative_tokens_rejected_for_block_drafters() -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_speculation({"kind": "dspark", "num_speculative_tokens": 3})
    message = str(caught.value)
    assert "speculation.num_speculative_tokens" in message
    assert "kind dspark takes no num_speculative_tokens" in message


@pytest.mark.parametrize("key", ["expected_accepted_tokens", "acceptance_rate", "acceptance_rates"])
def test_disabled_speculation_rejects_acceptance(key: str) -> None:
    value: object = [0.5] if key == "acceptance_rates" else 0.5
    with pytest.raises(ConfigError) as caught:
        resolve_speculation({"kind": "none", key: value})
    assert f"speculation.{key}: kind none takes no acceptance" in str(caught.value)


def test_legacy_nonzero_acceptance_with_nextn_zero_is_rejected() -> None:
    with pytest.raises(ConfigError, match=r"speculation\.nextn_accepted: kind none"):
        resolve_speculation({"nextn": 0, "nextn_accepted": 1.0})
