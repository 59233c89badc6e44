"""The per-request overhead before the first token (source ``overhead``): the interval a
two-point error distribution gives, switching it off, an engine without evidence, the regime a
replay draws from (its concurrency band, or all the engine's samples), the leave-own-row-out
residuals of the table builder, a malformed sample, the committed samples."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from single_request import single_request

from aisim.errors import DataIntegrityError
from aisim.uncertainty import (
    MIN_REGIME_OVERHEADS,
    CostErrorTable,
    OverheadSample,
    Sources,
    load_cost_errors,
    overhead_regime,
    replay_intervals,
)

ROOT = Path(__file__).resolve().parents[2]
ONLY_OVERHEAD = Sources(False, False, False, False, False, False, True)


def two_points() -> CostErrorTable:
    # SGLang's overhead was 4 ms too high on one fitted point, 6 ms too low on another.
    return CostErrorTable(
        (),
        overheads=(
            OverheadSample("sglang", "p/a", "rows.csv#a", "t", -4.0),
            OverheadSample("sglang", "p/b", "rows.csv#b", "t", 6.0),
        ),
    )


def intervals(table: CostErrorTable, **kwargs: Any) -> dict[str, Any]:
    return replay_intervals(
        single_request(),
        20,
        seed=3,
        sources=kwargs.get("sources", ONLY_OVERHEAD),
        table=table,
        request_overhead=kwargs.get("engine", "sglang"),
    )


def test_a_two_point_overhead_error_gives_the_exact_interval() -> None:
    # One request, every draft accepted: TTFT 10 ms, E2E 40 ms, TPOT 30 / 12 = 2.5 ms in every
    # replay. Each replica adds -4 or +6 ms to its TTFT and E2E (time before the first token):
    # TTFT [6, 16], E2E [36, 46]; TPOT and throughput are not moved (the replay is the same).
    report = intervals(two_points())
    metrics = report["metrics"]
    assert (metrics["mean_ttft_ms"]["low"], metrics["mean_ttft_ms"]["high"]) == (6.0, 16.0)
    assert (metrics["p90_ttft_ms"]["low"], metrics["p90_ttft_ms"]["high"]) == (6.0, 16.0)
    assert (metrics["mean_e2e_ms"]["low"], metrics["mean_e2e_ms"]["high"]) == (36.0, 46.0)
    assert metrics["mean_ttft_ms"]["point"] == 10.0 and metrics["mean_e2e_ms"]["point"] == 40.0
    tpot = metrics["mean_tpot_ms"]
    assert tpot["low"] == tpot["high"] == tpot["point"] == 2.5
    rps = metrics["request_throughput_rps"]
    assert rps["low"] == rps["high"] == rps["point"]
    assert report["includes"] == ["overhead"]
    detail = report["sources"]["overhead"]["detail"][0]
    assert detail["samples"] == 2 and detail["residual_ms"] == {
        "p05": -4.0,
        "p50": -4.0,
        "p95": 6.0,
    }
    # the same seed, the same bounds and the same p50
    assert intervals(two_points())["metrics"] == metrics


def test_switched_off_without_an_engine_or_evidence_is_the_point() -> None:
    for table, engine, sources in (
        (two_points(), "sglang", Sources(True, True, True, True, True, True, False)),
        (two_points(), "sglang", Sources.parse("none")),
        (two_points(), "trt", ONLY_OVERHEAD),  # no samples for that engine
        (CostErrorTable(()), "sglang", ONLY_OVERHEAD),
        (two_points(), None, ONLY_OVERHEAD),  # no overhead priced by the caller
    ):
        report = intervals(table, engine=engine, sources=sources)
        for name in ("mean_ttft_ms", "mean_e2e_ms"):
            item = report["metrics"][name]
            assert item["low"] == item["p50"] == item["high"] == item["point"]
        assert "overhead" not in report["includes"]
    report = intervals(two_points(), engine="trt")
    assert "no overhead evidence for engine 'trt'" in report["sources"]["overhead"]["detail"][0]
    report = intervals(two_points(), engine=None)
    assert "no per-request overhead priced" in report["sources"]["overhead"]["detail"][0]
    assert Sources.parse("overhead") == ONLY_OVERHEAD
    assert Sources.parse("none") == Sources(False, False, False, False, False, False, False)


def test_the_regime_is_the_concurrency_band() -> None:
    # The bands of the public GPU scored run: 1-8, 9-64, above 64 concurrent requests.
    assert [overhead_regime(users) for users in (1, 8, 9, 16, 64, 65, 128, 512)] == [
        "conc<=8",
        "conc<=8",
        "conc16-64",
        "conc16-64",
        "conc16-64",
        "conc>=128",
        "conc>=128",
        "conc>=128",
    ]


def by_regime() -> CostErrorTable:
    # SGLang: 20 points at 1-8 streams 4 ms under, 20 above 64 streams 30 ms over, 5 at 9-64
    # streams 100 ms over (fewer than the 20 a regime needs); TensorRT-LLM: 3 points at 1-8.
    low = [OverheadSample("sglang", f"p/l{i}", f"r#l{i}", "t", -4.0, "conc<=8") for i in range(20)]
    high = [
        OverheadSample("sglang", f"p/h{i}", f"r#h{i}", "t", 30.0, "conc>=128") for i in range(20)
    ]
    middle = [
        OverheadSample("sglang", f"p/m{i}", f"r#m{i}", "t", 100.0, "conc16-64") for i in range(5)
    ]
    trt = [OverheadSample("trt", f"p/t{i}", f"r#t{i}", "t", 7.0, "conc<=8") for i in range(3)]
    return CostErrorTable((), overheads=tuple(low + high + middle + trt))


def test_a_point_draws_from_its_regime_or_else_all_the_engines_samples() -> None:
    assert MIN_REGIME_OVERHEADS == 20
    table = by_regime()

    def drawn(engine: str, regime: str | None) -> list[float]:
        return sorted({s.residual_ms for s in table.overheads_drawn(engine, regime)})

    assert drawn("sglang", "conc<=8") == [-4.0]
    assert drawn("sglang", "conc>=128") == [30.0]
    # 5 points at 9-64 streams are too few: every SGLang point's error (45), as for a load
    # without a regime
    assert drawn("sglang", "conc16-64") == drawn("sglang", None) == [-4.0, 30.0, 100.0]
    assert len(table.overheads_drawn("sglang", "conc16-64")) == 45
    # TensorRT-LLM has 3 points, all at 1-8 streams: fewer than 20, so all of them
    assert len(table.overheads_drawn("trt", "conc<=8")) == 3
    assert table.describe_overheads("trt", "conc<=8")["drawn_from"] == "all"
    assert table.describe_overheads("sglang", "conc>=128")["drawn_from"] == "conc>=128"
    assert table.overheads_drawn("vllm", "conc<=8") == []


def at_load(load: dict[str, Any]) -> dict[str, Any]:
    config = single_request()
    config["traffic"]["load"] = load
    return config


def test_a_replay_draws_the_regime_of_its_closed_loop() -> None:
    # The single request's TTFT is 10 ms in every replay (one request: the closed loop's other
    # users have nothing to send). 4 users: the 1-8 regime, every replica -4 ms: [6, 6]; 100
    # users: above 64, +30 ms: [40, 40]; 32 users (too few points there) and a constant rate
    # (no regime): all 45 SGLang points, so each replica is 6, 40 or 110 ms.
    def ttft(load: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        report = replay_intervals(
            at_load(load),
            20,
            seed=3,
            sources=ONLY_OVERHEAD,
            table=by_regime(),
            request_overhead="sglang",
        )
        return report["metrics"]["mean_ttft_ms"], report["sources"]["overhead"]["detail"][0]

    item, detail = ttft({"type": "concurrency", "users": 4})
    assert (item["point"], item["low"], item["high"]) == (10.0, 6.0, 6.0)
    assert (detail["regime"], detail["drawn_from"], detail["samples"]) == ("conc<=8", "conc<=8", 20)
    item, detail = ttft({"type": "concurrency", "users": 100})
    assert (item["low"], item["high"]) == (40.0, 40.0)
    assert (detail["regime"], detail["drawn_from"]) == ("conc>=128", "conc>=128")
    for load in ({"type": "concurrency", "users": 32}, {"type": "constant", "rate_rps": 1}):
        item, detail = ttft(load)
        assert 6.0 <= item["low"] <= item["high"] <= 110.0
        assert detail["drawn_from"] == "all" and detail["samples"] == 45


def test_leaving_a_row_out_drops_its_error() -> None:
    held_out = two_points().excluding("rows.csv#a")
    assert [s.group for s in held_out.overheads] == ["p/b"]
    metrics = intervals(held_out)["metrics"]
    assert metrics["mean_ttft_ms"]["low"] == metrics["mean_ttft_ms"]["high"] == 16.0


def test_the_builder_refits_the_overhead_without_each_row(tmp_path: Path) -> None:
    # A fitted overhead of 20 ms on three rows; a row's gap is measured - (predicted - 20):
    # a: 50 - 30 = 20, b: 40 - 30 = 10, c: 80 - 30 = 50; the median of all is 20.
    # Without a: median(10, 50) = 30, so a's residual is (50 - 50) - (30 - 20) = -10;
    # without b: median(20, 50) = 35: (40 - 50) - 15 = -25; without c: median(20, 10) = 15:
    # (80 - 50) - (15 - 20) = 35. A training row above concurrency 8 was not in the fit: its
    # residual is measured - predicted (d: 500 - 50 = 450, at 16 streams; f: 90 - 100 = -10,
    # at 256). A row with SD gives none (InferenceX's overhead is fitted without SD), nor a
    # row that is no training row (g).
    from qualification.uncertainty._table import overhead_samples

    folder = tmp_path / "evidence/public-gpu"
    (folder / "scored").mkdir(parents=True)
    fitted = {
        "training_ids": ["a", "b", "c", "d", "e", "f"],
        "request_overhead_ms": {"sglang": {"ms": 20.0, "rows": 3}},
    }
    (folder / "fitted_terms.json").write_text(json.dumps(fitted), encoding="utf-8")
    fields = ["id", "engine", "conc", "sd", "median_ttft_ms_measured", "median_ttft_ms_predicted"]
    rows = [
        ("a", "sglang", 4, "none", 50, 50),
        ("b", "sglang", 1, "none", 40, 50),
        ("c", "sglang", 8, "none", 80, 50),
        ("d", "sglang", 16, "none", 500, 50),
        ("e", "sglang", 4, "mtp", 500, 50),
        ("f", "sglang", 256, "none", 90, 100),
        ("g", "sglang", 4, "none", 900, 50),
    ]
    with (folder / "scored/public_gpu_rows.csv").open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(fields)
        writer.writerows(rows)
    found = overhead_samples(tmp_path)
    assert [(s.engine, s.group, s.residual_ms, s.regime) for s in found] == [
        ("sglang", "public-gpu/a", -10.0, "conc<=8"),
        ("sglang", "public-gpu/b", -25.0, "conc<=8"),
        ("sglang", "public-gpu/c", 35.0, "conc<=8"),
        ("sglang", "public-gpu/d", 450.0, "conc16-64"),
        ("sglang", "public-gpu/f", -10.0, "conc>=128"),
    ]


def test_a_malformed_overhead_sample_is_a_one_line_error(tmp_path: Path) -> None:
    document = two_points().to_dict()
    document["overhead_samples"][1]["residual_ms"] = "six"
    path = tmp_path / "table.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DataIntegrityError, match=r"overhead_samples\[1\]\.residual_ms: expected"):
        load_cost_errors(path)
    document["overhead_samples"][1]["residual_ms"] = 6.0
    del document["overhead_samples"][1]["engine"]
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(DataIntegrityError, match=r"overhead_samples\[1\]\.engine: missing"):
        load_cost_errors(path)


def test_the_committed_overhead_samples_are_the_fits_training_rows() -> None:
    # SGLang's and TensorRT-LLM's overheads were fitted on the InferenceX history rows without
    # SD at concurrency <= 8 (80 and 69 rows), vLLM's on the 8 HumanEval points of the hybrid
    # fit at concurrency <= 8 (fitted_terms.json): one sample per row at 1-8 streams; the fits'
    # other training rows give one each in their own regime. None of them is held out.
    fitted = json.loads((ROOT / "evidence/public-gpu/fitted_terms.json").read_text("utf-8"))
    table = load_cost_errors()
    low = {
        engine: sum(s.regime == "conc<=8" for s in table.overheads_for(engine))
        for engine in ("sglang", "trt", "vllm")
    }
    assert low == {
        "sglang": fitted["request_overhead_ms"]["sglang"]["rows"],
        "trt": fitted["request_overhead_ms"]["trt"]["rows"],
        "vllm": fitted["hybrid"]["request_overhead_ms"]["rows"],
    }
    assert len(table.overheads_for("vllm")) == len(fitted["hybrid"]["training_ids"])
    seen = set(fitted["training_ids"]) | set(fitted["hybrid"]["training_ids"])
    assert all(s.source.split("#", 1)[1] in seen for s in table.overheads)
    assert {s.regime for s in table.overheads} == {"conc<=8", "conc16-64", "conc>=128"}


def test_serving_round_ratios_are_the_sd_and_plain_tpot_errors_ratio(tmp_path: Path) -> None:
    # The sweep's raw files, with a hand-made scored table: the no-SD point at 1 stream measured
    # 10 ms (replayed 8), the MTP point 5 ms (replayed 5): measured round / plain step =
    # 5 x AL / 10 = AL / 2, replayed 5 x AL / 8, so measured / replayed = 8 / 10 = 0.8 whatever
    # the acceptance length AL. The DSpark point is a fitted term's training row: left out.
    from qualification.uncertainty._coverage import serving_round_ratios

    folder = tmp_path / "evidence/public-gpu"
    (folder / "scored").mkdir(parents=True)
    for name in (
        "inferencex_dsr1_h100_h200_b200.json",
        "speculators_qwen3_8_27b_b200_vllm_sd.json",
    ):
        (folder / name).symlink_to(ROOT / "evidence/public-gpu" / name)
    fitted = {"training_ids": [], "dspark": {"training_ids": ["spec/dspark/math_reasoning/c1"]}}
    (folder / "fitted_terms.json").write_text(json.dumps(fitted), encoding="utf-8")
    with (folder / "scored/public_gpu_rows.csv").open("w", encoding="utf-8", newline="") as out:
        writer = csv.writer(out)
        writer.writerow(["id", "mean_tpot_ms_measured", "mean_tpot_ms_predicted"])
        writer.writerow(["spec/baseline/math_reasoning/c1", 10, 8])
        writer.writerow(["spec/mtp/math_reasoning/c1", 5, 5])
        writer.writerow(["spec/dspark/math_reasoning/c1", 4, 3])
    (found,) = serving_round_ratios(tmp_path)
    assert found["id"] == "spec/mtp/math_reasoning/c1"
    assert found["measured"] / found["predicted"] == pytest.approx(0.8)
    length = found["measured"] * 2.0  # AL / 2
    assert found["predicted"] == pytest.approx(5.0 * length / 8.0)
    assert 1.0 < length <= 3.0  # MTP with 2 drafts: between 1 and 3 tokens per round


def test_a_bad_sources_list_for_the_public_gpu_run_is_a_one_line_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from qualification.uncertainty.__main__ import main

    assert main(["coverage-public-gpu", "--sources", "cost,overheads"]) == 2
    error = capsys.readouterr().err.strip()
    assert error.count("\n") == 0 and "--sources" in error and "'cost,overheads'" in error
