"""Disaggregated prefill/decode pools on one clock, with the KV hand-off delay."""

from __future__ import annotations

from typing import Any

import pytest

from aisim.config import run_replay


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


def test_vllm_decode_worker_computes_the_first_token() -> None:
    # vLLM P/D: the proxy sends the request to the prefill worker with max_tokens = 1 and
    # discards its answer; the prefill pool computes the prompt in [0,10]. The decode worker
    # then allocates the prompt's blocks and pulls the KV: 0.5 + 100 x 0.01 = 1.5 ms, landing
    # at 11.5 with 99 tokens counted as computed; it computes the last prompt token in a pass
    # of its own (one query token: decode work, 5 ms): the client's first token at 16.5. Then
    # 63 rounds of 5 ms: E2E 16.5 + 315 = 331.5.
    result = run_replay(pd_config([{"input_length": 100, "output_length": 64}], backend="vllm"))
    summary = result.summary
    assert summary["mean_ttft_ms"] == 16.5
    assert summary["mean_e2e_latency_ms"] == pytest.approx(331.5, abs=1e-9)
    assert summary["mean_time_to_second_token_ms"] == 5.0
    assert summary["passes"] == 1 + 1 + 63
    assert summary["config"]["kv_transfer_ms_per_token"] == pytest.approx(0.01)


def test_sglang_first_token_reaches_the_client_from_the_decode_pool() -> None:
    # SGLang P/D: the prefill pool computes the prompt and samples the first token in [0,10];
    # it travels with the KV (1.5 ms) and the decode server streams it when it takes the
    # request in at 11.5 (no forward pass). Then 63 rounds: E2E 11.5 + 315 = 326.5.
    result = run_replay(pd_config([{"input_length": 100, "output_length": 64}], backend="sglang"))
    summary = result.summary
    assert summary["mean_ttft_ms"] == 11.5
    assert summary["mean_e2e_latency_ms"] == pytest.approx(326.5, abs=1e-9)
    assert summary["mean_time_to_second_token_ms"] == pytest.approx(5.0, abs=1e-9)
    assert summary["passes"] == 1 + 63


@pytest.mark.parametrize(("backend", "first_token_ms"), [("vllm", 16.5), ("sglang", 11.5)])
def test_pd_with_speculation_on_the_decode_pool(backend: str, first_token_ms: float) -> None:
    # mtp d=1 is allowed on both backends. The first token as above; rates [1]: the other 63
    # tokens at 2 per round = 32 rounds (the last verifies one token).
    spec = {"kind": "mtp", "params": {"depth": 1}, "acceptance_rates": [1.0]}
    result = run_replay(
        pd_config([{"input_length": 100, "output_length": 64}], backend=backend, speculation=spec)
    )
    assert result.summary["sd_rounds"] == 32
    assert result.summary["mean_ttft_ms"] == first_token_ms
    assert result.summary["mean_e2e_latency_ms"] == pytest.approx(
        first_token_ms + 32 * 5.0, abs=1e-9
    )
    assert result.summary["config"]["workers"][0]["speculation"] == "none"  # prefill pool


@pytest.mark.parametrize(("backend", "e2e_ms", "passes"), [("vllm", 16.5, 2), ("sglang", 11.5, 1)])
def test_single_token_outputs_pass_through_the_decode_pool(
    backend: str, e2e_ms: float, passes: int
) -> None:
    # The client receives even a one-token answer from the decode worker: vLLM's computes it
    # (prefill 10, transfer 1.5, last prompt token 5); SGLang's streams the prefill pool's
    # token when the request arrives (10 + 1.5) and finishes it without a pass.
    result = run_replay(pd_config([{"input_length": 100, "output_length": 1}], backend=backend))
    assert result.summary["mean_e2e_latency_ms"] == e2e_ms
    assert result.summary["mean_ttft_ms"] == e2e_ms
    assert result.summary["completed_requests"] == 1
    assert result.summary["passes"] == passes


def test_vllm_decode_pool_allocates_before_it_pulls_the_kv() -> None:
    # Decode pool of 10 blocks: each request (100 in / 40 out) needs 7 blocks for its prompt and
    # peaks at 139 tokens (9 blocks). Both prefill together in [0,10]. At 10 the decode worker
    # allocates A's 7 blocks and starts its load (lands at 11.5); B's 7 do not fit, so B's
    # transfer waits. A: last prompt token [11.5,16.5], then 39 rounds: 16.5 + 195 = 211.5. A
    # never holds fewer than 7 blocks, so B is allocated only when A ends: load [211.5,213],
    # last prompt token [213,218], 39 rounds: 218 + 195 = 413.
    requests = [{"input_length": 100, "output_length": 40}] * 2
    frame = run_replay(pd_config(requests, decode_blocks=10)).requests
    assert list(frame["ttft_ms"]) == pytest.approx([16.5, 218.0], abs=1e-9)
    assert list(frame["e2e_latency_ms"]) == pytest.approx([211.5, 413.0], abs=1e-9)


def test_sglang_decode_pool_queues_transfers_until_kv_frees() -> None:
    # The same on SGLang: both KV transfers land at 11.5. The decode pool takes A in (7 blocks
    # for its 100 prompt tokens and first round; the client sees A's first token at 11.5); B's 7
    # blocks do not fit beside A's. A decodes 39 rounds to 11.5 + 195 = 206.5; B is taken in
    # then (its first token at 206.5) and ends at 206.5 + 195 = 401.5.
    requests = [{"input_length": 100, "output_length": 40}] * 2
    frame = run_replay(pd_config(requests, backend="sglang", decode_blocks=10)).requests
    assert list(frame["ttft_ms"]) == pytest.approx([11.5, 206.5], abs=1e-9)
    assert list(frame["e2e_latency_ms"]) == pytest.approx([206.5, 401.5], abs=1e-9)


@pytest.mark.parametrize(("backend", "ttft_ms"), [("vllm", [2.51, 3.02]), ("sglang", [1.51, 2.02])])
def test_prefill_pool_wakes_when_a_transfer_frees_its_kv(
    backend: str, ttft_ms: list[float]
) -> None:
    # Prefill pool of one 4-token block. A (1 in / 1 out) prefills in [0,1] and holds the block
    # until its KV has left: 0.5 + 1 x 0.01 ms later, at 1.51. B (1 in / 1 out) arrives at 1, is
    # admitted at 1.51 and prefills in [1.51, 2.51]; its KV lands 0.51 ms later, at 3.02.
    # vLLM: A's load starts at 1 (lands 1.51), its last prompt token runs [1.51,2.51]; B's load
    # starts at 2.51 (lands 3.02), its token runs [3.02,4.02] (passes cost 1 ms here): TTFT
    # [2.51, 3.02]. SGLang: the
    # decode pool streams each token when its KV lands: TTFT [1.51, 2.02].
    def worker() -> dict[str, Any]:
        return {
            "kv_cache": {"block_size": 4, "capacity": {"type": "fixed", "blocks": 1}},
            "timing": {"type": "fixed", "prefill_ms": 1.0, "decode_ms": 1.0},
        }

    config = pd_config(
        [
            {"input_length": 1, "output_length": 1},
            {"input_length": 1, "output_length": 1, "timestamp": 1},
        ],
        backend=backend,
    )
    config["engine"]["workers"] = {"prefill": worker(), "decode": worker()}
    frame = run_replay(config).requests
    assert list(frame["ttft_ms"]) == pytest.approx(ttft_ms, abs=1e-9)
    assert list(frame["e2e_latency_ms"]) == pytest.approx(ttft_ms, abs=1e-9)


def test_vllm_decode_pool_frees_landed_kv_instead_of_stalling() -> None:
    # Decode pool of 2 blocks of 4 tokens, one running request; every pass 1 ms; transfers
    # 0.001 ms per token. A (1 in / 5 out) and B (1 in / 1 out) prefill in [0,1]; at 1 the
    # decode worker allocates a block for each and pulls both (landed at 1.001). A computes its
    # last prompt token [1.001,2.001] (first token) and decodes one token per pass; at 5.001
    # it needs 5 tokens (2 blocks) while B's landed KV holds the other: vLLM would preempt A,
    # re-admit it and stall for good. Replay frees B's KV instead (B recomputes its prompt), so
    # A ends at 6.001 unpreempted and B prefills [6.001,7.001].
    def worker(blocks: int) -> dict[str, Any]:
        return {
            "scheduler": {"max_sequences": 1},
            "kv_cache": {"block_size": 4, "capacity": {"type": "fixed", "blocks": blocks}},
            "timing": {"type": "fixed", "prefill_ms": 1.0, "decode_ms": 1.0},
        }

    config = pd_config(
        [{"input_length": 1, "output_length": 5}, {"input_length": 1, "output_length": 1}]
    )
    config["engine"]["workers"] = {"prefill": worker(100), "decode": worker(2)}
    config["engine"]["workers"]["prefill"]["scheduler"] = {"max_sequences": 8}
    config["engine"]["kv_transfer"] = {"bandwidth_bytes_per_s": 1e9, "kv_bytes_per_token": 1000}
    frame = run_replay(config).requests
    assert list(frame["status"]) == ["completed", "completed"]
    assert list(frame["last_token_ms"]) == pytest.approx([6.001, 7.001], abs=1e-9)
    assert list(frame["preemptions"]) == [0, 0]
