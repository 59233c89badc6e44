"""A recorder dataset's SD-round table (aisim.sd_rounds v1) serves as a measured_round estimator.

Expected prices are computed here independently with pandas from the committed evidence parquet
(the median of every recorded round's duration_ms per configuration), never by the loader.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from aisim.config import best_available
from aisim.errors import ConfigError, DataIntegrityError, UnsupportedQuery
from aisim.fpm import (
    ForwardPassMetrics,
    MeasuredRoundModel,
    load_table_file,
    load_table_models,
)

ROOT = Path(__file__).resolve().parents[2]
DATASET = ROOT / "evidence" / "cpu-qwen3-0.6b-mtp"
ROUNDS = DATASET / "sd_rounds.parquet"


def _config(kind: str = "mtp", depth: int = 2, **extra: Any) -> dict[str, Any]:
    params = {"depth": depth} if kind == "mtp" else {"num_speculative_tokens": depth}
    return {
        "model": "Qwen/Qwen3-0.6B",
        "speculation": {"kind": kind, "params": params},
        "role": "decode",
        "tables": [str(ROUNDS)],
        "estimator": "measured_round",
        **extra,
    }


def _expected_medians() -> dict[tuple[int, int, int], float]:
    frame = pd.read_parquet(ROUNDS)
    grouped = frame.groupby(["draft_length", "batch_size", "total_kv_tokens"])["duration_ms"]
    return {(int(d), int(b), int(k)): float(v) for (d, b, k), v in grouped.median().items()}


def test_evidence_rounds_load_as_one_measured_round_table_per_draft_length() -> None:
    models = load_table_models(ROUNDS)
    assert [model.identity["draft_length"] for model in models] == [1, 2, 3, 4]
    sidecar = json.loads((DATASET / "sd_rounds.parquet.json").read_text())
    for model in models:
        assert isinstance(model, MeasuredRoundModel)
        assert model.identity["kind"] == "mtp"
        assert model.identity["draft_identity"] is None
        assert model.identity["timing_scope"] == "round"
        assert model.identity["role"] == "decode"
        assert model.identity["model"] == "Qwen/Qwen3-0.6B"
        assert model.identity["hardware"] == "cpu:AMD EPYC"
        draft_hash = sidecar["identity"]["draft"]["geometry_sha256"]
        assert model.identity["draft_geometry_sha256"] == draft_hash
        assert model.data_identity == sidecar["sha256"]
        # The committed grid: B in {1, 4, 8} x K_total in {256, 1024}, one point each.
        assert sorted((b, k) for b, k, _ in model.points) == [
            (b, k) for b in (1, 4, 8) for k in (256, 1024)
        ]


def test_load_table_file_refuses_a_file_with_several_draft_lengths() -> None:
    with pytest.raises(ConfigError, match="draft lengths 1, 2, 3, 4"):
        load_table_file(ROUNDS)


@pytest.mark.parametrize("depth", [1, 2, 3, 4])
def test_every_recorded_configuration_is_priced_at_its_recorded_median(depth: int) -> None:
    expected = _expected_medians()
    model = best_available(_config(depth=depth))
    for (d, batch, kv), median in expected.items():
        if d != depth:
            continue
        result = model.estimate_forward_pass_detailed(ForwardPassMetrics(batch, kv))
        assert result.latency_ms == median
        assert result.diagnostics.estimator == "measured_round"
        assert result.diagnostics.coverage == "measured"
        assert result.scaling_factor is None


def test_one_hand_checked_configuration() -> None:
    # d2-b4-k1024: the five recorded rounds' middle value, as the sidecar statistics state.
    model = best_available(_config(depth=2))
    assert model.estimate_forward_pass_time_ms(ForwardPassMetrics(4, 1024)) == 726.056914


def test_between_recorded_batches_interpolates_and_outside_is_refused() -> None:
    expected = _expected_medians()
    model = best_available(_config(depth=3))
    # B = 6 lies midway between the recorded rows B = 4 and B = 8 at K_total = 256.
    midway = (expected[(3, 4, 256)] + expected[(3, 8, 256)]) / 2
    result = model.estimate_forward_pass_detailed(ForwardPassMetrics(6, 256))
    assert result.latency_ms == pytest.approx(midway, rel=1e-12)
    assert result.diagnostics.coverage == "interpolated"
    with pytest.raises(UnsupportedQuery):
        model.estimate_forward_pass_time_ms(ForwardPassMetrics(16, 256))


def test_a_draft_length_that_was_not_recorded_is_refused_naming_both() -> None:
    with pytest.raises(ConfigError) as caught:
        best_available(_config(depth=5))
    text = str(caught.value)
    assert "measured_round is not available" in text
    assert "draft_length: recorded 1, query 5" in text
    assert "draft_length: recorded 4, query 5" in text


def test_a_different_kind_is_refused_naming_both() -> None:
    with pytest.raises(ConfigError, match="kind: recorded 'mtp', query 'ngram'"):
        best_available(_config(kind="ngram", depth=2))


@pytest.mark.parametrize(
    ("extra", "text"),
    [
        ({"model": "Qwen/Qwen3-8B"}, "model: recorded 'Qwen/Qwen3-0.6B', query 'Qwen/Qwen3-8B'"),
        ({"hardware": "h100_sxm"}, "hardware: recorded 'cpu:AMD EPYC', query 'h100_sxm'"),
        ({"role": "aggregated"}, "role: recorded 'decode', query 'aggregated'"),
    ],
)
def test_other_identity_mismatches_are_refused(extra: dict[str, Any], text: str) -> None:
    with pytest.raises(ConfigError, match=text):
        best_available(_config(**extra))


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "dataset"
    target.mkdir()
    for name in ("sd_rounds.parquet", "sd_rounds.parquet.json"):
        shutil.copyfile(DATASET / name, target / name)
    return target / "sd_rounds.parquet"


def test_a_tampered_round_table_is_refused(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    assert len(load_table_models(copy)) == 4
    data = bytearray(copy.read_bytes())
    data[len(data) // 2] ^= 0x01
    copy.write_bytes(bytes(data))
    with pytest.raises(DataIntegrityError, match="SHA-256"):
        best_available(_config(tables=[str(copy)]))


def test_a_round_table_with_other_units_or_version_is_refused(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    sidecar_file = copy.with_name("sd_rounds.parquet.json")
    sidecar = json.loads(sidecar_file.read_text())
    sidecar["units"]["duration_ms"] = "s"
    sidecar_file.write_text(json.dumps(sidecar))
    with pytest.raises(DataIntegrityError, match="units.duration_ms: expected 'ms', got 's'"):
        load_table_models(copy)
    sidecar["units"]["duration_ms"] = "ms"
    sidecar["schema"]["version"] = 2
    sidecar_file.write_text(json.dumps(sidecar))
    with pytest.raises(DataIntegrityError, match="aisim.sd_rounds version 2 is not supported"):
        load_table_models(copy)


def test_a_round_table_without_a_draft_kind_is_refused(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    sidecar_file = copy.with_name("sd_rounds.parquet.json")
    sidecar = json.loads(sidecar_file.read_text())
    del sidecar["identity"]["draft"]["kind"]
    sidecar_file.write_text(json.dumps(sidecar))
    with pytest.raises(DataIntegrityError, match="identity.draft.kind: expected a non-empty"):
        load_table_models(copy)


def test_a_drafter_with_its_own_network_keeps_the_recorded_geometry_hash(tmp_path: Path) -> None:
    copy = _copy(tmp_path)
    sidecar_file = copy.with_name("sd_rounds.parquet.json")
    sidecar = json.loads(sidecar_file.read_text())
    sidecar["identity"]["draft"]["kind"] = "eagle3"
    sidecar_file.write_text(json.dumps(sidecar))
    digest = sidecar["identity"]["draft"]["geometry_sha256"]
    for model in load_table_models(copy):
        assert model.identity["kind"] == "eagle3"
        assert model.identity["draft_identity"] == f"recorded-geometry:{digest}"


def test_the_doc_example_runs_and_states_the_recorded_median(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = (ROOT / "docs" / "estimators.md").read_text()
    blocks = [b for b in text.split("```python\n") if "sd_rounds.parquet" in b.split("```")[0]]
    assert len(blocks) == 1
    code = blocks[0].split("```")[0]
    monkeypatch.chdir(ROOT)
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/estimators.md", "exec"), namespace)
    median = _expected_medians()[(2, 4, 1024)]
    assert namespace["model"].estimate_forward_pass_time_ms(ForwardPassMetrics(4, 1024)) == median
    assert f"# {median!r}  (d2-b4-k1024" in code
