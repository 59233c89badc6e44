"""Resolved speculation is read-only: every public field refuses assignment, and the mappings
it hands out are copies (changing them changes nothing inside)."""

from __future__ import annotations

import pytest

from aisim import resolve_speculation
from aisim.config import SpeculationConfig, validate
from qualification.cases._drafts import draft_config

EAGLE = {
    "kind": "eagle3",
    "params": {"num_speculative_tokens": 2},
    "draft_config": draft_config("eagle3_llama_3.1_8b"),
    "acceptance_rate": 0.5,
}


@pytest.mark.parametrize(
    "field",
    ["kind", "params", "verify_width", "num_draft_tokens", "acceptance", "seed", "draft_model"],
)
def test_resolved_fields_refuse_assignment(field: str) -> None:
    resolved = resolve_speculation(EAGLE)
    with pytest.raises(AttributeError):
        setattr(resolved, field, None)


def test_acceptance_and_draft_model_refuse_assignment() -> None:
    resolved = resolve_speculation(EAGLE)
    assert resolved.acceptance is not None and resolved.draft_model is not None
    with pytest.raises(AttributeError):
        resolved.acceptance.mean_accepted = 2.0  # type: ignore[misc]
    with pytest.raises(AttributeError):
        resolved.draft_model.num_layers = 3  # type: ignore[misc]


def test_handed_out_mappings_are_copies() -> None:
    resolved = resolve_speculation(EAGLE)
    identity = resolved.cost_identity
    params = resolved.params
    params["num_speculative_tokens"] = 5
    config = resolved.draft_config
    assert config is not None
    config["hidden_size"] = 1
    assert resolved.params["num_speculative_tokens"] == 2
    assert resolved.draft_config is not None and resolved.draft_config["hidden_size"] == 4096
    assert resolved.cost_identity == identity


def test_the_config_model_itself_is_frozen() -> None:
    block = validate(SpeculationConfig, {"kind": "mtp", "params": {"depth": 2}}, "speculation")
    with pytest.raises(ValueError):
        block.kind = "ngram"  # type: ignore[misc]
