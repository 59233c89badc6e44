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


# -- forward-pass metrics ------------------------------------------------------------------------

#: STP table points on a wide (B, K_total) envelope: a smooth surface, so queries inside it are
#: answered by interpolation. B up to 4096 and K_total up to 2^24 cover widened probe queries.
TABLE_BATCH_SIZES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096)
TABLE_KV_TOTALS = (0, 256, 4096, 65536, 1048576, 16777216)
TABLE_POINTS: list[dict[str, Any]] = [
    {
        "batch_size": batch,
        "total_kv_tokens": kv,
        "latency_ms": 3.0 + 0.4 * batch**0.5 + 2e-5 * kv,
    }
    for batch in TABLE_BATCH_SIZES
    for kv in TABLE_KV_TOTALS
]


@st.composite
def decode_ranks_with_kv_lists(
    draw: st.DrawFn, max_requests: int = 64, max_length: int = 200_000
) -> dict[str, Any]:
    """One rank's decode metrics fields with a per-request past-KV list."""
    lengths = draw(st.lists(st.integers(0, max_length), min_size=1, max_size=max_requests))
    return {
        "num_decode_requests": len(lengths),
        "sum_decode_kv_tokens": sum(lengths),
        "past_kv_lengths": lengths,
    }


@st.composite
def decode_ranks(
    draw: st.DrawFn, max_requests: int = 512, max_kv: int = 4_000_000
) -> dict[str, int]:
    """One rank's decode metrics fields (B, K_total) without lists; B may be 0 (idle)."""
    batch = draw(st.integers(0, max_requests))
    kv = draw(st.integers(0, max_kv)) if batch else 0
    return {"num_decode_requests": batch, "sum_decode_kv_tokens": kv}


# -- replay --------------------------------------------------------------------------------------


@st.composite
def small_requests(draw: st.DrawFn, max_requests: int = 6) -> list[dict[str, Any]]:
    """A few inline requests (Mooncake fields): small prompts and outputs, arrivals in ms."""
    count = draw(st.integers(1, max_requests))
    requests: list[dict[str, Any]] = []
    for _ in range(count):
        requests.append(
            {
                "timestamp": draw(st.integers(0, 200)),
                "input_length": draw(st.integers(1, 400)),
                "output_length": draw(st.integers(1, 80)),
            }
        )
    return requests


@st.composite
def requests_with_shared_prefixes(
    draw: st.DrawFn,
    *,
    max_requests: int,
    max_prompt: int,
    max_output: int,
    max_timestamp: int,
    partial_cover: bool,
    repeated_ids: bool = False,
) -> list[dict[str, Any]]:
    """Inline agentic requests (arrivals in ms), about half of them with ``hash_ids`` of
    16-token units: a common prefix of one shared 10-unit chain, then units of their own.
    ``partial_cover``: the ids may also stop short of the prompt (cover only its first units),
    as a trace's hash ids may. ``repeated_ids``: one of a request's own units may carry an id
    that also occurs elsewhere (7 or 8, in other requests at other positions, or its own first
    unit's id)."""
    shared_prefix = list(range(1000, 1010))
    requests: list[dict[str, Any]] = []
    for index in range(draw(st.integers(1, max_requests))):
        prompt = draw(st.integers(1, max_prompt))
        request: dict[str, Any] = {
            "input_length": prompt,
            "output_length": draw(st.integers(1, max_output)),
            "timestamp": draw(st.integers(0, max_timestamp)),
        }
        blocks_in_prompt = -(-prompt // 16)
        if draw(st.booleans()):
            common = draw(st.integers(0, blocks_in_prompt))
            unique = [index * 100 + k for k in range(blocks_in_prompt - common)]
            if repeated_ids and unique and draw(st.booleans()):
                position = draw(st.integers(0, len(unique) - 1))
                unique[position] = draw(st.sampled_from([7, 8, unique[0]]))
            ids = shared_prefix[:common] + unique
            if partial_cover:
                ids = ids[: draw(st.integers(0, len(ids)))] or ids
            request["hash_ids"] = ids
        requests.append(request)
    return requests


#: Trace-row values: mostly plausible, some absurd (negative, fractional, huge, wrong types).
trace_values: st.SearchStrategy[Any] = st.one_of(
    st.integers(-3, 300),
    st.sampled_from([0, 2**70, -(2**40), 1.5, float("nan"), True, None, "12", [], {}]),
)

#: Arbitrary trace rows: known Mooncake/agentic keys with fuzzed values, plus unknown keys.
fuzzed_trace_rows: st.SearchStrategy[Any] = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {"input_length": trace_values, "output_length": trace_values},
            optional={
                "timestamp": trace_values,
                "hash_ids": st.lists(trace_values, max_size=3),
                "request_id": st.one_of(st.text(max_size=3), trace_values),
                "wait_for": st.one_of(st.lists(st.text(max_size=3), max_size=2), trace_values),
                "delay_ms": trace_values,
                "extra": trace_values,
            },
        ),
        json_scalars,
    ),
    min_size=0,
    max_size=5,
)


#: Latency samples (ms): positive values over nine decades, zeros and repeated values (a replay's
#: fixed-timing gaps repeat exactly).
latencies: st.SearchStrategy[list[float]] = st.lists(
    st.one_of(
        st.floats(1e-3, 1e6, allow_nan=False, allow_infinity=False),
        st.sampled_from([0.0, 5.0, 5.0, 12.5]),
    ),
    min_size=1,
    max_size=400,
)
