"""SGLang-like admission reserve and retraction, derived by hand against SGLang's rules: a new
request needs its prompt plus its whole remaining output free (``PrefillAdder.add_one_req``),
running requests reserve ``new_token_ratio`` x their remaining output, and ``retract_decode``
sets the ratio from the requests it kept instead of resetting it."""

from __future__ import annotations

from typing import Any

from aisim.config import run_replay


def config(requests: list[tuple[int, int, int]], blocks: int, ratio: float) -> dict[str, Any]:
    """``requests``: (prompt, output, arrival ms); page size 1, no prefix caching, a fixed
    ``new_token_ratio`` (no decay), prefill 10 ms and decode 5 ms per pass."""
    worker = {
        "scheduler": {
            "init_new_token_ratio": ratio,
            "min_new_token_ratio": ratio,
            "new_token_ratio_decay": 0.0,
        },
        "kv_cache": {
            "block_size": 1,
            "prefix_caching": False,
            "capacity": {"type": "fixed", "blocks": blocks},
        },
        "timing": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0},
    }
    rows = [
        {"input_length": prompt, "output_length": output, "timestamp": arrival}
        for prompt, output, arrival in requests
    ]
    return {
        "traffic": {"source": {"type": "agentic", "requests": rows}},
        "engine": {"backend": "sglang", "workers": {"aggregated": worker}},
    }


def test_a_new_request_reserves_its_whole_output() -> None:
    # 300 tokens, ratio 0.5. A (100 in / 100 out) prefills [0,10]. B (50 / 120, at 1) needs
    # 50 + 120 = 170 below 300 - 100 (A's pages) - 0.5 x 99 (A's reserve) = 150.5: refused
    # (a ratio-scaled reserve for B, 50 + 60 = 110, would have admitted it and later forced a
    # retraction: 199 + 169 > 300). After k of A's rounds the room is 150.5 - 0.5 k, so B waits
    # for A to end at 10 + 99 x 5 = 505: prefill [505,515] (TTFT 514), 119 rounds: 1110.
    frame = run_replay(config([(100, 100, 0), (50, 120, 1)], blocks=300, ratio=0.5)).requests
    assert list(frame["ttft_ms"]) == [10.0, 514.0]
    assert list(frame["e2e_latency_ms"]) == [505.0, 1109.0]
    assert list(frame["preemptions"]) == [0, 0]


def test_ratio_after_a_retraction_is_estimated_from_the_kept_requests() -> None:
    # 200 tokens, ratio 0 (no reserve for running requests), all at 0. A (10 / 60) is admitted
    # alone (nothing runs) and prefills [0,10]; B (10 / 150) is refused beside A's 10 pages and
    # A's whole 60-token output (160 >= 130), fits at 10 (160 < 190) and prefills [10,20]; D
    # (10 / 100) likewise at 20 (110 < 180), [20,30]. Decode pass n needs 10 + n
    # tokens each: 3 x 66 fits (n = 56), pass 57 (at 310) does not: D (all tied at 57 tokens
    # and 10 prompt tokens; the later request) is retracted. The ratio becomes
    # (57 + 57 + 2 x 20) / (60 + 150 + 1) = 154/211 from A and B. A ends at 325; then D needs
    # 10 + 100 = 110 below 200 - 69 (B's pages) - 154/211 x 90 (B's reserve) = 65.3, and the
    # room only shrinks while B runs (a ratio reset to 0 would re-admit D at once and retract
    # it again). B ends at 325 + 90 x 5 = 775; D re-prefills 67 tokens [775,785] (its 58th
    # token) and decodes 42 more: 995.
    frame = run_replay(
        config([(10, 60, 0), (10, 150, 0), (10, 100, 0)], blocks=200, ratio=0.0)
    ).requests
    assert list(frame["first_token_ms"]) == [10.0, 20.0, 30.0]
    assert list(frame["last_token_ms"]) == [325.0, 775.0, 995.0]
    assert list(frame["preemptions"]) == [0, 0, 1]


def test_a_prefill_pool_reserves_one_output_token() -> None:
    # SGLang's disaggregated prefill sets max_new_tokens = 1 before admission. Prefill pool of
    # 250 tokens: A (100 / 100) is admitted alone; B needs 100 + 1 below 250 - 100 - 1 = 149, so
    # both prefill in [0,10] (reserving B's whole output, 200 >= 50, would delay it to [10,20]).
    # Transfers take 0.5 + 100 x 0.01 = 1.5 ms; the decode pool takes both in at 11.5, when the
    # client sees their first tokens, and runs both: 11.5 + 99 x 5 = 506.5.
    def worker(blocks: int) -> dict[str, Any]:
        return {
            "kv_cache": {
                "block_size": 1,
                "prefix_caching": False,
                "capacity": {"type": "fixed", "blocks": blocks},
            },
            "timing": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0},
        }

    request = {"input_length": 100, "output_length": 100}
    config = {
        "traffic": {"source": {"type": "agentic", "requests": [request, dict(request)]}},
        "engine": {
            "backend": "sglang",
            "workers": {"prefill": worker(250), "decode": worker(10_000)},
            "kv_transfer": {
                "bandwidth_bytes_per_s": 1e8,
                "kv_bytes_per_token": 1000,
                "latency_ms": 0.5,
            },
        },
    }
    frame = run_replay(config).requests
    assert list(frame["ttft_ms"]) == [11.5, 11.5]
    assert list(frame["e2e_latency_ms"]) == [506.5, 506.5]


def test_an_idle_worker_resets_the_ratio() -> None:
    # Ratio 0.7 decaying 0.1 per decode pass to 0.1, 150 tokens. W (10 / 20) runs [0,105]: its
    # 19 decode passes bring the ratio to 0.1; then the worker idles and SGLang resets it to
    # 0.7. A (10 / 100) arrives at 200 and prefills alone [200,210]; B (10 / 100, at 201) needs
    # 110 below 150 - (A's pages) - ratio x (A's remaining output), checked before each of A's
    # decode passes (each lowers the ratio by 0.1): at 210 150 - 10 - 0.7 x 99 = 70.7, at 215
    # 139 - 0.6 x 98 = 80.2, 220: 138 - 0.5 x 97 = 89.5, 225: 137 - 0.4 x 96 = 98.6, 230:
    # 136 - 0.3 x 95 = 107.5, 235: 135 - 0.2 x 94 = 116.2 > 110. B prefills [235,245]. (A ratio
    # left at 0.1 would admit B at 210: 140 - 9.9 = 130.1.)
    worker = {
        "scheduler": {
            "init_new_token_ratio": 0.7,
            "min_new_token_ratio": 0.1,
            "new_token_ratio_decay": 0.1,
        },
        "kv_cache": {
            "block_size": 1,
            "prefix_caching": False,
            "capacity": {"type": "fixed", "blocks": 150},
        },
        "timing": {"type": "fixed", "prefill_ms": 10.0, "decode_ms": 5.0},
    }
    rows = [
        {"input_length": 10, "output_length": 20},
        {"input_length": 10, "output_length": 100, "timestamp": 200},
        {"input_length": 10, "output_length": 100, "timestamp": 201},
    ]
    config = {
        "traffic": {"source": {"type": "agentic", "requests": rows}},
        "engine": {"backend": "sglang", "workers": {"aggregated": worker}},
    }
    frame = run_replay(config).requests
    assert list(frame["first_token_ms"]) == [10.0, 210.0, 245.0]
    assert frame["last_token_ms"][0] == 105.0
