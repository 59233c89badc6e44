"""Replay suite: summaries of fixed scenarios: both schedulers, aggregated and disaggregated
(P/D), speculation off and each replayable scheme on, tight KV (preemption / retraction),
attention-DP ranks, loads, hand-checkable fixed timing, and configs rejected before the first
event. Each result is the whole run summary in its JSON form (``RunSummary.to_dict()``:
statistics, SD counters, the resolved configuration)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aisim.config import run_replay
from qualification.cases._drafts import (
    DFLASH_QWEN3_8B,
    DSPARK_QWEN3_8B,
    EAGLE3_QWEN3_8B,
    QWEN3_0_6B,
)
from qualification.cases._suite import Suite, make_cases

Row = tuple[str, dict[str, Any]]

#: The repository's root: a case's relative paths (an acceptance trace) resolve against it.
REPO_ROOT = Path(__file__).resolve().parents[2]

TRAFFIC: dict[str, Any] = {
    "source": {
        "type": "synthetic",
        "num_requests": 40,
        "prompt_tokens": {"type": "uniform", "min": 128, "max": 1024},
        "output_tokens": {"type": "uniform", "min": 32, "max": 128},
    },
    "load": {"type": "poisson", "rate_rps": 20.0},
    "seed": 7,
}
SCHEMES: dict[str, dict[str, Any]] = {
    "mtp3": {"kind": "mtp", "params": {"depth": 3}, "expected_accepted_tokens": 1.5, "seed": 42},
    "mtp1": {"kind": "mtp", "params": {"depth": 1}, "acceptance_rates": [0.8], "seed": 1},
    "ngram3": {
        "kind": "ngram",
        "params": {"num_speculative_tokens": 3},
        "acceptance_rates": [0.7, 0.5, 0.3],
        "seed": 3,
    },
    "eagle3-3": {
        "kind": "eagle3",
        "params": {"num_speculative_tokens": 3},
        "draft_config": EAGLE3_QWEN3_8B,
        "acceptance_length": 2.8,
        "seed": 5,
    },
    "dflash-4": {
        "kind": "dflash",
        "params": {"num_draft_tokens": 4},
        "draft_config": DFLASH_QWEN3_8B,
        "acceptance_rate": 0.7,
        "seed": 9,
    },
    "dspark-4": {
        "kind": "dspark",
        "draft_config": DSPARK_QWEN3_8B,
        "unconditional_acceptance_rates": [0.8, 0.6, 0.4, 0.2],
        "seed": 11,
    },
    "draft_model-5": {
        "kind": "draft_model",
        "params": {"num_speculative_tokens": 5},
        "draft_model_path": "Qwen/Qwen3-0.6B",
        "draft_config": QWEN3_0_6B,
        "acceptance_rate": 0.6,
        "seed": 13,
    },
}


SCHEDULERS: dict[str, dict[str, Any]] = {
    "vllm": {"max_batched_tokens": 2048, "max_sequences": 32},
    "sglang": {"chunked_prefill_size": 2048, "max_running_requests": 32},
}


def _worker(backend: str, blocks: int = 2048, **extra: Any) -> dict[str, Any]:
    worker: dict[str, Any] = {
        "scheduler": dict(SCHEDULERS[backend]),
        "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": blocks}},
        "timing": {"estimator": "roofline"},
    }
    worker.update(extra)
    return worker


def _config(
    backend: str = "vllm",
    scheme: str | None = None,
    *,
    pd: bool = False,
    blocks: int = 2048,
    traffic: dict[str, Any] | None = None,
    **worker_extra: Any,
) -> dict[str, Any]:
    workers: dict[str, Any]
    if pd:
        workers = {
            "prefill": _worker(backend, blocks, **worker_extra),
            "decode": _worker(backend, blocks, **worker_extra),
        }
    else:
        workers = {"aggregated": _worker(backend, blocks, **worker_extra)}
    engine: dict[str, Any] = {
        "model": "Qwen/Qwen3-8B",
        "hardware": "h100_sxm",
        "backend": backend,
        "workers": workers,
    }
    if pd:
        engine["kv_transfer"] = {"bandwidth_bytes_per_s": 50e9, "latency_ms": 0.2}
    if scheme is not None:
        engine["speculation"] = SCHEMES[scheme]
    return {"traffic": copy.deepcopy(traffic if traffic is not None else TRAFFIC), "engine": engine}


def _fixed(
    requests: list[dict[str, Any]], speculation: dict[str, Any] | None = None, backend: str = "vllm"
) -> dict[str, Any]:
    engine: dict[str, Any] = {
        "backend": backend,
        "workers": {
            "aggregated": {
                "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": 1000}},
                "timing": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0},
            }
        },
    }
    if speculation is not None:
        engine["speculation"] = speculation
    return {"traffic": {"source": {"type": "agentic", "requests": requests}}, "engine": engine}


def _rows() -> list[Row]:
    rows: list[Row] = []
    for backend in ("vllm", "sglang"):
        rows.append((f"{backend}/aggregated/sd-off", {"config": _config(backend)}))
        rows.append(
            (
                f"{backend}/aggregated/kind-none",
                {
                    "config": {
                        **_config(backend),
                        "engine": {**_config(backend)["engine"], "speculation": {"kind": "none"}},
                    }
                },
            )
        )
        rows.append((f"{backend}/pd/sd-off", {"config": _config(backend, pd=True)}))
        rows.append((f"{backend}/pd/mtp1", {"config": _config(backend, "mtp1", pd=True)}))
        rows.append((f"{backend}/aggregated/tight-kv", {"config": _config(backend, blocks=160)}))
        rows.append(
            (
                f"{backend}/aggregated/tight-kv/mtp3",
                {"config": _config(backend, "mtp3", blocks=160)},
            )
        )
        rows.append(
            (
                f"{backend}/aggregated/attention-dp-2/mtp1",
                {
                    "config": _config(
                        backend, "mtp1", parallelism={"tensor": 1, "attention_data": 2}
                    )
                },
            )
        )
    for scheme in SCHEMES:
        rows.append((f"vllm/aggregated/{scheme}", {"config": _config("vllm", scheme)}))
    for scheme in ("mtp3", "eagle3-3", "dspark-4"):
        rows.append((f"sglang/aggregated/{scheme}", {"config": _config("sglang", scheme)}))
    rows.append(("vllm/pd/mtp3", {"config": _config("vllm", "mtp3", pd=True)}))
    closed = {**TRAFFIC, "load": {"type": "concurrency", "users": 8, "think_ms": 50.0}}
    rows.append(
        (
            "vllm/aggregated/closed-loop-8/ngram3",
            {"config": _config("vllm", "ngram3", traffic=closed)},
        )
    )
    constant = {**TRAFFIC, "load": {"type": "constant", "rate_rps": 50.0}}
    rows.append(
        (
            "sglang/aggregated/constant-50rps/mtp1",
            {"config": _config("sglang", "mtp1", traffic=constant)},
        )
    )
    one = [{"input_length": 100, "output_length": 64}]
    all_accepted = {"kind": "mtp", "params": {"depth": 3}, "acceptance_rates": [1.0, 1.0, 1.0]}
    none_accepted = {"kind": "mtp", "params": {"depth": 3}, "acceptance_rates": [0.0, 0.0, 0.0]}
    for backend in ("vllm", "sglang"):
        rows += [
            (f"fixed/{backend}/one-request/sd-off", {"config": _fixed(one, backend=backend)}),
            (
                f"fixed/{backend}/one-request/all-accepted",
                {"config": _fixed(one, all_accepted, backend)},
            ),
            (
                f"fixed/{backend}/one-request/none-accepted",
                {"config": _fixed(one, none_accepted, backend)},
            ),
        ]
    graph = [
        {"request_id": "a", "input_length": 200, "output_length": 20},
        {
            "request_id": "b",
            "input_length": 50,
            "output_length": 10,
            "wait_for": ["a"],
            "delay_ms": 5.0,
        },
        {"request_id": "c", "timestamp": 3.0, "input_length": 80, "output_length": 30},
    ]
    rows.append(("fixed/vllm/agentic-graph/mtp1", {"config": _fixed(graph, SCHEMES["mtp1"])}))
    tree = {
        "kind": "eagle3",
        "params": {"tree_shape": [4, 2, 1]},
        "draft_config": EAGLE3_QWEN3_8B,
        "acceptance_rate": 0.5,
    }
    deep = {"kind": "mtp", "params": {"depth": 6}, "acceptance_rate": 0.5}
    rows += [
        ("error/tree-in-replay", {"config": _fixed(one, tree)}),
        ("fixed/vllm/mtp-depth-6", {"config": _fixed(one, deep)}),
        ("error/ngram-on-sglang", {"config": _config("sglang", "ngram3")}),
        ("error/dflash-on-sglang", {"config": _config("sglang", "dflash-4")}),
        ("error/request-never-fits", {"config": _config("vllm", blocks=8)}),
        ("error/unknown-worker-field", {"config": _config("vllm", turbo=True)}),
        (
            "error/no-workers",
            {"config": {"traffic": TRAFFIC, "engine": {"backend": "vllm", "workers": {}}}},
        ),
        ("error/traffic-not-a-mapping", {"config": {"traffic": [1], "engine": {}}}),
        (
            "error/synthetic-with-trace-timestamps",
            {"config": _config("vllm", traffic={**TRAFFIC, "load": {"type": "trace_timestamps"}})},
        ),
    ]
    rows += _engine_mode_rows()
    return rows


def _engine_mode_rows() -> list[Row]:
    """The engines' per-round draft lengths, synthetic acceptance and new kinds
    (docs/speculation.md, "Engine methods and modes")."""
    load = [
        {
            "request_id": f"r{index}",
            "timestamp": 4.0 * index,
            "input_length": 64,
            "output_length": 40 + 8 * index,
        }
        for index in range(8)
    ]
    mtp3 = {"kind": "mtp", "params": {"depth": 3}, "acceptance_rates": [0.8, 0.6, 0.4]}
    table = {
        **mtp3,
        "num_speculative_tokens_per_batch_size": [[1, 2, 3], [3, 5, 2], [6, 64, 1]],
        "seed": 17,
    }
    adaptive = {
        **mtp3,
        "speculative_adaptive": True,
        "speculative_adaptive_config": {
            "warmup_batches": 2,
            "update_interval": 2,
            "1": {"candidate_steps": [1, 3]},
            "4": {"candidate_steps": [0, 1, 2]},
        },
        "seed": 19,
    }
    synthetic = {
        "kind": "mtp",
        "params": {"depth": 3},
        "rejection_sample_method": "synthetic",
        "synthetic_acceptance_length": 2.5,
        "seed": 23,
    }
    simulated = {"kind": "mtp", "params": {"depth": 3}, "simulate_acc_len": 2.5, "seed": 29}
    # SGLang's default adaptive config (candidates up to 7 steps), the block at depth 7.
    default_adaptive = {
        "kind": "mtp",
        "params": {"depth": 7},
        "acceptance_rates": [0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2],
        "speculative_adaptive": True,
        "seed": 41,
    }
    medusa = {
        "kind": "medusa",
        "draft_config": {
            "num_heads": 3,
            "num_hidden_layers": 1,
            "hidden_size": 4096,
            "vocab_size": 151936,
        },
        "acceptance_rate": 0.6,
        "seed": 31,
    }
    parallel = {
        **SCHEMES["draft_model-5"],
        "params": {"num_speculative_tokens": 5, "parallel_drafting": True},
    }
    tree = {
        "kind": "eagle3",
        "params": {
            "speculative_num_steps": 3,
            "speculative_eagle_topk": 4,
            "speculative_num_draft_tokens": 8,
        },
        "draft_config": EAGLE3_QWEN3_8B,
        "acceptance_rates": [0.8, 0.6, 0.5],
        "seed": 37,
    }
    # vLLM suffix decoding from a trace of drafted counts under the roofline: each pass priced
    # at its widest round plus the host lookup per decode request (the path is the repo's).
    suffix = {
        "kind": "suffix",
        "params": {"num_speculative_tokens": 4},
        "suffix_lookup_us_per_request": 50.0,
        "acceptance_trace": {"path": "qualification/cases/traces/suffix_two_requests.jsonl"},
    }
    two = [
        {"request_id": f"r{index}", "timestamp": 0.0, "input_length": 16, "output_length": 10}
        for index in range(2)
    ]
    suffix_config = _config("vllm", traffic={"source": {"type": "agentic", "requests": two}})
    suffix_config["engine"]["speculation"] = suffix
    return [
        ("vllm/aggregated/suffix-4-roofline-trace", {"config": suffix_config}),
        ("fixed/sglang/eagle-tree-topk4", {"config": _fixed(load, tree, "sglang")}),
        ("fixed/vllm/dynamic-length-table", {"config": _fixed(load, table)}),
        ("fixed/sglang/adaptive-steps", {"config": _fixed(load, adaptive, "sglang")}),
        ("fixed/vllm/synthetic-length", {"config": _fixed(load, synthetic)}),
        ("fixed/sglang/simulated-length", {"config": _fixed(load, simulated, "sglang")}),
        ("fixed/vllm/medusa-3", {"config": _fixed(load, medusa)}),
        ("fixed/sglang/adaptive-default-7", {"config": _fixed(load, default_adaptive, "sglang")}),
        (
            "vllm/aggregated/draft_model-5-parallel",
            {
                "config": {
                    **_config("vllm"),
                    "engine": {**_config("vllm")["engine"], "speculation": parallel},
                }
            },
        ),
        (
            "error/dynamic-length-with-native-estimator",
            {
                "config": {
                    **_config("vllm"),
                    "engine": {**_config("vllm")["engine"], "speculation": table},
                }
            },
        ),
    ]


def evaluate(inputs: Mapping[str, Any]) -> dict[str, Any]:
    # Relative paths in a case (a trace) are the repository's, wherever the suite runs from.
    result = run_replay(copy.deepcopy(dict(inputs["config"])), base_dir=REPO_ROOT)
    summary: dict[str, Any] = result.run_summary.to_dict()
    return summary


SUITE = Suite(
    name="replay",
    description="replay summaries: schedulers, aggregated and P/D, SD off/each scheme, tight KV",
    cases=make_cases(_rows()),
    evaluate=evaluate,
)
