"""What the recording host was: CPU model and flags, load average, and the source tree's state.

A recording is only as trustworthy as the host it ran on, so the sidecar names the CPU (model
and instruction-set flags, which decide the kernels PyTorch picks) and the load average before
and after, and the recorder refuses to record from a modified source tree unless asked to.
"""

from __future__ import annotations

import platform
import subprocess
from pathlib import Path
from typing import Any

from aisim.errors import ConfigError


def parse_cpuinfo(text: str) -> dict[str, Any]:
    """``{"model": ..., "flags": [...]}`` from the first processor of a ``/proc/cpuinfo`` text
    (``flags`` on x86, ``Features`` on ARM); missing fields are ``None`` / ``[]``."""
    model: str | None = None
    flags: list[str] = []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if model is None and key in ("model name", "cpu model", "hardware"):
            model = value.strip() or None
        elif not flags and key in ("flags", "features"):
            flags = sorted(value.split())
        if not line.strip() and (model is not None or flags):
            break  # the end of the first processor's block
    return {"model": model, "flags": flags}


def parse_lscpu(text: str) -> dict[str, Any]:
    """The same fields from ``lscpu`` output (``Model name:`` and ``Flags:`` lines)."""
    model: str | None = None
    flags: list[str] = []
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip().lower()
        if key == "model name" and model is None:
            model = value.strip() or None
        elif key == "flags":
            flags = sorted(value.split())
    return {"model": model, "flags": flags}


def cpu_description() -> dict[str, Any]:
    """CPU model and flags with where they came from: ``/proc/cpuinfo``, else ``lscpu``, else
    ``platform.processor()`` (model only)."""
    try:
        found = parse_cpuinfo(Path("/proc/cpuinfo").read_text())
        if found["model"] is not None or found["flags"]:
            return {**found, "source": "/proc/cpuinfo"}
    except OSError:
        pass
    try:
        completed = subprocess.run(
            ["lscpu"], capture_output=True, text=True, timeout=10, check=False
        )
        if completed.returncode == 0:
            found = parse_lscpu(completed.stdout)
            if found["model"] is not None or found["flags"]:
                return {**found, "source": "lscpu"}
    except (OSError, subprocess.SubprocessError):
        pass
    return {"model": platform.processor() or None, "flags": [], "source": "platform.processor"}


def check_source_tree(git: dict[str, Any], allow_dirty: bool) -> dict[str, Any]:
    """The git state to write into the sidecar, with ``allow_dirty`` recorded beside it.

    Raises ConfigError when the tree has uncommitted changes to tracked files and
    ``allow_dirty`` is False: a dataset must name the exact code that recorded it.
    """
    if git.get("dirty") and not allow_dirty:
        raise ConfigError(
            f"record: the source tree at {git.get('revision', 'unknown')} has uncommitted "
            "changes; commit them so the dataset names the code that recorded it, or pass "
            "--allow-dirty (the sidecar then says so)"
        )
    return {**git, "allow_dirty": allow_dirty}
