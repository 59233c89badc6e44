"""Disaggregated prefill/decode pools on one clock, with the KV hand-off delay."""

from __future__ import annotations

from typing import Any

import pytest

from aisim.replay import run


def pd_config(
    requests: list[dict[str, Any]],
    *,
    backend: str = "vllm",
    speculation: dict[str, Any] | None = None,
    decode_blocks: int = 1000,
) -> dict[str, Any]:
    def worker(blocks: int) -> dict[str, Any]:
        return {
            "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": blocks}},
            "timing": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0},
        }

    engine: dict[str, Any] = {
        "backend": backend,
        "workers": {"prefill": worker(1000), "decode": worker(decode_blocks)},
        # 1000 bytes per token over 1e8 bytes/s: 0.01 ms per token, plus 0.5 ms latency.
        "kv_transfer": {
            "bandwidth_bytes_per_s": 1e8,
            "kv_bytes_per_token": 1000,
            "latency_ms": 0.5,
        },
    }
    if speculation is not None:
        engine["speculation"] = speculation
    return {"traffic": {"source": {"type": "agentic", "requests": requests}}, "engine": engine}


@pytest.mark.parametrize("backend", ["vllm", "sglang"])
def test_one_request_prefill_transfer_decode(backend: str) -> None:
    # Prefill pool [0,10] emits the first token; 100 tokens of KV take 0.5 + 100 * 0.01 = 1.5 ms;
    # the decode pool runs 63 rounds of 5 ms from 11.5: E2E 11.5 + 315 = 326.5.
    result = run(pd_config([{"input_length": 100, "output_length": 64}], backend=backend))
    summary = result.summary
    assert summary["mean_ttft_ms"] == 10.0
    assert summary["mean_e2e_latency_ms"] == pytest.approx(326.5, abs=1e-9)
    assert summary["mean_time_to_second_token_ms"] == pytest.approx(6.5, abs=1e-9)
    assert summary["config"]["kv_transfer_ms_per_token"] == pytest.approx(0.01)


@pytest.mark.parametrize("backend", ["vllm", "sglang"])
def test_pd_with_speculation_on_the_decode_pool(backend: str) -> None:
    # mtp d=1 is allowed on both backends. Rates [1]: 63 tokens at 2 per round = 32 rounds.
    spec = {"kind": "mtp", "params": {"depth": 1}, "acceptance_rates": [1.0]}
    result = run(
        pd_config([{"input_length": 100, "output_length": 64}], backend=backend, speculation=spec)
    )
    assert result.summary["sd_rounds"] == 32
    assert result.summary["mean_e2e_latency_ms"] == pytest.approx(11.5 + 32 * 5.0, abs=1e-9)
    assert result.summary["config"]["workers"][0]["speculation"] == "none"  # prefill pool


def test_single_token_outputs_finish_on_the_prefill_pool() -> None:
    result = run(pd_config([{"input_length": 100, "output_length": 1}]))
    assert result.summary["mean_e2e_latency_ms"] == 10.0
    assert result.summary["completed_requests"] == 1


def test_decode_pool_queues_transfers_until_kv_frees() -> None:
    # Decode pool of 10 blocks: each request (100 in / 40 out) peaks at 139 tokens = 9 blocks, so
    # the second waits for the first. Both prefill together in [0,10] and arrive at 11.5. A
    # decodes 39 rounds to 11.5 + 195 = 206.5; B then starts and ends at 206.5 + 195 = 401.5.
    requests = [{"input_length": 100, "output_length": 40}] * 2
    frame = run(pd_config(requests, decode_blocks=10)).requests
    assert list(frame["e2e_latency_ms"]) == pytest.approx([206.5, 401.5], abs=1e-9)


def test_prefill_pool_wakes_when_a_transfer_frees_its_kv() -> None:
    # Prefill pool of one 4-token block. A (1 in / 2 out) prefills in [0,1] and holds the block
    # until its KV has left: 0.5 + 1 * 0.01 ms later, at 1.51. B (1 in / 1 out) arrives at 1, is
    # admitted at 1.51 and prefills in [1.51, 2.51]. A decodes one round in [1.51, 6.51].
    def worker() -> dict[str, Any]:
        return {
            "kv_cache": {"block_size": 4, "capacity": {"type": "fixed", "blocks": 1}},
            "timing": {"type": "fixed", "prefill_ms": 1.0, "decode_ms": 5.0},
        }

    config = pd_config(
        [
            {"input_length": 1, "output_length": 2},
            {"input_length": 1, "output_length": 1, "timestamp": 1},
        ]
    )
    config["engine"]["workers"] = {"prefill": worker(), "decode": worker()}
    frame = run(config).requests
    assert list(frame["ttft_ms"]) == pytest.approx([1.0, 1.51], abs=1e-9)
    assert list(frame["e2e_latency_ms"]) == pytest.approx([6.51, 1.51], abs=1e-9)
