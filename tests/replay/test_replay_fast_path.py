"""The replay's fast path equals its step-by-step path (the oracle) on generated traces.

``Simulation(plan)`` runs the fast path: unique cache units are counted, not interned, until a
release that may be recomputed from, and the equal inter-token gaps of a pass are added as one
run. ``Simulation(plan, step_by_step=True)`` interns every unit and adds every gap on its own.
Every output must be identical: each request record, the run counters, the ITL samples (values,
count, float total, sketch) and the summary, across SD off and on (several schemes, partial
acceptance), both schedulers, P/D, prefix caching with shared prompt prefixes, and KV pools small
enough to preempt.
"""

from __future__ import annotations

import copy
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import requests_with_shared_prefixes

from aisim.config._replay import build_plan
from aisim.replay._engine import Simulation, SimulationResult
from aisim.replay._summary import summarize

PROGRESS = "progress_every (test only)"


def _speculation(draw: st.DrawFn, backend: str) -> dict[str, Any] | None:
    # ngram replay is vLLM-only.
    kinds = ["off", "mtp", "ngram", "eagle3"] if backend == "vllm" else ["off", "mtp", "eagle3"]
    kind = draw(st.sampled_from(kinds))
    if kind == "off":
        return None
    depth = draw(st.integers(1, 4))
    rates = draw(st.lists(st.floats(0.0, 1.0), min_size=depth, max_size=depth))
    block: dict[str, Any] = {"kind": kind, "acceptance_rates": rates}
    if kind == "mtp":
        block["params"] = {"depth": depth}
    elif kind == "ngram":
        block["params"] = {"num_speculative_tokens": depth}
    else:
        block["params"] = {"num_speculative_tokens": depth}
        block["draft_config"] = {
            "num_hidden_layers": 1,
            "hidden_size": 4096,
            "intermediate_size": 14336,
            "num_attention_heads": 32,
            "num_key_value_heads": 8,
            "vocab_size": 128256,
        }
    block["seed"] = draw(st.integers(0, 2**40))
    return block


@st.composite
def scenarios(draw: st.DrawFn, stretchable: bool = False) -> dict[str, Any]:
    """A small replay config; ``stretchable``: the kind whose steady decode passes the fast
    path advances at once (vLLM, aggregated, one rank, SD off)."""
    backend = "vllm" if stretchable else draw(st.sampled_from(["vllm", "sglang"]))
    disaggregated = False if stretchable else draw(st.booleans())
    # Shared prompt prefixes (hashed units), possibly a partial hash cover, and ids repeated
    # off the shared prefix (a block is its request's alone only from its first once-only id).
    requests = draw(
        requests_with_shared_prefixes(
            max_requests=10,
            max_prompt=150,
            max_output=80,
            max_timestamp=200,
            partial_cover=True,
            repeated_ids=True,
        )
    )
    block_size = draw(st.sampled_from([4, 16] if backend == "vllm" else [1, 4, 16]))
    speculation = None if stretchable else _speculation(draw, backend)
    depth = 0 if speculation is None else len(speculation["acceptance_rates"])
    peak = max(r["input_length"] + r["output_length"] - 1 for r in requests) + depth
    # From "one request barely fits" (preemptions) to roomy.
    blocks = -(-peak // block_size) + draw(st.sampled_from([0, 1, 3, 10, 40]))
    scheduler: dict[str, Any]
    if backend == "vllm":
        scheduler = {
            # Small budgets leave decoding requests out of some passes.
            "max_batched_tokens": draw(st.one_of(st.integers(depth + 1, 8), st.integers(9, 256))),
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
        "parallelism": {"attention_data": 1 if stretchable else draw(st.integers(1, 2))},
        "scheduler": scheduler,
        "kv_cache": {
            "block_size": block_size,
            "prefix_caching": draw(st.booleans()),
            "capacity": {"type": "fixed", "blocks": blocks},
        },
        "timing": {
            "type": "fixed",
            "prefill_ms": draw(st.sampled_from([1.0, 10.0])),
            "decode_ms": draw(st.sampled_from([2.5, 0.1])),
        },
    }
    engine: dict[str, Any] = {"backend": backend, "workers": {"aggregated": worker}}
    if stretchable and draw(st.booleans()):
        # Pass prices that depend on the past KV of the batch (a stretch prices each pass).
        engine["model"] = "meta-llama/Meta-Llama-3.1-8B"
        engine["hardware"] = "h100_sxm"
        worker["timing"] = {"estimator": "roofline"}
    if disaggregated:
        engine["workers"] = {"prefill": copy.deepcopy(worker), "decode": worker}
        engine["kv_transfer"] = {"bandwidth_bytes_per_s": 1e9, "kv_bytes_per_token": 1000}
    if speculation is not None:
        engine["speculation"] = speculation
    simulation: dict[str, Any] = {"per_token": draw(st.booleans())}
    if draw(st.booleans()):
        simulation["horizon_ms"] = draw(st.sampled_from([0.0, 25.0, 120.0, 400.0]))
    return {
        "traffic": {"source": {"type": "agentic", "requests": requests}},
        "engine": engine,
        "simulation": simulation,
        # Not a config field: progress reports every this many events (0: none).
        PROGRESS: draw(st.sampled_from([0, 0, 5, 64])),
    }


def _same(left: object, right: object) -> bool:
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left):
        return math.isnan(right)
    return left == right


def _outcome(result: SimulationResult, description: dict[str, Any]) -> dict[str, Any]:
    recorder = result.recorder
    # Every public attribute (dir(): compiled records have no __dict__).
    names = [name for name in dir(result.log.records[0]) if not name.startswith("_")]
    records = [{name: getattr(record, name) for name in names} for record in result.log.records]
    itl = recorder.itl
    return {
        "records": records,
        "events": result.events,
        "end_ms": result.end_ms,
        "counters": (
            recorder.passes,
            recorder.completed,
            recorder.preemptions,
            recorder.sd_preemptions,
            list(recorder.accepted_histogram),
        ),
        "tokens": (recorder.token_request, recorder.token_time_ms, recorder.token_count),
        "itl": (
            itl.count,
            itl.total,
            list(itl.values),
            None if itl.sketch is None else itl.sketch.to_dict(),
        ),
        "peaks": [worker.peak_used_blocks() for worker in result.workers],
        "summary": summarize(result, description).to_dict(),
    }


def _assert_equal(fast: dict[str, Any], step: dict[str, Any]) -> None:
    assert len(fast["records"]) == len(step["records"])
    for mine, theirs in zip(fast["records"], step["records"], strict=True):
        for name, value in theirs.items():
            assert _same(mine[name], value), (mine["index"], name, mine[name], value)
    for key in ("events", "end_ms", "counters", "tokens", "itl", "peaks", "progress"):
        assert fast[key] == step[key], key
    for name, value in step["summary"].items():
        assert _same(fast["summary"][name], value), name


class _Reports(list[tuple[int, int, float]]):
    """A progress callback that keeps its calls."""

    def __call__(self, events: int, completed: int, now_ms: float) -> None:
        self.append((events, completed, now_ms))


def _run_both(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both paths' outcomes (with the progress reports when the scenario asks for them)."""
    config = dict(config)
    every = int(config.pop(PROGRESS, 0))
    outcomes: list[dict[str, Any]] = []
    for step_by_step in (False, True):
        reports = _Reports()
        plan, description = build_plan(config)
        simulation = Simulation(
            plan,
            progress=reports if every else None,
            progress_every=every,
            step_by_step=step_by_step,
        )
        outcome = _outcome(simulation.run(), description)
        outcome["progress"] = reports
        outcome["passes_advanced"] = simulation.passes_advanced
        outcomes.append(outcome)
    return outcomes[0], outcomes[1]


@settings(max_examples=150)
@given(scenarios())
def test_fast_path_equals_step_by_step(config: dict[str, Any]) -> None:
    fast, step = _run_both(config)
    _assert_equal(fast, step)


@settings(max_examples=150)
@given(scenarios(stretchable=True))
def test_fast_path_equals_step_by_step_where_stretches_apply(config: dict[str, Any]) -> None:
    fast, step = _run_both(config)
    _assert_equal(fast, step)


def _vllm_config(
    requests: list[dict[str, Any]], blocks: int, speculation: dict[str, Any] | None
) -> dict[str, Any]:
    engine: dict[str, Any] = {
        "backend": "vllm",
        "workers": {
            "aggregated": {
                "scheduler": {"max_batched_tokens": 64, "max_sequences": 8},
                "kv_cache": {
                    "block_size": 4,
                    "prefix_caching": True,
                    "capacity": {"type": "fixed", "blocks": blocks},
                },
                "timing": {"type": "fixed", "prefill_ms": 5.0, "decode_ms": 1.0},
            }
        },
    }
    if speculation is not None:
        engine["speculation"] = speculation
    return {"traffic": {"source": {"type": "agentic", "requests": requests}}, "engine": engine}


def test_steady_decode_stretches_are_advanced_and_equal_stepping() -> None:
    # SD off, vLLM, one rank: between arrivals and finishes the running requests only decode,
    # so the fast path completes those passes in one step. Roomy pool, then one that preempts.
    requests = [
        {"input_length": 30 + 5 * index, "output_length": 40 + 9 * index, "timestamp": 17 * index}
        for index in range(6)
    ]
    for blocks in (400, 45):
        fast, step = _run_both(_vllm_config(requests, blocks, None))
        assert fast["passes_advanced"] > 20, "steady stretches must be advanced at once"
        _assert_equal(fast, step)
    assert step["counters"][2] > 0, "the small pool must preempt"


def test_fast_path_equals_step_by_step_under_preemption_with_prefix_hits() -> None:
    # Hand-built: eight long requests on a vLLM pool that holds about two of them, prefix
    # caching on, ngram K=3 with partial acceptance: requests are preempted mid-decode and their
    # recompute hits their own cached units (materialised from the fast path's counts).
    requests = [
        {"input_length": 40 + 7 * index, "output_length": 60, "timestamp": 3 * index}
        for index in range(8)
    ]
    config: dict[str, Any] = {
        "traffic": {"source": {"type": "agentic", "requests": requests}},
        "engine": {
            "backend": "vllm",
            "speculation": {
                "kind": "ngram",
                "params": {"num_speculative_tokens": 3},
                "acceptance_rates": [0.7, 0.5, 0.3],
                "seed": 7,
            },
            "workers": {
                "aggregated": {
                    "scheduler": {"max_batched_tokens": 64, "max_sequences": 8},
                    "kv_cache": {
                        "block_size": 4,
                        "prefix_caching": True,
                        "capacity": {"type": "fixed", "blocks": 60},
                    },
                    "timing": {"type": "fixed", "prefill_ms": 5.0, "decode_ms": 1.0},
                }
            },
        },
    }
    fast, step = _run_both(config)
    preemptions = step["counters"][2]
    cached = sum(record["cached_prompt_tokens"] for record in step["records"])
    assert preemptions > 0 and cached > 0, "the case must preempt and hit its own cache"
    _assert_equal(fast, step)
