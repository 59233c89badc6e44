"""Calibrated coefficients as a named, versioned JSON artefact, and the predictor that uses it.

An artefact records what it was fitted on (dataset name, SHA-256 of its SD-round table, identity
summary) and how it validated. Using it on a dataset it was fitted on is refused: a score on
fitted rows is not evidence.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from aisim.errors import ConfigError, DataIntegrityError
from aisim.fields import as_float, as_int, as_mapping, as_str
from aisim.files import (
    MAX_DOCUMENT_BYTES,
    check_path_text,
    input_file_problem,
    parse_json_text,
    read_input_bytes,
)
from qualification.calibrate._fit import Coefficients
from qualification.datasets import RecordedDataset
from qualification.mape import RulePredictor, ScaledPredictor

ARTEFACT_SCHEMA = {"name": "aisim.calibration", "version": 1}
FORM = "(a * d + b) * F_STP((d + 1) * B, K_total)"
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


def check_artefact_name(name: object, field: str) -> str:
    """``name`` as an artefact name (a file-safe identifier); ``ConfigError`` at ``field``."""
    if not isinstance(name, str) or not _NAME.match(name):
        shown = name if not isinstance(name, str) or len(name) <= 60 else name[:57] + "..."
        raise ConfigError(
            f"{field}: expected 1-100 letters, digits, '.', '_' or '-', starting with a letter "
            f"or digit, got {shown!r}"
        )
    return name


def check_artefact_version(version: object, field: str) -> int:
    """``version`` as an artefact version, 1..1000000; ``ConfigError`` at ``field``."""
    return as_int(version, field, 1, 1_000_000)


def build_artefact(
    name: str,
    version: int,
    coefficients: Coefficients,
    dataset: RecordedDataset,
    validation: dict[str, Any],
) -> dict[str, Any]:
    """The artefact (a JSON-ready mapping); ``name`` must be a simple file-safe identifier."""
    check_artefact_name(name, "calibrate.name")
    version = check_artefact_version(version, "calibrate.version")
    identity = dataset.identity
    return {
        "schema": ARTEFACT_SCHEMA,
        "name": name,
        "version": version,
        "form": FORM,
        "coefficients": {"a": coefficients.a, "b": coefficients.b},
        "fitted_on": [
            {
                "dataset": dataset.name,
                "sha256": dataset.sha256,
                "target_geometry_sha256": identity.get("target", {}).get("geometry_sha256"),
                "draft_kind": identity.get("draft", {}).get("kind"),
                "device": identity.get("device", {}).get("name"),
                "timing_metric": identity.get("timing", {}).get("metric"),
            }
        ],
        "validation": {
            "method": validation["method"],
            "held_out": validation["held_out"],
            "published_rule_same_rows": validation["published_rule_same_rows"],
        },
        "scope": (
            "valid for the drafter family and timing metric it was fitted on (the slope tracks "
            "the drafter's cost); on another device it is a cross-device transfer, labelled so"
        ),
    }


def artefact_file_name(artefact: dict[str, Any]) -> str:
    return f"{artefact['name']}.v{artefact['version']}.json"


def load_artefact(path: str | Path) -> dict[str, Any]:
    """Read and check an artefact; a malformed one is a DataIntegrityError naming the field."""
    file = check_path_text(path, "calibration")
    if input_file_problem(file, MAX_DOCUMENT_BYTES) == "file not found":
        raise ConfigError(f"{str(file)!r}: calibration file not found")
    try:
        data = read_input_bytes(file, MAX_DOCUMENT_BYTES, repr(str(file)))
        loaded = parse_json_text(data.decode("utf-8"), "calibration")
    except (UnicodeDecodeError, ConfigError) as exc:
        raise DataIntegrityError(f"{str(file)!r}: unreadable calibration: {exc}") from None
    where = str(file)
    try:
        artefact = as_mapping(loaded, where)
        if artefact.get("schema") != ARTEFACT_SCHEMA:
            raise DataIntegrityError(
                f"{where}: schema: expected {ARTEFACT_SCHEMA}, got {artefact.get('schema')!r}"
            )
        as_str(artefact.get("name"), f"{where}: name")
        as_int(artefact.get("version"), f"{where}: version", 1)
        coefficients = as_mapping(artefact.get("coefficients"), f"{where}: coefficients")
        # The factor (a d + b) prices a round: a draft token never makes it cheaper (a >= 0)
        # and a round costs at least some of its widened STP pass (b > 0).
        as_float(coefficients.get("a"), f"{where}: coefficients.a", 0.0)
        if as_float(coefficients.get("b"), f"{where}: coefficients.b") <= 0:
            raise DataIntegrityError(
                f"{where}: coefficients.b: expected a number > 0, got {coefficients.get('b')!r}"
            )
        fitted = artefact.get("fitted_on")
        if not isinstance(fitted, list) or not all(
            isinstance(item, dict) and isinstance(item.get("sha256"), str) for item in fitted
        ):
            raise DataIntegrityError(f"{where}: fitted_on: expected a list of {{dataset, sha256}}")
    except ConfigError as exc:
        raise DataIntegrityError(str(exc)) from None
    return artefact


def calibrated_factory(artefact: dict[str, Any]) -> Any:
    """A ``make_predictor`` calibration factory for ``artefact``."""

    def factory(dataset: RecordedDataset, base: RulePredictor) -> ScaledPredictor:
        fitted = {item["sha256"] for item in artefact["fitted_on"]}
        if dataset.sha256 in fitted:
            raise ConfigError(
                f"--coefficients: {artefact['name']} v{artefact['version']} was fitted on "
                f"dataset {dataset.name!r} (SHA-256 {dataset.sha256[:12]}...); scoring it there "
                "is not evidence. Use `aisim qualify calibrate` for held-out figures."
            )
        _check_scope(artefact, dataset)
        a, b = float(artefact["coefficients"]["a"]), float(artefact["coefficients"]["b"])
        return ScaledPredictor(
            base,
            a,
            b,
            f"calibrated:{artefact['name']}.v{artefact['version']}",
            f"calibrated rule ({a:.4f} d + {b:.4f}) F_STP((d+1)B, K)"
            + _transfer_note(artefact, dataset),
        )

    return factory


#: What an artefact's scope is (``fitted_on`` entry key, dataset identity path, the words).
#: The device is not part of it: the release plan scores coefficients fitted on one CPU on a
#: second CPU's recording on purpose (a transfer test); the predictor's label says so instead.
SCOPE = (
    ("draft_kind", ("draft", "kind"), "drafter"),
    ("timing_metric", ("timing", "metric"), "timing metric"),
)


def _transfer_note(artefact: dict[str, Any], dataset: RecordedDataset) -> str:
    """`` (cross-device transfer: fitted on X)`` when the dataset's device is not one the
    artefact was fitted on; empty otherwise."""
    device = dataset.identity.get("device")
    name = device.get("name") if isinstance(device, dict) else None
    fitted = sorted(
        {str(item["device"]) for item in artefact["fitted_on"] if item.get("device") is not None}
    )
    if name is None or not fitted or str(name) in fitted:
        return ""
    return f" (cross-device transfer: fitted on {', '.join(fitted)})"


def _check_scope(artefact: dict[str, Any], dataset: RecordedDataset) -> None:
    """Refuse a dataset outside the artefact's scope ("valid for the drafter family and timing
    metric it was fitted on"): its coefficients would price another drafter's rounds with this
    one's slope, silently."""
    identity = dataset.identity
    for key, (section, field), words in SCOPE:
        part = identity.get(section)
        value = part.get(field) if isinstance(part, dict) else None
        fitted = sorted(
            {str(item.get(key)) for item in artefact["fitted_on"] if item.get(key) is not None}
        )
        if value is not None and fitted and str(value) not in fitted:
            raise ConfigError(
                f"--coefficients: {artefact['name']} v{artefact['version']} was fitted "
                f"on {words} {', '.join(repr(item) for item in fitted)}; dataset "
                f"{dataset.name!r} has {words} {str(value)!r}, outside its scope"
            )
