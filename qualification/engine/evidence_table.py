"""Re-score every committed engine recording and rewrite what the text says about them
(``python -m qualification.engine.evidence_table``): the "Engine recordings" table rows of
``evidence/README.md`` and every generated block (``_figures.BLOCKS``: the README's host and
reading paragraphs, the plan's comment above the engine criteria, docs/replay.md's figures,
docs/evidence.md's "What it proves and what it does not").

One command after a re-recording (``evidence/engine/record-all.sh``): each recording under
``evidence/engine/`` is replayed and scored exactly as ``aisim qualify engine DIR`` does (and
diffed step by step as ``qualification.engine.step_diff`` does); its table row is replaced by
``table_row(report)`` (a recording without a row gets one appended) and each block between its
``evidence:NAME begin`` / ``evidence:NAME end`` markers by the text its figures give.
``--check`` writes nothing and exits 1 naming every file and block that differs (what a test
and ``tox -e qualify`` run). The plan's engine criteria name the recordings, not figures.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path
from typing import Any

from qualification.engine._figures import BLOCKS, RecordingFigures, recording_figures

SECTION = "## Engine recordings"
HEADER = (
    "| recording | E2E median abs. error | E2E P90 abs. error | mean TTFT error "
    "| noise: E2E median | noise: E2E P90 | noise: mean TTFT "
    "| repeat floor: E2E median | repeat floor: E2E P90 | throughput error "
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
    floor = report.get("repeat_floor") or {}
    accept = report["acceptance_length"]
    acceptance = (
        "n/a"
        if accept.get("observed") is None
        else f"{accept['observed']:.3f} / {accept['predicted']:.3f}"
    )
    tokens = report["tokens_per_decode_step"]
    # n/a: a run recorded without engine steps (a client-side driver such as vllm bench serve)
    drift = ", ".join(
        f"{run['step_cost_drift']:.2f}" if math.isfinite(run["step_cost_drift"]) else "n/a"
        for run in report["runs"]
    )
    observed = tokens["observed"]
    observed_text = f"{observed:.2f}" if math.isfinite(observed) else "n/a"
    adjusted = summary["drift_adjusted"]
    cells = [
        f"`{report['recording']}`",
        _pct(summary["e2e"]["median_abs_error_pct"]),
        _pct(summary["e2e"]["p90_abs_error_pct"]),
        _pct(summary["ttft"]["mean_error_pct"]),
        _pct(noise.get("e2e", {}).get("median_abs_error_pct")),
        _pct(noise.get("e2e", {}).get("p90_abs_error_pct")),
        _pct(noise.get("ttft", {}).get("mean_error_pct")),
        _pct(floor.get("e2e", {}).get("median_abs_error_pct")),
        _pct(floor.get("e2e", {}).get("p90_abs_error_pct")),
        _pct(summary["throughput_error_pct"]),
        acceptance,
        f"{observed_text} / {tokens['predicted']:.2f}",
        drift,
        _pct(adjusted["e2e"]["median_abs_error_pct"]),
        _pct(adjusted["ttft"]["mean_error_pct"]),
    ]
    return "| " + " | ".join(cells) + " |"


def score_all(engine_dir: Path) -> tuple[dict[str, str], list[RecordingFigures]]:
    """Recording name -> its table row, and the figures of every recording under
    ``engine_dir`` (name order)."""
    from qualification.engine._recording import load_recording
    from qualification.engine._report_section import find_engine_recordings
    from qualification.engine._score import score_recording

    out, figures = {}, []
    for directory in sorted(find_engine_recordings(engine_dir.parent)):
        if directory.parent != engine_dir:
            continue
        recording = load_recording(directory)
        if recording.grid is None:
            continue
        report, _ = score_recording(recording, recording.grid)
        out[directory.name] = table_row(report)
        figures.append(recording_figures(recording, report))
    return out, figures


def replace_block(text: str, name: str, body: str, where: str) -> str:
    """``text`` with the lines between its ``evidence:NAME begin`` and ``evidence:NAME end``
    marker lines replaced by ``body``. In a file whose begin marker is a ``#`` comment (YAML),
    every body line becomes a comment at the marker's indentation. A missing, repeated or
    out-of-order marker is a one-line ``SystemExit`` naming ``where`` and the block."""
    lines = text.split("\n")
    begins = [i for i, line in enumerate(lines) if f"evidence:{name} begin" in line]
    ends = [i for i, line in enumerate(lines) if f"evidence:{name} end" in line]
    if len(begins) != 1 or len(ends) != 1 or ends[0] < begins[0]:
        raise SystemExit(
            f"{where}: block {name!r} needs exactly one 'evidence:{name} begin' line before one "
            f"'evidence:{name} end' line (found {len(begins)} and {len(ends)})"
        )
    marker = lines[begins[0]]
    stripped = marker.lstrip()
    if stripped.startswith("#"):
        indent = marker[: len(marker) - len(stripped)]
        body_lines = [f"{indent}# {line}".rstrip() for line in body.split("\n")]
    else:
        body_lines = body.split("\n")
    return "\n".join(lines[: begins[0] + 1] + body_lines + lines[ends[0] :])


def rewrite_blocks(
    root: Path, figures: list[RecordingFigures], texts: dict[str, str]
) -> list[tuple[str, str]]:
    """Replace every block of ``BLOCKS`` in ``texts`` (relative path -> content, read from
    ``root`` when absent); returns (file, "block 'NAME'") for every block whose text changed."""
    stale = []
    for (relative, name), render in BLOCKS.items():
        if relative not in texts:
            texts[relative] = (root / relative).read_text(encoding="utf-8")
        updated = replace_block(texts[relative], name, render(figures), relative)
        if updated != texts[relative]:
            stale.append((relative, f"block {name!r}"))
        texts[relative] = updated
    return stale


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
    parser.add_argument(
        "--check", action="store_true", help="write nothing; 1 if the table or a block differs"
    )
    args = parser.parse_args(argv)
    readme = "evidence/README.md"
    new_rows, figures = score_all(args.root / "evidence" / "engine")
    original = {readme: (args.root / readme).read_text(encoding="utf-8")}
    texts = {readme: rewrite(original[readme], new_rows)}
    stale = [(readme, "the engine table")] if texts[readme] != original[readme] else []
    stale += rewrite_blocks(args.root, figures, texts)  # each block against the text so far
    for relative in texts:
        original.setdefault(relative, (args.root / relative).read_text(encoding="utf-8"))
    if args.check:
        for relative, name in stale:
            print(
                f"{args.root / relative}: {name} is stale: it differs from what the "
                "recordings give (regenerate: python -m qualification.engine.evidence_table)",
                file=sys.stderr,
            )
        return 1 if stale else 0
    from aisim.files import atomic_write_text

    for relative, text in texts.items():
        if text != original[relative]:
            atomic_write_text(args.root / relative, text, overwrite=True)
            names = ", ".join(name for where, name in stale if where == relative)
            print(f"rewrote {names} in {args.root / relative}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
