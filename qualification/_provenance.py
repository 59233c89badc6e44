"""Where a result came from: the git revision of the tree that produced it."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]


def git_state(root: Path = REPO_ROOT) -> dict[str, Any]:
    """``{"revision": sha, "dirty": bool}``, or revision ``"unknown"`` outside a git checkout."""
    try:
        revision = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, timeout=10
        )
        status = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=root,
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return {"revision": "unknown", "dirty": None}
    if revision.returncode != 0:
        return {"revision": "unknown", "dirty": None}
    return {"revision": revision.stdout.strip(), "dirty": bool(status.stdout.strip())}
