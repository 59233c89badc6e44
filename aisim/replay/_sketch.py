"""Run-wide latency distributions in bounded memory: exact values up to a limit, then a mergeable
relative-error quantile sketch.

The sketch is DDSketch's logarithmic mapping (Masson, Rim and Lee, "DDSketch: a fast and
fully-mergeable quantile sketch with relative-error guarantees", VLDB 2019; the ``ddsketch``
package's ``LogarithmicMapping``): a positive value ``x`` falls in bucket ``ceil(log_gamma(x))``
with ``gamma = (1 + a) / (1 - a)``, and the bucket's representative ``2 gamma^k / (gamma + 1)``
is within relative error ``a`` of every value in it. Zero is its own bucket (exact). It is
written here, not imported, because it runs once per emission inside the compiled core (a
million-request replay adds ~10^8 inter-token latencies); sketches of equal accuracy merge by
adding bucket counts, so per-point sketches of a sweep combine exactly.
"""

from __future__ import annotations

import math
from typing import Any, Final

#: The relative accuracy of every sketch replay builds: a sketched percentile is within 0.5 %
#: of the exact (linearly interpolated) percentile of the same values.
RELATIVE_ACCURACY: Final = 0.005
#: Values a ``Distribution`` keeps exactly before it switches to the sketch (per statistic).
EXACT_LIMIT: Final = 200_000
SKETCH_KIND: Final = "ddsketch-logarithmic"


class QuantileSketch:
    """Counts of non-negative values in logarithmic buckets (see the module docstring)."""

    def __init__(self, relative_accuracy: float = RELATIVE_ACCURACY) -> None:
        if not 0.0 < relative_accuracy < 1.0:
            raise ValueError(
                f"relative_accuracy: expected a number in (0, 1), got {relative_accuracy!r}"
            )
        self.relative_accuracy = relative_accuracy
        self.gamma = (1.0 + relative_accuracy) / (1.0 - relative_accuracy)
        self._log_gamma = math.log(self.gamma)
        self.buckets: dict[int, int] = {}
        self.zero_count = 0
        self.count = 0
        self.minimum = math.inf
        self.maximum = -math.inf

    def add(self, value: float) -> None:
        """Count ``value`` (milliseconds, >= 0; a negative value is counted as zero)."""
        self.count += 1
        if value < self.minimum:
            self.minimum = value
        if value > self.maximum:
            self.maximum = value
        if value <= 0.0:
            self.zero_count += 1
            return
        key = math.ceil(math.log(value) / self._log_gamma)
        buckets = self.buckets
        buckets[key] = buckets.get(key, 0) + 1

    def add_repeated(self, value: float, count: int) -> None:
        """Count ``value`` ``count`` times (as many ``add(value)`` calls)."""
        if count <= 0:
            return
        self.count += count
        if value < self.minimum:
            self.minimum = value
        if value > self.maximum:
            self.maximum = value
        if value <= 0.0:
            self.zero_count += count
            return
        key = math.ceil(math.log(value) / self._log_gamma)
        buckets = self.buckets
        buckets[key] = buckets.get(key, 0) + count

    def merge(self, other: QuantileSketch) -> None:
        """Add ``other``'s counts (both must have the same relative accuracy)."""
        if other.relative_accuracy != self.relative_accuracy:
            raise ValueError(
                f"cannot merge sketches of relative accuracy {self.relative_accuracy!r} and "
                f"{other.relative_accuracy!r}"
            )
        for key, count in other.buckets.items():
            self.buckets[key] = self.buckets.get(key, 0) + count
        self.zero_count += other.zero_count
        self.count += other.count
        self.minimum = min(self.minimum, other.minimum)
        self.maximum = max(self.maximum, other.maximum)

    def quantile(self, q: float) -> float:
        """The ``q``-quantile (0..1), interpolated linearly between neighbouring ranks as numpy's
        default percentile is, so it is within the relative accuracy of the exact one."""
        if self.count == 0:
            raise ValueError("quantile of an empty sketch")
        rank = q * (self.count - 1)
        low = int(math.floor(rank))
        high = min(low + 1, self.count - 1)
        fraction = rank - low
        low_value = self._value_at(low)
        high_value = low_value if high == low else self._value_at(high)
        return low_value + (high_value - low_value) * fraction

    def _value_at(self, rank: int) -> float:
        """Estimate of the value of 0-based rank ``rank``, clamped to the exact extremes (which
        the first and last ranks are)."""
        if rank == 0:
            return self.minimum
        if rank == self.count - 1:
            return self.maximum
        if rank < self.zero_count:
            return 0.0 if self.minimum > 0.0 else max(self.minimum, 0.0)
        seen = self.zero_count
        for key in sorted(self.buckets):
            seen += self.buckets[key]
            if rank < seen:
                value = 2.0 * math.exp(key * self._log_gamma) / (self.gamma + 1.0)
                return min(max(value, self.minimum), self.maximum)
        return self.maximum

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (``from_dict`` restores it): bucket keys as strings, in order."""
        return {
            "kind": SKETCH_KIND,
            "relative_accuracy": self.relative_accuracy,
            "count": self.count,
            "zero_count": self.zero_count,
            "min": self.minimum if self.count else None,
            "max": self.maximum if self.count else None,
            "buckets": {str(key): self.buckets[key] for key in sorted(self.buckets)},
        }

    @staticmethod
    def from_dict(data: dict[str, Any]) -> QuantileSketch:
        sketch = QuantileSketch(float(data["relative_accuracy"]))
        sketch.count = int(data["count"])
        sketch.zero_count = int(data["zero_count"])
        if sketch.count:
            sketch.minimum = float(data["min"])
            sketch.maximum = float(data["max"])
        sketch.buckets = {int(key): int(count) for key, count in dict(data["buckets"]).items()}
        return sketch


class Distribution:
    """One latency statistic's samples: kept exactly (``values``) while there are at most
    ``exact_limit``, then folded into a ``QuantileSketch`` (``values`` emptied). ``count`` and
    ``total`` (for the mean) stay exact either way."""

    def __init__(self, exact_limit: int = EXACT_LIMIT) -> None:
        self.exact_limit = exact_limit
        self.values: list[float] = []
        self.sketch: QuantileSketch | None = None
        self.count = 0
        self.total = 0.0

    @property
    def exact(self) -> bool:
        return self.sketch is None

    def add(self, value: float) -> None:
        self.count += 1
        self.total += value
        sketch = self.sketch
        if sketch is not None:
            sketch.add(value)
            return
        self.values.append(value)
        if len(self.values) > self.exact_limit:
            self.sketch = sketch_of(self.values)
            self.values = []

    def add_repeated(self, value: float, count: int) -> None:
        """``count`` times ``add(value)``: the same values, count and total (summed one by one,
        so the float total is bit-identical)."""
        if count <= 0:
            return
        self.count += count
        total = self.total
        for _ in range(count):
            total += value
        self.total = total
        sketch = self.sketch
        if sketch is not None:
            sketch.add_repeated(value, count)
            return
        values = self.values
        # One boxed float for the run, not one per sample (equal values either way).
        values.extend([value] * count)
        if len(values) > self.exact_limit:
            self.sketch = sketch_of(values)
            self.values = []

    def to_sketch(self) -> QuantileSketch:
        """A sketch of every sample (built from the exact values when they are still kept), to
        merge with other runs' sketches (e.g. across the points of a sweep)."""
        if self.sketch is not None:
            merged = QuantileSketch(self.sketch.relative_accuracy)
            merged.merge(self.sketch)
            return merged
        return sketch_of(self.values)


def sketch_of(values: list[float]) -> QuantileSketch:
    """A sketch of ``values``: each run of equal values (a pass's gaps; fixed timing repeats
    them for thousands of emissions) is counted at once with ``add_repeated``, giving the same
    buckets, count and extremes as adding the values one by one, with one logarithm per run."""
    sketch = QuantileSketch()
    count = len(values)
    start = 0
    while start < count:
        value = values[start]
        end = start + 1
        while end < count and values[end] == value:
            end += 1
        sketch.add_repeated(value, end - start)
        start = end
    return sketch
