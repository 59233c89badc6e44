"""docs/sweep.md: the notebook example runs and answers as documented; the example sweep file is
valid; the CLI writes every documented output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest

from aisim.cli import main
from aisim.sweep import merge

ROOT = Path(__file__).resolve().parents[2]


def _run_example(index: int) -> dict[str, object]:
    """Run docs/sweep.md's python block ``index`` (0: the notebook example, 1: merging)."""
    text = (ROOT / "docs" / "sweep.md").read_text(encoding="utf-8")
    examples = re.findall(r"```python\n(.*?)```", text, flags=re.DOTALL)
    assert len(examples) == 2
    scope: dict[str, object] = {}
    exec(compile(examples[index], f"docs/sweep.md example {index}", "exec"), scope)
    return scope


def test_notebook_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    scope = _run_example(0)
    frame = scope["frame"]
    assert isinstance(frame, pd.DataFrame) and len(frame) == 9
    assert (frame["status"] == "ok").all()
    best = scope["best"]
    assert isinstance(best, dict) and best["sd_kind"] == "ngram"
    gains = scope["gains"]
    assert isinstance(gains, list) and len(gains) == 6
    # ngram SD with these rates shortens TPOT at every load of this light sample.
    assert all(gain["tpot_speedup"] > 1.5 for gain in gains)


def test_merge_example_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pooled-percentiles example: two SD settings, four seeds each, pooled per setting."""
    monkeypatch.chdir(ROOT)
    scope = _run_example(1)
    pooled, by_scheme, everything = (scope[name] for name in ("pooled", "by_scheme", "everything"))
    assert isinstance(pooled, pd.DataFrame) and isinstance(everything, pd.DataFrame)
    assert list(pooled["merged_points"]) == [4, 4] and list(pooled["completed_requests"]) == [
        80,
        80,
    ]
    assert list(pooled.columns[:2]) == ["engine.speculation", "points"]
    pd.testing.assert_frame_equal(pooled, by_scheme)
    assert len(everything) == 1 and everything.loc[0, "ttft_samples"] == 160
    # SD shortens the pooled TPOT of these replicas (as it does each point's)
    assert pooled.loc[1, "p90_tpot_ms"] < pooled.loc[0, "p90_tpot_ms"]


def test_cli_writes_the_documented_outputs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = ROOT / "docs" / "examples" / "sweep" / "sd_vs_load.yaml"
    out = tmp_path / "out"
    command = ["sweep", str(sweep), "--out", str(out), "--workers", "1"]
    assert main([*command, "--json", "--merge-over", "traffic.load.rate_rps"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["points"] == 9 and summary["skipped_points"] == 0
    for name in ("points.parquet", "summary.json", "sweep.json", "merged.parquet"):
        assert (out / name).is_file()
    merged = pd.read_parquet(out / "merged.parquet")
    assert list(merged["merged_points"]) == [3, 3, 3]  # each speculation setting over 3 loads
    # points.parquet keeps the sweep's axes and sketches: merged again from it, the same frame
    pd.testing.assert_frame_equal(merge(pd.read_parquet(out / "points.parquet")), merged)
    assert summary["merged"]["over"] == ["traffic.load.rate_rps"]
    assert [group["merged_points"] for group in summary["merged"]["groups"]] == [3, 3, 3]
    for name in ("throughput_vs_latency.png", "sd_gain_vs_load.png"):
        assert (out / "plots" / name).read_bytes()[:4] == b"\x89PNG"
    assert len(list((out / "points").glob("*.json"))) == 9
    assert json.loads((out / "summary.json").read_text()) == summary


def test_the_8rps_question_sweep_is_committed_and_valid() -> None:
    """The sweep behind docs/sweep.md's "best SD config at 8 req/s under TPOT p90 <= 20 ms":
    18 points over the committed bench trace (one command: aisim sweep FILE --out DIR)."""
    from aisim.config._sweep import load_sweep
    from aisim.sweep._backends import trace_path
    from aisim.sweep._run import expand

    plan = load_sweep(ROOT / "docs" / "examples" / "sweep" / "shared_trace_8rps.yaml")
    assert len(expand(plan)) == 18
    assert plan.base["traffic"]["load"] == {"type": "poisson", "rate_rps": 8}
    assert plan.slos == {"tpot_ms": {"p90": 20.0}}
    trace = trace_path(plan.base, plan.base_dir)
    assert trace is not None and trace.resolve() == (
        ROOT / "qualification" / "bench" / "trace_n4000_q8_s7.csv"
    )
    assert "aisim sweep docs/examples/sweep/shared_trace_8rps.yaml" in (
        ROOT / "docs" / "sweep.md"
    ).read_text(encoding="utf-8")
