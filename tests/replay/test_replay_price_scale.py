"""A model pricer's per-kind cost factors (``PriceScale``, a Monte Carlo replica's cost draw):
hand-derived prices."""

from __future__ import annotations

import math
from typing import Any

import pytest

from aisim import fpm
from aisim.replay._pricing import PassPricer, PriceScale, RankWork, interpolate


def rank(decodes: int = 0, kv: int = 0, prefills: int = 0, tokens: int = 0) -> RankWork:
    work = RankWork()
    work.num_decode_requests, work.sum_decode_kv_tokens = decodes, kv
    work.num_prefill_requests, work.sum_prefill_tokens = prefills, tokens
    return work


class Counted:
    """10 ms per prefill request + 1 ms per decode request (+ 100 ms with a draft length),
    counting its calls."""

    def __init__(self, native: bool = False) -> None:
        self.prices_speculation_natively = native
        self.calls = 0

    def estimate_forward_pass_time_ms(self, metrics: Any, draft_length: int | None = None) -> float:
        self.calls += 1
        (only,) = metrics
        price = 10.0 * float(only.num_prefill_requests) + 1.0 * float(only.num_decode_requests)
        return price + (100.0 if draft_length is not None else 0.0)


class Fixed:
    """A stream whose every ``random()`` is ``u``."""

    def __init__(self, u: float) -> None:
        self.u = u

    def random(self) -> float:
        return self.u


# Factors in SCALE_KINDS order: prefill 2, mixed 3, decode 5, sd_round 7.
FACTORS = [2.0, 3.0, 5.0, 7.0]


def scaled(model: Counted, plain: Counted | None = None, speculating: bool = True) -> PassPricer:
    scale = PriceScale(FACTORS, [(), (), (), ()], Fixed(0.5), speculating)
    return PassPricer.from_model(
        model, fpm.ForwardPassMetrics, model.prices_speculation_natively, False, plain, scale=scale
    )


def test_each_kind_takes_its_factor_under_the_scaling_rule() -> None:
    pricer = scaled(Counted())
    # Prefill only: 10 ms x 2.  Decode of a speculating worker at d = 3 is an SD round asked
    # with the draft length: (2 + 100) x 7.  A pass with both is priced in two parts (the rule
    # rejects mixed work): prefill 10 x 2 + SD round (1 + 100) x 7.
    assert pricer.price([rank(prefills=1, tokens=8)], 3) == 20.0
    assert pricer.price([rank(decodes=2, kv=10)], 3) == 714.0
    assert pricer.price([rank(decodes=1, kv=5, prefills=1, tokens=8)], 3) == 20.0 + 707.0
    # Without drafts (draft length 0) decode is a plain step: 2 x 5; mixed: (10 + 1) x 3.
    assert pricer.price([rank(decodes=2, kv=10)], 0) == 10.0
    assert pricer.price([rank(decodes=1, kv=5, prefills=1, tokens=8)], 0) == 33.0


def test_a_native_model_prices_sd_rounds_and_its_plain_model_plain_steps() -> None:
    main, plain = Counted(native=True), Counted()
    pricer = scaled(main, plain)
    # Native: one call for the whole pass, no draft length; decode-only is an SD round (x 7).
    assert pricer.price([rank(decodes=3, kv=9)], 3) == 21.0
    assert pricer.price([rank(decodes=1, kv=5, prefills=1, tokens=8)], 3) == 33.0
    # Undrafted rounds go to the plain model: a decode step (x 5), never an SD round.
    assert pricer.price_plain([rank(decodes=3, kv=9)]) == 15.0
    assert (main.calls, plain.calls) == (2, 1)
    # A worker that does not speculate has no SD rounds.
    assert scaled(Counted(native=True), speculating=False).price([rank(decodes=3, kv=9)], 3) == 15.0


def test_per_step_scatter_is_an_inverse_cdf_draw_between_quantiles() -> None:
    # Quantiles 0.8, 1.0, 1.6 at 0, 50, 100 %: u = 0.75 is halfway from 1.0 to 1.6 -> 1.3.
    assert interpolate((0.8, 1.0, 1.6), 0.75) == pytest.approx(1.3, rel=1e-15)
    assert interpolate((0.8, 1.0, 1.6), 0.0) == 0.8
    scale = PriceScale(FACTORS, [(), (), (0.8, 1.0, 1.6), ()], Fixed(0.75), True)
    assert scale.apply(10.0, 2) == pytest.approx(10.0 * 5.0 * 1.3, rel=1e-15)
    assert scale.apply(10.0, 0) == 20.0  # no scatter for prefill


class Normals:
    """A stream whose ``gauss`` returns the given values in order (``random`` is not used)."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)

    def gauss(self, mu: float, sigma: float) -> float:
        assert (mu, sigma) == (0.0, 1.0)
        return self.values.pop(0)

    def random(self) -> float:
        raise AssertionError("a correlated scale draws normals only")


# Phi(1) and Phi(0.5), the standard normal CDF (published tables: 0.841344746, 0.691462461).
PHI_1, PHI_HALF = 0.8413447460685429, 0.6914624612740131


def test_correlated_scatter_follows_an_ar1_state_in_busy_time() -> None:
    # Share 1: z is the state itself. First draw: x = 1 -> u = Phi(1); quantiles 0.8, 1.0,
    # 1.2 at 0, 50, 100 %: 1.0 + 0.2 (2 Phi(1) - 1). The pass costs 10 x 5 x that.
    # Correlation time 50 / ln 2: after that 50-ms pass phi = exp(-ln 2) = 1/2, so with a
    # fresh normal 0 the state is 0.5 -> u = Phi(0.5).
    tau = 50.0 / math.log(2.0)
    scale = PriceScale(FACTORS, [(), (), (0.8, 1.0, 1.2), ()], Normals(1.0, 0.0), True, 1.0, tau)
    first = 1.0 + 0.2 * (2.0 * PHI_1 - 1.0)
    assert scale.apply(10.0, 2) == pytest.approx(50.0 * first, rel=1e-12)
    # Not 50 ms yet: rescale so that the busy time since the first draw is exactly 50 ms.
    scale = PriceScale(FACTORS, [(), (), (0.8, 1.0, 1.2), ()], Normals(1.0, 0.0), True, 1.0, tau)
    scale.apply(10.0 / first, 2)  # 10 / first x 5 x first = 50 ms
    assert scale.elapsed_ms == pytest.approx(50.0, rel=1e-12)
    second = 1.0 + 0.2 * (2.0 * PHI_HALF - 1.0)
    assert scale.apply(10.0, 2) == pytest.approx(50.0 * second, rel=1e-12)
    assert scale.state == pytest.approx(0.5, rel=1e-12)


def test_correlated_scatter_mixes_a_fresh_normal_for_the_rest_of_the_share() -> None:
    # Share 1/4: z = sqrt(1/4) x + sqrt(3/4) g. x = 2, g = 0 -> z = 1 -> u = Phi(1).
    # Passes of a kind without scatter (prefill, x 2) still advance the busy time.
    scale = PriceScale(FACTORS, [(), (), (0.8, 1.0, 1.2), ()], Normals(2.0, 0.0), True, 0.25, 9.0)
    assert scale.apply(4.0, 0) == 8.0
    assert scale.elapsed_ms == 8.0
    assert scale.apply(10.0, 2) == pytest.approx(50.0 * (1.0 + 0.2 * (2.0 * PHI_1 - 1.0)))
    # An uncorrelated scale (share 0) draws random() as before, never gauss.
    assert PriceScale(FACTORS, [(), (), (0.8, 1.0, 1.6), ()], Fixed(0.75), True).apply(
        10.0, 2
    ) == pytest.approx(65.0)
