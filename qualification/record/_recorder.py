"""Record a dataset: every (d, B, K) of a grid, its rule reference STP points, and its rounds.

For each configuration (in K, B, d order) the recorder measures, if not already measured, the STP
point at the logical batch (B, K) and the rule's reference point ((d + 1) B, K) -- the same
total past KV -- and then the SD rounds, so a round and its reference are timed close together.
"""

from __future__ import annotations

import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aisim.errors import ConfigError
from aisim.fields import as_int
from qualification._provenance import git_state
from qualification.record._geometry import Grid, get_drafter, get_preset
from qualification.record._host import check_source_tree, cpu_description
from qualification.record._summaries import (
    MALLOC_ENV,
    ROUND_KEYS,
    anomalies,
    config_id,
    outlier_flags,
    point_id,
    round_statistics,
    stp_table,
)

if TYPE_CHECKING:  # pandas/pyarrow load only when a recording is written, not for `aisim --help`
    from qualification.datasets import RecordedDataset

DTYPES = ("float32", "bfloat16", "float16")


def require_torch() -> Any:
    """Import PyTorch or explain how to get it (a ConfigError, never an ImportError)."""
    try:
        import torch
    except ImportError:
        raise ConfigError(
            "record: PyTorch is not installed; install the recorder extra: "
            "pip install 'aisim[record]' (torch==2.13.0)"
        ) from None
    return torch


def _device_name(torch: Any, device: str) -> str:
    if device.startswith("cuda"):
        return str(torch.cuda.get_device_name(0))
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown cpu"


def resolve_device(torch: Any, device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device not in ("cpu", "cuda"):
        raise ConfigError(f"record.device: expected auto, cpu or cuda, got {device!r}")
    if device == "cuda" and not torch.cuda.is_available():
        raise ConfigError("record.device: cuda asked for but torch.cuda.is_available() is False")
    return device


def check_grid(grid: Grid) -> Grid:
    """Every draft length and batch size >= 1, K_total >= 0, 1..1000 repetitions."""
    for field, values, minimum in (
        ("d", grid.draft_lengths, 1),
        ("batch", grid.batch_sizes, 1),
        ("kv", grid.kv_totals, 0),
    ):
        if not values:
            raise ConfigError(f"record.grid.{field}: expected at least one value")
        for value in values:
            as_int(value, f"record.grid.{field}", minimum, 1_000_000)
    as_int(grid.repetitions, "record.grid.repetitions", 1, 1000)
    return grid


def record_dataset(
    preset_name: str,
    drafter_kind: str,
    out_dir: Path,
    *,
    grid: Grid | None = None,
    device: str = "auto",
    threads: int = 1,
    seed: int = 0,
    dtype: str = "float32",
    command: str = "",
    evidence_type: str = "local-measurement",
    overwrite: bool = False,
    progress: Callable[[str, int, int], None] | None = None,
    allow_dirty: bool = False,
    git: dict[str, Any] | None = None,
) -> RecordedDataset:
    """Record ``preset_name`` with ``drafter_kind`` over ``grid`` into ``out_dir``.

    ``progress(label, done, total)`` is called after each measurement. Raises ConfigError for
    an unknown preset, drafter or device, an existing ``out_dir`` without ``overwrite``, or a
    source tree with uncommitted changes without ``allow_dirty``. ``git`` is the source tree's
    state (``{"revision", "dirty"}``; default: read from this checkout).
    """
    torch = require_torch()
    from qualification.datasets import write_dataset
    from qualification.record._session import Session, split_kv

    preset = get_preset(preset_name)
    drafter = get_drafter(preset, drafter_kind)
    grid = check_grid(grid or preset.grid)
    as_int(threads, "record.threads", 1, 256)
    if dtype not in DTYPES:
        raise ConfigError(f"record.dtype: expected one of {', '.join(DTYPES)}, got {dtype!r}")
    if out_dir.exists() and any(out_dir.iterdir()) and not overwrite:
        raise ConfigError(f"{str(out_dir)!r} already exists; pass --overwrite to replace it")
    device = resolve_device(torch, device)
    source_tree = check_source_tree(git_state() if git is None else git, allow_dirty)
    torch.set_num_threads(threads)
    torch.set_flush_denormal(True)
    load_start = os.getloadavg()
    started_utc = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    started_wall, started_cpu = time.monotonic(), time.process_time()
    session = Session(preset.target, drafter, grid, device, seed, dtype)

    configs = grid.configurations()
    total = len(configs) + len(
        {(b, k) for _, b, k in configs} | {((d + 1) * b, k) for d, b, k in configs}
    )
    done = 0
    points: dict[tuple[int, int], dict[str, Any]] = {}
    rounds: dict[str, list[Any]] = {name: [] for name in ROUND_KEYS}

    def tick(label: str) -> None:
        nonlocal done
        done += 1
        if progress is not None:
            progress(label, done, total)

    for d, b, k in configs:
        for width, baseline in ((b, True), ((d + 1) * b, False)):
            point = points.get((width, k))
            if point is None:
                sample = session.measure_stp(width, k, grid.repetitions)
                point = {"sample": sample, "baseline": False, "reference_for": []}
                points[(width, k)] = point
                tick(f"STP {point_id(width, k)}")
            if baseline:
                point["baseline"] = True
            else:
                point["reference_for"].append(config_id(d, b, k))
        measured = session.measure_round(d, b, k, grid.repetitions)
        past = split_kv(k, b)
        flags = outlier_flags(measured.duration_ms)
        for index in range(grid.repetitions):
            row = {
                "config_id": config_id(d, b, k),
                "round_index": index,
                "draft_length": d,
                "batch_size": b,
                "total_kv_tokens": k,
                "kv_tokens_min": min(past),
                "kv_tokens_max": max(past),
                "tokens_verified": (d + 1) * b,
                "duration_ms": measured.duration_ms[index],
                "draft_ms": measured.draft_ms[index],
                "verify_ms": measured.verify_ms[index],
                "wall_duration_ms": measured.wall_ms[index],
                "accepted_tokens_mean": measured.accepted_mean[index],
                "tokens_emitted": measured.tokens_emitted[index],
                "outlier": flags[index],
            }
            for name in ROUND_KEYS:
                rounds[name].append(row[name])
        tick(f"round {config_id(d, b, k)}")

    stp_columns, stp_stats = stp_table(points, split_kv)
    round_stats = round_statistics(rounds)
    notes = anomalies(stp_stats, round_stats, rounds, load_start)
    if source_tree.get("dirty"):
        dirty_note = (
            f"recorded from a source tree with uncommitted changes (--allow-dirty) at "
            f"{source_tree.get('revision', 'unknown')}"
        )
        notes = {table: [dirty_note, *items] for table, items in notes.items()}
    common = {
        "identity": {
            "recorder": "qualification.record",
            "aisim_version": _aisim_version(),
            "preset": preset.name,
            "target": {
                "geometry": preset.target.as_dict(),
                "geometry_sha256": preset.target.identity_hash(),
            },
            "draft": {
                "kind": drafter.kind,
                "structure": "chain",
                "geometry": drafter.as_dict(),
                "geometry_sha256": drafter.identity_hash(),
            },
            "draft_lengths": list(grid.draft_lengths),
            "device": {"type": device, "name": _device_name(torch, device), "count": 1},
            "dtype": dtype,
            "kv_dtype": dtype,
            "threads": threads,
            "seed": seed,
            "attention_backend": "torch scaled_dot_product_attention (boolean mask)",
            "graphs": False,
            "compile": False,
            "timing": {
                "metric": session.clock.metric,
                "clock": session.clock.clock_name,
                "warmup_passes": 1,
                "repetitions": grid.repetitions,
            },
            "acceptance_convention": (
                "random weights: acceptance is not meaningful and timing does not depend on it; "
                "accepted_tokens_mean = greedy accepted drafts per request, bonus token "
                "excluded; tokens_emitted = sum over requests of (1 + accepted)"
            ),
            "libraries": {
                "python": platform.python_version(),
                "torch": str(torch.__version__),
                "numpy": _version_of("numpy"),
                "pyarrow": _version_of("pyarrow"),
            },
            "git": source_tree,
        },
        "host": {
            "shared": True,
            "cpus": os.cpu_count(),
            "cpu": cpu_description(),
            "load_average_start": list(load_start),
            "load_average_end": list(os.getloadavg()),
            "malloc_env": {key: os.environ.get(key) for key in MALLOC_ENV},
        },
        "recording": {
            "started_utc": started_utc,
            "elapsed_wall_s": round(time.monotonic() - started_wall, 1),
            "elapsed_cpu_s": round(time.process_time() - started_cpu, 1),
        },
        "evidence_type": evidence_type,
        "command": command,
        "grid": grid.as_dict(),
    }
    coverage = {
        "configurations_requested": len(configs),
        "configurations_recorded": len(round_stats),
        "stp_points": len(points),
        "missing": [],
    }
    return write_dataset(
        out_dir,
        stp_columns=stp_columns,
        round_columns=rounds,
        common=common,
        stp_extra={"coverage": coverage, "statistics": stp_stats, "anomalies": notes["stp"]},
        rounds_extra={
            "coverage": coverage,
            "statistics": round_stats,
            "anomalies": notes["rounds"],
        },
        overwrite=overwrite,
    )


def _aisim_version() -> str:
    import aisim

    return str(aisim.__version__)


def _version_of(module: str) -> str:
    imported = sys.modules.get(module) or __import__(module)
    return str(getattr(imported, "__version__", "unknown"))
