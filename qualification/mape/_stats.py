"""Optional distribution tests: two-sample Kolmogorov-Smirnov and TOST equivalence.

The distributions are SciPy's (``scipy.stats``, the qualify extra): the Student-t tail is
``t.sf`` and the two-sample KS test ``ks_2samp`` (exact p-values for small samples, the
asymptotic distribution for large ones).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any


def student_t_sf(t: float, degrees_of_freedom: float) -> float:
    """P(T > t) for Student's t with the given degrees of freedom."""
    from scipy import stats

    return float(stats.t.sf(t, degrees_of_freedom))


def ks_two_sample(first: Sequence[float], second: Sequence[float]) -> dict[str, float]:
    """Statistic D = sup |F1 - F2| and its p-value (``scipy.stats.ks_2samp``)."""
    from scipy import stats

    result = stats.ks_2samp(list(first), list(second))
    return {"statistic": float(result.statistic), "p_value": float(result.pvalue)}


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
