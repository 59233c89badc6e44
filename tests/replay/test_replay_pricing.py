"""Passes priced by forward-pass models: the STP->SD scaling rule for STP tables and the
roofline's native SD price, through replay."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from aisim import fpm
from aisim.config import best_available, run_replay
from aisim.replay._pricing import PassPricer, RankWork


def rank(decodes: int = 0, kv: int = 0, prefills: int = 0, tokens: int = 0) -> RankWork:
    work = RankWork()
    work.num_decode_requests, work.sum_decode_kv_tokens = decodes, kv
    work.num_prefill_requests, work.sum_prefill_tokens = prefills, tokens
    return work


def test_stp_table_rounds_use_the_published_scaling_rule() -> None:
    # docs/design.md#the-stp-sd-scaling-rule oracle: STP (B = 8, K = 64) costs 8 ms, so a round of logical B = 2 at d = 3 is
    # widened to B = 8 with K kept at 64 and costs (0.08 * 3 + 1.25) * 8 = 11.92 ms.
    table = fpm.table_from_points([{"batch_size": 8, "total_kv_tokens": 64, "latency_ms": 8.0}])
    pricer = PassPricer.from_model(table, fpm.ForwardPassMetrics, table.prices_speculation_natively)
    assert pricer.price([rank(decodes=2, kv=64)], 3) == pytest.approx(11.92, rel=1e-12)
    # Attention-DP: the idle rank costs 0 and the pass is the busy rank's round.
    assert pricer.price([rank(decodes=2, kv=64), rank()], 3) == pytest.approx(11.92, rel=1e-12)


def test_fixed_pricer_takes_the_slowest_rank() -> None:
    pricer = PassPricer.fixed(10.0, 5.0)
    assert pricer.price([rank(decodes=1, kv=5), rank(prefills=1, tokens=9)], 0) == 10.0
    assert pricer.price([rank(decodes=1, kv=5, prefills=1, tokens=9), rank()], 3) == 15.0
    assert pricer.price([rank(), rank()], 0) == 0.0


def roofline_config(
    speculation: dict[str, Any] | None, estimator: str = "roofline"
) -> dict[str, Any]:
    engine: dict[str, Any] = {
        "model": "Qwen/Qwen3-8B",
        "hardware": "h100_sxm",
        "backend": "vllm",
        "workers": {
            "aggregated": {
                "kv_cache": {"capacity": {"type": "fixed", "blocks": 64}},
                "timing": {"estimator": estimator},
            }
        },
    }
    if speculation is not None:
        engine["speculation"] = speculation
    requests = [{"input_length": 100, "output_length": 4}]
    return {"traffic": {"source": {"type": "agentic", "requests": requests}}, "engine": engine}


@pytest.mark.parametrize("estimator", ["roofline", "roofline_ideal"])
@pytest.mark.parametrize(
    "speculation",
    [None, {"kind": "mtp", "params": {"depth": 2}, "acceptance_rates": [1.0, 1.0]}],
    ids=["stp", "mtp-d2"],
)
def test_roofline_prices_each_pass_of_one_request(
    speculation: dict[str, Any] | None, estimator: str
) -> None:
    # One request, 100 in / 4 out: a prefill pass of 100 tokens, then decode rounds at past KV
    # 100, 101, 102 (STP: 3 rounds) or one MTP round at KV 100 emitting 3 tokens (all accepted).
    estimator_config: dict[str, Any] = {
        "model": "Qwen/Qwen3-8B",
        "hardware": "h100_sxm",
        "backend": "vllm",
        "tensor_parallel": 1,
        "role": "aggregated",
        "estimator": estimator,
    }
    if speculation is not None:
        estimator_config["speculation"] = {"kind": "mtp", "params": {"depth": 2}}
    model = best_available(estimator_config)
    prefill = model.estimate_forward_pass_time_ms(
        [fpm.ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=100)]
    )
    kv_points = [100, 101, 102] if speculation is None else [100]
    decode = [
        model.estimate_forward_pass_time_ms(
            [fpm.ForwardPassMetrics(num_decode_requests=1, sum_decode_kv_tokens=kv)]
        )
        for kv in kv_points
    ]
    summary = run_replay(roofline_config(speculation, estimator)).summary
    assert summary["mean_ttft_ms"] == pytest.approx(prefill, rel=1e-12)
    assert summary["mean_e2e_latency_ms"] == pytest.approx(prefill + sum(decode), rel=1e-12)
    assert summary["decode_rounds"] == len(kv_points)


def test_an_estimator_that_cannot_price_a_pass_names_the_worker() -> None:
    # A table holding only a decode point cannot price the prefill pass that starts the run.
    from aisim import UnsupportedQuery
    from aisim.config._replay import build_plan
    from aisim.replay._engine import Simulation

    plan, _ = build_plan(roofline_config(None))
    table = fpm.table_from_points([{"batch_size": 8, "total_kv_tokens": 64, "latency_ms": 8.0}])
    pricer = PassPricer.from_model(table, fpm.ForwardPassMetrics, False)
    # Plans are frozen: build the changed plan instead of assigning into it.
    worker = dataclasses.replace(plan.workers[0], pricer=pricer)
    plan = dataclasses.replace(plan, workers=[worker, *plan.workers[1:]])
    with pytest.raises(
        UnsupportedQuery,
        match=r"engine\.workers\.aggregated\.timing: the estimator cannot price a pass of this "
        r"replay \(rank 0: 1 prefill requests / 100 tokens, 0 decode requests",
    ):
        Simulation(plan).run()


class TenPerPass:
    """Every pass costs 10 ms: a forward-pass model passed in through ``run_replay``."""

    name = "ten-per-pass"
    prices_speculation_natively = True

    def estimate_forward_pass_time_ms(self, metrics: Any) -> float:
        return 10.0


def test_run_replay_prices_with_a_given_forward_pass_model() -> None:
    # One request, 100-token prompt (one prefill pass, which emits token 1), output 4 tokens:
    # passes at 0-10 (prefill + token 1), 10-20, 20-30, 30-40 -> TTFT 10 ms, E2E 40 ms, even
    # though the config's own timing is fixed at 1000 ms per pass.
    config = roofline_config(None)
    config["engine"]["workers"]["aggregated"]["timing"] = {
        "type": "fixed",
        "prefill_ms": 1000.0,
        "decode_ms": 1000.0,
    }
    result = run_replay(config, forward_pass_model=TenPerPass())
    row = result.requests.iloc[0]
    assert row["ttft_ms"] == pytest.approx(10.0)
    assert row["e2e_latency_ms"] == pytest.approx(40.0)
    assert result.summary["config"]["forward_pass_model"] == "ten-per-pass"


def test_run_replay_refuses_a_model_that_cannot_price() -> None:
    from aisim.errors import ConfigError

    with pytest.raises(ConfigError, match=r"forward_pass_model: expected an object with"):
        run_replay(roofline_config(None), forward_pass_model=object())


class CountingModel:
    """Prices a rank at 1 ms per decode request, 0.01 ms per KV token and 0.5 ms per prefill
    token (a pass: its slowest rank); counts its calls. ``pure_prices`` as given."""

    def __init__(self, pure: object) -> None:
        self.pure_prices = pure
        self.calls = 0

    def estimate_forward_pass_time_ms(self, metrics: Any, *, draft_length: Any = None) -> float:
        self.calls += 1
        return max(
            1.0 * work.num_decode_requests
            + 0.01 * work.sum_decode_kv_tokens
            + 0.5 * work.sum_prefill_tokens
            for work in metrics
        )


HUGE_KV = 1 << 44  # past the packed decode key: remembered under the tuple key


@pytest.mark.parametrize(("pure", "calls"), [(True, 6), (False, 10), (1, 10), (None, 10)])
def test_a_model_with_pure_prices_is_asked_once_per_distinct_pass(pure: object, calls: int) -> None:
    """Ten passes: decode (2 req, 100 KV) x 3 and (3, 100) once, a 10-token prefill x 2, a
    decode over 2**44 KV tokens x 2 (too large for the packed key) and a two-rank pass x 2. A
    model that declares ``pure_prices = True`` is asked once per distinct single-rank pass (4)
    and for every multi-rank pass (2): 6 calls; any other value (False, 1, None) every time.
    The prices are the model's either way."""
    model = CountingModel(pure)
    pricer = PassPricer.from_model(model, fpm.ForwardPassMetrics, False)
    passes = [
        [rank(decodes=2, kv=100)],
        [rank(decodes=2, kv=100)],
        [rank(decodes=3, kv=100)],
        [rank(decodes=2, kv=100)],
        [rank(prefills=1, tokens=10)],
        [rank(prefills=1, tokens=10)],
        [rank(decodes=1, kv=HUGE_KV)],
        [rank(decodes=1, kv=HUGE_KV)],
        [rank(decodes=2, kv=100), rank()],
        [rank(decodes=2, kv=100), rank()],
    ]
    prices = [pricer.price(ranks, 0) for ranks in passes]
    huge = 1.0 + 0.01 * HUGE_KV
    assert prices == [3.0, 3.0, 4.0, 3.0, 5.0, 5.0, huge, huge, 3.0, 3.0]
    assert model.calls == calls


def test_the_roofline_and_a_chain_of_rooflines_declare_pure_prices() -> None:
    """The analytic roofline carries no state between queries; a chain is as pure as all its
    candidates; a fitted table is not declared pure (the default)."""
    chain = best_available({"model": "Qwen/Qwen3-8B", "hardware": "h100_sxm"})
    assert [candidate.name for candidate in chain.candidates] == ["roofline"]
    assert chain.candidates[0].pure_prices is True
    assert chain.pure_prices is True
    table = fpm.table_from_points([{"batch_size": 8, "total_kv_tokens": 64, "latency_ms": 8.0}])
    assert table.pure_prices is False
