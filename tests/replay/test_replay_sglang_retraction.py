"""SGLang's admission reserve after a retraction, derived by hand (``retract_decode`` sets
``new_token_ratio`` from the requests it kept instead of resetting it)."""

from __future__ import annotations

from aisim.replay import run


def test_sglang_ratio_after_a_retraction_is_estimated_from_the_kept_requests() -> None:
    # Page size 1, 150 tokens, d = 3 with every draft rejected (one token per round, w = 4
    # reserved), ratio 0 and no decay. Round k needs 64 + (k - 1) + 4 tokens per request: both
    # fit up to k = 8 (planned at 45, ends 50). Round 9 needs 2 x 76 > 150: B (tie on emitted
    # 9 and prompt, later) is retracted. SGLang then sets the ratio to (9 + 20) / (64 + 1) from
    # A alone (a reset to 0 would re-admit B at once: its 73 tokens fit the 77 free, and every
    # round after that would retract it again). With 29/65 B needs 73 + 29/65 x 55 = 97.5 free
    # tokens besides A's reserve, which never happens while A runs: A ends at 50 + 55 x 5 =
    # 325; B re-prefills 73 tokens [325,335] (its 10th token) and runs 54 rounds: 605.
    worker = {
        "scheduler": {
            "init_new_token_ratio": 0.0,
            "min_new_token_ratio": 0.0,
            "new_token_ratio_decay": 0.0,
        },
        "kv_cache": {
            "block_size": 1,
            "prefix_caching": False,
            "capacity": {"type": "fixed", "blocks": 150},
        },
        "timing": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0},
    }
    request = {"input_length": 64, "output_length": 64}
    config = {
        "traffic": {"source": {"type": "agentic", "requests": [request, dict(request)]}},
        "engine": {
            "backend": "sglang",
            "speculation": {
                "kind": "mtp",
                "params": {"depth": 3},
                "acceptance_rates": [0.0, 0.0, 0.0],
            },
            "workers": {"aggregated": worker},
        },
    }
    frame = run(config).requests
    assert list(frame["e2e_latency_ms"]) == [325.0, 605.0]
    assert list(frame["preemptions"]) == [0, 1]
