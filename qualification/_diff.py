"""Structural comparison of case -> value mappings, shared by parity goldens and the gate.

Values are compared leaf by leaf (dict keys sorted, list positions kept). Numbers compare exactly
(same type, same ``repr``: bit-for-bit) when ``rtol == 0``, else within the relative tolerance
``|new - old| <= rtol * max(|old|, |new|)``. Everything else (strings, bools, None, structure)
always compares exactly.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

#: Stands for a leaf that exists on one side only.
ABSENT = "<absent>"


@dataclass(frozen=True)
class Change:
    """One leaf that differs: ``case`` id, ``field`` path inside the case, old and new value."""

    case: str
    field: str
    old: Any
    new: Any

    @property
    def relative_change(self) -> float | None:
        """``(new - old) / |old|`` for two numbers (``inf`` when old is 0), else ``None``."""
        if not (_is_number(self.old) and _is_number(self.new)):
            return None
        if self.old == 0:
            return 0.0 if self.new == 0 else math.inf
        if any(
            isinstance(value, float) and not math.isfinite(value) for value in (self.old, self.new)
        ):
            return math.nan
        # exact, so an integer beyond float range (a snapshot may hold one) cannot overflow
        change = (Fraction(self.new) - Fraction(self.old)) / abs(Fraction(self.old))
        try:
            return float(change)
        except OverflowError:
            return math.inf if change > 0 else -math.inf

    def describe(self) -> str:
        rel = self.relative_change
        rel_text = "" if rel is None else f"  (relative change {rel:+.3e})"
        where = f"{self.case} {self.field}" if self.field else self.case
        return f"{where}: {self.old!r} -> {self.new!r}{rel_text}"


@dataclass(frozen=True)
class Diff:
    """Cases only in the new mapping, only in the old one, and leaf changes in the shared ones."""

    added: tuple[str, ...]
    removed: tuple[str, ...]
    changed: tuple[Change, ...]

    @property
    def is_empty(self) -> bool:
        return not (self.added or self.removed or self.changed)

    @property
    def changed_cases(self) -> tuple[str, ...]:
        return tuple(sorted({change.case for change in self.changed}))

    def summary(self) -> str:
        return (
            f"{len(self.added)} added, {len(self.removed)} removed, "
            f"{len(self.changed_cases)} changed ({len(self.changed)} values)"
        )

    def lines(self, limit: int | None = None) -> list[str]:
        """Human-readable lines: every added/removed case and every changed value (``limit``
        caps the changed values shown, with a count of the rest)."""
        out = [f"added   {case}" for case in self.added]
        out += [f"removed {case}" for case in self.removed]
        shown = self.changed if limit is None else self.changed[:limit]
        out += [f"changed {change.describe()}" for change in shown]
        if limit is not None and len(self.changed) > limit:
            out.append(f"... and {len(self.changed) - limit} more changed values")
        return out


def _is_number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def values_match(old: Any, new: Any, rtol: float = 0.0) -> bool:
    """Whether two leaves are equal under the rules in the module docstring."""
    if _is_number(old) and _is_number(new):
        if rtol == 0.0:
            return type(old) is type(new) and repr(old) == repr(new)
        try:
            return math.isclose(float(old), float(new), rel_tol=rtol, abs_tol=0.0)
        except OverflowError:
            # an integer beyond float range (a snapshot may hold one): compare exactly
            if any(isinstance(value, float) and not math.isfinite(value) for value in (old, new)):
                return False
            first, second = Fraction(old), Fraction(new)
            return abs(first - second) <= Fraction(rtol) * max(abs(first), abs(second))
    return type(old) is type(new) and bool(old == new)


def leaves(value: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """``(path, leaf)`` pairs: ``a.b[2].c``; an empty dict or list is itself a leaf."""
    if isinstance(value, Mapping) and value:
        for key in sorted(value):
            yield from leaves(value[key], f"{prefix}.{key}" if prefix else str(key))
    elif isinstance(value, list) and value:
        for index, item in enumerate(value):
            yield from leaves(item, f"{prefix}[{index}]")
    else:
        yield prefix, value


def diff_values(case: str, old: Any, new: Any, rtol: float = 0.0) -> list[Change]:
    """Leaf changes between two values of one case."""
    old_leaves = dict(leaves(old))
    new_leaves = dict(leaves(new))
    changes: list[Change] = []
    for path in sorted(old_leaves.keys() | new_leaves.keys()):
        before = old_leaves.get(path, ABSENT)
        after = new_leaves.get(path, ABSENT)
        if (
            path not in old_leaves
            or path not in new_leaves
            or not values_match(before, after, rtol)
        ):
            changes.append(Change(case, path, before, after))
    return changes


def diff_cases(old: Mapping[str, Any], new: Mapping[str, Any], rtol: float = 0.0) -> Diff:
    """Compare two ``case id -> value`` mappings."""
    if rtol < 0 or not math.isfinite(rtol):
        raise ValueError(f"rtol must be a finite number >= 0, got {rtol!r}")
    added = tuple(sorted(new.keys() - old.keys()))
    removed = tuple(sorted(old.keys() - new.keys()))
    changed: list[Change] = []
    for case in sorted(old.keys() & new.keys()):
        changed.extend(diff_values(case, old[case], new[case], rtol))
    return Diff(added, removed, tuple(changed))
