"""KV reserved for speculative rounds, as each engine's scheduler reserves it (hand-derived).

vLLM V1 reserves ``num_lookahead_tokens`` (= d for MTP/EAGLE/draft models, 0 for ngram) on top
of every running request's scheduled tokens, but none when it admits a waiting request. SGLang
checks ``num_draft_tokens + topk x steps`` free slots per decoding request (the verify width
plus d for a chain) and, with SD on, retracts from the back of the batch.
"""

from __future__ import annotations

from typing import Any

from aisim.config import run_replay


def config(
    requests: list[dict[str, Any]],
    *,
    backend: str,
    kind: str = "mtp",
    blocks: int = 6,
    scheduler: dict[str, Any] | None = None,
) -> dict[str, Any]:
    worker: dict[str, Any] = {
        "kv_cache": {
            "block_size": 4,
            "prefix_caching": False,
            "capacity": {"type": "fixed", "blocks": blocks},
        },
        "timing": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0},
    }
    if scheduler is not None:
        worker["scheduler"] = scheduler
    count_key = "depth" if kind == "mtp" else "num_speculative_tokens"
    speculation = {"kind": kind, "params": {count_key: 2}, "acceptance_rates": [0.0, 0.0]}
    return {
        "traffic": {"source": {"type": "agentic", "requests": requests}},
        "engine": {
            "backend": backend,
            "workers": {"aggregated": worker},
            "speculation": speculation,
        },
    }


TWO = [{"input_length": 8, "output_length": 4}, {"input_length": 8, "output_length": 4}]


def test_vllm_lookahead_preempts_where_the_verify_width_fits() -> None:
    # 6 blocks of 4 tokens; A and B (8 in / 4 out) at 0; MTP d = 2 (w = 3, lookahead 2), every
    # draft rejected. Step 1: both admitted without lookahead (2 blocks each), prefill [0,10].
    # Step 2: A needs 8 + 3 + 2 = 13 tokens (4 blocks), taking the 2 free ones; B needs 2 more,
    # none is free: B (the latest) is preempted, by the SD reservation (with plain steps A and B
    # would take one block each). A runs alone: rounds [10,15], [15,20], [20,25] (w = 3, 2, 1,
    # always 13 tokens with the lookahead); B's recompute (9 known tokens, 3 blocks) does not
    # fit beside A's 4 before A ends at 25. B re-prefills [25,35] (its 2nd token) and decodes 2
    # rounds: 45.
    result = run_replay(config(TWO, backend="vllm"))
    frame = result.requests
    assert list(frame["first_token_ms"]) == [10.0, 10.0]
    assert list(frame["last_token_ms"]) == [25.0, 45.0]
    assert list(frame["preemptions"]) == [0, 1]
    assert result.summary["preemptions"] == 1
    assert result.summary["sd_reservation_preemptions"] == 1


def test_vllm_ngram_has_no_lookahead() -> None:
    # ngram d = 2, drafts rejected, no lookahead: step 2 needs 8 + 3 = 11 tokens (3 blocks)
    # each, one more block each: both fit (0 free); with MTP's lookahead of 2 they would not
    # (the test above). Round 2 needs 9 + 3 = 12 (3 blocks): both fit again. vLLM verifies all
    # drafts even in a request's last round, so round 3 (1 token left) needs 10 + 3 = 13 tokens
    # (4 blocks): A takes one more, none is left for B, and B (the latest) is preempted by the
    # SD reservation (a plain step would need 11: 3 blocks). A ends at 25; B recomputes its 11
    # known tokens [25,35], which emits its last token.
    result = run_replay(config(TWO, backend="vllm", kind="ngram"))
    frame = result.requests
    assert list(frame["last_token_ms"]) == [25.0, 35.0]
    assert result.summary["preemptions"] == 1
    assert result.summary["sd_reservation_preemptions"] == 1


def test_vllm_ngram_two_rounds_fit_without_lookahead() -> None:
    # The same with 3 output tokens: rounds 1 and 2 (11 and 12 tokens, 3 blocks each) fit for
    # both requests: no preemption, both end at 20.
    three = [{**request, "output_length": 3} for request in TWO]
    result = run_replay(config(three, backend="vllm", kind="ngram"))
    assert list(result.requests["last_token_ms"]) == [20.0, 20.0]
    assert result.summary["preemptions"] == 0


def test_sglang_reserves_draft_slots_and_retracts_from_the_back() -> None:
    # 7 pages of 4 tokens, new_token_ratio 0 (running requests reserve nothing); A (10 in / 4
    # out) and B (8 in / 4 out) at 0; MTP d = 2 (w = 3 plus 2 draft slots), drafts rejected.
    # Pass 1: A is admitted alone (B's 8 + 4 = 12 is not below 16 free - 4 for A's output);
    # prefill [0,10]. Pass 2: B (12 < 16) prefills [10,20]; 2 pages free. Pass 3 decodes A (10
    # + 3 + 2 = 15 tokens: +1 page) and B (8 + 3 + 2 = 13: +2 pages): 3 > 2, so one is
    # retracted, by the SD reservation (plain steps need 0 + 1 pages). With SD, SGLang retracts
    # from the back: B (without SD the sort would pick A, the longer prompt at equal output).
    # The ratio becomes min(1, (1 + 20) / 5) = 1. A decodes [20,25]. Pass 4: B (9 known, 3
    # left) needs 12 < 16 - 1 x 2 and recomputes [25,35] (its 2nd token). Pass 5: A needs +1
    # page, B (9 + 2 + 2) +1, one is free: B is retracted again (SD again: plain steps need 0),
    # A decodes [35,40]. Pass 6: B (10 known) recomputes [40,50] (3rd token). Pass 7: A (12 + 1
    # + 2) +1, B (10 + 1 + 2) +1, one free: B retracted (plain steps need 1 <= 1); A's last
    # round [50,55]. Pass 8: B alone recomputes 11 tokens [55,65], its 4th and last token.
    requests = [
        {"input_length": 10, "output_length": 4},
        {"input_length": 8, "output_length": 4},
    ]
    ratio = {"init_new_token_ratio": 0.0, "min_new_token_ratio": 0.0}
    result = run_replay(config(requests, backend="sglang", blocks=7, scheduler=ratio))
    frame = result.requests
    assert list(frame["first_token_ms"]) == [10.0, 20.0]
    assert list(frame["last_token_ms"]) == [55.0, 65.0]
    assert list(frame["preemptions"]) == [0, 3]
    assert result.summary["sd_reservation_preemptions"] == 3
