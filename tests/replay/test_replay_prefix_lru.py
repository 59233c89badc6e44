"""Prefix-cache LRU order under admission pressure, derived by hand (vLLM V1 semantics: a
waiting request that does not fit leaves its prefix hits where they are in the LRU queue;
``allocate_slots`` checks the free blocks before it touches the computed blocks)."""

from __future__ import annotations

from typing import Any

from aisim.config import run_replay


def config(requests: list[dict[str, Any]], backend: str) -> dict[str, Any]:
    worker = {
        "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": 10}},
        "timing": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0},
    }
    return {
        "traffic": {"source": {"type": "agentic", "requests": requests}},
        "engine": {"backend": backend, "workers": {"aggregated": worker}},
    }


REQUESTS = [
    # A [0,10] and B [20,30] finish at once; their units stay cached: LRU = A2, A1, B4, B3.
    {"input_length": 32, "output_length": 1, "hash_ids": [1, 2]},
    {"input_length": 32, "output_length": 1, "hash_ids": [3, 4], "timestamp": 20},
    # R prefills 90 tokens in [40,50] on the 6 free blocks; decode round k grows R to 90 + k
    # tokens, so round 7 (planned at 80) needs a 7th block and evicts the LRU head. R's 10th
    # token ends at 95.
    {"input_length": 90, "output_length": 10, "timestamp": 40},
    # C shares A's two units. Each pass from 50 to 90 it needs 96 - 32 = 64 tokens = 4 blocks
    # but only B's 2 evictable blocks are left besides its own hits: refused, LRU untouched.
    # So round 7 evicts A2, and when R ends C hits A1 only: 16 cached tokens, prefill [95,105].
    {"input_length": 96, "output_length": 1, "hash_ids": [1, 2, 9, 10, 11, 12], "timestamp": 45},
]


def test_a_refused_vllm_admission_does_not_refresh_its_prefix_hits() -> None:
    frame = run_replay(config(REQUESTS, "vllm")).requests
    assert list(frame["cached_prompt_tokens"]) == [0, 0, 0, 16]
    assert list(frame["last_token_ms"]) == [10.0, 30.0, 95.0, 105.0]
