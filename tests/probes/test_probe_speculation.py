"""Probes: speculation resolution across generated configs (docs/design.md#speculation, #qualification).

Guarantees: any YAML/JSON structure is resolved or rejected with an aisim error; every accepted
field is visible in the resolved config; acceptance and seed never enter the cost identity; legacy
``nextn`` equals canonical mtp; chain geometry (w = d + 1, max accepted = w - 1); replay depth
exists for every chain (1..64); resolution is deterministic."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    json_structures,
    mapping_with_mutation,
    speculation_blocks,
)

from aisim.config import resolve_speculation
from aisim.errors import AisimError
from aisim.speculation import ACCEPTANCE_KEYS

CONTEXTS = st.fixed_dictionaries(
    {},
    optional={
        "model": st.sampled_from(
            ["Qwen/Qwen3-8B", "meta-llama/Meta-Llama-3.1-8B", "Qwen/Qwen3-30B-A3B"]
        ),
        "backend": st.sampled_from(["vllm", "sglang"]),
        "role": st.sampled_from(["aggregated", "prefill", "decode"]),
    },
)
FORM_PROVENANCE = {
    "expected_accepted_tokens": "mean_accepted",
    "acceptance_rates": "conditional",
    "unconditional_acceptance_rates": "unconditional",
    "acceptance_length": "acceptance_length",
    "acceptance_rate": "iid",
}


def _resolve_or_aisim_error(mapping: Any, **context: Any) -> None:
    try:
        resolved = resolve_speculation(mapping, **context)
    except AisimError:
        return
    resolved.to_dict()
    assert len(resolved.cost_identity) == 64


@given(json_structures, CONTEXTS)
def test_probe_fuzz_any_structure_is_resolved_or_an_aisim_error(value: Any, context: Any) -> None:
    _resolve_or_aisim_error(value, **context)


@given(speculation_blocks().flatmap(mapping_with_mutation), CONTEXTS)
def test_probe_fuzz_near_miss_blocks_are_resolved_or_an_aisim_error(
    block: dict[str, Any], context: Any
) -> None:
    _resolve_or_aisim_error(block, **context)


@given(
    speculation_blocks().flatmap(
        lambda block: st.tuples(st.just(block), st.sampled_from(sorted(block.get("params", {}))))
    ),
    json_structures,
)
def test_probe_fuzz_param_values_are_accepted_or_an_aisim_error(
    pair: tuple[dict[str, Any], str], value: Any
) -> None:
    block, key = pair
    _resolve_or_aisim_error({**block, "params": {**block["params"], key: value}})


@given(speculation_blocks())
def test_probe_every_accepted_field_is_visible_in_the_resolved_config(
    block: dict[str, Any],
) -> None:
    resolved = resolve_speculation(block)
    shown = resolved.to_dict()
    assert shown["kind"] == block["kind"]
    for key, value in block["params"].items():
        if key == "tree_shape" and set(value) == {1}:
            # a tree of single-candidate steps is the chain of that depth (normalized spelling)
            assert shown["params"]["num_speculative_tokens"] == len(value)
            assert not shown["is_tree"]
            continue
        assert shown["params"][key] == value, key
    assert shown["seed"] == block.get("seed")
    assert shown["draft_model_path"] == block.get("draft_model_path")
    if "draft_config" in block:
        assert shown["draft_config"] == block["draft_config"]
    given_forms = [key for key in ACCEPTANCE_KEYS if key in block]
    if given_forms:
        assert shown["acceptance"]["provenance"] == FORM_PROVENANCE[given_forms[0]]
        assert shown["acceptance"]["depth"] == resolved.max_accepted_draft_tokens


@given(speculation_blocks(), speculation_blocks())
def test_probe_acceptance_and_seed_never_change_the_cost_identity(
    block: dict[str, Any], other: dict[str, Any]
) -> None:
    stripped = {k: v for k, v in block.items() if k not in (*ACCEPTANCE_KEYS, "seed")}
    resolved = resolve_speculation(block)
    assert resolved.cost_identity == resolve_speculation(stripped).cost_identity
    with_other_seed = {**block, "seed": other.get("seed", 1)}
    assert resolve_speculation(with_other_seed).cost_identity == resolved.cost_identity


@given(st.integers(1, 64), st.data())
def test_probe_legacy_nextn_equals_canonical_mtp(depth: int, data: st.DataObject) -> None:
    accepted = data.draw(st.floats(0.0, float(depth)))
    legacy = resolve_speculation({"nextn": depth, "nextn_accepted": accepted})
    canonical = resolve_speculation(
        {"kind": "mtp", "params": {"depth": depth}, "expected_accepted_tokens": accepted}
    )
    assert legacy == canonical
    assert legacy.cost_identity == canonical.cost_identity


@given(speculation_blocks())
def test_probe_chain_geometry_and_replay_depth(block: dict[str, Any]) -> None:
    resolved = resolve_speculation(block)
    if resolved.is_tree:
        assert resolved.tree_shape is not None
        assert resolved.verify_width <= sum(resolved.tree_shape) + 1
        assert resolved.max_accepted_draft_tokens == len(resolved.tree_shape)
        with pytest.raises(AisimError, match="chains only"):
            _ = resolved.replay_depth
        return
    depth = resolved.num_draft_tokens
    assert resolved.verify_width == depth + 1
    assert resolved.max_accepted_draft_tokens == resolved.verify_width - 1
    assert 1 <= depth <= 64
    assert resolved.replay_depth == depth


@given(speculation_blocks())
def test_probe_resolution_is_deterministic(block: dict[str, Any]) -> None:
    first = resolve_speculation(block)
    second = resolve_speculation(dict(block))
    assert first.to_dict() == second.to_dict()
    assert first.cost_identity == second.cost_identity


@given(speculation_blocks())
def test_probe_acceptance_forms_are_consistent(block: dict[str, Any]) -> None:
    acceptance = resolve_speculation(block).acceptance
    if acceptance is None:
        return
    unconditional = acceptance.unconditional_rates
    assert all(a >= b for a, b in zip(unconditional, unconditional[1:], strict=False))
    assert acceptance.acceptance_length == 1.0 + acceptance.mean_accepted
    assert math.isclose(acceptance.mean_accepted, math.fsum(unconditional), abs_tol=1e-12)
    distribution = acceptance.accepted_length_distribution()
    assert math.isclose(math.fsum(distribution), 1.0, abs_tol=1e-9)
    assert math.isclose(
        math.fsum(index * p for index, p in enumerate(distribution)),
        acceptance.mean_accepted,
        abs_tol=1e-9,
    )
