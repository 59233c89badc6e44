"""``speculation.undrafted_rounds`` (ngram): a request's first decode rounds draft nothing, emit
one token, and a pass whose decode rounds all drafted nothing is priced as a plain decode step.
Hand-derived schedules against a scripted forward-pass model (no estimator data needed)."""

from __future__ import annotations

from typing import Any

import pytest

from aisim import run_replay
from aisim.errors import ConfigError

PREFILL_MS = 10.0
SD_ROUND_MS = 2.0
PLAIN_MS = 1.0


class Plain:
    """Plain decode steps: 1 ms; a pass carrying prompt tokens: 10 ms."""

    name = "plain"
    prices_speculation_natively = False
    supports_draft_length = True

    def estimate_forward_pass_time_ms(self, metrics: Any, draft_length: int | None = None) -> float:
        assert draft_length is None
        ranks = metrics if isinstance(metrics, list) else [metrics]
        if any(rank.num_prefill_requests for rank in ranks):
            return PREFILL_MS
        return PLAIN_MS


class Rounds:
    """Prices whole SD rounds (2 ms) itself; plain decode steps through ``plain_decode_model``."""

    name = "rounds"
    prices_speculation_natively = True

    def __init__(self, plain: object | None) -> None:
        self.plain_decode_model = plain

    def estimate_forward_pass_time_ms(self, metrics: Any) -> float:
        ranks = metrics if isinstance(metrics, list) else [metrics]
        if any(rank.num_prefill_requests for rank in ranks):
            return PREFILL_MS
        return SD_ROUND_MS


def config(output: int, undrafted: int | None, kind: str = "ngram") -> dict[str, Any]:
    speculation: dict[str, Any] = {
        "kind": kind,
        "params": {"num_speculative_tokens": 3},
        "acceptance_rates": [1.0, 1.0, 1.0],
    }
    if kind == "draft_model":
        speculation["draft_model_path"] = "draft"
    if undrafted is not None:
        speculation["undrafted_rounds"] = undrafted
    return {
        "traffic": {
            "source": {
                "type": "agentic",
                "requests": [{"request_id": "r", "input_length": 40, "output_length": output}],
            }
        },
        "engine": {
            "backend": "vllm",
            "speculation": speculation,
            "workers": {
                "aggregated": {
                    "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": 64}},
                    "timing": {"type": "fixed", "prefill_ms": 0.0, "decode_ms": 0.0},
                }
            },
        },
    }


@pytest.mark.parametrize(
    ("undrafted", "e2e_ms", "rounds"),
    [
        # Output 12: the prefill pass (10 ms) emits token 1; 11 tokens are left.
        # Without undrafted rounds, every round accepts its 3 drafts: 4 + 4 + 3 tokens in 3 SD
        # rounds of 2 ms -> E2E 10 + 3 x 2 = 16 ms, 11 / 3 tokens per round.
        (None, 16.0, 3),
        (0, 16.0, 3),
        # Two undrafted rounds: 1 + 1 tokens in two plain steps of 1 ms, then 4 + 4 tokens in SD
        # rounds and a last SD round for the 1 token left (vLLM verifies every draft of a last
        # round) -> 10 + 2 x 1 + 3 x 2 = 18 ms, 11 tokens in 5 rounds.
        (2, 18.0, 5),
        # More undrafted rounds than the output: 11 plain steps -> 10 + 11 = 21 ms.
        (50, 21.0, 11),
    ],
)
def test_undrafted_rounds_schedule_and_price(
    undrafted: int | None, e2e_ms: float, rounds: int
) -> None:
    result = run_replay(config(12, undrafted), forward_pass_model=Rounds(Plain()))
    row = result.requests.iloc[0]
    assert row["ttft_ms"] == pytest.approx(PREFILL_MS)
    assert row["e2e_latency_ms"] == pytest.approx(e2e_ms)
    assert result.summary["mean_acceptance_length"] == pytest.approx(11 / rounds)


def test_scaling_rule_models_price_undrafted_rounds_without_a_draft_length() -> None:
    # A model that applies the STP->SD rule gets draft_length=None (a plain step) for the two
    # undrafted rounds; Plain asserts it, and prices every decode pass at 1 ms.
    class RulePlain(Plain):
        def estimate_forward_pass_time_ms(
            self, metrics: Any, draft_length: int | None = None
        ) -> float:
            ranks = metrics if isinstance(metrics, list) else [metrics]
            if any(rank.num_prefill_requests for rank in ranks):
                return PREFILL_MS
            return PLAIN_MS if draft_length is None else SD_ROUND_MS

    result = run_replay(config(12, 2), forward_pass_model=RulePlain())
    assert result.requests.iloc[0]["e2e_latency_ms"] == pytest.approx(18.0)


def test_undrafted_rounds_is_ngram_only() -> None:
    with pytest.raises(
        ConfigError,
        match=r"engine\.speculation\.undrafted_rounds: only kind ngram drafts nothing .*"
        r"got kind draft_model",
    ):
        run_replay(config(12, 2, kind="draft_model"), forward_pass_model=Rounds(Plain()))


@pytest.mark.parametrize("value", [-1, 1.5, "3", True])
def test_undrafted_rounds_must_be_a_count(value: object) -> None:
    with pytest.raises(ConfigError, match=r"engine\.speculation\.undrafted_rounds"):
        run_replay(config(12, value), forward_pass_model=Rounds(Plain()))  # type: ignore[arg-type]


def test_a_round_pricing_model_needs_a_plain_decode_model() -> None:
    with pytest.raises(ConfigError, match=r"forward_pass_model\.plain_decode_model"):
        run_replay(config(12, 2), forward_pass_model=Rounds(None))
    # Without undrafted rounds it is not needed.
    result = run_replay(config(12, 0), forward_pass_model=Rounds(None))
    assert result.requests.iloc[0]["e2e_latency_ms"] == pytest.approx(16.0)


def test_a_round_pricing_estimator_gets_a_plain_one_from_the_config() -> None:
    # The roofline with an ngram scheme prices whole SD rounds; the undrafted rounds are priced
    # by the same roofline without speculation, so they cost less than drafted rounds.
    def roofline(undrafted: int) -> dict[str, Any]:
        raw = config(12, undrafted)
        raw["engine"].update({"model": "Qwen/Qwen3-8B", "hardware": "h100_sxm"})
        raw["engine"]["workers"]["aggregated"]["timing"] = {"estimator": "roofline"}
        return raw

    drafted = run_replay(roofline(0)).requests.iloc[0]
    undrafted = run_replay(roofline(50)).requests.iloc[0]
    stp = roofline(0)
    del stp["engine"]["speculation"]
    plain = run_replay(stp).requests.iloc[0]
    # Every round undrafted: exactly the replay without SD.
    assert undrafted["e2e_latency_ms"] == pytest.approx(plain["e2e_latency_ms"])
    assert drafted["e2e_latency_ms"] != pytest.approx(plain["e2e_latency_ms"])
