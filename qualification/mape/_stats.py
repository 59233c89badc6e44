"""Optional distribution tests: two-sample Kolmogorov-Smirnov and TOST equivalence.

Self-contained (no SciPy): the Student-t tail comes from the regularized incomplete beta function
(continued fraction, Numerical Recipes' ``betacf``), the KS p-value from the asymptotic
Kolmogorov series with Stephens' small-sample correction. Both loops are bounded.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

_MAX_ITERATIONS = 300
_EPSILON = 3e-14


def _beta_continued_fraction(a: float, b: float, x: float) -> float:
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, _MAX_ITERATIONS + 1):
        m2 = 2 * m
        for numerator in (
            m * (b - m) * x / ((qam + m2) * (a + m2)),
            -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2)),
        ):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < _EPSILON:
            break
    return h


def regularized_incomplete_beta(a: float, b: float, x: float) -> float:
    """I_x(a, b) for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (
        math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    )
    front = math.exp(log_front)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_continued_fraction(a, b, x) / a
    return 1.0 - front * _beta_continued_fraction(b, a, 1.0 - x) / b


def student_t_sf(t: float, degrees_of_freedom: float) -> float:
    """P(T > t) for Student's t with the given degrees of freedom."""
    tail = 0.5 * regularized_incomplete_beta(
        degrees_of_freedom / 2.0, 0.5, degrees_of_freedom / (degrees_of_freedom + t * t)
    )
    return tail if t >= 0 else 1.0 - tail


def ks_two_sample(first: Sequence[float], second: Sequence[float]) -> dict[str, float]:
    """Statistic D = sup |F1 - F2| and its asymptotic p-value."""
    a, b = sorted(first), sorted(second)
    n1, n2 = len(a), len(b)
    i = j = 0
    statistic = 0.0
    while i < n1 and j < n2:
        value = min(a[i], b[j])
        while i < n1 and a[i] <= value:
            i += 1
        while j < n2 and b[j] <= value:
            j += 1
        statistic = max(statistic, abs(i / n1 - j / n2))
    effective = math.sqrt(n1 * n2 / (n1 + n2))
    lam = (effective + 0.12 + 0.11 / effective) * statistic
    return {"statistic": statistic, "p_value": _kolmogorov_q(lam)}


def _kolmogorov_q(lam: float) -> float:
    if lam < 0.2:
        return 1.0
    total, sign = 0.0, 1.0
    for k in range(1, 101):
        term = sign * math.exp(-2.0 * k * k * lam * lam)
        total += term
        if abs(term) < 1e-12:
            break
        sign = -sign
    return min(1.0, max(0.0, 2.0 * total))


def tost_log_ratio(
    predicted: Sequence[float], measured: Sequence[float], margin: float, alpha: float = 0.05
) -> dict[str, Any]:
    """Two one-sided t-tests that the mean of ln(predicted / measured) lies within
    +-ln(1 + margin). ``equivalent`` is True when both one-sided p-values are below ``alpha``.
    Needs at least two pairs with some spread; otherwise ``equivalent`` is None with a reason."""
    ratios = [math.log(p / m) for p, m in zip(predicted, measured, strict=True)]
    n = len(ratios)
    bound = math.log1p(margin)
    if n < 2:
        return {"equivalent": None, "reason": "fewer than two configurations", "margin": margin}
    mean = sum(ratios) / n
    spread = math.sqrt(sum((r - mean) ** 2 for r in ratios) / (n - 1))
    if spread == 0.0:
        return {
            "equivalent": abs(mean) < bound,
            "p_value": 0.0,
            "mean_log_ratio": mean,
            "margin": margin,
            "n": n,
        }
    error = spread / math.sqrt(n)
    p_lower = student_t_sf((mean + bound) / error, n - 1)
    p_upper = student_t_sf((bound - mean) / error, n - 1)
    p_value = max(p_lower, p_upper)
    return {
        "equivalent": p_value < alpha,
        "p_value": p_value,
        "mean_log_ratio": mean,
        "margin": margin,
        "alpha": alpha,
        "n": n,
    }
