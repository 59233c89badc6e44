"""The recorded-dataset schemas: table names, versions, columns, their types and units.

A dataset is a directory holding two parquet tables, each with a JSON sidecar beside it:

* ``stp_points.parquet`` (schema ``aisim.stp_points``): single-token-prediction forward passes,
  one row per measured coordinate (B, K_total), every repetition kept.
* ``sd_rounds.parquet`` (schema ``aisim.sd_rounds``): speculative-decoding rounds, one row per
  recorded round (the unit of round-weighted MAPE), grouped into configurations (d, B, K_total).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final


@dataclass(frozen=True)
class Column:
    """One column: ``kind`` is int, float, bool, str or list[float]; ``unit`` may be empty.
    ``optional``: a value may be missing (null: not recorded, e.g. a driver without per-step
    CPU time); every value present is checked as any other."""

    name: str
    kind: str
    unit: str
    meaning: str
    optional: bool = False


@dataclass(frozen=True)
class TableSchema:
    """A named, versioned table layout; readers refuse any other name or version."""

    name: str
    version: int
    file_name: str
    columns: tuple[Column, ...]

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(column.name for column in self.columns)

    def describe_columns(self) -> dict[str, dict[str, str]]:
        """Column name -> {kind, unit, meaning}: written into every sidecar as ``keys``."""
        return {
            column.name: {"kind": column.kind, "unit": column.unit, "meaning": column.meaning}
            for column in self.columns
        }


_KV_COLUMNS: Final = (
    Column("total_kv_tokens", "int", "tokens", "past KV tokens read, summed over requests"),
    Column("kv_tokens_min", "int", "tokens", "smallest per-request past KV length"),
    Column("kv_tokens_max", "int", "tokens", "largest per-request past KV length"),
)

STP_POINTS: Final = TableSchema(
    name="aisim.stp_points",
    version=1,
    file_name="stp_points.parquet",
    columns=(
        Column("point_id", "str", "", "b{B}-k{K_total}"),
        Column("batch_size", "int", "requests", "decode requests, one query token each"),
        *_KV_COLUMNS,
        Column("is_baseline", "bool", "", "measured at a configuration's logical B"),
        Column(
            "reference_for",
            "str",
            "",
            "';'-joined configuration ids whose rule reference F_STP((d+1)B, K) this is",
        ),
        Column("repetitions", "int", "", "timed repetitions after one untimed warm-up"),
        Column("latency_ms_median", "float", "ms", "median of latency_ms_reps"),
        Column("latency_ms_min", "float", "ms", "minimum of latency_ms_reps"),
        Column("latency_ms_max", "float", "ms", "maximum of latency_ms_reps"),
        Column("latency_cv", "float", "ratio", "population std / mean of latency_ms_reps"),
        Column("latency_ms_reps", "list[float]", "ms", "every repetition, primary metric"),
        Column("wall_ms_median", "float", "ms", "median host wall-clock time"),
        Column("wall_ms_reps", "list[float]", "ms", "every repetition, host wall clock"),
    ),
)

SD_ROUNDS: Final = TableSchema(
    name="aisim.sd_rounds",
    version=1,
    file_name="sd_rounds.parquet",
    columns=(
        Column("config_id", "str", "", "d{d}-b{B}-k{K_total}"),
        Column("round_index", "int", "", "0-based index of the round within its configuration"),
        Column("draft_length", "int", "tokens", "d: draft tokens proposed per request"),
        Column("batch_size", "int", "requests", "B: logical decode requests"),
        *_KV_COLUMNS,
        Column("tokens_verified", "int", "tokens", "(d + 1) * B query tokens in verification"),
        Column("duration_ms", "float", "ms", "whole round: d draft steps + one verification"),
        Column("draft_ms", "float", "ms", "the draft steps of the round"),
        Column("verify_ms", "float", "ms", "the target verification of the round"),
        Column("wall_duration_ms", "float", "ms", "whole round, host wall clock"),
        Column(
            "accepted_tokens_mean",
            "float",
            "tokens",
            "greedy accepted drafts per request, bonus token excluded",
        ),
        Column("tokens_emitted", "int", "tokens", "sum over requests of 1 + accepted drafts"),
        Column("outlier", "bool", "", "flagged against its configuration's median; never dropped"),
    ),
)

SCHEMAS: Final = {schema.name: schema for schema in (STP_POINTS, SD_ROUNDS)}
SIDECAR_SUFFIX: Final = ".json"
