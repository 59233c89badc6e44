"""Probes: forward-pass cost (docs/design.md#forward-pass-cost, #qualification).

Guarantees: widening preserves the total past KV exactly and splits each request into d + 1
parts that differ by at most one token; the SD price is exactly (0.08 d + 1.25) x the STP price of
the widened batch, applied once; omitting d is the STP answer bit for bit; iteration latency is
the max over ranks and an idle rank costs 0; roofline latency is non-decreasing in B and in
K_total (decode) and in prefill tokens; an SD round never costs less than the STP step; answers are
deterministic; any malformed config, metrics or draft length is an aisim error."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from strategies import (
    TABLE_POINTS,
    decode_ranks,
    decode_ranks_with_kv_lists,
    json_structures,
    mapping_with_mutation,
)

from aisim.catalogue import gpu_names, model_names
from aisim.config import best_available
from aisim.errors import AisimError
from aisim.fpm import ForwardPassMetrics, table_from_points

TABLE = table_from_points(TABLE_POINTS)
DRAFT_LENGTHS = st.integers(1, 5)


@given(decode_ranks_with_kv_lists(), DRAFT_LENGTHS)
def test_probe_widening_preserves_kv_and_splits_evenly(rank: dict[str, Any], d: int) -> None:
    result = TABLE.estimate_forward_pass_detailed(ForwardPassMetrics(**rank), draft_length=d)
    widened = result.stp_reference.metrics
    assert isinstance(widened, ForwardPassMetrics)
    assert widened.num_decode_requests == (d + 1) * rank["num_decode_requests"]
    assert widened.sum_decode_kv_tokens == rank["sum_decode_kv_tokens"]
    parts = widened.past_kv_lengths
    assert parts is not None and sum(parts) == rank["sum_decode_kv_tokens"]
    for index, length in enumerate(rank["past_kv_lengths"]):
        siblings = parts[index * (d + 1) : (index + 1) * (d + 1)]
        assert sum(siblings) == length
        assert max(siblings) - min(siblings) <= 1
        assert siblings == sorted(siblings, reverse=True)  # the larger parts first


@given(st.lists(decode_ranks(), min_size=1, max_size=4), DRAFT_LENGTHS)
def test_probe_factor_formula_applied_once_to_the_rank_max(
    ranks: list[dict[str, int]], d: int
) -> None:
    if not any(rank["num_decode_requests"] for rank in ranks):
        ranks = [*ranks, {"num_decode_requests": 1, "sum_decode_kv_tokens": 0}]
    metrics = [ForwardPassMetrics(**rank) for rank in ranks]
    result = TABLE.estimate_forward_pass_detailed(metrics, draft_length=d)
    assert result.scaling_factor == 0.08 * d + 1.25
    assert result.latency_ms == (0.08 * d + 1.25) * result.stp_reference.latency_ms
    assert result.stp_reference.latency_ms == max(result.per_rank_latency_ms)
    assert TABLE.estimate_forward_pass_time_ms(metrics, draft_length=d) == result.latency_ms


@given(st.lists(decode_ranks(), min_size=1, max_size=4))
def test_probe_omitted_draft_length_is_stp_and_rank_max(ranks: list[dict[str, int]]) -> None:
    metrics = [ForwardPassMetrics(**rank) for rank in ranks]
    result = TABLE.estimate_forward_pass_detailed(metrics)
    assert result.draft_length is None and result.scaling_factor is None
    assert result.stp_reference is None
    alone = [
        TABLE.estimate_forward_pass_time_ms(rank) if rank.num_decode_requests else 0.0
        for rank in metrics
    ]
    assert result.per_rank_latency_ms == alone
    assert result.latency_ms == max(alone) == TABLE.estimate_forward_pass_time_ms(metrics)


ROOFLINE_CASES = st.tuples(st.sampled_from(model_names()), st.sampled_from(gpu_names()))


@given(
    ROOFLINE_CASES,
    st.integers(1, 256),
    st.integers(1, 256),
    st.integers(0, 2**20),
    st.integers(0, 2**20),
)
def test_probe_roofline_decode_is_monotone_in_batch_and_kv(
    target: tuple[str, str], b1: int, b2: int, k1: int, k2: int
) -> None:
    model = best_available({"model": target[0], "hardware": target[1], "estimator": "roofline"})
    small_b, large_b = sorted((b1, b2))
    small_k, large_k = sorted((k1, k2))
    low = model.estimate_forward_pass_time_ms(ForwardPassMetrics(small_b, small_k))
    more_b = model.estimate_forward_pass_time_ms(ForwardPassMetrics(large_b, small_k))
    more_k = model.estimate_forward_pass_time_ms(ForwardPassMetrics(small_b, large_k))
    both = model.estimate_forward_pass_time_ms(ForwardPassMetrics(large_b, large_k))
    assert 0.0 < low <= more_b <= both
    assert low <= more_k <= both


@given(ROOFLINE_CASES, st.integers(1, 16384), st.integers(1, 16384))
def test_probe_roofline_prefill_is_monotone_in_tokens(
    target: tuple[str, str], t1: int, t2: int
) -> None:
    model = best_available({"model": target[0], "hardware": target[1], "estimator": "roofline"})
    fewer, more = sorted((t1, t2))
    assert model.estimate_forward_pass_time_ms(
        ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=fewer)
    ) <= model.estimate_forward_pass_time_ms(
        ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=more)
    )


SCHEMES = st.one_of(
    st.integers(1, 5).map(lambda d: {"kind": "mtp", "params": {"depth": d}}),
    st.integers(1, 5).map(lambda d: {"kind": "ngram", "params": {"num_speculative_tokens": d}}),
    st.integers(1, 5).map(
        lambda d: {
            "kind": "draft_model",
            "params": {"num_speculative_tokens": d},
            "draft_model_path": "Qwen/Qwen3-0.6B",
        }
    ),
)


@given(SCHEMES, st.integers(1, 128), st.integers(0, 2**20))
def test_probe_sd_round_costs_at_least_the_stp_step(
    scheme: dict[str, Any], batch: int, kv: int
) -> None:
    base = {"model": "Qwen/Qwen3-8B", "hardware": "h100_sxm", "estimator": "roofline"}
    metrics = ForwardPassMetrics(batch, kv)
    stp = best_available(base).estimate_forward_pass_time_ms(metrics)
    sd = best_available({**base, "speculation": scheme}).estimate_forward_pass_time_ms(metrics)
    assert sd >= stp


@given(st.lists(decode_ranks(), min_size=1, max_size=3), DRAFT_LENGTHS)
def test_probe_answers_are_deterministic(ranks: list[dict[str, int]], d: int) -> None:
    config = {"model": "Qwen/Qwen3-8B", "hardware": "h200_sxm", "points": TABLE_POINTS}
    metrics = [ForwardPassMetrics(**rank) for rank in ranks]
    if not any(rank.num_decode_requests for rank in metrics):
        return
    first = best_available(config).estimate_forward_pass_detailed(metrics, draft_length=d)
    second = best_available(dict(config)).estimate_forward_pass_detailed(metrics, draft_length=d)
    assert first.to_dict() == second.to_dict()


VALID_CONFIG: dict[str, Any] = {
    "model": "Qwen/Qwen3-8B",
    "hardware": "h100_sxm",
    "backend": "vllm",
    "tensor_parallel": 1,
    "estimator": "auto",
    "fallback_policy": "allow",
    "speculation": {"kind": "mtp", "params": {"depth": 2}},
}


def _estimate_or_aisim_error(config: Any, fields: Any, d: Any) -> None:
    try:
        model = best_available(config)
        metrics = ForwardPassMetrics(**fields)
        model.estimate_forward_pass_detailed(metrics, draft_length=d)
    except AisimError:
        return


@given(st.one_of(json_structures, mapping_with_mutation(VALID_CONFIG)))
def test_probe_fuzz_best_available_configs(config: Any) -> None:
    _estimate_or_aisim_error(config, {"num_decode_requests": 2, "sum_decode_kv_tokens": 64}, None)


METRIC_FIELDS = (
    "num_decode_requests",
    "sum_decode_kv_tokens",
    "num_prefill_requests",
    "sum_prefill_tokens",
    "past_kv_lengths",
    "extend_lengths",
)


@given(
    st.dictionaries(st.sampled_from(METRIC_FIELDS), json_structures, max_size=4),
    st.one_of(st.none(), json_structures),
)
def test_probe_fuzz_metrics_and_draft_lengths(fields: dict[str, Any], d: Any) -> None:
    _estimate_or_aisim_error(
        {"model": "Qwen/Qwen3-8B", "hardware": "h100_sxm", "points": TABLE_POINTS}, fields, d
    )
