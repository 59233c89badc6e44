"""AcceptanceProfile: hand-derived conversions, round trips both ways, and input errors."""

from __future__ import annotations

import math
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from aisim import AcceptanceProfile, AisimError, ConfigError
from aisim.config import acceptance_profile

RATE = st.floats(min_value=0.0, max_value=1.0, allow_nan=False, allow_subnormal=False)
DEPTH = st.integers(min_value=1, max_value=8)


# -- hand-derived figures ------------------------------------------------------------------


def test_conditional_to_every_form_by_hand() -> None:
    # u = (0.8, 0.8 * 0.5) ; E = 0.8 + 0.4 ; AL = 1 + E ; P(a=k) = (1-0.8, 0.8-0.4, 0.4)
    profile = AcceptanceProfile.from_conditional([0.8, 0.5])
    assert profile.depth == 2
    assert profile.provenance == "conditional"
    assert profile.conditional_rates == (0.8, 0.5)
    assert profile.unconditional_rates == pytest.approx((0.8, 0.4), abs=1e-15)
    assert profile.mean_accepted == pytest.approx(1.2, abs=1e-15)
    assert profile.acceptance_length == pytest.approx(2.2, abs=1e-15)
    assert profile.accepted_length_distribution() == pytest.approx((0.2, 0.4, 0.4), abs=1e-15)


def test_unconditional_to_conditional_by_hand() -> None:
    # p = (0.8, 0.4 / 0.8, 0.1 / 0.4) = (0.8, 0.5, 0.25)
    profile = AcceptanceProfile.from_unconditional([0.8, 0.4, 0.1])
    assert profile.provenance == "unconditional"
    assert profile.unconditional_rates == (0.8, 0.4, 0.1)
    assert profile.conditional_rates == pytest.approx((0.8, 0.5, 0.25), abs=1e-15)
    assert profile.mean_accepted == pytest.approx(1.3, abs=1e-15)
    assert profile.acceptance_length == pytest.approx(2.3, abs=1e-15)


def test_unconditional_zero_tail_has_zero_conditional_rates() -> None:
    # once P(a >= i) is 0 the later conditional rates are defined as 0 (no 0/0)
    profile = AcceptanceProfile.from_unconditional([0.5, 0.0, 0.0])
    assert profile.conditional_rates == (0.5, 0.0, 0.0)
    assert profile.accepted_length_distribution() == (0.5, 0.5, 0.0, 0.0)


def test_iid_alpha_half_depth_three_by_hand() -> None:
    # AL = (1 - 0.5^4) / (1 - 0.5) = 0.9375 / 0.5 = 1.875 ; E = 0.875 ; u = (0.5, 0.25, 0.125)
    profile = AcceptanceProfile.from_iid(0.5, 3)
    assert profile.provenance == "iid"
    assert profile.conditional_rates == (0.5, 0.5, 0.5)
    assert profile.unconditional_rates == (0.5, 0.25, 0.125)
    assert profile.mean_accepted == 0.875
    assert profile.acceptance_length == 1.875
    assert profile.accepted_length_distribution() == (0.5, 0.25, 0.125, 0.125)


def test_iid_alpha_one_accepts_everything() -> None:
    profile = AcceptanceProfile.from_iid(1.0, 4)
    assert profile.acceptance_length == 5.0
    assert profile.accepted_length_distribution() == (0.0, 0.0, 0.0, 0.0, 1.0)


def test_iid_alpha_zero_accepts_nothing() -> None:
    profile = AcceptanceProfile.from_iid(0.0, 2)
    assert profile.mean_accepted == 0.0
    assert profile.acceptance_length == 1.0
    assert profile.accepted_length_distribution() == (1.0, 0.0, 0.0)


def test_mean_is_a_two_point_staircase() -> None:
    # E = 1.5 at d = 3: rates (1, 0.5, 0); a is 1 or 2 with probability 1/2 each
    profile = AcceptanceProfile.from_mean_accepted(1.5, 3)
    assert profile.provenance == "mean_accepted"
    assert profile.conditional_rates == (1.0, 0.5, 0.0)
    assert profile.unconditional_rates == (1.0, 0.5, 0.0)
    assert profile.mean_accepted == 1.5
    assert profile.acceptance_length == 2.5
    assert profile.accepted_length_distribution() == (0.0, 0.5, 0.5, 0.0)


@pytest.mark.parametrize(
    ("mean", "depth", "rates"),
    [
        (0.0, 2, (0.0, 0.0)),
        (2.0, 2, (1.0, 1.0)),
        (1.0, 3, (1.0, 0.0, 0.0)),
        (0.25, 1, (0.25,)),
        (2.75, 4, (1.0, 1.0, 0.75, 0.0)),
    ],
)
def test_staircase_edges(mean: float, depth: int, rates: tuple[float, ...]) -> None:
    assert AcceptanceProfile.from_mean_accepted(mean, depth).conditional_rates == rates


def test_acceptance_length_is_one_plus_mean() -> None:
    # AL 2.5 at d = 3 -> E = 1.5 -> the same staircase as above
    profile = AcceptanceProfile.from_acceptance_length(2.5, 3)
    assert profile.provenance == "acceptance_length"
    assert profile.acceptance_length == 2.5
    assert profile.mean_accepted == 1.5
    assert profile.conditional_rates == (1.0, 0.5, 0.0)


def test_integral_floats_accepted_for_depth() -> None:
    assert acceptance_profile("iid", 0.5, 3.0).depth == 3
    assert acceptance_profile("iid", 0.5, 3.0) == AcceptanceProfile.from_iid(0.5, 3)


def test_profile_is_read_only() -> None:
    profile = AcceptanceProfile.from_iid(0.5, 2)
    with pytest.raises(AttributeError):
        profile.conditional_rates = (1.0, 1.0)  # type: ignore[misc]


# -- round trips (hypothesis) --------------------------------------------------------------


@given(st.lists(RATE, min_size=1, max_size=8))
def test_conditional_round_trips_through_unconditional(rates: list[float]) -> None:
    forward = AcceptanceProfile.from_conditional(rates)
    back = AcceptanceProfile.from_unconditional(list(forward.unconditional_rates))
    assert back.unconditional_rates == forward.unconditional_rates
    # p_i = u_i / u_(i-1) recovers the input wherever u_(i-1) is a normal float (division by a
    # subnormal loses relative precision; at 0 the rate is undefined and reported as 0)
    previous = 1.0
    pairs = zip(rates, back.conditional_rates, forward.unconditional_rates, strict=True)
    for given_rate, recovered, u in pairs:
        if previous >= sys.float_info.min:
            assert recovered == pytest.approx(given_rate, rel=1e-9, abs=1e-12)
        previous = u
    assert back.mean_accepted == forward.mean_accepted


@given(st.lists(RATE, min_size=1, max_size=8))
def test_unconditional_round_trips_through_conditional(raw: list[float]) -> None:
    unconditional = sorted(raw, reverse=True)
    forward = AcceptanceProfile.from_unconditional(unconditional)
    back = AcceptanceProfile.from_conditional(list(forward.conditional_rates))
    assert back.unconditional_rates == pytest.approx(unconditional, rel=1e-9, abs=1e-12)


@given(st.data(), DEPTH)
def test_mean_round_trips_through_acceptance_length(data: st.DataObject, depth: int) -> None:
    mean = data.draw(st.floats(min_value=0.0, max_value=float(depth)))
    from_mean = AcceptanceProfile.from_mean_accepted(mean, depth)
    assert from_mean.mean_accepted == mean
    from_length = AcceptanceProfile.from_acceptance_length(from_mean.acceptance_length, depth)
    assert from_length.mean_accepted == pytest.approx(mean, abs=1e-12)
    assert from_length.conditional_rates == pytest.approx(from_mean.conditional_rates, abs=1e-12)
    # the staircase's rates sum back to the mean (its unconditional rates equal its conditional)
    assert math.fsum(from_mean.unconditional_rates) == pytest.approx(mean, abs=1e-12)


@given(RATE, DEPTH)
def test_iid_matches_closed_form(alpha: float, depth: int) -> None:
    profile = AcceptanceProfile.from_iid(alpha, depth)
    closed_form = depth + 1.0
    if alpha < 1.0:
        closed_form = (1.0 - alpha ** (depth + 1)) / (1.0 - alpha)
    assert profile.acceptance_length == pytest.approx(closed_form, rel=1e-9)
    again = AcceptanceProfile.from_conditional([alpha] * depth)
    assert again.unconditional_rates == profile.unconditional_rates


@given(st.lists(RATE, min_size=1, max_size=8))
def test_distribution_sums_to_one_and_reproduces_mean(rates: list[float]) -> None:
    profile = AcceptanceProfile.from_conditional(rates)
    distribution = profile.accepted_length_distribution()
    assert len(distribution) == profile.depth + 1
    assert all(p >= 0.0 for p in distribution)
    assert math.fsum(distribution) == pytest.approx(1.0, abs=1e-12)
    mean = math.fsum(k * p for k, p in enumerate(distribution))
    assert mean == pytest.approx(profile.mean_accepted, abs=1e-12)


# -- errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: AcceptanceProfile.from_conditional([0.5, 1.5], "x.rates"), "x.rates[1]"),
        (lambda: AcceptanceProfile.from_conditional([], "x.rates"), "x.rates"),
        (lambda: AcceptanceProfile.from_conditional([float("nan")], "x.rates"), "x.rates[0]"),
        (lambda: AcceptanceProfile.from_conditional([0.5] * 65, "x.rates"), "x.rates"),
        (lambda: AcceptanceProfile.from_unconditional([0.4, 0.8], "x.u"), "x.u[1]"),
        (lambda: AcceptanceProfile.from_mean_accepted(3.5, 3, "x.mean"), "x.mean"),
        (lambda: AcceptanceProfile.from_mean_accepted(-0.1, 3, "x.mean"), "x.mean"),
        (lambda: AcceptanceProfile.from_mean_accepted(float("inf"), 3, "x.mean"), "x.mean"),
        (lambda: AcceptanceProfile.from_mean_accepted(1.0, 0, "x.mean"), "x.mean"),
        (lambda: AcceptanceProfile.from_acceptance_length(0.9, 3, "x.al"), "x.al"),
        (lambda: AcceptanceProfile.from_acceptance_length(4.5, 3, "x.al"), "x.al"),
        (lambda: AcceptanceProfile.from_iid(1.01, 3, "x.alpha"), "x.alpha"),
        # raw config values (wrong types) are the edge's: aisim.config.acceptance_profile
        (lambda: acceptance_profile("conditional", "0.5", None, "x.rates"), "x.rates"),
        (lambda: acceptance_profile("conditional", None, None, "x.rates"), "x.rates"),
        (lambda: acceptance_profile("conditional", [True], None, "x.rates"), "x.rates[0]"),
        (lambda: acceptance_profile("mean_accepted", 1.0, True, "x.mean"), "x.mean"),
        (lambda: acceptance_profile("iid", "0.5", 3, "x.alpha"), "x.alpha"),
    ],
)
def test_bad_inputs_are_config_errors_naming_the_field(build: object, field: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build()  # type: ignore[operator]
    assert isinstance(caught.value, AisimError)
    assert field in str(caught.value)
    assert "\n" not in str(caught.value)


def test_non_increasing_message_says_why() -> None:
    with pytest.raises(ConfigError, match="non-increasing"):
        AcceptanceProfile.from_unconditional([0.4, 0.8])
