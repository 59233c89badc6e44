"""The release plan's standard criteria for engine recordings (``python -m
qualification.engine.plan_criteria evidence/engine/NAME [...]``).

Every engine recording under ``evidence/`` must be named by a criterion of
``qualification/plan.yaml`` (``aisim qualify report`` fails the plan otherwise), and the
committed ones are judged by one standard set: replay's median E2E error against the engine's
repeat noise and against its repeat floor, the P90 against the floor's, throughput within 20 %,
issue 23's targets (median <= 8 %, P90 <= 20 %, mean TTFT within 10 %) and, where the recording
timed the engine's steps, the step model's own figure (<= 5 %). This prints that set for each
recording as the plan's YAML entries, scored as the report scores them: an entry the recording
fails now is preceded by a ``# FAILS now`` comment with its figure, to be fixed or given a
``known_gap: {issue, reason}`` with the measured reason (docs/qualification.md, "Known gaps").
It writes nothing.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from aisim.errors import DataIntegrityError
from qualification.engine._diagnostic import diagnostic_parser, run_diagnostic
from qualification.engine._figures import (
    TARGET_E2E_MEDIAN_PCT,
    TARGET_E2E_P90_PCT,
    TARGET_TTFT_MEAN_PCT,
)
from qualification.engine._recording import EngineRecording
from qualification.engine._report_section import judged_figures
from qualification.plan import Criterion
from qualification.report import compared_value as plan_value
from qualification.report import engine_figure

#: Issue 23's step figure: median served-step price error per kind and run, the grid alone.
TARGET_STEP_PRICE_PCT: Final = 5.0
#: Replay's throughput against the engine's.
TARGET_THROUGHPUT_PCT: Final = 20.0


@dataclass(frozen=True)
class Standard:
    """One criterion of the standard set: the id's last part, the metric, the bound, the
    rationale, and whether it needs the engine's own steps (a client-side driver records none)."""

    suffix: str
    metric: str
    threshold: float
    rationale: str
    needs_steps: bool = False


STANDARD: Final = (
    Standard(
        "e2e-vs-noise",
        "e2e_median_ape_vs_noise",
        1.0,
        "median per-request E2E error (raw, step table as recorded) no larger than the engine's "
        "repeat noise",
    ),
    Standard(
        "e2e-vs-repeat-floor",
        "e2e_median_ape_vs_repeat_floor",
        1.0,
        "median per-request E2E |error| no larger than the repeat floor's: each served run "
        "predicted by the mean of the other served runs of the same trace (issue 23)",
    ),
    Standard(
        "e2e-p90-vs-repeat-floor",
        "e2e_p90_ape_vs_repeat_floor",
        1.0,
        "P90 per-request E2E |error| no larger than the repeat floor's P90 (issue 23)",
    ),
    Standard(
        "throughput",
        "throughput_error",
        TARGET_THROUGHPUT_PCT / 100,
        f"throughput within {TARGET_THROUGHPUT_PCT:g} %",
    ),
    Standard(
        "e2e-median-8pct",
        "e2e_median_ape",
        TARGET_E2E_MEDIAN_PCT / 100,
        f"median per-request E2E |error| <= {TARGET_E2E_MEDIAN_PCT:g} % (issue 23)",
    ),
    Standard(
        "e2e-p90-20pct",
        "e2e_p90_ape",
        TARGET_E2E_P90_PCT / 100,
        f"P90 per-request E2E |error| <= {TARGET_E2E_P90_PCT:g} % (issue 23)",
    ),
    Standard(
        "ttft-mean-10pct",
        "ttft_mean_relative_error",
        TARGET_TTFT_MEAN_PCT / 100,
        f"mean TTFT within {TARGET_TTFT_MEAN_PCT:g} % (issue 23)",
    ),
    Standard(
        "step-price-5pct",
        "step_price_error",
        TARGET_STEP_PRICE_PCT / 100,
        f"median served-step price error <= {TARGET_STEP_PRICE_PCT:g} % per step kind and served "
        "run, the grid as the only input (issue 23)",
        needs_steps=True,
    ),
)


def compared_value(standard: Standard, report: dict[str, Any]) -> float | None:
    """The number the plan compares with ``standard.threshold`` for a scored recording
    (``score_recording``'s report), derived as the release report derives it
    (``qualification.report.engine_figure`` and ``compared_value``): a percentage over 100, or
    over the noise figure for the ``*_vs_*`` metrics; magnitudes for signed metrics; None where
    the figure cannot be computed (one served run: no repeat noise)."""
    criterion = Criterion(
        id=f"engine/recording/{standard.suffix}",
        check="engine_comparison",
        input="evidence/engine/recording",  # the figure is read from ``report``, not a path
        metric=standard.metric,
        threshold=standard.threshold,
        use="point",
        rationale=standard.rationale,
    )
    figure = engine_figure(standard.metric, {"name": "recording", **judged_figures(report)})
    value = plan_value(criterion, figure)
    return value if value is not None and math.isfinite(value) else None


def has_engine_steps(recording: EngineRecording) -> bool:
    """Whether every served run recorded the engine's own steps (a client-side driver such as
    ``vllm bench serve`` records none: no step figure)."""
    return all(not run.steps.empty for run in recording.served)


def entries(recording: EngineRecording, report: dict[str, Any] | None, root: Path) -> str:
    """The plan's YAML entries of the standard set for ``recording``; scored (``report``, as
    ``score_recording`` gives it), each is preceded by a ``# FAILS now`` comment where its
    figure is above the bound."""
    try:
        directory = recording.directory.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        directory = recording.directory.as_posix()
    steps = has_engine_steps(recording)
    lines = []
    for standard in STANDARD:
        if standard.needs_steps and not steps:
            continue
        value = None if report is None else compared_value(standard, report)
        if report is None:
            pass
        elif value is None:
            lines.append(f"  # CANNOT BE JUDGED now ({standard.metric}: no figure)")
        elif value > standard.threshold:
            lines.append(
                f"  # FAILS now: {standard.metric} {value:.4g} > {standard.threshold:g}: fix it "
                'or add known_gap: {issue: N, reason: "the measured reason"}'
            )
        rationale = standard.rationale.replace('"', '\\"')
        lines += [
            f"  - {{id: engine/{recording.name}/{standard.suffix}, check: engine_comparison, "
            f"input: {directory},",
            f"     metric: {standard.metric}, threshold: {standard.threshold!r}, use: point,",
            f'     rationale: "{rationale}"}}',
        ]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    from qualification.engine._score import score_recording

    parser = diagnostic_parser(
        "plan_criteria",
        "Print the release plan's standard criteria for each engine recording (YAML entries "
        "for qualification/plan.yaml's criteria list), scored as aisim qualify report scores "
        "them: an entry the recording fails now is marked. Writes nothing.",
    )
    args = parser.parse_args(argv)
    root = Path.cwd()

    def each(recording: EngineRecording) -> None:
        if recording.grid is None:  # refused by run_diagnostic(need_grid=True) before this
            raise DataIntegrityError(f"{recording.name}: no grid/ step table to price with")
        report, _ = score_recording(recording, recording.grid)
        print(f"  # {recording.name}")
        print(entries(recording, report, root))

    return run_diagnostic(args.recordings, each, need_grid=True)


if __name__ == "__main__":
    sys.exit(main())
