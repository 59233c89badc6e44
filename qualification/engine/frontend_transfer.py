"""Does a front-end model carry to another recording? Leave-own-probe-out, with and without a
host-speed factor from the grids (``python -m qualification.engine.frontend_transfer``).

A recording without a probe of its own is priced with terms measured at another hour. The
hypothesis tested here: the front end's cost is CPU time on the engine's core, so it scales
with the host's speed as the engine's own step time does, and the ratio of the two recordings'
grids gives that speed (``host_speed``: the median over the grid points both tables timed of
the ratio of their median non-warm-up step times, pooled over the grid's passes; the grid is
the only input, never a served run). It is judged where the answer is known: every recording
with its own probe is scored again with the terms of every other probed recording of the same
target model (``identity.target``), as they are and times the factor, beside its own terms;
and every recording without a probe of its own, with the terms of every probed recording of
the same target model, as they are and times the factor. The figures are
``aisim qualify engine``'s (median and P90 per-request E2E |error|, mean TTFT error, mean TPOT
error: the mean over the served runs). docs/evidence.md, "The front end of vllm serve", keeps
the table and what it says.

usage: python -m qualification.engine.frontend_transfer [--root evidence/engine] [--json]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from aisim.errors import DataIntegrityError
from aisim.fpm import FRONTEND_FILE, FrontEndCost
from qualification.engine._recording import EngineRecording, StepTable, load_recording
from qualification.engine._score import score_recording
from qualification.engine.frontend import PROBE_FILE, derive, read_probe


def host_speed(table: StepTable, reference: StepTable) -> tuple[float, int]:
    """(median over the points both tables timed of table's / reference's median non-warm-up
    step time, number of such points): above 1, ``table``'s host was slower."""

    def medians(steps: Any) -> dict[str, float]:
        timed = steps[~steps["warmup"].astype(bool)]
        return {
            str(point): float(group["wall_ms"].median())
            for point, group in timed.groupby("point_id", sort=True)
        }

    mine, theirs = medians(table.steps), medians(reference.steps)
    common = sorted(set(mine) & set(theirs))
    if not common:
        raise DataIntegrityError(
            f"{str(table.directory)!r} and {str(reference.directory)!r}: no grid point timed in "
            "both: no host-speed ratio"
        )
    return statistics.median(mine[point] / theirs[point] for point in common), len(common)


def figures(
    recording: EngineRecording, terms: tuple[float, float, float] | None
) -> dict[str, float]:
    """``aisim qualify engine``'s figures of ``recording`` priced with front-end ``terms``
    (step, token, request ms; None: no front end)."""
    frontend = None if terms is None else FrontEndCost(*terms, "frontend_transfer")
    scored = dataclasses.replace(recording, frontend=frontend)
    assert scored.grid is not None
    report, _ = score_recording(scored, scored.grid)
    summary = report["summary"]
    return {
        "e2e_median_pct": float(summary["e2e"]["median_abs_error_pct"]),
        "e2e_p90_pct": float(summary["e2e"]["p90_abs_error_pct"]),
        "ttft_mean_pct": float(summary["ttft"]["mean_error_pct"]),
        "tpot_mean_pct": statistics.fmean(
            float(run["tpot"]["mean_error_pct"]) for run in report["runs"]
        ),
    }


def probe_terms(recording: EngineRecording) -> tuple[float, float, float]:
    """The front-end terms of ``recording``'s own probe priced by its own grid."""
    assert recording.grid is not None
    terms = derive(read_probe(recording.directory / PROBE_FILE), recording.grid)["terms"]
    return (float(terms["step_ms"]), float(terms["token_ms"]), float(terms["request_ms"]))


def _target(recording: EngineRecording) -> str:
    assert recording.grid is not None
    return json.dumps((recording.grid.sidecar.get("identity") or {}).get("target"), sort_keys=True)


def evaluate(root: Path) -> list[dict[str, Any]]:
    """One row per (scored recording, recording whose probe gave the terms): the host-speed
    factor and the figures with own / borrowed / borrowed x factor terms (module docstring)."""
    recordings = {}
    for folder in sorted(root.iterdir()):
        if (folder / FRONTEND_FILE).is_file():
            recordings[folder.name] = load_recording(folder)
    probed = {
        name: rec for name, rec in recordings.items() if (rec.directory / PROBE_FILE).is_file()
    }
    terms = {name: probe_terms(rec) for name, rec in probed.items()}
    rows = []
    for name, recording in recordings.items():
        sources = [
            other
            for other in probed
            if other != name and _target(probed[other]) == _target(recording)
        ]
        own = figures(recording, terms[name]) if name in probed else None
        for source in sources:
            grid, reference = recording.grid, probed[source].grid
            assert grid is not None and reference is not None
            factor, points = host_speed(grid, reference)
            borrowed = terms[source]
            scaled = (factor * borrowed[0], factor * borrowed[1], factor * borrowed[2])
            rows.append(
                {
                    "recording": name,
                    "terms_from": source,
                    "own_probe": name in probed,
                    "host_speed": factor,
                    "points": points,
                    "terms_ms": list(borrowed),
                    "own": own,
                    "borrowed": figures(recording, borrowed),
                    "scaled": figures(recording, scaled),
                }
            )
    return rows


def _cell(figures_: dict[str, float] | None) -> str:
    if figures_ is None:
        return "-"
    return " / ".join(
        f"{figures_[key]:.1f}"
        for key in ("e2e_median_pct", "e2e_p90_pct", "ttft_mean_pct", "tpot_mean_pct")
    )


def to_markdown(rows: Sequence[dict[str, Any]]) -> str:
    lines = [
        "| recording | terms from | host-speed factor | own probe | borrowed | borrowed x factor |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| `{row['recording']}` | `{row['terms_from']}` | {row['host_speed']:.3f} "
            f"({row['points']} points) | {_cell(row['own'])} | {_cell(row['borrowed'])} "
            f"| {_cell(row['scaled'])} |"
        )
    lines.append("")
    lines.append(
        "(each cell: median E2E |error| / P90 E2E |error| / mean TTFT error / mean TPOT error, %)"
    )
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m qualification.engine.frontend_transfer",
        description=(__doc__ or "").splitlines()[0],
    )
    parser.add_argument("--root", type=Path, default=Path("evidence/engine"))
    parser.add_argument("--json", action="store_true", help="print the rows as JSON")
    args = parser.parse_args(argv)
    try:
        rows = evaluate(args.root)
    except DataIntegrityError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(rows, indent=1, sort_keys=True, allow_nan=False, default=_finite))
    else:
        sys.stdout.write(to_markdown(rows))
    return 0


def _finite(value: Any) -> Any:  # pragma: no cover - json default for non-JSON types
    return None if isinstance(value, float) and not math.isfinite(value) else str(value)


if __name__ == "__main__":
    raise SystemExit(main())
