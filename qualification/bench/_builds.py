"""Run one benchmark body under the compiled and the pure build, interleaved, in one run.

The compiled build is whatever ``aisim`` is installed in this interpreter (``tox -e bench``
installs the compiled wheel); the pure build is the source tree put first on ``PYTHONPATH``
(it holds only ``.py`` files). Each child reports its own ``aisim.__compiled__``, so a silent
fallback shows in the output instead of a meaningless ratio.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any


def source_root() -> Path:
    """The source tree holding the pure modules: ``AISIM_SOURCE_ROOT`` or the working directory."""
    root = Path(os.environ.get("AISIM_SOURCE_ROOT", os.getcwd()))
    if not (root / "aisim" / "__init__.py").is_file():
        raise SystemExit(f"no aisim source tree at {root}; run from the repository root")
    if any((root / "aisim").rglob("*.so")):
        raise SystemExit(
            f"{root}/aisim holds compiled .so files; it cannot serve as the pure build"
        )
    return root


def run_child(module: str, args: list[str], *, pure: bool) -> dict[str, Any]:
    """Run ``python -m module args`` and parse the JSON object it prints last (numbers, flags,
    strings and, from bench_replay, per-case objects)."""
    result: dict[str, Any] = json.loads(
        run_child_output(module, args, pure=pure).strip().splitlines()[-1]
    )
    return result


def run_child_output(module: str, args: list[str], *, pure: bool) -> str:
    """Run ``python -m module args`` under one build and return what it printed."""
    env = dict(os.environ)
    env.pop("PYTHONSAFEPATH", None)
    root = source_root()
    if pure:
        env["PYTHONPATH"] = str(root) + os.pathsep + env.get("PYTHONPATH", "")
    else:
        env["PYTHONSAFEPATH"] = "1"
        env.pop("PYTHONPATH", None)
    completed = subprocess.run(
        [sys.executable, "-m", module, *args],
        env=env,
        cwd="/" if not pure else str(root),
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        raise SystemExit(f"benchmark child failed ({module}):\n{completed.stderr}")
    return completed.stdout


#: How to get the compiled build that a "compiled" figure needs.
HOW_TO_COMPILE = (
    "run `tox -e bench` (it installs the mypyc-compiled wheel), or install a compiled wheel "
    "with `pip install .` (not editable, AISIM_PURE unset) and run from outside the source tree"
)


def run_aisimulate(python: str, args: list[str], what: str) -> dict[str, Any]:
    """Run ``qualification.bench.bench_aisimulate ARGS`` in AISimulate's interpreter ``python``
    and return the JSON object on its last output line; exit naming ``what`` if it fails."""
    completed = subprocess.run(
        [python, "-m", "qualification.bench.bench_aisimulate", *args],
        cwd=str(source_root()),
        # Its own interpreter imports only that module from the source tree, never aisim.
        env={
            **{k: v for k, v in os.environ.items() if k != "PYTHONSAFEPATH"},
            "PYTHONPATH": str(source_root()),
        },
        capture_output=True,
        text=True,
        check=False,
    )
    if completed.returncode != 0:
        sys.exit(f"{what} failed:\n{completed.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(completed.stdout.strip().splitlines()[-1])
    return result


def check_build(reported_compiled: object, *, pure: bool) -> None:
    """Refuse to label a figure with a build the child did not import (a silent fallback)."""
    if not pure and reported_compiled is not True:
        raise SystemExit(
            "bench: the 'compiled' run imported the pure-Python aisim (aisim.__compiled__ is "
            f"False), so its figures cannot be labelled compiled; {HOW_TO_COMPILE}"
        )
    if pure and reported_compiled is not False:
        raise SystemExit(
            "bench: the 'pure' run imported a compiled aisim; the source tree given by "
            "AISIM_SOURCE_ROOT must hold only .py files"
        )


def compare_builds(module: str, args: list[str], repetitions: int = 3) -> dict[str, object]:
    """Interleave compiled and pure runs; report best-of-N seconds and the ratio."""
    compiled: list[float] = []
    pure: list[float] = []
    flags: dict[str, object] = {}
    for _ in range(repetitions):
        for is_pure, bucket in ((False, compiled), (True, pure)):
            result = run_child(module, args, pure=is_pure)
            check_build(result["compiled"], pure=is_pure)
            bucket.append(float(result["seconds"]))
            flags["pure_build_compiled" if is_pure else "compiled_build_compiled"] = result[
                "compiled"
            ]
    best_compiled, best_pure = min(compiled), min(pure)
    return {
        "compiled_s": best_compiled,
        "pure_s": best_pure,
        "speedup": best_pure / best_compiled,
        **flags,
    }
