"""Write the release report: ``report.html`` (self-contained) and ``report.json``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aisim.files import atomic_write_text, canonical_json, check_writable
from qualification.report._html import render_html


def write_report(
    report: dict[str, Any], images: dict[str, bytes], out_dir: Path, *, overwrite: bool = False
) -> list[Path]:
    """Write both files (refusing to clobber unless ``overwrite``); return their paths."""
    targets = [out_dir / "report.html", out_dir / "report.json"]
    for target in targets:
        check_writable(target, overwrite)
    atomic_write_text(targets[0], render_html(report, images), overwrite=overwrite)
    atomic_write_text(targets[1], canonical_json(report), overwrite=overwrite)
    return targets
