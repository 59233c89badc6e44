"""Compare two gate snapshots: which predictions moved beyond the relative tolerance.

A prediction *moved* when its value changed beyond ``rtol`` (relative to the old value), when it
disappeared, or when a scenario started or stopped failing. New scenarios and metrics are listed
but do not fail the gate (they have no baseline).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from qualification._diff import ABSENT, Change, Diff, diff_cases

#: Default relative tolerance: the cross-platform parity tolerance.
DEFAULT_RTOL = 1e-9


@dataclass(frozen=True)
class GateReport:
    rtol: float
    diff: Diff
    num_scenarios: int
    num_predictions: int

    @property
    def moved(self) -> tuple[Change, ...]:
        """Changed or vanished predictions (a metric present only in the new snapshot is new)."""
        return tuple(change for change in self.diff.changed if change.old is not ABSENT)

    @property
    def new_metrics(self) -> tuple[Change, ...]:
        return tuple(change for change in self.diff.changed if change.old is ABSENT)

    @property
    def passed(self) -> bool:
        return not self.moved and not self.diff.removed

    def lines(self) -> list[str]:
        """The report: a header, one line per moved prediction, then removed/added scenarios."""
        out: list[str] = []
        if not self.passed:
            out.append(
                f"aisim compare: {len(self.moved)} prediction(s) moved beyond rtol {self.rtol:g}"
                f" and {len(self.diff.removed)} scenario(s) removed"
            )
            out.append("case\tmetric\told\tnew\trelative_change")
            for change in self.moved:
                rel = change.relative_change
                rel_text = "n/a" if rel is None else f"{rel:+.3e}"
                out.append(
                    f"{change.case}\t{change.field}\t{change.old!r}\t{change.new!r}\t{rel_text}"
                )
            out += [f"removed scenario {case}" for case in self.diff.removed]
        else:
            out.append(
                f"aisim compare: ok, {self.num_predictions} predictions in {self.num_scenarios} "
                f"scenarios, none moved beyond rtol {self.rtol:g}"
                + (f" ({len(self.diff.added)} new scenario(s))" if self.diff.added else "")
            )
        if not self.passed:
            out += [f"new scenario {case}" for case in self.diff.added]
        out += [f"new metric {change.case} {change.field}" for change in self.new_metrics]
        return out


def compare_snapshots(
    old: dict[str, Any], new: dict[str, Any], rtol: float = DEFAULT_RTOL
) -> GateReport:
    """Compare the ``predictions`` of two loaded snapshots."""
    old_predictions = old["predictions"]
    new_predictions = new["predictions"]
    diff = diff_cases(old_predictions, new_predictions, rtol)
    num_predictions = sum(len(values) for values in old_predictions.values())
    return GateReport(rtol, diff, len(old_predictions), num_predictions)
