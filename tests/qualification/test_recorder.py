"""The recorder end to end on a tiny grid (skipped only when PyTorch is absent; tox -e recorder
installs it, so there they always run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from aisim.errors import ConfigError
from qualification.datasets import load_dataset
from qualification.record import Grid, record_dataset

torch = pytest.importorskip("torch")

from qualification.record._models import make_step_meta  # noqa: E402
from qualification.record._session import split_kv  # noqa: E402

GRID = Grid(draft_lengths=(1, 2), batch_sizes=(1, 2), kv_totals=(32, 64), repetitions=2)


def test_split_kv_keeps_every_token() -> None:
    assert split_kv(10, 3) == [4, 3, 3]
    assert split_kv(256, 8) == [32] * 8
    assert split_kv(5, 5) == [1] * 5


def test_mask_is_left_padded_and_bottom_right_causal() -> None:
    # Requests with 2 and 1 past tokens, verifying 2 tokens each: P = 2, key slots 0..3.
    meta = make_step_meta([2, 1], offset=0, queries=2, head_dim=4, theta=10000.0, device="cpu")
    expected = [
        [[True, True, True, False], [True, True, True, True]],  # request 0
        [[False, True, True, False], [False, True, True, True]],  # request 1: slot 0 is padding
    ]
    assert meta.mask[:, 0].tolist() == expected
    # A later draft step (offset 1, one query) sees everything written so far.
    step = make_step_meta([2, 1], offset=1, queries=1, head_dim=4, theta=10000.0, device="cpu")
    assert step.mask[:, 0].tolist() == [[[True, True, True, True]], [[False, True, True, True]]]


@pytest.mark.parametrize("drafter", ["mtp", "eagle3", "draft_model"])
def test_tiny_grid_records_a_complete_dataset(tmp_path: Path, drafter: str) -> None:
    dataset = record_dataset(
        "tiny", drafter, tmp_path / drafter, grid=GRID, device="cpu", allow_dirty=True
    )
    again = load_dataset(tmp_path / drafter)  # what is on disk verifies
    rounds = again.sd_rounds
    assert len(rounds) == 2 * 2 * 2 * 2  # d x B x K x repetitions
    assert sorted(set(rounds["config_id"])) == sorted(
        f"d{d}-b{b}-k{k}" for d in (1, 2) for b in (1, 2) for k in (32, 64)
    )
    assert (rounds["tokens_verified"] == (rounds["draft_length"] + 1) * rounds["batch_size"]).all()
    assert ((rounds["duration_ms"] - rounds["draft_ms"] - rounds["verify_ms"]).abs() < 1e-6).all()
    assert (rounds["duration_ms"] > 0).all()
    points = {
        (int(b), int(k)): row
        for b, k, row in zip(
            again.stp_points["batch_size"],
            again.stp_points["total_kv_tokens"],
            again.stp_points.to_dict(orient="records"),
            strict=True,
        )
    }
    # Each configuration's rule reference ((d + 1) B, same K) and its baseline (B, K) exist.
    for d in (1, 2):
        for b in (1, 2):
            for k in (32, 64):
                assert f"d{d}-b{b}-k{k}" in points[((d + 1) * b, k)]["reference_for"].split(";")
                assert points[(b, k)]["is_baseline"]
    assert all(len(reps) == 2 for reps in again.stp_points["latency_ms_reps"])
    identity = dataset.identity
    assert identity["timing"]["metric"] == "cpu"
    assert identity["threads"] == 1
    assert identity["draft"]["kind"] == drafter
    assert identity["device"]["type"] == "cpu"
    assert len(identity["target"]["geometry_sha256"]) == 64


def test_cli_records_then_scores(tmp_path: Path) -> None:
    out = tmp_path / "cli"
    env = {**os.environ, "PYTHONSAFEPATH": "1"}
    record = subprocess.run(
        [
            sys.executable,
            "-m",
            "aisim",
            "record",
            "--preset",
            "tiny",
            "--drafter",
            "mtp",
            "--out",
            str(out),
            "--d",
            "1,2",
            "--batch",
            "1",
            "--kv",
            "32",
            "--reps",
            "2",
            "--no-progress",
            "--allow-dirty",  # tests run from working trees; the refusal has its own test
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert record.returncode == 0, record.stderr
    assert "recorded 4 rounds" in record.stdout
    side = load_dataset(out).rounds_sidecar
    assert side["host"]["malloc_env"]["MALLOC_MMAP_THRESHOLD_"] == "33554432"
    assert "--d 1,2 --batch 1 --kv 32 --reps 2" in side["command"]
    assert side["identity"]["git"]["allow_dirty"] is True
    host = side["host"]
    assert len(host["load_average_start"]) == len(host["load_average_end"]) == 3
    assert host["cpu"]["source"] in ("/proc/cpuinfo", "lscpu", "platform.processor")
    mape = subprocess.run(
        [sys.executable, "-m", "aisim", "qualify", "mape", str(out)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert mape.returncode == 0, mape.stderr
    assert "round-weighted MAPE" in mape.stdout


def test_missing_torch_is_one_clear_error(tmp_path: Path) -> None:
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "from aisim.cli import main\n"
        f"sys.exit(main(['record', '--preset', 'tiny', '--drafter', 'mtp', '--out', {str(tmp_path)!r}]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 2
    assert "pip install 'aisim[record]'" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    ("grid", "options", "message"),
    [
        (
            Grid((0,), (1,), (32,), 1),
            {},
            r"record.grid.d: expected an integer in 1\.\.1000000, got 0",
        ),
        (Grid((1,), (), (32,), 1), {}, "record.grid.batch: expected at least one value"),
        (Grid((1,), (1,), (32,), 0), {}, "record.grid.repetitions"),
        (GRID, {"threads": 0}, "record.threads"),
        (GRID, {"dtype": "int8"}, "record.dtype: expected one of float32, bfloat16, float16"),
        (GRID, {"device": "tpu"}, "record.device: expected auto, cpu or cuda"),
    ],
)
def test_bad_recording_requests_are_clear_errors(
    tmp_path: Path, grid: Grid, options: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        record_dataset("tiny", "mtp", tmp_path / "x", grid=grid, **options)  # type: ignore[arg-type]


def test_unknown_preset_and_drafter(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown preset 'huge'; allowed: qwen3-0.6b, tiny"):
        record_dataset("huge", "mtp", tmp_path / "x")
    with pytest.raises(ConfigError, match="unknown drafter 'medusa'"):
        record_dataset("tiny", "medusa", tmp_path / "x")


CLEAN = {"revision": "0" * 40, "dirty": False}
DIRTY = {"revision": "1" * 40, "dirty": True}


def test_a_dirty_tree_is_refused_before_any_work(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"record: the source tree at 1{40} has uncommitted"):
        record_dataset("tiny", "mtp", tmp_path / "x", grid=GRID, device="cpu", git=DIRTY)
    assert not (tmp_path / "x").exists()


def test_allow_dirty_records_and_the_sidecars_say_so(tmp_path: Path) -> None:
    grid = Grid((1,), (1,), (32,), 1)
    dataset = record_dataset(
        "tiny", "mtp", tmp_path / "x", grid=grid, device="cpu", git=DIRTY, allow_dirty=True
    )
    for side in (dataset.rounds_sidecar, dataset.stp_sidecar):
        assert side["identity"]["git"] == {**DIRTY, "allow_dirty": True}
        assert side["anomalies"][0].startswith("recorded from a source tree with uncommitted")
    clean = record_dataset("tiny", "mtp", tmp_path / "y", grid=grid, device="cpu", git=CLEAN)
    assert clean.rounds_sidecar["identity"]["git"] == {**CLEAN, "allow_dirty": False}
    assert not any("uncommitted" in note for note in clean.rounds_sidecar["anomalies"])
