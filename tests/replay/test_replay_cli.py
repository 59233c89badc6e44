"""``aisim replay``: atomic outputs, refusal to overwrite, JSON output, one-line errors; and the
docs examples run as documented."""

from __future__ import annotations

import dataclasses
import errno
import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from aisim.cli import main
from aisim.config import run_replay
from aisim.config._replay import build_plan
from aisim.errors import ConfigError

EXAMPLES = Path(__file__).resolve().parents[2] / "docs" / "examples" / "replay"

CONFIG = {
    "traffic": {
        "source": {"type": "agentic", "requests": [{"input_length": 100, "output_length": 64}]}
    },
    "engine": {
        "speculation": {"kind": "mtp", "params": {"depth": 3}, "acceptance_rates": [1, 1, 1]},
        "workers": {
            "aggregated": {
                "kv_cache": {"capacity": {"type": "fixed", "blocks": 64}},
                "timing": {"type": "fixed", "prefill_ms": 10, "decode_ms": 5},
            }
        },
    },
}


def write_config(tmp_path: Path) -> Path:
    path = tmp_path / "replay.yaml"
    path.write_text(yaml.safe_dump(CONFIG))
    return path


def test_writes_summary_and_requests(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert main(["replay", str(write_config(tmp_path)), "--out", str(out), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    written = json.loads((out / "summary.json").read_text())
    assert printed == written
    assert written["mean_e2e_latency_ms"] == 90.0  # 10 + ceil(63 / 4) * 5
    frame = pd.read_parquet(out / "requests.parquet")
    assert list(frame["e2e_latency_ms"]) == [90.0]
    assert list(frame["sd_rounds"]) == [16]
    assert sorted(p.name for p in out.iterdir()) == ["requests.parquet", "summary.json"]


def test_refuses_to_overwrite_without_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    config = write_config(tmp_path)
    out = tmp_path / "out"
    assert main(["replay", str(config), "--out", str(out)]) == 0
    before = (out / "summary.json").read_bytes()
    capsys.readouterr()
    assert main(["replay", str(config), "--out", str(out)]) == 2
    error = capsys.readouterr().err
    assert "already exists; pass --overwrite" in error and error.count("\n") == 1
    assert (out / "summary.json").read_bytes() == before
    assert main(["replay", str(config), "--out", str(out), "--overwrite"]) == 0
    assert (out / "summary.json").read_bytes() == before  # deterministic


def test_a_configs_per_token_file_is_not_overwritten_and_nothing_else_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`simulation.per_token: true` (not the --per-token flag) over an existing tokens.parquet
    was refused only after requests.parquet had been renamed into place: a partial write."""
    path = tmp_path / "replay.yaml"
    path.write_text(yaml.safe_dump({**CONFIG, "simulation": {"per_token": True}}))
    out = tmp_path / "out"
    out.mkdir()
    (out / "tokens.parquet").write_text("the user's", encoding="utf-8")
    assert main(["replay", str(path), "--out", str(out)]) == 2
    assert capsys.readouterr().err == (
        f"aisim: error: {str(out / 'tokens.parquet')!r} already exists; pass --overwrite to "
        "replace it\n"
    )
    assert sorted(p.name for p in out.iterdir()) == ["tokens.parquet"]
    assert (out / "tokens.parquet").read_text(encoding="utf-8") == "the user's"


def _listing(folder: Path) -> dict[str, bytes]:
    """Every entry of ``folder``, hidden ones too (a staging folder left behind would show)."""
    return {p.name: p.read_bytes() if p.is_file() else b"<folder>" for p in folder.iterdir()}


@pytest.mark.parametrize(
    "error", [OSError(errno.ENOSPC, "No space left on device"), KeyboardInterrupt()]
)
def test_a_failure_at_the_last_write_leaves_the_earlier_set_whole(
    tmp_path: Path, error: BaseException
) -> None:
    """summary.json was written after requests.parquet had been renamed into place: a full disk
    (or an interrupt) at that last write left this run's requests.parquet beside the earlier
    run's summary.json. The writer of the whole-bytes outputs is a collaborator of
    write_replay, so the failure is injected there."""
    from aisim._io import write_synced
    from aisim.cli._replay import write_replay

    config = write_config(tmp_path)
    out = tmp_path / "out"
    assert main(["replay", str(config), "--out", str(out), "--per-token"]) == 0
    (out / "intervals.json").write_bytes(b"{}\n")  # an earlier run's, kept by a plain run
    before = _listing(out)
    assert sorted(before) == [
        "intervals.json",
        "requests.parquet",
        "summary.json",
        "tokens.parquet",
    ]
    other = tmp_path / "other.yaml"
    changed = json.loads(json.dumps(CONFIG))
    changed["traffic"]["source"]["requests"][0]["output_length"] = 9
    other.write_text(yaml.safe_dump(changed))

    def fail_on_summary(path: Path, data: bytes) -> None:
        if path.name == "summary.json":
            raise error
        write_synced(path, data)

    caught = ConfigError if isinstance(error, OSError) else KeyboardInterrupt
    with pytest.raises(caught) as info:
        write_replay(
            str(other), out, True, False, files={"intervals.json": None}, write=fail_on_summary
        )
    if caught is ConfigError:
        assert str(info.value) == (
            f"cannot write {str(out / 'summary.json')!r}: No space left on device"
        )
    assert _listing(out) == before
    # The same run with a working writer replaces the whole set (tokens and intervals of the
    # earlier run are removed: they would read as this run's).
    summary, written = write_replay(str(other), out, True, False, files={"intervals.json": None})
    assert [p.name for p in written] == ["summary.json", "requests.parquet"]
    assert sorted(_listing(out)) == ["requests.parquet", "summary.json"]
    assert summary.completed_requests == 1
    frame = pd.read_parquet(out / "requests.parquet")
    assert list(frame["output_tokens"]) == [9]
    assert list(frame["e2e_latency_ms"]) == [20.0]  # 10 + ceil(8 / 4) * 5


def test_config_error_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = json.loads(json.dumps(CONFIG))
    bad["engine"]["workers"]["aggregated"]["kv_cache"]["capacity"]["blocks"] = 2
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(bad))
    assert main(["replay", str(path), "--out", str(tmp_path / "o")]) == 2
    error = capsys.readouterr().err
    assert error.startswith(
        "aisim: error: engine.workers.aggregated.kv_cache.capacity: request '0'"
    )
    assert not (tmp_path / "o" / "summary.json").exists()


@pytest.mark.parametrize("name", ["aggregated_mtp.yaml", "disaggregated_sglang.yaml"])
def test_docs_examples_run(name: str) -> None:
    result = run_replay(EXAMPLES / name)
    summary = result.summary
    assert summary["completed_requests"] == summary["total_requests"] > 0
    assert summary["sd_rounds"] > 0
    assert summary["mean_acceptance_length"] > 1.0


def test_progress_callback_and_event_bound() -> None:
    from aisim.errors import SimulationError
    from aisim.replay._engine import Simulation

    calls: list[tuple[int, int, float]] = []
    result = run_replay(CONFIG, progress=lambda *args: calls.append(args), progress_every=5)
    # 16 SD rounds: 1 arrival + 17 wakes + 17 passes = 35 events -> calls at 5, 10, ..., 35
    # plus the final report.
    assert result.summary["events"] == 35
    assert [events for events, _, _ in calls] == [5, 10, 15, 20, 25, 30, 35, 35]
    assert calls[-1] == (35, 1, 90.0)
    plan, _ = build_plan(CONFIG)
    plan = dataclasses.replace(plan, max_events=10)  # plans are frozen
    with pytest.raises(SimulationError, match=r"exceeded its event bound \(10 events"):
        Simulation(plan).run()


def test_public_names() -> None:
    import aisim.replay

    # The whole list is docs/api.md's (tests/test_public_api.py); run() and the plan it takes
    # are both public, so no caller reaches into aisim.replay._plan for it.
    assert {"QuantileSketch", "ReplayPlan", "ReplayResult", "run"} <= set(aisim.replay.__all__)


def test_the_core_run_takes_a_plan_and_points_configs_to_the_edge() -> None:
    import aisim.replay

    with pytest.raises(ConfigError, match=r"takes a ReplayPlan, got dict; .*aisim\.run_replay"):
        aisim.replay.run(CONFIG)  # type: ignore[arg-type]
    plan, description = build_plan(CONFIG)
    assert aisim.replay.run(plan, description).summary == run_replay(CONFIG).summary


def test_the_result_is_read_only_and_to_dict_is_summary_json(tmp_path: Path) -> None:
    result = run_replay(CONFIG)
    with pytest.raises(AttributeError):
        result.summary = {}  # type: ignore[misc]
    result.summary["completed_requests"] = -1
    result.columns["prompt_tokens"].append(7)
    assert result.summary["completed_requests"] == 1
    assert len(result.columns["prompt_tokens"]) == 1
    config = tmp_path / "config.json"
    config.write_text(json.dumps(CONFIG))
    assert main(["replay", str(config), "--out", str(tmp_path / "out"), "--no-progress"]) == 0
    written = (tmp_path / "out" / "summary.json").read_text(encoding="utf-8")
    assert written == json.dumps(result.to_dict(), sort_keys=True, indent=2) + "\n"
