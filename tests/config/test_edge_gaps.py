"""Inputs the fuzzer found past the edge, each refused (or read) at the edge now, with the exact
one-line message: one rule for mapping keys and numbers in every config kind
(``aisim._fields.check_tree`` after every model), bounded recorded latencies, and relative paths
resolved against the file that names them."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

import aisim
from aisim import ConfigError
from aisim.cli import main
from aisim.config import load_sweep, run_replay
from aisim.fpm import regression_from_points, table_from_points

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "docs" / "examples"


def _error(call: object) -> str:
    assert callable(call)
    with pytest.raises(ConfigError) as caught:
        call()
    return str(caught.value)


def test_a_latency_of_1e308_is_refused_before_the_fit_overflows() -> None:
    # (1e308 - mean) ** 2 overflowed in the regression's R^2 (OverflowError from inside).
    points = [
        {"batch_size": 1, "total_kv_tokens": 0, "latency_ms": 1e308},
        {"batch_size": 2, "total_kv_tokens": 10, "latency_ms": 2.0},
        {"batch_size": 4, "total_kv_tokens": 30, "latency_ms": 3.0},
    ]
    expected = "points[0].latency_ms: expected a finite number in 0.0..1000000000.0, got 1e+308"
    assert _error(lambda: regression_from_points(points)) == expected
    assert _error(lambda: table_from_points(points)) == expected
    # The bound itself is a latency: a point at it is read.
    points[0]["latency_ms"] = 1e9
    assert table_from_points(points).name == "table"


@pytest.mark.parametrize(("key", "shown"), [(None, "None (NoneType)"), (1, "1 (int)")])
def test_a_sweep_base_key_that_is_not_a_string_is_one_line(key: object, shown: str) -> None:
    # The base was passed on untyped and reached the JSON encoder (TypeError from sort_keys).
    sweep = {"base": {"engine": {}, key: 2}, "axes": {"traffic.seed": [1, 2]}}
    assert _error(lambda: load_sweep(sweep)) == (
        f"base: mapping keys must be strings, got key {shown}"
    )


def test_a_sweep_file_with_a_null_key_fails_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sweep = tmp_path / "sweep.yaml"
    sweep.write_text("base:\n  engine: {backend: vllm}\n  ~: 1\naxes:\n  traffic.seed: [1, 2]\n")
    assert main(["sweep", str(sweep), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert err.strip().endswith("base: mapping keys must be strings, got key None (NoneType)")
    assert len(err.strip().splitlines()) == 1


def test_nan_in_a_json_speculation_file_is_refused(tmp_path: Path) -> None:
    # Python's JSON reader takes NaN; a value the model passes on untyped kept it.
    from aisim.files import load_config_file

    spec = tmp_path / "spec.json"
    spec.write_text(
        '{"kind": "eagle3", "expected_accepted_tokens": 1.0, '
        '"draft_config": {"hidden_size": 4096, "rope_theta": NaN}}'
    )
    assert _error(lambda: aisim.resolve_speculation(load_config_file(spec))) == (
        "speculation.draft_config.rope_theta: expected a finite number, got nan (float)"
    )


def test_nan_in_a_json_replay_file_is_refused(tmp_path: Path) -> None:
    config = json.loads(json.dumps(_replay_config("roofline")))
    config["engine"]["speculation"]["draft_config"] = {"note": math.inf}
    path = tmp_path / "replay.json"
    path.write_text(json.dumps(config))  # json.dumps writes Infinity
    assert "Infinity" in path.read_text()
    message = _error(lambda: run_replay(str(path)))
    assert message == (
        "engine.speculation.draft_config.note: expected a finite number, got inf (float)"
    )


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("1e-5", "expected a finite number in 0.0..1.0, got '1e-5' (str)"),
        (-9.2e18, "expected a finite number in 0.0..1.0, got -9.2e+18"),
    ],
)
def test_draft_config_numbers_are_checked_like_the_targets(value: object, expected: str) -> None:
    from aisim.config import get_model

    target = dict(_llama(), rms_norm_eps=value)
    assert _error(lambda: get_model(target)) == f"model.rms_norm_eps: {expected}"
    draft = dict(_llama(), num_hidden_layers=1, rms_norm_eps=value)
    block = {"kind": "eagle3", "draft_config": draft, "expected_accepted_tokens": 1.0}
    message = _error(
        lambda: aisim.resolve_speculation(block, model=get_model(_llama()), backend="vllm")
    )
    assert message == f"speculation.draft_config.rms_norm_eps: {expected}"


def _llama() -> dict[str, object]:
    return {
        "model_type": "llama",
        "hidden_size": 4096,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "num_hidden_layers": 32,
        "intermediate_size": 14336,
        "vocab_size": 128256,
    }


def _replay_config(timing: object) -> dict[str, object]:
    return {
        "traffic": {
            "source": {
                "type": "synthetic",
                "num_requests": 4,
                "prompt_tokens": 64,
                "output_tokens": 8,
            },
            "load": {"type": "poisson", "rate_rps": 10.0},
        },
        "engine": {
            "model": "Qwen/Qwen3-8B",
            "hardware": "h100_sxm",
            "backend": "vllm",
            "speculation": {"kind": "none"},
            "workers": {
                "aggregated": {
                    "parallelism": {"tensor": 1, "attention_data": 1},
                    "scheduler": {"max_batched_tokens": 8192, "max_sequences": 64},
                    "kv_cache": {"block_size": 16, "capacity": {"type": "fixed", "blocks": 4096}},
                    "timing": {"estimator": timing} if isinstance(timing, str) else timing,
                }
            },
        },
    }


def _write_config(folder: Path, timing: object) -> Path:
    import yaml

    folder.mkdir()
    path = folder / "replay.yaml"
    path.write_text(yaml.safe_dump(_replay_config(timing)))
    return path


def test_a_relative_table_path_resolves_against_the_replay_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cfg/replay.yaml names the table beside it; run from the parent folder, where there is
    # no such file: the table is the file beside the config.
    table = EXAMPLES / "estimators" / "stp_qwen3_8b_h100.csv"
    timing = {"estimator": "auto", "tables": [table.name]}
    config = _write_config(tmp_path / "cfg", timing)
    shutil.copy(table, tmp_path / "cfg" / table.name)
    shutil.copy(table.with_name(table.name + ".json"), tmp_path / "cfg" / (table.name + ".json"))
    monkeypatch.chdir(tmp_path)
    result = run_replay("cfg/replay.yaml")
    assert result.summary["completed_requests"] == 4
    # The table priced the decode passes: the roofline alone gives other times.
    roofline = run_replay(_replay_config("roofline"))
    assert result.summary["duration_ms"] != roofline.summary["duration_ms"]
    # From the parent folder a sibling file named the same is not the one read.
    monkeypatch.chdir(tmp_path / "cfg")
    assert run_replay(str(config)).summary == result.summary


def test_a_missing_table_names_the_whole_field_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _write_config(tmp_path / "cfg", {"estimator": "table", "tables": ["stp.csv"]})
    monkeypatch.chdir(tmp_path)
    missing = str((tmp_path / "cfg" / "stp.csv").resolve())
    assert _error(lambda: run_replay("cfg/replay.yaml")) == (
        f"engine.workers.aggregated.timing.tables[0]: {missing!r}: file not found; expected a "
        "table file: NAME.parquet or NAME.csv beside its sidecar NAME.parquet.json or "
        "NAME.csv.json"
    )
