"""Re-score every committed engine recording and rewrite the "Engine recordings" table rows of
``evidence/README.md`` (``python -m qualification.engine.evidence_table``).

One command after a re-recording (``evidence/engine/record-all.sh``): each recording under
``evidence/engine/`` is replayed and scored exactly as ``aisim qualify engine DIR`` does, and its
row in the table is replaced by ``table_row(report)`` (a recording without a row gets one
appended). ``--check`` writes nothing and exits 1 when a row differs (what a test asserts). The
plan's engine criteria name the recordings, not figures, so they need no regeneration.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

SECTION = "## Engine recordings"
HEADER = (
    "| recording | E2E median abs. error | E2E P90 abs. error | mean TTFT error "
    "| noise: E2E median | noise: E2E P90 | noise: mean TTFT | throughput error "
    "| acceptance length observed / predicted | tokens per decode step observed / predicted "
    "| step-cost drift per served run | drift-adjusted: E2E median | drift-adjusted: mean TTFT |"
)


def _pct(value: Any) -> str:
    if value is None:
        return "n/a"
    text = f"{float(value):.1f}"
    return ("0.0" if text == "-0.0" else text) + " %"


def table_row(report: dict[str, Any]) -> str:
    """The README row of one scored recording (``score_recording``'s report)."""
    summary, noise = report["summary"], report["noise_floor"] or {}
    accept = report["acceptance_length"]
    acceptance = (
        "n/a"
        if accept.get("observed") is None
        else f"{accept['observed']:.3f} / {accept['predicted']:.3f}"
    )
    tokens = report["tokens_per_decode_step"]
    drift = ", ".join(f"{run['step_cost_drift']:.2f}" for run in report["runs"])
    adjusted = summary["drift_adjusted"]
    cells = [
        f"`{report['recording']}`",
        _pct(summary["e2e"]["median_abs_error_pct"]),
        _pct(summary["e2e"]["p90_abs_error_pct"]),
        _pct(summary["ttft"]["mean_error_pct"]),
        _pct(noise.get("e2e", {}).get("median_abs_error_pct")),
        _pct(noise.get("e2e", {}).get("p90_abs_error_pct")),
        _pct(noise.get("ttft", {}).get("mean_error_pct")),
        _pct(summary["throughput_error_pct"]),
        acceptance,
        f"{tokens['observed']:.2f} / {tokens['predicted']:.2f}",
        drift,
        _pct(adjusted["e2e"]["median_abs_error_pct"]),
        _pct(adjusted["ttft"]["mean_error_pct"]),
    ]
    return "| " + " | ".join(cells) + " |"


def rows(engine_dir: Path) -> dict[str, str]:
    """Recording name -> its table row, for every recording under ``engine_dir``."""
    from qualification.engine._recording import load_recording
    from qualification.engine._report_section import find_engine_recordings
    from qualification.engine._score import score_recording

    out = {}
    for directory in find_engine_recordings(engine_dir.parent):
        if directory.parent != engine_dir:
            continue
        recording = load_recording(directory)
        if recording.grid is None:
            continue
        report, _ = score_recording(recording, recording.grid)
        out[directory.name] = table_row(report)
    return out


def rewrite(text: str, new_rows: dict[str, str]) -> str:
    """``text`` (the README) with the engine table's header and rows replaced; rows of
    recordings that are gone are dropped, new ones appended in name order."""
    head, sep, rest = text.partition(SECTION)
    if not sep:
        raise SystemExit(f"evidence/README.md: no {SECTION!r} section")
    lines = rest.split("\n")
    start = next((i for i, line in enumerate(lines) if line.startswith("| recording |")), None)
    if start is None:
        raise SystemExit("evidence/README.md: the engine section has no '| recording |' table")
    end = start + 2
    while end < len(lines) and lines[end].startswith("| `"):
        end += 1
    columns = HEADER.count("|") - 1
    table = [HEADER, "|" + "---|" * columns] + [new_rows[name] for name in sorted(new_rows)]
    return head + sep + "\n".join(lines[:start] + table + lines[end:])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m qualification.engine.evidence_table")
    parser.add_argument("--root", type=Path, default=Path("."), help="repository root")
    parser.add_argument("--check", action="store_true", help="write nothing; 1 if rows differ")
    args = parser.parse_args(argv)
    readme = args.root / "evidence" / "README.md"
    text = readme.read_text(encoding="utf-8")
    updated = rewrite(text, rows(args.root / "evidence" / "engine"))
    if args.check:
        if updated != text:
            print(
                f"{readme}: the engine table differs from the recordings' scores", file=sys.stderr
            )
            return 1
        return 0
    if updated != text:
        from aisim._io import atomic_write_text

        atomic_write_text(readme, updated, overwrite=True)
        print(f"rewrote the engine table of {readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
