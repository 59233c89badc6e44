"""hypothesis strategies shared by the boundary probes (``tests/probes``) and other tests.

Strategies produce *inputs* (config mappings, metrics, traces); the probes assert invariants of
aisim's answers to them. Everything here is deterministic under hypothesis' seed.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

#: Scalars a YAML or JSON file can hold, including the awkward ones (bools, NaN, infinities,
#: huge integers, empty strings).
json_scalars: st.SearchStrategy[Any] = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
)

#: Arbitrary YAML/JSON-shaped structures (nested lists and string-keyed mappings).
json_structures: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4),
        st.dictionaries(st.text(max_size=10), children, max_size=4),
    ),
    max_leaves=12,
)


def mapping_with_mutation(
    base: dict[str, Any], keys: list[str] | None = None
) -> st.SearchStrategy[dict[str, Any]]:
    """``base`` with one key (of ``keys``, default all) replaced by an arbitrary structure,
    deleted, or an unknown key added: the near-miss inputs users actually write."""
    names = sorted(keys if keys is not None else base)

    def replaced(pair: tuple[str, Any]) -> dict[str, Any]:
        key, value = pair
        result = dict(base)
        result[key] = value
        return result

    def deleted(key: str) -> dict[str, Any]:
        return {k: v for k, v in base.items() if k != key}

    def added(pair: tuple[str, Any]) -> dict[str, Any]:
        key, value = pair
        result = dict(base)
        result.setdefault(key, value)
        return result

    strategies: list[st.SearchStrategy[dict[str, Any]]] = [
        st.tuples(st.sampled_from(names), json_structures).map(replaced),
        st.sampled_from(names).map(deleted),
        st.tuples(st.text(min_size=1, max_size=10), json_structures).map(added),
    ]
    return st.one_of(strategies)


#: Non-string mapping keys: YAML allows ``1: x``, ``true: x``, ``null: x``.
non_string_keys: st.SearchStrategy[Any] = st.one_of(
    st.integers(), st.booleans(), st.none(), st.floats(allow_nan=False)
)


# -- speculation ---------------------------------------------------------------------------------

#: A draft config.json every draft-taking kind accepts (an EAGLE-3-sized head for 4096 targets).
DRAFT_CONFIG: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 4096,
    "intermediate_size": 14336,
    "num_hidden_layers": 1,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "vocab_size": 128256,
    "block_size": 8,
}

probabilities = st.floats(min_value=0.0, max_value=1.0, allow_nan=False)


def acceptance_inputs(depth: int) -> st.SearchStrategy[dict[str, Any]]:
    """One of the five acceptance forms, valid for ``depth`` drafts (or none at all)."""
    unconditional = st.lists(probabilities, min_size=depth, max_size=depth).map(
        lambda rates: sorted(rates, reverse=True)
    )
    return st.one_of(
        st.just({}),
        st.floats(0.0, float(depth)).map(lambda mean: {"expected_accepted_tokens": mean}),
        st.lists(probabilities, min_size=depth, max_size=depth).map(
            lambda rates: {"acceptance_rates": rates}
        ),
        unconditional.map(lambda rates: {"unconditional_acceptance_rates": rates}),
        st.floats(1.0, float(depth + 1)).map(lambda length: {"acceptance_length": length}),
        probabilities.map(lambda alpha: {"acceptance_rate": alpha}),
    )


@st.composite
def speculation_blocks(draw: st.DrawFn, max_depth: int = 8) -> dict[str, Any]:
    """A valid canonical speculation block of any kind (chains; eagle3 also trees), with optional
    acceptance (for chains) and seed."""
    kind = draw(st.sampled_from(["mtp", "ngram", "eagle3", "dflash", "dspark", "draft_model"]))
    depth = draw(st.integers(1, min(max_depth, 7)))
    block: dict[str, Any] = {"kind": kind}
    if kind == "mtp":
        block["params"] = {"depth": depth}
    elif kind == "ngram":
        block["params"] = {"num_speculative_tokens": depth}
    elif kind == "eagle3":
        block["draft_config"] = DRAFT_CONFIG
        if draw(st.booleans()):
            shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=4))
            block["params"] = {"tree_shape": shape}
            depth = len(shape)
        else:
            block["params"] = {"num_speculative_tokens": depth}
    elif kind in ("dflash", "dspark"):
        block["draft_config"] = DRAFT_CONFIG
        block["params"] = {"num_draft_tokens": depth}
    else:
        block["draft_model_path"] = draw(st.sampled_from(["Qwen/Qwen3-0.6B", "/models/draft"]))
        block["params"] = {"num_speculative_tokens": depth}
    block.update(draw(acceptance_inputs(depth)))
    if draw(st.booleans()):
        block["seed"] = draw(st.integers(0, 2**63 - 1))
    return block
