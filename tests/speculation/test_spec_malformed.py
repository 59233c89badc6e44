"""Malformed speculation blocks: always an ``AisimError`` naming the field path, never an
AttributeError/TypeError/KeyError from inside."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aisim import AisimError, ConfigError, resolve_speculation

NAN = float("nan")
INF = float("inf")
PATH = "workers.decode.speculation"

MALFORMED: list[tuple[object, str]] = [
    # (block, field path expected in the message)
    ([{"kind": "mtp"}], PATH),
    ("mtp", PATH),
    (3, PATH),
    (True, PATH),
    ({1: "mtp"}, PATH),
    ({("kind",): "mtp"}, PATH),
    ({"kind": None, "params": {"depth": 1}}, f"{PATH}.kind"),
    ({"kind": 3}, f"{PATH}.kind"),
    ({"kind": ["mtp"]}, f"{PATH}.kind"),
    ({"kind": "mtp", "params": [3]}, f"{PATH}.params"),
    ({"kind": "mtp", "params": "depth=3"}, f"{PATH}.params"),
    ({"kind": "mtp", "params": {3: 3}}, f"{PATH}.params"),
    ({"kind": "mtp", "params": {"depth": None}}, f"{PATH}.params.depth"),
    ({"kind": "mtp", "params": {"depth": True}}, f"{PATH}.params.depth"),
    ({"kind": "mtp", "params": {"depth": False}}, f"{PATH}.params.depth"),
    ({"kind": "mtp", "params": {"depth": NAN}}, f"{PATH}.params.depth"),
    ({"kind": "mtp", "params": {"depth": INF}}, f"{PATH}.params.depth"),
    ({"kind": "mtp", "params": {"depth": [3]}}, f"{PATH}.params.depth"),
    ({"kind": "mtp", "params": {"depth": {"value": 3}}}, f"{PATH}.params.depth"),
    ({"kind": "mtp", "params": {"depth": 1e300}}, f"{PATH}.params.depth"),
    ({"kind": "mtp", "params": {"depth": 2}, "speed": 1}, PATH),
    ({"nextn": True}, f"{PATH}.nextn"),
    ({"nextn": "3"}, f"{PATH}.nextn"),
    ({"nextn": -1}, f"{PATH}.nextn"),
    ({"nextn": 3, "nextn_accepted": NAN}, f"{PATH}.nextn_accepted"),
    ({"nextn": 3, "nextn_accepted": "1.5"}, f"{PATH}.nextn_accepted"),
    ({"nextn": 3, "nextn_accepted": 3.5}, f"{PATH}.nextn_accepted"),
    ({"kind": "mtp", "params": {"depth": 2}, "expected_accepted_tokens": INF}, "expected_accepted"),
    (
        {"kind": "mtp", "params": {"depth": 2}, "expected_accepted_tokens": -0.5},
        "expected_accepted",
    ),
    (
        {"kind": "mtp", "params": {"depth": 2}, "expected_accepted_tokens": True},
        "expected_accepted",
    ),
    (
        {"kind": "mtp", "params": {"depth": 2}, "acceptance_rates": [0.5]},
        f"{PATH}.acceptance_rates",
    ),
    ({"kind": "mtp", "params": {"depth": 2}, "acceptance_rates": 0.5}, f"{PATH}.acceptance_rates"),
    (
        {"kind": "mtp", "params": {"depth": 2}, "acceptance_rates": {"a": 1}},
        f"{PATH}.acceptance_rates",
    ),
    (
        {"kind": "mtp", "params": {"depth": 2}, "acceptance_rates": [0.5, NAN]},
        f"{PATH}.acceptance_rates[1]",
    ),
    (
        {"kind": "mtp", "params": {"depth": 2}, "unconditional_acceptance_rates": [0.5, 0.6]},
        f"{PATH}.unconditional_acceptance_rates[1]",
    ),
    (
        {"kind": "mtp", "params": {"depth": 2}, "acceptance_length": 3.5},
        f"{PATH}.acceptance_length",
    ),
    ({"kind": "mtp", "params": {"depth": 2}, "acceptance_rate": -0.1}, f"{PATH}.acceptance_rate"),
    ({"kind": "mtp", "params": {"depth": 2}, "seed": -1}, f"{PATH}.seed"),
    ({"kind": "mtp", "params": {"depth": 2}, "seed": 1.5}, f"{PATH}.seed"),
    ({"kind": "mtp", "params": {"depth": 2}, "seed": True}, f"{PATH}.seed"),
    ({"kind": "mtp", "params": {"depth": 2}, "seed": 1 << 70}, f"{PATH}.seed"),
    ({"kind": "ngram", "num_speculative_tokens": True}, f"{PATH}.num_speculative_tokens"),
    (
        {"kind": "draft_model", "params": {"num_speculative_tokens": 2}, "draft_model_path": 3},
        "path",
    ),
    (
        {"kind": "draft_model", "params": {"num_speculative_tokens": 2}, "draft_model_path": " "},
        "path",
    ),
    ({"kind": "eagle3", "draft_config": [1, 2]}, f"{PATH}.draft_config"),
    ({"kind": "eagle3", "draft_config": "config.json"}, f"{PATH}.draft_config"),
    ({"kind": "eagle3", "draft_config": {1: 2}}, f"{PATH}.draft_config"),
    ({"kind": "eagle3", "draft_config": {"hidden_size": NAN}}, f"{PATH}.draft_config.hidden_size"),
    ({"kind": "eagle3", "draft_config": {"x": {"y": object()}}}, f"{PATH}.draft_config.x.y"),
]


@pytest.mark.parametrize(("block", "field"), MALFORMED)
def test_malformed_blocks_are_clear_errors(block: object, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        resolve_speculation(block, path=PATH)
    assert field in str(caught.value)


def test_draft_config_too_deep_is_an_error_not_a_recursion() -> None:
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(1000):
        node["x"] = {}
        node = node["x"]
    with pytest.raises(ConfigError, match="too deep"):
        resolve_speculation({"kind": "eagle3", "draft_config": deep}, path=PATH)


def test_self_referencing_draft_config_is_an_error() -> None:
    loop: dict[str, Any] = {"hidden_size": 4096}
    loop["self"] = loop
    with pytest.raises(ConfigError, match="too deep"):
        resolve_speculation({"kind": "eagle3", "draft_config": loop}, path=PATH)


def test_draft_config_is_copied_not_shared(eagle3_draft: dict[str, Any]) -> None:
    resolved = resolve_speculation({"kind": "eagle3", "draft_config": eagle3_draft})
    eagle3_draft["hidden_size"] = 1
    shown = resolved.draft_config
    assert shown is not None and shown["hidden_size"] == 4096
    shown["hidden_size"] = 2
    assert resolved.draft_config is not None and resolved.draft_config["hidden_size"] == 4096


# -- fuzz: any JSON-like value either resolves or is an AisimError ------------------------

SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(1 << 70), max_value=1 << 70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(["mtp", "ngram", "eagle3", "none", "dflash", "dspark", "draft_model", "x"]),
)
KEYS = st.one_of(
    st.sampled_from(
        [
            "kind",
            "params",
            "depth",
            "num_speculative_tokens",
            "num_draft_tokens",
            "tree_shape",
            "verify_token_budget",
            "trigger_rate",
            "draft_config",
            "draft_model_path",
            "nextn",
            "nextn_accepted",
            "expected_accepted_tokens",
            "acceptance_rates",
            "unconditional_acceptance_rates",
            "acceptance_length",
            "acceptance_rate",
            "seed",
            "hidden_size",
            "num_hidden_layers",
            "num_attention_heads",
            "vocab_size",
            "block_size",
        ]
    ),
    st.integers(min_value=0, max_value=3),
)
VALUES = st.recursive(
    SCALARS,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=5)
    ),
    max_leaves=12,
)


@given(st.dictionaries(KEYS, VALUES, max_size=6))
def test_fuzzed_blocks_never_leak_internal_errors(block: dict[Any, Any]) -> None:
    try:
        resolved = resolve_speculation(block, path=PATH)
    except AisimError as exc:
        assert PATH in str(exc)
        return
    shown = resolved.to_dict()
    assert shown["kind"] in ("none", "mtp", "ngram", "eagle3", "dflash", "dspark", "draft_model")
    assert resolved.max_accepted_draft_tokens <= resolved.verify_width - 1


@given(VALUES)
def test_fuzzed_top_level_values_never_leak_internal_errors(value: object) -> None:
    try:
        resolve_speculation(value, model="Qwen/Qwen3-8B", backend="vllm", role="decode", path=PATH)
    except AisimError as exc:
        assert PATH in str(exc)
