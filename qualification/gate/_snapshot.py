"""Gate snapshots: every scenario's predictions, with the provenance needed to trust a compare.

Snapshot file (canonical JSON)::

    {"format": 1, "aisim_version": "0.1.0", "build": "compiled",
     "scenarios_sha256": "...", "predictions": {scenario_id: {metric: value}}}
"""

from __future__ import annotations

import hashlib
import math
from pathlib import Path
from typing import Any

from aisim.errors import ConfigError
from aisim.fields import as_mapping, join_path
from aisim.files import (
    MAX_DOCUMENT_BYTES,
    atomic_write_text,
    canonical_json,
    check_path_text,
    input_file_problem,
    parse_json_text,
    read_input_bytes,
)
from qualification.gate._scenarios import evaluate, load_scenarios

SNAPSHOT_FORMAT = 1


def take_snapshot(scenarios_path: str | Path) -> dict[str, Any]:
    """Evaluate every scenario in the file and return the snapshot document."""
    import aisim

    path = Path(scenarios_path)
    scenarios = load_scenarios(path)
    return {
        "format": SNAPSHOT_FORMAT,
        "aisim_version": aisim.__version__,
        "build": "compiled" if aisim.__compiled__ else "pure",
        "scenarios_sha256": hashlib.sha256(path.read_bytes()).hexdigest(),
        "predictions": {scenario.id: evaluate(scenario) for scenario in scenarios},
    }


def write_snapshot(path: str | Path, snapshot: dict[str, Any], *, overwrite: bool = False) -> Path:
    """Write atomically; an existing file is kept unless ``overwrite``."""
    return atomic_write_text(path, canonical_json(snapshot), overwrite=overwrite)


def load_snapshot(path: str | Path) -> dict[str, Any]:
    """Read a snapshot file; anything that is not one is a ConfigError naming the file."""
    file = check_path_text(path, "snapshot")
    where = str(file)
    problem = input_file_problem(file, MAX_DOCUMENT_BYTES)
    if problem == "file not found":
        raise ConfigError(f"{where!r}: snapshot file not found")
    try:
        text = read_input_bytes(file, MAX_DOCUMENT_BYTES, repr(where)).decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{where!r}: not a readable JSON snapshot: {exc}") from None
    document = parse_json_text(text, f"{where!r}: not a readable JSON snapshot")
    root = as_mapping(document, where)
    if root.get("format") != SNAPSHOT_FORMAT:
        raise ConfigError(
            f"{join_path(where, 'format')}: expected snapshot format {SNAPSHOT_FORMAT}, "
            f"got {root.get('format')!r}"
        )
    predictions = as_mapping(root.get("predictions"), join_path(where, "predictions"))
    for scenario_id, values in predictions.items():
        field = f"{where}.predictions[{scenario_id!r}]"
        for metric, value in as_mapping(values, field).items():
            _check_prediction(value, f"{field}.{metric}")
    return root


def _check_prediction(value: Any, field: str) -> None:
    """A prediction as ``take_snapshot`` writes it: a finite number, or text (a non-finite
    figure spelled 'nan'/'inf'/'-inf', or a scenario's ``error``). Anything else (NaN or
    Infinity as JSON numbers, true, null, a list or mapping, a number past a float's range)
    was compared as a moved prediction, exit 1, instead of being named as a malformed file."""
    if isinstance(value, str):
        return
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        try:
            if math.isfinite(float(value)):
                return
        except OverflowError:
            pass
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:37] + "..."
    raise ConfigError(
        f"{field}: expected a finite number or a text ('nan', 'inf', an error), got {shown} "
        f"({type(value).__name__}); not a snapshot aisim wrote"
    )
