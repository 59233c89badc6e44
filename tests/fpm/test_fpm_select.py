"""best_available: order, fallback policy, identity matching, diagnostics on every answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aisim.config import best_available
from aisim.errors import ConfigError, UnsupportedQuery
from aisim.fpm import ForwardPassMetrics, price_decode_round, write_table_file

BASE: dict[str, Any] = {"model": "Qwen/Qwen3-8B", "hardware": "h100_sxm", "backend": "vllm"}
MTP3 = {"kind": "mtp", "params": {"depth": 3}}
STP_POINTS = [
    {"batch_size": 8, "total_kv_tokens": 64, "latency_ms": 8.0},
    {"batch_size": 8, "total_kv_tokens": 128, "latency_ms": 9.0},
    {"batch_size": 16, "total_kv_tokens": 64, "latency_ms": 12.0},
    {"batch_size": 16, "total_kv_tokens": 128, "latency_ms": 14.0},
]
MEASURED_IDENTITY = {
    "kind": "mtp",
    "draft_length": 3,
    "draft_identity": None,
    "timing_scope": "round",
    "role": "aggregated",
}


def _config(**extra: Any) -> dict[str, Any]:
    config = dict(BASE)
    config.update(extra)
    return config


def _skipped(diagnostics: Any) -> dict[str, str]:
    return {name: reason for name, reason in diagnostics.skipped}


def test_auto_without_data_answers_with_the_roofline_and_says_why() -> None:
    model = best_available(_config())
    result = model.estimate_forward_pass_detailed(ForwardPassMetrics(1, 1024))
    assert result.diagnostics.estimator == "roofline"
    assert result.diagnostics.coverage == "analytic"
    skipped = _skipped(result.diagnostics)
    assert skipped["table"] == "no STP table configured"
    assert "measured SD-round" in skipped["measured_round"]
    assert model.model_spec is not None and model.model_spec.num_layers == 36


def test_auto_order_table_then_regression_then_roofline() -> None:
    model = best_available(_config(points=STP_POINTS))
    assert [candidate.name for candidate in model.candidates] == ["table", "regression", "roofline"]
    inside = model.estimate_forward_pass_detailed(ForwardPassMetrics(8, 64))
    assert (inside.diagnostics.estimator, inside.latency_ms) == ("table", 8.0)
    assert inside.diagnostics.coverage == "measured"
    beyond = model.estimate_forward_pass_detailed(ForwardPassMetrics(32, 64))
    assert beyond.diagnostics.estimator == "regression"
    assert beyond.diagnostics.coverage == "extrapolated"
    assert "outside the measured envelope" in _skipped(beyond.diagnostics)["table"]
    prefill = model.estimate_forward_pass_detailed(
        ForwardPassMetrics(num_prefill_requests=1, sum_prefill_tokens=512)
    )
    assert prefill.diagnostics.estimator == "roofline"


def test_explicit_table_with_deny_fails_with_the_reason() -> None:
    with pytest.raises(ConfigError, match="table is not available.*no STP table configured"):
        best_available(_config(estimator="table"))
    model = best_available(_config(estimator="table", points=STP_POINTS))
    with pytest.raises(UnsupportedQuery, match="batch_size=32 is outside the measured envelope"):
        model.estimate_forward_pass_time_ms(ForwardPassMetrics(32, 64))


def test_allow_falls_back_to_the_roofline_keeping_the_scheme() -> None:
    allowed = best_available(
        _config(estimator="measured_round", fallback_policy="allow", speculation=MTP3)
    )
    result = allowed.estimate_forward_pass_detailed(ForwardPassMetrics(2, 2048))
    assert result.diagnostics.estimator == "roofline"
    assert result.diagnostics.speculation == "mtp d=3 w=4"
    assert "no measured SD-round table" in _skipped(result.diagnostics)["measured_round"]
    native = best_available(_config(estimator="roofline", speculation=MTP3))
    assert result.latency_ms == native.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 2048))
    stp = best_available(_config(estimator="roofline"))
    assert result.latency_ms > stp.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 2048))


def test_measured_round_with_matching_identity_prices_the_actual_batch() -> None:
    measured = [
        {
            "points": [{"batch_size": 2, "total_kv_tokens": 64, "latency_ms": 9.5}],
            "identity": MEASURED_IDENTITY,
        }
    ]
    model = best_available(_config(speculation=MTP3, measured_rounds=measured, points=STP_POINTS))
    assert model.prices_speculation_natively and not model.supports_draft_length
    result = model.estimate_forward_pass_detailed(ForwardPassMetrics(2, 64))
    assert result.diagnostics.estimator == "measured_round"
    assert result.latency_ms == 9.5  # no widening, no factor, no draft recharge
    assert result.scaling_factor is None
    # Not covered by the measured table: the STP table answers through the rule at d = 3.
    rule = model.estimate_forward_pass_detailed(ForwardPassMetrics(4, 128))
    assert rule.diagnostics.estimator == "table"
    assert rule.latency_ms == pytest.approx(1.49 * 14.0, abs=1e-12)
    assert rule.stp_reference is not None and rule.stp_reference.latency_ms == 14.0
    with pytest.raises(UnsupportedQuery, match="omit draft_length"):
        model.estimate_forward_pass_time_ms(ForwardPassMetrics(2, 64), draft_length=3)
    assert price_decode_round(model, ForwardPassMetrics(2, 64), 3) == 9.5


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"draft_length": 2}, "draft_length: recorded 2, query 3"),
        ({"kind": "ngram"}, "kind: recorded 'ngram', query 'mtp'"),
        ({"timing_scope": "verify"}, "timing_scope: recorded 'verify', query 'round'"),
        ({"role": "decode"}, "role: recorded 'decode', query 'aggregated'"),
        ({"hardware": "h200"}, "hardware: recorded 'h200_sxm', query 'h100_sxm'"),
    ],
)
def test_identity_mismatch_is_skipped_or_fails_under_deny(
    change: dict[str, Any], reason: str
) -> None:
    identity = {**MEASURED_IDENTITY, **change}
    measured = [
        {
            "points": [{"batch_size": 2, "total_kv_tokens": 64, "latency_ms": 9.5}],
            "identity": identity,
        }
    ]
    auto = best_available(_config(speculation=MTP3, measured_rounds=measured))
    result = auto.estimate_forward_pass_detailed(ForwardPassMetrics(2, 64))
    assert result.diagnostics.estimator == "roofline"
    assert reason in _skipped(result.diagnostics)["measured_round"]
    with pytest.raises(ConfigError, match=reason.replace("(", r"\(")):
        best_available(
            _config(speculation=MTP3, measured_rounds=measured, estimator="measured_round")
        )


def test_measured_rounds_refuse_mixed_and_malformed_bindings() -> None:
    measured = [
        {
            "points": [{"batch_size": 2, "total_kv_tokens": 64, "latency_ms": 9.5}],
            "identity": MEASURED_IDENTITY,
        }
    ]
    model = best_available(
        _config(speculation=MTP3, measured_rounds=measured, estimator="measured_round")
    )
    mixed = ForwardPassMetrics(2, 64, num_prefill_requests=1, sum_prefill_tokens=10)
    with pytest.raises(UnsupportedQuery, match="mixed prefill\\+decode"):
        model.estimate_forward_pass_time_ms(mixed)
    broken = [{"points": measured[0]["points"], "identity": {"kind": "mtp"}}]
    with pytest.raises(ConfigError, match="identity.draft_length"):
        best_available(_config(speculation=MTP3, measured_rounds=broken))


def test_table_files_and_identity_matching(tmp_path: Path) -> None:
    h100 = write_table_file(
        tmp_path / "h100.parquet", STP_POINTS, identity={"model": "Qwen3-8B", "hardware": "h100"}
    )
    h200 = write_table_file(tmp_path / "h200.csv", STP_POINTS, identity={"hardware": "h200_sxm"})
    model = best_available(_config(tables=[str(h200), str(h100)], estimator="table"))
    result = model.estimate_forward_pass_detailed(ForwardPassMetrics(8, 64))
    assert result.diagnostics.estimator == "table"
    assert result.diagnostics.data_identity is not None
    assert str(h100) in result.diagnostics.notes[0]
    assert (
        "hardware: recorded 'h200_sxm', query 'h100_sxm'" in _skipped(result.diagnostics)["table"]
    )


def test_scheme_with_an_stp_table_uses_the_rule_at_the_scheme_depth() -> None:
    model = best_available(_config(speculation=MTP3, points=STP_POINTS, estimator="table"))
    assert model.prices_speculation_natively
    result = model.estimate_forward_pass_detailed(ForwardPassMetrics(2, 64))
    assert result.latency_ms == pytest.approx(11.92, abs=1e-12)
    assert result.draft_length == 3
    assert any("scaling rule at d=3" in note for note in result.diagnostics.notes)


def test_stp_models_take_draft_length_and_price_decode_round_uses_the_rule() -> None:
    model = best_available(_config(points=STP_POINTS))
    assert model.supports_draft_length and not model.prices_speculation_natively
    assert price_decode_round(model, ForwardPassMetrics(2, 64), 3) == pytest.approx(11.92)
    # Outside the table, the roofline cannot take draft_length: the regression answers.
    result = model.estimate_forward_pass_detailed(ForwardPassMetrics(8, 64), draft_length=3)
    assert result.diagnostics.estimator == "regression"
    with pytest.raises(UnsupportedQuery, match="no STP table or regression"):
        best_available(_config()).estimate_forward_pass_time_ms(
            ForwardPassMetrics(2, 64), draft_length=3
        )


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({**BASE, "estimator": "magic"}, "estimator: expected one of"),
        ({**BASE, "fallback_policy": "maybe"}, "fallback_policy"),
        ({**BASE, "tensor_parallel": 0}, "tensor_parallel"),
        ({**BASE, "colour": "red"}, "unknown field"),
        ({**BASE, "tables": [3]}, r"tables\[0\]"),
        ({"hardware": "h100"}, "no estimator is available"),
        ({**BASE, "model": "no-such-model"}, "model: unknown model"),
        (
            {**BASE, "speculation": {"kind": "mtp", "params": {"depth": 0}}},
            "speculation.params.depth",
        ),
        ([1, 2], "expected a mapping"),
    ],
)
def test_bad_configs_are_clear_errors(config: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        best_available(config)


def test_ngram_on_sglang_is_priced_for_estimation_in_every_role() -> None:
    # docs/design.md#speculation-kinds: the ngram gate is for replay only; estimation on sglang is allowed. A role given
    # for measured-round identity must not turn the estimator query into a replay gate.
    speculation = {"kind": "ngram", "params": {"num_speculative_tokens": 3}}
    base = {"model": "Qwen/Qwen3-8B", "hardware": "h100", "backend": "sglang"}
    vllm = best_available({**base, "backend": "vllm", "speculation": speculation})
    expected = vllm.estimate_forward_pass_time_ms(ForwardPassMetrics(4, 4096))
    for extra in ({}, {"role": "aggregated"}, {"role": "decode"}):
        model = best_available({**base, **extra, "speculation": speculation})
        assert model.speculation == "ngram d=3 w=4"
        # No draft network: the round is the target's width-4 verification, as on vllm.
        assert model.estimate_forward_pass_time_ms(ForwardPassMetrics(4, 4096)) == expected


def test_swap_default_terms_prices_with_the_given_terms_and_restores() -> None:
    """A term set with 1 ms more host time per pass prices a decode step exactly 1 ms dearer (the
    step overhead adds once per pass); swapping the returned set back restores the default."""
    import dataclasses

    from aisim.catalogue import MEASURED_TERMS
    from aisim.fpm import swap_default_terms

    query = ForwardPassMetrics(num_decode_requests=8, sum_decode_kv_tokens=8 * 1024)
    config = _config(estimator="roofline")
    before = best_available(config).estimate_forward_pass_time_ms(query)
    dearer = dataclasses.replace(
        MEASURED_TERMS, step_overhead_s=MEASURED_TERMS.step_overhead_s + 1e-3
    )
    saved = swap_default_terms(dearer)
    try:
        swapped = best_available(config).estimate_forward_pass_time_ms(query)
    finally:
        assert swap_default_terms(saved) is dearer
    assert saved is MEASURED_TERMS
    assert swapped == pytest.approx(before + 1.0, abs=1e-9)
    assert best_available(config).estimate_forward_pass_time_ms(query) == before
