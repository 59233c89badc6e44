"""Impossible or malformed configurations fail before the first event with a clear aisim error
naming the field path, the scheme kind and what is allowed."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from aisim import ConfigError
from aisim.config import run_replay
from qualification.cases._drafts import draft_config

BASE: dict[str, Any] = {
    "traffic": {
        "source": {"type": "agentic", "requests": [{"input_length": 100, "output_length": 64}]}
    },
    "engine": {
        "model": "Qwen/Qwen3-8B",
        "hardware": "h100_sxm",
        "backend": "vllm",
        "workers": {
            "aggregated": {
                "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": 100}},
                "timing": {"type": "fixed", "prefill_ms": 10, "decode_ms": 5},
            }
        },
    },
}


def with_changes(*changes: tuple[str, Any]) -> dict[str, Any]:
    config = copy.deepcopy(BASE)
    for dotted, value in changes:
        *parents, last = dotted.split(".")
        node = config
        for key in parents:
            node = node[key]
        if value is None:
            del node[last]
        else:
            node[last] = value
    return config


WORKER = "engine.workers.aggregated"

CASES = [
    pytest.param(
        (f"{WORKER}.kv_cache.capacity.blocks", 5),
        r"engine\.workers\.aggregated\.kv_cache\.capacity: request '0' \(100 prompt \+ 64 output "
        r"tokens\) needs 11 blocks of 16 tokens but the capacity is 5 blocks .*never fit",
        id="request-never-fits",
    ),
    pytest.param(
        (f"{WORKER}.kv_cache.capacity", {"type": "elastic"}),
        r"engine\.workers\.aggregated\.kv_cache\.capacity\.type: expected one of fixed, default",
        id="capacity-type",
    ),
    pytest.param(
        (f"{WORKER}.kv_cache.capacity.blocks", 0),
        r"engine\.workers\.aggregated\.kv_cache\.capacity\.blocks: expected an integer in 1\.\.",
        id="zero-blocks",
    ),
    pytest.param(
        (f"{WORKER}.kv_cache.capacity.blocks", True),
        r"capacity\.blocks: expected an integer .* got True \(bool\)",
        id="bool-blocks",
    ),
    pytest.param(
        (f"{WORKER}.scheduler", {"chunked_prefill_size": 4}),
        r"engine\.workers\.aggregated\.scheduler: unknown field\(s\) chunked_prefill_size for "
        r"backend vllm; allowed: attention_dp_batching_wait_iters, attention_dp_enable_balance, "
        r"attention_dp_time_out_iters, chunked_prefill, max_batched_tokens, max_sequences",
        id="sglang-field-on-vllm",
    ),
    pytest.param(
        (f"{WORKER}.scheduler", [1, 2]),
        r"engine\.workers\.aggregated\.scheduler: expected a mapping, got \[1, 2\] \(list\)",
        id="scheduler-list",
    ),
    pytest.param(
        (f"{WORKER}.timing", {"type": "fixed", "prefill_ms": float("nan"), "decode_ms": 5}),
        r"engine\.workers\.aggregated\.timing\.prefill_ms: expected a finite number",
        id="nan-timing",
    ),
    pytest.param(
        ("engine.workers", {"aggregated": {}, "decode": {}}),
        r"engine\.workers: expected either aggregated, or prefill and decode; got aggregated, decode",
        id="mixed-roles",
    ),
    pytest.param(
        ("engine.backend", "trtllm"),
        r"engine\.backend: expected one of vllm, sglang, got 'trtllm'",
        id="backend",
    ),
    pytest.param(
        ("engine.speculation", {"kind": "mtp", "params": {"depth": 3}}),
        r"engine\.speculation: kind mtp: replay needs an acceptance input",
        id="sd-without-acceptance",
    ),
    pytest.param(
        (
            "engine.speculation",
            {
                "kind": "eagle3",
                "params": {"tree_shape": [2, 1]},
                "draft_config": draft_config("eagle3_qwen3_8b"),
                "expected_accepted_tokens": 1,
            },
        ),
        r"engine\.speculation: kind eagle3: replay supports trees on sglang only",
        id="tree",
    ),
    pytest.param(
        (
            "engine.speculation",
            {"kind": "mtp", "params": {"depth": 2}, "expected_accepted_tokens": 1},
        ),
        None,  # valid with a fixed capacity: the control case of the next one
        id="mtp-fixed-capacity-ok",
    ),
    pytest.param(
        (f"{WORKER}.scheduler", {"max_batched_tokens": 2}),
        None,
        id="budget-ok-without-sd",
    ),
    pytest.param(
        ("traffic.source", {"type": "trace"}),
        r"traffic\.source\.path: expected a string, got None",
        id="trace-without-path",
    ),
    pytest.param(
        ("traffic.load", {"type": "poisson", "rate_rps": 0}),
        r"traffic\.load\.rate_rps: expected a finite number in 1e-06\.\.1000000000\.0, got 0\.0",
        id="zero-rate",
    ),
    pytest.param(
        ("simulation", {"horizon": 5}),
        r"simulation: unknown field\(s\) horizon; allowed: horizon_ms",
        id="simulation-key",
    ),
]


@pytest.mark.parametrize(("change", "message"), CASES)
def test_config_errors(change: tuple[str, Any], message: str | None) -> None:
    config = with_changes(change)
    if message is None:
        assert run_replay(config).summary["completed_requests"] == 1
        return
    with pytest.raises(ConfigError, match=message):
        run_replay(config)


def test_default_capacity_is_refused_for_drafters_but_allowed_for_ngram() -> None:
    mtp = with_changes(
        (f"{WORKER}.kv_cache.capacity", {"type": "default"}),
        (
            "engine.speculation",
            {"kind": "mtp", "params": {"depth": 2}, "expected_accepted_tokens": 1},
        ),
    )
    with pytest.raises(
        ConfigError,
        match=r"engine\.workers\.aggregated\.kv_cache\.capacity: kind mtp: speculation with a drafter "
        r"needs an explicit capacity \{type: fixed, blocks: N\}",
    ):
        run_replay(mtp)
    ngram = with_changes(
        (f"{WORKER}.kv_cache.capacity", {"type": "default"}),
        (
            "engine.speculation",
            {
                "kind": "ngram",
                "params": {"num_speculative_tokens": 2},
                "acceptance_rates": [0.5, 0.5],
            },
        ),
    )
    assert run_replay(ngram).summary["completed_requests"] == 1


def test_ngram_is_rejected_on_sglang() -> None:
    config = with_changes(
        ("engine.backend", "sglang"),
        ("engine.workers.aggregated.kv_cache.block_size", 1),
        ("engine.workers.aggregated.kv_cache.capacity.blocks", 2000),
        (
            "engine.speculation",
            {
                "kind": "ngram",
                "params": {"num_speculative_tokens": 2},
                "acceptance_rates": [0.5, 0.5],
            },
        ),
    )
    with pytest.raises(
        ConfigError, match=r"engine\.speculation.*ngram replay is supported on vllm only"
    ):
        run_replay(config)


def test_token_budget_must_hold_one_verification_round() -> None:
    config = with_changes(
        (f"{WORKER}.scheduler", {"max_batched_tokens": 3}),
        (
            "engine.speculation",
            {"kind": "mtp", "params": {"depth": 3}, "expected_accepted_tokens": 1},
        ),
    )
    with pytest.raises(
        ConfigError,
        match=r"engine\.workers\.aggregated\.scheduler\.max_batched_tokens: 3 cannot hold one mtp "
        r"round of verify width 4",
    ):
        run_replay(config)


def test_prompt_longer_than_the_budget_without_chunked_prefill() -> None:
    config = with_changes(
        (f"{WORKER}.scheduler", {"max_batched_tokens": 50, "chunked_prefill": False})
    )
    with pytest.raises(
        ConfigError, match=r"scheduler\.max_batched_tokens: request '0' needs 163 tokens"
    ):
        run_replay(config)


def test_worker_speculation_override_names_its_own_path() -> None:
    config = with_changes(
        (
            f"{WORKER}.speculation",
            {"kind": "mtp", "params": {"depth": 0}, "expected_accepted_tokens": 0},
        )
    )
    with pytest.raises(
        ConfigError, match=r"engine\.workers\.aggregated\.speculation\.params\.depth"
    ):
        run_replay(config)


@pytest.mark.parametrize(
    "config",
    [
        None,
        [],
        "text",
        {"engine": {}},
        {"traffic": {}, "engine": []},
        {"traffic": [], "engine": {}},
    ],
)
def test_malformed_top_level_is_a_config_error(config: Any) -> None:
    with pytest.raises(ConfigError):
        run_replay(config)


def test_default_capacity_from_gpu_memory() -> None:
    # Llama-3.1-8B on h100_sxm, TP1: 0.9 x 80 GiB (77309411328 B) - 16060522496 B of bf16
    # weights (8030261248 parameters) - 2 GiB reserve = 59101405184 B, over 16 tokens x
    # (32 layers x 2 x 8 KV heads x 128 x 2 bytes = 128 KiB) per block: 28181.66 -> 28181 blocks.
    config = with_changes(
        ("engine.model", "meta-llama/Meta-Llama-3.1-8B"),
        (f"{WORKER}.kv_cache.capacity", {"type": "default"}),
    )
    workers = run_replay(config).summary["config"]["workers"]
    assert workers[0]["kv_capacity_blocks"] == 28181
