"""Hand-built recorded datasets for the qualification tests (no recorder, no PyTorch)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from qualification.datasets import RecordedDataset, write_dataset

RoundSpec = tuple[int, int, int, Sequence[float]]  # (d, B, K, durations in ms)


def build_dataset(
    directory: Path,
    stp: dict[tuple[int, int], float],
    rounds: Sequence[RoundSpec],
    *,
    evidence_type: str = "synthetic",
    draft_kind: str = "mtp",
) -> RecordedDataset:
    """A dataset whose STP medians are ``stp[(B, K)]`` (every repetition equal) and whose
    rounds have the given durations (draft = verify = half of each)."""
    stp_columns: dict[str, list[Any]] = {}
    for (b, k), latency in sorted(stp.items()):
        row = {
            "point_id": f"b{b}-k{k}",
            "batch_size": b,
            "total_kv_tokens": k,
            "kv_tokens_min": k // b,
            "kv_tokens_max": -(-k // b),
            "is_baseline": True,
            "reference_for": "",
            "repetitions": 2,
            "latency_ms_median": latency,
            "latency_ms_min": latency,
            "latency_ms_max": latency,
            "latency_cv": 0.0,
            "latency_ms_reps": [latency, latency],
            "wall_ms_median": latency,
            "wall_ms_reps": [latency, latency],
        }
        for name, value in row.items():
            stp_columns.setdefault(name, []).append(value)
    round_columns: dict[str, list[Any]] = {}
    for d, b, k, durations in rounds:
        for index, duration in enumerate(durations):
            row = {
                "config_id": f"d{d}-b{b}-k{k}",
                "round_index": index,
                "draft_length": d,
                "batch_size": b,
                "total_kv_tokens": k,
                "kv_tokens_min": k // b,
                "kv_tokens_max": -(-k // b),
                "tokens_verified": (d + 1) * b,
                "duration_ms": duration,
                "draft_ms": duration / 2,
                "verify_ms": duration / 2,
                "wall_duration_ms": duration,
                "accepted_tokens_mean": 0.0,
                "tokens_emitted": b,
                "outlier": False,
            }
            for name, value in row.items():
                round_columns.setdefault(name, []).append(value)
    common = {
        "identity": {
            "recorder": "tests",
            "preset": "hand-built",
            "target": {"geometry_sha256": "0" * 64},
            "draft": {"kind": draft_kind},
            "device": {"type": "cpu", "name": "test host"},
            "timing": {"metric": "cpu", "clock": "hand-written"},
            "threads": 1,
            "dtype": "float32",
        },
        "evidence_type": evidence_type,
        "command": "hand-built in tests/qualification/conftest.py",
    }
    return write_dataset(
        directory,
        stp_columns=stp_columns,
        round_columns=round_columns,
        common=common,
        stp_extra={"coverage": {}},
        rounds_extra={"coverage": {}},
    )


@pytest.fixture
def make_dataset(tmp_path: Path) -> Callable[..., RecordedDataset]:
    """``make_dataset(name, stp, rounds, **options)`` writes under ``tmp_path / name``."""

    def make(
        name: str, stp: dict[tuple[int, int], float], rounds: Sequence[RoundSpec], **options: Any
    ) -> RecordedDataset:
        return build_dataset(tmp_path / name, stp, rounds, **options)

    return make
