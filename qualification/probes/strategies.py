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
