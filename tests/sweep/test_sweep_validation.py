"""Sweep file validation: each mistake is one ConfigError line naming the field path."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from aisim.config._sweep import load_sweep
from aisim.errors import ConfigError

BASE: dict[str, Any] = {
    "traffic": {
        "source": {"type": "synthetic", "num_requests": 4, "prompt_tokens": 10, "output_tokens": 4},
        "load": {"type": "constant", "rate_rps": 1},
    },
    "engine": {
        "workers": {
            "aggregated": {
                "kv_cache": {"capacity": {"type": "fixed", "blocks": 64}},
                "timing": {"type": "fixed", "prefill_ms": 1, "decode_ms": 1},
            }
        }
    },
}


def _sweep(**changes: Any) -> dict[str, Any]:
    sweep: dict[str, Any] = {"base": BASE, "axes": {"traffic.load.rate_rps": [1, 2]}}
    sweep.update(changes)
    return sweep


@pytest.mark.parametrize(
    ("sweep", "message"),
    [
        (
            _sweep(axes={"engine.workers.aggregated.scheduler.max_seqs": [1]}),
            "axes.engine.workers.aggregated.scheduler.max_seqs: unknown config path ('max_seqs' "
            "is not a field of engine.workers.aggregated.scheduler; allowed: "
            "attention_dp_batching_wait_iters, attention_dp_enable_balance,",
        ),
        (
            _sweep(axes={"traffic.rate": [1]}),
            "axes.traffic.rate: unknown config path ('rate' is not a field of traffic;",
        ),
        (
            _sweep(axes={"traffic.load.rate_rps": []}),
            "axes.traffic.load.rate_rps: empty axis; give at least one value",
        ),
        (
            _sweep(axes={"traffic.load.rate_rps": {"start": 5, "stop": 1, "step": 1}}),
            "axes.traffic.load.rate_rps: empty range (stop 1.0 < start 5.0)",
        ),
        (
            _sweep(axes={"traffic.load.rate_rps": {"start": 1, "stop": 5, "step": 0}}),
            "axes.traffic.load.rate_rps.step: expected a number > 0, got 0.0",
        ),
        # A tiny step's count used to be printed in full: a 301-digit number in the line.
        (
            _sweep(axes={"traffic.load.rate_rps": {"start": 1, "stop": 2, "step": 1e-300}}),
            "axes.traffic.load.rate_rps: about 1e+300 values; at most 100000 are allowed",
        ),
        (
            _sweep(axes={"traffic.load.rate_rps": {"start": 1, "stop": 200001, "step": 1}}),
            "axes.traffic.load.rate_rps: 200001 values; at most 100000 are allowed",
        ),
        (_sweep(axes={}), "axes: no axis given; a sweep needs at least one"),
        (
            _sweep(axes={"traffic.load": [{"type": "poisson"}], "traffic.load.rate_rps": [1]}),
            "axes: traffic.load and traffic.load.rate_rps conflict",
        ),
        (
            _sweep(axes={"engine.speculation.params.depth": [1, 2], "engine.nextn": [1]}),
            "axes: engine.nextn and engine.speculation.params.depth conflict",
        ),
        (
            _sweep(axes={"engine.workers.decode.scheduler.max_sequences": [1]}),
            "axes.engine.workers.decode.scheduler.max_sequences: the base config has no decode "
            "worker (it has aggregated)",
        ),
        (
            _sweep(axes={"traffic.load.rate_rps": [1, 1]}),
            "axes.traffic.load.rate_rps: value 1 is given twice",
        ),
        (
            _sweep(axes={"traffic.load.rate_rps": 3}),
            "axes.traffic.load.rate_rps: expected a list of values or a range {start, stop, "
            "step}, got 3 (int)",
        ),
        (
            _sweep(slo={"tpot_ms": {"p90": 20}}),
            "<root>: unknown field(s) slo; allowed: axes, base, merge_over, name, slos",
        ),
        (
            _sweep(slos={"tpot_ms": {"p80": 20}}),
            "slos.tpot_ms: unknown field(s) p80; allowed: mean, p50, p90, p95, p99",
        ),
        (
            _sweep(slos={"tpot_ms": {"p90": -1}}),
            "slos.tpot_ms.p90: expected a finite number >= 0.0, got -1.0",
        ),
        (
            _sweep(slos={"tpot_ms": {"p90": "20"}}),
            "slos.tpot_ms.p90: expected a finite number >= 0.0, got '20' (str)",
        ),
        (_sweep(base=7), "base: expected a replay config file path or an inline config mapping"),
        (
            _sweep(slos={"tpot_ms": {"p90": 0}}),
            "slos.tpot_ms.p90: expected a limit > 0 ms, got 0.0",
        ),
        (
            _sweep(axes={"traffic.load.rate_rps": {"start": 1, "stop": 2, "step": 1, "by": 2}}),
            "axes.traffic.load.rate_rps: unknown field(s) by; allowed: start, step, stop",
        ),
        ({"axes": {"traffic.load.rate_rps": [1]}}, "base: required field is missing"),
    ],
)
def test_one_line_errors(sweep: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_sweep(sweep)
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith(message), text


def test_ranges_include_stop_and_keep_decimal_steps() -> None:
    plan = load_sweep(
        _sweep(
            axes={
                "traffic.load.rate_rps": {"start": 0.1, "stop": 0.5, "step": 0.1},
                "engine.workers.aggregated.scheduler.max_sequences": {
                    "start": 8,
                    "stop": 32,
                    "step": 8,
                },
            }
        )
    )
    assert plan.axes == [
        ("traffic.load.rate_rps", [0.1, 0.2, 0.3, 0.4, 0.5]),
        ("engine.workers.aggregated.scheduler.max_sequences", [8, 16, 24, 32]),
    ]


def test_an_invalid_point_is_a_row_and_the_others_run() -> None:
    from aisim.sweep import run

    frame = run(_sweep(axes={"traffic.load.rate_rps": [1, -2, 3]}), workers=1)
    assert list(frame["status"]) == ["ok", "error", "ok"]
    assert frame.loc[1, "error"].startswith("ConfigError: traffic.load.rate_rps: ")
    assert frame.loc[1, "traffic.load.rate_rps"] == -2


@pytest.mark.parametrize(
    ("axes", "message"),
    [
        ({"traffic.bogus": [1]}, "axes.traffic.bogus: unknown config path"),
        ({"traffic.load.rate_rps": []}, "axes.traffic.load.rate_rps: empty axis"),
        (
            {"traffic.load": [{"type": "poisson", "rate_rps": 1}], "traffic.load.rate_rps": [1]},
            "axes: traffic.load and traffic.load.rate_rps conflict",
        ),
    ],
)
def test_cli_prints_one_line_and_exits_2(tmp_path: Path, axes: Any, message: str) -> None:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text(yaml.safe_dump(_sweep(axes=axes)), encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, "-m", "aisim", "sweep", str(sweep), "--out", str(tmp_path / "out")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 2
    assert completed.stderr.count("\n") == 1
    assert completed.stderr.startswith(f"aisim: error: {message}"), completed.stderr
    assert not (tmp_path / "out").exists()


def test_a_base_that_is_a_folder_is_named_as_one(tmp_path: Path) -> None:
    """It read 'base: file not found: ...' for a folder that is there."""
    (tmp_path / "configs").mkdir()
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("base: configs\naxes: {traffic.seed: [1]}\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_sweep(str(sweep))
    assert str(caught.value) == "base: 'configs' is a folder, not a replay config file"
