"""The public-GPU harness: workloads as run, refusals counted, errors and SD pairs by hand."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from qualification.public_gpu import Refusal, load_points, replay_config
from qualification.public_gpu._score import score_rows, sd_pairs
from qualification.public_gpu._workload import sglang_settings, trt_settings

EVIDENCE = Path(__file__).resolve().parents[2] / "evidence" / "public-gpu"


def _point(**changes: Any) -> dict[str, Any]:
    point: dict[str, Any] = {
        "id": "p",
        "source": "inferencex-latest",
        "model": "deepseek-ai/DeepSeek-R1",
        "hardware": "h200",
        "engine": "sglang",
        "precision": "fp8",
        "sd": "none",
        "tp": 8,
        "ep": 1,
        "dp_attention": False,
        "disaggregated": False,
        "multinode": False,
        "isl": 1024,
        "osl": 1024,
        "conc": 64,
        "also_in_latest": False,
        "dataset": "random 1024/1024",
    }
    point.update(changes)
    return point


def test_every_committed_point_is_built_or_refused_with_a_reason() -> None:
    points = load_points(EVIDENCE)
    assert len(points) == 826 + 50
    reasons: dict[str, int] = {}
    for point in points:
        try:
            replay_config(point)
        except Refusal as exc:
            assert "\n" not in str(exc)
            reasons[str(exc)] = reasons.get(str(exc), 0) + 1
    # 196 disaggregated dynamo rows on H100/H200/B200 and the 2 diagnostic reruns; the 16
    # DSpark k=7 points are replayed (chains up to 64 drafts).
    assert sum(reasons.values()) == 196 + 2
    assert sum(n for r, n in reasons.items() if "disaggregated" in r) == 196


def test_dspark_points_replay_with_their_measured_acceptance() -> None:
    (point,) = [p for p in load_points(EVIDENCE) if p["id"] == "spec/dspark/HumanEval/c16"]
    config, settings = replay_config(point)
    speculation = config["engine"]["speculation"]
    assert speculation["kind"] == "dspark"
    assert speculation["params"]["num_draft_tokens"] == 7
    # The CSV's acceptance length 3.4499 counts the bonus token: 2.4499 accepted drafts a round.
    assert speculation["expected_accepted_tokens"] == pytest.approx(2.4499, abs=1e-4)
    # README: 544k KV token slots with the drafter loaded, in 16-token blocks.
    assert config["engine"]["workers"]["aggregated"]["kv_cache"]["capacity"]["blocks"] == 34000
    assert "assumed" in settings["drafter"]


def test_inferencex_workload_is_the_benchmark_client_as_run() -> None:
    # benchmark_serving: 10 x conc prompts, conc in flight, lengths uniform in [0.8 L, L].
    config, settings = replay_config(_point(isl=8192, osl=1024, conc=32))
    traffic = config["traffic"]
    assert traffic["source"]["num_requests"] == 320
    assert traffic["source"]["prompt_tokens"] == {"type": "uniform", "min": 6553, "max": 8192}
    assert traffic["source"]["output_tokens"] == {"type": "uniform", "min": 819, "max": 1024}
    assert traffic["load"] == {"type": "concurrency", "users": 32, "queue": "shared"}
    # dsr1_fp8_h200.sh, ISL/OSL other than 1k/1k: --max-running-requests 256,
    # --chunked-prefill-size 32768, --mem-fraction-static 0.82, KV at the model dtype.
    worker = config["engine"]["workers"]["aggregated"]
    # The H200 script leaves --scheduler-recv-interval at SGLang's default 1.
    assert worker["scheduler"] == {
        "chunked_prefill_size": 32768,
        "max_running_requests": 256,
        "scheduler_recv_interval": 1,
    }
    assert worker["timing"]["deployment"]["weights"] == "fp8"
    assert settings["script"].endswith("dsr1_fp8_h200.sh")


def test_trt_limits_follow_the_script_formulas() -> None:
    # dsr1_fp4_b200_trt_mtp.sh with attention DP at conc 64: MAX_BATCH_SIZE = 64 / 4 = 16,
    # MTP = 1, MAX_NUM_TOKENS = ((1 + 1) x 16 + 1024 + 64 + 63) // 64 x 64 = 1152.
    point = _point(hardware="b200", engine="trt", precision="fp4", sd="mtp", tp=4, ep=4)
    point.update(dp_attention=True, conc=64)
    settings = trt_settings(point)
    assert (settings["max_batch_size"], settings["mtp_layers"]) == (16, 1)
    assert settings["max_num_tokens"] == 1152
    config, _ = replay_config(point)
    worker = config["engine"]["workers"]["aggregated"]
    assert worker["parallelism"] == {"tensor": 1, "attention_data": 4}
    assert config["engine"]["speculation"]["params"] == {"depth": 1}
    # Without MTP: max(8192, (conc + ISL + 64 + 63) // 64 x 64) = 8192 at conc 64.
    assert trt_settings(_point(engine="trt", conc=64))["max_num_tokens"] == 8192


def test_sglang_b200_fp8_tp4_limits() -> None:
    # dsr1_fp8_b200.sh, TP 4: max-running 32, chunked prefill 8192, mem fraction 0.95.
    settings = sglang_settings(_point(hardware="b200", tp=4, isl=8192))
    assert settings["max_running_requests"] == 32
    assert settings["chunked_prefill_size"] == 8192
    assert settings["memory_fraction"] == 0.95
    assert settings["scheduler_recv_interval"] == 10


@pytest.mark.parametrize(
    ("sd", "running", "memory", "commit"),
    [("mtp", 512, 0.82, "1b234994"), ("none", 256, 0.85, "843c6254")],
)
def test_sglang_b200_fp4_limits_as_run(sd: str, running: int, memory: float, commit: str) -> None:
    # dsr1_fp4_b200_mtp.sh as its runs (2026-05-20) used it, 292726bb / 1b234994: max-running
    # 512, mem fraction 0.82 (53973500, 2026-07-02, after them: 256, 0.85); dsr1_fp4_b200.sh
    # kept 256 and 0.85 through 843c6254.
    settings = sglang_settings(_point(hardware="b200", precision="fp4", sd=sd, conc=512))
    assert settings["max_running_requests"] == running
    assert settings["memory_fraction"] == memory
    assert settings["chunked_prefill_size"] == 16384
    assert f"InferenceX@{commit}:" in settings["script"]


@pytest.mark.parametrize(
    ("changes", "interval"),
    [
        ({"conc": 8}, 10),
        ({"conc": 16}, 30),
        ({"conc": 64, "precision": "fp4"}, 30),
        ({"conc": 64, "precision": "fp4", "dp_attention": True}, 1),
        ({"conc": 4, "sd": "mtp"}, 10),
    ],
)
def test_sglang_b200_scheduler_recv_interval(changes: dict[str, Any], interval: int) -> None:
    # dsr1_{fp8,fp4}_b200{,_mtp}.sh: SCHEDULER_RECV_INTERVAL 10, 30 from CONC 16, 1 with DP
    # attention.
    settings = sglang_settings(_point(hardware="b200", **changes))
    assert settings["scheduler_recv_interval"] == interval


@pytest.mark.parametrize(
    ("changes", "needle"),
    [
        ({"engine": "dynamo-sglang", "disaggregated": True, "multinode": True}, "disaggregated"),
        ({"engine": "atom"}, "unknown engine 'atom'"),
        ({"tp": None}, "parallelism not recorded"),
        # These raised TypeError / AssertionError from deep in the builder.
        ({"isl": None}, "^isl: expected a positive integer as run, got None$"),
        ({"conc": None}, "^conc: expected a positive integer as run, got None$"),
        ({"conc": 0}, "^conc: expected a positive integer as run, got 0$"),
        ({"tp": 0}, "^tp: expected a positive integer as run, got 0$"),
        ({"model": "x/y"}, "^model 'x/y' is not in the catalogue$"),
        ({"hardware": "mi300x"}, "^hardware 'mi300x' is not in the catalogue$"),
        ({"source": "speculators", "sd": "mtp", "conc": None}, "^conc: expected a positive"),
    ],
)
def test_unreproducible_rows_are_refused_in_one_line(changes: dict[str, Any], needle: str) -> None:
    with pytest.raises(Refusal, match=needle) as refused:
        replay_config(_point(**changes))
    assert "\n" not in str(refused.value)


def _scored(point_id: str, sd: str, tpot: tuple[float, float], tput: tuple[float, float]) -> Any:
    return {
        **_point(id=point_id, sd=sd),
        "citation": {},
        "settings": {},
        "measured": {
            "median_ttft_ms": 100.0,
            "mean_tpot_ms": tpot[0],
            "median_tpot_ms": tpot[0],
            "tput_per_gpu": tput[0],
        },
        "predicted": {
            "median_ttft_ms": 125.0,
            "mean_tpot_ms": tpot[1],
            "median_tpot_ms": tpot[1],
            "tput_per_gpu": tput[1],
        },
    }


def test_errors_and_the_mtp_pair_by_hand() -> None:
    rows = score_rows(
        [
            _scored("none", "none", (20.0, 16.0), (1000.0, 1200.0)),
            _scored("mtp", "mtp", (10.0, 9.6), (1800.0, 2040.0)),
        ]
    )
    assert rows[0]["error_pct"]["median_ttft_ms"] == 25.0
    assert rows[0]["error_pct"]["mean_tpot_ms"] == -20.0
    assert rows[1]["step_kind"] == "sd_round"
    (pair,) = sd_pairs(rows)
    # TPOT ratio: measured 10 / 20 = 0.5, predicted 9.6 / 16 = 0.6: +20 %.
    assert pair["tpot_ratio_error_pct"] == pytest.approx(20.0)
    # Gain: measured 1.8, predicted 1.7: -5.56 %.
    assert pair["throughput_gain_error_pct"] == pytest.approx(100.0 * (1.7 - 1.8) / 1.8)
    assert pair["sd"] == "mtp"


def test_history_ratio_groups_by_hand() -> None:
    """Held-out history pairs grouped by GPU, engine and concurrency; latest-file and training
    pairs stay out."""
    from qualification.public_gpu._render import history_ratio_table
    from qualification.public_gpu._score import history_ratio_groups

    def pair(conc: int, error: float, **changes: Any) -> dict[str, Any]:
        base = {
            "source": "inferencex-history",
            "hardware": "b200",
            "engine": "trt",
            "conc": conc,
            "held_out": True,
            "tpot_ratio_error_pct": error,
        }
        base.update(changes)
        return base

    groups = history_ratio_groups(
        [
            pair(32, -20.0),
            pair(32, -8.0),
            pair(32, 4.0),
            pair(4, 12.0),
            pair(4, 50.0, held_out=False),  # a training pair
            pair(4, 50.0, source="inferencex-latest"),
            pair(64, -30.0, hardware="h200", engine="sglang"),
        ]
    )
    assert [(g["hardware"], g["engine"], g["conc"], g["pairs"]) for g in groups] == [
        ("b200", "trt", 4, 1),
        ("b200", "trt", 32, 3),
        ("h200", "sglang", 64, 1),
    ]
    # b200/trt/32: errors -20, -8, +4: median signed -8, median |error| 8, two within 10 %.
    middle = groups[1]
    assert middle["median_error_pct"] == -8.0 and middle["median_abs_error_pct"] == 8.0
    assert middle["within_10pct"] == 2
    assert groups[0]["within_10pct"] == 0 and groups[2]["median_error_pct"] == -30.0
    text = history_ratio_table(groups)
    assert "| b200 | trt | 32 | 3 | -8.0 % | 8.0 % | 2 / 3 |" in text


def test_a_dspark_point_pairs_with_no_sd_and_is_reported_apart() -> None:
    from qualification.public_gpu._score import headline

    rows = score_rows(
        [
            _scored("none", "none", (20.0, 16.0), (1000.0, 1200.0)),
            _scored("dspark", "dspark", (8.0, 4.0), (2500.0, 3600.0)),
        ]
    )
    for row in rows:
        row["source"] = "speculators"
        for figures in (row["measured"], row["predicted"]):
            figures["output_tput_per_gpu"] = figures["tput_per_gpu"]
    (pair,) = sd_pairs(rows)
    assert pair["sd"] == "dspark"
    # TPOT ratio: measured 8 / 20 = 0.4, predicted 4 / 16 = 0.25: -37.5 %.
    assert pair["tpot_ratio_error_pct"] == pytest.approx(-37.5)
    head = headline(rows, [pair])
    assert head["qwen_pairs"] == 0 and head["qwen_dspark_pairs"] == 1
    assert head["qwen_dspark_tpot_ratio_median_abs_error_pct"] == pytest.approx(37.5)


def test_a_pair_whose_no_sd_point_the_hybrid_fit_saw_is_not_judged() -> None:
    from qualification.public_gpu._score import HYBRID_TERMS, headline

    points = [
        _scored("none", "none", (20.0, 16.0), (1000.0, 1200.0)),
        _scored("mtp", "mtp", (10.0, 9.6), (1800.0, 2040.0)),
    ]
    for seen in (set(), {"none"}):
        rows = score_rows(points, set(), set(), seen)
        for row in rows:
            row["source"] = "speculators"
            for figures in (row["measured"], row["predicted"]):
                figures["output_tput_per_gpu"] = figures["tput_per_gpu"]
        (pair,) = sd_pairs(rows)
        head = headline(rows, [pair])
        if seen:
            assert rows[0]["seen_by"] == list(HYBRID_TERMS) and not rows[0]["held_out"]
            # The MTP point is held out, its pair is not: its no-SD side was a training point.
            assert rows[1]["held_out"] and head["qwen_pairs"] == 0
            assert head["qwen_points"] == 1
        else:
            # Gain: measured 1.8, predicted 1.7: -5.56 %.
            assert head["qwen_pairs"] == 1
            assert head["qwen_mtp_gain_median_abs_error_pct"] == pytest.approx(100 * 0.1 / 1.8)


def test_cost_constants_are_the_fitted_artefact_rounded() -> None:
    import json

    from aisim.catalogue import _costs

    fitted = json.loads((EVIDENCE / "fitted_terms.json").read_text())
    pairs = [
        (_costs.KERNEL_OVERHEAD_S, fitted["kernel_overhead_us"] * 1e-6, 5e-9),
        (_costs.STEP_OVERHEAD_S, fitted["step_overhead_ms"] * 1e-3, 1e-6),
        (_costs.WEIGHT_BANDWIDTH_EFFICIENCY, fitted["weight_bandwidth_efficiency"], 5e-4),
        (_costs.KV_BANDWIDTH_EFFICIENCY, fitted["kv_bandwidth_efficiency"], 5e-4),
    ]
    for constant, value, tolerance in pairs:
        assert abs(constant - value) <= tolerance
    hybrid = fitted["hybrid"]
    assert (
        abs(_costs.LINEAR_STATE_BANDWIDTH_EFFICIENCY - hybrid["linear_state_bandwidth_efficiency"])
        <= 5e-4
    )
    assert abs(_costs.EAGER_LINEAR_LAYER_S - hybrid["eager_linear_layer_us"] * 1e-6) <= 5e-7
    # The hybrid terms saw the HumanEval no-SD and MTP points only (math_reasoning held out).
    from qualification.public_gpu._fit import hybrid_training_points

    ids = sorted(p["id"] for p in hybrid_training_points(EVIDENCE))
    assert hybrid["training_ids"] == ids and len(ids) == 16
    assert all(
        i.startswith(("spec/baseline/HumanEval/", "spec/mtp/HumanEval/"))
        for i in hybrid["training_ids"]
    )
    # DSpark's Markov step saw the HumanEval DSpark points at 1..64 streams only.
    from qualification.public_gpu._fit import dspark_training_points

    dspark = fitted["dspark"]
    assert abs(_costs.DSPARK_MARKOV_STEP_S - dspark["markov_step_us"] * 1e-6) <= 5e-7
    ids = sorted(p["id"] for p in dspark_training_points(EVIDENCE))
    assert (
        dspark["training_ids"]
        == ids
        == sorted(f"spec/dspark/HumanEval/c{n}" for n in (1, 2, 4, 8, 16, 32, 64))
    )
    # The training rows are history rows only, none also in the latest file, none with SD.
    assert fitted["training_rows"] == len(fitted["training_ids"]) == 432
    assert all(i.startswith("ix-history-") and "/none/" in i for i in fitted["training_ids"])


def test_history_ratio_workloads_by_hand() -> None:
    """Held-out history pairs grouped by GPU, engine and ISL/OSL over every concurrency."""
    from qualification.public_gpu._render import history_ratio_table
    from qualification.public_gpu._score import history_ratio_workloads

    def pair(regime: str, conc: int, error: float, **changes: Any) -> dict[str, Any]:
        base = {
            "source": "inferencex-history",
            "hardware": "b200",
            "engine": "sglang",
            "regime": f"random {regime}",
            "conc": conc,
            "held_out": True,
            "tpot_ratio_error_pct": error,
        }
        base.update(changes)
        return base

    groups = history_ratio_workloads(
        [
            pair("1024/8192", 4, 25.0),
            pair("1024/8192", 64, 18.0),
            pair("1024/8192", 64, -3.0),
            pair("1024/1024", 4, 6.0),
            pair("1024/1024", 4, 40.0, held_out=False),  # a training pair
        ]
    )
    assert [(g["workload"], g["pairs"]) for g in groups] == [("1024/1024", 1), ("1024/8192", 3)]
    # 1024/8192: +25, +18, -3 over two concurrencies: median 18, |median| 18, one within 10 %.
    assert groups[1]["median_error_pct"] == 18.0 and groups[1]["within_10pct"] == 1
    text = history_ratio_table(groups, by="workload")
    assert (
        "| ISL/OSL |" in text
        and "| b200 | sglang | 1024/8192 | 3 | 18.0 % | 18.0 % | 1 / 3 |" in text
    )


def test_mtp_acceptance_is_the_artefact_fitted_on_h200_pairs_only() -> None:
    import json

    from qualification.public_gpu._workload import MTP_ACCEPTANCE

    fitted = json.loads((EVIDENCE / "fitted_terms.json").read_text())["mtp_acceptance"]
    for engine, rates in MTP_ACCEPTANCE.items():
        assert sorted(rates) == sorted(fitted[engine]) == ["1024/1024", "1024/8192", "8192/1024"]
        for workload, rate in rates.items():
            block = fitted[engine][workload]
            # The artefact is the fit on the committed scored run, which replayed these rates;
            # a refit moves them by less than 0.01 (the fit rescales the run's predicted ratios
            # by the acceptance length, the replay's round price moves a little with it).
            assert abs(rate - block["rate"]) <= 0.01
            # Its rows are H200 history MTP rows of this workload, none also a latest row.
            isl, osl = workload.split("/")
            assert all(
                i.startswith("ix-history-") and f"/h200/{engine}/" in i and f"/{isl}-{osl}/" in i
                for i in block["mtp_ids"]
            )
            assert (block["pairs"] == 0) == (block["mtp_ids"] == [])
    # The H200 SGLang runs have no 1024/8192 MTP row: that one rate is transferred.
    assert fitted["sglang"]["1024/8192"]["transferred_from"] == "trt 1024/1024 -> 1024/8192"
    assert all(b["pairs"] > 0 for e in fitted for w, b in fitted[e].items() if w != "1024/8192")
    assert fitted["trt"]["1024/8192"]["pairs"] > 0
    (row,) = score_rows([_scored("m", "mtp", (10.0, 9.0), (1.0, 1.0))], set(), {"m"})
    assert row["seen_by"] == ["MTP_ACCEPTANCE"] and not row["held_out"]


def test_transferred_acceptance_scales_the_rejection_by_the_donor_ratio() -> None:
    from qualification.public_gpu._fit import transferred_rate

    # Base rate 0.5 (rejection 0.5); the donor rejects 0.3 at the reference workload and 0.15
    # at the target one, half as often: the transferred rejection is 0.25, the rate 0.75.
    assert transferred_rate(0.5, 0.7, 0.85) == pytest.approx(0.75)
    # A donor without a difference leaves the base rate; a donor that never rejects at the
    # target workload gives 1.
    assert transferred_rate(0.6, 0.8, 0.8) == pytest.approx(0.6)
    assert transferred_rate(0.6, 0.8, 1.0) == pytest.approx(1.0)


def test_mtp_acceptance_is_per_engine_and_workload_and_refuses_an_unfitted_one() -> None:
    from qualification.public_gpu._workload import MTP_ACCEPTANCE, mtp_acceptance

    assert mtp_acceptance("trt", 1024, 8192) == MTP_ACCEPTANCE["trt"]["1024/8192"]
    assert mtp_acceptance("sglang", 8192, 1024) == MTP_ACCEPTANCE["sglang"]["8192/1024"]
    with pytest.raises(Refusal, match="ISL/OSL 2048/1024 .have: 1024/1024, 1024/8192, 8192/1024"):
        mtp_acceptance("trt", 2048, 1024)
    with pytest.raises(Refusal, match="engine 'vllm'"):
        mtp_acceptance("vllm", 1024, 1024)
    # Every InferenceX MTP point replays the rate of its engine and workload.
    for point in load_points(EVIDENCE):
        if point["sd"] != "mtp" or not point["source"].startswith("inferencex"):
            continue
        try:
            config = replay_config(point)[0]
        except Refusal:
            continue
        rate = config["engine"]["speculation"]["acceptance_rate"]
        assert rate == MTP_ACCEPTANCE[point["engine"]][f"{point['isl']}/{point['osl']}"]


def test_report_section_reads_the_committed_scored_run(tmp_path: Path) -> None:
    import json

    from qualification.public_gpu._report_section import public_gpu_html, public_gpu_section

    section, images = public_gpu_section(tmp_path)
    assert section["status"] == "not run" and images == {}
    scored = tmp_path / "public-gpu" / "scored"
    scored.mkdir(parents=True)
    headline = {
        "inferencex_median_abs_tpot_error_pct": 12.5,
        "inferencex_median_abs_throughput_error_pct": 20.0,
        "inferencex_median_abs_ttft_error_pct": None,
        "history_mtp_tpot_ratio_median_abs_error_pct": 8.0,
        "qwen_mtp_gain_median_abs_error_pct": 9.0,
    }
    report = {
        "headline": headline,
        "counts": {"points": 3, "predicted": 2, "refused": 1, "distinct_replays": 2},
        "held_out": {"description": "d"},
        "refused_reasons": {"why": 1},
        "groups": {"hardware": {}, "engine": {}, "sd": {}},
    }
    (scored / "public_gpu.json").write_text(json.dumps(report))
    (scored / "curves_h200.png").write_bytes(b"png")
    section, images = public_gpu_section(tmp_path)
    assert section["status"] == "run"
    # Percentages in the scored run, fractions (the plan's unit) in the section.
    assert section["figures"]["inferencex_tpot_median_ape"] == 0.125
    assert section["figures"]["inferencex_ttft_median_ape"] is None
    assert list(images) == ["public_gpu_curves_h200.png"]
    page = public_gpu_html(section, images, lambda h, r: f"{h}{r}", lambda n, d: n)
    assert 'id="public-gpu"' in page and "12.5 %" in page and "public_gpu_curves_h200.png" in page


def test_committed_scored_run_is_what_the_code_predicts() -> None:
    """Two cheap points replayed now give the committed predictions (the scored run in
    evidence/public-gpu/scored is regenerated with the code, not edited)."""
    import csv

    from qualification.public_gpu import run

    wanted = {
        "ix-latest-15/b200/trt/fp8/none/tp8-ep1/1024-1024/c4",
        "spec/mtp/HumanEval/c1",
        # SGLang's receive interval (10 at 4 streams) and the fitted MTP acceptance; DSpark.
        "ix-latest-146/b200/sglang/fp4/mtp/tp8-ep1/8192-1024/c4",
        "spec/dspark/math_reasoning/c2",
    }
    report = run(EVIDENCE, select=lambda point: point["id"] in wanted)
    text = (EVIDENCE / "scored" / "public_gpu_rows.csv").read_text().splitlines()
    committed = {row["id"]: row for row in csv.DictReader(text) if row["id"] in wanted}
    assert len(report["rows"]) == len(wanted) and set(committed) == wanted
    for row in report["rows"]:
        for metric in ("median_ttft_ms", "mean_tpot_ms"):
            stored = float(committed[row["id"]][f"{metric}_predicted"])
            assert row["predicted"][metric] == pytest.approx(stored, rel=1e-5)


@pytest.mark.parametrize(
    ("changes", "serial"),
    [
        ({"hardware": "b200", "sd": "mtp", "conc": 512}, True),
        # dsr1_fp4_b200_mtp.sh exports SGLANG_ENABLE_SPEC_V2 (every version), as
        # dsr1_fp8_h200_mtp.sh does: the overlap scheduler runs the MTP round's host work
        # beside the GPU's pass.
        ({"hardware": "b200", "sd": "mtp", "precision": "fp4", "conc": 16}, False),
        ({"hardware": "h200", "sd": "mtp"}, False),
        # Without SD SGLang's overlap scheduler is its default, and no host time is priced.
        ({"hardware": "b200", "sd": "none"}, None),
        ({"hardware": "b200", "sd": "mtp", "engine": "trt"}, None),
    ],
)
def test_sglang_overlap_scheduler_off_only_where_spec_v2_was_not_exported(
    changes: dict[str, Any], serial: bool | None
) -> None:
    from qualification.public_gpu._workload import SGLANG_SERIAL_HOST_US_PER_REQUEST

    config, settings = replay_config(_point(**changes))
    scheduler = config["engine"]["workers"]["aggregated"]["scheduler"]
    expected = None if serial is None else SGLANG_SERIAL_HOST_US_PER_REQUEST
    assert scheduler.get("host_us_per_request") == expected
    assert scheduler.get("host_overlapped", False) == (serial is False)
    assert ("overlap_scheduler" in settings) == (serial is not None)


def test_serial_host_time_is_the_artefact_fitted_on_history_rows_only() -> None:
    import json

    from qualification.public_gpu._fit_host import HOST_TERM, training_rows
    from qualification.public_gpu._workload import SGLANG_SERIAL_HOST_US_PER_REQUEST

    fitted = json.loads((EVIDENCE / "fitted_terms.json").read_text())
    host = fitted["sglang_serial_host_us_per_request"]
    assert abs(SGLANG_SERIAL_HOST_US_PER_REQUEST - host["us"]) <= 0.5
    # Its rows: the B200 SGLang MTP history rows at 1024/1024 and 512 streams that are not
    # also latest rows (5 of the 6; ix-history-269 is ix-latest-124's run).
    ids = sorted(point["id"] for point, _ in training_rows(EVIDENCE))
    assert ids == host["ids"] and len(ids) == 5
    assert all(
        i.startswith("ix-history-") and i.endswith("/b200/sglang/fp8/mtp/tp8-ep1/1024-1024/c512")
        for i in ids
    )
    # The fit's last replay hit the rows' median measured TPOT within 0.2 %.
    assert host["predicted_median_tpot_ms"] == pytest.approx(
        host["target_median_tpot_ms"], rel=2e-3
    )
    (row,) = score_rows(
        [_scored("h", "mtp", (10.0, 9.0), (1.0, 1.0))], set(), set(), other_seen={HOST_TERM: {"h"}}
    )
    assert row["seen_by"] == [HOST_TERM] and not row["held_out"]


def test_a_refused_point_is_counted_in_the_report_not_dropped(tmp_path: Path) -> None:
    """One replayable point and one disaggregated one: the report counts 2 points, 1 predicted,
    1 refused under its one-line reason (JSON and markdown), and draws the predicted point's
    GPU only."""
    import json

    from qualification.public_gpu import run, write_outputs

    kept = "ix-latest-15/b200/trt/fp8/none/tp8-ep1/1024-1024/c4"
    refused = "ix-latest-235/h200/dynamo-trt/fp8/none/tp8-ep8/8192-1024/c9"
    report = run(EVIDENCE, select=lambda point: point["id"] in (kept, refused))
    assert report["counts"] == {"points": 2, "predicted": 1, "refused": 1, "distinct_replays": 1}
    (reason,) = report["refused_reasons"]
    assert reason.startswith("dynamo-trt: disaggregated multi-node serving")
    assert report["refused_reasons"][reason] == 1
    assert [entry["id"] for entry in report["refused"]] == [refused]
    assert [row["id"] for row in report["rows"]] == [kept]
    written = write_outputs(report, tmp_path)
    assert sorted(path.name for path in written) == [
        "curves_b200.png",
        "public_gpu.json",
        "public_gpu.md",
        "public_gpu_pairs.csv",
        "public_gpu_rows.csv",
    ]
    stored = json.loads((tmp_path / "public_gpu.json").read_text())
    assert stored["counts"]["refused"] == 1 and stored["refused_reasons"] == {reason: 1}
    assert stored["evidence_type"] == "public-measurement"
    markdown = (tmp_path / "public_gpu.md").read_text()
    assert "points: 2, predicted: 1, refused: 1" in markdown
    assert f"| {reason} | 1 |" in markdown
    assert (tmp_path / "curves_b200.png").read_bytes()[:4] == b"\x89PNG"
