"""Probes: replay (docs/design.md#replay, #qualification).

Guarantees, for generated small deployments (both schedulers, aggregated and P/D, SD off or a
chain scheme with any acceptance, tight or roomy KV, 1-2 attention-DP ranks): every request
completes or carries a reason; tokens are conserved (emitted == requested; 1 + rounds + accepted
drafts, plus one per preemption after the first token); KV in use never exceeds capacity;
accepted fields show in the summary config; a seed gives identical results; ``kind: none`` is
identical to no block; speculation on never slows a lone request under fixed timing and speeds it
up whenever a draft is accepted (and under roofline timing when every draft is accepted); any
malformed config or trace is an aisim error, never an internal exception or a hang."""

from __future__ import annotations

import copy
import math
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    fuzzed_trace_rows,
    json_structures,
    mapping_with_mutation,
    probabilities,
    small_requests,
)

from aisim.config import run_replay
from aisim.errors import AisimError

FIXED_TIMING = {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0}
ROOFLINE_TIMING = {"estimator": "roofline"}


@st.composite
def chain_schemes(draw: st.DrawFn, backend: str = "vllm") -> dict[str, Any]:
    depth = draw(st.integers(1, 5))
    rates = draw(st.lists(probabilities, min_size=depth, max_size=depth))
    kinds = ["mtp", "ngram"] if backend == "vllm" else ["mtp"]
    kind = draw(st.sampled_from(kinds))
    params = {"depth": depth} if kind == "mtp" else {"num_speculative_tokens": depth}
    return {
        "kind": kind,
        "params": params,
        "acceptance_rates": rates,
        "seed": draw(st.integers(0, 2**31)),
    }


def _worker(backend: str, blocks: int, timing: dict[str, Any]) -> dict[str, Any]:
    scheduler = (
        {"max_batched_tokens": 512, "max_sequences": 8}
        if backend == "vllm"
        else {"chunked_prefill_size": 512, "max_running_requests": 8}
    )
    return {
        "scheduler": scheduler,
        "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": blocks}},
        "timing": dict(timing),
    }


@st.composite
def deployments(draw: st.DrawFn) -> dict[str, Any]:
    backend = draw(st.sampled_from(["vllm", "sglang"]))
    pd = draw(st.booleans())
    blocks = draw(st.integers(31, 200))  # >= 31: the largest request (480 tokens) always fits
    timing = draw(st.sampled_from([FIXED_TIMING, ROOFLINE_TIMING]))
    # P/D: the prefill pool holds every prompt at once (see the known issue below).
    workers = (
        {"prefill": _worker(backend, 160, timing), "decode": _worker(backend, blocks, timing)}
        if pd
        else {"aggregated": _worker(backend, blocks, timing)}
    )
    for worker in workers.values():
        ranks = draw(st.integers(1, 2))
        if ranks > 1:
            worker["parallelism"] = {"attention_data": ranks}
    engine: dict[str, Any] = {
        "model": "Qwen/Qwen3-8B",
        "hardware": "h100_sxm",
        "backend": backend,
        "workers": workers,
    }
    if pd:
        engine["kv_transfer"] = {"bandwidth_bytes_per_s": 1e10, "latency_ms": 0.1}
    if draw(st.booleans()):
        engine["speculation"] = draw(chain_schemes(backend))
    requests = draw(small_requests())
    return {"traffic": {"source": {"type": "agentic", "requests": requests}}, "engine": engine}


@given(deployments())
def test_probe_tokens_conserved_and_kv_never_over_committed(config: dict[str, Any]) -> None:
    result = run_replay(copy.deepcopy(config))
    summary, columns = result.summary, result.columns
    requested = [r["output_length"] for r in config["traffic"]["source"]["requests"]]
    assert summary["total_requests"] == len(requested)
    for index, status in enumerate(columns["status"]):
        if status != "completed" and not columns["reason"][index]:
            raise AssertionError(f"request {index} neither completed nor given a reason")
    assert summary["completed_requests"] == len(requested)  # everything fits: all complete
    assert columns["output_tokens"] == requested
    assert columns["emitted_tokens"] == requested
    for emitted, rounds, accepted, preempted in zip(
        columns["emitted_tokens"],
        columns["decode_rounds"],
        columns["accepted_drafts"],
        columns["preemptions"],
        strict=True,
    ):
        # the first token comes from prefill, each round emits 1 + accepted drafts, and a
        # recompute after a preemption that came after the first token emits one token as its
        # prefill completes (a preemption during the first prefill emits nothing extra)
        assert 1 + rounds + accepted <= emitted <= 1 + rounds + accepted + preempted
        if not preempted:
            assert emitted == 1 + rounds + accepted
    if "speculation" in config["engine"]:
        depth = config["engine"]["speculation"]["acceptance_rates"]
        assert summary["accepted_draft_tokens"] <= len(depth) * summary["sd_rounds"]
    else:
        assert summary["sd_rounds"] == 0 and summary["accepted_draft_tokens"] == 0
    workers = list(config["engine"]["workers"].values())
    assert len(summary["kv_peak_used_blocks"]) == len(workers)
    for worker, peaks in zip(workers, summary["kv_peak_used_blocks"], strict=True):
        for peak in peaks:
            assert 0 <= peak <= worker["kv_cache"]["capacity"]["blocks"]


@given(deployments())
def test_probe_every_accepted_field_is_visible_in_the_summary_config(
    config: dict[str, Any],
) -> None:
    shown = run_replay(copy.deepcopy(config)).summary["config"]
    engine = config["engine"]
    assert (shown["backend"], shown["model"], shown["hardware"]) == (
        engine["backend"],
        engine["model"],
        engine["hardware"],
    )
    assert [worker["role"] for worker in shown["workers"]] == list(engine["workers"])
    speculation = engine.get("speculation")
    for worker, (role, given_worker) in zip(
        shown["workers"], engine["workers"].items(), strict=True
    ):
        assert worker["scheduler"] == engine["backend"]
        assert worker["attention_data"] == given_worker.get("parallelism", {}).get(
            "attention_data", 1
        )
        assert worker["block_size"] == given_worker["kv_cache"]["block_size"]
        assert worker["kv_capacity_blocks"] == given_worker["kv_cache"]["capacity"]["blocks"]
        if speculation is not None and role != "prefill":
            assert worker["speculation"] == speculation["kind"]
            assert worker["draft_length"] == len(speculation["acceptance_rates"])
        else:
            assert (worker["speculation"], worker["draft_length"]) == ("none", 0)


@given(deployments())
def test_probe_same_seed_same_result(config: dict[str, Any]) -> None:
    first = run_replay(copy.deepcopy(config))
    second = run_replay(copy.deepcopy(config))
    assert repr(first.summary) == repr(second.summary)
    assert repr(first.columns) == repr(second.columns)


@given(deployments())
def test_probe_kind_none_is_identical_to_no_block(config: dict[str, Any]) -> None:
    without = copy.deepcopy(config)
    without["engine"].pop("speculation", None)
    disabled = copy.deepcopy(without)
    disabled["engine"]["speculation"] = {"kind": "none"}
    a, b = run_replay(without), run_replay(disabled)
    assert repr(a.summary) == repr(b.summary)
    assert repr(a.columns) == repr(b.columns)


def _lone_request(
    prompt: int, output: int, speculation: dict[str, Any] | None, timing: dict[str, Any]
) -> dict[str, Any]:
    engine: dict[str, Any] = {
        "model": "Qwen/Qwen3-8B",
        "hardware": "h100_sxm",
        "workers": {"aggregated": _worker("vllm", 200, timing)},
    }
    if speculation is not None:
        engine["speculation"] = speculation
    requests = [{"input_length": prompt, "output_length": output}]
    return {"traffic": {"source": {"type": "agentic", "requests": requests}}, "engine": engine}


@given(st.integers(1, 400), st.integers(2, 200), chain_schemes())
def test_probe_speculation_never_slows_a_lone_request_under_fixed_timing(
    prompt: int, output: int, scheme: dict[str, Any]
) -> None:
    off = run_replay(_lone_request(prompt, output, None, FIXED_TIMING)).summary
    on = run_replay(_lone_request(prompt, output, scheme, FIXED_TIMING)).summary
    assert on["mean_ttft_ms"] == off["mean_ttft_ms"]
    assert on["sd_rounds"] <= off["decode_rounds"]
    if on["accepted_draft_tokens"] > 0:
        assert on["mean_tpot_ms"] < off["mean_tpot_ms"]
        assert on["mean_e2e_latency_ms"] < off["mean_e2e_latency_ms"]
    else:
        assert on["mean_e2e_latency_ms"] == off["mean_e2e_latency_ms"]


@given(
    st.integers(1, 2000), st.integers(20, 200), st.integers(1, 5), st.sampled_from(["mtp", "ngram"])
)
def test_probe_full_acceptance_lowers_tpot_under_roofline(
    prompt: int, output: int, depth: int, kind: str
) -> None:
    params = {"depth": depth} if kind == "mtp" else {"num_speculative_tokens": depth}
    scheme = {"kind": kind, "params": params, "acceptance_rates": [1.0] * depth}
    off = run_replay(_lone_request(prompt, output, None, ROOFLINE_TIMING)).summary
    on = run_replay(_lone_request(prompt, output, scheme, ROOFLINE_TIMING)).summary
    assert on["mean_tpot_ms"] < off["mean_tpot_ms"]
    assert math.isclose(on["mean_acceptance_length"], 1 + depth, rel_tol=0.5)


def test_probe_pd_prefill_pool_admits_a_request_after_kv_is_handed_off() -> None:
    # 31 blocks of 16 = 496 tokens: 257 + 225 prompts (17 + 15 blocks) do not fit together, each
    # fits alone; the second must be admitted once the first's KV moves to the decode pool.
    pool = _worker("vllm", 31, FIXED_TIMING)
    requests = [
        {"input_length": 257, "output_length": 2},
        {"input_length": 225, "output_length": 2},
    ]
    config = {
        "traffic": {"source": {"type": "agentic", "requests": requests}},
        "engine": {
            "workers": {"prefill": pool, "decode": copy.deepcopy(pool)},
            "kv_transfer": {
                "bandwidth_bytes_per_s": 1e10,
                "latency_ms": 0.1,
                "kv_bytes_per_token": 1024,
            },
        },
    }
    assert run_replay(config).summary["completed_requests"] == 2


VALID = _lone_request(
    100, 20, {"kind": "mtp", "params": {"depth": 2}, "acceptance_rate": 0.5}, FIXED_TIMING
)


def _run_or_aisim_error(config: Any) -> None:
    try:
        run_replay(config)
    except AisimError:
        return


@given(json_structures)
def test_probe_fuzz_any_structure_as_config(config: Any) -> None:
    _run_or_aisim_error(config)


@given(mapping_with_mutation(VALID))
def test_probe_fuzz_near_miss_top_level(config: dict[str, Any]) -> None:
    _run_or_aisim_error(config)


@given(
    mapping_with_mutation(VALID["engine"]),
    mapping_with_mutation(
        VALID["engine"]["workers"]["aggregated"],
        ["scheduler", "timing", "parallelism", "speculation"],
    ),
    mapping_with_mutation(VALID["engine"]["speculation"]),
)
def test_probe_fuzz_near_miss_engine_worker_and_speculation(
    engine: dict[str, Any], worker: dict[str, Any], speculation: dict[str, Any]
) -> None:
    _run_or_aisim_error({**VALID, "engine": engine})
    _run_or_aisim_error({**VALID, "engine": {**VALID["engine"], "workers": {"aggregated": worker}}})
    _run_or_aisim_error({**VALID, "engine": {**VALID["engine"], "speculation": speculation}})


@given(fuzzed_trace_rows)
def test_probe_fuzz_traces(rows: list[Any]) -> None:
    config = copy.deepcopy(VALID)
    config["traffic"]["source"]["requests"] = rows
    _run_or_aisim_error(config)
