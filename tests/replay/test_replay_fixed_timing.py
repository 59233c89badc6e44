"""Hand-checkable replays under fixed timing (prefill pass X ms, decode round Y ms).

Every expected number below is derived by hand in the comment next to it (docs/design.md#replay fixed-timing reference:
one request of 100 in / 64 out at X = 10, Y = 5 has TTFT 10 and E2E 325; with 3 drafts all
accepted, E2E 90).
"""

from __future__ import annotations

from typing import Any

import pytest

from aisim.config import run_replay

X = 10.0
Y = 5.0


def config(
    requests: list[dict[str, Any]],
    *,
    backend: str = "vllm",
    speculation: dict[str, Any] | None = None,
    blocks: int = 1000,
    block_size: int = 16,
    scheduler: dict[str, Any] | None = None,
    ranks: int = 1,
    prefix_caching: bool = True,
) -> dict[str, Any]:
    worker: dict[str, Any] = {
        "parallelism": {"attention_data": ranks},
        "kv_cache": {
            "block_size": block_size,
            "prefix_caching": prefix_caching,
            "capacity": {"type": "fixed", "blocks": blocks},
        },
        "timing": {"type": "fixed", "prefill_ms": X, "decode_ms": Y},
    }
    if scheduler is not None:
        worker["scheduler"] = scheduler
    engine: dict[str, Any] = {"backend": backend, "workers": {"aggregated": worker}}
    if speculation is not None:
        engine["speculation"] = speculation
    return {"traffic": {"source": {"type": "agentic", "requests": requests}}, "engine": engine}


def one(prompt: int = 100, output: int = 64, **extra: Any) -> dict[str, Any]:
    return {"input_length": prompt, "output_length": output, **extra}


def mtp(rates: list[float]) -> dict[str, Any]:
    return {"kind": "mtp", "params": {"depth": len(rates)}, "acceptance_rates": rates}


@pytest.mark.parametrize("backend", ["vllm", "sglang"])
def test_single_request_reference(backend: str) -> None:
    # Prefill pass 0..10 emits the first token; 63 decode rounds of 5 ms follow: 10 + 315.
    result = run_replay(config([one()], backend=backend))
    summary = result.summary
    assert summary["completed_requests"] == 1
    assert summary["mean_ttft_ms"] == 10.0
    assert summary["mean_e2e_latency_ms"] == 325.0
    assert summary["mean_tpot_ms"] == 5.0  # (325 - 10) / 63
    assert summary["mean_itl_ms"] == 5.0
    assert summary["mean_time_to_second_token_ms"] == 5.0
    assert summary["duration_ms"] == 325.0
    assert summary["sd_rounds"] == 0
    assert summary["mean_acceptance_length"] is None
    row = result.requests.iloc[0]
    assert row["decode_rounds"] == 63
    assert row["emitted_tokens"] == 64


@pytest.mark.parametrize("backend", ["vllm", "sglang"])
def test_all_drafts_accepted(backend: str) -> None:
    # 63 tokens after the first at 4 per round: ceil(63 / 4) = 16 rounds; 10 + 16 * 5 = 90.
    # 15 full rounds emit 60; the last round is clamped to the 3 tokens left (2 drafts).
    summary = run_replay(config([one()], backend=backend, speculation=mtp([1.0, 1.0, 1.0]))).summary
    assert summary["mean_ttft_ms"] == 10.0
    assert summary["mean_e2e_latency_ms"] == 90.0
    assert summary["sd_rounds"] == 16
    assert summary["accepted_draft_tokens"] == 47  # 15 * 3 + 2
    assert summary["accepted_length_histogram"] == {"0": 0, "1": 0, "2": 1, "3": 15}
    assert summary["mean_acceptance_length"] == 63 / 16


def test_no_draft_accepted_gives_one_token_per_round() -> None:
    summary = run_replay(config([one()], speculation=mtp([0.0, 0.0, 0.0]))).summary
    assert summary["mean_e2e_latency_ms"] == 325.0
    assert summary["sd_rounds"] == 63
    assert summary["accepted_length_histogram"] == {"0": 63, "1": 0, "2": 0, "3": 0}
    assert summary["mean_acceptance_length"] == 1.0


def test_last_round_is_clamped_to_the_remaining_output() -> None:
    # Output 6: the prefill emits 1; round 1 emits 4 (w = 4); round 2 has 1 token left, so
    # w = 1 and no draft can be accepted: E2E = 10 + 2 * 5.
    result = run_replay(config([one(output=6)], speculation=mtp([1.0, 1.0, 1.0])))
    assert result.summary["mean_e2e_latency_ms"] == 20.0
    assert result.summary["accepted_length_histogram"] == {"0": 1, "1": 0, "2": 0, "3": 1}
    row = result.requests.iloc[0]
    assert (row["sd_rounds"], row["accepted_drafts"], row["emitted_tokens"]) == (2, 3, 6)


def test_legacy_nextn_equals_canonical_mtp() -> None:
    canonical = run_replay(config([one()], speculation=mtp([1.0, 1.0, 1.0])))
    legacy_config = config([one()])
    legacy_config["engine"]["nextn"] = 3
    legacy_config["engine"]["nextn_accepted"] = 3
    legacy = run_replay(legacy_config)
    assert legacy.summary["mean_e2e_latency_ms"] == 90.0
    assert legacy.columns == canonical.columns


def test_mixed_pass_costs_prefill_plus_decode() -> None:
    # A (100 in / 3 out) at 0, B (50 in / 2 out) at 12. Passes: [0,10] prefill A (A tok 1);
    # [10,15] decode A (tok 2); [15,30] decode A + prefill B = X + Y (A tok 3 -> done at 30,
    # B tok 1 at 30); [30,35] decode B (done). TTFT B = 18, E2E A = 30, E2E B = 23.
    result = run_replay(config([one(100, 3), one(50, 2, timestamp=12)]))
    frame = result.requests
    assert list(frame["ttft_ms"]) == [10.0, 18.0]
    assert list(frame["e2e_latency_ms"]) == [30.0, 23.0]


def test_a_front_ends_admission_delays_the_engine_not_the_clock() -> None:
    # The traffic above with admission_ms 2: A reaches the engine at 2, [2,12] prefill A;
    # [12,17] decode A; B (arrives 12) reaches it at 14; [17,32] decode A + prefill B (A done
    # at 32, B's first token at 32: TTFT 20); [32,37] decode B (E2E 25). Arrivals stay 0, 12.
    result = run_replay(config([one(100, 3), one(50, 2, timestamp=12)]), admission_ms=2.0)
    frame = result.requests
    assert list(frame["arrival_ms"]) == [0.0, 12.0]
    assert list(frame["ttft_ms"]) == [12.0, 20.0]
    assert list(frame["e2e_latency_ms"]) == [32.0, 25.0]
    assert result.summary["config"]["admission_ms"] == 2.0


def test_a_front_ends_admission_during_a_pass_delays_the_engine_s_next_pass() -> None:
    # B arrives at 13, inside pass [12,17] (decode A): the front end's 2 ms share the engine's
    # core, so the next pass pays them. A reaches the engine at 2, [2,12] prefill A; [12,17]
    # decode A; B reaches it at 15; [17,34] decode A + prefill B = X + Y + 2 (A done at 34, B's
    # first token at 34: TTFT 21); [34,39] decode B (E2E 26). A arrived to an idle engine: its
    # prefill pays nothing extra.
    result = run_replay(config([one(100, 3), one(50, 2, timestamp=13)]), admission_ms=2.0)
    frame = result.requests
    assert list(frame["ttft_ms"]) == [12.0, 21.0]
    assert list(frame["e2e_latency_ms"]) == [34.0, 26.0]
    # without the front end: [0,10] prefill A; [10,15] decode A; [15,30] decode A + prefill B
    plain = run_replay(config([one(100, 3), one(50, 2, timestamp=13)])).requests
    assert list(plain["ttft_ms"]) == [10.0, 17.0]


def test_a_front_end_that_outlasts_the_engine_s_last_pass_is_charged_only_the_overlap() -> None:
    # A reaches the engine at 2: [2,12] prefill, [12,17] decode (A done: E2E 17). B is sent at
    # 16, inside A's last pass, and reaches the engine at 18: it shared only 17 - 16 = 1 ms of
    # the core with a pass, so its prefill pays 1: [18,29] (TTFT 13), [29,34] decode (E2E 18).
    result = run_replay(config([one(100, 2), one(50, 2, timestamp=16)]), admission_ms=2.0)
    frame = result.requests
    assert list(frame["ttft_ms"]) == [12.0, 13.0]
    assert list(frame["e2e_latency_ms"]) == [17.0, 18.0]


@pytest.mark.parametrize("value", [-1.0, float("nan"), True, "2"])
def test_a_bad_admission_is_refused(value: Any) -> None:
    from aisim.errors import ConfigError

    with pytest.raises(ConfigError, match=r"admission_ms: .* is not a finite number of ms >= 0"):
        run_replay(config([one()]), admission_ms=value)


def test_sglang_does_not_mix_prefill_and_decode() -> None:
    # Same traffic on SGLang: [15,25] prefill B alone (B tok 1, TTFT 13); [25,30] decode A and
    # B: A tok 3 (E2E 30), B tok 2 (E2E 30 - 12 = 18).
    result = run_replay(config([one(100, 3), one(50, 2, timestamp=12)], backend="sglang"))
    frame = result.requests
    assert list(frame["ttft_ms"]) == [10.0, 13.0]
    assert list(frame["e2e_latency_ms"]) == [30.0, 18.0]


@pytest.mark.parametrize(("interval", "ttft_b", "e2e_b"), [(1, 13.0, 18.0), (4, 28.0, 33.0)])
def test_sglang_scheduler_recv_interval(interval: int, ttft_b: float, e2e_b: float) -> None:
    # A (100 in / 16 out) at 0, B (50 in / 2 out) at 12; SGLang's receive counter starts at the
    # interval, each pass adds 1 (decode) or 1000 (prefill) before the next, and requests are
    # taken in when it reaches the interval (then 0). Interval 4: t=0 counter 5 -> take A,
    # prefill [0,10]; t=10 +1000 -> due (inbox empty), decode [10,15]; B arrives at 12; t=15,
    # 20, 25: counter 1, 2, 3, decodes; t=30: 4 -> take B, prefill [30,40]: TTFT 40 - 12 = 28,
    # B's second token in the decode [40,45]: E2E 33. Interval 1: B is taken in at 15, prefill
    # [15,25]: TTFT 13, E2E 30 - 12 = 18. A pauses for B's 10 ms prefill either way: its 15
    # decode rounds and two passes: 10 + 75 + 10 = 95.
    scheduler = {"scheduler_recv_interval": interval}
    result = run_replay(
        config([one(100, 16), one(50, 2, timestamp=12)], backend="sglang", scheduler=scheduler)
    )
    frame = result.requests
    assert list(frame["ttft_ms"]) == [10.0, ttft_b]
    assert list(frame["e2e_latency_ms"]) == [95.0, e2e_b]


def test_attention_dp_pass_ends_at_the_slowest_rank() -> None:
    # Two ranks: A on rank 0, B (arriving at 12) on the idle rank 1. The pass at 15 carries a
    # decode on rank 0 (5 ms) and a prefill on rank 1 (10 ms): it ends at 25, not 30.
    result = run_replay(config([one(100, 3), one(50, 2, timestamp=12)], ranks=2))
    frame = result.requests
    assert list(frame["ttft_ms"]) == [10.0, 13.0]
    assert list(frame["e2e_latency_ms"]) == [25.0, 18.0]  # B: tok 2 at [25,30]


def test_simultaneous_arrivals_share_one_prefill_pass() -> None:
    result = run_replay(config([one(100, 2), one(100, 2)]))
    assert list(result.requests["ttft_ms"]) == [10.0, 10.0]
    assert result.summary["passes"] == 2


def test_chunked_prefill_splits_the_prompt_by_the_token_budget() -> None:
    # 100 prompt tokens at 40 per pass: chunks 40, 40, 20 -> first token at 30; one decode.
    result = run_replay(config([one(100, 2)], scheduler={"max_batched_tokens": 40}))
    assert result.summary["mean_ttft_ms"] == 30.0
    assert result.summary["mean_e2e_latency_ms"] == 35.0


def test_vllm_preemption_recomputes_the_latest_request() -> None:
    # 10 blocks of 16 tokens, two requests of 64 in / 64 out at 0, no prefix cache. Both
    # prefill in [0,10] (4 blocks each). Decode step k needs 64 + k tokens each: 5 blocks each up
    # to k = 16 (ends at 90, B has emitted 17). Step 17 needs 6 blocks for A: B (admitted last)
    # is preempted. B (81 known tokens, 6 blocks) cannot return until A (peak 127 tokens, 8
    # blocks) finishes at 325 -- A alone runs 10 + 63 * 5. B re-prefills [325,335] (token 18)
    # and decodes its last 46 tokens: 335 + 230 = 565.
    result = run_replay(config([one(64, 64), one(64, 64)], blocks=10, prefix_caching=False))
    frame = result.requests
    assert list(frame["e2e_latency_ms"]) == [325.0, 565.0]
    assert list(frame["preemptions"]) == [0, 1]
    assert list(frame["emitted_tokens"]) == [64, 64]
    assert result.summary["kv_peak_used_blocks"] == [[10]]
    assert result.summary["preemptions"] == 1


def test_recompute_hits_the_prefix_cache_left_after_lru_eviction() -> None:
    # Same run with prefix caching: B's 5 full blocks (80 computed tokens) stay cached when it is
    # preempted, the last one first in line for eviction. A takes 3 more blocks (at 81, 97 and
    # 113 tokens), evicting B's blocks 4, 3 and 2; B's recompute hits blocks 0 and 1 (32 tokens).
    result = run_replay(config([one(64, 64), one(64, 64)], blocks=10, prefix_caching=True))
    frame = result.requests
    assert list(frame["e2e_latency_ms"]) == [325.0, 565.0]
    assert list(frame["cached_prompt_tokens"]) == [0, 32]


def test_sglang_retracts_when_kv_is_full() -> None:
    # Page size 1, 200 tokens, running requests reserve nothing (ratio 0), but a new request
    # needs its prompt plus its whole output (SGLang's PrefillAdder). A is admitted at 0 (nothing
    # runs); B (64 + 64 = 128) is not, beside A's 64 pages and A's 64-token output reserve. At 10
    # B fits (128 < 200 - 64) and prefills [10,20]. Decode pass n needs 64 + n tokens each:
    # both fit up to n = 36 (ends at 200, 37 tokens each). Pass 37 needs 2 x 101 > 200: B (tie
    # on tokens and prompt, later) is retracted. B needs 128 free tokens to return, which only
    # happens when A ends at 200 + 27 x 5 = 335; B re-prefills 101 tokens [335,345] (its 38th
    # token) and decodes its last 26: 345 + 130 = 475.
    scheduler = {"init_new_token_ratio": 0.0, "min_new_token_ratio": 0.0}
    result = run_replay(
        config(
            [one(64, 64), one(64, 64)],
            backend="sglang",
            blocks=200,
            block_size=1,
            scheduler=scheduler,
            prefix_caching=False,
        )
    )
    frame = result.requests
    assert list(frame["e2e_latency_ms"]) == [335.0, 475.0]
    assert list(frame["preemptions"]) == [0, 1]


def test_mooncake_hash_ids_share_prefix_blocks() -> None:
    # B arrives after A finished; A's 4 prompt blocks stay cached. B shares the first 3 hash ids
    # and at most (64 - 1) // 16 = 3 blocks can hit: 48 cached tokens. C shares only 2.
    requests = [
        one(64, 2, hash_ids=[1, 2, 3, 4]),
        one(64, 2, hash_ids=[1, 2, 3, 4], timestamp=100),
        one(64, 2, hash_ids=[1, 2, 7, 8], timestamp=200),
    ]
    frame = run_replay(config(requests)).requests
    assert list(frame["cached_prompt_tokens"]) == [0, 48, 32]
    frame = run_replay(config(requests, prefix_caching=False)).requests
    assert list(frame["cached_prompt_tokens"]) == [0, 0, 0]


def test_sd_rounds_reserve_the_verification_width_and_the_lookahead() -> None:
    # As the preemption test, but MTP d = 3 with every draft rejected: progress is one token
    # per round, yet each round reserves w = 4 verify slots plus vLLM's 3 lookahead slots
    # (num_lookahead_tokens = num_speculative_tokens for MTP). Round k needs 64 + (k - 1) + 4 +
    # 3 = 70 + k tokens each: 5 blocks up to k = 10 (ends at 60, B has emitted 11); round 11
    # needs 81 tokens (6 blocks) for A, so B is preempted, by the SD reservation (A's plain
    # step, 75 tokens, fits its 5 blocks). B (75 known tokens, 5 blocks, admitted without
    # lookahead) fits again only while A needs at most 5 blocks, so it returns when A ends at
    # 325: re-prefill [325,335] (token 12), then 52 rounds: 335 + 260 = 595.
    result = run_replay(
        config(
            [one(64, 64), one(64, 64)],
            blocks=10,
            prefix_caching=False,
            speculation=mtp([0.0, 0.0, 0.0]),
        )
    )
    frame = result.requests
    assert list(frame["e2e_latency_ms"]) == [325.0, 595.0]
    assert list(frame["preemptions"]) == [0, 1]
    assert list(frame["accepted_drafts"]) == [0, 0]
    assert result.summary["preemptions"] == 1
    assert result.summary["sd_reservation_preemptions"] == 1


def test_vllm_ngram_reserves_no_lookahead() -> None:
    # The same with ngram (vLLM reserves no lookahead: use_eagle() and uses_draft_model() are
    # both false): round k needs 64 + (k - 1) + 4 = 67 + k tokens each, 5 blocks up to k = 13
    # (ends at 75, B has emitted 14); round 14 needs 81 for A and B is preempted (A's plain
    # step, 78 tokens, fits: the verify width caused it). B (78 known) returns when A ends at
    # 325: re-prefill [325,335] (token 15), then 49 rounds: 335 + 245 = 580.
    ngram = {
        "kind": "ngram",
        "params": {"num_speculative_tokens": 3},
        "acceptance_rates": [0.0, 0.0, 0.0],
    }
    result = run_replay(
        config([one(64, 64), one(64, 64)], blocks=10, prefix_caching=False, speculation=ngram)
    )
    frame = result.requests
    assert list(frame["e2e_latency_ms"]) == [325.0, 580.0]
    assert result.summary["sd_reservation_preemptions"] == 1
    assert result.summary["config"]["workers"][0]["lookahead_tokens"] == 0


def test_trt_attention_dp_balance_holds_contexts_until_timeout() -> None:
    # Two attention ranks (vLLM-like scheduler), TensorRT-LLM's balance with timeout 3 and no
    # batching wait. A and B (100 in / 20 out) arrive at 0, one per rank; C (50 in / 2 out)
    # arrives at 22 on rank 0 (least loaded, lowest index). Plan at 0: every rank has a context
    # and a free slot -> counter 0, both prefill [0,10]. Every later plan with some rank
    # without a context raises the counter while every rank decodes; at 3 it restarts at 0 and
    # contexts may start: plans at 10 (1), 15 (2), 20 (3 -> 0, nothing waits), 25 (1: C held),
    # 30 (2: held), 35 (3 -> 0: released). C's prefill runs beside A's decode on rank 0 (X + Y
    # = 15 ms) while B decodes on rank 1: the pass [35,50] ends at the slower rank: TTFT C =
    # 50 - 22 = 28. Without the balance C starts at 25, [25,40]: TTFT 18.
    scheduler = {
        "attention_dp_enable_balance": True,
        "attention_dp_time_out_iters": 3,
        "attention_dp_batching_wait_iters": 0,
    }
    requests = [one(100, 20), one(100, 20), one(50, 2, timestamp=22)]
    held = run_replay(config(requests, ranks=2, scheduler=scheduler))
    free = run_replay(config(requests, ranks=2))
    assert list(held.requests["ttft_ms"]) == [10.0, 10.0, 28.0]
    assert list(free.requests["ttft_ms"]) == [10.0, 10.0, 18.0]


@pytest.mark.parametrize(("ranks", "ends"), [(1, [12.0, 19.0, 26.0]), (2, [11.0, 17.0, 23.0])])
def test_sglang_host_time_without_overlap(ranks: int, ends: list[float]) -> None:
    # SGLang without the overlap scheduler: 1 ms of host work per request of the busiest rank
    # after every pass. A and B (100 in / 3 out) arrive together. One rank: the prefill of both
    # [0, 10 + 2] (TTFT 12), two decodes of 5 + 2 ms: tokens at 19 and 26. Two attention ranks
    # (one request each): 10 + 1, then 5 + 1 twice: 11, 17, 23.
    scheduler = {"host_us_per_request": 1000.0}
    result = run_replay(
        config([one(100, 3), one(100, 3)], backend="sglang", scheduler=scheduler, ranks=ranks)
    )
    frame = result.requests
    assert list(frame["ttft_ms"]) == [ends[0], ends[0]]
    assert list(frame["e2e_latency_ms"]) == [ends[2], ends[2]]


@pytest.mark.parametrize(("ranks", "ends"), [(1, [10.0, 18.0, 26.0]), (2, [10.0, 15.0, 20.0])])
def test_sglang_host_time_with_overlap(ranks: int, ends: list[float]) -> None:
    # With the overlap scheduler the same host work (4 ms per request of the busiest rank) runs
    # beside the GPU's pass: a pass lasts the longer of the two. One rank, two requests: 8 ms
    # of host work per pass; the prefill max(10, 8) = 10 (TTFT 10), each decode max(5, 8) = 8:
    # tokens at 18 and 26. Two attention ranks (one request each): 4 ms, hidden behind every
    # pass: 10, 15, 20, the replay without host time.
    scheduler = {"host_us_per_request": 4000.0, "host_overlapped": True}
    result = run_replay(
        config([one(100, 3), one(100, 3)], backend="sglang", scheduler=scheduler, ranks=ranks)
    )
    frame = result.requests
    assert list(frame["ttft_ms"]) == [ends[0], ends[0]]
    assert list(frame["e2e_latency_ms"]) == [ends[2], ends[2]]


def test_sglang_host_time_is_checked() -> None:
    from aisim.errors import ConfigError

    bad = config([one()], backend="sglang", scheduler={"host_us_per_request": -1.0})
    with pytest.raises(ConfigError, match="host_us_per_request"):
        run_replay(bad)
