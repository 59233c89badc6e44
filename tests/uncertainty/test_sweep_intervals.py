"""``aisim sweep --intervals N``: every point carries p50 and its 90 % interval."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
import yaml

from aisim.cli import main
from aisim.sweep import run
from aisim.uncertainty import Sources
from aisim.uncertainty._sweep import add_sweep_intervals

SWEEP = {
    "base": {
        "traffic": {
            "source": {
                "type": "synthetic",
                "num_requests": 4,
                "prompt_tokens": 100,
                "output_tokens": 13,
            },
            "load": {"type": "poisson", "rate_rps": 20},
        },
        "engine": {
            "backend": "vllm",
            "speculation": {"kind": "mtp", "params": {"depth": 1}, "acceptance_rate": 0.5},
            "workers": {
                "aggregated": {
                    "kv_cache": {"capacity": {"type": "fixed", "blocks": 256}},
                    "timing": {"type": "fixed", "prefill_ms": 10, "decode_ms": 5},
                }
            },
        },
    },
    "axes": {"engine.speculation.params.depth": [1, 2]},
}


def test_every_source_off_puts_each_interval_at_its_point() -> None:
    frame = run(SWEEP, workers=1)
    with_intervals = add_sweep_intervals(frame, SWEEP, 3, sources=Sources.parse("none"))
    for name in ("mean_e2e_ms", "p90_tpot_ms", "goodput_rps"):
        for stat in ("p50", "low", "high"):
            assert with_intervals[f"{name}_{stat}"].tolist() == frame[name].tolist()
    assert with_intervals.attrs["intervals"]["includes"] == []


def test_the_seeds_widen_the_intervals_and_the_cli_writes_them(tmp_path: Path) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    argv = ["sweep", str(path), "--out", str(tmp_path / "out"), "--workers", "1", "--no-progress"]
    assert main([*argv, "--intervals", "8", "--sources", "simulation"]) == 0
    frame = pd.read_parquet(tmp_path / "out/points.parquet")
    # p50 and the central 90 % for mean and p90 TTFT, TPOT, E2E, both throughputs and goodput.
    metrics = [f"{s}_{m}_ms" for m in ("ttft", "tpot", "e2e") for s in ("mean", "p90")]
    metrics += ["request_throughput_rps", "output_throughput_tok_s", "goodput_rps"]
    added = [c for c in frame.columns if c.endswith(("_p50", "_low", "_high"))]
    assert sorted(added) == sorted(f"{m}_{s}" for m in metrics for s in ("p50", "low", "high"))
    summary = json.loads((tmp_path / "out/summary.json").read_text())
    assert summary["intervals"]["includes"] == ["simulation"]
    assert summary["intervals"]["replicas"] == 8
    assert (frame["mean_e2e_ms_low"] <= frame["mean_e2e_ms_p50"]).all()
    assert (frame["mean_e2e_ms_p50"] <= frame["mean_e2e_ms_high"]).all()
    assert (frame["mean_e2e_ms_low"] < frame["mean_e2e_ms_high"]).all()


def test_too_few_replicas_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "sweep.yaml"
    path.write_text(yaml.safe_dump(SWEEP))
    argv = ["sweep", str(path), "--out", str(tmp_path / "out"), "--intervals", "1"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--intervals: expected an integer in 2..10000" in err
