"""Build aisim, compiling the core with mypyc unless a pure build is asked for.

The compiled/interpreted split is ``compiled_modules()`` below.

* ``pip wheel .`` / ``pip install .``         -> compiled core (mypyc, -O3)
* ``AISIM_PURE=1 pip install .``               -> pure-Python wheel
* ``pip install -e .``                         -> always pure (an editable compiled build would
  leave ``.so`` files beside the sources that a later pure build silently picks up)
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from setuptools import setup

# The core: pure, fully annotated, no pydantic/pandas/matplotlib/I-O.  Every module of these
# packages (and the extra modules) is compiled by mypyc in a normal build and must pass the same
# tests interpreted and compiled.  Modules that must stay interpreted (numpy-vectorized or I/O
# helpers inside a core package) are named in NOT_COMPILED.
COMPILED_PACKAGES: list[str] = ["aisim/speculation", "aisim/fpm", "aisim/replay"]
COMPILED_EXTRA: list[str] = [
    "aisim/_text.py",
    "aisim/catalogue/_specs.py",
    "aisim/catalogue/_costs.py",
    "aisim/catalogue/_deployment.py",
]
NOT_COMPILED: list[str] = [
    # fpm: the API edge (user values -> typed values, with the aisim._fields readers).
    "aisim/fpm/_inputs.py",
    "aisim/fpm/_coerce.py",
    "aisim/fpm/_table_files.py",
    "aisim/fpm/_engine_step_files.py",
    "aisim/fpm/_recorded_rounds.py",
    "aisim/fpm/_vector.py",
    # speculation: engine metrics files (prometheus_client, scipy, file I/O).
    "aisim/speculation/_engine_measure.py",
    "aisim/speculation/_engine_metrics.py",
    "aisim/speculation/_engine_series.py",
    "aisim/speculation/_engine_sglang.py",
    "aisim/speculation/_engine_vllm.py",
    # speculation: acceptance traces (file reading).
    "aisim/speculation/_traces.py",
    # replay: run() reads files and builds pandas frames; the summary uses numpy percentiles;
    # the parquet streams write files.
    "aisim/replay/_run.py",
    "aisim/replay/_summary.py",
    "aisim/replay/_parquet.py",
]


def compiled_modules() -> list[str]:
    """The one list of compiled modules, in a stable order."""
    found = list(COMPILED_EXTRA)
    for package in COMPILED_PACKAGES:
        found.extend(sorted(str(p.as_posix()) for p in Path(package).rglob("*.py")))
    return [path for path in found if path not in NOT_COMPILED and os.path.exists(path)]


def _want_compiled() -> bool:
    if os.environ.get("AISIM_PURE", "0") not in ("", "0"):
        return False
    if any(arg in ("editable_wheel", "develop") for arg in sys.argv):
        return False
    # Only commands that build extensions need mypyc (not egg_info / requirement queries).
    return any(arg in ("bdist_wheel", "build_ext", "build", "install") for arg in sys.argv)


ext_modules = []
if _want_compiled():
    from mypyc.build import mypycify

    ext_modules = mypycify(
        compiled_modules(),
        opt_level=os.environ.get("AISIM_MYPYC_OPT_LEVEL", "3"),
        strict_dunder_typing=False,
    )

setup(ext_modules=ext_modules)
