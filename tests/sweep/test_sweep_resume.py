"""A killed sweep resumes: no finished point is lost or run again, and the rows (with each
point's sketches) and the merged percentiles equal those of an uninterrupted run."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import yaml

SWEEP: dict[str, Any] = {
    "base": {
        "traffic": {
            "seed": 3,
            "source": {
                "type": "synthetic",
                "num_requests": 300,
                "prompt_tokens": {"type": "uniform", "min": 20, "max": 200},
                "output_tokens": {"type": "uniform", "min": 20, "max": 200},
            },
            "load": {"type": "poisson", "rate_rps": 5},
        },
        "engine": {
            "speculation": {
                "kind": "ngram",
                "params": {"num_speculative_tokens": 3},
                "acceptance_rates": [0.6, 0.4, 0.2],
            },
            "workers": {
                "aggregated": {
                    "kv_cache": {"capacity": {"type": "fixed", "blocks": 4096}},
                    "timing": {"type": "fixed", "prefill_ms": 12, "decode_ms": 6},
                }
            },
        },
    },
    "axes": {
        "traffic.load.rate_rps": [2, 4, 8, 16],
        "engine.workers.aggregated.scheduler.max_sequences": [4, 16, 64],
    },
    "slos": {"tpot_ms": {"p90": 10}},
    "merge_over": ["engine.workers.aggregated.scheduler.max_sequences"],
}


def _cli(sweep: Path, out: Path, workers: int = 1) -> list[str]:
    return [
        *(sys.executable, "-m", "aisim", "sweep", str(sweep), "--out", str(out)),
        *("--workers", str(workers)),
    ]


def _children(pid: int) -> list[int]:
    """Processes started by ``pid`` (Linux: /proc/PID/task/PID/children)."""
    listing = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(child) for child in listing.read_text().split()] if listing.exists() else []


def _alive(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status")
    try:
        return "State:\tZ" not in status.read_text()
    except OSError:
        return False


def _finished(out: Path) -> dict[str, tuple[int, int]]:
    folder = out / "points"
    if not folder.is_dir():
        return {}
    return {
        file.name: (file.stat().st_ino, file.stat().st_mtime_ns) for file in folder.glob("*.json")
    }


@pytest.mark.parametrize("workers", [1, 2])
def test_resume_after_kill_loses_and_repeats_nothing(tmp_path: Path, workers: int) -> None:
    """Killed mid-sweep (on a pool too: its helpers stop when the calling process is gone),
    the same command finishes the sweep without losing or rerunning a finished point."""
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump(SWEEP), encoding="utf-8")
    out = tmp_path / "killed"
    process = subprocess.Popen(
        _cli(sweep, out, workers), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 120
    while len(_finished(out)) < 3 and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.01)
    helpers = _children(process.pid)
    assert len(helpers) >= workers - 1
    process.send_signal(signal.SIGKILL)
    process.wait()
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in helpers) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in helpers), "a helper outlived the killed sweep"
    before = _finished(out)
    assert 3 <= len(before) < 12, "the kill must land mid-sweep"
    assert not (out / "points.parquet").exists()

    resumed = subprocess.run(_cli(sweep, out, workers), capture_output=True, text=True, check=True)
    assert f"skipped {len(before)} finished points" in resumed.stdout
    after = _finished(out)
    assert len(after) == 12
    # Finished points were neither lost nor rewritten (same file, same modification time).
    assert {name: after[name] for name in before} == before
    assert not [name for name in os.listdir(out / "points") if not name.endswith(".json")]

    fresh = tmp_path / "fresh"
    subprocess.run(_cli(sweep, fresh), capture_output=True, text=True, check=True)
    for name in ("points.parquet", "merged.parquet"):
        pd.testing.assert_frame_equal(pd.read_parquet(out / name), pd.read_parquet(fresh / name))
    sketches = [f"{metric}_sketch" for metric in ("ttft", "tpot", "itl", "e2e")]
    merged = pd.read_parquet(out / "merged.parquet")
    assert len(merged) == 4 and merged[sketches].notna().all().all()
    assert (out / "summary.json").read_text() != ""


def test_a_different_sweep_in_the_same_folder_is_refused(tmp_path: Path) -> None:
    sweep = tmp_path / "sweep.yaml"
    small = {key: value for key, value in SWEEP.items() if key != "merge_over"}
    small["axes"] = {"traffic.load.rate_rps": [2]}
    sweep.write_text(yaml.safe_dump(small), encoding="utf-8")
    out = tmp_path / "out"
    subprocess.run(_cli(sweep, out), capture_output=True, check=True)
    sweep.write_text(yaml.safe_dump({**small, "axes": {"traffic.load.rate_rps": [3]}}))
    refused = subprocess.run(_cli(sweep, out), capture_output=True, text=True, check=False)
    assert refused.returncode == 2
    assert "holds the points of a different sweep; pass --overwrite" in refused.stderr
    again = subprocess.run([*_cli(sweep, out), "--overwrite"], capture_output=True, text=True)
    assert again.returncode == 0 and "skipped 0 finished points" in again.stdout
    assert len(_finished(out)) == 1


def test_a_point_file_is_one_line_with_nan_as_null(tmp_path: Path) -> None:
    """A point file is one line of sorted-key JSON; NaN (an undefined statistic), at the top of
    the row or inside a sketch, is written as null and read back by a resumed run as None."""
    import json
    import math

    from aisim.config._sweep import load_sweep
    from aisim.sweep._evaluate import SKETCH_COLUMNS
    from aisim.sweep._run import _Store, expand

    plan = load_sweep(SWEEP)
    point = expand(plan)[0]
    row = {
        "status": "ok",
        "error": "",
        "mean_acceptance_length": math.nan,
        **{column: {"sum_ms": 1.0, "buckets": {"3": 2}} for column in SKETCH_COLUMNS},
        "ttft_sketch": {"sum_ms": math.nan, "buckets": {"3": 2}},
    }
    _Store(tmp_path, plan, overwrite=False).write(point, row)
    text = (tmp_path / "points" / f"{point.point_id}.json").read_text(encoding="utf-8")
    assert text.endswith("}\n") and text.count("\n") == 1
    expected = {
        **row,
        "mean_acceptance_length": None,
        "ttft_sketch": {"sum_ms": None, "buckets": {"3": 2}},
    }
    assert json.loads(text)["row"] == expected
    assert _Store(tmp_path, plan, overwrite=False).load_existing([point]) == {point.index: expected}


@pytest.mark.parametrize("mine", ["summary.json", "points.parquet", "plots/sd_gain_vs_load.png"])
def test_a_folder_the_sweep_did_not_write_keeps_its_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], mine: str
) -> None:
    """--out naming a replay's folder used to overwrite its summary.json (and a user's file of
    any output name) without --overwrite: the sweep replaced 'its own' outputs in any folder."""
    from aisim.cli import main

    sweep = tmp_path / "sweep.yaml"
    small = {key: value for key, value in SWEEP.items() if key != "merge_over"}
    small["axes"] = {"traffic.load.rate_rps": [2]}
    sweep.write_text(yaml.safe_dump(small), encoding="utf-8")
    out = tmp_path / "out"
    (out / mine).parent.mkdir(parents=True, exist_ok=True)
    (out / mine).write_text("the user's", encoding="utf-8")
    argv = ["sweep", str(sweep), "--out", str(out), "--workers", "1", "--no-progress"]
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"aisim: error: {str(out / mine)!r} already exists; pass --overwrite to replace it\n"
    )
    assert (out / mine).read_text(encoding="utf-8") == "the user's"
    assert sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()) == [mine]
    # The sweep's own folder is resumed, its outputs replaced, without --overwrite.
    assert main([*argv, "--overwrite"]) == 0
    assert main(argv) == 0
    assert "skipped 1 finished points" in capsys.readouterr().out


def _files(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` by relative path, hidden ones too (a staging folder left
    behind would show)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


@pytest.mark.parametrize("failing", ["summary.json", "throughput_vs_latency.png"])
def test_a_failure_at_a_final_write_leaves_the_earlier_outputs_whole(
    tmp_path: Path, failing: str
) -> None:
    """points.parquet, merged.parquet, summary.json and the plots were written one after
    another: a full disk at summary.json (or a plot) left this run's points.parquet beside the
    earlier run's summary.json. The writer is a collaborator of write_outputs, so the failure is
    injected there; the earlier set stays byte-identical and no staging folder is left."""
    import errno

    from aisim._io import write_synced
    from aisim.cli import main
    from aisim.cli._sweep import write_outputs
    from aisim.errors import ConfigError
    from aisim.sweep import run, summarize

    sweep = tmp_path / "sweep.yaml"
    small = {**SWEEP, "axes": {**SWEEP["axes"], "traffic.load.rate_rps": [2]}}
    small["axes"]["engine.workers.aggregated.scheduler.max_sequences"] = [4, 16]
    sweep.write_text(yaml.safe_dump(small), encoding="utf-8")
    out = tmp_path / "out"
    assert main(["sweep", str(sweep), "--out", str(out), "--workers", "1", "--no-progress"]) == 0
    frame = run(str(sweep), workers=1, out=out)  # resumed: every point read back
    before = _files(out)
    assert {"points.parquet", "merged.parquet", "summary.json"} <= set(before)
    assert "plots/throughput_vs_latency.png" in before
    summary = {**summarize(frame), "skipped_points": 99}  # differs from the earlier summary
    del frame.attrs["merge_over"]  # and this run merges nothing: merged.parquet is removed

    def fail(path: Path, data: bytes) -> None:
        if path.name == failing:
            raise OSError(errno.ENOSPC, "No space left on device")
        write_synced(path, data)

    with pytest.raises(ConfigError, match="No space left on device$"):
        write_outputs(out, frame, dict(summary), write=fail)
    assert _files(out) == before
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["points", "plots", "points.parquet", "merged.parquet", "summary.json", "sweep.json"]
    )
    written = write_outputs(out, frame, dict(summary))
    assert [str(p.relative_to(out)) for p in written] == [
        "points.parquet",
        "summary.json",
        "plots/throughput_vs_latency.png",
    ]
    after = _files(out)
    assert "merged.parquet" not in after
    assert json.loads(after["summary.json"])["skipped_points"] == 99


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (b'{"row": ', "not valid JSON: Expecting value at line 1, column 9"),
        (b"[1]", 'expected an object whose "row" is an object with a "status"'),
        (b'{"row": 5}', 'expected an object whose "row" is an object with a "status"'),
        (b"\xff", "not UTF-8 text"),
    ],
)
def test_a_point_file_the_sweep_did_not_write_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: bytes, problem: str
) -> None:
    """A point file edited by hand (or another tool's of that name) ended the resumed sweep in
    a JSONDecodeError / TypeError traceback; a sweep.json that is not UTF-8 likewise, even with
    --overwrite."""
    from aisim.cli import main

    sweep = tmp_path / "sweep.yaml"
    small = {key: value for key, value in SWEEP.items() if key != "merge_over"}
    small["axes"] = {"traffic.load.rate_rps": [2]}
    sweep.write_text(yaml.safe_dump(small), encoding="utf-8")
    out = tmp_path / "out"
    argv = ["sweep", str(sweep), "--out", str(out), "--workers", "1", "--no-progress"]
    assert main(argv) == 0
    (name,) = _finished(out)
    point = out / "points" / name
    point.write_bytes(text)
    capsys.readouterr()
    assert main(argv) == 2
    assert capsys.readouterr().err == (
        f"aisim: error: {str(point)!r}: not a point file aisim sweep wrote ({problem}); delete "
        "it to run that point again, or pass --overwrite to start the sweep afresh\n"
    )
    assert point.read_bytes() == text
    assert main([*argv, "--overwrite"]) == 0
    (out / "sweep.json").write_bytes(text)
    assert main(argv) == 2
    assert "holds the points of a different sweep; pass --overwrite" in capsys.readouterr().err
    assert main([*argv, "--overwrite"]) == 0
    assert "skipped 0 finished points" in capsys.readouterr().out
