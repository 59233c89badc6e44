"""Synthetic acceptance as vLLM and SGLang define it (docs/speculation.md, "Synthetic
acceptance"): the profile's unconditional rates equal the engine's, hand-derived."""

from __future__ import annotations

from statistics import NormalDist

import pytest

from aisim import ConfigError, resolve_speculation


def _rates(block: dict[str, object], backend: str | None = None) -> tuple[float, ...]:
    resolved = resolve_speculation(block, backend=backend)
    assert resolved.acceptance is not None
    return resolved.acceptance.unconditional_rates


def test_vllm_length_is_the_minimum_variance_schedule() -> None:
    # L = 3.4, K = 5: E = 2.4 -> (1, 1, 0.4, 0, 0).
    rates = _rates(
        {
            "kind": "mtp",
            "params": {"depth": 5},
            "rejection_sample_method": "synthetic",
            "synthetic_acceptance_length": 3.4,
        },
        "vllm",
    )
    assert rates == pytest.approx((1.0, 1.0, 0.4, 0.0, 0.0), abs=1e-12)


def test_vllm_rates_become_conditional_by_division() -> None:
    resolved = resolve_speculation(
        {
            "kind": "mtp",
            "params": {"depth": 3},
            "rejection_sample_method": "synthetic",
            "synthetic_acceptance_rates": [0.7, 0.4, 0.1],
        }
    )
    assert resolved.acceptance is not None
    assert resolved.acceptance.conditional_rates == pytest.approx((0.7, 0.4 / 0.7, 0.25))
    # The whole length at K + 1 and the floor at 1 are the ends of vLLM's range.
    for length, expected in ((4.0, (1.0, 1.0, 1.0)), (1.0, (0.0, 0.0, 0.0))):
        block = {
            "kind": "mtp",
            "params": {"depth": 3},
            "rejection_sample_method": "synthetic",
            "synthetic_acceptance_length": length,
        }
        assert _rates(block) == expected


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        ({"synthetic_acceptance_length": 4.5}, r"expected a finite number in 1\.0\.\.4\.0"),
        ({"synthetic_acceptance_rates": [0.5, 0.6, 0.1]}, "non-increasing"),
        ({"synthetic_acceptance_rates": [0.5, 0.4]}, "exactly 3 rates|one rate per"),
    ],
)
def test_vllm_synthetic_errors(extra: dict[str, object], fragment: str) -> None:
    block = {"kind": "mtp", "params": {"depth": 3}, "rejection_sample_method": "synthetic", **extra}
    with pytest.raises(ConfigError, match=fragment):
        resolve_speculation(block)


def test_sglang_match_expected_is_two_point() -> None:
    # x = 2.49 at 3 steps: L = 2 or 3 (weight 0.49 on 3), so a = 1 always, a = 2 w.p. 0.49.
    rates = _rates({"kind": "mtp", "params": {"depth": 3}, "simulate_acc_len": 2.49}, "sglang")
    assert rates == pytest.approx((1.0, 0.49, 0.0))
    # Clamped to [1, steps + 1] as _sample_simulated_acc_len does.
    assert _rates({"kind": "mtp", "params": {"depth": 3}, "simulate_acc_len": 9.0}) == (1, 1, 1)
    assert _rates({"kind": "mtp", "params": {"depth": 3}, "simulate_acc_len": 0.5}) == (0, 0, 0)


def test_sglang_multinomial_is_a_rounded_clamped_normal() -> None:
    normal = NormalDist(2.49, 1.0)
    expected = tuple(1.0 - normal.cdf(drafts + 0.5) for drafts in (1, 2, 3))
    rates = _rates(
        {
            "kind": "mtp",
            "params": {"depth": 3},
            "simulate_acc_len": 2.49,
            "simulate_acc_method": "multinomial",
        }
    )
    assert rates == pytest.approx(expected, rel=1e-12)
    # Table values: 1 - Phi(-0.99) = 0.8389, 1 - Phi(0.01) = 0.4960, 1 - Phi(1.01) = 0.1562.
    assert rates == pytest.approx((0.8389, 0.4960, 0.1562), abs=1e-4)


def test_engine_spellings_are_gated_by_backend() -> None:
    with pytest.raises(ConfigError, match="is vLLM's"):
        resolve_speculation(
            {
                "kind": "mtp",
                "params": {"depth": 3},
                "rejection_sample_method": "synthetic",
                "synthetic_acceptance_length": 2.0,
            },
            backend="sglang",
        )
    with pytest.raises(ConfigError, match="is SGLang's"):
        resolve_speculation(
            {"kind": "mtp", "params": {"depth": 3}, "simulate_acc_len": 2.0}, backend="vllm"
        )
    with pytest.raises(ConfigError, match="two acceptance inputs"):
        resolve_speculation(
            {"kind": "mtp", "params": {"depth": 3}, "simulate_acc_len": 2.0, "acceptance_rate": 0.5}
        )
