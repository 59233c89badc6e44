"""The release report's engine section: every committed engine recording replayed and scored.

Self-contained (the report calls ``engine_sections`` and ``engine_html``): evidence type
``engine-measurement``, one block per recording with the headline errors next to the engine's
repeat noise, the acceptance length observed and predicted, and the plots.
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aisim.errors import AisimError
from qualification.engine._schema import GRID_DIR, SERVED_PREFIX, SERVED_REQUESTS

EVIDENCE_TYPE = "engine-measurement"


def find_engine_recordings(evidence: Path) -> list[Path]:
    """Recording directories under ``evidence`` (one or two levels down) with a served run."""
    if not evidence.is_dir():
        return []
    found = {
        path.parent.parent
        for pattern in (f"*/{SERVED_PREFIX}*/", f"*/*/{SERVED_PREFIX}*/")
        for path in evidence.glob(pattern + SERVED_REQUESTS.file_name)
    }
    return sorted(found)


def judged_figures(report: dict[str, Any]) -> dict[str, Any]:
    """What the plan's engine criteria read of a scored recording (``score_recording``'s
    report): its ``summary``, and its ``noise_floor``, the pairwise repeat noise with the repeat
    floor (each run predicted by the mean of the others) under ``leave_one_out``
    (``qualification.plan.ENGINE_FIGURES``)."""
    noise = report["noise_floor"]
    return {
        "summary": report["summary"],
        "noise_floor": None if noise is None else noise | {"leave_one_out": report["repeat_floor"]},
    }


def engine_section(directory: Path) -> tuple[dict[str, Any], dict[str, bytes]]:
    from qualification.engine._recording import load_recording
    from qualification.engine._render import plots
    from qualification.engine._score import finite, score_recording

    try:
        recording = load_recording(directory)
        if recording.grid is None:
            raise AisimError(f"{str(directory)!r}: no {GRID_DIR}/ step table to price with")
        report, per_request = score_recording(recording, recording.grid)
        report = finite(report)  # JSON: a figure that could not be computed is null
    except AisimError as exc:
        return {
            "name": directory.name,
            "path": directory.as_posix(),
            "status": "refused",
            "reason": str(exc),
            "evidence_type": EVIDENCE_TYPE,
        }, {}
    images = {f"engine/{directory.name}/{name}": data for name, data in plots(per_request).items()}
    section = {
        "name": directory.name,
        "path": directory.as_posix(),
        "status": "scored",
        "evidence_type": EVIDENCE_TYPE,
        "command": f"aisim qualify engine {directory.as_posix()}",
        "recording_command": recording.served[0].sidecar.get("command", ""),
        **judged_figures(report),
        "acceptance_length": [run["acceptance_length"] for run in report["runs"]],
        "engine_settings": report["engine_settings"],
        "target_shape": report["target_shape"],
        "requests": report["requests"],
        "served_runs": len(report["runs"]),
        "host_load": [run["host_load"] for run in report["runs"]],
        "report": report,
        "images": sorted(images),
    }
    return section, images


def engine_sections(evidence: Path) -> tuple[list[dict[str, Any]], dict[str, bytes]]:
    sections, images = [], {}
    for directory in find_engine_recordings(evidence):
        section, section_images = engine_section(directory)
        sections.append(section)
        images.update(section_images)
    return sections, images


def engine_html(
    sections: list[dict[str, Any]],
    images: dict[str, bytes],
    table: Callable[[list[str], list[list[str]]], str],
    image: Callable[[str, bytes], str],
) -> str:
    """The section's HTML, built with the report's own table and image helpers."""
    from qualification.engine._render import HEADERS, headline_rows

    parts = [
        "<h2>Replay against a real serving engine "
        f'<span class="tag {EVIDENCE_TYPE}">{EVIDENCE_TYPE}</span></h2>',
        "<p>vLLM (CPU build) serving a seeded trace with models built from config (dummy "
        "weights, float32), replayed by aisim from the engine's recorded settings and priced by a "
        "separately recorded step table. Errors are shown next to the engine's own repeat noise; "
        "a CPU engine with tiny models qualifies the scheduler model and the harness, not GPU "
        "timing.</p>",
    ]
    if not sections:
        parts.append("<p>no engine recordings under the evidence directory</p>")
    for section in sections:
        name = html.escape(section["name"])
        if section["status"] != "scored":
            parts.append(f"<h3>{name}: refused</h3><p>{html.escape(section['reason'])}</p>")
            continue
        accept = section["acceptance_length"][0]
        parts += [
            f"<h3>{name}</h3>",
            f"<p>{html.escape(str(section['target_shape']))}, {section['requests']} requests, "
            f"{section['served_runs']} served runs; speculative: "
            f"{html.escape(str(section['engine_settings'].get('speculative_method')))}; "
            f"acceptance length observed {accept['observed']} / predicted {accept['predicted']}. "
            f"Recorded with <code>{html.escape(section['recording_command'])}</code>.</p>",
            table(HEADERS, headline_rows(section["report"])),
            "".join(image(key, images[key]) for key in section["images"] if key in images),
        ]
    return "\n".join(parts)
