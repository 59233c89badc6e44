"""Replay invariants under hypothesis (docs/design.md#qualification probes): completion, token conservation, KV
capacity, determinism, "no block == kind none", and SD lowering TPOT at low load."""

from __future__ import annotations

import copy
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from strategies import requests_with_shared_prefixes

from aisim.config import run_replay


@st.composite
def scenarios(draw: st.DrawFn) -> dict[str, Any]:
    backend = draw(st.sampled_from(["vllm", "sglang"]))
    disaggregated = draw(st.booleans())
    requests = draw(
        requests_with_shared_prefixes(
            max_requests=8, max_prompt=120, max_output=40, max_timestamp=300, partial_cover=False
        )
    )
    block_size = draw(st.sampled_from([4, 16] if backend == "vllm" else [1, 4, 16]))
    depth = draw(st.integers(0, 3))
    # Both engines reserve d lookahead slots for an MTP round on top of its verify width.
    peak = max(r["input_length"] + r["output_length"] - 1 for r in requests) + depth
    blocks = -(-peak // block_size) + draw(st.integers(0, 30))
    scheduler: dict[str, Any]
    if backend == "vllm":
        scheduler = {
            "max_batched_tokens": draw(st.integers(depth + 1, 256)),
            "max_sequences": draw(st.integers(1, 8)),
        }
    else:
        scheduler = {
            "chunked_prefill_size": draw(st.integers(1, 256)),
            "max_running_requests": draw(st.integers(1, 8)),
            "init_new_token_ratio": draw(st.sampled_from([0.0, 0.7])),
            "min_new_token_ratio": 0.0,
        }
    worker = {
        "parallelism": {"attention_data": draw(st.integers(1, 2))},
        "scheduler": scheduler,
        "kv_cache": {
            "block_size": block_size,
            "prefix_caching": draw(st.booleans()),
            "capacity": {"type": "fixed", "blocks": blocks},
        },
        "timing": {
            "type": "fixed",
            "prefill_ms": draw(st.sampled_from([1.0, 10.0])),
            "decode_ms": 2.5,
        },
    }
    workers = {"aggregated": worker}
    engine: dict[str, Any] = {"backend": backend, "workers": workers}
    if disaggregated:
        engine["workers"] = {"prefill": copy.deepcopy(worker), "decode": worker}
        engine["kv_transfer"] = {"bandwidth_bytes_per_s": 1e9, "kv_bytes_per_token": 1000}
    if depth:
        rates = draw(st.lists(st.floats(0.0, 1.0), min_size=depth, max_size=depth))
        engine["speculation"] = {
            "kind": "mtp",
            "params": {"depth": depth},
            "acceptance_rates": rates,
            "seed": draw(st.integers(0, 2**40)),
        }
    return {"traffic": {"source": {"type": "agentic", "requests": requests}}, "engine": engine}


@given(scenarios(), st.one_of(st.none(), st.integers(0, 400)))
def test_every_request_completes_or_is_reported(
    config: dict[str, Any], horizon: int | None
) -> None:
    if horizon is not None:
        config["simulation"] = {"horizon_ms": horizon}
    result = run_replay(config)
    summary = result.summary
    requested = [r["output_length"] for r in config["traffic"]["source"]["requests"]]
    assert summary["completed_requests"] + summary["not_completed_requests"] == len(requested)
    for status, reason, emitted, wanted in zip(
        result.columns["status"],
        result.columns["reason"],
        result.columns["emitted_tokens"],
        requested,
        strict=True,
    ):
        if status == "completed":
            assert (reason, emitted) == ("", wanted)
        else:
            assert horizon is not None and reason.startswith(
                "not finished by simulation.horizon_ms"
            )
            assert emitted < wanted
    assert sum(summary["not_completed_reasons"].values()) == summary["not_completed_requests"]


@given(scenarios())
def test_every_request_completes_with_its_tokens_within_capacity(config: dict[str, Any]) -> None:
    result = run_replay(config)
    summary = result.summary
    requested = [r["output_length"] for r in config["traffic"]["source"]["requests"]]
    assert summary["completed_requests"] == len(requested)
    assert summary["not_completed_reasons"] == {}
    assert result.columns["emitted_tokens"] == requested
    assert summary["total_output_tokens"] == sum(requested)
    roles = list(config["engine"]["workers"].values())
    for worker, peaks in zip(roles, summary["kv_peak_used_blocks"], strict=True):
        assert max(peaks) <= worker["kv_cache"]["capacity"]["blocks"]
    for first, last, arrival in zip(
        result.columns["first_token_ms"],
        result.columns["last_token_ms"],
        result.columns["arrival_ms"],
        strict=True,
    ):
        assert arrival <= first <= last
    if summary["mean_itl_ms"] is not None:
        assert summary["mean_itl_ms"] >= 0.0
    # Each SD round emits 1 + accepted tokens, all after a prefill's first token.
    decode_tokens = sum(requested) - len(requested)
    assert summary["sd_rounds"] + summary["accepted_draft_tokens"] <= decode_tokens


@given(scenarios())
def test_same_seed_same_results(config: dict[str, Any]) -> None:
    first = run_replay(copy.deepcopy(config))
    second = run_replay(copy.deepcopy(config))
    assert first.summary == second.summary
    assert _same_columns(first.columns, second.columns)


@given(scenarios())
def test_no_speculation_block_equals_kind_none(config: dict[str, Any]) -> None:
    config["engine"].pop("speculation", None)
    without = run_replay(copy.deepcopy(config))
    config["engine"]["speculation"] = {"kind": "none"}
    none = run_replay(config)
    assert without.summary == none.summary
    assert _same_columns(without.columns, none.columns)


@given(
    depth=st.integers(1, 5),
    first_rate=st.floats(0.1, 1.0),
    later=st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4),
    outputs=st.lists(st.integers(150, 400), min_size=3, max_size=3),
    seed=st.integers(0, 2**32),
)
def test_speculation_lowers_mean_tpot_at_low_load(
    depth: int, first_rate: float, later: list[float], outputs: list[int], seed: int
) -> None:
    # Requests 100 s apart never overlap. Under fixed timing a round costs the same with or
    # without SD and emits 1 + a >= 1 tokens, so TPOT can only drop, and it drops exactly when
    # some draft is accepted; with p_1 >= 0.1 over >= 149 decode tokens that is certain in
    # practice (and deterministic for the drawn seed).
    requests = [
        {"input_length": 64, "output_length": out, "timestamp": 100_000 * i}
        for i, out in enumerate(outputs)
    ]
    worker = {
        "kv_cache": {"capacity": {"type": "fixed", "blocks": 64}},
        "timing": {"type": "fixed", "prefill_ms": 20.0, "decode_ms": 6.0},
    }
    config: dict[str, Any] = {
        "traffic": {"source": {"type": "agentic", "requests": requests}},
        "engine": {"workers": {"aggregated": worker}},
    }
    off = run_replay(copy.deepcopy(config)).summary
    config["engine"]["speculation"] = {
        "kind": "mtp",
        "params": {"depth": depth},
        "acceptance_rates": [first_rate, *later[: depth - 1]],
        "seed": seed,
    }
    on = run_replay(config).summary
    assert on["accepted_draft_tokens"] > 0
    assert on["mean_tpot_ms"] < off["mean_tpot_ms"]
    assert on["mean_ttft_ms"] == off["mean_ttft_ms"]


def _same_columns(a: dict[str, list[Any]], b: dict[str, list[Any]]) -> bool:
    """Column equality that treats NaN as equal to NaN."""
    if a.keys() != b.keys():
        return False
    for key in a:
        for x, y in zip(a[key], b[key], strict=True):
            if isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y):
                continue
            if x != y:
                return False
    return True
