"""Write a MAPE report to a directory: ``mape.json``, ``mape.md`` and the PNG plots."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from aisim.files import atomic_write_bytes, atomic_write_text, canonical_json, check_writable
from qualification.mape._render import plots, to_markdown


def write_mape_outputs(
    report: dict[str, Any], scored: pd.DataFrame, out_dir: Path, *, overwrite: bool = False
) -> list[Path]:
    """Write every output (refusing to clobber unless ``overwrite``); return the paths written."""
    title = f"{report['estimator']['name']} on {report['dataset']['name']}"
    images = plots(scored, title)
    targets = [out_dir / "mape.json", out_dir / "mape.md", *(out_dir / name for name in images)]
    for target in targets:
        check_writable(target, overwrite)
    atomic_write_text(targets[0], canonical_json(report), overwrite=overwrite)
    atomic_write_text(targets[1], to_markdown(report), overwrite=overwrite)
    for name, data in images.items():
        atomic_write_bytes(out_dir / name, data, overwrite=overwrite)
    return targets
