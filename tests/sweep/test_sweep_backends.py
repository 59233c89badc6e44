"""The same sweep gives the same rows (each point's latency sketches included, so the same
pooled percentiles) in process, on a process pool and on a local Ray, from synthetic traffic
and from a trace file the backends ship to their workers (pinned: no point reads the file, so a
trace rewritten mid-sweep changes no row)."""

from __future__ import annotations

import copy
import json
import multiprocessing
import os
import random
import signal
import sys
import threading
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from aisim.errors import SimulationError
from aisim.sweep import merge, run
from aisim.sweep._backends import evaluate_pinned, start_method
from aisim.sweep._evaluate import evaluate_point
from aisim.traffic._trace_cache import read_contents

SYNTHETIC: dict[str, Any] = {
    "type": "synthetic",
    "num_requests": 60,
    "prompt_tokens": {"type": "uniform", "min": 20, "max": 400},
    "output_tokens": {"type": "uniform", "min": 5, "max": 100},
}
SWEEP: dict[str, Any] = {
    "base": {
        "traffic": {
            "seed": 5,
            "source": SYNTHETIC,
            "load": {"type": "poisson", "rate_rps": 5},
        },
        "engine": {
            "backend": "vllm",
            "workers": {
                "aggregated": {
                    "kv_cache": {"capacity": {"type": "fixed", "blocks": 512}},
                    "timing": {"type": "fixed", "prefill_ms": 12, "decode_ms": 6},
                }
            },
        },
    },
    "axes": {
        "traffic.load.rate_rps": [4, 12],
        "engine.speculation": [
            None,
            {
                "kind": "ngram",
                "params": {"num_speculative_tokens": 2},
                "acceptance_rates": [0.6, 0.3],
            },
            {"kind": "ngram", "params": {"num_speculative_tokens": 2}, "acceptance_rates": [0.6]},
        ],
    },
    "slos": {"tpot_ms": {"p90": 8}, "ttft_ms": {"p99": 200}},
}


TRACE_HEADER = "arrival_s,prompt_tokens,output_tokens\n"


def _write_trace(file: Path) -> None:
    draw = random.Random(11)
    lines = [f"{i * 0.1:.1f},{draw.randint(20, 400)},{draw.randint(5, 100)}\n" for i in range(50)]
    file.write_text(TRACE_HEADER + "".join(lines), encoding="utf-8")


@pytest.fixture(scope="module")
def trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    file = tmp_path_factory.mktemp("trace") / "fifty.csv"
    _write_trace(file)
    return file


def _with_trace_axis(trace: Path) -> dict[str, Any]:
    """SWEEP crossed with the traffic source: synthetic, and the CSV trace."""
    sweep = copy.deepcopy(SWEEP)
    sweep["axes"] = {
        "traffic.source": [SYNTHETIC, {"type": "trace", "path": str(trace)}],
        **sweep["axes"],
    }
    return sweep


@pytest.fixture(scope="module")
def serial(trace: Path) -> pd.DataFrame:
    return run(_with_trace_axis(trace), workers=1)


def test_serial_rows_are_complete(serial: pd.DataFrame) -> None:
    assert list(serial["point"]) == list(range(12))
    assert list(serial["status"]) == ["ok", "ok", "error"] * 4
    assert set(serial["sd_kind"].dropna()) == {"none", "ngram"}
    assert list(serial["total_requests"].dropna()) == [60] * 4 + [50] * 4


def test_process_pool_rows_equal_serial(serial: pd.DataFrame, trace: Path) -> None:
    pooled = run(_with_trace_axis(trace), workers=2)
    pd.testing.assert_frame_equal(pooled, serial)
    pd.testing.assert_frame_equal(_merged(pooled), _merged(serial))
    pd.testing.assert_frame_equal(run(_with_trace_axis(trace), workers=3), serial)
    # the helper processes are stopped and joined
    assert multiprocessing.active_children() == []


def test_on_a_pool_the_calling_process_evaluates_no_point(
    serial: pd.DataFrame, trace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With 2+ workers the helpers evaluate every point; the calling process only feeds them
    and writes rows (so its file writes and progress bar never hold a helper up)."""
    import aisim.sweep._backends as backends

    caller = os.getpid()
    evaluate = backends.evaluate_pinned

    def in_helpers_only(*args: Any) -> dict[str, Any]:
        assert os.getpid() != caller, "the calling process evaluated a point"
        return evaluate(*args)

    monkeypatch.setattr(backends, "evaluate_pinned", in_helpers_only)
    if sys.version_info >= (3, 12) and start_method() != "fork":
        pytest.skip("native threads: helpers start by forkserver, without the patch")
    assert start_method() == "fork"  # a forked helper inherits the patched module
    pd.testing.assert_frame_equal(run(_with_trace_axis(trace), workers=2), serial)


def test_ray_rows_equal_process_pool(serial: pd.DataFrame, trace: Path) -> None:
    # tox -e py installs the ray extra and sets AISIM_TEST_RAY=1: there the check cannot skip.
    if os.environ.get("AISIM_TEST_RAY") == "1":
        import ray
    else:
        ray = pytest.importorskip("ray")
    try:
        frame = run(_with_trace_axis(trace), backend="ray", workers=2)
    finally:
        ray.shutdown()
    pd.testing.assert_frame_equal(frame, serial)
    pd.testing.assert_frame_equal(_merged(frame), _merged(serial))


def _merged(frame: pd.DataFrame) -> pd.DataFrame:
    """Pooled over the load and the traffic source: one row per speculation setting."""
    merged = merge(frame, over=["traffic.load.rate_rps", "traffic.source"])
    assert list(merged["merged_points"]) == [4, 4, 0]
    return merged


@pytest.mark.parametrize("workers", [1, 2])
def test_a_trace_rewritten_mid_sweep_changes_no_row(
    serial: pd.DataFrame, tmp_path: Path, workers: int
) -> None:
    """The driver reads the trace once and the points replay that content: after the first row
    the file is overwritten with an invalid trace, and every later point still replays the
    original (reading the file per point, they would fail)."""
    trace = tmp_path / "fifty.csv"
    _write_trace(trace)
    sweep = _with_trace_axis(trace)

    def spoil(done: int, total: int) -> None:
        if done == 1:
            trace.write_text(TRACE_HEADER + "not,a,row\n", encoding="utf-8")

    frame = run(sweep, workers=workers, progress=spoil)
    assert trace.read_text(encoding="utf-8").endswith("not,a,row\n")
    # The trace's path (another folder) is in the source axis and the point ids; all else equal.
    paths = ["point_id", "traffic.source"]
    pd.testing.assert_frame_equal(frame.drop(columns=paths), serial.drop(columns=paths))


def test_a_pinned_trace_needs_no_file(trace: Path, tmp_path: Path) -> None:
    """What a Ray node without the trace does: the shipped content, pinned at the driver's
    path, replays exactly as the file."""
    slos = SWEEP["slos"]
    present = copy.deepcopy(SWEEP["base"])
    present["traffic"]["source"] = {"type": "trace", "path": str(trace)}
    from_file = evaluate_point(present, str(tmp_path), slos)
    assert from_file["status"] == "ok" and from_file["total_requests"] == 50
    absent = tmp_path / "elsewhere" / "fifty.csv"
    config = copy.deepcopy(present)
    config["traffic"]["source"]["path"] = str(absent)
    assert evaluate_point(config, str(tmp_path), slos)["error"].startswith(
        "ConfigError: traffic.source.path: trace file not found"
    )
    pinned = evaluate_pinned(config, str(tmp_path), slos, {str(absent): read_contents(trace)})
    # (json: NaN statistics, e.g. no acceptance length with SD off, compare equal as text)
    assert json.dumps(pinned, sort_keys=True) == json.dumps(from_file, sort_keys=True)


def test_a_helper_killed_mid_sweep_is_one_error_and_leaves_no_process(
    trace: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"

    def kill_helpers(done: int, total: int) -> None:
        if done == 2:
            for child in multiprocessing.active_children():
                assert child.pid is not None and child.pid > 0
                os.kill(child.pid, signal.SIGKILL)

    with pytest.raises(SimulationError) as caught:
        run(_with_trace_axis(trace), workers=2, out=out, progress=kill_helpers)
    message = str(caught.value)
    assert message.startswith("sweep: a worker process exited (exit code -9) with point ")
    assert "\n" not in message and message.endswith("run the sweep again with --out to resume")
    assert multiprocessing.active_children() == []
    # Finished ok points stay on disk for the resume; error points are not stored, and every
    # third point of this sweep is one, so of the two finished points one may be an error (the
    # first to finish is point 0 or 1, both ok).
    assert len(list((out / "points").glob("*.json"))) >= 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="helpers fork on Linux only")
def test_forked_and_forkserver_helpers_give_the_same_rows(
    serial: pd.DataFrame, trace: Path
) -> None:
    """Helpers are forked while no other thread runs, started by a forkserver while one does (a
    forked helper would inherit its locks); both give the serial rows."""
    assert threading.active_count() == 1, "a thread outlived an earlier test"
    if sys.version_info < (3, 12):  # later, native threads (a BLAS pool) may force forkserver
        assert start_method() == "fork"
    pd.testing.assert_frame_equal(run(_with_trace_axis(trace), workers=2), serial)
    release = threading.Event()
    other = threading.Thread(target=release.wait)
    other.start()
    try:
        assert start_method() == "forkserver"
        pd.testing.assert_frame_equal(run(_with_trace_axis(trace), workers=3), serial)
    finally:
        release.set()
        other.join()
