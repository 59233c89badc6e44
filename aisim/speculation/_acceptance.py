"""Acceptance profiles: the five published forms of SD acceptance and their exact conversions.

A profile describes, for a draft depth ``d``, how many of the ``d`` drafted tokens a round accepts
(the bonus token excluded). Its canonical content is the per-position *conditional* rates
``p_i = P(draft i accepted | drafts 1..i-1 accepted)``; every other form is derived with the
closed forms below (docs/design.md#acceptance):

* unconditional ``u_i = P(a >= i) = p_1 * ... * p_i`` (non-increasing, what vLLM reports);
* conditional from unconditional ``p_i = u_i / u_(i-1)`` (``u_0 = 1``; ``p_i = 0`` once ``u`` hits 0);
* mean accepted drafts ``E[a] = u_1 + ... + u_d``;
* acceptance length ``AL = 1 + E[a]``;
* i.i.d. ``alpha``: ``p_i = alpha``, ``AL = (1 - alpha^(d+1)) / (1 - alpha)`` (``d + 1`` at 1);
* a mean ``E`` alone is the two-point staircase ``p = (1 x floor(E), frac(E), 0, ...)``.

The form a profile was built from is kept verbatim (``provenance`` and the given numbers), so a
round trip through the same form returns the input exactly. Acceptance is an input with
provenance: it is never predicted and never part of a cost identity. Compiled by mypyc.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Final

from aisim.errors import ConfigError

#: The deepest acceptance profile accepted (bounds every loop over positions).
MAX_ACCEPTANCE_DEPTH: Final = 64

PROVENANCE_CONDITIONAL: Final = "conditional"
PROVENANCE_UNCONDITIONAL: Final = "unconditional"
PROVENANCE_MEAN_ACCEPTED: Final = "mean_accepted"
PROVENANCE_ACCEPTANCE_LENGTH: Final = "acceptance_length"
PROVENANCE_IID: Final = "iid"


class AcceptanceProfile:
    """How many drafts an SD round accepts, at depth ``d`` (read-only once built).

    Build it with one of the ``from_*`` constructors. They take typed numbers (a raw config
    value goes through ``aisim.config.acceptance_profile``, which checks its type) and refuse
    numbers outside the form's range with a ``ConfigError`` naming ``path`` (the config field
    the numbers came from).
    """

    def __init__(
        self,
        conditional_rates: tuple[float, ...],
        unconditional_rates: tuple[float, ...],
        mean_accepted: float,
        acceptance_length: float,
        provenance: str,
    ) -> None:
        self._conditional_rates = conditional_rates
        self._unconditional_rates = unconditional_rates
        self._mean_accepted = mean_accepted
        self._acceptance_length = acceptance_length
        self._provenance = provenance

    # -- read-only views -------------------------------------------------------------------

    @property
    def depth(self) -> int:
        """Draft positions described (the ``d`` of the SD configuration it belongs to)."""
        return len(self._conditional_rates)

    @property
    def conditional_rates(self) -> tuple[float, ...]:
        """``p_i = P(draft i accepted | drafts 1..i-1 accepted)``, one per position, in [0, 1]."""
        return self._conditional_rates

    @property
    def unconditional_rates(self) -> tuple[float, ...]:
        """``u_i = P(accepted drafts >= i)``, one per position, non-increasing, in [0, 1]."""
        return self._unconditional_rates

    @property
    def mean_accepted(self) -> float:
        """``E[a]``: mean accepted drafts per round, bonus token excluded, in [0, d]."""
        return self._mean_accepted

    @property
    def acceptance_length(self) -> float:
        """``AL = 1 + E[a]``: mean tokens emitted per round (vLLM/SGLang "acceptance length")."""
        return self._acceptance_length

    @property
    def provenance(self) -> str:
        """The form the profile was given in: conditional, unconditional, mean_accepted,
        acceptance_length or iid."""
        return self._provenance

    def accepted_length_distribution(self) -> tuple[float, ...]:
        """``P(a = k)`` for ``k = 0..d`` (``u_k - u_(k+1)`` with ``u_0 = 1``, ``u_(d+1) = 0``)."""
        previous = 1.0
        result: list[float] = []
        for rate in self._unconditional_rates:
            result.append(max(0.0, previous - rate))
            previous = rate
        result.append(previous)
        return tuple(result)

    def to_dict(self) -> dict[str, object]:
        """Every form, JSON-ready (floats, lists), for explain output and goldens."""
        return {
            "provenance": self._provenance,
            "depth": self.depth,
            "conditional_rates": list(self._conditional_rates),
            "unconditional_rates": list(self._unconditional_rates),
            "mean_accepted": self._mean_accepted,
            "acceptance_length": self._acceptance_length,
            "accepted_length_distribution": list(self.accepted_length_distribution()),
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AcceptanceProfile):
            return NotImplemented
        return (
            self._provenance == other._provenance
            and self._conditional_rates == other._conditional_rates
            and self._unconditional_rates == other._unconditional_rates
            and self._mean_accepted == other._mean_accepted
            and self._acceptance_length == other._acceptance_length
        )

    def __hash__(self) -> int:
        return hash((self._provenance, self._conditional_rates, self._mean_accepted))

    def __repr__(self) -> str:
        rates = ", ".join(f"{rate:.4g}" for rate in self._conditional_rates)
        return (
            f"AcceptanceProfile({self._provenance}, d={self.depth}, conditional=[{rates}], "
            f"mean_accepted={self._mean_accepted:.6g}, acceptance_length={self._acceptance_length:.6g})"
        )

    # -- constructors ------------------------------------------------------------------------

    @staticmethod
    def from_conditional(
        rates: Sequence[float], path: str = "acceptance_rates"
    ) -> AcceptanceProfile:
        """From conditional rates ``p_1..p_d`` (each in [0, 1]); ``u_i`` is the running product."""
        conditional = _rates(rates, path)
        unconditional: list[float] = []
        running = 1.0
        for rate in conditional:
            running *= rate
            unconditional.append(running)
        mean = math.fsum(unconditional)
        return AcceptanceProfile(
            conditional, tuple(unconditional), mean, 1.0 + mean, PROVENANCE_CONDITIONAL
        )

    @staticmethod
    def from_unconditional(
        rates: Sequence[float], path: str = "unconditional_acceptance_rates"
    ) -> AcceptanceProfile:
        """From unconditional rates ``u_1..u_d`` (in [0, 1], non-increasing); ``p_i = u_i/u_(i-1)``."""
        unconditional = _rates(rates, path)
        conditional: list[float] = []
        previous = 1.0
        for index, rate in enumerate(unconditional):
            if rate > previous:
                raise ConfigError(
                    f"{path}[{index}]: unconditional rates P(accepted >= i) must be non-increasing, "
                    f"got {rate!r} after {previous!r}"
                )
            conditional.append(rate / previous if previous > 0.0 else 0.0)
            previous = rate
        mean = math.fsum(unconditional)
        return AcceptanceProfile(
            tuple(conditional), unconditional, mean, 1.0 + mean, PROVENANCE_UNCONDITIONAL
        )

    @staticmethod
    def from_mean_accepted(
        mean: float, depth: int, path: str = "expected_accepted_tokens"
    ) -> AcceptanceProfile:
        """From mean accepted drafts ``E`` in [0, d]: the staircase ``(1 x floor(E), frac(E), 0..)``."""
        size = _depth(depth, path)
        value = _bounded(mean, path, 0.0, float(size))
        return _staircase(value, 1.0 + value, size, PROVENANCE_MEAN_ACCEPTED)

    @staticmethod
    def from_acceptance_length(
        length: float, depth: int, path: str = "acceptance_length"
    ) -> AcceptanceProfile:
        """From a mean acceptance length ``AL`` in [1, d + 1]: ``E = AL - 1``, then the staircase."""
        size = _depth(depth, path)
        value = _bounded(length, path, 1.0, float(size + 1))
        return _staircase(value - 1.0, value, size, PROVENANCE_ACCEPTANCE_LENGTH)

    @staticmethod
    def from_iid(alpha: float, depth: int, path: str = "acceptance_rate") -> AcceptanceProfile:
        """From one i.i.d. rate ``alpha`` in [0, 1]: ``p_i = alpha``, ``u_i = alpha^i``."""
        size = _depth(depth, path)
        rate = _bounded(alpha, path, 0.0, 1.0)
        unconditional: list[float] = []
        running = 1.0
        for _ in range(size):
            running *= rate
            unconditional.append(running)
        # E[a] = alpha (1 - alpha^d) / (1 - alpha); the sum form is exact at alpha = 1 too.
        mean = math.fsum(unconditional)
        return AcceptanceProfile(
            tuple(rate for _ in range(size)), tuple(unconditional), mean, 1.0 + mean, PROVENANCE_IID
        )


def _staircase(mean: float, length: float, depth: int, provenance: str) -> AcceptanceProfile:
    whole = int(math.floor(mean))
    fraction = mean - float(whole)  # exact: subtracting the floor of a double never rounds
    rates: list[float] = []
    for index in range(depth):
        if index < whole:
            rates.append(1.0)
        elif index == whole:
            rates.append(fraction)
        else:
            rates.append(0.0)
    staircase = tuple(rates)
    return AcceptanceProfile(staircase, staircase, mean, length, provenance)


def _depth(depth: int, path: str) -> int:
    if not 1 <= depth <= MAX_ACCEPTANCE_DEPTH:
        raise ConfigError(
            f"{path} (depth): expected an integer in 1..{MAX_ACCEPTANCE_DEPTH}, got {depth}"
        )
    return depth


def _bounded(value: float, path: str, minimum: float, maximum: float) -> float:
    """``value`` if finite and in ``minimum..maximum``; else a ``ConfigError`` at ``path``."""
    if not (math.isfinite(value) and minimum <= value <= maximum):
        raise ConfigError(
            f"{path}: expected a finite number in {minimum!r}..{maximum!r}, got {value!r}"
        )
    return float(value)


def _rates(rates: Sequence[float], path: str) -> tuple[float, ...]:
    if not rates or len(rates) > MAX_ACCEPTANCE_DEPTH:
        raise ConfigError(f"{path}: expected 1..{MAX_ACCEPTANCE_DEPTH} rates, got {len(rates)}")
    return tuple(_bounded(rate, f"{path}[{index}]", 0.0, 1.0) for index, rate in enumerate(rates))
