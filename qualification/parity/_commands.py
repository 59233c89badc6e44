"""The parity commands: ``check`` recomputes suites and compares them with their goldens;
``update`` rewrites goldens after printing the before/after diff a reviewer reads.

Tolerance mode: ``AISIM_PARITY_RTOL`` (or ``--rtol``) sets a relative tolerance for numbers; the
default 0 means exact (bit-for-bit) comparison, the contract on the platform that wrote the
goldens. ``1e-9`` is the documented tolerance for other platforms (different libm / CPU).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from qualification._diff import Diff, diff_cases
from qualification.cases import SUITE_NAMES
from qualification.parity._golden import (
    compute_document,
    crashes,
    golden_path,
    read_document,
    write_document,
)

RTOL_ENV = "AISIM_PARITY_RTOL"
#: The documented cross-platform tolerance.
CROSS_PLATFORM_RTOL = 1e-9


def parity_rtol() -> float:
    """The relative tolerance from ``$AISIM_PARITY_RTOL`` (0 = exact when unset or empty)."""
    raw = os.environ.get(RTOL_ENV, "").strip()
    if not raw:
        return 0.0
    try:
        value = float(raw)
    except ValueError:
        raise ValueError(f"{RTOL_ENV}: expected a number >= 0 such as 1e-9, got {raw!r}") from None
    if not (value >= 0.0) or value == float("inf"):
        raise ValueError(f"{RTOL_ENV}: expected a finite number >= 0, got {raw!r}")
    return value


def diff_against_golden(name: str, directory: Path, rtol: float) -> tuple[Diff, list[str]]:
    """Recompute suite ``name``; return its diff from the golden and any crashed cases."""
    document = compute_document(name)
    golden = read_document(golden_path(directory, name))
    old_cases = {} if golden is None else golden["cases"]
    return diff_cases(old_cases, document["cases"], rtol), crashes(document)


def stray_goldens(directory: Path) -> list[Path]:
    """Golden files that belong to no registered suite (unused goldens fail parity)."""
    known = {f"{name}.json" for name in SUITE_NAMES}
    return sorted(p for p in directory.glob("*.json") if p.name not in known)


def check(names: Sequence[str], directory: Path, rtol: float, out: TextIO = sys.stdout) -> int:
    """Exit status 0 when every named suite matches its golden, else 1 (listing what moved)."""
    status = 0
    mode = "exact" if rtol == 0.0 else f"rtol {rtol:g}"
    for name in names:
        diff, crashed = diff_against_golden(name, directory, rtol)
        if not golden_path(directory, name).is_file():
            print(f"{name}: no golden at {golden_path(directory, name)}", file=out)
            status = 1
        verdict = "ok" if diff.is_empty and not crashed else "FAILED"
        print(f"{name}: {verdict} ({mode}; {diff.summary()})", file=out)
        for line in diff.lines(limit=50):
            print(f"  {line}", file=out)
        for line in crashed:
            print(f"  crash {line}", file=out)
        if not diff.is_empty or crashed:
            status = 1
    if list(names) == list(SUITE_NAMES):
        for path in stray_goldens(directory):
            print(f"unused golden {path} (no registered suite)", file=out)
            status = 1
    return status


def update(names: Sequence[str], directory: Path, out: TextIO = sys.stdout) -> int:
    """Rewrite the named goldens, printing every added, removed and changed value first.

    Refuses (exit 1, nothing written for that suite) when a case crashed: a crash is a bug, not
    a behaviour to freeze. Updating all suites also deletes goldens of unregistered suites.
    """
    status = 0
    directory.mkdir(parents=True, exist_ok=True)
    for name in names:
        document = compute_document(name)
        crashed = crashes(document)
        if crashed:
            print(f"{name}: NOT updated, {len(crashed)} case(s) crashed:", file=out)
            for line in crashed:
                print(f"  crash {line}", file=out)
            status = 1
            continue
        path = golden_path(directory, name)
        golden = read_document(path)
        diff = diff_cases({} if golden is None else golden["cases"], document["cases"])
        if golden is not None and diff.is_empty:
            print(f"{name}: unchanged ({len(document['cases'])} cases)", file=out)
            continue
        write_document(path, document)
        action = "created" if golden is None else "updated"
        print(
            f"{name}: {action} {path} ({diff.summary()}; {len(document['cases'])} cases)", file=out
        )
        if golden is not None:
            for line in diff.lines():
                print(f"  {line}", file=out)
    if list(names) == list(SUITE_NAMES):
        for path in stray_goldens(directory):
            path.unlink()
            print(f"deleted unused golden {path}", file=out)
    return status
