"""A recorded dataset: the STP-point and SD-round tables of one recording, verified together."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from aisim.errors import DataIntegrityError
from qualification.datasets._schema import SD_ROUNDS, STP_POINTS
from qualification.datasets._tables import read_table, write_table
from qualification.datasets.sidecar_fields import DATASET_IDENTITY, check_fields

EVIDENCE_TYPES = ("synthetic", "parity", "local-measurement", "hardware")


@dataclass(frozen=True)
class RecordedDataset:
    """Both tables of a dataset directory, each already verified against its sidecar.

    ``identity`` is the recording's identity (target and draft geometry and hashes, device,
    dtype, threads, library versions, git revision, timing metric); both sidecars carry the same.
    """

    directory: Path
    stp_points: pd.DataFrame
    sd_rounds: pd.DataFrame
    stp_sidecar: dict[str, Any]
    rounds_sidecar: dict[str, Any]

    @property
    def name(self) -> str:
        return self.directory.name

    @property
    def identity(self) -> dict[str, Any]:
        identity = self.rounds_sidecar.get("identity")
        return identity if isinstance(identity, dict) else {}

    @property
    def evidence_type(self) -> str:
        return str(self.rounds_sidecar.get("evidence_type", "local-measurement"))

    @property
    def sha256(self) -> str:
        """The SD-round table's hash: what a calibration records as 'fitted on'."""
        return str(self.rounds_sidecar["sha256"])


def load_dataset(path: str | Path) -> RecordedDataset:
    """Load a dataset directory (or either of its parquet files) and verify it completely.

    Raises ``DataIntegrityError`` when a file is missing, tampered with, truncated, of an
    unknown schema, has a sidecar field of the wrong type (``sidecar_fields``), or when the two tables do not belong to the same recording.
    """
    given = Path(path)
    directory = given.parent if given.suffix == ".parquet" else given
    if not directory.is_dir():
        raise DataIntegrityError(
            f"{str(given)!r}: not a dataset directory (expected {STP_POINTS.file_name} and "
            f"{SD_ROUNDS.file_name} with their sidecars)"
        )
    stp, stp_side = read_table(directory / STP_POINTS.file_name, STP_POINTS)
    rounds, rounds_side = read_table(directory / SD_ROUNDS.file_name, SD_ROUNDS)
    for table, side in ((STP_POINTS, stp_side), (SD_ROUNDS, rounds_side)):
        if "identity" in side:
            where = repr(str(directory / (table.file_name + ".json")))
            check_fields(where, side["identity"], DATASET_IDENTITY, "identity")
    companion = rounds_side.get("companion")
    if not isinstance(companion, dict) or companion.get("sha256") != stp_side["sha256"]:
        raise DataIntegrityError(
            f"{str(directory)!r}: {SD_ROUNDS.file_name} was recorded with a different "
            f"{STP_POINTS.file_name} (companion hash mismatch); the pair must come from one run"
        )
    if stp_side.get("identity") != rounds_side.get("identity"):
        raise DataIntegrityError(
            f"{str(directory)!r}: the two tables carry different identities; not one recording"
        )
    _check_keys(directory, stp, rounds)
    evidence = rounds_side.get("evidence_type", "local-measurement")
    if evidence not in EVIDENCE_TYPES:
        raise DataIntegrityError(
            f"{str(directory)!r}: evidence_type {evidence!r}; allowed: {', '.join(EVIDENCE_TYPES)}"
        )
    return RecordedDataset(directory, stp, rounds, stp_side, rounds_side)


def write_dataset(
    directory: Path,
    *,
    stp_columns: Mapping[str, Sequence[Any]],
    round_columns: Mapping[str, Sequence[Any]],
    common: Mapping[str, Any],
    stp_extra: Mapping[str, Any],
    rounds_extra: Mapping[str, Any],
    overwrite: bool = False,
) -> RecordedDataset:
    """Write both tables with their sidecars, then load them back (so what is returned is
    exactly what a later reader sees). ``common`` goes into both sidecars (identity, command,
    evidence type); the ``*_extra`` sections into one each (coverage, statistics, anomalies)."""
    stp_side = write_table(
        directory, STP_POINTS, stp_columns, {**common, **stp_extra}, overwrite=overwrite
    )
    companion = {"file": STP_POINTS.file_name, "sha256": stp_side["sha256"]}
    write_table(
        directory,
        SD_ROUNDS,
        round_columns,
        {**common, **rounds_extra, "companion": companion},
        overwrite=overwrite,
    )
    return load_dataset(directory)


def _check_keys(directory: Path, stp: pd.DataFrame, rounds: pd.DataFrame) -> None:
    """Keys that must be unique: one STP row per (B, K), one row per (configuration, round),
    and one (d, B, K) per configuration id."""
    where = repr(str(directory))
    duplicated = stp[stp.duplicated(["batch_size", "total_kv_tokens"], keep=False)]
    if len(duplicated):
        raise DataIntegrityError(
            f"{where}: {STP_POINTS.file_name} has more than one row for point "
            f"{duplicated['point_id'].iloc[0]!r}"
        )
    repeated = rounds[rounds.duplicated(["config_id", "round_index"], keep=False)]
    if len(repeated):
        raise DataIntegrityError(
            f"{where}: {SD_ROUNDS.file_name} repeats round {int(repeated['round_index'].iloc[0])} "
            f"of configuration {repeated['config_id'].iloc[0]!r}"
        )
    shapes = rounds.groupby("config_id")[
        ["draft_length", "batch_size", "total_kv_tokens"]
    ].nunique()
    mixed = shapes[(shapes > 1).any(axis=1)]
    if len(mixed):
        raise DataIntegrityError(
            f"{where}: configuration {mixed.index[0]!r} mixes different (d, B, K_total) values"
        )
