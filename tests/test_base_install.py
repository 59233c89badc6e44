"""The base install (no extras) runs the library, estimate and replay, and ``aisim qualify``
names the extra it needs. Simulated here by refusing the extras' imports in a child process;
``tox -e base`` checks a real install of the wheel without extras."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq

ROOT = Path(__file__).resolve().parents[1]
EXTRAS = ("pandas", "matplotlib", "scipy", "torch", "ray")

# A child interpreter in which the extras' modules cannot be imported, then the aisim CLI.
CHILD = f"""
import importlib.abc, sys

class _NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {EXTRAS!r}:
            raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)
        return None

sys.meta_path.insert(0, _NotInstalled())
if sys.argv[1] == "--imports":
    import aisim, aisim.config, aisim.replay, aisim.fpm, aisim.cli
    print(sorted(name for name in sys.modules if name.split(".")[0] in {EXTRAS!r}))
    sys.exit(0)
from aisim.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _aisim(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", CHILD, *args], capture_output=True, text=True, cwd=ROOT, check=False
    )


def test_the_library_imports_without_extras() -> None:
    done = _aisim("--imports")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_estimate_runs() -> None:
    done = _aisim(
        "estimate", "--model", "Qwen3-8B", "--hardware", "h100", "--batch", "4", "--kv", "1024"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("latency: ")


def test_replay_runs_and_writes_its_outputs(tmp_path: Path) -> None:
    example = ROOT / "docs" / "examples" / "replay" / "aggregated_mtp.yaml"
    done = _aisim("replay", str(example), "--out", str(tmp_path), "--no-progress")
    assert done.returncode == 0, done.stderr
    table = pq.read_table(tmp_path / "requests.parquet")
    assert table.num_rows > 0 and (tmp_path / "summary.json").is_file()


def test_qualify_names_the_extra() -> None:
    done = _aisim("qualify", "mape", "no-such-dataset")
    assert done.returncode == 2
    assert done.stderr == (
        "aisim: error: aisim qualify needs pandas, from the extra aisim[qualify]: "
        "pip install 'aisim[qualify]'\n"
    )
