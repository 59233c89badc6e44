"""Golden documents: build one from a suite, find, read and write ``goldens/<suite>.json``.

A golden document is ``{"format": 1, "suite": NAME, "cases": {case_id: outcome}}`` written as
canonical JSON (sorted keys, two-space indent, floats via ``repr``), so the same outcomes always
give the same bytes and a changed number shows up as a one-line diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from aisim.files import atomic_write_text, canonical_json
from qualification.cases import Suite, get_suite, run_case

GOLDEN_FORMAT = 1


def compute_document(suite: Suite | str) -> dict[str, Any]:
    """Evaluate every case of ``suite`` now and return its golden document."""
    resolved = get_suite(suite) if isinstance(suite, str) else suite
    cases = {case.id: run_case(resolved, case) for case in resolved.cases}
    return {"format": GOLDEN_FORMAT, "suite": resolved.name, "cases": cases}


def crashes(document: dict[str, Any]) -> list[str]:
    """``"case: message"`` for each case whose evaluation raised a non-aisim exception."""
    return [
        f"{case_id}: {outcome['crash']}"
        for case_id, outcome in sorted(document["cases"].items())
        if "crash" in outcome
    ]


def render(document: dict[str, Any]) -> str:
    """The canonical text of a golden document."""
    return canonical_json(document)


def goldens_dir(start: str | os.PathLike[str] | None = None) -> Path:
    """The repository's ``goldens/`` directory: ``$AISIM_GOLDENS_DIR`` if set, else the nearest
    ``goldens/`` beside a ``pyproject.toml`` at or above ``start`` (default: the working dir)."""
    override = os.environ.get("AISIM_GOLDENS_DIR")
    if override:
        return Path(override)
    here = Path(start if start is not None else Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "pyproject.toml").is_file() and (candidate / "goldens").is_dir():
            return candidate / "goldens"
    raise FileNotFoundError(
        f"no goldens/ directory beside a pyproject.toml at or above {here}; "
        "run from the repository or set AISIM_GOLDENS_DIR"
    )


def golden_path(directory: Path, suite_name: str) -> Path:
    return directory / f"{suite_name}.json"


def read_document(path: Path) -> dict[str, Any] | None:
    """The golden document at ``path``, or ``None`` when there is none yet."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    document = json.loads(text)
    if not isinstance(document, dict) or document.get("format") != GOLDEN_FORMAT:
        raise ValueError(f"{path}: not a format-{GOLDEN_FORMAT} golden document")
    return document


def write_document(path: Path, document: dict[str, Any]) -> None:
    atomic_write_text(path, render(document), overwrite=True)
