"""Synthetic acceptance as the engines define it: vLLM's synthetic rejection sampler and SGLang's
simulated acceptance length (docs/speculation.md, "Synthetic acceptance").

* vLLM (``vllm/config/speculative.py``, ``SpeculativeConfig._resolve_synthetic_acceptance_rates``
  and ``_acceptance_length_to_rates``; ``vllm/v1/spec_decode/utils.py``,
  ``unconditional_to_conditional_rates``): the config gives per-position *unconditional* rates
  ``u_1..u_K`` (non-increasing) or a mean acceptance length ``L`` in ``[1, K + 1]``, which becomes
  the minimum-variance schedule ``(1 x int(L - 1), (L - 1) - int(L - 1), 0, ...)`` truncated to
  ``K``. The rejection sampler accepts position ``i`` with the conditional rate
  ``u_i / u_(i-1)`` (0 once the previous rate is 0) and stops at the first rejection.
* SGLang (``python/sglang/srt/speculative/eagle_utils.py``, ``_sample_simulated_acc_len`` and
  ``generate_simulated_accept_index``; the env ``SGLANG_SIMULATE_ACC_LEN`` and
  ``SGLANG_SIMULATE_ACC_METHOD``): one accept length ``L`` per verify step, every request of the
  batch accepting ``L - 1`` drafts. ``match-expected`` (the default) clamps the value ``x`` to
  ``[1, steps + 1]`` and draws ``floor(x) + 1`` with probability ``x - floor(x)``, else
  ``floor(x)``; ``multinomial`` draws ``round(clamp(N(x, 1), 1, steps + 1))``, so
  ``P(L >= j + 1) = 1 - Phi(j + 0.5 - x)`` for ``j = 1..steps``.

Each becomes an ``AcceptanceProfile`` whose unconditional rates are exactly the engine's.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from aisim.errors import ConfigError
from aisim.speculation._acceptance import AcceptanceProfile

SIMULATE_MATCH_EXPECTED: Final = "match-expected"
SIMULATE_MULTINOMIAL: Final = "multinomial"
#: SGLang's ``SGLANG_SIMULATE_ACC_METHOD`` values; the first is the engine's default.
SIMULATE_METHODS: Final = (SIMULATE_MATCH_EXPECTED, SIMULATE_MULTINOMIAL)


def vllm_length_to_rates(length: float, num_drafts: int) -> list[float]:
    """vLLM's ``_acceptance_length_to_rates``: the minimum-variance unconditional schedule."""
    accepted = length - 1.0
    whole = int(accepted)
    rates = [1.0] * whole + [accepted - whole] + [0.0] * (num_drafts - whole - 1)
    return rates[:num_drafts]


def vllm_synthetic_profile(
    rates: Sequence[float] | None, length: float | None, num_drafts: int, path: str
) -> AcceptanceProfile:
    """The profile of ``rejection_sample_method: synthetic`` with ``synthetic_acceptance_rates``
    (``rates``) or ``synthetic_acceptance_length`` (``length``): exactly one is given."""
    if (rates is None) == (length is None):
        raise ConfigError(
            f"{path}.rejection_sample_method: synthetic needs exactly one of "
            "synthetic_acceptance_rates or synthetic_acceptance_length (vLLM's rule)"
        )
    if rates is not None:
        if len(rates) != num_drafts:
            raise ConfigError(
                f"{path}.synthetic_acceptance_rates: vLLM needs one rate per speculative token "
                f"({num_drafts}), got {len(rates)}"
            )
        return AcceptanceProfile.from_unconditional(rates, f"{path}.synthetic_acceptance_rates")
    assert length is not None
    where = f"{path}.synthetic_acceptance_length"
    if not (math.isfinite(length) and 1.0 <= length <= float(num_drafts + 1)):
        raise ConfigError(f"{where}: expected a number in [1, {num_drafts + 1}], got {length!r}")
    return AcceptanceProfile.from_unconditional(vllm_length_to_rates(length, num_drafts), where)


def sglang_simulated_rates(value: float, method: str, steps: int) -> list[float]:
    """Unconditional rates ``P(accepted drafts >= j)``, ``j = 1..steps``, of SGLang's simulated
    accept length ``value`` drawn with ``method``."""
    top = float(steps + 1)
    if method == SIMULATE_MATCH_EXPECTED:
        clamped = max(1.0, min(top, value))
        lower = int(clamped // 1)
        upper_weight = clamped - lower if lower < steps + 1 else 0.0
        rates: list[float] = []
        for drafts in range(1, steps + 1):
            # accept length L = drafts + 1 or more
            if lower >= drafts + 1:
                rates.append(1.0)
            elif lower + 1 == drafts + 1:
                rates.append(upper_weight)
            else:
                rates.append(0.0)
        return rates
    # multinomial: L = round(clamp(N(value, 1), 1, steps + 1)); L >= j + 1 iff the draw >= j + 0.5.
    return [
        0.5 * math.erfc((drafts + 0.5 - value) / math.sqrt(2.0)) for drafts in range(1, steps + 1)
    ]


def sglang_simulated_profile(value: float, method: str, steps: int, path: str) -> AcceptanceProfile:
    """The profile of ``SGLANG_SIMULATE_ACC_LEN=value`` (and ``SGLANG_SIMULATE_ACC_METHOD``)."""
    where = f"{path}.simulate_acc_len"
    if not (math.isfinite(value) and value > 0.0):
        raise ConfigError(f"{where}: SGLang simulates a length > 0 (it asserts it), got {value!r}")
    if method not in SIMULATE_METHODS:
        raise ConfigError(
            f"{path}.simulate_acc_method: expected one of {', '.join(SIMULATE_METHODS)}, "
            f"got {method!r}"
        )
    return AcceptanceProfile.from_unconditional(sglang_simulated_rates(value, method, steps), where)
