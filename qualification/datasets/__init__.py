"""Recorded STP-point and SD-round datasets: parquet tables with verified JSON sidecars."""

from qualification.datasets._dataset import (
    EVIDENCE_TYPES,
    RecordedDataset,
    load_dataset,
    write_dataset,
)
from qualification.datasets._schema import SD_ROUNDS, STP_POINTS, Column, TableSchema
from qualification.datasets._tables import (
    check_values,
    column_bound,
    non_finite_field,
    read_table,
    sidecar_path,
    write_table,
)

__all__ = [
    "EVIDENCE_TYPES",
    "SD_ROUNDS",
    "STP_POINTS",
    "Column",
    "RecordedDataset",
    "TableSchema",
    "load_dataset",
    "non_finite_field",
    "read_table",
    "sidecar_path",
    "write_dataset",
    "write_table",
    "check_values",
    "column_bound",
]
