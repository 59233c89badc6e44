"""Engine comparison: the scorer's figures against hand-computed numbers, the replay-config
builder against the recorded settings, and the Prometheus delta (no vLLM needed)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from aisim import resolve_speculation
from aisim.errors import DataIntegrityError
from qualification.engine import (
    ENGINE_SETTINGS,
    ServedRun,
    compare,
    error_figures,
    noise_floor,
    repeat_floor,
)
from qualification.engine._prometheus import counter_delta, read_samples
from qualification.engine._recording import StepTable
from qualification.engine._replay import engine_counters, recorded_settings, replay_config

# Four requests, hand-computed (docs: relative error = (predicted - measured) / measured):
# E2E measured 100, 200, 400, 1000; predicted 110, 180, 400, 1300
# -> relative +0.10, -0.10, 0, +0.30; |.| sorted 0, 0.1, 0.1, 0.3
# median |err| = 0.1; P90 (linear, position 0.9 x 3 = 2.7) = 0.1 + 0.7 x 0.2 = 0.24;
# MAPE = 0.5 / 4 = 0.125; bias = 0.3 / 4 = 0.075; means 497.5 vs 425 -> +17.647... %.
MEASURED = {
    "ttft": [10.0, 20.0, 40.0, 50.0],
    "tpot": [10.0, 20.0, 40.0, 100.0],
    "e2e": [100.0, 200.0, 400.0, 1000.0],
    "output_tokens": [10, 10, 10, 10],
    "arrival": [0.0, 50.0, 100.0, 150.0],
    "finish": [100.0, 250.0, 500.0, 1150.0],
}
PREDICTED = {
    "ttft": [12.0, 20.0, 30.0, 50.0],
    "tpot": [11.0, 18.0, 40.0, 130.0],
    "e2e": [110.0, 180.0, 400.0, 1300.0],
    "output_tokens": [10, 10, 10, 10],
    "arrival": [0.0, 50.0, 100.0, 150.0],
    "finish": [110.0, 230.0, 500.0, 1450.0],
}


def test_error_figures_hand_computed_four_requests() -> None:
    figures = error_figures(PREDICTED["e2e"], MEASURED["e2e"])
    assert figures["count"] == 4
    assert figures["median_abs_error_pct"] == pytest.approx(10.0)
    assert figures["p90_abs_error_pct"] == pytest.approx(24.0)
    assert figures["mape_pct"] == pytest.approx(12.5)
    assert figures["bias_pct"] == pytest.approx(7.5)
    assert figures["mean_error_pct"] == pytest.approx(72.5 / 425 * 100)


def test_compare_throughput_and_ttft_hand_computed() -> None:
    figures = compare(PREDICTED, MEASURED)
    # measured: 40 tokens over 1150 ms; predicted: 40 tokens over 1450 ms -> 1150/1450 - 1.
    assert figures["throughput"]["measured_tok_s"] == pytest.approx(40 / 1.15)
    assert figures["throughput"]["error_pct"] == pytest.approx((1150 / 1450 - 1) * 100)
    # TTFT relative: +0.2, 0, -0.25, 0 -> |.| 0, 0, 0.2, 0.25: median 0.1, MAPE 0.1125.
    assert figures["ttft"]["median_abs_error_pct"] == pytest.approx(10.0)
    assert figures["ttft"]["mape_pct"] == pytest.approx(11.25)
    assert figures["ttft"]["bias_pct"] == pytest.approx(-1.25)


def test_noise_floor_takes_the_worst_pair() -> None:
    same = dict(MEASURED)
    floor = noise_floor([MEASURED, same, PREDICTED])
    assert floor is not None and floor["pairs"] == 3
    assert floor["e2e"]["median_abs_error_pct"] == pytest.approx(10.0)
    assert noise_floor([MEASURED]) is None


def test_repeat_floor_predicts_each_run_by_the_mean_of_the_others() -> None:
    # Runs MEASURED, PREDICTED and a third; E2E only checked (the others follow the same path).
    # Run 0 [100, 200, 400, 1000] against the mean of runs 1 and 2 ([110, 180, 400, 1300] and
    # [90, 220, 400, 700] -> [100, 200, 400, 1000]): no error.
    # Run 1 against [95, 210, 400, 850]: |95-110|/110, |210-180|/180, 0, |850-1300|/1300
    # = 13.64, 16.67, 0, 34.62 %: median (13.64 + 16.67) / 2.
    # Run 2 against [105, 190, 400, 1150]: 16.67, 13.64, 0, 64.29 %: the same median.
    third = dict(MEASURED, e2e=[90.0, 220.0, 400.0, 700.0])
    floor = repeat_floor([MEASURED, PREDICTED, third])
    assert floor is not None and floor["runs"] == 3
    median = (15 / 110 + 30 / 180) / 2 * 100
    assert floor["e2e"]["median_abs_error_pct"] == pytest.approx(2 * median / 3)
    # P90 (position 2.7 of 4): run 1: 16.67 + 0.7 x (34.62 - 16.67); run 2: the same with 64.29.
    p90_1 = 30 / 180 + 0.7 * (450 / 1300 - 30 / 180)
    p90_2 = 30 / 180 + 0.7 * (450 / 700 - 30 / 180)
    assert floor["e2e"]["p90_abs_error_pct"] == pytest.approx((p90_1 + p90_2) / 3 * 100)
    # One run has no others to be predicted by.
    assert repeat_floor([MEASURED]) is None


def test_error_figures_skip_undefined_pairs() -> None:
    # TPOT is undefined (NaN) for one-token outputs: those pairs are left out, not zeroed.
    figures = error_figures([1.0, math.nan, 3.0], [1.0, 2.0, 2.0])
    assert figures["count"] == 2
    assert figures["mape_pct"] == pytest.approx(25.0)


SETTINGS = {
    "max_num_seqs": 6,
    "max_num_batched_tokens": 384,
    "block_size": 64,
    "num_kv_blocks": 321,
    "chunked_prefill": True,
    "prefix_caching": False,
    "speculative_method": None,
    "num_speculative_tokens": 0,
}


def _run(settings: dict[str, Any], tmp_path: Path) -> ServedRun:
    requests = pd.DataFrame(
        {
            "request_id": ["a", "b"],
            "prompt_tokens": [40, 70],
            "output_tokens": [5, 9],
            "arrival_ms": [0.0, 12.5],
        }
    )
    return ServedRun(tmp_path, requests, pd.DataFrame(), {"engine_settings": settings}, {})


def test_replay_config_maps_every_recorded_setting(tmp_path: Path) -> None:
    config = replay_config(_run(SETTINGS, tmp_path), StepTable(tmp_path, pd.DataFrame(), {}))
    worker = config["engine"]["workers"]["aggregated"]
    assert worker["scheduler"] == {
        "max_batched_tokens": 384,
        "max_sequences": 6,
        "chunked_prefill": True,
    }
    assert worker["kv_cache"] == {
        "block_size": 64,
        "prefix_caching": False,
        "capacity": {"type": "fixed", "blocks": 321},
    }
    assert "speculation" not in config["engine"]
    assert config["traffic"]["source"]["requests"] == [
        {"request_id": "a", "timestamp": 0.0, "input_length": 40, "output_length": 5},
        {"request_id": "b", "timestamp": 12.5, "input_length": 70, "output_length": 9},
    ]


def test_replay_config_speculation_uses_the_grid_counters(tmp_path: Path) -> None:
    (tmp_path / "metrics.prom").write_text(
        "# TYPE vllm:spec_decode_num_drafts counter\n"
        "vllm:spec_decode_num_drafts_total 10.0\n"
        "# TYPE vllm:spec_decode_num_draft_tokens counter\n"
        "vllm:spec_decode_num_draft_tokens_total 30.0\n"
        "# TYPE vllm:spec_decode_num_accepted_tokens counter\n"
        "vllm:spec_decode_num_accepted_tokens_total 15.0\n"
        "# TYPE vllm:spec_decode_num_accepted_tokens_per_pos counter\n"
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 8.0\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 5.0\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="2"} 2.0\n'
        "# TYPE vllm:inter_token_latency_seconds histogram\n"
        "vllm:inter_token_latency_seconds_count 20.0\n"
        "vllm:inter_token_latency_seconds_sum 0.4\n",
        encoding="utf-8",
    )
    settings = {**SETTINGS, "speculative_method": "draft_model", "num_speculative_tokens": 3}
    config = replay_config(_run(settings, tmp_path), StepTable(tmp_path, pd.DataFrame(), {}))
    speculation = config["engine"]["speculation"]
    assert speculation["kind"] == "draft_model"
    assert speculation["params"] == {"num_speculative_tokens": 3}
    # Per position 8, 5, 2 accepted of 10 drafted rounds, over 20 decode rounds (10 drafted
    # nothing, as ngram does before an n-gram matches): rates per decode round 0.4, 0.25, 0.1.
    assert speculation["unconditional_acceptance_rates"] == [0.4, 0.25, 0.1]
    acceptance = resolve_speculation(speculation).acceptance
    assert acceptance is not None
    assert acceptance.unconditional_rates == (0.4, 0.25, 0.1)
    counters = engine_counters(tmp_path / "metrics.prom")
    assert counters is not None
    assert counters["acceptance_length"] == pytest.approx(2.5)  # vLLM's: 1 + 15 / 10
    assert counters["tokens_per_decode_round"] == pytest.approx(1.75)  # 1 + 15 / 20


def test_grid_counters_without_decode_rounds_are_refused(tmp_path: Path) -> None:
    (tmp_path / "metrics.prom").write_text(
        "vllm:spec_decode_num_drafts_total 10.0\n"
        "vllm:spec_decode_num_draft_tokens_total 10.0\n"
        "vllm:spec_decode_num_accepted_tokens_total 5.0\n"
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 5.0\n',
        encoding="utf-8",
    )
    settings = {**SETTINGS, "speculative_method": "ngram", "num_speculative_tokens": 1}
    # The counter is absent, not zero: the error names it as missing (issue 23).
    with pytest.raises(DataIntegrityError, match="inter_token_latency_seconds_count: missing"):
        replay_config(_run(settings, tmp_path), StepTable(tmp_path, pd.DataFrame(), {}))
    (tmp_path / "metrics.prom").write_text(
        (tmp_path / "metrics.prom").read_text(encoding="utf-8")
        + "vllm:inter_token_latency_seconds_count 4.0\n",
        encoding="utf-8",
    )
    with pytest.raises(DataIntegrityError, match="4 decode rounds, fewer than the 10 drafts"):
        replay_config(_run(settings, tmp_path), StepTable(tmp_path, pd.DataFrame(), {}))


def test_replay_config_refuses_grid_counters_of_another_depth(tmp_path: Path) -> None:
    (tmp_path / "metrics.prom").write_text(
        "vllm:spec_decode_num_drafts_total 10.0\n"
        "vllm:spec_decode_num_draft_tokens_total 20.0\n"
        "vllm:spec_decode_num_accepted_tokens_total 12.0\n"
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 8.0\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 4.0\n'
        "vllm:inter_token_latency_seconds_count 10.0\n",
        encoding="utf-8",
    )
    settings = {**SETTINGS, "speculative_method": "draft_model", "num_speculative_tokens": 3}
    with pytest.raises(
        DataIntegrityError, match="2 positions, shorter than the configured depth 3"
    ):
        replay_config(_run(settings, tmp_path), StepTable(tmp_path, pd.DataFrame(), {}))


@pytest.mark.parametrize("missing", ENGINE_SETTINGS)
def test_replay_config_refuses_a_missing_setting(missing: str, tmp_path: Path) -> None:
    settings = {key: value for key, value in SETTINGS.items() if key != missing}
    with pytest.raises(DataIntegrityError, match=rf"engine_settings\.{missing}: missing"):
        recorded_settings(_run(settings, tmp_path))


def test_counter_delta_differences_counters_and_keeps_gauges(tmp_path: Path) -> None:
    before = (
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3.0\n"
        "# TYPE vllm:spec_decode_num_drafts counter\nvllm:spec_decode_num_drafts_total 4.0\n"
        "vllm:spec_decode_num_drafts_created 1.7e9\n"
    )
    after = (
        "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1.0\n"
        "# TYPE vllm:spec_decode_num_drafts counter\nvllm:spec_decode_num_drafts_total 10.0\n"
        "vllm:spec_decode_num_drafts_created 1.7e9\n"
    )
    path = tmp_path / "metrics.prom"
    path.write_text(counter_delta(before, after), encoding="utf-8")
    samples = read_samples(path)
    assert samples == {"vllm:num_requests_running": 1.0, "vllm:spec_decode_num_drafts_total": 6.0}
    # drafts counted but no draft-token / accepted-token counters: refused, naming what lacks
    with pytest.raises(DataIntegrityError, match="lacks vllm:spec_decode_num_draft_tokens"):
        engine_counters(path)


def test_counter_delta_leaves_out_the_excluded_windows(tmp_path: Path) -> None:
    # Grid passes with a served run between them: counters 4 -> 10 over the whole window, of
    # which 5 -> 8 happened during the served run; the grid's own count is 10 - 4 - 3 = 3.
    def scrape(drafts: float, running: float) -> str:
        return (
            "# TYPE vllm:num_requests_running gauge\n"
            f"vllm:num_requests_running {running}\n"
            "# TYPE vllm:spec_decode_num_drafts counter\n"
            f"vllm:spec_decode_num_drafts_total {drafts}\n"
        )

    path = tmp_path / "metrics.prom"
    path.write_text(
        counter_delta(scrape(4, 0), scrape(10, 2), excluded=[(scrape(5, 1), scrape(8, 3))]),
        encoding="utf-8",
    )
    assert read_samples(path) == {
        "vllm:num_requests_running": 2.0,  # a gauge: the value at the end
        "vllm:spec_decode_num_drafts_total": 3.0,
    }


def test_ngram_with_plain_decode_points_gets_undrafted_rounds(tmp_path: Path) -> None:
    # 4 finished requests, 20 decode rounds of which 10 drafted: (20 - 10) / 4 = 2.5 undrafted
    # rounds per request, rounded half up to 3; per drafted round, positions accepted 8, 5, 2
    # of 10: rates 0.8, 0.5, 0.2 (vLLM's convention, the undrafted rounds being modelled).
    (tmp_path / "metrics.prom").write_text(
        "vllm:spec_decode_num_drafts_total 10.0\n"
        "vllm:spec_decode_num_draft_tokens_total 30.0\n"
        "vllm:spec_decode_num_accepted_tokens_total 15.0\n"
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 8.0\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="1"} 5.0\n'
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="2"} 2.0\n'
        "vllm:inter_token_latency_seconds_count 20.0\n"
        'vllm:request_success_total{finished_reason="length"} 3.0\n'
        'vllm:request_success_total{finished_reason="stop"} 1.0\n',
        encoding="utf-8",
    )
    plain_steps = pd.DataFrame(
        {"phase": ["decode"], "warmup": [False], "batch_size": [1], "point_id": ["decode-b1-c64"]}
    )
    settings = {**SETTINGS, "speculative_method": "ngram", "num_speculative_tokens": 3}
    config = replay_config(_run(settings, tmp_path), StepTable(tmp_path, plain_steps, {}))
    speculation = config["engine"]["speculation"]
    assert speculation["undrafted_rounds"] == 3
    assert speculation["unconditional_acceptance_rates"] == [0.8, 0.5, 0.2]
    counters = engine_counters(tmp_path / "metrics.prom")
    assert counters is not None and counters["num_requests"] == 4
    # Without plain decode points (an older grid) every round is a drafted round.
    config = replay_config(_run(settings, tmp_path), StepTable(tmp_path, pd.DataFrame(), {}))
    assert "undrafted_rounds" not in config["engine"]["speculation"]
    assert config["engine"]["speculation"]["unconditional_acceptance_rates"] == [0.4, 0.25, 0.1]


def test_ngram_undrafted_rounds_need_finished_requests(tmp_path: Path) -> None:
    (tmp_path / "metrics.prom").write_text(
        "vllm:spec_decode_num_drafts_total 10.0\n"
        "vllm:spec_decode_num_draft_tokens_total 10.0\n"
        "vllm:spec_decode_num_accepted_tokens_total 5.0\n"
        'vllm:spec_decode_num_accepted_tokens_per_pos_total{position="0"} 5.0\n'
        "vllm:inter_token_latency_seconds_count 20.0\n",
        encoding="utf-8",
    )
    plain_steps = pd.DataFrame({"phase": ["decode"], "warmup": [False]})
    settings = {**SETTINGS, "speculative_method": "ngram", "num_speculative_tokens": 1}
    with pytest.raises(DataIntegrityError, match="vllm:request_success: missing"):
        replay_config(_run(settings, tmp_path), StepTable(tmp_path, plain_steps, {}))
    (tmp_path / "metrics.prom").write_text(
        (tmp_path / "metrics.prom").read_text(encoding="utf-8")
        + 'vllm:request_success_total{finished_reason="length"} 0.0\n',
        encoding="utf-8",
    )
    with pytest.raises(DataIntegrityError, match="vllm:request_success: no finished request"):
        replay_config(_run(settings, tmp_path), StepTable(tmp_path, plain_steps, {}))


def test_the_step_model_figure_is_the_worst_median_over_runs_and_kinds() -> None:
    from qualification.engine._score import _summary

    def run(medians: dict[str, float]) -> dict[str, Any]:
        figures: dict[str, Any] = {
            metric: {"median_abs_error_pct": 1.0} for metric in ("ttft", "tpot", "e2e")
        }
        figures["throughput"] = {"error_pct": 0.0}
        figures["step_errors"] = {
            "summary": {kind: {"median_pct": value} for kind, value in medians.items()}
        }
        return figures

    # |-3.0|, |+7.5| in run 1 and |-8.25| in run 2: the worst is 8.25, a negative median.
    summary = _summary([run({"decode": -3.0, "mixed": 7.5}), run({"prefill": -8.25})])
    assert summary["step_price_median_error_max_pct"] == 8.25
