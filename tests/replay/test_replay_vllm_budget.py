"""vLLM-like token budget with SD, derived by hand: a decoding request that finds less budget
left than its verification width runs a shorter round (vLLM's scheduler caps ``num_new_tokens``
at the budget and trims ``spec_token_ids``), instead of sitting the pass out."""

from __future__ import annotations

from aisim.config import run_replay


def test_an_sd_round_is_trimmed_to_the_budget_left() -> None:
    # Budget 5, d = 3 with every draft accepted (w = 4), prefill 10 ms, decode 5 ms. B (5 in /
    # 30 out) is admitted first and prefills [0,10] (1 token). Then each pass B's round takes 4
    # and A (5 / 30) gets the last token of budget for its prefill: [10,25], [25,40], [40,55],
    # [55,70], [70,85] (mixed passes cost 15); B has 21 tokens and A its first at 85. At 85 and
    # 90 B takes 4 and A runs a 1-wide round (no drafts) with the 1 left: [85,90], [90,95]
    # -> B 29, A 3. At 95 B needs 1 token, but vLLM verifies all 3 drafts of a running request
    # even in its last round (Scheduler.schedule caps num_new_tokens by the budget and
    # max_model_len, never by max_tokens), so B's round takes 4 again and A's is 1 wide:
    # [95,100] -> B done (30, the extra tokens dropped), A 4. A alone: 26 tokens at 4 per round
    # is 7 rounds: 100 + 7 x 5 = 135.
    worker = {
        "scheduler": {"max_batched_tokens": 5},
        "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": 100}},
        "timing": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0},
    }
    requests = [
        {"request_id": "B", "input_length": 5, "output_length": 30},
        {"request_id": "A", "input_length": 5, "output_length": 30},
    ]
    config = {
        "traffic": {"source": {"type": "agentic", "requests": requests}},
        "engine": {
            "speculation": {"kind": "mtp", "params": {"depth": 3}, "acceptance_rates": [1, 1, 1]},
            "workers": {"aggregated": worker},
        },
    }
    frame = run_replay(config).requests
    assert list(frame["first_token_ms"]) == [10.0, 85.0]
    assert list(frame["last_token_ms"]) == [100.0, 135.0]
    assert list(frame["emitted_tokens"]) == [30, 30]
