"""Coverage of the intervals: held-out evidence and the plan's interval_coverage check."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import pytest

from aisim.uncertainty import CostErrorTable, ErrorSample, load_cost_errors
from qualification.plan import Criterion
from qualification.report._verdict import judge_criterion

ROOT = Path(__file__).resolve().parents[2]


def criterion(metric: str, threshold: float) -> Criterion:
    return Criterion(
        id=f"intervals/{metric}",
        check="interval_coverage",
        metric=metric,
        threshold=threshold,
        use="point",
        rationale="test",
    )


@pytest.mark.parametrize(
    ("metric", "threshold", "figures", "status"),
    [
        ("engine_min_coverage", 0.80, {"engine_min_coverage": 0.85}, "PASS"),
        ("engine_min_coverage", 0.80, {"engine_min_coverage": 0.70}, "FAIL"),
        ("engine_max_coverage", 0.97, {"engine_max_coverage": 1.0}, "FAIL"),
        ("engine_max_coverage", 0.97, {"engine_max_coverage": 0.9}, "PASS"),
        ("public_min_coverage", 0.80, {}, "NOT RUN"),
    ],
)
def test_the_plan_judges_coverage_between_its_bounds(metric, threshold, figures, status) -> None:
    report = {"interval_coverage": {"status": "run", "figures": figures}}
    assert judge_criterion(criterion(metric, threshold), report, ROOT)["status"] == status


def test_a_coverage_section_that_failed_fails_its_criteria() -> None:
    report = {"interval_coverage": {"status": "not run", "reason": "ValueError: boom"}}
    judged = judge_criterion(criterion("engine_min_coverage", 0.8), report, ROOT)
    assert judged["status"] == "FAIL" and "boom" in judged["reason"]


def test_leaving_a_recording_out_removes_its_samples_only() -> None:
    table = CostErrorTable(
        (
            ErrorSample("e", "decode", "r", "a/served-1", 1.1, "evidence/engine/a", "t"),
            ErrorSample(
                "e", "decode", "r", "a-ngram/served-1", 0.9, "evidence/engine/a-ngram", "t"
            ),
            ErrorSample("e", "decode", "r", "p", 0.8, "public.json#row-1", "t"),
        ),
        {"evidence/engine/a": {}, "evidence/engine/a-ngram": {}, "public.json": {}},
    )
    assert [s.ratio for s in table.excluding("evidence/engine/a").samples] == [0.9, 0.8]
    assert [s.ratio for s in table.excluding("evidence/engine").samples] == [0.8]
    assert [s.ratio for s in table.excluding("public.json").samples] == [1.1, 0.9]
    assert set(table.excluding("evidence/engine/a").sources) == {
        "evidence/engine/a-ngram",
        "public.json",
    }


def test_engine_coverage_is_judged_on_held_out_samples() -> None:
    from qualification.uncertainty._coverage import ENGINE_METRICS, engine_coverage

    evidence = ROOT / "evidence"
    full = load_cost_errors()
    result = engine_coverage(evidence, replicas=2, seed=0, table=full)
    assert len(result["runs"]) == 3 * len(
        [d for d in (evidence / "engine").iterdir() if (d / "grid").is_dir()]
    )
    for run in result["runs"]:
        assert f"evidence/engine/{run['recording']}" not in run["cost_samples_from"]
        assert "cost" in run["includes"]
        assert set(run["metrics"]) == set(ENGINE_METRICS)
    for share in result["coverage"].values():
        assert share["judged"] == len(result["runs"])
    # the vllm serve recordings measured through a probe carry their front end
    probed = [run for run in result["runs"] if run["recording"].endswith("-probed")]
    assert probed and all(run["frontend"]["request_ms"] > 0 for run in probed)
    assert all(run["frontend"] is None for run in result["runs"] if "vllm-cpu" in run["recording"])
    # ... priced as `aisim qualify engine` prices them: each run's point is that replay, the
    # front end's admission (and its share of the engine's core) included
    from qualification.engine import load_recording, score_recording

    name = "vllm-bench-llama-4x256-b32-high-probed"
    recording = load_recording(evidence / "engine" / name)
    assert recording.grid is not None
    scored, _ = score_recording(recording, recording.grid)
    points = [
        r["metrics"]["mean_ttft_ms"]["point"] for r in result["runs"] if r["recording"] == name
    ]
    assert points == pytest.approx([r["ttft"]["mean_predicted_ms"] for r in scored["runs"]])


def test_public_gpu_points_are_judged_against_their_intervals() -> None:
    from qualification.uncertainty._coverage import SERVING_METRICS, public_gpu_coverage

    # A point the hybrid terms were fitted on (Qwen3.8-27B HumanEval) is not held out.
    seen = public_gpu_coverage(
        ROOT / "evidence", replicas=2, select=lambda point: point["id"] == "spec/mtp/HumanEval/c1"
    )
    assert seen["points"] == 0
    # nor one the DSpark term was fitted on (HumanEval DSpark at 1..64 streams)
    seen = public_gpu_coverage(
        ROOT / "evidence",
        replicas=2,
        select=lambda point: point["id"] == "spec/dspark/HumanEval/c1",
    )
    assert seen["points"] == 0
    result = public_gpu_coverage(
        ROOT / "evidence",
        replicas=2,
        select=lambda point: point["id"] == "spec/mtp/math_reasoning/c1",
    )
    assert result["points"] == 1 and result["refused"] == []
    (point,) = result["judged"]
    assert set(point["metrics"]) == set(SERVING_METRICS)
    for item in point["metrics"].values():
        assert item["low"] <= item["high"]
        assert item["inside"] == (item["low"] <= item["measured"] <= item["high"])
    # vLLM's per-request overhead is drawn (the overhead source) and shifts TTFT only
    assert "overhead" in point["includes"]
    tpot = point["metrics"]["mean_tpot_ms"]
    assert tpot["without_overhead"]["low"] == tpot["low"]


def test_the_replayed_coverage_pools_the_committed_runs_plan_points(tmp_path: Path) -> None:
    # Two committed runs: an InferenceX MTP point whose interval did not draw its fitted
    # acceptance's spread (shown, not in the plan's figure) and two points in it, one inside only
    # with the overhead source's draw.
    from qualification.uncertainty._coverage import REPLAYED_DIR, replayed_coverage

    def point(group: str, plan: bool, inside: bool, plain: bool) -> dict[str, Any]:
        item = {"inside": inside, "without_overhead": {"inside": plain}}
        return {
            "id": group,
            "group": group,
            "judged_for_plan": plan,
            "metrics": {"median_ttft_ms": item},
        }

    folder = tmp_path / REPLAYED_DIR
    folder.mkdir(parents=True)
    runs = (
        [point("ix/mtp", False, False, False), point("ix/none", True, True, False)],
        [point("spec/none", True, False, False)],
    )
    for index, judged in enumerate(runs):
        document = {"command": "c", "replicas": 20, "seed": 0, "judged": judged}
        (folder / f"run{index}.json").write_text(json.dumps(document), encoding="utf-8")
    result = replayed_coverage(tmp_path)
    assert result["coverage"]["median_ttft_ms"] == {"inside": 1, "judged": 2, "coverage": 0.5}
    assert result["coverage_without_overhead"]["median_ttft_ms"]["inside"] == 0
    assert result["coverage_by_group"]["ix/mtp"]["median_ttft_ms"]["judged"] == 1
    assert [run["points"] for run in result["runs"]] == [2, 1]
    # runs that name no inputs (or other ones than the committed files) are not current
    assert [run["current"] for run in result["runs"]] == [False, False]


def test_the_committed_replayed_runs_name_their_inputs() -> None:
    from qualification.uncertainty._coverage import REPLAY_INPUTS, replayed_coverage

    result = replayed_coverage(ROOT / "evidence")
    assert {Path(run["file"]).name for run in result["runs"]} == {
        "inferencex-latest.json",
        "speculators.json",
    }
    for run in result["runs"]:
        document = json.loads((ROOT / run["file"]).read_text(encoding="utf-8"))
        assert sorted(document["inputs"]) == sorted(REPLAY_INPUTS)
        assert run["replicas"] == 20
        # Every InferenceX MTP point drew its fitted acceptance's spread and counts in the
        # plan's figure; the spreads drawn name H200 history pairs only.
        for row in document["judged"]:
            if row["group"] == "inferencex-latest/mtp":
                assert "acceptance" in row["includes"] and row["judged_for_plan"]
        for spread in document.get("acceptance_spreads", {}).values():
            assert all("/h200/" in pair and "ix-history-" in pair for pair in spread["pairs"])


def test_the_committed_cost_error_table_is_built_from_the_committed_evidence() -> None:
    from aisim.files import canonical_json
    from qualification.uncertainty._table import ABOUT, build_table

    committed = (ROOT / "aisim/uncertainty/cost_errors.v1.json").read_text(encoding="utf-8")
    assert canonical_json(build_table(ROOT).to_dict(ABOUT)) == committed, (
        "the evidence or its pricing changed: run python -m qualification.uncertainty build "
        "and review the diff"
    )


def test_the_sd_round_samples_are_residuals_after_the_version_term_on_its_held_out_rows() -> None:
    from qualification.uncertainty._table import round_samples

    setup: dict[str, Any] = {"role": "validation", "hardware": "h100_sxm", "batch": 1}
    data: dict[str, Any] = {
        "sd_round_setup": setup,
        "sd_round_ratios": [
            {"id": "k2", "draft_tokens": 2},
            {"id": "k4", "draft_tokens": 4},
            {"id": "k5", "draft_tokens": 5},
        ],
    }
    scored = {
        # k2 was the version term's training row: no sample, whatever its ratio
        "k2": {"measured": 1.0, "predicted": 2.0, "seen_by": ["draft_step_host_s"]},
        # measured 1.8 / predicted 2.0 = 0.9; 2.2 / 2.0 = 1.1
        "k4": {"measured": 1.8, "predicted": 2.0, "seen_by": []},
        "k5": {"measured": 2.2, "predicted": 2.0, "seen_by": []},
    }
    samples = round_samples(data, scored, "m.json")
    assert [s.group for s in samples] == ["public/k4", "public/k5"]
    assert [s.ratio for s in samples] == [pytest.approx(0.9), pytest.approx(1.1)]
    assert all(s.step_kind == "sd_round" and s.relative_to == "decode" for s in samples)
    assert samples[0].regime == "h100_sxm/eagle3/d4/B1"
    derivation = {**data, "sd_round_setup": {**setup, "role": "derivation"}}
    assert round_samples(derivation, scored, "m.json") == []

    # The committed table: the k = 4..7 rows only, at the version term's held-out errors
    # (docs/estimators.md "The version term": +4.2, +5.6, +9.9, +14.9 % predicted over measured,
    # so measured / predicted = 1 / 1.042, 1 / 1.056, 1 / 1.099, 1 / 1.149).
    table = load_cost_errors()
    rounds = [s for s in table.for_estimator("roofline") if s.step_kind == "sd_round"]
    assert [s.group for s in rounds] == [f"public/vllm-20780/eagle3/k{k}" for k in (4, 5, 6, 7)]
    expected = [1 / 1.042, 1 / 1.056, 1 / 1.099, 1 / 1.149]
    assert [s.ratio for s in rounds] == [pytest.approx(v, abs=1e-3) for v in expected]


def write_public_rows(root: Path, header: list[str], rows: list[dict[str, object]]) -> None:
    """The scored public GPU rows under ``root`` and a fitted_terms.json whose training rows
    are h0..h19 (the rows a term was fitted on; the others are held out)."""
    from qualification.uncertainty._coverage import PUBLIC_GPU_ROWS

    file = root / PUBLIC_GPU_ROWS
    file.parent.mkdir(parents=True)
    with file.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, header, restval="")
        writer.writeheader()
        writer.writerows(rows)
    training = {"training_ids": [f"h{index}" for index in range(20)]}
    (file.parent.parent / "fitted_terms.json").write_text(json.dumps(training), "utf-8")


def test_serving_coverage_applies_the_fitted_rows_ratio_range_to_held_out_points(
    tmp_path: Path,
) -> None:
    # 20 fitted history rows with TPOT measured / predicted 0.80, 0.81, ..., 0.99: the 5-95 %
    # range (nearest rank) is the 1st and 19th smallest, [0.80, 0.98]. Held out: a latest point
    # at 49 / 50 = 0.98 (inside), one at 49.5 / 50 = 0.99 (outside) and an MTP point (shown, not in the figure); the
    # history row not fitted on and a dynamo row are neither fitted on nor judged.

    from qualification.uncertainty._coverage import serving_coverage

    names = ["median_ttft_ms", "mean_tpot_ms", "median_tpot_ms", "output_tput_per_gpu"]
    header = ["id", "source", "sd"] + [f"{n}_{k}" for n in names for k in ("measured", "predicted")]
    rows = []
    for index in range(20):
        rows.append(
            {
                "id": f"h{index}",
                "source": "inferencex-history",
                "sd": "none",
                "median_tpot_ms_measured": 80 + index,
                "median_tpot_ms_predicted": 100,
            }
        )
    rows.append(
        {
            "id": "h-out",
            "source": "inferencex-history",
            "sd": "none",
            "median_tpot_ms_measured": 500,
            "median_tpot_ms_predicted": 100,
        }
    )
    rows.append(
        {
            "id": "in",
            "source": "inferencex-latest",
            "sd": "none",
            "mean_tpot_ms_measured": 49,
            "mean_tpot_ms_predicted": 50,
        }
    )
    rows.append(
        {
            "id": "out",
            "source": "inferencex-latest",
            "sd": "none",
            "mean_tpot_ms_measured": 49.5,
            "mean_tpot_ms_predicted": 50,
        }
    )
    rows.append(
        {
            "id": "sd",
            "source": "speculators",
            "sd": "mtp",
            "mean_tpot_ms_measured": 5,
            "mean_tpot_ms_predicted": 10,
        }
    )
    write_public_rows(tmp_path, header, rows)
    result = serving_coverage(tmp_path)
    assert result["ratio_ranges"]["mean_tpot_ms"] == {"p05": 0.8, "p95": 0.98, "rows": 20}
    points = {point["id"]: point for point in result["points"]}
    assert set(points) == {"in", "out", "sd"}
    assert points["in"]["metrics"]["mean_tpot_ms"]["inside"] is True
    assert points["out"]["metrics"]["mean_tpot_ms"]["inside"] is False
    assert points["in"]["metrics"]["mean_tpot_ms"]["high"] == pytest.approx(49.0)
    assert result["coverage"]["mean_tpot_ms"] == {"inside": 1, "judged": 2, "coverage": 0.5}
    assert result["coverage_by_group"]["speculators/mtp"]["mean_tpot_ms"]["judged"] == 1


def test_the_plan_figures_come_from_serving_points_and_step_rows_apart() -> None:
    from qualification.uncertainty._coverage import public_coverage, serving_coverage

    serving = serving_coverage(ROOT)
    shares = [item["coverage"] for item in serving["coverage"].values()]
    assert all(item["judged"] > 0 for item in serving["coverage"].values())
    assert 0.0 <= min(shares) <= max(shares) <= 1.0
    step = public_coverage()
    # every step row is judged on the other rows of its kind (5 of 6), never on itself; the
    # decode rows are shown against the pooled GPU serving decode samples too
    decode = [row for row in step["rows"] if row["quantity"] == "decode_ms"]
    assert decode and all(row["samples"] == len(decode) - 1 for row in decode)
    assert all(row["pooled_serving"]["samples"] > 100 for row in decode)
    rounds = [row for row in step["rows"] if row["quantity"] == "round_over_stp"]
    assert rounds and all(row["samples"] == len(rounds) - 1 for row in rounds)
    # with the repository, the serving sweep's held-out round / plain-step ratios (MTP and
    # DSpark math_reasoning, 8 concurrencies each) are judged on all the step rows' samples
    served = public_coverage(root=ROOT)["rows"]
    derived = [row for row in served if "derived_from" in row]
    assert len(derived) == 16 and all(row["samples"] == len(rounds) for row in derived)
    assert all("math_reasoning" in row["id"] for row in derived)


def test_a_step_row_is_judged_on_a_t_prediction_interval_of_the_others() -> None:
    from qualification.uncertainty._coverage import prediction_interval

    # Log ratios -0.1, 0, 0.1: mean 0, sample sd 0.1, n = 3; Student's t at 0.95 with 2
    # degrees of freedom is 2.920 (tables), so the half width is 2.920 x 0.1 x sqrt(4/3) =
    # 0.3372 and the interval exp(-/+ 0.3372) = [0.7138, 1.4010].
    low, high = prediction_interval([math.exp(-0.1), 1.0, math.exp(0.1)])
    assert (low, high) == (pytest.approx(0.7138, abs=2e-4), pytest.approx(1.4010, abs=2e-4))
    # Five ratios: t(0.95, 4) = 2.132, sqrt(1 + 1/5) = 1.0954. Logs -0.2, -0.1, 0, 0.1, 0.2:
    # sd sqrt(0.1 / 4) = 0.1581, half width 0.3693: exp(-/+ 0.3693) = [0.6912, 1.4467].
    low, high = prediction_interval([math.exp(v) for v in (-0.2, -0.1, 0.0, 0.1, 0.2)])
    assert (low, high) == (pytest.approx(0.6912, abs=2e-4), pytest.approx(1.4467, abs=2e-4))
    # The min-max of those five would be [0.8187, 1.2214]: a 4/6 interval, far narrower.
    with pytest.raises(ValueError):
        prediction_interval([1.0])


def test_ttft_of_an_engine_without_fitted_rows_is_judged_on_its_other_groups(
    tmp_path: Path,
) -> None:
    # 20 fitted SGLang history rows, TTFT and TPOT measured / predicted 1.0. vLLM (no fitted
    # row) speculators points: no SD at TTFT ratio 5.0; MTP at 4.0, 4.5, 5.5, 6.0. The no-SD
    # point's TTFT range is the MTP group's 5-95 % (nearest rank of 4: 1st and 4th), [4.0, 6.0]:
    # inside. Each MTP point's range is the no-SD group's single ratio, [5.0, 5.0]: outside.
    # TPOT keeps the fitted rows' range [1.0, 1.0] whatever the engine.

    from qualification.uncertainty._coverage import serving_coverage

    header = ["id", "source", "engine", "sd"] + [
        f"{n}_{k}" for n in ("median_ttft_ms", "mean_tpot_ms") for k in ("measured", "predicted")
    ]
    rows = [
        {
            "id": f"h{index}",
            "source": "inferencex-history",
            "engine": "sglang",
            "sd": "none",
            "median_ttft_ms_measured": 100,
            "median_ttft_ms_predicted": 100,
            "mean_tpot_ms_measured": 10,
            "mean_tpot_ms_predicted": 10,
        }
        for index in range(20)
    ]
    for name, sd, ttft in [("none", "none", 5.0)] + [
        (f"mtp{i}", "mtp", value) for i, value in enumerate((4.0, 4.5, 5.5, 6.0))
    ]:
        rows.append(
            {
                "id": name,
                "source": "speculators",
                "engine": "vllm",
                "sd": sd,
                "median_ttft_ms_measured": 100 * ttft,
                "median_ttft_ms_predicted": 100,
                "mean_tpot_ms_measured": 12,
                "mean_tpot_ms_predicted": 10,
            }
        )
    write_public_rows(tmp_path, header, rows)
    result = serving_coverage(tmp_path)
    points = {point["id"]: point["metrics"] for point in result["points"]}
    assert (points["none"]["median_ttft_ms"]["low"], points["none"]["median_ttft_ms"]["high"]) == (
        400.0,
        600.0,
    )
    assert points["none"]["median_ttft_ms"]["inside"] is True
    assert [points[f"mtp{i}"]["median_ttft_ms"]["inside"] for i in range(4)] == [False] * 4
    assert points["mtp0"]["median_ttft_ms"]["high"] == 500.0
    assert points["none"]["mean_tpot_ms"]["high"] == 10.0
    assert points["none"]["mean_tpot_ms"]["inside"] is False
    ranges = result["ttft_ranges_by_engine"]
    assert ranges["fitted_engines"] == ["sglang"]
    assert ranges["ranges"]["vllm"]["speculators/none"]["rows"] == 4


@pytest.mark.parametrize(
    "name", ["vllm-cpu-quiet-llama-4x256", "vllm-bench-llama-4x256-b32-high-probed"]
)
def test_every_source_off_each_run_is_the_point_aisim_qualify_engine_replays(
    tmp_path: Path, name: str
) -> None:
    """Every source off: each served run's interval is zero-width at the point ``aisim qualify
    engine`` replays for that run (``score_recording``: one engine process's primitive caches
    carried from run to run). Before the fix the replicas shared the point's model and started
    with the caches it left, so served-1 of the quiet CPU recording sat at 21.73 ms mean TTFT
    (the caches after served-1) against its point of 24.28 ms."""
    from aisim.uncertainty import Sources
    from qualification.engine import load_recording
    from qualification.engine._score import score_recording
    from qualification.uncertainty._coverage import engine_coverage

    (tmp_path / "engine").mkdir()
    (tmp_path / "engine" / name).symlink_to(ROOT / "evidence" / "engine" / name)
    result = engine_coverage(tmp_path, replicas=2, seed=0, sources=Sources.parse("none"))
    recording = load_recording(ROOT / "evidence" / "engine" / name)
    assert recording.grid is not None
    scored, _ = score_recording(recording, recording.grid)
    assert [run["run"] for run in result["runs"]] == [run["run"] for run in scored["runs"]]
    assert len(result["runs"]) == 3
    for run, figures in zip(result["runs"], scored["runs"], strict=True):
        for metric, item in run["metrics"].items():
            assert item["low"] == item["high"] == item["point"], (run["run"], metric)
        for figure in ("ttft", "tpot", "e2e"):
            point = run["metrics"][f"mean_{figure}_ms"]["point"]
            assert point == pytest.approx(figures[figure]["mean_predicted_ms"], rel=1e-9)
    if name == "vllm-cpu-quiet-llama-4x256":
        # served-1 starts with empty caches, served-2 and served-3 with the warm ones
        ttft = [run["metrics"]["mean_ttft_ms"]["point"] for run in result["runs"]]
        assert ttft == pytest.approx([24.28, 21.73, 21.73], abs=0.005)
