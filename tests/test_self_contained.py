"""The repo stands on its own: comments cite its own docs (anchors that exist), never an outside
spec section, and no file names an absolute path of some machine."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("aisim", "qualification", "docs", "tests", ".ci")
TOP_FILES = ("README.md", "pyproject.toml", "setup.py", "tox.ini")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".json", ".toml", ".ini", ".txt", ".cfg", ""}
OUTSIDE_SPEC = re.compile("SPEC " + "\u00a7")
MACHINE_PATH = re.compile(r"(?<![\w.~-])/(work|root|home|tmp)/")
DESIGN_ANCHOR = re.compile(r"docs/design\.md#([a-z0-9-]+)")


def _text_files() -> list[Path]:
    files = [ROOT / name for name in TOP_FILES]
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.is_file() and path.suffix in SUFFIXES and "__pycache__" not in path.parts:
                files.append(path)
    return files


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def test_no_outside_spec_citations_and_no_machine_paths() -> None:
    offenders = []
    for path in _text_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            if OUTSIDE_SPEC.search(line) or MACHINE_PATH.search(line):
                offenders.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()[:100]}")
    assert offenders == []


def test_every_cited_design_anchor_exists() -> None:
    design = (ROOT / "docs" / "design.md").read_text(encoding="utf-8")
    anchors = {_slug(line.lstrip("#")) for line in design.splitlines() if line.startswith("#")}
    cited = set()
    for path in _text_files():
        cited.update(DESIGN_ANCHOR.findall(path.read_text(encoding="utf-8", errors="replace")))
    assert cited, "nothing cites docs/design.md"
    assert cited <= anchors, sorted(cited - anchors)


DOC_CITATION = re.compile(r"docs/([a-z_]+\.md)(?:#([a-z0-9-]+))?")


def test_every_cited_doc_and_anchor_exists() -> None:
    """A ``docs/NAME.md`` (or ``docs/NAME.md#anchor``) named anywhere (help texts, comments,
    docs) is a file of docs/ with that heading: a new user follows these. Tests are left out
    (their fixtures name made-up docs)."""
    anchors = {
        path.name: {
            _slug(line.lstrip("#"))
            for line in path.read_text(encoding="utf-8").splitlines()
            if line.startswith("#")
        }
        for path in (ROOT / "docs").glob("*.md")
    }
    missing = []
    for path in _text_files():
        if path.relative_to(ROOT).parts[0] == "tests":
            continue
        for name, anchor in DOC_CITATION.findall(
            path.read_text(encoding="utf-8", errors="replace")
        ):
            if name not in anchors or (anchor and anchor not in anchors[name]):
                missing.append(
                    f"{path.relative_to(ROOT)}: docs/{name}{'#' + anchor if anchor else ''}"
                )
    assert sorted(set(missing)) == []
